//! The `csv` format: Flink's CSV options, field splitting and per-field conversion.

use crate::options::Options;
use crate::text::TimestampStyle;
use crate::Result;

/// Flink's CSV format options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// `csv.field-delimiter` (default `,`).
    pub field_delimiter: char,
    /// `csv.quote-character` (default `"`); `None` with `csv.disable-quote-character`.
    pub quote: Option<char>,
    /// `csv.escape-character` (default none).
    pub escape: Option<char>,
    /// `csv.allow-comments`: lines starting with `#` are skipped.
    pub allow_comments: bool,
    /// `csv.ignore-parse-errors`: bad fields become NULL, malformed rows are skipped.
    pub ignore_parse_errors: bool,
    /// `csv.null-literal`: text read as NULL.
    pub null_literal: Option<String>,
    /// `csv.array-element-delimiter` (default `;`): separates an ARRAY field's elements.
    pub array_element_delimiter: String,
}

impl CsvOptions {
    /// Reads the `csv.*` options.
    pub fn from_options(options: &mut Options) -> Result<Self> {
        let field_delimiter = options.char("csv.field-delimiter", ',')?;
        let disable_quote = options.bool("csv.disable-quote-character", false)?;
        let quote_char = options.char("csv.quote-character", '"')?;
        let escape = match options.get("csv.escape-character") {
            Some(_) => Some(options.char("csv.escape-character", '\\')?),
            None => None,
        };
        let allow_comments = options.bool("csv.allow-comments", false)?;
        let ignore_parse_errors = options.bool("csv.ignore-parse-errors", false)?;
        let null_literal = options.get("csv.null-literal").map(str::to_string);
        let array_element_delimiter = options
            .get("csv.array-element-delimiter")
            .unwrap_or(";")
            .to_string();
        options.accept("csv.write-bigdecimal-in-scientific-notation");
        Ok(Self {
            field_delimiter,
            quote: (!disable_quote).then_some(quote_char),
            escape,
            allow_comments,
            ignore_parse_errors,
            null_literal,
            array_element_delimiter,
        })
    }
}

/// A field split from a CSV record: its text and whether it was quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvField {
    /// Unquoted, unescaped text.
    pub text: String,
    /// The field was written in quotes.
    pub quoted: bool,
}

/// Splits one record into fields. `Ok(None)` means the record continues on the next line (an
/// open quote); the caller appends the next line (with its newline) and retries.
pub fn split_record(line: &str, options: &CsvOptions) -> Option<Vec<CsvField>> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut text = String::new();
        let mut quoted = false;
        if options.quote.is_some() && chars.peek().copied() == options.quote {
            quoted = true;
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                if Some(c) == options.escape {
                    match chars.next() {
                        Some(n) => text.push(n),
                        None => return None,
                    }
                } else if Some(c) == options.quote {
                    if chars.peek().copied() == options.quote {
                        chars.next();
                        text.push(c);
                    } else {
                        closed = true;
                        break;
                    }
                } else {
                    text.push(c);
                }
            }
            if !closed {
                return None;
            }
            // Anything between the closing quote and the delimiter is kept, as Jackson does.
            while let Some(&c) = chars.peek() {
                if c == options.field_delimiter {
                    break;
                }
                text.push(c);
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == options.field_delimiter {
                    break;
                }
                chars.next();
                if Some(c) == options.escape {
                    if let Some(n) = chars.next() {
                        text.push(n);
                    }
                } else {
                    text.push(c);
                }
            }
        }
        fields.push(CsvField { text, quoted });
        match chars.next() {
            Some(_) => continue,
            None => break,
        }
    }
    Some(fields)
}

/// The fields of a record without quote or escape characters — the text between delimiters,
/// borrowed — and the number of delimiters; `None` when the record has such characters and
/// needs [`split_record`].
pub fn plain_fields<'a>(
    line: &'a str,
    options: &CsvOptions,
) -> Option<(usize, std::str::Split<'a, char>)> {
    let delimiters = plain_delimiters(line, options)?;
    Some((delimiters, line.split(options.field_delimiter)))
}

/// The number of field delimiters in `line`, or `None` when it holds a quote or escape
/// character: one pass over the bytes when those characters are ASCII (as they usually are).
fn plain_delimiters(line: &str, options: &CsvOptions) -> Option<usize> {
    let byte = |c: char| u8::try_from(c).ok().filter(u8::is_ascii);
    let optional = |c: Option<char>| c.map_or(Some(None), |c| byte(c).map(Some));
    if let (Some(d), Some(q), Some(e)) = (
        byte(options.field_delimiter),
        optional(options.quote),
        optional(options.escape),
    ) {
        let mut count = 0;
        for &b in line.as_bytes() {
            if Some(b) == q || Some(b) == e {
                return None;
            }
            count += usize::from(b == d);
        }
        return Some(count);
    }
    let special = |c: Option<char>| c.is_some_and(|c| line.contains(c));
    (!special(options.quote) && !special(options.escape))
        .then(|| line.matches(options.field_delimiter).count())
}

/// Whether `record` may continue on the next line: it has an open quote.
pub fn has_open_quote(record: &str, options: &CsvOptions) -> bool {
    plain_fields(record, options).is_none() && split_record(record, options).is_none()
}

/// True when `line` is skipped entirely (blank, or a comment when comments are allowed).
pub fn is_skipped_line(line: &str, options: &CsvOptions) -> bool {
    line.trim_end_matches(['\r', '\n']).is_empty()
        || options.allow_comments && line.starts_with('#')
}

/// The timestamp style of CSV text.
pub const CSV_TIMESTAMP_STYLE: TimestampStyle = TimestampStyle::Sql;

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> CsvOptions {
        CsvOptions {
            field_delimiter: ',',
            quote: Some('"'),
            escape: None,
            allow_comments: false,
            ignore_parse_errors: false,
            null_literal: None,
            array_element_delimiter: ";".to_string(),
        }
    }

    fn texts(line: &str) -> Option<Vec<String>> {
        split_record(line, &opts()).map(|f| f.into_iter().map(|f| f.text).collect())
    }

    #[test]
    fn plain_records_count_their_delimiters_in_one_pass() {
        let count = |line: &str, options: &CsvOptions| plain_fields(line, options).map(|f| f.0);
        assert_eq!(count("a,b,,c", &opts()), Some(3));
        assert_eq!(count("a,\"b\"", &opts()), None);
        assert_eq!(count("", &opts()), Some(0));
        let unicode = CsvOptions {
            field_delimiter: '¦',
            ..opts()
        };
        assert_eq!(count("a¦b¦ü", &unicode), Some(2));
        assert_eq!(count("a¦\"b\"", &unicode), None);
        let escaped = CsvOptions {
            escape: Some('\\'),
            quote: None,
            ..opts()
        };
        assert_eq!(count("a,\"b\"", &escaped), Some(1));
        assert_eq!(count("a\\,b", &escaped), None);
    }

    #[test]
    fn splits_quoted_and_plain_fields() {
        assert_eq!(
            texts("a,b,,c"),
            Some(vec!["a".into(), "b".into(), "".into(), "c".into()])
        );
        assert_eq!(
            texts("\"a,b\",\"say \"\"hi\"\"\""),
            Some(vec!["a,b".into(), "say \"hi\"".into()])
        );
        assert_eq!(texts("\"open"), None);
        assert!(has_open_quote("a,\"b", &opts()));
        assert!(!has_open_quote("a,\"b\"", &opts()));
        let plain: Vec<&str> = plain_fields("a,,b", &opts()).unwrap().1.collect();
        assert_eq!(plain, ["a", "", "b"]);
        assert!(plain_fields("a,\"b\"", &opts()).is_none());
        assert_eq!(texts(""), Some(vec!["".into()]));
    }
}
