//! `riffle serve`: a long-running service that owns the embedded topic store and runs many jobs
//! from one SQL session, behind a REST API described by `openapi.json` (served at
//! `/api/v1/openapi.json`).
//!
//! Statements go to `POST /api/v1/statements`: `CREATE`/`SET` change the service's catalog,
//! `INSERT` starts a job, `SELECT` starts a query whose changes stream as server-sent events
//! from `/api/v1/queries/{id}/events`. The catalog and every submitted job are persisted in a
//! compacted topic of the store ([`persist`]); on start the service restores its catalog and
//! resumes every job that was running (from its latest checkpoint when it has them).
//!
//! The service listens on 127.0.0.1 by default; any other address requires a token, which every
//! request must then carry (`Authorization: Bearer <token>`, or `?token=` for browsers' event
//! streams).

#![warn(missing_docs)]

mod api;
mod auth;
mod metrics;
pub mod persist;
mod state;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::state::AppState;

/// The OpenAPI description of the REST API.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// How the service runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// The token requests must carry; required unless `addr` is a loopback address.
    pub token: Option<String>,
    /// The embedded store's directory (topics and the service's persisted state).
    pub data_dir: PathBuf,
}

/// A bound service, ready to run.
pub struct Server {
    listener: TcpListener,
    state: Arc<AppState>,
}

/// How long a shutdown waits for jobs to drain.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

impl Server {
    /// Checks the options, restores the persisted state (resuming jobs) and binds the address.
    /// Must be called inside a tokio runtime, which then runs the jobs.
    pub async fn bind(options: ServeOptions) -> Result<Server, String> {
        let token = options.token.filter(|t| !t.is_empty());
        if !options.addr.ip().is_loopback() && token.is_none() {
            return Err(format!(
                "listening on {} (not a loopback address) requires a token: pass --token or set RIFFLE_SERVE_TOKEN",
                options.addr
            ));
        }
        let state = AppState::restore(&options.data_dir, token)?;
        let listener = TcpListener::bind(options.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
        Ok(Server { listener, state })
    }

    /// The address the service listens on (its port when bound to port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, String> {
        self.listener
            .local_addr()
            .map_err(|e| format!("cannot read the listening address: {e}"))
    }

    /// Serves requests until `shutdown` completes, then stops queries and jobs (running jobs
    /// stay marked as running, so the next start resumes them) and waits for them to drain.
    pub async fn run<F>(self, shutdown: F) -> Result<(), String>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let app = api::router(self.state.clone());
        let served = axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| format!("the service failed: {e}"));
        self.state.shutdown(DRAIN_TIMEOUT).await;
        served
    }
}

/// Runs the service on a new tokio runtime until Ctrl-C.
pub fn run_blocking(options: ServeOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    runtime.block_on(async {
        let server = Server::bind(options).await?;
        eprintln!(
            "riffle serve: listening on http://{} (API at /api/v1, console at /)",
            server.local_addr()?
        );
        server
            .run(async {
                // An error installing the handler leaves only an external kill to stop us.
                let _ = tokio::signal::ctrl_c().await;
                eprintln!("riffle serve: shutting down");
            })
            .await
    })
}
