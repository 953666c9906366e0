//! Flink's regular-expression functions (`REGEXP`, `REGEXP_REPLACE`, `REGEXP_EXTRACT`,
//! `REGEXP_EXTRACT_ALL`, `REGEXP_COUNT`, `REGEXP_INSTR`, `REGEXP_SUBSTR`).
//!
//! Flink compiles Java patterns and answers NULL (or FALSE for `REGEXP`) when a pattern is
//! invalid or a group index does not exist. Patterns the Rust engine cannot compile fail the
//! job with an error naming the pattern: a Java-only construct (look-around, back-references)
//! would otherwise silently give NULL where Flink matches.

use std::cell::RefCell;

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};
use regex::Regex;

use super::row::{int, string, string_array, string_array_type, text, Arg, RowFunction};

/// Java's meaning of the class escapes the Rust engine reads as Unicode classes: `\w`, `\d`,
/// `\s` and their negations match ASCII characters only, `\b` is an ASCII word boundary.
fn java_classes(pattern: &str) -> std::borrow::Cow<'_, str> {
    if !pattern.contains('\\') {
        return pattern.into();
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push(c);
                    break;
                };
                let replacement = match (e, in_class) {
                    ('w', false) => "[0-9A-Za-z_]",
                    ('W', false) => "[^0-9A-Za-z_]",
                    ('d', false) => "[0-9]",
                    ('D', false) => "[^0-9]",
                    ('s', false) => "[\\t\\n\\x0B\\f\\r ]",
                    ('S', false) => "[^\\t\\n\\x0B\\f\\r ]",
                    ('b', false) => "(?-u:\\b)",
                    ('B', false) => "(?-u:\\B)",
                    ('w', true) => "0-9A-Za-z_",
                    ('d', true) => "0-9",
                    ('s', true) => "\\t\\n\\x0B\\f\\r ",
                    _ => {
                        out.push(c);
                        out.push(e);
                        continue;
                    }
                };
                out.push_str(replacement);
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` or `^]` right after the opening bracket is a literal.
                let rest = chars.as_str();
                let literal = if rest.starts_with("^]") {
                    2
                } else {
                    usize::from(rest.starts_with(']'))
                };
                out.push_str(&rest[..literal]);
                chars = rest[literal..].chars();
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.into()
}

/// Compiles a Java pattern with the Rust engine (the syntax both share; see [`java_classes`]).
/// `None` for a pattern that is invalid in Java too (Flink's functions then give NULL); a
/// pattern using a construct only Java has fails the job instead.
fn compile(pattern: &str) -> DfResult<Option<Regex>> {
    let java = pattern;
    let pattern = &*java_classes(java);
    thread_local! {
        // Patterns are usually constants: keep the last one compiled.
        static LAST: RefCell<Option<Regex>> = const { RefCell::new(None) };
    }
    if let Some(re) = LAST.with_borrow(|last| last.clone().filter(|r| r.as_str() == pattern)) {
        return Ok(Some(re));
    }
    match Regex::new(pattern) {
        Ok(re) => {
            LAST.set(Some(re.clone()));
            Ok(Some(re))
        }
        Err(e) if java_only(java) => {
            exec_err!("regular expression '{java}' is not supported: {e}")
        }
        Err(_) => Ok(None),
    }
}

/// Whether a pattern uses a construct Java's engine has and the Rust one lacks (look-around,
/// back-references, atomic groups, possessive quantifiers, quoting, `\G` / `\Z`).
fn java_only(pattern: &str) -> bool {
    const CONSTRUCTS: [&str; 13] = [
        "(?=", "(?!", "(?<=", "(?<!", "(?>", "\\k<", "*+", "++", "?+", "}+", "\\Q", "\\G", "\\Z",
    ];
    CONSTRUCTS.iter().any(|c| pattern.contains(c))
        || pattern
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'\\' && (b'1'..=b'9').contains(&w[1]))
}

/// Successive matches the way Java's `Matcher.find` walks a string: the next search starts where
/// a match ended, one character further after an empty match. (The Rust iterators also skip an
/// empty match right after a non-empty one, which Java reports: `a*` on `aaa` matches twice.)
fn java_matches<'h, T: 'h>(
    haystack: &'h str,
    mut search: impl FnMut(usize) -> Option<T> + 'h,
    span: fn(&T) -> std::ops::Range<usize>,
) -> impl Iterator<Item = T> + 'h {
    let mut next = Some(0);
    std::iter::from_fn(move || {
        let found = search(next?)?;
        let r = span(&found);
        next = if r.is_empty() {
            haystack[r.end..]
                .chars()
                .next()
                .map(|c| r.end + c.len_utf8())
        } else {
            Some(r.end)
        };
        Some(found)
    })
}

/// [`java_matches`] of a pattern's whole matches.
fn java_find_iter<'h>(re: &'h Regex, haystack: &'h str) -> impl Iterator<Item = regex::Match<'h>> {
    java_matches(haystack, |at| re.find_at(haystack, at), |m| m.range())
}

fn text_of(v: &ScalarValue) -> &str {
    text(v).unwrap_or_default()
}

/// The regular-expression functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Int, Str};
    vec![
        RowFunction::new("regexp", &[&[Str, Str]], DataType::Boolean, |v| {
            let pattern = text_of(&v[1]);
            if pattern.is_empty() {
                return Ok(ScalarValue::Boolean(Some(false)));
            }
            let matched = compile(pattern)?.is_some_and(|re| re.is_match(text_of(&v[0])));
            Ok(ScalarValue::Boolean(Some(matched)))
        }),
        RowFunction::new("regexp_replace", &[&[Str, Str, Str]], DataType::Utf8, |v| {
            let Some(re) = compile(text_of(&v[1]))? else {
                return Ok(string(None));
            };
            let (s, replacement) = (text_of(&v[0]), text_of(&v[2]));
            // Flink quotes the replacement: `$1` is literal text.
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for m in java_find_iter(&re, s) {
                out.push_str(&s[last..m.start()]);
                out.push_str(replacement);
                last = m.end();
            }
            out.push_str(&s[last..]);
            Ok(string(Some(out)))
        }),
        RowFunction::new(
            "regexp_extract",
            &[&[Str, Str], &[Str, Str, Int]],
            DataType::Utf8,
            |v| {
                let Some(re) = compile(text_of(&v[1]))? else {
                    return Ok(string(None));
                };
                let Some(index) = group_index(v.get(2), 0) else {
                    return Ok(string(None));
                };
                let found = re
                    .captures(text_of(&v[0]))
                    .and_then(|c| c.get(index))
                    .map(|m| m.as_str().to_string());
                Ok(string(found))
            },
        ),
        RowFunction::new(
            "regexp_extract_all",
            &[&[Str, Str], &[Str, Str, Int]],
            string_array_type(),
            |v| {
                let Some(re) = compile(text_of(&v[1]))? else {
                    return Ok(string_array(None));
                };
                let Some(index) = group_index(v.get(2), 1) else {
                    return Ok(string_array(None));
                };
                if index >= re.captures_len() {
                    return Ok(string_array(None));
                }
                let s = text_of(&v[0]);
                let found = java_matches(
                    s,
                    |at| re.captures_at(s, at),
                    |c| c.get(0).map_or(0..0, |m| m.range()),
                )
                .map(|c| c.get(index).map(|m| m.as_str().to_string()))
                .collect();
                Ok(string_array(Some(found)))
            },
        ),
        RowFunction::new("regexp_count", &[&[Str, Str]], DataType::Int32, |v| {
            let Some(re) = compile(text_of(&v[1]))? else {
                return Ok(ScalarValue::Int32(None));
            };
            let n = java_find_iter(&re, text_of(&v[0])).count();
            Ok(ScalarValue::Int32(i32::try_from(n).ok()))
        }),
        // REGEXP_INSTR: the 1-based character position of the first match, 0 when none.
        RowFunction::new("regexp_instr", &[&[Str, Str]], DataType::Int32, |v| {
            let s = text_of(&v[0]);
            let Some(re) = compile(text_of(&v[1]))? else {
                return Ok(ScalarValue::Int32(None));
            };
            let position = re.find(s).map_or(0, |m| s[..m.start()].chars().count() + 1);
            Ok(ScalarValue::Int32(i32::try_from(position).ok()))
        }),
        // REGEXP_SUBSTR: the first match, NULL when none.
        RowFunction::new("regexp_substr", &[&[Str, Str]], DataType::Utf8, |v| {
            let Some(re) = compile(text_of(&v[1]))? else {
                return Ok(string(None));
            };
            Ok(string(
                re.find(text_of(&v[0])).map(|m| m.as_str().to_string()),
            ))
        }),
    ]
}

/// The group index argument (`default` when absent); None when negative.
fn group_index(arg: Option<&ScalarValue>, default: usize) -> Option<usize> {
    match arg {
        None => Some(default),
        Some(v) => usize::try_from(int(v)?).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_escapes_match_ascii_only() {
        assert_eq!(java_classes(r"(\w+) \d"), "([0-9A-Za-z_]+) [0-9]");
        assert_eq!(java_classes(r"[\w-]+"), "[0-9A-Za-z_-]+");
        assert_eq!(java_classes(r"[]\d]"), "[]0-9]");
        assert_eq!(java_classes(r"a\.b"), r"a\.b");
        let word = compile(r"^\w+$").ok().flatten();
        assert_eq!(word.as_ref().map(|r| r.is_match("straße")), Some(false));
        assert_eq!(word.as_ref().map(|r| r.is_match("strasse_1")), Some(true));
    }

    #[test]
    fn invalid_patterns_are_null_and_java_only_ones_fail() {
        assert!(matches!(compile("(a"), Ok(None)));
        assert!(compile(r"(a)\1").is_err());
        assert!(compile("a(?=b)").is_err());
    }
}
