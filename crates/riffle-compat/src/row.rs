//! Flink's printed row format, as produced by `Row.toString()` and the `print` connector.
//!
//! A row prints as its change kind followed by its fields in brackets: `+I[a, 1, null]`. Field
//! values print with Java's `toString()` of Flink's external types: `null` for NULL, arrays and
//! byte strings as `[1, 2]`, maps as `{k=v, k2=v2}` (in the map's iteration order), nested rows
//! as `+I[...]` (always the `+I` kind), timestamps as `2020-04-15T08:00` (`LocalDateTime`),
//! `TIMESTAMP_LTZ` as `2020-04-15T08:00:00Z` (`Instant`), DECIMAL with its scale (`4.00`), DOUBLE
//! as `1.0E8`, intervals as `PT48H` / `P3M`. A `print` sink may put `identifier> ` (and a subtask
//! index, `identifier:1> ` or `1> `) in front of the row.
//!
//! The format does not quote strings, so a string holding `, `, brackets, braces or `=` cannot be
//! told apart from structure. [`Row::parse`] reads such text as structure where it can and fails
//! where it cannot; comparisons then fall back to the raw text (see `compare`).

use std::fmt;

use serde::Serialize;
use thiserror::Error;

/// The change kind of a row in a changelog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum RowKind {
    /// `+I`: an inserted row.
    Insert,
    /// `-U`: the previous content of an updated row (retraction).
    UpdateBefore,
    /// `+U`: the new content of an updated row.
    UpdateAfter,
    /// `-D`: a deleted row.
    Delete,
}

impl RowKind {
    /// The two-character marker Flink prints (`+I`, `-U`, `+U`, `-D`).
    pub fn marker(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// Whether the change adds its row to the materialised table (`+I`, `+U`).
    pub fn is_addition(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }

    /// The kind for a printed marker (`+I`, `-U`, `+U`, `-D`).
    pub(crate) fn from_marker(text: &str) -> Option<RowKind> {
        match text {
            "+I" => Some(RowKind::Insert),
            "-U" => Some(RowKind::UpdateBefore),
            "+U" => Some(RowKind::UpdateAfter),
            "-D" => Some(RowKind::Delete),
            _ => None,
        }
    }
}

impl fmt::Display for RowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.marker())
    }
}

/// One field value of a printed row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Value {
    /// `null`.
    Null,
    /// Any value printed as plain text (numbers, strings, temporal values, booleans).
    Scalar(String),
    /// `[a, b]`: an ARRAY (or a BINARY/BYTES value, which prints the same way).
    Array(Vec<Value>),
    /// `{k=v}`: a MAP or MULTISET, entries in printed order.
    Map(Vec<(Value, Value)>),
    /// `+I[a, b]`: a nested ROW.
    Row(RowKind, Vec<Value>),
}

impl Value {
    /// The value with every map's entries sorted, so that maps printed in a different
    /// iteration order compare equal.
    pub fn canonical(&self) -> Value {
        match self {
            Value::Null | Value::Scalar(_) => self.clone(),
            Value::Array(items) => Value::Array(items.iter().map(Value::canonical).collect()),
            Value::Row(kind, fields) => {
                Value::Row(*kind, fields.iter().map(Value::canonical).collect())
            }
            Value::Map(entries) => {
                let mut sorted: Vec<(Value, Value)> = entries
                    .iter()
                    .map(|(k, v)| (k.canonical(), v.canonical()))
                    .collect();
                sorted.sort_by_key(|(k, v)| (k.to_string(), v.to_string()));
                Value::Map(sorted)
            }
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Scalar(s) => f.write_str(s),
            Value::Array(items) => {
                f.write_str("[")?;
                write_list(f, items)?;
                f.write_str("]")
            }
            Value::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}={v}")?;
                }
                f.write_str("}")
            }
            Value::Row(kind, fields) => {
                write!(f, "{kind}[")?;
                write_list(f, fields)?;
                f.write_str("]")
            }
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Value]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// A parsed top-level row: its change kind and fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The change kind.
    pub kind: RowKind,
    /// The field values, in column order.
    pub fields: Vec<Value>,
}

impl Row {
    /// Parses `+I[...]` text (without any print-sink prefix).
    pub fn parse(text: &str) -> Result<Row, RowParseError> {
        let mut parser = Parser { text, pos: 0 };
        let value = parser.row()?;
        if parser.pos != text.len() {
            return Err(parser.error("unexpected text after the closing ']'"));
        }
        match value {
            Value::Row(kind, fields) => Ok(Row { kind, fields }),
            _ => Err(parser.error("expected a row")),
        }
    }

    /// The same row with maps sorted (see [`Value::canonical`]).
    pub fn canonical(&self) -> Row {
        Row {
            kind: self.kind,
            fields: self.fields.iter().map(Value::canonical).collect(),
        }
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.kind)?;
        write_list(f, &self.fields)?;
        f.write_str("]")
    }
}

/// One line of printed output: an optional print-sink prefix and the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrintedRow {
    /// What the `print` sink put before `> ` (its `print-identifier`, possibly with `:subtask`,
    /// or the bare subtask index); `None` for rows collected from a query.
    pub sink: Option<String>,
    /// The row itself.
    pub row: Row,
}

impl PrintedRow {
    /// Parses a printed line such as `+I[a, 1]` or `orders> -U[a, 1]`.
    pub fn parse(line: &str) -> Result<PrintedRow, RowParseError> {
        let (sink, rest) = split_sink(line);
        let row = Row::parse(rest).map_err(|e| RowParseError {
            text: line.to_string(),
            offset: e.offset + (line.len() - rest.len()),
            message: e.message,
        })?;
        Ok(PrintedRow {
            sink: sink.map(str::to_string),
            row,
        })
    }
}

/// Splits a printed line into its print-sink prefix (if any) and the row text.
pub(crate) fn split_sink(line: &str) -> (Option<&str>, &str) {
    if starts_with_kind(line) {
        return (None, line);
    }
    match line.find("> ") {
        Some(at) if starts_with_kind(&line[at + 2..]) => (Some(&line[..at]), &line[at + 2..]),
        _ => (None, line),
    }
}

fn starts_with_kind(text: &str) -> bool {
    text.get(..2).and_then(RowKind::from_marker).is_some() && text[2..].starts_with('[')
}

/// Printed text that is not a well-formed Flink row.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot parse row `{text}` at byte {offset}: {message}")]
pub struct RowParseError {
    /// The text being parsed.
    pub text: String,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was wrong.
    pub message: String,
}

/// Recursive-descent reader over the printed text; every delimiter it looks for is ASCII, so
/// byte offsets always fall on character boundaries.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn error(&self, message: &str) -> RowParseError {
        RowParseError {
            text: self.text.to_string(),
            offset: self.pos,
            message: message.to_string(),
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), RowParseError> {
        if self.rest().starts_with(token) {
            self.pos += token.len();
            Ok(())
        } else {
            Err(self.error(&format!("expected `{token}`")))
        }
    }

    /// `+I[fields]`.
    fn row(&mut self) -> Result<Value, RowParseError> {
        let kind = self
            .rest()
            .get(..2)
            .and_then(RowKind::from_marker)
            .ok_or_else(|| self.error("expected a change kind (+I, -U, +U, -D)"))?;
        self.pos += 2;
        self.expect("[")?;
        let fields = self.list(']')?;
        Ok(Value::Row(kind, fields))
    }

    /// Comma-separated values up to and including `close`.
    fn list(&mut self, close: char) -> Result<Vec<Value>, RowParseError> {
        let mut items = Vec::new();
        if self.rest().starts_with(close) {
            self.pos += 1;
            return Ok(items);
        }
        loop {
            items.push(self.value(&[close])?);
            if self.rest().starts_with(", ") {
                self.pos += 2;
            } else if self.rest().starts_with(close) {
                self.pos += 1;
                return Ok(items);
            } else {
                return Err(self.error(&format!("expected `, ` or `{close}`")));
            }
        }
    }

    /// `{k=v, ...}` after the opening brace.
    fn map(&mut self) -> Result<Vec<(Value, Value)>, RowParseError> {
        let mut entries = Vec::new();
        if self.rest().starts_with('}') {
            self.pos += 1;
            return Ok(entries);
        }
        loop {
            let key = self.value(&['='])?;
            self.expect("=")?;
            let value = self.value(&['}'])?;
            entries.push((key, value));
            if self.rest().starts_with(", ") {
                self.pos += 2;
            } else if self.rest().starts_with('}') {
                self.pos += 1;
                return Ok(entries);
            } else {
                return Err(self.error("expected `, ` or `}`"));
            }
        }
    }

    /// One value; a structured reading is tried first and plain text is the fallback.
    fn value(&mut self, closers: &[char]) -> Result<Value, RowParseError> {
        let start = self.pos;
        if starts_with_kind(self.rest()) {
            if let Ok(v) = self.row() {
                if self.at_value_end(closers) {
                    return Ok(v);
                }
            }
            self.pos = start;
        } else if self.rest().starts_with('[') {
            self.pos += 1;
            if let Ok(items) = self.list(']') {
                if self.at_value_end(closers) {
                    return Ok(Value::Array(items));
                }
            }
            self.pos = start;
        } else if self.rest().starts_with('{') {
            self.pos += 1;
            if let Ok(entries) = self.map() {
                if self.at_value_end(closers) {
                    return Ok(Value::Map(entries));
                }
            }
            self.pos = start;
        }
        let end = self.scalar_end(closers);
        let text = &self.text[start..end];
        self.pos = end;
        if text == "null" {
            Ok(Value::Null)
        } else {
            Ok(Value::Scalar(text.to_string()))
        }
    }

    fn at_value_end(&self, closers: &[char]) -> bool {
        let rest = self.rest();
        rest.starts_with(", ") || closers.iter().any(|c| rest.starts_with(*c))
    }

    /// Plain text runs to the next `, ` or closing delimiter.
    fn scalar_end(&self, closers: &[char]) -> usize {
        let rest = self.rest();
        let mut end = rest.len();
        if let Some(i) = rest.find(", ") {
            end = end.min(i);
        }
        for c in closers {
            if let Some(i) = rest.find(*c) {
                end = end.min(i);
            }
        }
        self.pos + end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Value {
        Value::Scalar(text.to_string())
    }

    #[test]
    fn parses_flat_row_with_null() {
        let row = Row::parse("+I[a, 1, null, 4.00]").unwrap();
        assert_eq!(row.kind, RowKind::Insert);
        assert_eq!(row.fields, vec![s("a"), s("1"), Value::Null, s("4.00")]);
    }

    #[test]
    fn parses_every_kind() {
        for (text, kind) in [
            ("+I[1]", RowKind::Insert),
            ("-U[1]", RowKind::UpdateBefore),
            ("+U[1]", RowKind::UpdateAfter),
            ("-D[1]", RowKind::Delete),
        ] {
            assert_eq!(Row::parse(text).unwrap().kind, kind);
        }
    }

    #[test]
    fn parses_nested_structures_as_flink_prints_them() {
        // Printed by Flink 2.3 for ROW(1, 'a', NULL), ARRAY[1,2], MAP['k','v'], ROW(ROW(1), ARRAY[ROW(2)]).
        let row = Row::parse(
            "+I[+I[1, a, null], [1, 2], {k=v}, +I[+I[1], [+I[2]]], [], {}, 2020-01-01T00:00]",
        )
        .unwrap();
        assert_eq!(
            row.fields,
            vec![
                Value::Row(RowKind::Insert, vec![s("1"), s("a"), Value::Null]),
                Value::Array(vec![s("1"), s("2")]),
                Value::Map(vec![(s("k"), s("v"))]),
                Value::Row(
                    RowKind::Insert,
                    vec![
                        Value::Row(RowKind::Insert, vec![s("1")]),
                        Value::Array(vec![Value::Row(RowKind::Insert, vec![s("2")])]),
                    ]
                ),
                Value::Array(vec![]),
                Value::Map(vec![]),
                s("2020-01-01T00:00"),
            ]
        );
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "+I[+I[1, a, null], [1, 2], {k=v, a=[1]}, x]",
            "-D[]",
            "+U[null, {}]",
        ] {
            assert_eq!(Row::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn canonical_sorts_map_entries() {
        let a = Row::parse("+I[{b=2, a=1}]").unwrap().canonical();
        let b = Row::parse("+I[{a=1, b=2}]").unwrap().canonical();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "+I[{a=1, b=2}]");
    }

    #[test]
    fn text_that_is_not_structure_stays_scalar() {
        // A string starting with '[' that is not a complete array reads as plain text.
        let row = Row::parse("+I[[abc, x]").unwrap();
        assert_eq!(row.fields, vec![s("[abc"), s("x")]);
    }

    #[test]
    fn rejects_malformed_rows() {
        let err = Row::parse("I[1]").unwrap_err();
        assert_eq!(err.offset, 0);
        assert!(Row::parse("+I[1").is_err());
        assert!(Row::parse("+I[1] extra").is_err());
        assert!(Row::parse("").is_err());
    }

    #[test]
    fn printed_rows_split_the_sink_prefix() {
        let p = PrintedRow::parse("agg> -U[alice, 3]").unwrap();
        assert_eq!(p.sink.as_deref(), Some("agg"));
        assert_eq!(p.row.kind, RowKind::UpdateBefore);
        let p = PrintedRow::parse("agg:1> +I[x]").unwrap();
        assert_eq!(p.sink.as_deref(), Some("agg:1"));
        let p = PrintedRow::parse("+I[a> b]").unwrap();
        assert_eq!(p.sink, None);
        assert_eq!(p.row.fields, vec![s("a> b")]);
    }

    #[test]
    fn printed_row_errors_point_into_the_whole_line() {
        let err = PrintedRow::parse("sink> +I[1").unwrap_err();
        assert_eq!(err.text, "sink> +I[1");
        assert!(err.offset >= 6, "{err}");
    }
}
