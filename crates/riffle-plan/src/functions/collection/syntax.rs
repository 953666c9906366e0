//! Flink's collection syntax rewritten into calls of Riffle's collection functions:
//! `MAP[k1, v1, ...]` → `map_constructor(k1, v1, ...)`, and `a[i]` / `m[k]` → `item(a, i)` /
//! `item(m, k)` (Flink's 1-based, NULL-when-out-of-range element access; DataFusion's counts
//! from the end for negative indexes), and a field of an element (`a[1].f`) by name. `ROW(a1, a2) = ROW(b1, b2)` compares field by field, as
//! Calcite expands it (`a1 = b1 AND a2 = b2`, so a NULL field makes it NULL); `<>` likewise with
//! `OR`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, AccessExpr, BinaryOperator, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Query, Subscript, Value,
};

use crate::legacy::call;

/// Rewrites collection constructors and element access in `query`.
pub fn rewrite_collections(query: &mut Query) {
    let _ = visit_expressions_mut(query, |e: &mut Expr| {
        rewrite(e);
        ControlFlow::<()>::Continue(())
    });
}

fn rewrite(e: &mut Expr) {
    if let Some(expanded) = row_comparison(e) {
        *e = expanded;
        return;
    }
    if let Some(args) = riffle_sql::dialect::map_constructor_args(e) {
        *e = call("map_constructor", args.to_vec());
        return;
    }
    let Expr::CompoundFieldAccess { root, access_chain } = e else {
        return;
    };
    if !access_chain
        .iter()
        .any(|a| matches!(a, AccessExpr::Subscript(Subscript::Index { .. })))
    {
        return;
    }
    let mut current = std::mem::replace(root.as_mut(), Expr::value(Value::Null));
    let mut rest: Vec<AccessExpr> = Vec::new();
    for access in std::mem::take(access_chain) {
        match access {
            AccessExpr::Subscript(Subscript::Index { index }) => {
                if !rest.is_empty() {
                    current = Expr::CompoundFieldAccess {
                        root: Box::new(current),
                        access_chain: std::mem::take(&mut rest),
                    };
                }
                current = call("item", vec![current, index]);
            }
            // A field of an element (`a[1].f`): DataFusion names fields after a call only
            // by a string literal; Flink's field names are case-sensitive, as is the literal.
            AccessExpr::Dot(Expr::Identifier(field)) => rest.push(AccessExpr::Dot(Expr::value(
                Value::SingleQuotedString(field.value),
            ))),
            other => rest.push(other),
        }
    }
    *e = if rest.is_empty() {
        current
    } else {
        Expr::CompoundFieldAccess {
            root: Box::new(current),
            access_chain: rest,
        }
    };
}

/// The fields of a `ROW(...)` constructor.
fn row_fields(e: &Expr) -> Option<Vec<Expr>> {
    let Expr::Function(f) = e else {
        return None;
    };
    if !f.name.to_string().eq_ignore_ascii_case("ROW") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// `ROW(..) = ROW(..)` / `ROW(..) <> ROW(..)` expanded field by field.
fn row_comparison(e: &Expr) -> Option<Expr> {
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let (join, field_op) = match op {
        BinaryOperator::Eq => (BinaryOperator::And, BinaryOperator::Eq),
        BinaryOperator::NotEq => (BinaryOperator::Or, BinaryOperator::NotEq),
        _ => return None,
    };
    let (l, r) = (row_fields(left)?, row_fields(right)?);
    if l.len() != r.len() || l.is_empty() {
        return None;
    }
    let combined = l
        .into_iter()
        .zip(r)
        .map(|(a, b)| Expr::BinaryOp {
            left: Box::new(a),
            op: field_op.clone(),
            right: Box::new(b),
        })
        .reduce(|acc, next| Expr::BinaryOp {
            left: Box::new(acc),
            op: join.clone(),
            right: Box::new(next),
        })?;
    Some(Expr::Nested(Box::new(combined)))
}
