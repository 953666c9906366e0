//! Flink call syntax DataFusion's SQL planner does not take, rewritten to plain calls of
//! Riffle's functions before planning:
//!
//! * `TIMESTAMPADD(DAY, n, t)` / `TIMESTAMPDIFF(DAY, t1, t2)`: the unit is a keyword, passed
//!   on as the string `'DAY'`;
//! * `FLOOR(t TO HOUR)` / `CEIL(t TO HOUR)`: become `floor_time(t, 'HOUR')` /
//!   `ceil_time(t, 'HOUR')`;
//! * `TIMESTAMP '2024-01-01 10:00:00.12'`: a literal's precision is its number of fraction
//!   digits (here `TIMESTAMP(2)`), written as a cast to that type;
//! * `1e10`: a number with an exponent is a `DOUBLE` literal, written as a cast;
//! * `LOCALTIMESTAMP` / `LOCALTIME` (without parentheses): calls, not column names;
//! * `RAND(seed)` / `RAND_INTEGER(seed, bound)`: get their call site's number as a last
//!   argument (see [`super::random`]).
//!
//! [`rewrite_typeof`] replaces `TYPEOF(x)` by the type string the catalog derived for `x`.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use riffle_sql::Location;

use crate::legacy::call;

use datafusion::sql::sqlparser::ast::{
    self, visit_expressions_mut, CeilFloorKind, DateTimeField, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Query, TimezoneInfo, Value, VisitMut, VisitorMut,
};

/// Rewrites the Flink-only call syntax in `query` (see the module documentation).
pub fn rewrite_calls(query: &mut Query) {
    let _ = visit_expressions_mut(query, |e: &mut Expr| {
        rewrite(e);
        ControlFlow::<()>::Continue(())
    });
    let _ = query.visit(&mut ValuesLiterals);
}

/// In a `VALUES` of several rows, timestamp literals take the precision of an Arrow time unit
/// (3, 6 or 9) at least as fine as their own: every row of a column must have the same field
/// metadata, which the other precisions carry, and Flink's column type is the widest anyway.
struct ValuesLiterals;

impl VisitorMut for ValuesLiterals {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        widen_values_literals(&mut query.body);
        ControlFlow::Continue(())
    }
}

fn widen_values_literals(body: &mut ast::SetExpr) {
    match body {
        ast::SetExpr::Values(values) if values.rows.len() > 1 => {
            for e in values.rows.iter_mut().flat_map(|r| r.content.iter_mut()) {
                let Expr::TypedString(typed) = e else {
                    continue;
                };
                let ast::DataType::Custom(name, _) = &typed.data_type else {
                    continue;
                };
                let precision = name
                    .to_string()
                    .strip_prefix("TIMESTAMP(")
                    .and_then(|p| p.strip_suffix(')'))
                    .and_then(|p| p.parse::<u32>().ok());
                if let Some(p) = precision {
                    let unit = p.div_ceil(3).clamp(1, 3) * 3;
                    typed.data_type = ast::DataType::Custom(
                        ast::ObjectName::from(vec![ast::Ident::new(format!("TIMESTAMP({unit})"))]),
                        Vec::new(),
                    );
                }
            }
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            widen_values_literals(left);
            widen_values_literals(right);
        }
        _ => {}
    }
}

/// Replaces each `TYPEOF(...)` call the catalog typed (`names`, keyed by where the call's name
/// starts) by its result, a string constant as in Flink (whose planner folds it). A call whose
/// argument type Riffle does not know stays, and is refused as an unknown function.
pub fn rewrite_typeof(query: &mut Query, names: &BTreeMap<Location, String>) {
    if names.is_empty() {
        return;
    }
    let _ = visit_expressions_mut(query, |e: &mut Expr| {
        if let Expr::Function(f) = e {
            let typeof_name = f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .filter(|i| i.value.eq_ignore_ascii_case("TYPEOF"));
            if let Some(ident) = typeof_name {
                let start = ident.span.start;
                let at = Location::new(start.line, start.column);
                if let Some(name) = names.get(&at) {
                    *e = string(name);
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

fn rewrite(e: &mut Expr) {
    match e {
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_uppercase();
            if name == "RAND" || name == "RAND_INTEGER" {
                name_seeded_site(f, &name);
                return;
            }
            if name != "TIMESTAMPADD" && name != "TIMESTAMPDIFF" {
                return;
            }
            if let FunctionArguments::List(list) = &mut f.args {
                if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) =
                    list.args.first_mut()
                {
                    if let Expr::Identifier(unit) = first {
                        let unit = unit.value.to_ascii_uppercase();
                        let clock = ["HOUR", "MINUTE", "SECOND", "MILLISECOND"];
                        if name == "TIMESTAMPADD" && clock.contains(&unit.as_str()) {
                            f.name = ast::ObjectName::from(vec![ast::Ident::new(
                                super::temporal::CLOCK_TIMESTAMPADD,
                            )]);
                        }
                        *first = string(&unit);
                    }
                }
            }
        }
        Expr::Floor { .. } | Expr::Ceil { .. } => {
            let floor = matches!(e, Expr::Floor { .. });
            let (Expr::Floor { expr, field } | Expr::Ceil { expr, field }) = e else {
                return;
            };
            let CeilFloorKind::DateTimeField(unit) = field else {
                return;
            };
            if matches!(unit, DateTimeField::NoDateTime) {
                return;
            }
            let unit = unit.to_string();
            let arg = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
            let name = if floor { "floor_time" } else { "ceil_time" };
            *e = call(name, vec![arg, string(&unit)]);
        }
        // `TIMESTAMP '...'` and `TIME '...'` literals take the precision of their fraction, as
        // in Flink (so `TIME '12:00:00'` is a TIME(0), comparable with TIME columns).
        Expr::TypedString(typed)
            if matches!(
                typed.data_type,
                ast::DataType::Timestamp(None, TimezoneInfo::None)
                    | ast::DataType::Time(None, TimezoneInfo::None)
            ) =>
        {
            let kind = if matches!(typed.data_type, ast::DataType::Time(..)) {
                "TIME"
            } else {
                "TIMESTAMP"
            };
            if let Some(text) = typed.value.clone().into_string() {
                let fraction = text
                    .trim()
                    .rsplit_once('.')
                    .filter(|(_, f)| f.chars().all(|c| c.is_ascii_digit()))
                    .map_or(0, |(_, f)| f.len().min(9));
                typed.data_type = ast::DataType::Custom(
                    ast::ObjectName::from(vec![ast::Ident::new(format!("{kind}({fraction})"))]),
                    Vec::new(),
                );
            }
        }
        // Keywords the SQL parser reads as column names.
        Expr::Identifier(id)
            if id.quote_style.is_none()
                && ["LOCALTIMESTAMP", "LOCALTIME"]
                    .contains(&id.value.to_ascii_uppercase().as_str()) =>
        {
            *e = call(&id.value.to_ascii_lowercase(), Vec::new());
        }
        Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n.contains(['e', 'E'])) => {
            let number = std::mem::replace(e, Expr::value(Value::Null));
            *e = Expr::Cast {
                kind: ast::CastKind::Cast,
                expr: Box::new(number),
                data_type: ast::DataType::Double(ast::ExactNumberInfo::None),
                array: false,
                format: None,
            };
        }
        _ => {}
    }
}

/// A seeded `RAND(seed)` / `RAND_INTEGER(seed, bound)` becomes a call of the seeded variant
/// with a new call-site number last: each call site draws from its own generator.
fn name_seeded_site(f: &mut ast::Function, name: &str) {
    let FunctionArguments::List(list) = &mut f.args else {
        return;
    };
    let (seeded_arity, seeded) = match name {
        "RAND" => (1, super::random::SEEDED_RAND),
        _ => (2, super::random::SEEDED_RAND_INTEGER),
    };
    if list.args.len() != seeded_arity {
        return;
    }
    let site = Expr::value(Value::Number(super::random::next_site().to_string(), false));
    list.args
        .push(FunctionArg::Unnamed(FunctionArgExpr::Expr(site)));
    f.name = ast::ObjectName::from(vec![ast::Ident::new(seeded)]);
}

fn string(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.to_string()))
}
