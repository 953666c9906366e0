//! `MATCH_RECOGNIZE ( ... PATTERN (...) WITHIN <interval> DEFINE ... )`.
//!
//! sqlparser parses `MATCH_RECOGNIZE` but not Flink's `WITHIN` time constraint, and has no hook
//! inside that clause. This pass finds `WITHIN ...` between a pattern and `DEFINE`, parses it on
//! its own, and blanks its tokens (turns them into whitespace, keeping every other token's index
//! and span) so sqlparser parses the rest unchanged.

use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::ast::MatchWithin;
use crate::diagnostic::Diagnostic;
use crate::dialect::FlinkDialect;
use crate::parser::{error_to_diagnostic, location};
use crate::span::Span;

/// Lifts every `WITHIN` clause out of `tokens`; returns the remaining tokens. Clauses that do not
/// parse are reported in `diagnostics` (and still blanked, so the error is reported once).
pub(crate) fn extract(
    mut tokens: Vec<TokenWithSpan>,
    found: &mut Vec<MatchWithin>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<TokenWithSpan> {
    let mut i = 0;
    while i < tokens.len() {
        if is_word(&tokens[i], "MATCH_RECOGNIZE") {
            if let Some((start, end)) = find_within(&tokens, i + 1) {
                lift(&mut tokens, start, end, found, diagnostics);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    tokens
}

/// Token range `[WITHIN, DEFINE)` of the `MATCH_RECOGNIZE` whose keyword precedes `from`.
fn find_within(tokens: &[TokenWithSpan], from: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut after_pattern = false;
    let mut within = None;
    for (i, tok) in tokens.iter().enumerate().skip(from) {
        match &tok.token {
            Token::Whitespace(_) => continue,
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return within.map(|w| (w, i));
                }
                if depth == 1 && after_pattern {
                    // The pattern's closing parenthesis: WITHIN may follow.
                    let next = tokens[i + 1..]
                        .iter()
                        .position(|t| !matches!(t.token, Token::Whitespace(_)));
                    if let Some(n) = next {
                        if is_word(&tokens[i + 1 + n], "WITHIN") {
                            within = Some(i + 1 + n);
                        }
                    }
                    after_pattern = false;
                }
            }
            Token::Word(_) if depth == 1 && is_word(tok, "PATTERN") => after_pattern = true,
            Token::Word(_) if depth == 1 && is_word(tok, "DEFINE") => {
                return within.map(|w| (w, i))
            }
            Token::SemiColon => return None,
            _ => {}
        }
        if depth == 0 && !matches!(tok.token, Token::LParen) {
            return None;
        }
    }
    None
}

fn is_word(tok: &TokenWithSpan, word: &str) -> bool {
    matches!(&tok.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Parses `tokens[start+1..end]` as the interval and blanks `tokens[start..end]`.
fn lift(
    tokens: &mut [TokenWithSpan],
    start: usize,
    end: usize,
    found: &mut Vec<MatchWithin>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(clause) = tokens.get(start..end) else {
        return;
    };
    let body: Vec<TokenWithSpan> = clause.iter().skip(1).cloned().collect();
    let first = location(clause[0].span.start);
    let last = clause
        .iter()
        .rev()
        .find(|t| !matches!(t.token, Token::Whitespace(_)))
        .map_or(first, |t| location(t.span.end));
    let span = Span::new(first, last);
    let mut parser = Parser::new(&FlinkDialect).with_tokens_with_locations(body.clone());
    let parsed = parser.parse_expr().and_then(|expr| {
        if parser.peek_token_ref().token == Token::EOF {
            Ok(expr)
        } else {
            let tok = parser.peek_token();
            parser.expected("DEFINE after the WITHIN interval of MATCH_RECOGNIZE", tok)
        }
    });
    match parsed {
        Ok(interval) => found.push(MatchWithin { interval, span }),
        Err(err) => diagnostics.push(error_to_diagnostic(&err, &body, span.end)),
    }
    for tok in &mut tokens[start..end] {
        tok.token = Token::Whitespace(Whitespace::Space);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    #[test]
    fn lifts_within_before_define() {
        let sql = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.x AS x PATTERN (A B+) \
                   WITHIN INTERVAL '1' HOUR DEFINE A AS A.x > 0) AS m";
        let tokens = Tokenizer::new(&FlinkDialect, sql)
            .tokenize_with_location()
            .unwrap_or_default();
        let mut found = Vec::new();
        let mut diagnostics = Vec::new();
        let rest = extract(tokens, &mut found, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].interval.to_string(), "INTERVAL '1' HOUR");
        assert!(!rest.iter().any(|t| is_word(t, "WITHIN")));
    }
}
