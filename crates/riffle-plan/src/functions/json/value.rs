//! JSON values as Flink's JSON functions hold them (Jackson's untyped Java objects), with
//! Jackson's parser rules and Flink's serialization (compact, object keys sorted).

use std::fmt::Write;

use crate::java_text::big_decimal;

/// Deepest nesting Jackson accepts.
const MAX_DEPTH: usize = 1000;

/// A parsed or built JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// An integer (Java `Integer`/`Long`/`BigInteger`) as its decimal text.
    Int(String),
    /// A fractional number (Java `BigDecimal`): `±digits × 10^-scale`.
    Decimal {
        negative: bool,
        digits: String,
        scale: i64,
    },
    Str(String),
    Array(Vec<Json>),
    /// Members in insertion order; a repeated key replaces the earlier value in place.
    Object(Vec<(String, Json)>),
    /// Serialized JSON inserted as it is (a nested `JSON_OBJECT` / `JSON_ARRAY` result).
    Raw(String),
}

impl Json {
    /// Neither an array nor an object.
    pub(crate) fn is_scalar(&self) -> bool {
        !matches!(self, Json::Array(_) | Json::Object(_))
    }

    /// The decimal number for a number's text (`-12.50e3`), as Java's `BigDecimal(String)`.
    pub(crate) fn decimal_from_text(text: &str) -> Option<Json> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let all = format!("{int}{frac}");
        if !all.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = all.trim_start_matches('0');
        let digits = if trimmed.is_empty() { "0" } else { trimmed };
        Some(Json::Decimal {
            negative: negative && digits != "0",
            digits: digits.to_string(),
            scale: frac.len() as i64 - exponent,
        })
    }

    /// `String.valueOf` of the Java object: strings unquoted, numbers as Java prints them,
    /// arrays and objects serialized.
    pub(crate) fn to_java_string(&self) -> String {
        match self {
            Json::Str(s) => s.clone(),
            other => other.serialize(),
        }
    }

    /// Compact JSON text, object keys sorted (Jackson with `ORDER_MAP_ENTRIES_BY_KEYS`).
    pub(crate) fn serialize(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(text) | Json::Raw(text) => out.push_str(text),
            Json::Decimal {
                negative,
                digits,
                scale,
            } => out.push_str(&big_decimal(*negative, digits, *scale)),
            Json::Str(s) => write_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                let mut sorted: Vec<&(String, Json)> = members.iter().collect();
                // Java's String order: UTF-16 code units.
                sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Adds or replaces an object member (Jackson's `ObjectNode.set` / `LinkedHashMap.put`).
pub(crate) fn set_member(members: &mut Vec<(String, Json)>, key: String, value: Json) {
    match members.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => members.push((key, value)),
    }
}

/// A JSON string literal as Jackson writes it.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parses a document as Flink does (Jackson's defaults): the first value counts, whatever
/// follows it is ignored.
pub(crate) fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    if p.pos >= p.s.len() {
        return Err("No content to map due to end-of-input".into());
    }
    let root_number = matches!(p.peek(), Some(b'-' | b'0'..=b'9'));
    let value = p.value()?;
    // Jackson wants a root-level number followed by white space (or the end).
    if root_number && !matches!(p.peek(), None | Some(b' ' | b'\t' | b'\n' | b'\r')) {
        return Err("Expected space separating root-level values".into());
    }
    Ok(value)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn error<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at position {}", self.pos))
    }

    fn value(&mut self) -> Result<Json, String> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.nested(|p| p.object()),
            Some(b'[') => self.nested(|p| p.array()),
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            _ => self.error("Unrecognized token"),
        }
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Json, String>,
    ) -> Result<Json, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.error("Document nesting depth exceeds the maximum allowed");
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if !self.s[self.pos..].starts_with(word.as_bytes()) {
            return self.error("Unrecognized token");
        }
        self.pos += word.len();
        if matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80)
        {
            return self.error("Unrecognized token");
        }
        Ok(value)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        if self.digits() == 0 {
            return self.error("Unexpected character in number");
        }
        if self.s[int_start] == b'0' && self.pos - int_start > 1 {
            return self.error("Invalid numeric value: Leading zeroes not allowed");
        }
        let mut fractional = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            fractional = true;
            if self.digits() == 0 {
                return self.error("Decimal point not followed by a digit");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            fractional = true;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.error("Exponent indicator not followed by a digit");
            }
        }
        let text = &self.text[start..self.pos];
        if fractional {
            return Json::decimal_from_text(text).map_or_else(|| self.error("Invalid number"), Ok);
        }
        let (negative, digits) = match text.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, text),
        };
        Ok(Json::Int(if negative && digits != "0" {
            format!("-{digits}")
        } else {
            digits.to_string()
        }))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let Some(hex) = self.text.get(self.pos..self.pos + 4) else {
            return self.error("Unexpected end-of-input in character escape sequence");
        };
        let v = u32::from_str_radix(hex, 16)
            .or_else(|_| self.error("Illegal character in character escape sequence"))?;
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return self.error("Unexpected end-of-input in a String value");
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return self.error("Unexpected end-of-input in character escape sequence");
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            out.push(self.code_point(unit)?);
                        }
                        _ => return self.error("Unrecognized character escape"),
                    }
                }
                c if c < 0x20 => return self.error("Illegal unquoted character"),
                _ => {
                    // Copy one UTF-8 character.
                    let rest = &self.text[self.pos..];
                    let ch = rest.chars().next().unwrap_or('\u{fffd}');
                    out.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
    }

    /// The character of a `\u` escape, joining a surrogate pair written as two escapes.
    fn code_point(&mut self, unit: u32) -> Result<char, String> {
        if (0xD800..0xDC00).contains(&unit) && self.s[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(unit).unwrap_or('\u{fffd}'))
    }

    fn array(&mut self) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => {
                    return self.error(
                        "Unexpected character: was expecting comma to separate Array entries",
                    )
                }
            }
        }
    }

    fn object(&mut self) -> Result<Json, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return self
                    .error("Unexpected character: was expecting double-quote to start field name");
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.error(
                    "Unexpected character: was expecting a colon to separate field name and value",
                );
            }
            self.pos += 1;
            let value = self.value()?;
            set_member(&mut members, key, value);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => {
                    return self.error(
                        "Unexpected character: was expecting comma to separate Object entries",
                    )
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &str) -> String {
        match parse(s) {
            Ok(v) => v.serialize(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn parses_and_serializes_like_jackson() {
        assert_eq!(
            round_trip(r#"{"b":1,"a":[1.0,-0,"\u00e9\t"]}"#),
            r#"{"a":[1.0,0,"é\t"],"b":1}"#
        );
        assert_eq!(round_trip("1e2"), "1E+2");
        assert_eq!(round_trip("9.50"), "9.50");
        assert_eq!(round_trip(r#"{"a":1} trailing"#), r#"{"a":1}"#);
        assert_eq!(round_trip(r#"{"a":1,"a":2}"#), r#"{"a":2}"#);
        assert_eq!(round_trip("\"\\u001f\""), "\"\\u001F\"");
        assert!(round_trip("not json").starts_with("error"));
        assert!(round_trip("").starts_with("error"));
        assert!(round_trip("01").starts_with("error"));
        assert!(round_trip("12x").starts_with("error"));
        assert!(round_trip("truex").starts_with("error"));
        assert!(round_trip("[1,]").starts_with("error"));
    }
}
