//! Flink's functions between character strings and bytes: `ENCODE`, `DECODE` (Java charsets)
//! and `UNHEX`.

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};

use super::row::{text, Arg, RowFunction};

/// The string/bytes conversion functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Str};
    vec![
        RowFunction::new("encode", &[&[Str, Str]], DataType::Binary, |v| {
            let charset = Charset::named(text(&v[1]).unwrap_or_default())?;
            Ok(ScalarValue::Binary(text(&v[0]).map(|s| charset.encode(s))))
        }),
        RowFunction::new("decode", &[&[Any, Str]], DataType::Utf8, |v| {
            let charset = Charset::named(text(&v[1]).unwrap_or_default())?;
            let Some(bytes) = bytes(&v[0])? else {
                return Ok(ScalarValue::Utf8(None));
            };
            Ok(ScalarValue::Utf8(Some(charset.decode(bytes))))
        }),
        RowFunction::new("unhex", &[&[Str]], DataType::Binary, |v| {
            Ok(ScalarValue::Binary(
                text(&v[0]).and_then(|s| unhex(s.as_bytes())),
            ))
        }),
    ]
}

/// The bytes of a binary value (None: NULL).
fn bytes(v: &ScalarValue) -> DfResult<Option<&[u8]>> {
    match v {
        ScalarValue::Binary(b)
        | ScalarValue::LargeBinary(b)
        | ScalarValue::BinaryView(b)
        | ScalarValue::FixedSizeBinary(_, b) => Ok(b.as_deref()),
        ScalarValue::Null => Ok(None),
        other => exec_err!("DECODE expects BYTES, got {}", other.data_type()),
    }
}

/// The charsets every Java runtime has (`StandardCharsets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Charset {
    Ascii,
    Latin1,
    Utf8,
    Utf16Be,
    Utf16Le,
    /// `UTF-16`: writes a big-endian byte-order mark, reads one when present.
    Utf16,
}

impl Charset {
    /// The charset Java's `Charset.forName` finds for `name` (standard names and common aliases).
    fn named(name: &str) -> DfResult<Charset> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "US-ASCII" | "ASCII" | "ISO646-US" => Charset::Ascii,
            "ISO-8859-1" | "ISO8859_1" | "LATIN1" | "ISO_8859_1" => Charset::Latin1,
            "UTF-8" | "UTF8" => Charset::Utf8,
            "UTF-16BE" | "UTF_16BE" => Charset::Utf16Be,
            "UTF-16LE" | "UTF_16LE" => Charset::Utf16Le,
            "UTF-16" | "UTF_16" | "UTF16" => Charset::Utf16,
            _ => return exec_err!("unsupported charset '{name}'"),
        })
    }

    /// `String.getBytes(charset)`: characters the charset lacks become `?`.
    fn encode(self, s: &str) -> Vec<u8> {
        let narrow = |limit: u32| {
            s.chars()
                .map(|c| {
                    u8::try_from(u32::from(c))
                        .ok()
                        .filter(|b| u32::from(*b) <= limit)
                })
                .map(|b| b.unwrap_or(b'?'))
                .collect()
        };
        match self {
            Charset::Ascii => narrow(0x7f),
            Charset::Latin1 => narrow(0xff),
            Charset::Utf8 => s.as_bytes().to_vec(),
            Charset::Utf16Be => s.encode_utf16().flat_map(u16::to_be_bytes).collect(),
            Charset::Utf16Le => s.encode_utf16().flat_map(u16::to_le_bytes).collect(),
            Charset::Utf16 if s.is_empty() => Vec::new(),
            Charset::Utf16 => [0xfe, 0xff]
                .into_iter()
                .chain(s.encode_utf16().flat_map(u16::to_be_bytes))
                .collect(),
        }
    }

    /// `new String(bytes, charset)`: malformed input becomes U+FFFD.
    fn decode(self, bytes: &[u8]) -> String {
        let units = |bytes: &[u8], big: bool| {
            let mut out: String = char::decode_utf16(bytes.chunks_exact(2).map(|p| {
                let pair = [p[0], p[1]];
                if big {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                }
            }))
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
            if bytes.len() % 2 == 1 {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            out
        };
        match self {
            Charset::Ascii => bytes
                .iter()
                .map(|&b| {
                    if b.is_ascii() {
                        char::from(b)
                    } else {
                        char::REPLACEMENT_CHARACTER
                    }
                })
                .collect(),
            Charset::Latin1 => bytes.iter().map(|&b| char::from(b)).collect(),
            Charset::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Charset::Utf16Be => units(bytes, true),
            Charset::Utf16Le => units(bytes, false),
            Charset::Utf16 => match bytes {
                [0xfe, 0xff, rest @ ..] => units(rest, true),
                [0xff, 0xfe, rest @ ..] => units(rest, false),
                _ => units(bytes, true),
            },
        }
    }
}

/// Flink's `UNHEX`: pairs of hex digits from the end; an odd leading digit is checked but
/// leaves its byte 0 (as Flink does); None when a character is not a hex digit.
fn unhex(hex: &[u8]) -> Option<Vec<u8>> {
    let digit = |b: u8| char::from(b).to_digit(16);
    let mut out = vec![0u8; hex.len().div_ceil(2)];
    let odd = hex.len() % 2;
    if odd == 1 {
        digit(hex[0])?;
    }
    for (slot, pair) in out[odd..].iter_mut().zip(hex[odd..].chunks_exact(2)) {
        *slot = (digit(pair[0])? << 4 | digit(pair[1])?) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unhex_follows_flink() {
        assert_eq!(unhex(b"48656C6C6F").as_deref(), Some(&b"Hello"[..]));
        assert_eq!(unhex(b"abc"), Some(vec![0, 0xbc]));
        assert_eq!(unhex(b""), Some(vec![]));
        assert_eq!(unhex(b"zz"), None);
        assert_eq!(unhex(b"z12"), None);
    }

    #[test]
    fn charsets_round_trip_and_replace() {
        let s = "héllo €";
        for c in [
            Charset::Utf8,
            Charset::Utf16,
            Charset::Utf16Be,
            Charset::Utf16Le,
        ] {
            assert_eq!(c.decode(&c.encode(s)), s, "{c:?}");
        }
        assert_eq!(Charset::Latin1.encode(s), b"h\xe9llo ?".to_vec());
        assert_eq!(Charset::Ascii.encode(s), b"h?llo ?".to_vec());
        assert_eq!(Charset::Ascii.decode(b"a\xff"), "a\u{fffd}");
        assert_eq!(Charset::Utf16.encode("a"), vec![0xfe, 0xff, 0, b'a']);
    }
}
