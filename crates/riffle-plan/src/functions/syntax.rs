//! Flink call syntax DataFusion's SQL planner does not take, rewritten to plain calls of
//! Riffle's functions before planning:
//!
//! * `TIMESTAMPADD(DAY, n, t)` / `TIMESTAMPDIFF(DAY, t1, t2)`: the unit is a keyword, passed
//!   on as the string `'DAY'`;
//! * `FLOOR(t TO HOUR)` / `CEIL(t TO HOUR)`: become `floor_time(t, 'HOUR')` /
//!   `ceil_time(t, 'HOUR')`.

use std::ops::ControlFlow;

use crate::legacy::call;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, CeilFloorKind, DateTimeField, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Query, Value,
};

/// Rewrites the Flink-only call syntax in `query` (see the module documentation).
pub fn rewrite_calls(query: &mut Query) {
    let _ = visit_expressions_mut(query, |e: &mut Expr| {
        rewrite(e);
        ControlFlow::<()>::Continue(())
    });
}

fn rewrite(e: &mut Expr) {
    match e {
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_uppercase();
            if name != "TIMESTAMPADD" && name != "TIMESTAMPDIFF" {
                return;
            }
            if let FunctionArguments::List(list) = &mut f.args {
                if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) =
                    list.args.first_mut()
                {
                    if let Expr::Identifier(unit) = first {
                        *first = string(&unit.value.to_ascii_uppercase());
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
        _ => {}
    }
}

fn string(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.to_string()))
}
