//! The Flink SQL dialect for sqlparser, and how Flink-only expression syntax is encoded in
//! sqlparser's [`Expr`].
//!
//! [`FlinkDialect`] configures sqlparser's tokenizer and expression parser the way Flink's Calcite
//! parser behaves (backtick identifiers, no backslash escapes, `=>` named arguments,
//! `MATCH_RECOGNIZE`, `FOR SYSTEM_TIME AS OF`, `FILTER (WHERE ..)`), and its `parse_prefix` hook
//! parses what sqlparser cannot. Those constructs are stored in existing sqlparser nodes, chosen so
//! that `Display` prints valid Flink SQL again where possible:
//!
//! | Flink syntax | sqlparser encoding |
//! |---|---|
//! | `CAST(x AS <flink type>)`, `TRY_CAST` | [`Expr::Cast`] whose `data_type` is `DataType::Custom(ObjectName([Ident(<Flink summary form>)]), [])`, e.g. `Custom("TIMESTAMP_LTZ(3)")`, `Custom("ROW<`a` INT>")`; read it back with [`cast_data_type`] |
//! | `TABLE t` (table argument of a window TVF) | `Expr::Prefixed { prefix: TABLE, value: Identifier/CompoundIdentifier(t) }`; read with [`TableArgument::from_expr`] |
//! | `TABLE t PARTITION BY k` / `PARTITION BY (k1, k2)` | as above with `value: BinaryOp { left: t, op: Custom("PARTITION BY"), right: k or Tuple(k1, k2) }` |
//! | `MAP['a', 1, 'b', 2]` | `Expr::Prefixed { prefix: MAP, value: Array { elem, named: false } }`; read with [`map_constructor_args`] |
//! | `x IS [NOT] JSON [VALUE / SCALAR / ARRAY / OBJECT]` | `Expr::BinaryOp { left: x, op: Custom("IS JSON" / "IS NOT JSON"), right: Identifier(VALUE / SCALAR / ARRAY / OBJECT) }` (`VALUE` when no kind is written) |
//! | `x BETWEEN SYMMETRIC a AND b` | [`Expr::Between`] whose `low` is `Prefixed { prefix: SYMMETRIC, value: a }` (`ASYMMETRIC`, the default, is dropped) |
//! | `TRIM(LEADING FROM s)` (no characters) | [`Expr::Trim`] with `trim_what: ' '`, Flink's default |
//! | `INTERVAL '5' MINUTES` (plural units) | [`Expr::Interval`] with the singular unit (`MINUTE`) |
//! | `JSON_VALUE`/`JSON_QUERY`/`JSON_EXISTS(s, p [RETURNING T] [wrapper] [b ON EMPTY] [b ON ERROR])` | [`Expr::Function`] with arguments `s, p`; `RETURNING T` as a `JsonReturningClause` with the Custom type encoding above; each `b ON EMPTY`/`b ON ERROR` as a trailing named argument `ON_EMPTY VALUE b` / `ON_ERROR VALUE b` where `b` is `NULL`, `Prefixed { prefix: DEFAULT, value: expr }` or an identifier naming the behaviour (`ERROR`, `TRUE`, `EMPTY ARRAY`, ...); the wrapper as `WRAPPER VALUE <WITHOUT / WITH CONDITIONAL / WITH UNCONDITIONAL>`. These named arguments do not print back as Flink SQL |
//! | `JSON_OBJECT[AGG]([KEY] k VALUE v, ... [NULL / ABSENT ON NULL])`, `JSON_ARRAY[AGG](v, ... [ON NULL])` | [`Expr::Function`]; `k VALUE v` as `FunctionArg::ExprNamed { operator: Value }`, `ON NULL` as a `JsonNullClause` (both print back as Flink SQL) |
//!
//! Everything else (window TVF calls, `DESCRIPTOR(c)`, named arguments `SIZE => ...`,
//! `LATERAL TABLE(f(x))`, `UNNEST`, `MATCH_RECOGNIZE`, `ARRAY[..]`, `ROW(..)`, `TUMBLE_START(..)`, ...)
//! is plain sqlparser syntax.

use sqlparser::ast::{
    Array, BinaryOperator, CastKind, DateTimeField, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgOperator, FunctionArgumentClause, FunctionArgumentList, FunctionArguments, Ident,
    Interval, JsonNullClause, JsonReturningClause, ObjectName, ObjectNamePart, TrimWhereField,
    Value,
};
use sqlparser::dialect::{Dialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::ast::DataType;
use crate::diagnostic::Diagnostic;
use crate::parser::FlinkParser;
use crate::types::{error_at, parse_type};

/// The Flink SQL dialect: tokenizer rules and expression hooks for sqlparser.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlinkDialect;

/// Name of the operator that joins a table argument to its `PARTITION BY` keys.
pub const PARTITION_BY_OPERATOR: &str = "PARTITION BY";

impl Dialect for FlinkDialect {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }

    fn identifier_quote_style(&self, _identifier: &str) -> Option<char> {
        Some('`')
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_' || ch == '$'
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    /// `ARRAY_AGG(x IGNORE NULLS)`: Flink writes the null treatment inside the call.
    fn supports_window_function_null_treatment_arg(&self) -> bool {
        true
    }

    fn supports_window_clause_named_window_reference(&self) -> bool {
        true
    }

    fn supports_group_by_expr(&self) -> bool {
        true
    }

    fn supports_match_recognize(&self) -> bool {
        true
    }

    fn supports_table_versioning(&self) -> bool {
        true
    }

    fn supports_left_associative_joins_without_parens(&self) -> bool {
        true
    }

    fn supports_parens_around_table_factor(&self) -> bool {
        true
    }

    fn allow_extract_custom(&self) -> bool {
        true
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        _precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        let [is, second, third] = parser.peek_tokens::<3>();
        let is_word = |t: &Token, word: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
        let between_negated = is_word(&is, "NOT");
        let between = if between_negated { &second } else { &is };
        let symmetry = if between_negated { &third } else { &second };
        if is_word(between, "BETWEEN")
            && (is_word(symmetry, "SYMMETRIC") || is_word(symmetry, "ASYMMETRIC"))
        {
            return Some(parse_between_symmetric(parser, expr, between_negated));
        }
        let negated = is_word(&second, "NOT");
        let json = if negated { &third } else { &second };
        if !is_word(&is, "IS") || !is_word(json, "JSON") {
            return None;
        }
        // `x IS [NOT] JSON [VALUE | SCALAR | ARRAY | OBJECT]`
        parser.next_token();
        if negated {
            parser.next_token();
        }
        parser.next_token();
        let kind = ["VALUE", "SCALAR", "ARRAY", "OBJECT"]
            .into_iter()
            .find(|kind| parse_word(parser, kind))
            .unwrap_or("VALUE");
        Some(Ok(Expr::BinaryOp {
            left: Box::new(expr.clone()),
            op: BinaryOperator::Custom(if negated { "IS NOT JSON" } else { "IS JSON" }.to_string()),
            right: Box::new(Expr::Identifier(Ident::new(kind))),
        }))
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let [first, second] = parser.peek_tokens_ref::<2>();
        let word = match &first.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => return None,
        };
        let second = second.token.clone();
        match (word.as_str(), second) {
            ("CAST", Token::LParen) => Some(parse_cast(parser, CastKind::Cast)),
            ("TRY_CAST", Token::LParen) => Some(parse_cast(parser, CastKind::TryCast)),
            ("INTERVAL", _) => Some(parse_interval(parser)),
            ("TRIM", Token::LParen) if trim_without_characters(parser) => {
                Some(parse_trim_without_characters(parser))
            }
            ("TABLE", Token::Word(_)) => Some(parse_table_argument(parser)),
            ("MAP", Token::LBracket) => Some(parse_map_constructor(parser)),
            (
                "JSON_VALUE" | "JSON_QUERY" | "JSON_EXISTS" | "JSON_OBJECT" | "JSON_OBJECTAGG"
                | "JSON_ARRAY" | "JSON_ARRAYAGG",
                Token::LParen,
            ) => Some(parse_json_function(parser)),
            _ => None,
        }
    }
}

/// `x [NOT] BETWEEN {SYMMETRIC | ASYMMETRIC} a AND b`; `SYMMETRIC` is kept as a prefix of the low
/// bound, `ASYMMETRIC` (the default) is dropped.
fn parse_between_symmetric(
    parser: &mut Parser,
    expr: &Expr,
    negated: bool,
) -> Result<Expr, ParserError> {
    if negated {
        parser.next_token();
    }
    parser.next_token();
    let symmetric = parser.next_token();
    let is_symmetric =
        matches!(&symmetric.token, Token::Word(w) if w.value.eq_ignore_ascii_case("SYMMETRIC"));
    let precedence = FlinkDialect.prec_value(Precedence::Between);
    let mut low = parser.parse_subexpr(precedence)?;
    if is_symmetric {
        low = Expr::Prefixed {
            prefix: word_ident(&symmetric),
            value: Box::new(low),
        };
    }
    parser.expect_keyword_is(Keyword::AND)?;
    let high = parser.parse_subexpr(precedence)?;
    Ok(Expr::Between {
        expr: Box::new(expr.clone()),
        negated,
        low: Box::new(low),
        high: Box::new(high),
    })
}

/// `TRIM([BOTH | LEADING | TRAILING] FROM s)` (no characters: Flink trims spaces), which sqlparser
/// lacks; stored with the explicit `' '` so it prints as valid Flink SQL.
fn parse_trim_without_characters(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token();
    parser.expect_token(&Token::LParen)?;
    let trim_where =
        match parser.parse_one_of_keywords(&[Keyword::BOTH, Keyword::LEADING, Keyword::TRAILING]) {
            Some(Keyword::LEADING) => Some(TrimWhereField::Leading),
            Some(Keyword::TRAILING) => Some(TrimWhereField::Trailing),
            _ => Some(TrimWhereField::Both),
        };
    parser.expect_keyword_is(Keyword::FROM)?;
    let expr = parser.parse_expr()?;
    parser.expect_token(&Token::RParen)?;
    Ok(Expr::Trim {
        expr: Box::new(expr),
        trim_where,
        trim_what: Some(Box::new(Expr::Value(
            Value::SingleQuotedString(" ".to_string()).with_empty_span(),
        ))),
        trim_characters: None,
    })
}

/// Encodes a Flink type for a sqlparser node (see the module table): `Custom(<summary form>)`.
pub fn encode_data_type(data_type: &DataType) -> sqlparser::ast::DataType {
    sqlparser::ast::DataType::Custom(
        ObjectName::from(vec![Ident::new(data_type.to_string())]),
        Vec::new(),
    )
}

/// Converts a sqlparser data type produced by the Flink parser (a `CAST` target or a typed literal
/// such as `DATE '2020-01-01'`) back into Riffle's Flink [`DataType`].
///
/// Both encodings print as Flink type syntax, so the printed form is parsed with Flink's type
/// grammar; sqlparser types Flink does not know become `TypeKind::Unknown`, as in Flink, where an
/// unknown name is looked up as a user-defined type.
pub fn cast_data_type(data_type: &sqlparser::ast::DataType) -> Result<DataType, Diagnostic> {
    crate::parse_data_type(&data_type.to_string())
}

/// Parses one expression with the Flink dialect (e.g. a computed column or a watermark strategy).
pub fn parse_expr(text: &str) -> Result<Expr, Diagnostic> {
    let mut fp = FlinkParser::new(text).map_err(|d| *d)?;
    fp.parse_standalone(|p| p.parse_expr())
}

/// A window TVF's table argument, `TABLE t [PARTITION BY k, ...]`, decoded from its [`Expr`].
#[derive(Debug, Clone, PartialEq)]
pub struct TableArgument {
    /// The table (or view) name.
    pub name: ObjectName,
    /// `PARTITION BY` keys, empty when absent.
    pub partition_by: Vec<Expr>,
}

impl TableArgument {
    /// Decodes `expr` if it is a table argument (see the module table); `None` otherwise.
    pub fn from_expr(expr: &Expr) -> Option<TableArgument> {
        let Expr::Prefixed { prefix, value } = expr else {
            return None;
        };
        if prefix.quote_style.is_some() || !prefix.value.eq_ignore_ascii_case("TABLE") {
            return None;
        }
        let (table, partition_by) = match value.as_ref() {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Custom(op),
                right,
            } if op == PARTITION_BY_OPERATOR => {
                let keys = match right.as_ref() {
                    Expr::Tuple(keys) => keys.clone(),
                    key => vec![key.clone()],
                };
                (left.as_ref(), keys)
            }
            table => (table, Vec::new()),
        };
        let name = match table {
            Expr::Identifier(ident) => ObjectName::from(vec![ident.clone()]),
            Expr::CompoundIdentifier(parts) => ObjectName::from(parts.clone()),
            _ => return None,
        };
        Some(TableArgument { name, partition_by })
    }
}

/// The alternating key/value arguments of a `MAP[k1, v1, ...]` constructor, if `expr` is one.
pub fn map_constructor_args(expr: &Expr) -> Option<&[Expr]> {
    match expr {
        Expr::Prefixed { prefix, value } if prefix.value.eq_ignore_ascii_case("MAP") => {
            match value.as_ref() {
                Expr::Array(Array { elem, named: false }) => Some(elem),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `CAST(expr AS <flink type>)` / `TRY_CAST(...)`.
fn parse_cast(parser: &mut Parser, kind: CastKind) -> Result<Expr, ParserError> {
    parser.next_token();
    parser.expect_token(&Token::LParen)?;
    let expr = parser.parse_expr()?;
    parser.expect_keyword_is(Keyword::AS)?;
    let data_type = parse_type(parser)?;
    parser.expect_token(&Token::RParen)?;
    Ok(Expr::Cast {
        kind,
        expr: Box::new(expr),
        data_type: encode_data_type(&data_type),
        array: false,
        format: None,
    })
}

/// `INTERVAL ...` as sqlparser parses it, with Flink's plural units mapped to singular ones.
fn parse_interval(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token();
    let expr = parser.parse_interval()?;
    Ok(match expr {
        Expr::Interval(interval) => {
            let interval = Interval {
                leading_field: interval.leading_field.map(singular_unit),
                last_field: interval.last_field.map(singular_unit),
                ..interval
            };
            Expr::Interval(day_to_second_as_seconds(year_to_month_as_months(interval)))
        }
        other => other,
    })
}

/// `INTERVAL '1-2' YEAR TO MONTH` as the single-unit `INTERVAL '14' MONTH` it denotes (the
/// planner knows single-unit intervals only). Values not of the form `[+-]years-months` stay as
/// they are, and the planner rejects them.
fn year_to_month_as_months(interval: Interval) -> Interval {
    let is_year_to_month = interval.leading_field == Some(DateTimeField::Year)
        && interval.last_field == Some(DateTimeField::Month);
    let Expr::Value(literal) = interval.value.as_ref() else {
        return interval;
    };
    let Value::SingleQuotedString(text) = &literal.value else {
        return interval;
    };
    let Some(months) = is_year_to_month.then(|| year_month_total(text)).flatten() else {
        return interval;
    };
    Interval {
        value: Box::new(Expr::Value(
            Value::SingleQuotedString(months.to_string()).with_span(literal.span),
        )),
        leading_field: Some(DateTimeField::Month),
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    }
}

/// A day-time range interval (`INTERVAL '2 03:04:05.006' DAY TO SECOND`, `'1:30' HOUR TO
/// MINUTE`, ...) as the single-unit `INTERVAL '183845.006' SECOND` it denotes. Values that do not
/// fit the range's `d hh:mm:ss.fff` shape stay as they are, and the planner rejects them.
fn day_to_second_as_seconds(interval: Interval) -> Interval {
    let (Some(leading), Some(last)) = (&interval.leading_field, &interval.last_field) else {
        return interval;
    };
    let (Some(first), Some(end)) = (day_time_rank(leading), day_time_rank(last)) else {
        return interval;
    };
    let Expr::Value(literal) = interval.value.as_ref() else {
        return interval;
    };
    let Value::SingleQuotedString(text) = &literal.value else {
        return interval;
    };
    let Some(millis) = (first < end)
        .then(|| day_time_millis(text, first, end))
        .flatten()
    else {
        return interval;
    };
    let sign = if millis < 0 { "-" } else { "" };
    let (secs, frac) = (millis.unsigned_abs() / 1000, millis.unsigned_abs() % 1000);
    Interval {
        value: Box::new(Expr::Value(
            Value::SingleQuotedString(format!("{sign}{secs}.{frac:03}")).with_span(literal.span),
        )),
        leading_field: Some(DateTimeField::Second),
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    }
}

/// Day-time units from the largest: day 0, hour 1, minute 2, second 3.
fn day_time_rank(field: &DateTimeField) -> Option<usize> {
    match field {
        DateTimeField::Day => Some(0),
        DateTimeField::Hour => Some(1),
        DateTimeField::Minute => Some(2),
        DateTimeField::Second => Some(3),
        _ => None,
    }
}

/// The milliseconds in a `[+-]d hh:mm:ss.fff` value holding the units `first..=last` (ranks of
/// [`day_time_rank`]); the leading unit is unbounded, the others are bounded like a clock's.
fn day_time_millis(text: &str, first: usize, last: usize) -> Option<i64> {
    const UNIT_MILLIS: [i64; 4] = [86_400_000, 3_600_000, 60_000, 1_000];
    const UNIT_LIMIT: [i64; 4] = [i64::MAX, 23, 59, 59];
    let text = text.trim();
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    // Days are separated by a space, the clock units by colons.
    let (days, clock) = if first == 0 {
        let (d, rest) = unsigned.split_once(' ')?;
        (Some(d), rest.trim_start())
    } else {
        (None, unsigned)
    };
    let mut parts: Vec<&str> = days.into_iter().collect();
    parts.extend(clock.split(':'));
    if parts.len() != last - first + 1 {
        return None;
    }
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut total: i64 = 0;
    for (offset, part) in parts.iter().enumerate() {
        let rank = first + offset;
        let (whole, fraction) = match part.split_once('.') {
            Some((w, f)) if rank == 3 => (w, Some(f)),
            Some(_) => return None,
            None => (*part, None),
        };
        if !all_digits(whole) {
            return None;
        }
        let value: i64 = whole.parse().ok()?;
        if rank != first && value > UNIT_LIMIT[rank] {
            return None;
        }
        total = total.checked_add(value.checked_mul(UNIT_MILLIS[rank])?)?;
        if let Some(fraction) = fraction {
            if !all_digits(fraction) || fraction.len() > 9 {
                return None;
            }
            // Milliseconds: the first three digits, the rest truncated as Flink does.
            let millis = format!("{fraction:0<3}");
            total = total.checked_add(millis[..3].parse::<i64>().ok()?)?;
        }
    }
    Some(if negative { -total } else { total })
}

/// The number of months in a `[+-]years-months` literal (months at most 11, as Flink requires).
fn year_month_total(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (years, months) = unsigned.split_once('-')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(years) || !all_digits(months) {
        return None;
    }
    let months: i64 = months.parse().ok()?;
    if months > 11 {
        return None;
    }
    let total = years
        .parse::<i64>()
        .ok()?
        .checked_mul(12)?
        .checked_add(months)?;
    Some(if negative { -total } else { total })
}

/// Maps `YEARS`, `DAYS`, `SECONDS`, ... to the unit Flink means by them.
fn singular_unit(field: DateTimeField) -> DateTimeField {
    match field {
        DateTimeField::Years => DateTimeField::Year,
        DateTimeField::Months => DateTimeField::Month,
        DateTimeField::Weeks => DateTimeField::Week(None),
        DateTimeField::Days => DateTimeField::Day,
        DateTimeField::Hours => DateTimeField::Hour,
        DateTimeField::Minutes => DateTimeField::Minute,
        DateTimeField::Seconds => DateTimeField::Second,
        DateTimeField::Milliseconds => DateTimeField::Millisecond,
        DateTimeField::Microseconds => DateTimeField::Microsecond,
        DateTimeField::Nanoseconds => DateTimeField::Nanosecond,
        other => other,
    }
}

/// `TABLE t [PARTITION BY k | PARTITION BY (k1, ...)]` inside a table function's arguments.
fn parse_table_argument(parser: &mut Parser) -> Result<Expr, ParserError> {
    let table_tok = parser.next_token();
    let name = parser.parse_object_name(false)?;
    let mut idents: Vec<Ident> = Vec::new();
    for part in name.0 {
        match part {
            ObjectNamePart::Identifier(ident) => idents.push(ident),
            ObjectNamePart::Function(_) => {
                return Err(error_at(
                    "Expected a table name after TABLE",
                    table_tok.span.start,
                ))
            }
        }
    }
    let mut value = if idents.len() == 1 {
        Expr::Identifier(idents.remove(0))
    } else {
        Expr::CompoundIdentifier(idents)
    };
    if parser.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
        let keys = if parser.consume_token(&Token::LParen) {
            let keys = parser.parse_comma_separated(Parser::parse_expr)?;
            parser.expect_token(&Token::RParen)?;
            Expr::Tuple(keys)
        } else {
            parser.parse_expr()?
        };
        value = Expr::BinaryOp {
            left: Box::new(value),
            op: BinaryOperator::Custom(PARTITION_BY_OPERATOR.to_string()),
            right: Box::new(keys),
        };
    }
    Ok(Expr::Prefixed {
        prefix: word_ident(&table_tok),
        value: Box::new(value),
    })
}

/// `MAP[k1, v1, ...]`.
fn parse_map_constructor(parser: &mut Parser) -> Result<Expr, ParserError> {
    let map_tok = parser.next_token();
    parser.expect_token(&Token::LBracket)?;
    let elem = if parser.consume_token(&Token::RBracket) {
        Vec::new()
    } else {
        let elem = parser.parse_comma_separated(Parser::parse_expr)?;
        parser.expect_token(&Token::RBracket)?;
        elem
    };
    Ok(Expr::Prefixed {
        prefix: word_ident(&map_tok),
        value: Box::new(Expr::Array(Array { elem, named: false })),
    })
}

/// Flink's JSON functions, whose SQL/JSON clauses sqlparser does not parse (see the module table):
/// `JSON_VALUE`/`JSON_QUERY`/`JSON_EXISTS(json, path [RETURNING type] [wrapper] [b ON EMPTY]
/// [b ON ERROR])`, `JSON_OBJECT[AGG]([KEY] k VALUE v, ... [NULL|ABSENT ON NULL])` and
/// `JSON_ARRAY[AGG](v, ... [NULL|ABSENT ON NULL])`.
fn parse_json_function(parser: &mut Parser) -> Result<Expr, ParserError> {
    let name_tok = parser.next_token();
    let name = match &name_tok.token {
        Token::Word(w) => w.value.to_ascii_uppercase(),
        _ => String::new(),
    };
    parser.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    let mut clauses = Vec::new();
    while !parser.peek_json_clause() {
        args.push(if name.starts_with("JSON_OBJECT") {
            parse_json_key_value(parser)?
        } else {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(parser.parse_expr()?))
        });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
        if parser.peek_json_clause() {
            // Flink writes `JSON_ARRAY(1, 2 NULL ON NULL)`: no comma before the clause.
            let tok = parser.next_token();
            return parser.expected("a value after ','", tok);
        }
    }
    let aggregate = name.starts_with("JSON_ARRAYAGG") || name.starts_with("JSON_OBJECTAGG");
    if aggregate && parser.parse_keywords(&[Keyword::ORDER, Keyword::BY]) {
        let order_by = parser.parse_comma_separated(Parser::parse_order_by_expr)?;
        clauses.push(FunctionArgumentClause::OrderBy(order_by));
    }
    if parser.parse_keyword(Keyword::RETURNING) {
        let data_type = parse_type(parser)?;
        clauses.push(FunctionArgumentClause::JsonReturningClause(
            JsonReturningClause {
                data_type: encode_data_type(&data_type),
            },
        ));
    }
    while !parser.consume_token(&Token::RParen) {
        if let Some(wrapper) = parse_json_wrapper(parser)? {
            args.push(named_arg("WRAPPER", Expr::Identifier(Ident::new(wrapper))));
            continue;
        }
        if parser.parse_keywords(&[Keyword::NULL, Keyword::ON, Keyword::NULL]) {
            clauses.push(FunctionArgumentClause::JsonNullClause(
                JsonNullClause::NullOnNull,
            ));
            continue;
        }
        if parser.parse_keywords(&[Keyword::ABSENT, Keyword::ON, Keyword::NULL]) {
            clauses.push(FunctionArgumentClause::JsonNullClause(
                JsonNullClause::AbsentOnNull,
            ));
            continue;
        }
        let behavior = parse_json_behavior(parser)?;
        parser.expect_keyword_is(Keyword::ON)?;
        let target = parser.next_token();
        let arg_name = match &target.token {
            Token::Word(w) if w.keyword == Keyword::EMPTY => "ON_EMPTY",
            Token::Word(w) if w.keyword == Keyword::ERROR => "ON_ERROR",
            _ => return parser.expected("EMPTY or ERROR", target),
        };
        args.push(named_arg(arg_name, behavior));
    }
    Ok(Expr::Function(Function {
        name: ObjectName::from(vec![word_ident(&name_tok)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses,
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    }))
}

/// `TRIM ( [BOTH | LEADING | TRAILING] FROM`: a trim without characters.
fn trim_without_characters(parser: &Parser) -> bool {
    let [_, _, third, fourth] = parser.peek_tokens::<4>();
    let keyword = |t: &Token, k: &[Keyword]| matches!(t, Token::Word(w) if k.contains(&w.keyword));
    keyword(&third, &[Keyword::FROM])
        || (keyword(
            &third,
            &[Keyword::BOTH, Keyword::LEADING, Keyword::TRAILING],
        ) && keyword(&fourth, &[Keyword::FROM]))
}

/// Whether the parser is at a clause rather than an argument (`JSON_OBJECT(NULL ON NULL)`).
trait PeekJsonClause {
    fn peek_json_clause(&self) -> bool;
}

impl PeekJsonClause for Parser<'_> {
    fn peek_json_clause(&self) -> bool {
        let [a, b, c] = self.peek_tokens::<3>();
        let word = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
        a == Token::RParen
            || ((word(&a, Keyword::NULL) || word(&a, Keyword::ABSENT))
                && word(&b, Keyword::ON)
                && word(&c, Keyword::NULL))
    }
}

/// `[KEY] key VALUE value` of `JSON_OBJECT`, as `key VALUE value` (the form Flink prints).
fn parse_json_key_value(parser: &mut Parser) -> Result<FunctionArg, ParserError> {
    let [first, second] = parser.peek_tokens::<2>();
    let explicit_key = matches!(&first, Token::Word(w) if w.keyword == Keyword::KEY)
        && !matches!(&second, Token::Word(w) if w.keyword == Keyword::VALUE);
    if explicit_key {
        parser.next_token();
    }
    let key = parser.parse_expr()?;
    parser.expect_keyword_is(Keyword::VALUE)?;
    let value = parser.parse_expr()?;
    Ok(FunctionArg::ExprNamed {
        name: key,
        arg: FunctionArgExpr::Expr(value),
        operator: FunctionArgOperator::Value,
    })
}

/// `WITHOUT [ARRAY] WRAPPER` / `WITH [CONDITIONAL | UNCONDITIONAL] [ARRAY] WRAPPER` of `JSON_QUERY`.
fn parse_json_wrapper(parser: &mut Parser) -> Result<Option<&'static str>, ParserError> {
    let kind = if parser.parse_keyword(Keyword::WITHOUT) {
        "WITHOUT"
    } else if parser.parse_keyword(Keyword::WITH) {
        if parse_word(parser, "CONDITIONAL") {
            "WITH CONDITIONAL"
        } else {
            parse_word(parser, "UNCONDITIONAL");
            "WITH UNCONDITIONAL"
        }
    } else {
        return Ok(None);
    };
    let _ = parser.parse_keyword(Keyword::ARRAY);
    parser.expect_keyword_is(Keyword::WRAPPER)?;
    Ok(Some(kind))
}

/// The behaviour before `ON EMPTY` / `ON ERROR`: `NULL`, `DEFAULT expr`, or keywords such as
/// `ERROR`, `TRUE`, `UNKNOWN`, `EMPTY ARRAY`, kept as one identifier.
fn parse_json_behavior(parser: &mut Parser) -> Result<Expr, ParserError> {
    if parser.parse_keyword(Keyword::NULL) {
        return Ok(Expr::Value(Value::Null.with_empty_span()));
    }
    if parser.peek_keyword(Keyword::DEFAULT) {
        let default_tok = parser.next_token();
        let value = parser.parse_expr()?;
        return Ok(Expr::Prefixed {
            prefix: word_ident(&default_tok),
            value: Box::new(value),
        });
    }
    let mut words: Vec<String> = Vec::new();
    while let Token::Word(w) = parser.peek_token_ref().token.clone() {
        if w.keyword == Keyword::ON {
            break;
        }
        parser.next_token();
        words.push(w.value.to_ascii_uppercase());
    }
    if words.is_empty() {
        let tok = parser.next_token();
        return parser.expected(
            "a JSON clause (RETURNING, ... ON EMPTY, ... ON ERROR, ... ON NULL) or ')'",
            tok,
        );
    }
    Ok(Expr::Identifier(Ident::new(words.join(" "))))
}

/// Consumes the unquoted word `word` (one sqlparser has no keyword for) if it is next.
fn parse_word(parser: &mut Parser, word: &str) -> bool {
    let found = matches!(&parser.peek_token_ref().token,
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    if found {
        parser.next_token();
    }
    found
}

/// A trailing clause encoded as a named argument `NAME VALUE expr`.
fn named_arg(name: &str, value: Expr) -> FunctionArg {
    FunctionArg::Named {
        name: Ident::new(name),
        arg: FunctionArgExpr::Expr(value),
        operator: FunctionArgOperator::Value,
    }
}

/// The identifier spelled by a word token, keeping its span.
fn word_ident(tok: &TokenWithSpan) -> Ident {
    match &tok.token {
        Token::Word(w) => Ident {
            value: w.value.clone(),
            quote_style: w.quote_style,
            span: tok.span,
        },
        other => Ident::with_span(tok.span, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::TypeKind;

    fn diag(text: &str) -> Diagnostic {
        match parse_expr(text) {
            Ok(e) => panic!("expected an error for {text:?}, got {e}"),
            Err(d) => d,
        }
    }

    fn expr(text: &str) -> Expr {
        match parse_expr(text) {
            Ok(e) => e,
            Err(d) => panic!("{text}: {d}"),
        }
    }

    #[test]
    fn cast_targets_use_flink_types() {
        let e = expr("CAST(x AS TIMESTAMP(3) WITH LOCAL TIME ZONE)");
        assert_eq!(e.to_string(), "CAST(x AS TIMESTAMP_LTZ(3))");
        let Expr::Cast { data_type, .. } = e else {
            panic!("not a cast")
        };
        assert_eq!(
            cast_data_type(&data_type).map(|t| t.kind),
            Ok(TypeKind::TimestampLtz(3))
        );
        let e = expr("TRY_CAST(s AS ROW<a INT, b ARRAY<STRING>>)");
        assert_eq!(
            e.to_string(),
            "TRY_CAST(s AS ROW<`a` INT, `b` ARRAY<STRING>>)"
        );
    }

    #[test]
    fn year_to_month_intervals_become_months() {
        let cases = [
            ("INTERVAL '1-2' YEAR TO MONTH", "INTERVAL '14' MONTH"),
            ("INTERVAL '-1-6' YEARS TO MONTHS", "INTERVAL '-18' MONTH"),
            ("INTERVAL '+0-11' YEAR TO MONTH", "INTERVAL '11' MONTH"),
            // Not a years-months value: left for the planner to reject.
            (
                "INTERVAL '1-12' YEAR TO MONTH",
                "INTERVAL '1-12' YEAR TO MONTH",
            ),
            ("INTERVAL '3' YEAR TO MONTH", "INTERVAL '3' YEAR TO MONTH"),
        ];
        for (text, printed) in cases {
            assert_eq!(expr(text).to_string(), printed, "{text}");
        }
    }

    #[test]
    fn day_time_ranges_become_seconds() {
        let cases = [
            (
                "INTERVAL '2 03:04:05.006' DAY TO SECOND",
                "INTERVAL '183845.006' SECOND",
            ),
            (
                "INTERVAL '-1 02' DAY TO HOUR",
                "INTERVAL '-93600.000' SECOND",
            ),
            (
                "INTERVAL '1:30' HOUR TO MINUTE",
                "INTERVAL '5400.000' SECOND",
            ),
            (
                "INTERVAL '10:05.5' MINUTE TO SECOND",
                "INTERVAL '605.500' SECOND",
            ),
            (
                "INTERVAL '25:00' HOUR TO MINUTE",
                "INTERVAL '90000.000' SECOND",
            ),
            // Out of the clock's range or the wrong shape: left for the planner to reject.
            ("INTERVAL '1 25' DAY TO HOUR", "INTERVAL '1 25' DAY TO HOUR"),
            (
                "INTERVAL '1:30' DAY TO SECOND",
                "INTERVAL '1:30' DAY TO SECOND",
            ),
        ];
        for (text, printed) in cases {
            assert_eq!(expr(text).to_string(), printed, "{text}");
        }
    }

    #[test]
    fn typed_literals_convert_back() {
        let Expr::TypedString(ts) = expr("TIMESTAMP '2020-01-01 00:00:00'") else {
            panic!("not a typed string")
        };
        assert_eq!(
            cast_data_type(&ts.data_type).map(|t| t.kind),
            Ok(TypeKind::Timestamp(6))
        );
    }

    #[test]
    fn plural_interval_units_become_singular() {
        assert_eq!(
            expr("INTERVAL '5' MINUTES").to_string(),
            "INTERVAL '5' MINUTE"
        );
        assert_eq!(
            expr("INTERVAL '1 2' DAYS TO HOURS").to_string(),
            "INTERVAL '93600.000' SECOND"
        );
    }

    #[test]
    fn table_arguments_round_trip() {
        let e = expr(
            "SESSION(TABLE bid PARTITION BY (item, 'x'), DESCRIPTOR(ts), INTERVAL '5' MINUTE)",
        );
        assert_eq!(
            e.to_string(),
            "SESSION(TABLE bid PARTITION BY (item, 'x'), DESCRIPTOR(ts), INTERVAL '5' MINUTE)"
        );
        let Expr::Function(f) = e else {
            panic!("not a function")
        };
        let FunctionArguments::List(list) = f.args else {
            panic!("no args")
        };
        let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) = list.args.first() else {
            panic!("no first arg")
        };
        let arg = TableArgument::from_expr(first);
        assert_eq!(
            arg.map(|a| (a.name.to_string(), a.partition_by.len())),
            Some(("bid".into(), 2))
        );
        let named = expr(
            "TUMBLE(DATA => TABLE db.t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '1' HOUR)",
        );
        assert_eq!(
            named.to_string(),
            "TUMBLE(DATA => TABLE db.t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '1' HOUR)"
        );
    }

    #[test]
    fn is_json_predicate() {
        assert_eq!(
            expr("body IS JSON OBJECT AND b IS NOT JSON").to_string(),
            "body IS JSON OBJECT AND b IS NOT JSON VALUE"
        );
        assert_eq!(expr("a IS NOT NULL").to_string(), "a IS NOT NULL");
    }

    #[test]
    fn map_constructor() {
        let e = expr("MAP['a', 1, 'b', 2]");
        assert_eq!(e.to_string(), "MAP ['a', 1, 'b', 2]");
        assert_eq!(map_constructor_args(&e).map(<[Expr]>::len), Some(4));
    }

    #[test]
    fn json_value_clauses() {
        let e = expr("JSON_VALUE(s, '$.a' RETURNING INT DEFAULT 0 ON EMPTY ERROR ON ERROR)");
        let Expr::Function(f) = e else {
            panic!("not a function")
        };
        let FunctionArguments::List(list) = f.args else {
            panic!("no args")
        };
        assert_eq!(list.args.len(), 4);
        assert_eq!(list.clauses.len(), 1);
    }

    #[test]
    fn errors_are_located() {
        let d = diag("CAST(x AS ARRAY<INT)");
        assert_eq!((d.span.start.line, d.span.start.column), (1, 20));
        let d = diag("a +");
        assert!(d.message.contains("expected"), "{}", d.message);
    }
}
