//! `PARSE_URL(url, part [, key])` as Flink computes it with `java.net.URL`: `HOST`, `PATH`,
//! `QUERY` (or one query parameter), `REF`, `PROTOCOL`, `FILE`, `AUTHORITY`, `USERINFO`; NULL
//! for a malformed URL, an unknown part or a missing component.

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;

use super::row::{text, Arg, RowFunction};

/// The protocols `java.net.URL` knows without extra handlers.
const PROTOCOLS: &[&str] = &["http", "https", "ftp", "file", "jar", "mailto"];

/// The components of a URL, as `java.net.URL` splits it.
struct Url<'a> {
    protocol: String,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    reference: Option<&'a str>,
}

fn parse(url: &str) -> Option<Url<'_>> {
    let url = url.trim();
    let colon = url.find(':')?;
    let protocol = url[..colon].to_ascii_lowercase();
    if !PROTOCOLS.contains(&protocol.as_str()) {
        return None;
    }
    let rest = &url[colon + 1..];
    let (rest, reference) = match rest.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => match after.find('/') {
            Some(i) => (Some(&after[..i]), &after[i..]),
            None => (Some(after), ""),
        },
        None => (None, rest),
    };
    Some(Url {
        protocol,
        authority,
        path,
        query,
        reference,
    })
}

fn part(url: &str, part: &str) -> Option<String> {
    let u = parse(url)?;
    let userinfo = || u.authority.and_then(|a| a.rsplit_once('@')).map(|(i, _)| i);
    let host = || {
        let a = u.authority?;
        let host_port = a.rsplit_once('@').map_or(a, |(_, h)| h);
        if host_port.starts_with('[') {
            return host_port.find(']').map(|i| &host_port[..=i]);
        }
        Some(host_port.split(':').next().unwrap_or(host_port))
    };
    Some(match part {
        "HOST" => host()?.to_string(),
        "PATH" => u.path.to_string(),
        "QUERY" => u.query?.to_string(),
        "REF" => u.reference?.to_string(),
        "PROTOCOL" => u.protocol,
        "FILE" => match u.query {
            Some(q) => format!("{}?{q}", u.path),
            None => u.path.to_string(),
        },
        "AUTHORITY" => u.authority?.to_string(),
        "USERINFO" => userinfo()?.to_string(),
        _ => return None,
    })
}

/// The value of parameter `key` in `query` (Flink: the first `key=value` pair).
fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_string())
    })
}

/// `parse_url`.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Str;
    vec![RowFunction::new(
        "parse_url",
        &[&[Str, Str], &[Str, Str, Str]],
        DataType::Utf8,
        |v| {
            let url = text(&v[0]).unwrap_or_default();
            let which = text(&v[1]).unwrap_or_default();
            let value = match v.get(2).and_then(text) {
                Some(key) if which == "QUERY" => {
                    part(url, "QUERY").and_then(|q| query_value(&q, key))
                }
                Some(_) => None,
                None => part(url, which),
            };
            Ok(ScalarValue::Utf8(value))
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_like_java_net_url() {
        let url = "http://user@example.com:8080/path/p.html?x=1&y=two#frag";
        assert_eq!(part(url, "HOST").as_deref(), Some("example.com"));
        assert_eq!(part(url, "PATH").as_deref(), Some("/path/p.html"));
        assert_eq!(part(url, "FILE").as_deref(), Some("/path/p.html?x=1&y=two"));
        assert_eq!(part(url, "USERINFO").as_deref(), Some("user"));
        assert_eq!(
            part(url, "AUTHORITY").as_deref(),
            Some("user@example.com:8080")
        );
        assert_eq!(query_value("x=1&y=two", "y").as_deref(), Some("two"));
        assert_eq!(part("nope", "HOST"), None);
    }
}
