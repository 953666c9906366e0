//! `riffle serve`: the streaming-database service (see `riffle-server`).
//!
//! Exit codes: 0 — stopped with Ctrl-C; 2 — the service could not start (address in use, a
//! non-loopback address without a token, an unreadable store).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use riffle_server::ServeOptions;

/// Arguments of `riffle serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but a loopback address requires a token.
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// The token every request must carry (`Authorization: Bearer <token>`); default: the
    /// `RIFFLE_SERVE_TOKEN` environment variable (which keeps it out of the process list).
    #[arg(long = "token", value_name = "TOKEN")]
    token: Option<String>,
    /// The embedded store's directory (topics, the service's catalog and jobs).
    #[arg(long = "data-dir", value_name = "DIR", default_value = ".riffle")]
    data_dir: PathBuf,
}

/// Runs `riffle serve` and returns its exit code.
pub fn run(args: ServeArgs) -> ExitCode {
    let options = ServeOptions {
        addr: args.listen,
        token: args
            .token
            .or_else(|| std::env::var("RIFFLE_SERVE_TOKEN").ok()),
        data_dir: args.data_dir,
    };
    match riffle_server::run_blocking(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
