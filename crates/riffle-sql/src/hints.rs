//! SQL hints: `/*+ NAME(args), ... */`.
//!
//! To sqlparser's tokenizer a hint is a comment, so hints are found in the token stream and parsed
//! here, with spans mapped back into the script. The statement parser attaches each hint to the
//! statement whose span contains it.

use sqlparser::tokenizer::{Location as SqlLocation, Token, TokenWithSpan, Tokenizer, Whitespace};

use crate::ast::Hint;
use crate::diagnostic::Diagnostic;
use crate::dialect::FlinkDialect;
use crate::parser::location;
use crate::span::{Location, Span};

/// Diagnostic code of a hint comment that does not parse.
pub const INVALID_HINT: &str = "invalid-hint";

/// One `/*+ ... */` comment and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HintComment {
    /// Span of the whole comment.
    pub span: Span,
    /// The hints, in order.
    pub hints: Vec<Hint>,
    /// Why the comment is not a valid hint list, if it is not.
    pub error: Option<Diagnostic>,
}

/// Finds and parses every hint comment among `tokens`.
pub(crate) fn find_hint_comments(tokens: &[TokenWithSpan]) -> Vec<HintComment> {
    tokens
        .iter()
        .filter_map(|tok| match &tok.token {
            Token::Whitespace(Whitespace::MultiLineComment(text)) => text
                .strip_prefix('+')
                .map(|body| parse_hint_comment(body, tok)),
            _ => None,
        })
        .collect()
}

fn parse_hint_comment(body: &str, tok: &TokenWithSpan) -> HintComment {
    let span = Span::new(location(tok.span.start), location(tok.span.end));
    // The body starts after `/*+`, three characters into the comment.
    let origin = Location::new(tok.span.start.line, tok.span.start.column + 3);
    let tokens = match Tokenizer::new(&FlinkDialect, body).tokenize_with_location() {
        Ok(tokens) => tokens
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .map(|t| {
                (
                    t.token,
                    shift(origin, t.span.start),
                    shift(origin, t.span.end),
                )
            })
            .collect::<Vec<_>>(),
        Err(err) => {
            return HintComment {
                span,
                hints: Vec::new(),
                error: Some(invalid(
                    format!("hint does not tokenize: {}", err.message),
                    span,
                )),
            }
        }
    };
    let mut cursor = Cursor {
        tokens,
        pos: 0,
        end: span.end,
    };
    match cursor.hints() {
        Ok(hints) => HintComment {
            span,
            hints,
            error: None,
        },
        Err(error) => HintComment {
            span,
            hints: Vec::new(),
            error: Some(error),
        },
    }
}

/// Maps a location inside a hint body to the script.
fn shift(origin: Location, inner: SqlLocation) -> Location {
    if inner.line <= 1 {
        Location::new(origin.line, origin.column + inner.column.saturating_sub(1))
    } else {
        Location::new(origin.line + inner.line - 1, inner.column)
    }
}

fn invalid(message: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::warning(INVALID_HINT, message, span)
}

/// A cursor over a hint body's (non-whitespace) tokens.
struct Cursor {
    tokens: Vec<(Token, Location, Location)>,
    pos: usize,
    /// End of the comment, used to locate errors at the end of the body.
    end: Location,
}

impl Cursor {
    fn peek(&self) -> Option<&(Token, Location, Location)> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<(Token, Location, Location)> {
        let tok = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        tok
    }

    fn eat(&mut self, expected: &Token) -> bool {
        if self.peek().is_some_and(|(t, _, _)| t == expected) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn error(&self, expected: &str) -> Diagnostic {
        match self.peek() {
            Some((tok, start, end)) => invalid(
                format!("malformed hint: expected {expected}, found `{tok}`"),
                Span::new(*start, *end),
            ),
            None => invalid(
                format!("malformed hint: expected {expected}, found end of hint"),
                Span::new(self.end, self.end),
            ),
        }
    }

    /// `hint [[,] hint]*`
    fn hints(&mut self) -> Result<Vec<Hint>, Diagnostic> {
        let mut hints = Vec::new();
        while self.peek().is_some() {
            hints.push(self.hint()?);
            self.eat(&Token::Comma);
        }
        if hints.is_empty() {
            return Err(self.error("a hint name"));
        }
        Ok(hints)
    }

    /// `NAME [( args )]`
    fn hint(&mut self) -> Result<Hint, Diagnostic> {
        let (name, start, mut end) = match self.peek() {
            Some((Token::Word(w), start, end)) => (w.value.to_ascii_uppercase(), *start, *end),
            _ => return Err(self.error("a hint name")),
        };
        self.pos += 1;
        let mut hint = Hint {
            name,
            options: Vec::new(),
            args: Vec::new(),
            span: Span::default(),
        };
        if self.eat(&Token::LParen) {
            if !self.eat(&Token::RParen) {
                loop {
                    let first = self.value()?;
                    if self.eat(&Token::Eq) {
                        let value = self.value()?;
                        hint.options.push((first, value));
                    } else {
                        hint.args.push(first);
                    }
                    if !self.eat(&Token::Comma) {
                        break;
                    }
                }
                if self.peek().is_some_and(|(t, _, _)| *t != Token::RParen) || self.peek().is_none()
                {
                    return Err(self.error("',' or ')'"));
                }
                self.pos += 1;
            }
            if let Some((_, _, close_end)) = self.tokens.get(self.pos.saturating_sub(1)) {
                end = *close_end;
            }
        }
        if !hint.options.is_empty() && !hint.args.is_empty() {
            return Err(invalid(
                format!(
                    "hint {} mixes key-value options and plain arguments",
                    hint.name
                ),
                Span::new(start, end),
            ));
        }
        hint.span = Span::new(start, end);
        Ok(hint)
    }

    /// A string, number or (dotted) identifier, unquoted.
    fn value(&mut self) -> Result<String, Diagnostic> {
        let mut text = match self.peek() {
            Some((Token::SingleQuotedString(s), _, _)) => {
                let s = s.clone();
                self.pos += 1;
                return Ok(s);
            }
            Some((Token::Number(n, _), _, _)) => {
                let n = n.clone();
                self.pos += 1;
                return Ok(n);
            }
            Some((Token::Word(w), _, _)) => w.value.clone(),
            _ => return Err(self.error("a hint argument")),
        };
        self.next();
        while self.eat(&Token::Period) {
            match self.next() {
                Some((Token::Word(w), _, _)) => {
                    text.push('.');
                    text.push_str(&w.value);
                }
                _ => {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.error("an identifier after '.'"));
                }
            }
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comments(sql: &str) -> Vec<HintComment> {
        let tokens = Tokenizer::new(&FlinkDialect, sql)
            .tokenize_with_location()
            .unwrap_or_default();
        find_hint_comments(&tokens)
    }

    #[test]
    fn key_value_and_positional_hints() {
        let found =
            comments("SELECT /*+ STATE_TTL('o' = '1d', 'c' = '2d'), BROADCAST(db.t, u) */ 1");
        assert_eq!(found.len(), 1);
        let hints = &found[0].hints;
        assert_eq!(hints.len(), 2);
        assert_eq!(hints[0].name, "STATE_TTL");
        assert_eq!(
            hints[0].options,
            vec![("o".into(), "1d".into()), ("c".into(), "2d".into())]
        );
        assert_eq!(hints[1].args, vec!["db.t".to_string(), "u".to_string()]);
        // `STATE_TTL` starts at column 12: "SELECT /*+ " is 11 characters.
        assert_eq!(hints[0].span.start, Location::new(1, 12));
        assert_eq!(hints[0].span.end, Location::new(1, 45));
    }

    #[test]
    fn multi_line_hint_positions() {
        let found = comments("SELECT /*+\n  OPTIONS('k'='v') */ *");
        assert_eq!(found[0].hints[0].span.start, Location::new(2, 3));
    }

    #[test]
    fn malformed_hints_are_reported() {
        let found = comments("SELECT /*+ OPTIONS('k' = ) */ 1");
        assert!(found[0].error.is_some());
        let found = comments("SELECT /* plain comment */ 1");
        assert!(found.is_empty());
    }
}
