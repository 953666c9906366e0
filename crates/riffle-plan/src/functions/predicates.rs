//! Flink predicates DataFusion does not take as written, rewritten before planning:
//!
//! * `x [NOT] BETWEEN SYMMETRIC a AND b` → `[NOT] ((x BETWEEN a AND b) OR (x BETWEEN b AND a))`;
//! * `s [NOT] LIKE p ESCAPE 'c'` with an escape character other than `\` →
//!   `[NOT] like_escape(s, p, 'c')`, Riffle's `LIKE` with Flink's escape rules;
//! * `(s0, e0) OVERLAPS (s1, e1)` (an end may be an `INTERVAL`, added to its start) → with each
//!   pair ordered so that start ≤ end, `e0 >= s1 AND e1 >= s0` (Calcite's expansion);
//! * `s [NOT] SIMILAR TO p [ESCAPE 'c']` → `[NOT] similar_to(s, p, 'c')`: the SQL regular
//!   expression must match the whole string (`%` any text, `_` any character, regular
//!   expression operators `| * + ? {} () []`, other characters literal).

use std::ops::ControlFlow;

use datafusion::common::{exec_err, Result as DfResult, ScalarValue};
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, BinaryOperator, Expr, Query, UnaryOperator, Value,
};

use super::row::{text, Arg, RowFunction};
use crate::legacy::call;

/// Rewrites the predicates of `query` (see the module documentation).
pub fn rewrite_predicates(query: &mut Query) {
    let _ = visit_expressions_mut(query, |e: &mut Expr| {
        rewrite(e);
        ControlFlow::<()>::Continue(())
    });
}

fn rewrite(e: &mut Expr) {
    if let Some(expanded) = overlaps(e) {
        *e = expanded;
        return;
    }
    match e {
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let Expr::Prefixed { prefix, value } = low.as_ref() else {
                return;
            };
            if !prefix.value.eq_ignore_ascii_case("SYMMETRIC") {
                return;
            }
            let between = |low: &Expr, high: &Expr| {
                Expr::Nested(Box::new(Expr::Between {
                    expr: expr.clone(),
                    negated: false,
                    low: Box::new(low.clone()),
                    high: Box::new(high.clone()),
                }))
            };
            let either = Expr::BinaryOp {
                left: Box::new(between(value, high)),
                op: BinaryOperator::Or,
                right: Box::new(between(high, value)),
            };
            *e = negate(either, *negated);
        }
        Expr::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: Some(escape),
        } => {
            let escape_text = match &escape.value {
                Value::SingleQuotedString(s) => s.clone(),
                _ => return,
            };
            if escape_text == "\\" {
                return;
            }
            let test = call(
                "like_escape",
                vec![
                    expr.as_ref().clone(),
                    pattern.as_ref().clone(),
                    Expr::value(Value::SingleQuotedString(escape_text)),
                ],
            );
            *e = negate(test, *negated);
        }
        Expr::SimilarTo {
            negated,
            expr,
            pattern,
            escape_char,
        } => {
            let escape = match escape_char.as_ref().map(|v| &v.value) {
                Some(Value::SingleQuotedString(s)) => s.clone(),
                Some(_) => return,
                None => String::new(),
            };
            let test = call(
                "similar_to",
                vec![
                    expr.as_ref().clone(),
                    pattern.as_ref().clone(),
                    Expr::value(Value::SingleQuotedString(escape)),
                ],
            );
            *e = negate(test, *negated);
        }
        _ => {}
    }
}

/// `(s0, e0) OVERLAPS (s1, e1)` expanded.
fn overlaps(e: &Expr) -> Option<Expr> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Overlaps,
        right,
    } = e
    else {
        return None;
    };
    let (Expr::Tuple(l), Expr::Tuple(r)) = (left.as_ref(), right.as_ref()) else {
        return None;
    };
    let ([s0, x0], [s1, x1]) = (l.as_slice(), r.as_slice()) else {
        return None;
    };
    let (s0, e0) = period(s0, x0);
    let (s1, e1) = period(s1, x1);
    Some(Expr::Nested(Box::new(binary(
        binary(e0, BinaryOperator::GtEq, s1),
        BinaryOperator::And,
        binary(e1, BinaryOperator::GtEq, s0),
    ))))
}

/// The ordered (start, end) of a period `(start, end_or_interval)`.
fn period(start: &Expr, end: &Expr) -> (Expr, Expr) {
    let end = if matches!(end, Expr::Interval(_)) {
        Expr::Nested(Box::new(binary(
            start.clone(),
            BinaryOperator::Plus,
            end.clone(),
        )))
    } else {
        end.clone()
    };
    let ordered = |first: &Expr, second: &Expr| Expr::Case {
        case_token: datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(
        ),
        end_token: datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![datafusion::sql::sqlparser::ast::CaseWhen {
            condition: binary(start.clone(), BinaryOperator::LtEq, end.clone()),
            result: first.clone(),
        }],
        else_result: Some(Box::new(second.clone())),
    };
    (ordered(start, &end), ordered(&end, start))
}

fn binary(left: Expr, op: BinaryOperator, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn negate(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr: Box::new(Expr::Nested(Box::new(e))),
        }
    } else {
        e
    }
}

/// `like_escape(s, pattern, escape)` and `similar_to(s, pattern, escape)`.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Str;
    vec![
        RowFunction::new(
            "similar_to",
            &[&[Str, Str, Str]],
            arrow::datatypes::DataType::Boolean,
            |v| {
                let re = similar_regex(
                    text(&v[1]).unwrap_or_default(),
                    text(&v[2]).unwrap_or_default(),
                )?;
                Ok(ScalarValue::Boolean(Some(
                    re.is_match(text(&v[0]).unwrap_or_default()),
                )))
            },
        ),
        RowFunction::new(
            "like_escape",
            &[&[Str, Str, Str]],
            arrow::datatypes::DataType::Boolean,
            |v| {
                let (s, p, esc) = (
                    text(&v[0]).unwrap_or_default(),
                    text(&v[1]).unwrap_or_default(),
                    text(&v[2]).unwrap_or_default(),
                );
                let re = like_regex(p, esc)?;
                Ok(ScalarValue::Boolean(Some(re.is_match(s))))
            },
        ),
    ]
}

/// The regular expression of a `SIMILAR TO` pattern (escape: empty or one character).
fn similar_regex(pattern: &str, escape: &str) -> DfResult<regex::Regex> {
    let esc = escape.chars().next();
    if escape.chars().count() > 1 {
        return exec_err!("Invalid escape character '{escape}'");
    }
    let mut re = String::from("(?s)^(?:");
    let mut it = pattern.chars();
    let mut in_brackets = false;
    while let Some(c) = it.next() {
        if Some(c) == esc {
            match it.next() {
                Some(n) => re.push_str(&regex::escape(&n.to_string())),
                None => return exec_err!("Invalid escape sequence '{pattern}'"),
            }
            continue;
        }
        match c {
            '[' => {
                in_brackets = true;
                re.push(c);
            }
            ']' => {
                in_brackets = false;
                re.push(c);
            }
            _ if in_brackets => re.push(c),
            '%' => re.push_str(".*"),
            '_' => re.push('.'),
            '|' | '*' | '+' | '?' | '{' | '}' | '(' | ')' => re.push(c),
            other => re.push_str(&regex::escape(&other.to_string())),
        }
    }
    re.push_str(")$");
    regex::Regex::new(&re).or_else(|e| exec_err!("Invalid regular expression '{pattern}': {e}"))
}

/// The regular expression of a `LIKE` pattern with escape character `escape` (Flink: the
/// escape must be one character and may only precede `_`, `%` or itself).
fn like_regex(pattern: &str, escape: &str) -> DfResult<regex::Regex> {
    let mut chars = escape.chars();
    let (Some(esc), None) = (chars.next(), chars.next()) else {
        return exec_err!("Invalid escape character '{escape}'");
    };
    let mut re = String::from("(?s)^");
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if c == esc {
            match it.next() {
                Some(n) if n == '_' || n == '%' || n == esc => {
                    re.push_str(&regex::escape(&n.to_string()));
                }
                _ => return exec_err!("Invalid escape sequence '{pattern}', {esc}"),
            }
        } else if c == '%' {
            re.push_str(".*");
        } else if c == '_' {
            re.push('.');
        } else {
            re.push_str(&regex::escape(&c.to_string()));
        }
    }
    re.push('$');
    regex::Regex::new(&re).or_else(|e| exec_err!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_wildcards_match_themselves() {
        let re = like_regex("50!%", "!").ok();
        assert_eq!(
            re.map(|r| (r.is_match("50%"), r.is_match("500"))),
            Some((true, false))
        );
        let re = like_regex("a!_%", "!").ok();
        assert_eq!(
            re.map(|r| (r.is_match("a_b"), r.is_match("abc"))),
            Some((true, false))
        );
        assert!(like_regex("a!x", "!").is_err());
        let re = similar_regex("[a-z]+(-[a-z]+)*", "").ok();
        assert_eq!(
            re.map(|r| (r.is_match("abc-def-ghi"), r.is_match("a--b"))),
            Some((true, false))
        );
    }
}
