//! A test double of a Confluent Schema Registry: the two endpoints the `avro-confluent` format
//! calls (`GET /schemas/ids/{id}`, `POST /subjects/{subject}/versions`), served over plain HTTP
//! on a loopback port by one thread. No real registry runs in CI; this one answers as the
//! registry's REST API documents (JSON bodies, `404` with an error code for unknown ids).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the registry holds and was asked.
#[derive(Default)]
struct State {
    schemas: BTreeMap<u32, String>,
    /// `(subject, schema)` of every registration, in order.
    registered: Vec<(String, String)>,
    /// `METHOD path` of every request, in order.
    requests: Vec<String>,
}

/// A running registry; stops when dropped.
pub struct TestRegistry {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestRegistry {
    /// A registry holding `schemas` by id.
    pub fn start(schemas: &[(u32, &str)]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let state = Arc::new(Mutex::new(State {
            schemas: schemas.iter().map(|(id, s)| (*id, s.to_string())).collect(),
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &state);
                    }
                }
            })
        };
        Self {
            url,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// `(subject, schema)` of every registration so far.
    pub fn registered(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().registered.clone()
    }

    /// `METHOD path` of every request so far.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
    );
    let (status, reply) = answer(&method, &path, &body, state);
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
    let _ = reader.get_mut().write_all(response.as_bytes());
}

fn answer(method: &str, path: &str, body: &[u8], state: &Mutex<State>) -> (&'static str, String) {
    let mut state = state.lock().unwrap();
    state.requests.push(format!("{method} {path}"));
    let not_found = |code: u32, message: String| {
        let reply = serde_json::json!({"error_code": code, "message": message});
        ("404 Not Found", reply.to_string())
    };
    if let (Some(id), "GET") = (path.strip_prefix("/schemas/ids/"), method) {
        return match id.parse::<u32>().ok().and_then(|id| state.schemas.get(&id)) {
            Some(schema) => (
                "200 OK",
                serde_json::json!({ "schema": schema }).to_string(),
            ),
            None => not_found(40403, format!("Schema {id} not found")),
        };
    }
    let subject = path
        .strip_prefix("/subjects/")
        .and_then(|rest| rest.strip_suffix("/versions"));
    if let (Some(subject), "POST") = (subject, method) {
        let request: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => return ("422 Unprocessable Entity", "{}".to_string()),
        };
        let schema = request["schema"].as_str().unwrap_or_default().to_string();
        state.registered.push((subject.to_string(), schema.clone()));
        let known = state
            .schemas
            .iter()
            .find(|(_, s)| **s == schema)
            .map(|(id, _)| *id);
        let id = known.unwrap_or_else(|| {
            let id = state.schemas.keys().max().map_or(1, |m| m + 1);
            state.schemas.insert(id, schema);
            id
        });
        return ("200 OK", serde_json::json!({ "id": id }).to_string());
    }
    not_found(404, format!("no endpoint {method} {path}"))
}
