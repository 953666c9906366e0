//! A Confluent Schema Registry client for the `avro-confluent` format: the writer schema of an
//! id (`GET /schemas/ids/{id}`, cached per id) and the id of a schema registered under a
//! subject (`POST /subjects/{subject}/versions`).
//!
//! It speaks plain HTTP/1.1 over `std::net` (one short request per schema: reads look an id up
//! once, sinks register once), so it needs no HTTP stack; `https://` registries are refused by
//! name.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

/// How long connecting to, writing to and reading from the registry may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The content type of the registry's API.
const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// A registry at one URL, with its credentials and the schemas looked up so far.
pub struct Registry {
    /// The URL as given, without user info (for messages).
    url: String,
    /// `host:port` to connect to.
    authority: String,
    /// Path prefix of the API (`""` or `/prefix`).
    base_path: String,
    /// The `Authorization` header value, if any.
    authorization: Option<String>,
    schemas: Mutex<HashMap<u32, String>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the credentials.
        write!(f, "Registry({})", self.url)
    }
}

/// Credentials sent to the registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// No credentials.
    None,
    /// HTTP basic authentication with `user:password`.
    Basic(String),
    /// A bearer token.
    Bearer(String),
}

impl Registry {
    /// A client for the registry at `url` (`http://host[:port][/path]`). User info in the URL
    /// (`http://user:password@host`) is used when `auth` is [`Auth::None`].
    pub fn new(url: &str, auth: Auth) -> Result<Self, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(format!(
                    "unsupported feature: an https schema registry ('{url}'); Riffle reaches registries over plain http"
                ))
            }
            _ => return Err(format!("schema registry URL '{url}' is not an http:// URL")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (user_info, host) = match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user), host),
            None => (None, authority),
        };
        if host.is_empty() {
            return Err(format!("schema registry URL '{url}' names no host"));
        }
        let host = if host.contains(':') && !host.ends_with(']') {
            host.to_string()
        } else {
            format!("{host}:80")
        };
        let authorization = match auth {
            Auth::Basic(user_info) => Some(format!("Basic {}", base64(user_info.as_bytes()))),
            Auth::Bearer(token) => Some(format!("Bearer {token}")),
            Auth::None => user_info.map(|u| format!("Basic {}", base64(u.as_bytes()))),
        };
        let shown = match user_info {
            // Messages never show credentials.
            Some(_) => format!(
                "http://{}{path}",
                authority.rsplit_once('@').map_or(authority, |(_, h)| h)
            ),
            None => url.to_string(),
        };
        Ok(Self {
            url: shown,
            authority: host,
            base_path: path.to_string(),
            authorization,
            schemas: Mutex::new(HashMap::new()),
        })
    }

    /// The URL as given, without user info.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema (JSON text) registered with `id`.
    pub fn schema_by_id(&self, id: u32) -> Result<String, String> {
        if let Some(schema) = self.cached(id) {
            return Ok(schema);
        }
        let body = self.request("GET", &format!("/schemas/ids/{id}"), None)?;
        let reply: Value = serde_json::from_str(&body)
            .map_err(|e| format!("schema registry {} answered no JSON: {e}", self.url))?;
        if let Some(kind) = reply.get("schemaType").and_then(Value::as_str) {
            if kind != "AVRO" {
                return Err(format!(
                    "schema {id} in registry {} is a {kind} schema, not Avro",
                    self.url
                ));
            }
        }
        let schema = reply
            .get("schema")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("schema registry {} sent no schema for id {id}", self.url))?
            .to_string();
        if let Ok(mut schemas) = self.schemas.lock() {
            schemas.insert(id, schema.clone());
        }
        Ok(schema)
    }

    fn cached(&self, id: u32) -> Option<String> {
        self.schemas.lock().ok()?.get(&id).cloned()
    }

    /// Registers `schema` under `subject` (or finds it registered) and returns its id.
    pub fn register(&self, subject: &str, schema: &str) -> Result<u32, String> {
        let body = serde_json::json!({ "schema": schema }).to_string();
        let path = format!("/subjects/{}/versions", percent_encode(subject));
        let reply = self.request("POST", &path, Some(&body))?;
        let reply: Value = serde_json::from_str(&reply)
            .map_err(|e| format!("schema registry {} answered no JSON: {e}", self.url))?;
        let id = reply
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                format!(
                    "schema registry {} sent no id for subject '{subject}': {reply}",
                    self.url
                )
            })?;
        if let Ok(mut schemas) = self.schemas.lock() {
            schemas.insert(id, schema.to_string());
        }
        Ok(id)
    }

    /// One request; the body of a 2xx answer, or an error naming the URL and the answer.
    fn request(&self, method: &str, path: &str, body: Option<&str>) -> Result<String, String> {
        let target = format!("{}{path}", self.base_path);
        let unreachable =
            |e: std::io::Error| format!("schema registry {} is unreachable: {e}", self.url);
        let address = self
            .authority
            .to_socket_addrs()
            .map_err(unreachable)?
            .next()
            .ok_or_else(|| format!("schema registry {}: host not found", self.url))?;
        let mut stream = TcpStream::connect_timeout(&address, TIMEOUT).map_err(unreachable)?;
        stream
            .set_read_timeout(Some(TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
            .map_err(unreachable)?;
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nAccept: {CONTENT_TYPE}, application/json\r\nConnection: close\r\n",
            self.authority
        );
        if let Some(auth) = &self.authorization {
            request.push_str(&format!("Authorization: {auth}\r\n"));
        }
        if let Some(body) = body {
            request.push_str(&format!(
                "Content-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        request.push_str("\r\n");
        request.push_str(body.unwrap_or_default());
        stream.write_all(request.as_bytes()).map_err(unreachable)?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).map_err(unreachable)?;
        let (status, body) = parse_response(&response)
            .ok_or_else(|| format!("schema registry {} sent a malformed HTTP answer", self.url))?;
        if !(200..300).contains(&status) {
            return Err(format!(
                "schema registry {} answered {method} {target} with HTTP {status}: {}",
                self.url,
                body.trim()
            ));
        }
        Ok(body)
    }
}

/// The status and body of an HTTP/1.1 response read to its end.
fn parse_response(response: &[u8]) -> Option<(u16, String)> {
    let split = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&response[..split]).ok()?;
    let mut raw_body = &response[split + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut chunked = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
        if name.eq_ignore_ascii_case("content-length") {
            let len: usize = value.parse().ok()?;
            raw_body = raw_body.get(..len)?;
        }
    }
    let body = if chunked {
        dechunk(raw_body)?
    } else {
        raw_body.to_vec()
    };
    Some((status, String::from_utf8(body).ok()?))
}

/// The body of a `Transfer-Encoding: chunked` message.
fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// A subject as one path segment.
fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Standard base64 with padding (for basic authentication).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_parsed_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain), Some((200, "{}".into())));
        let chunked =
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n2\r\n\":\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Some((404, "{\"a\":".into())));
    }

    #[test]
    fn credentials_and_subjects_are_encoded() {
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(percent_encode("payments.v2-value"), "payments.v2-value");
        assert_eq!(percent_encode("a/b c"), "a%2Fb%20c");
        let r = Registry::new("http://u:p@registry:8081/api/", Auth::None).unwrap();
        assert_eq!(r.authority, "registry:8081");
        assert_eq!(r.base_path, "/api");
        assert_eq!(r.authorization.as_deref(), Some("Basic dTpw"));
        assert!(format!("{r:?}").contains("registry:8081") && !format!("{r:?}").contains("dTpw"));
        let err = Registry::new("https://registry", Auth::None).unwrap_err();
        assert!(err.contains("unsupported feature"), "{err}");
    }
}
