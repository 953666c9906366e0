//! The original job text seen as tokens with byte ranges, for placing text patches exactly
//! (commas between options, the closing parenthesis of a call, the lines an option occupies).
//!
//! Positions of AST nodes come from their spans ([`riffle_sql::Span::byte_range`]); the tokens only
//! locate the punctuation the AST does not record.

use std::ops::Range;

use riffle_sql::dialect::FlinkDialect;
use riffle_sql::Span;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// One token of the source with its byte range.
#[derive(Debug, Clone)]
pub(crate) struct Tok {
    pub token: Token,
    pub range: Range<usize>,
}

impl Tok {
    /// Whitespace and comments.
    fn is_trivia(&self) -> bool {
        matches!(self.token, Token::Whitespace(_))
    }
}

/// A job's text with its tokens.
#[derive(Debug)]
pub(crate) struct SourceText<'a> {
    pub text: &'a str,
    tokens: Vec<Tok>,
}

impl<'a> SourceText<'a> {
    /// Tokenizes `text`; `None` when the text does not tokenize (the parser reported it then).
    pub fn new(text: &'a str) -> Option<SourceText<'a>> {
        let raw = Tokenizer::new(&FlinkDialect, text)
            .tokenize_with_location()
            .ok()?;
        let lines = LineIndex::new(text);
        let tokens = raw
            .into_iter()
            .filter(|t| t.token != Token::EOF)
            .map(|t| {
                let start = lines.offset(text, t.span.start.line, t.span.start.column);
                let end = lines.offset(text, t.span.end.line, t.span.end.column);
                Tok {
                    token: t.token,
                    range: start..end.max(start),
                }
            })
            .collect();
        Some(SourceText { text, tokens })
    }

    /// The byte range of an AST span.
    pub fn range(&self, span: Span) -> Range<usize> {
        span.byte_range(self.text)
    }

    /// The text of a byte range (empty when the range is not on character boundaries).
    pub fn slice(&self, range: Range<usize>) -> &'a str {
        self.text.get(range).unwrap_or_default()
    }

    /// The text of an AST span.
    pub fn span_text(&self, span: Span) -> &'a str {
        self.slice(self.range(span))
    }

    /// Index of the first token starting at or after `byte`.
    fn token_from(&self, byte: usize) -> usize {
        self.tokens.partition_point(|t| t.range.start < byte)
    }

    /// The first significant (non-whitespace, non-comment) token at or after `byte`.
    pub fn next_significant(&self, byte: usize) -> Option<&Tok> {
        self.tokens[self.token_from(byte)..]
            .iter()
            .find(|t| !t.is_trivia())
    }

    /// The last significant token ending at or before `byte`.
    pub fn prev_significant(&self, byte: usize) -> Option<&Tok> {
        let end = self.tokens.partition_point(|t| t.range.end <= byte);
        self.tokens[..end].iter().rev().find(|t| !t.is_trivia())
    }

    /// The first word token in `range` spelled `word` (ignoring case).
    pub fn find_word(&self, range: Range<usize>, word: &str) -> Option<&Tok> {
        self.tokens[self.token_from(range.start)..]
            .iter()
            .take_while(|t| t.range.end <= range.end)
            .find(|t| matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case(word)))
    }

    /// The first token in `range` equal to `token`.
    pub fn find_token(&self, range: Range<usize>, token: &Token) -> Option<Range<usize>> {
        self.tokens[self.token_from(range.start)..]
            .iter()
            .take_while(|t| t.range.end <= range.end)
            .find(|t| &t.token == token)
            .map(|t| t.range.clone())
    }

    /// The range of the `/* ... */` comment holding `byte`.
    pub fn comment_at(&self, byte: usize) -> Option<Range<usize>> {
        let i = self.tokens.partition_point(|t| t.range.end <= byte);
        self.tokens
            .get(i)
            .filter(|t| t.range.start <= byte)
            .filter(|t| matches!(t.token, Token::Whitespace(Whitespace::MultiLineComment(_))))
            .map(|t| t.range.clone())
    }

    /// The range from the start of `span` to the end of the `)` closing the first `(` after
    /// the span's start: the whole text of a call such as `TUMBLE_START(ts, INTERVAL '1' HOUR)`
    /// (sqlparser's call spans may stop before the closing parenthesis).
    pub fn call_range(&self, span: Span) -> Option<Range<usize>> {
        let start = self.range(span).start;
        let first = self.token_from(start);
        let open = first
            + self.tokens[first..]
                .iter()
                .position(|t| t.token == Token::LParen)?;
        let mut depth = 0usize;
        for tok in &self.tokens[open..] {
            match tok.token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(start..tok.range.end);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The byte ranges of the top-level arguments of the call whose text is `call` (see
    /// [`SourceText::call_range`]), each trimmed of whitespace and comments.
    pub fn call_args(&self, call: Range<usize>) -> Option<Vec<Range<usize>>> {
        let first = self.token_from(call.start);
        let open = first
            + self.tokens[first..]
                .iter()
                .position(|t| t.token == Token::LParen)?;
        let mut args = Vec::new();
        let mut depth = 0usize;
        let mut current: Option<Range<usize>> = None;
        for tok in &self.tokens[open..] {
            if tok.range.end > call.end {
                break;
            }
            match tok.token {
                Token::LParen => {
                    depth += 1;
                    if depth == 1 {
                        continue;
                    }
                }
                Token::RParen => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        args.extend(current.take());
                        return Some(args);
                    }
                }
                Token::Comma if depth == 1 => {
                    args.push(current.take()?);
                    continue;
                }
                _ => {}
            }
            if !tok.is_trivia() {
                current = Some(match current {
                    Some(r) => r.start..tok.range.end,
                    None => tok.range.clone(),
                });
            }
        }
        None
    }

    /// Byte offset of the start of the line holding `byte`.
    pub fn line_start(&self, byte: usize) -> usize {
        self.text
            .get(..byte)
            .and_then(|head| head.rfind('\n'))
            .map_or(0, |i| i + 1)
    }

    /// Byte offset just past the end of the line holding `byte` (after its `\n`, or the end).
    pub fn line_end(&self, byte: usize) -> usize {
        self.text
            .get(byte..)
            .and_then(|tail| tail.find('\n'))
            .map_or(self.text.len(), |i| byte + i + 1)
    }

    /// Whether a range holds only spaces and tabs.
    pub fn is_blank(&self, range: Range<usize>) -> bool {
        self.slice(range).chars().all(|c| c == ' ' || c == '\t')
    }

    /// The indentation (spaces and tabs) at the start of the line holding `byte`.
    pub fn indent_of(&self, byte: usize) -> &'a str {
        let start = self.line_start(byte);
        let line = self.slice(start..self.line_end(byte));
        let width = line.len() - line.trim_start_matches([' ', '\t']).len();
        self.slice(start..start + width)
    }

    /// Extends `range` to whole lines when it is alone on its lines (only blanks around it, and
    /// no comment after it): the text to delete to remove it without leaving an empty line.
    pub fn whole_lines(&self, range: Range<usize>) -> Range<usize> {
        let line_start = self.line_start(range.start);
        let line_end = self.line_end(range.end);
        let after_end = if self.text.as_bytes().get(line_end.wrapping_sub(1)) == Some(&b'\n') {
            line_end - 1
        } else {
            line_end
        };
        if self.is_blank(line_start..range.start) && self.is_blank(range.end..after_end) {
            line_start..line_end
        } else {
            range
        }
    }
}

/// Start offsets of lines, to turn sqlparser's (line, character column) into byte offsets.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    /// Same rules as [`riffle_sql::span::byte_offset`] (1-based, clamped), in O(line length).
    fn offset(&self, text: &str, line: u64, column: u64) -> usize {
        let Some(&start) = usize::try_from(line)
            .ok()
            .and_then(|l| l.checked_sub(1))
            .and_then(|l| self.starts.get(l))
        else {
            return if line == 0 { 0 } else { text.len() };
        };
        let rest = text.get(start..).unwrap_or_default();
        for (col, (i, ch)) in (1u64..).zip(rest.char_indices()) {
            if col == column || ch == '\n' {
                return start + i;
            }
        }
        text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use riffle_sql::{Location, Span};

    #[test]
    fn line_index_agrees_with_riffle_sql() {
        let text = "ab\nçd 'x'\n\nef";
        let lines = LineIndex::new(text);
        for line in 0..6 {
            for column in 0..8 {
                assert_eq!(
                    lines.offset(text, line, column),
                    riffle_sql::span::byte_offset(text, Location::new(line, column)),
                    "({line}, {column})"
                );
            }
        }
    }

    #[test]
    fn call_ranges_reach_the_closing_parenthesis() {
        let text = "SELECT TUMBLE_START(ts, INTERVAL '1' HOUR) AS w, f(g(x)) FROM t";
        let src = SourceText::new(text).unwrap_or_else(|| panic!("tokenizes"));
        let span = |col| Span::new(Location::new(1, col), Location::new(1, col + 3));
        let r = src.call_range(span(8)).unwrap_or_else(|| panic!("a call"));
        assert_eq!(src.slice(r), "TUMBLE_START(ts, INTERVAL '1' HOUR)");
        let r = src.call_range(span(50)).unwrap_or_else(|| panic!("a call"));
        assert_eq!(src.slice(r.clone()), "f(g(x))");
        let args = src.call_args(r).unwrap_or_default();
        assert_eq!(args.len(), 1);
        let r = src.call_range(span(8)).unwrap_or_else(|| panic!("a call"));
        let args: Vec<&str> = src
            .call_args(r)
            .unwrap_or_default()
            .into_iter()
            .map(|a| src.slice(a))
            .collect();
        assert_eq!(args, ["ts", "INTERVAL '1' HOUR"]);
    }

    #[test]
    fn whole_lines_only_when_alone() {
        let text = "(\n    'a' = 'b',\n    'c' = 'd' -- note\n)";
        let src = SourceText::new(text).unwrap_or_else(|| panic!("tokenizes"));
        let a = text.find("'a'").unwrap_or_default();
        let r = src.whole_lines(a..a + 10);
        assert_eq!(src.slice(r), "    'a' = 'b',\n");
        let c = text.find("'c'").unwrap_or_default();
        assert_eq!(src.whole_lines(c..c + 10), c..c + 10);
        assert_eq!(src.indent_of(c), "    ");
        let comma = src.next_significant(a + 9).map(|t| t.token.clone());
        assert_eq!(comma, Some(Token::Comma));
    }
}
