//! Flink's encoding, digest and character-class functions.

use arrow::datatypes::DataType;
use base64::Engine;
use datafusion::common::{exec_err, ScalarValue};
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use super::row::{int, string, text, Arg, RowFunction};

fn text_of(v: &ScalarValue) -> &str {
    text(v).unwrap_or_default()
}

/// Lower-case hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex digest of the UTF-8 bytes of `s` with `D`.
fn digest<D: Digest>(s: &str) -> String {
    hex(&D::digest(s.as_bytes()))
}

/// The encoding and digest functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Int, Str};
    let str_fn = |name, f: fn(&str) -> String| {
        RowFunction::new(name, &[&[Str]], DataType::Utf8, move |v| {
            Ok(string(Some(f(text_of(&v[0])))))
        })
    };
    let class_fn = |name, f: fn(&str) -> bool| {
        RowFunction::new(name, &[&[Arg::Any]], DataType::Boolean, move |v| {
            Ok(ScalarValue::Boolean(Some(text(&v[0]).is_some_and(f))))
        })
        .lenient()
    };
    vec![
        str_fn("md5", digest::<Md5>),
        str_fn("sha1", digest::<Sha1>),
        str_fn("sha224", digest::<Sha224>),
        str_fn("sha256", digest::<Sha256>),
        str_fn("sha384", digest::<Sha384>),
        str_fn("sha512", digest::<Sha512>),
        RowFunction::new("sha2", &[&[Str, Int]], DataType::Utf8, |v| {
            let s = text_of(&v[0]);
            Ok(string(Some(match int(&v[1]) {
                Some(224) => digest::<Sha224>(s),
                Some(256) => digest::<Sha256>(s),
                Some(384) => digest::<Sha384>(s),
                Some(512) => digest::<Sha512>(s),
                other => return exec_err!("Unsupported algorithm: SHA-{}", other.unwrap_or(0)),
            })))
        }),
        str_fn("to_base64", |s| {
            base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
        }),
        RowFunction::new("from_base64", &[&[Str]], DataType::Utf8, |v| {
            match base64::engine::general_purpose::STANDARD.decode(text_of(&v[0])) {
                Ok(bytes) => Ok(string(Some(String::from_utf8_lossy(&bytes).into_owned()))),
                Err(e) => exec_err!("FROM_BASE64: invalid input: {e}"),
            }
        }),
        str_fn("url_encode", url_encode),
        RowFunction::new("url_decode", &[&[Str]], DataType::Utf8, |v| {
            Ok(string(url_decode(text_of(&v[0]))))
        }),
        // Strings: |String.hashCode()| (Integer.MIN_VALUE stays negative); integers: their
        // boxed hashCode (the value; a BIGINT folds its two halves).
        RowFunction::new("hash_code", &[&[Str], &[Int]], DataType::Int32, |v| {
            let hash = match (&v[0], int(&v[0])) {
                (ScalarValue::Int64(_), Some(x)) => (x ^ ((x as u64) >> 32) as i64) as i32,
                (_, Some(x)) => x as i32,
                (s, None) => java_hash(text_of(s)).wrapping_abs(),
            };
            Ok(ScalarValue::Int32(Some(hash)))
        }),
        class_fn("is_alpha", |s| {
            !s.is_empty() && s.chars().all(char::is_alphabetic)
        }),
        class_fn("is_digit", |s| {
            !s.is_empty() && s.chars().all(char::is_numeric)
        }),
        class_fn("is_decimal", is_java_number),
    ]
}

/// `String.hashCode()`: over UTF-16 code units.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// `application/x-www-form-urlencoded` encoding of the UTF-8 bytes (Java's `URLEncoder`).
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Java's `URLDecoder.decode`; None for a malformed escape.
fn url_decode(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let digits = std::str::from_utf8(tail.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(digits, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            other => bytes.push(other),
        }
        rest = tail;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// True when Java parses `s` as an `int`, `long` or `double` (`IS_DECIMAL`).
pub(super) fn is_java_number(s: &str) -> bool {
    // Double.parseDouble trims characters up to U+0020 first.
    let t = s.trim_matches(|c: char| c <= ' ');
    if s.is_empty() || t.is_empty() {
        return false;
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "NaN" || unsigned == "Infinity" {
        return true;
    }
    let body = unsigned
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(unsigned);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let (int_part, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mantissa_ok = digits(int_part) && digits(frac) && !(int_part.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_number_grammar() {
        for yes in [
            "1", "-2", "1.5", ".5", "5.", "1e3", "+1E-3", "NaN", "2d", " 7 ",
        ] {
            assert!(is_java_number(yes), "{yes}");
        }
        for no in ["", "a1", "1e", ".", "e3", "inf", "0x10", "1.2.3"] {
            assert!(!is_java_number(no), "{no}");
        }
    }

    #[test]
    fn url_coding_follows_java() {
        assert_eq!(url_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(url_decode("a+b%26c%3Dd").as_deref(), Some("a b&c=d"));
        assert_eq!(url_decode("%zz"), None);
        assert_eq!(java_hash("hello"), 99_162_322);
    }
}
