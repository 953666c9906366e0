//! Flink's string functions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::row::{int, string, string_array, string_array_type, text, Arg, RowFunction};

/// Flink's string functions whose DataFusion namesakes differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum StringOp {
    /// `CONCAT(s1, s2, ...)`: NULL when any argument is NULL.
    Concat,
    /// `LEFT(s, n)`: the first `n` characters; empty for negative `n`.
    Left,
    /// `RIGHT(s, n)`: the last `n` characters; empty for negative `n`.
    Right,
    /// `SUBSTRING(s, pos [, len])` / `SUBSTR`: 1-based `pos`, 0 read as 1, negative counts
    /// from the end; out-of-range parts are empty.
    Substr,
}

/// A Flink string function over `STRING` arguments (and `INT` counts).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct StringFunction {
    name: &'static str,
    op: StringOp,
    aliases: Vec<String>,
    signature: Signature,
}

impl StringFunction {
    pub(super) fn new(name: &'static str, op: StringOp) -> Self {
        let aliases = if op == StringOp::Substr {
            vec!["substring".to_string()]
        } else {
            Vec::new()
        };
        Self {
            name,
            op,
            aliases,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

impl ScalarUDFImpl for StringFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        let int = |t: &DataType| t.is_integer() || matches!(t, DataType::Null);
        let ok = match self.op {
            StringOp::Concat => !arg_types.is_empty() && arg_types.iter().all(is_text),
            StringOp::Left | StringOp::Right => matches!(arg_types, [s, n] if is_text(s) && int(n)),
            StringOp::Substr => match arg_types {
                [s, p] => is_text(s) && int(p),
                [s, p, l] => is_text(s) && int(p) && int(l),
                _ => false,
            },
        };
        if !ok {
            let types: Vec<String> = arg_types
                .iter()
                .map(|t| crate::types::flink_type(t, true))
                .collect();
            return plan_err!(
                "No match found for function signature {}({})",
                self.name.to_ascii_uppercase(),
                types.join(", ")
            );
        }
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, _)| {
                if i == 0 || self.op == StringOp::Concat {
                    DataType::Utf8
                } else {
                    DataType::Int64
                }
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let n = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(n))
            .collect::<DfResult<_>>()?;
        let text: Vec<&arrow::array::StringArray> = arrays
            .iter()
            .filter_map(|a| a.as_string_opt::<i32>())
            .collect();
        let ints: Vec<&arrow::array::Int64Array> = arrays
            .iter()
            .filter_map(|a| a.as_primitive_opt::<Int64Type>())
            .collect();
        let Some(first) = text.first() else {
            return exec_err!("{} expects a string", self.name);
        };
        let out: arrow::array::StringArray = (0..n)
            .map(|row| {
                if arrays.iter().any(|a| a.is_null(row)) {
                    return None;
                }
                let s = first.value(row);
                let int = |i: usize| ints.get(i).map(|a| a.value(row));
                Some(match self.op {
                    StringOp::Concat => text.iter().map(|a| a.value(row)).collect::<String>(),
                    StringOp::Left => {
                        let k = int(0).unwrap_or(0).max(0) as usize;
                        s.chars().take(k).collect()
                    }
                    StringOp::Right => {
                        let k = int(0).unwrap_or(0).max(0) as usize;
                        let len = s.chars().count();
                        s.chars().skip(len.saturating_sub(k)).collect()
                    }
                    StringOp::Substr => {
                        let len = s.chars().count() as i64;
                        let pos = int(0).unwrap_or(1);
                        // Flink: a negative length gives NULL, a start before the
                        // beginning an empty string.
                        if int(1).is_some_and(|l| l < 0) {
                            return None;
                        }
                        let start = if pos > 0 {
                            pos - 1
                        } else if pos < 0 {
                            len + pos
                        } else {
                            0
                        };
                        let end = match int(1) {
                            Some(l) => start.saturating_add(l),
                            None => len,
                        };
                        let (start, end) = (start.clamp(0, len), end.clamp(0, len));
                        if end <= start || pos < -len {
                            String::new()
                        } else {
                            s.chars()
                                .skip(start as usize)
                                .take((end - start) as usize)
                                .collect()
                        }
                    }
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// Flink's string functions written as row rules.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Int, Str};
    vec![
        RowFunction::new(
            "split_index",
            &[&[Str, Str, Int], &[Str, Int, Int]],
            DataType::Utf8,
            |v| {
                let parts = match (&v[1], int(&v[1])) {
                    (_, Some(c)) => match u8::try_from(c) {
                        Ok(c) if c >= 1 => {
                            split_preserving(text_of(&v[0]), &char::from(c).to_string())
                        }
                        _ => return Ok(string(None)),
                    },
                    (sep, None) => split_preserving(text_of(&v[0]), text_of(sep)),
                };
                let index = int(&v[2]).unwrap_or(-1);
                Ok(string(
                    usize::try_from(index)
                        .ok()
                        .and_then(|i| parts.get(i))
                        .map(|s| s.to_string()),
                ))
            },
        ),
        RowFunction::new("split", &[&[Str, Str]], string_array_type(), |v| {
            let (s, delimiter) = (text_of(&v[0]), text_of(&v[1]));
            let parts: Vec<Option<String>> = if delimiter.is_empty() {
                s.chars().map(|c| Some(String::from(c))).collect()
            } else if s.is_empty() {
                Vec::new()
            } else {
                s.split(delimiter).map(|p| Some(p.to_string())).collect()
            };
            Ok(string_array(Some(parts)))
        }),
        RowFunction::new("startswith", &[&[Str, Str]], DataType::Boolean, |v| {
            Ok(ScalarValue::Boolean(Some(
                text_of(&v[0]).starts_with(text_of(&v[1])),
            )))
        }),
        RowFunction::new("endswith", &[&[Str, Str]], DataType::Boolean, |v| {
            Ok(ScalarValue::Boolean(Some(
                text_of(&v[0]).ends_with(text_of(&v[1])),
            )))
        }),
        RowFunction::new("initcap", &[&[Str]], DataType::Utf8, |v| {
            Ok(string(Some(initcap(text_of(&v[0])))))
        }),
        RowFunction::new("ascii", &[&[Str]], DataType::Int32, |v| {
            // The first byte of the UTF-8 encoding, as Java's signed byte.
            let first = text_of(&v[0]).as_bytes().first().map_or(0, |b| *b as i8);
            Ok(ScalarValue::Int32(Some(i32::from(first))))
        }),
        RowFunction::new("chr", &[&[Int]], DataType::Utf8, |v| {
            let code = int(&v[0]).unwrap_or(0);
            let s = if code < 0 {
                String::new()
            } else {
                char::from((code & 0xFF) as u8).to_string()
            };
            Ok(string(Some(s)))
        }),
        RowFunction::new(
            "overlay",
            &[&[Str, Str, Int], &[Str, Str, Int, Int]],
            DataType::Utf8,
            |v| {
                let (s, r) = (text_of(&v[0]), text_of(&v[1]));
                let length = v
                    .get(3)
                    .and_then(int)
                    .unwrap_or(r.encode_utf16().count() as i64);
                Ok(string(Some(overlay(s, r, int(&v[2]).unwrap_or(0), length))))
            },
        ),
        RowFunction::new(
            "locate",
            &[&[Str, Str], &[Str, Str, Int]],
            DataType::Int32,
            |v| {
                let from = v.get(2).and_then(int).unwrap_or(1);
                Ok(ScalarValue::Int32(Some(position(
                    text_of(&v[1]),
                    text_of(&v[0]),
                    from,
                ))))
            },
        ),
        // POSITION(needle IN haystack) as DataFusion plans it.
        RowFunction::new("strpos", &[&[Str, Str]], DataType::Int32, |v| {
            Ok(ScalarValue::Int32(Some(position(
                text_of(&v[0]),
                text_of(&v[1]),
                1,
            ))))
        }),
        RowFunction::new("instr", &[&[Str, Str]], DataType::Int32, |v| {
            Ok(ScalarValue::Int32(Some(position(
                text_of(&v[0]),
                text_of(&v[1]),
                1,
            ))))
        }),
        RowFunction::new("elt", &[&[Int, Str]], DataType::Utf8, |v| {
            let index = int(&v[0]).unwrap_or(0);
            let chosen = usize::try_from(index)
                .ok()
                .filter(|i| *i >= 1)
                .and_then(|i| v.get(i));
            Ok(string(chosen.and_then(|s| text(s)).map(str::to_string)))
        })
        .variadic(Str)
        .lenient(),
        RowFunction::new("lpad", &[&[Str, Int, Str]], DataType::Utf8, |v| {
            Ok(string(pad(
                text_of(&v[0]),
                int(&v[1]),
                text_of(&v[2]),
                true,
            )))
        }),
        RowFunction::new("rpad", &[&[Str, Int, Str]], DataType::Utf8, |v| {
            Ok(string(pad(
                text_of(&v[0]),
                int(&v[1]),
                text_of(&v[2]),
                false,
            )))
        }),
        // Java's String.replace: an empty search string matches before every character and at
        // the end.
        RowFunction::new("replace", &[&[Str, Str, Str]], DataType::Utf8, |v| {
            let (s, search, with) = (text_of(&v[0]), text_of(&v[1]), text_of(&v[2]));
            let replaced = if search.is_empty() {
                let mut out = String::with_capacity(s.len() + with.len() * (s.len() + 1));
                for c in s.chars() {
                    out.push_str(with);
                    out.push(c);
                }
                out.push_str(with);
                out
            } else {
                s.replace(search, with)
            };
            Ok(string(Some(replaced)))
        }),
        RowFunction::new("translate", &[&[Str, Str, Str]], DataType::Utf8, |v| {
            let to: Vec<char> = text_of(&v[2]).chars().collect();
            let from: Vec<char> = text_of(&v[1]).chars().collect();
            let out = text_of(&v[0])
                .chars()
                .filter_map(|c| match from.iter().position(|f| *f == c) {
                    Some(i) => to.get(i).copied(),
                    None => Some(c),
                })
                .collect();
            Ok(string(Some(out)))
        }),
    ]
}

/// The text of a `Utf8` value ("" for anything else; rules see only non-NULL strings).
fn text_of(v: &ScalarValue) -> &str {
    text(v).unwrap_or_default()
}

/// Splits at every occurrence of `separator`, keeping empty parts (an empty string has no
/// parts; an empty separator splits at whitespace characters).
fn split_preserving<'a>(s: &'a str, separator: &str) -> Vec<&'a str> {
    if s.is_empty() {
        Vec::new()
    } else if separator.is_empty() {
        s.split(char::is_whitespace).collect()
    } else {
        s.split(separator).collect()
    }
}

/// Upper-cases the first ASCII letter of every word and lower-cases the other ASCII letters; a
/// word is a run of ASCII letters and digits.
fn initcap(s: &str) -> String {
    let mut start = true;
    s.chars()
        .map(|c| {
            let word_char = c.is_ascii_alphanumeric();
            let out = if start {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            start = !word_char;
            out
        })
        .collect()
}

/// `OVERLAY(s PLACING r FROM start FOR length)` on UTF-16 positions, as Java strings count:
/// `s` unchanged when `start` is outside it.
fn overlay(s: &str, r: &str, start: i64, length: i64) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let len = units.len() as i64;
    if start <= 0 || start > len {
        return s.to_string();
    }
    let begin = (start - 1) as usize;
    let mut out: Vec<u16> = units[..begin].to_vec();
    out.extend(r.encode_utf16());
    if length > 0 && start + length <= len {
        out.extend_from_slice(&units[(start - 1 + length) as usize..]);
    }
    String::from_utf16_lossy(&out)
}

/// `LPAD` (`left`) / `RPAD`: `s` cut or padded with repetitions of `padding` to `length`
/// characters; NULL for a negative length or an empty padding (Flink's rule, even when no
/// padding is needed).
fn pad(s: &str, length: Option<i64>, padding: &str, left: bool) -> Option<String> {
    let length = usize::try_from(length?).ok()?;
    if padding.is_empty() {
        return None;
    }
    let have = s.chars().count();
    if length <= have {
        return Some(s.chars().take(length).collect());
    }
    let fill: String = padding.chars().cycle().take(length - have).collect();
    Some(if left {
        fill + s
    } else {
        s.to_string() + &fill
    })
}

/// 1-based character position of `needle` in `haystack` searching from character `from`; 0
/// when absent. An empty needle is found at the start position (at most just past the end),
/// as Java's `indexOf`.
fn position(haystack: &str, needle: &str, from: i64) -> i32 {
    let chars: Vec<char> = haystack.chars().collect();
    let needle: Vec<char> = needle.chars().collect();
    let start = usize::try_from(from.saturating_sub(1)).unwrap_or(0);
    // Flink finds an empty needle at position 1 whatever the start position.
    if needle.is_empty() {
        return 1;
    }
    if start > chars.len() {
        return 0;
    }
    (start..=chars.len().saturating_sub(needle.len()))
        .find(|i| chars[*i..].starts_with(&needle))
        .map_or(0, |i| i32::try_from(i + 1).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_follows_flink() {
        assert_eq!(pad("abc", Some(5), "xy", true).as_deref(), Some("xyabc"));
        assert_eq!(pad("abc", Some(6), "xy", false).as_deref(), Some("abcxyx"));
        assert_eq!(pad("abc", Some(2), "x", true).as_deref(), Some("ab"));
        assert_eq!(pad("abc", Some(0), "x", true).as_deref(), Some(""));
        assert_eq!(pad("abc", Some(-1), "x", true), None);
        assert_eq!(pad("abc", Some(2), "", true), None);
    }

    #[test]
    fn empty_needles_are_found_at_position_one() {
        assert_eq!(position("abc", "", 1), 1);
        assert_eq!(position("abc", "", 3), 1);
        assert_eq!(position("", "", 3), 1);
        assert_eq!(position("abc", "c", 4), 0);
    }
}
