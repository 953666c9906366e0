//! `FETCH FIRST|NEXT n ROWS ONLY` (optionally after `OFFSET m ROWS`) means `LIMIT n [OFFSET m]`
//! in Flink; DataFusion only plans the `LIMIT` form, so the clause is rewritten before planning.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, LimitClause, Query, Value, VisitMut, VisitorMut};

/// Rewrites every `FETCH` clause of `query` into a `LIMIT`; `Err` names the forms Riffle does
/// not support (`PERCENT`, `WITH TIES`).
pub fn rewrite_fetch(query: &mut Query) -> Result<(), String> {
    struct Rewriter;

    impl VisitorMut for Rewriter {
        type Break = String;

        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<String> {
            match rewrite(query) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }

    match query.visit(&mut Rewriter) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(e) => Err(e),
    }
}

fn rewrite(query: &mut Query) -> Result<(), String> {
    let Some(fetch) = query.fetch.take() else {
        return Ok(());
    };
    if fetch.percent || fetch.with_ties {
        return Err(format!("FETCH {fetch} is not supported"));
    }
    // `FETCH FIRST ROW ONLY` fetches one row.
    let limit = fetch
        .quantity
        .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
    query.limit_clause = Some(match query.limit_clause.take() {
        None => LimitClause::LimitOffset {
            limit: Some(limit),
            offset: None,
            limit_by: Vec::new(),
        },
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) => LimitClause::LimitOffset {
            limit: Some(limit),
            offset,
            limit_by,
        },
        Some(_) => return Err("FETCH together with LIMIT is not supported".into()),
    });
    Ok(())
}
