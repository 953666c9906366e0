//! Flink's JSON functions: `IS JSON`, `JSON_VALUE`, `JSON_QUERY`, `JSON_EXISTS`, `JSON_OBJECT`,
//! `JSON_ARRAY`, `JSON_STRING`, `JSON_QUOTE`, `JSON_UNQUOTE`.
//!
//! Their SQL/JSON clauses are rewritten into plain calls by [`syntax`]; the calls carry the
//! clauses as constant string arguments (`json_value(doc, path, 'INT', 'DEFAULT', -1, 'NULL', '')`).
//! Semantics follow Flink's runtime (Jackson parsing, Jayway paths): a path without `lax` is
//! strict, so a missing member is an error there and `ON ERROR` applies.

mod build;
mod path;
pub(crate) mod syntax;
mod value;

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};

use super::row::{string_array, string_array_type, text, Arg, RowFunction};
use build::to_json;
use path::{JsonPath, Mode};
use value::Json;

/// The JSON functions, under the names the rewrite of [`syntax`] calls.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Str};
    vec![
        RowFunction::new("is_json", &[&[Str, Str]], DataType::Boolean, |v| {
            Ok(ScalarValue::Boolean(Some(match text(&v[0]) {
                Some(s) => is_json(s, text(&v[1]).unwrap_or("VALUE")),
                None => false,
            })))
        })
        .lenient(),
        RowFunction::new(
            "json_value",
            &[&[Str, Str, Str, Str, Any, Str, Any]],
            DataType::Utf8,
            json_value,
        )
        .returning_with_constants(|_, c| value_type(c.get(2).copied().flatten())),
        RowFunction::new(
            "json_query",
            &[&[Str, Str, Str, Str, Str, Str]],
            DataType::Utf8,
            json_query,
        )
        .returning_with_constants(|_, c| query_type(c.get(2).copied().flatten())),
        RowFunction::new("json_exists", &[&[Str, Str, Str]], DataType::Boolean, |v| {
            json_exists(str_arg(v, 0), str_arg(v, 1), str_arg(v, 2))
        }),
        RowFunction::new("json_string", &[&[Str, Any]], DataType::Utf8, |v| {
            Ok(ScalarValue::Utf8(Some(
                node(&v[1], str_arg(v, 0) == "RAW")?.serialize(),
            )))
        }),
        RowFunction::new("json_object", &[&[Str, Str]], DataType::Utf8, json_object)
            .variadic(Any)
            .lenient(),
        RowFunction::new("json_array", &[&[Str, Str]], DataType::Utf8, json_array)
            .variadic(Any)
            .lenient(),
        RowFunction::new("json_quote", &[&[Str]], DataType::Utf8, |v| {
            Ok(ScalarValue::Utf8(Some(quote(str_arg(v, 0)))))
        }),
        RowFunction::new("json_unquote", &[&[Str]], DataType::Utf8, |v| {
            Ok(ScalarValue::Utf8(Some(unquote(str_arg(v, 0))?)))
        }),
    ]
}

fn str_arg(v: &[ScalarValue], i: usize) -> &str {
    v.get(i).and_then(text).unwrap_or_default()
}

/// `IS JSON VALUE | SCALAR | ARRAY | OBJECT`.
fn is_json(s: &str, kind: &str) -> bool {
    match value::parse(s) {
        Err(_) => false,
        Ok(v) => match kind {
            "OBJECT" => matches!(v, Json::Object(_)),
            "ARRAY" => matches!(v, Json::Array(_)),
            "SCALAR" => v.is_scalar(),
            _ => true,
        },
    }
}

/// Reads `path` in `doc`; a path Riffle cannot evaluate fails the query.
fn read(doc: &str, path: &str) -> DfResult<Result<(Mode, Option<Json>), String>> {
    let path = match JsonPath::compile(path) {
        Ok(p) => p,
        Err(e) if e.contains("not supported") => return exec_err!("{e}"),
        Err(e) => return Ok(Err(e)),
    };
    Ok(path.read(&value::parse(doc)).map(|v| (path.mode, v)))
}

/// The result type of `JSON_VALUE ... RETURNING <t>` (the rewrite passes a supported name).
fn value_type(returning: Option<&ScalarValue>) -> DataType {
    match returning.and_then(text) {
        Some("INT") => DataType::Int32,
        Some("BOOLEAN") => DataType::Boolean,
        Some("DOUBLE") => DataType::Float64,
        _ => DataType::Utf8,
    }
}

fn query_type(returning: Option<&ScalarValue>) -> DataType {
    match returning.and_then(text) {
        Some("ARRAY") => string_array_type(),
        _ => DataType::Utf8,
    }
}

/// `JSON_VALUE(doc, path, returning, on_empty, empty_default, on_error, error_default)`.
fn json_value(v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let target = value_type(v.get(2));
    let behave = |mode: &str, default: &ScalarValue, message: String| -> DfResult<ScalarValue> {
        match mode {
            "ERROR" => exec_err!("{message}"),
            "DEFAULT" => Ok(default.cast_to(&target)?),
            _ => Ok(ScalarValue::try_from(&target)?),
        }
    };
    let on_empty = |m: &str| behave(str_arg(v, 3), &v[4], m.to_string());
    let on_error = |m: String| behave(str_arg(v, 5), &v[6], m);
    let (mode, value) = match read(str_arg(v, 0), str_arg(v, 1))? {
        Err(e) => return on_error(e),
        Ok(r) => r,
    };
    let value = match value {
        None => return on_empty("Empty result of JSON_VALUE function is not allowed"),
        Some(j) if !j.is_scalar() && mode == Mode::Lax => {
            return on_empty("Empty result of JSON_VALUE function is not allowed")
        }
        Some(j) if !j.is_scalar() => {
            return on_error(format!(
                "Strict jsonpath mode requires scalar value, and the actual value is: '{}'",
                j.serialize()
            ))
        }
        Some(j) => j,
    };
    // Flink casts the Java object to the RETURNING type: a mismatch fails the query.
    let cast_error = |java: &str| {
        exec_err!(
            "class {} cannot be cast to the RETURNING type {}",
            java,
            crate::types::flink_type(&target, true)
        )
    };
    Ok(match (&target, &value) {
        (DataType::Utf8, j) => ScalarValue::Utf8(Some(j.to_java_string())),
        (DataType::Boolean, Json::Bool(b)) => ScalarValue::Boolean(Some(*b)),
        (DataType::Int32, Json::Int(i)) => match i.parse::<i32>() {
            Ok(i) => ScalarValue::Int32(Some(i)),
            Err(_) => return cast_error("java.lang.Long"),
        },
        (DataType::Float64, Json::Decimal { .. }) => {
            ScalarValue::Float64(value.serialize().parse::<f64>().ok())
        }
        (_, j) => return cast_error(java_class(j)),
    })
}

fn java_class(j: &Json) -> &'static str {
    match j {
        Json::Str(_) => "java.lang.String",
        Json::Bool(_) => "java.lang.Boolean",
        Json::Int(_) => "java.lang.Integer",
        Json::Decimal { .. } => "java.math.BigDecimal",
        _ => "java.lang.Object",
    }
}

/// `JSON_QUERY(doc, path, returning, wrapper, on_empty, on_error)`.
fn json_query(v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let array = str_arg(v, 2) == "ARRAY";
    let behave = |mode: &str, message: String| -> DfResult<ScalarValue> {
        match (mode, array) {
            ("ERROR", _) => exec_err!("{message}"),
            ("EMPTY ARRAY", false) => Ok(ScalarValue::Utf8(Some("[]".into()))),
            ("EMPTY ARRAY", true) => Ok(string_array(Some(Vec::new()))),
            ("EMPTY OBJECT", false) => Ok(ScalarValue::Utf8(Some("{}".into()))),
            ("EMPTY OBJECT", true) => {
                exec_err!("Illegal behavior 'EMPTY_OBJECT' specified in JSON_QUERY function")
            }
            (_, false) => Ok(ScalarValue::Utf8(None)),
            (_, true) => Ok(string_array(None)),
        }
    };
    let on_empty = || {
        behave(
            str_arg(v, 4),
            "Empty result of JSON_QUERY function is not allowed".into(),
        )
    };
    let on_error = |m: String| behave(str_arg(v, 5), m);
    let (mode, value) = match read(str_arg(v, 0), str_arg(v, 1))? {
        Err(e) => return on_error(e),
        Ok(r) => r,
    };
    let value = value.map(|j| match str_arg(v, 3) {
        "WITH UNCONDITIONAL" => Json::Array(vec![j]),
        "WITH CONDITIONAL" if !matches!(j, Json::Array(_)) => Json::Array(vec![j]),
        _ => j,
    });
    let value = match value {
        None => return on_empty(),
        Some(j) if j.is_scalar() && mode == Mode::Lax => return on_empty(),
        Some(j) if j.is_scalar() => {
            return on_error(format!(
            "Strict jsonpath mode requires array or object value, and the actual value is: '{}'",
            j.to_java_string()
        ))
        }
        Some(j) => j,
    };
    if !array {
        return Ok(ScalarValue::Utf8(Some(value.serialize())));
    }
    match value {
        Json::Array(items) => Ok(string_array(Some(
            items
                .iter()
                .map(|j| (*j != Json::Null).then(|| j.to_java_string()))
                .collect(),
        ))),
        other => on_error(format!(
            "class {} cannot be cast to class java.util.List",
            java_class(&other)
        )),
    }
}

/// `JSON_EXISTS(doc, path, on_error)`.
fn json_exists(doc: &str, path: &str, on_error: &str) -> DfResult<ScalarValue> {
    Ok(ScalarValue::Boolean(match read(doc, path)? {
        Ok((_, value)) => Some(value.is_some()),
        Err(e) => match on_error {
            "TRUE" => Some(true),
            "UNKNOWN" => None,
            "ERROR" => return exec_err!("{e}"),
            _ => Some(false),
        },
    }))
}

/// The JSON node of an argument; `raw`: the argument is JSON text built by a JSON function.
fn node(v: &ScalarValue, raw: bool) -> DfResult<Json> {
    match (raw, text(v)) {
        (true, Some(s)) => Ok(Json::Raw(s.to_string())),
        _ => to_json(v),
    }
}

/// Whether `NULL` values are kept (`NULL ON NULL`) and which values are raw JSON.
fn null_and_raw(v: &[ScalarValue]) -> (bool, Vec<bool>) {
    let keep_null = str_arg(v, 0) == "NULL";
    let raw = str_arg(v, 1).chars().map(|c| c == '1').collect();
    (keep_null, raw)
}

/// `JSON_OBJECT(on_null, raw_flags, key1, value1, ...)`.
fn json_object(v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let (keep_null, raw) = null_and_raw(v);
    let mut members = Vec::new();
    for (i, pair) in v[2..].chunks(2).enumerate() {
        let [key, value] = pair else {
            return exec_err!("JSON_OBJECT needs a value for every key");
        };
        let Some(key) = text(key) else {
            return exec_err!("JSON_OBJECT keys must not be NULL");
        };
        if value.is_null() && !keep_null {
            continue;
        }
        let node = node(value, raw.get(i).copied().unwrap_or(false))?;
        value::set_member(&mut members, key.to_string(), node);
    }
    Ok(ScalarValue::Utf8(Some(Json::Object(members).serialize())))
}

/// `JSON_ARRAY(on_null, raw_flags, value1, ...)`.
fn json_array(v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let (keep_null, raw) = null_and_raw(v);
    let mut items = Vec::new();
    for (i, value) in v[2..].iter().enumerate() {
        if value.is_null() && !keep_null {
            continue;
        }
        items.push(node(value, raw.get(i).copied().unwrap_or(false))?);
    }
    Ok(ScalarValue::Utf8(Some(Json::Array(items).serialize())))
}

/// `JSON_QUOTE`: quotes and escapes; non-ASCII as `\uxxxx` of each UTF-16 position's code point.
fn quote(s: &str) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut out = String::from("\"");
    for i in 0..units.len() {
        let unit = units[i];
        let code_point = match (unit, units.get(i + 1)) {
            (0xD800..=0xDBFF, Some(&low @ 0xDC00..=0xDFFF)) => {
                0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            _ => u32::from(unit),
        };
        match code_point {
            0x22 => out.push_str("\\\""),
            0x5C => out.push_str("\\\\"),
            0x2F => out.push_str("\\/"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            c if c < 0x80 => out.push(char::from(c as u8)),
            c => out.push_str(&format!("\\u{c:04x}")),
        }
    }
    out.push('"');
    out
}

/// `JSON_UNQUOTE`: a valid JSON value loses its first and last character and its escapes;
/// anything else comes back unchanged.
fn unquote(s: &str) -> DfResult<String> {
    if value::parse(s).is_err() {
        return Ok(s.to_string());
    }
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut out: Vec<u16> = Vec::new();
    let mut i = 1;
    while i + 1 < units.len() {
        if units[i] == u16::from(b'\\') && i + 1 < units.len() {
            let e = units[i + 1];
            i += 2;
            let plain = |c: u8| Some(u16::from(c));
            let unescaped = match u8::try_from(e).unwrap_or(0) {
                b'"' => plain(b'"'),
                b'\\' => plain(b'\\'),
                b'/' => plain(b'/'),
                b'b' => plain(8),
                b'f' => plain(12),
                b'n' => plain(b'\n'),
                b'r' => plain(b'\r'),
                b't' => plain(b'\t'),
                b'u' => {
                    let hex = String::from_utf16_lossy(units.get(i..i + 4).unwrap_or_default());
                    i += 4;
                    u16::from_str_radix(&hex, 16).ok()
                }
                _ => None,
            };
            match unescaped {
                Some(u) => out.push(u),
                None => {
                    return exec_err!(
                        "Illegal escape sequence: \\{}",
                        String::from_utf16_lossy(&[e])
                    )
                }
            }
        } else {
            out.push(units[i]);
            i += 1;
        }
    }
    Ok(String::from_utf16_lossy(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_and_unquote_like_flink() {
        assert_eq!(quote("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(quote("a/b\\c\té"), "\"a\\/b\\\\c\\t\\u00e9\"");
        assert_eq!(unquote("\"a\\u0041\"").ok(), Some("aA".into()));
        assert_eq!(unquote("\"x\\ty\"").ok(), Some("x\ty".into()));
        assert_eq!(unquote("plain").ok(), Some("plain".into()));
        assert_eq!(
            unquote("\"unterminated").ok(),
            Some("\"unterminated".into())
        );
    }

    #[test]
    fn is_json_kinds() {
        assert!(is_json("{\"a\":1} trailing", "OBJECT"));
        assert!(is_json("null", "SCALAR"));
        assert!(!is_json("not json", "VALUE"));
        assert!(is_json("[1]", "ARRAY"));
    }
}
