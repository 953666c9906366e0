//! `--modernize`: legacy group windows (`GROUP BY TUMBLE(ts, size)` with `TUMBLE_START` ...) ->
//! window table-valued function aggregations, only where the rewrite gives the same rows.
//!
//! A query is rewritten when it is the whole query of an `INSERT` or of a bare query (a windowed
//! query feeding another query is left alone: the window TVF's columns carry window properties,
//! which can turn a downstream `GROUP BY` / join / Top-N on them into window operators whose
//! changelog differs), reads one table or view without joins, groups by one window whose time
//! attribute is a column, and the table has no column named like a window column. SESSION
//! windows also need no `WHERE` (the TVF would form sessions before the filter) and plain-column
//! keys, which become the TVF's `PARTITION BY`.

use std::collections::HashSet;
use std::ops::ControlFlow;

use riffle_catalog::Catalog;
use riffle_dialects::{mappings, WindowSpec};
use riffle_sql::ast::{Script, StatementKind};
use riffle_sql::Span;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, ObjectName, Query, Select,
    SelectItem, SetExpr, Spanned, TableFactor, Visit, Visitor,
};

use super::options::Log;
use super::patch::Patch;
use super::source::SourceText;

/// Rewrites every eligible legacy group window of `script`; reports the others.
pub(crate) fn modernize(
    script: &Script,
    catalog: &Catalog,
    src: &SourceText,
    log: &mut Log,
) -> Vec<Patch> {
    let mut top: HashSet<*const Select> = HashSet::new();
    let mut queries: Vec<&Query> = Vec::new();
    for statement in &script.statements {
        collect_queries(&statement.kind, &mut queries, &mut top);
    }
    let mut walker = Walker {
        top: &top,
        catalog,
        src,
        log,
        patches: Vec::new(),
    };
    for query in queries {
        let _ = query.visit(&mut walker);
    }
    walker.patches
}

/// The queries of a statement, and the top-level selects of INSERTs and bare queries.
fn collect_queries<'a>(
    kind: &'a StatementKind,
    queries: &mut Vec<&'a Query>,
    top: &mut HashSet<*const Select>,
) {
    let mark_top = |q: &'a Query, top: &mut HashSet<*const Select>| {
        if let SetExpr::Select(select) = q.body.as_ref() {
            top.insert(select.as_ref() as *const Select);
        }
    };
    match kind {
        StatementKind::Insert(i) => {
            mark_top(&i.query, top);
            queries.push(&i.query);
        }
        StatementKind::StatementSet(set) => {
            for i in &set.inserts {
                mark_top(&i.query, top);
                queries.push(&i.query);
            }
        }
        StatementKind::Query(q) => {
            mark_top(q, top);
            queries.push(q);
        }
        StatementKind::CreateView(v) => queries.push(&v.query),
        StatementKind::CreateTable(t) => {
            if let Some(q) = &t.as_query {
                queries.push(q);
            }
        }
        StatementKind::Explain(e) => collect_queries(&e.statement.kind, queries, top),
        _ => {}
    }
}

struct Walker<'a, 'b> {
    top: &'a HashSet<*const Select>,
    catalog: &'a Catalog,
    src: &'a SourceText<'b>,
    log: &'a mut Log,
    patches: Vec<Patch>,
}

impl Visitor for Walker<'_, '_> {
    type Break = ();

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        let Some((window, call)) = group_window(select) else {
            return ControlFlow::Continue(());
        };
        let code = format!("query.group-window.{}", window.name.to_ascii_lowercase());
        let span = Span::from(call.span());
        let is_top = self.top.contains(&(select as *const Select));
        match self.rewrite(select, window, call, is_top) {
            Ok((patches, note)) => {
                self.patches.extend(patches);
                let message = format!(
                    "GROUP BY {}(...) -> TABLE({}(...)) with window_start / window_end",
                    window.name, window.name
                );
                self.log.change(code, span, message, note);
            }
            Err(reason) => {
                let message = format!("legacy {} group window", window.name);
                self.log.manual(code, span, message, reason);
            }
        }
        ControlFlow::Continue(())
    }
}

/// The group window of a select: its spec and the `NAME(...)` call in GROUP BY.
fn group_window(select: &Select) -> Option<(&'static WindowSpec, &Expr)> {
    let GroupByExpr::Expressions(exprs, _) = &select.group_by else {
        return None;
    };
    exprs.iter().find_map(|e| match e {
        Expr::Function(f) => mappings()
            .windows
            .window(&function_name(&f.name))
            .map(|w| (w, e)),
        _ => None,
    })
}

fn function_name(name: &ObjectName) -> String {
    super::tables::simple_name(name).to_ascii_uppercase()
}

/// The plain arguments of a call.
fn call_args(expr: &Expr) -> Option<Vec<&Expr>> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// The last identifier of a column reference.
fn column_ident(expr: &Expr) -> Option<&sqlparser::ast::Ident> {
    match expr {
        Expr::Identifier(i) => Some(i),
        Expr::CompoundIdentifier(parts) => parts.last(),
        _ => None,
    }
}

/// An auxiliary call (`TUMBLE_START(...)`) of a select's projection or HAVING.
struct AuxCall {
    span: Span,
    args: Option<Vec<String>>,
    window: &'static WindowSpec,
    column: &'static str,
    text: String,
}

/// The auxiliary calls of a select's projection and HAVING.
fn auxiliary_calls(select: &Select) -> Vec<AuxCall> {
    let mut calls = Vec::new();
    let mut visit = |e: &Expr| {
        let _ = sqlparser::ast::visit_expressions(e, |inner: &Expr| {
            if let Expr::Function(f) = inner {
                if let Some((window, column)) =
                    mappings().windows.auxiliary(&function_name(&f.name))
                {
                    calls.push(AuxCall {
                        span: Span::from(inner.span()),
                        args: call_args(inner).map(|a| a.iter().map(|x| x.to_string()).collect()),
                        window,
                        column,
                        text: inner.to_string(),
                    });
                }
            }
            ControlFlow::<()>::Continue(())
        });
    };
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => visit(e),
            _ => {}
        }
    }
    if let Some(h) = &select.having {
        visit(h);
    }
    calls
}

impl Walker<'_, '_> {
    /// The patches of one rewrite, or why it would not give the same rows.
    fn rewrite(
        &self,
        select: &Select,
        window: &'static WindowSpec,
        call: &Expr,
        is_top: bool,
    ) -> Result<(Vec<Patch>, Option<String>), String> {
        if !is_top {
            return Err("the windowed query feeds another query; with a window TVF, a GROUP BY, join or Top-N on its window columns downstream becomes a window operator with a different changelog, so rewrite the whole pipeline by hand".into());
        }
        let GroupByExpr::Expressions(keys, modifiers) = &select.group_by else {
            return Err("GROUP BY ALL".into());
        };
        if !modifiers.is_empty()
            || keys
                .iter()
                .any(|k| matches!(k, Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_)))
        {
            return Err("grouping sets over a group window have to be rewritten by hand".into());
        }
        let windows_in_group_by = keys
            .iter()
            .filter(|k| matches!(k, Expr::Function(f) if mappings().windows.window(&function_name(&f.name)).is_some()))
            .count();
        if windows_in_group_by != 1 {
            return Err("more than one group window".into());
        }
        let [from] = select.from.as_slice() else {
            return Err("the query reads several relations".into());
        };
        if !from.joins.is_empty() {
            return Err(
                "the window is computed over a join; the TVF needs one table or view".into(),
            );
        }
        let TableFactor::Table {
            name,
            args: None,
            version: None,
            ..
        } = &from.relation
        else {
            return Err("the window is computed over a subquery or function; the TVF needs one table or view".into());
        };
        let columns: Vec<String> = if let Some(t) = self.catalog.table(name) {
            t.columns.iter().map(|c| c.name.clone()).collect()
        } else if let Some(v) = self.catalog.view(name) {
            v.schema.columns.iter().map(|c| c.name.clone()).collect()
        } else {
            return Err(format!("`{name}` is not a table or view of the job"));
        };
        let window_columns = &mappings().windows.window_columns;
        if let Some(clash) = columns
            .iter()
            .find(|c| window_columns.iter().any(|w| w.eq_ignore_ascii_case(c)))
        {
            return Err(format!(
                "`{name}` already has a column `{clash}`, which the window TVF adds"
            ));
        }
        let args = call_args(call).ok_or("the window's arguments are not plain expressions")?;
        let Some((time, rest)) = args.split_first() else {
            return Err("the window has no time attribute".into());
        };
        if rest.len() != window.args.len() {
            return Err(format!(
                "{} takes ({}) after the time attribute here; an alignment offset has no exact TVF form",
                window.name,
                window.args.join(", ")
            ));
        }
        let time_ident = column_ident(time).ok_or("the time attribute is not a column")?;
        let src = self.src;
        let group_range = src
            .call_range(Span::from(call.span()))
            .ok_or("the window call's parentheses were not found")?;
        let arg_ranges = src
            .call_args(group_range.clone())
            .filter(|a| a.len() == args.len())
            .ok_or("the window call's arguments were not found")?;
        let time_text = src.span_text(Span::from(time_ident.span)).to_string();
        let mut partition_by: Vec<String> = Vec::new();
        if window.partition_by_group_keys {
            if select.selection.is_some() {
                return Err("a WHERE clause filters rows before legacy sessions are formed, but after SESSION TVF windows are assigned".into());
            }
            for key in keys.iter().filter(|k| !std::ptr::eq(*k, call)) {
                let ident = column_ident(key).ok_or(
                    "a GROUP BY key is an expression; the SESSION TVF partitions by columns",
                )?;
                partition_by.push(src.span_text(Span::from(ident.span)).to_string());
            }
        }
        // Every auxiliary call must name this window (same function, same arguments).
        let call_text: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let mut patches = Vec::new();
        let mut unaliased = false;
        for aux in auxiliary_calls(select) {
            if !std::ptr::eq(aux.window, window) || aux.args.as_ref() != Some(&call_text) {
                return Err(format!("`{}` does not name the GROUP BY window", aux.text));
            }
            let range = src
                .call_range(aux.span)
                .ok_or("an auxiliary call's parentheses were not found")?;
            patches.push(Patch::replace(range, aux.column.to_string()));
            unaliased |= select.projection.iter().any(|item| {
                matches!(item, SelectItem::UnnamedExpr(e) if Span::from(e.span()) == aux.span)
            });
        }
        // Flink's window aggregation only projects `window_time` when it is a grouping key too
        // (it adds no grouping: it follows from window_end).
        let needs_time = auxiliary_calls(select)
            .iter()
            .any(|a| a.column == "window_time");
        let keys_text = if needs_time {
            "window_start, window_end, window_time"
        } else {
            "window_start, window_end"
        };
        patches.push(Patch::replace(group_range, keys_text));
        let table_text = src.span_text(Span::from(name.span()));
        let partition = match partition_by.as_slice() {
            [] => String::new(),
            [one] => format!(" PARTITION BY {one}"),
            many => format!(" PARTITION BY ({})", many.join(", ")),
        };
        let rest_text: Vec<&str> = arg_ranges
            .iter()
            .skip(1)
            .map(|r| src.slice(r.clone()))
            .collect();
        let tvf = format!(
            "TABLE({}(TABLE {table_text}{partition}, DESCRIPTOR({time_text}), {}))",
            window.name,
            rest_text.join(", ")
        );
        let name_range = src.range(Span::from(name.span()));
        let after_name = src
            .next_significant(name_range.end)
            .map_or(src.text.len(), |t| t.range.start);
        if src.slice(name_range.end..after_name).contains("/*+") {
            return Err("a hint follows the table name; hints cannot follow a window TVF".into());
        }
        patches.push(Patch::replace(name_range, tvf));
        let mut notes = Vec::new();
        if unaliased {
            notes.push("an auxiliary call without an alias now yields a column named after the window column");
        }
        if needs_time {
            notes.push(
                "window_time is NOT NULL where the legacy rowtime was nullable (same values)",
            );
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        Ok((patches, note))
    }
}
