//! Flink's legacy group windows, rewritten into window table-valued functions.
//!
//! `SELECT TUMBLE_START(ts, INTERVAL '10' MINUTE), item, SUM(price) FROM bids
//! GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), item` means the same as the window TVF form
//! `... FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
//! GROUP BY window_start, window_end, item` with `TUMBLE_START(..)` read as `window_start`
//! (`_END` as `window_end`, `_ROWTIME` as `window_time`). `HOP(ts, slide, size)` and
//! `SESSION(ts, gap)` map the same way; a legacy SESSION groups by its other keys, which become
//! the TVF's `PARTITION BY`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, GroupByExpr, Ident, ObjectName, Query, Select, SetExpr, TableAlias,
    TableFactor, VisitMut, VisitorMut,
};

/// The group window functions and their TVF names.
const WINDOWS: [&str; 3] = ["TUMBLE", "HOP", "SESSION"];

/// Rewrites every legacy group window of `query`; true when there was one, `Err` names an
/// unsupported form.
pub fn rewrite(query: &mut Query) -> Result<bool, String> {
    struct Rewriter;

    impl VisitorMut for Rewriter {
        type Break = String;

        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<String> {
            match rewrite_set_expr(&mut query.body) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }

    let original = query.clone();
    match query.visit(&mut Rewriter) {
        ControlFlow::Continue(()) => Ok(*query != original),
        ControlFlow::Break(e) => Err(e),
    }
}

fn rewrite_set_expr(body: &mut SetExpr) -> Result<(), String> {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_set_expr(left)?;
            rewrite_set_expr(right)
        }
        _ => Ok(()),
    }
}

fn function_name(f: &Function) -> String {
    f.name.to_string().to_ascii_uppercase()
}

fn args(f: &Function) -> Vec<Expr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A call `name(args...)` in sqlparser's AST (the rewrites of Flink-only syntax build these).
pub(crate) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// The input column `key` names: a column, or one qualified by the relation's alias or name
/// (`qualifiers`, compared as Flink compares identifiers: case-sensitively).
fn input_column(key: &Expr, qualifiers: &[&Ident]) -> Option<Ident> {
    match key {
        Expr::Identifier(id) => Some(id.clone()),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [qualifier, column] if qualifiers.iter().any(|q| q.value == qualifier.value) => {
                Some(column.clone())
            }
            _ => None,
        },
        _ => None,
    }
}

fn rewrite_select(select: &mut Select) -> Result<(), String> {
    let GroupByExpr::Expressions(keys, _) = &mut select.group_by else {
        return Ok(());
    };
    let Some(position) = keys.iter().position(
        |k| matches!(k, Expr::Function(f) if WINDOWS.contains(&function_name(f).as_str())),
    ) else {
        return Ok(());
    };
    let Expr::Function(window) = keys.remove(position) else {
        return Ok(());
    };
    let kind = function_name(&window);
    let mut window_args = args(&window).into_iter();
    let time = match window_args.next() {
        Some(Expr::Identifier(id)) => id,
        Some(Expr::CompoundIdentifier(parts)) => match parts.last() {
            Some(id) => id.clone(),
            None => return Err(format!("{kind} needs a time attribute column")),
        },
        _ => return Err(format!("legacy {kind} window on an expression")),
    };
    let sizes: Vec<Expr> = window_args.collect();
    let expected = if kind == "HOP" { 2 } else { 1 };
    if sizes.len() != expected {
        return Err(format!("legacy {kind} window with an alignment argument"));
    }
    let [from] = select.from.as_mut_slice() else {
        return Err(format!("legacy {kind} window over several relations"));
    };
    if !from.joins.is_empty() {
        return Err(format!("legacy {kind} window over a join"));
    }
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = &from.relation
    else {
        return Err(format!("legacy {kind} window over a subquery"));
    };
    let table = match name.0.as_slice() {
        [] => return Err("empty table name".into()),
        parts => parts.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
    };
    let table_expr = if table.len() == 1 {
        Expr::Identifier(Ident::new(table[0].clone()))
    } else {
        Expr::CompoundIdentifier(table.iter().map(|p| Ident::new(p.clone())).collect())
    };
    // A legacy session groups sessions by its other keys: they become PARTITION BY, which names
    // columns of the input (`B.bidder` over `bid AS B` is its column `bidder`).
    let value = if kind == "SESSION" && !keys.is_empty() {
        let qualifiers: Vec<&Ident> = alias
            .as_ref()
            .map(|a| &a.name)
            .into_iter()
            .chain(name.0.last().and_then(|p| p.as_ident()))
            .collect();
        let columns = keys
            .iter()
            .map(|k| input_column(k, &qualifiers).map(Expr::Identifier))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| "legacy SESSION window grouped by expressions".to_string())?;
        let partition = match columns.as_slice() {
            [column] => column.clone(),
            _ => Expr::Tuple(columns),
        };
        Expr::BinaryOp {
            left: Box::new(table_expr),
            op: BinaryOperator::Custom(riffle_sql::dialect::PARTITION_BY_OPERATOR.to_string()),
            right: Box::new(partition),
        }
    } else {
        table_expr
    };
    let mut tvf_args = vec![
        Expr::Prefixed {
            prefix: Ident::new("TABLE"),
            value: Box::new(value),
        },
        call("DESCRIPTOR", vec![Expr::Identifier(time)]),
    ];
    tvf_args.extend(sizes);
    let alias = alias.clone().or_else(|| {
        table.last().map(|t| TableAlias {
            explicit: true,
            name: Ident::new(t.clone()),
            columns: Vec::new(),
            at: None,
        })
    });
    from.relation = TableFactor::TableFunction {
        expr: call(&kind, tvf_args),
        alias,
    };
    keys.insert(position, Expr::Identifier(Ident::new("window_start")));
    keys.insert(position + 1, Expr::Identifier(Ident::new("window_end")));
    // Window property functions become the TVF's columns.
    let mut error = None;
    let mut uses_time = false;
    let mut replace = |expr: &mut Expr| {
        if let Expr::Function(f) = expr {
            let name = function_name(f);
            if let Some((window_kind, property)) = name.split_once('_') {
                if WINDOWS.contains(&window_kind) {
                    let column = match property {
                        "START" => "window_start",
                        "END" => "window_end",
                        // The window's time attribute: event time, or processing time for
                        // a window on a PROCTIME() column.
                        "ROWTIME" | "PROCTIME" => {
                            uses_time = true;
                            "window_time"
                        }
                        _ => {
                            error = Some(format!("{name} (unknown window property)"));
                            return ControlFlow::<()>::Continue(());
                        }
                    };
                    if window_kind != kind {
                        error = Some(format!("{name} with a {kind} group window"));
                    }
                    *expr = Expr::Identifier(Ident::new(column));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    };
    for item in &mut select.projection {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(item, &mut replace);
    }
    if let Some(having) = &mut select.having {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(having, &mut replace);
    }
    if let Some(e) = error {
        return Err(e);
    }
    if uses_time {
        // `window_time` is determined by the window; grouping by it too lets it be selected.
        if kind == "SESSION" {
            return Err("SESSION_ROWTIME / SESSION_PROCTIME".into());
        }
        if let GroupByExpr::Expressions(keys, _) = &mut select.group_by {
            keys.insert(position + 2, Expr::Identifier(Ident::new("window_time")));
        }
    }
    Ok(())
}
