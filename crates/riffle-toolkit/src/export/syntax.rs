//! SQL the target Flink release lacks: rewritten when an exact older form exists (a SESSION TVF
//! aggregation -> `GROUP BY SESSION(...)`, named TVF arguments -> positional ones, a STATE_TTL hint
//! -> removed), reported otherwise (functions and configuration keys newer than the target).

use std::collections::HashSet;
use std::ops::ControlFlow;

use riffle_catalog::{Catalog, TimeAttribute};
use riffle_dialects::{mappings, FlinkVersion, SyntaxRewrite};
use riffle_sql::ast::{Script, Statement, StatementKind};
use riffle_sql::dialect::TableArgument;
use riffle_sql::Span;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArguments, GroupByExpr, Query, Select, SelectItem, SetExpr, Spanned,
    TableFactor, Visit, Visitor,
};
use sqlparser::tokenizer::Token;

use crate::features;
use crate::migrate::options::Log;
use crate::migrate::patch::Patch;
use crate::migrate::source::SourceText;

/// Rewrites or reports what `target` lacks; returns the patches.
pub(crate) fn downgrade(
    script: &Script,
    catalog: &Catalog,
    src: &SourceText,
    target: FlinkVersion,
    log: &mut Log,
) -> Vec<Patch> {
    let mut patches = Vec::new();
    let releases = &mappings().flink;
    let needs = |id: &str| releases.syntax(id).filter(|s| target < s.since);
    let mut tops: HashSet<*const Select> = HashSet::new();
    for statement in &script.statements {
        top_selects(&statement.kind, &mut tops);
    }
    let mut walker = TvfWalker {
        src,
        catalog,
        tops: &tops,
        session: needs("query.window-tvf.session")
            .is_some_and(|s| s.rewrite == Some(SyntaxRewrite::LegacyGroupWindow)),
        named: needs("syntax.named-arguments")
            .is_some_and(|s| s.rewrite == Some(SyntaxRewrite::PositionalArguments)),
        log: &mut *log,
        patches: Vec::new(),
    };
    for statement in &script.statements {
        for query in queries(&statement.kind) {
            let _ = query.visit(&mut walker);
        }
    }
    patches.extend(walker.patches);
    if let Some(ttl) = needs("hint.state-ttl") {
        for statement in &script.statements {
            patches.extend(remove_hints(
                statement,
                src,
                "STATE_TTL",
                ttl.note.as_deref(),
                log,
            ));
        }
    }
    report_newer(script, catalog, target, log);
    patches
}

/// Reports functions and configuration keys newer than the target.
fn report_newer(script: &Script, catalog: &Catalog, target: FlinkVersion, log: &mut Log) {
    let mut seen = HashSet::new();
    for use_ in features::collect(script, catalog) {
        let Some(name) = use_.code.strip_prefix("function.") else {
            continue;
        };
        let Some(spec) = riffle_dialects::function(name) else {
            continue;
        };
        let since = spec
            .since
            .as_deref()
            .and_then(|s| FlinkVersion::parse(s).ok());
        if let Some(since) = since.filter(|s| target < *s) {
            if seen.insert((use_.code.clone(), use_.span)) {
                log.manual(
                    format!("export.{}", use_.code),
                    use_.span,
                    format!("function {}", spec.name),
                    format!("added in Flink {since}; Flink {target} lacks it"),
                );
            }
        }
    }
    for statement in &script.statements {
        let StatementKind::Set(Some(option)) = &statement.kind else {
            continue;
        };
        let since = riffle_dialects::config_option(&option.key)
            .and_then(|c| c.since.as_deref())
            .and_then(|s| FlinkVersion::parse(s).ok());
        if let Some(since) = since.filter(|s| target < *s) {
            log.manual(
                format!("export.config.{}", option.key),
                option.key_span,
                format!("SET '{}'", option.key),
                format!("added in Flink {since}; Flink {target} does not read it"),
            );
        }
    }
}

/// Removes `/*+ NAME(...) */` hint comments holding only that hint.
fn remove_hints(
    statement: &Statement,
    src: &SourceText,
    name: &str,
    note: Option<&str>,
    log: &mut Log,
) -> Vec<Patch> {
    let mut patches = Vec::new();
    for hint in statement.hints.iter().filter(|h| h.name == name) {
        let at = src.range(hint.span).start;
        let Some(comment) = src.comment_at(at) else {
            continue;
        };
        let others = statement
            .hints
            .iter()
            .filter(|h| {
                h.name != name && src.comment_at(src.range(h.span).start) == Some(comment.clone())
            })
            .count();
        let code = format!("export.hint.{}", name.to_ascii_lowercase());
        if others > 0 {
            log.manual(
                code,
                hint.span,
                format!("{name} hint"),
                "the hint comment holds other hints too; remove the hint by hand",
            );
            continue;
        }
        // The comment and the blanks after it; at the end of a line, the blanks before it.
        let rest = src.slice(comment.end..src.text.len());
        let after = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        let line_ends = rest[after..].starts_with('\n') || after == rest.len();
        let range = if line_ends {
            let head = src.slice(0..comment.start);
            let before = head.len() - head.trim_end_matches([' ', '\t']).len();
            comment.start - before..comment.end + after
        } else {
            comment.start..comment.end + after
        };
        patches.push(Patch::delete(range));
        log.change(
            code,
            hint.span,
            format!("removed the {name} hint"),
            note.map(str::to_string),
        );
    }
    patches
}

/// The queries of a statement.
fn queries(kind: &StatementKind) -> Vec<&Query> {
    match kind {
        StatementKind::Insert(i) => vec![&i.query],
        StatementKind::StatementSet(set) => set.inserts.iter().map(|i| &i.query).collect(),
        StatementKind::Query(q) => vec![q.as_ref()],
        StatementKind::CreateView(v) => vec![&v.query],
        StatementKind::CreateTable(t) => t.as_query.iter().map(|q| q.as_ref()).collect(),
        StatementKind::Explain(e) => queries(&e.statement.kind),
        _ => Vec::new(),
    }
}

/// The top-level selects of INSERTs and bare queries.
fn top_selects(kind: &StatementKind, tops: &mut HashSet<*const Select>) {
    let mut mark = |q: &Query| {
        if let SetExpr::Select(s) = q.body.as_ref() {
            tops.insert(s.as_ref() as *const Select);
        }
    };
    match kind {
        StatementKind::Insert(i) => mark(&i.query),
        StatementKind::StatementSet(set) => set.inserts.iter().for_each(|i| mark(&i.query)),
        StatementKind::Query(q) => mark(q),
        StatementKind::Explain(e) => top_selects(&e.statement.kind, tops),
        _ => {}
    }
}

struct TvfWalker<'a, 'b> {
    src: &'a SourceText<'b>,
    catalog: &'a Catalog,
    tops: &'a HashSet<*const Select>,
    session: bool,
    named: bool,
    log: &'a mut Log,
    patches: Vec<Patch>,
}

/// A window TVF call in a FROM clause.
struct TvfCall<'q> {
    name: String,
    call: &'q Expr,
}

fn tvf_of(factor: &TableFactor) -> Option<TvfCall<'_>> {
    let TableFactor::TableFunction { expr, .. } = factor else {
        return None;
    };
    let Expr::Function(f) = expr else {
        return None;
    };
    let name = crate::migrate::tables::simple_name(&f.name).to_ascii_uppercase();
    mappings()
        .windows
        .tvf_params
        .contains_key(&name)
        .then_some(TvfCall { name, call: expr })
}

impl Visitor for TvfWalker<'_, '_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let Some(tvf) = tvf_of(factor) {
            if self.named && has_named_args(tvf.call) && !(self.session && tvf.name == "SESSION") {
                self.positional(&tvf);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        if !self.session {
            return ControlFlow::Continue(());
        }
        let Some(tvf) = select.from.first().and_then(|t| tvf_of(&t.relation)) else {
            return ControlFlow::Continue(());
        };
        if tvf.name != "SESSION" {
            return ControlFlow::Continue(());
        }
        let span = Span::from(tvf.call.span());
        match self.session_to_group_window(select, &tvf) {
            Ok(patches) => {
                self.patches.extend(patches);
                self.log.change(
                    "export.query.window-tvf.session",
                    span,
                    "TABLE(SESSION(...)) aggregation -> GROUP BY SESSION(...)",
                    Some("the SESSION window TVF needs Flink 1.19; the legacy group window gives the same rows".to_string()),
                );
            }
            Err(reason) => self.log.manual(
                "export.query.window-tvf.session",
                span,
                "SESSION window TVF",
                format!("needs Flink 1.19; {reason}"),
            ),
        }
        ControlFlow::Continue(())
    }
}

fn has_named_args(call: &Expr) -> bool {
    let Expr::Function(f) = call else {
        return false;
    };
    let FunctionArguments::List(list) = &f.args else {
        return false;
    };
    list.args
        .iter()
        .any(|a| matches!(a, FunctionArg::Named { .. } | FunctionArg::ExprNamed { .. }))
}

/// `(name, value text)` of each argument of a TVF call, positional ones named by position.
fn args_by_name(src: &SourceText, tvf: &TvfCall) -> Option<Vec<(String, String)>> {
    let params = mappings().windows.tvf_params.get(&tvf.name)?;
    let range = src.call_range(Span::from(tvf.call.span()))?;
    let mut out = Vec::new();
    for (i, arg) in src.call_args(range)?.into_iter().enumerate() {
        match src.find_token(arg.clone(), &Token::RArrow) {
            Some(arrow) => {
                let name = src
                    .slice(arg.start..arrow.start)
                    .trim()
                    .to_ascii_uppercase();
                let value = src.slice(arrow.end..arg.end).trim().to_string();
                out.push((name, value));
            }
            None => out.push((params.get(i)?.clone(), src.slice(arg).to_string())),
        }
    }
    Some(out)
}

impl TvfWalker<'_, '_> {
    /// Named TVF arguments -> positional ones.
    fn positional(&mut self, tvf: &TvfCall) {
        let span = Span::from(tvf.call.span());
        let code = "export.syntax.named-arguments";
        let Some(params) = mappings().windows.tvf_params.get(&tvf.name) else {
            return;
        };
        let (Some(args), Some(range)) = (args_by_name(self.src, tvf), self.src.call_range(span))
        else {
            self.log.manual(
                code,
                span,
                format!("{} with named arguments", tvf.name),
                "its arguments were not found",
            );
            return;
        };
        let mut ordered = Vec::new();
        for param in params {
            match args.iter().find(|(n, _)| n == param) {
                Some((_, v)) => ordered.push(v.clone()),
                None => break,
            }
        }
        if ordered.len() != args.len() {
            self.log.manual(
                code,
                span,
                format!("{} with named arguments", tvf.name),
                "an optional argument is skipped, which positional arguments cannot express",
            );
            return;
        }
        let Some(open) = self.src.slice(range.clone()).find('(') else {
            return;
        };
        let inner = range.start + open + 1..range.end - 1;
        self.patches.push(Patch::replace(inner, ordered.join(", ")));
        self.log.change(
            code,
            span,
            format!("{} named arguments -> positional", tvf.name),
            Some("named arguments need Flink 1.19".to_string()),
        );
    }

    /// `FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)) GROUP BY window_start,
    /// window_end, k` -> `FROM t GROUP BY SESSION(ts, gap), k`.
    fn session_to_group_window(
        &self,
        select: &Select,
        tvf: &TvfCall,
    ) -> Result<Vec<Patch>, String> {
        let src = self.src;
        if !self.tops.contains(&(select as *const Select)) {
            return Err("the windowed query feeds another query, which may rely on its window columns; rewrite by hand".into());
        }
        if select.from.len() != 1 || select.from.first().is_some_and(|t| !t.joins.is_empty()) {
            return Err("the window is joined with other tables".into());
        }
        if select.selection.is_some() {
            return Err("a WHERE clause after the SESSION TVF filters after sessions are formed, a legacy window filters before".into());
        }
        let args = args_by_name(src, tvf).ok_or("its arguments were not found")?;
        let arg = |name: &str| args.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let (Some(_), Some(timecol), Some(gap)) = (arg("DATA"), arg("TIMECOL"), arg("GAP")) else {
            return Err("its arguments were not found".into());
        };
        let Expr::Function(call) = tvf.call else {
            return Err("not a call".into());
        };
        let FunctionArguments::List(list) = &call.args else {
            return Err("not a call".into());
        };
        let table_arg = list.args.iter().find_map(|a| match a {
            FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(e)) => {
                TableArgument::from_expr(e)
            }
            FunctionArg::Named {
                arg: sqlparser::ast::FunctionArgExpr::Expr(e),
                ..
            } => TableArgument::from_expr(e),
            FunctionArg::ExprNamed {
                arg: sqlparser::ast::FunctionArgExpr::Expr(e),
                ..
            } => TableArgument::from_expr(e),
            _ => None,
        });
        let table_arg = table_arg.ok_or("its table argument was not found")?;
        let time = timecol
            .strip_prefix("DESCRIPTOR(")
            .or_else(|| timecol.strip_prefix("descriptor("))
            .and_then(|t| t.strip_suffix(')'))
            .map(str::trim)
            .ok_or("its time column was not found")?
            .to_string();
        let GroupByExpr::Expressions(keys, modifiers) = &select.group_by else {
            return Err("it is not a window aggregation".into());
        };
        if !modifiers.is_empty() {
            return Err("grouping sets over a session window".into());
        }
        let window_key = |e: &Expr| window_column(e).map(str::to_string);
        let window_keys: Vec<&Expr> = keys.iter().filter(|k| window_key(k).is_some()).collect();
        let has = |c: &str| {
            window_keys
                .iter()
                .any(|k| window_key(k).as_deref() == Some(c))
        };
        if !has("window_start") || !has("window_end") {
            return Err(
                "it is not a window aggregation (GROUP BY window_start, window_end)".into(),
            );
        }
        let plain_keys: Vec<String> = keys
            .iter()
            .filter(|k| window_key(k).is_none())
            .filter_map(|k| match k {
                Expr::Identifier(i) => Some(i.value.clone()),
                Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
                _ => None,
            })
            .collect();
        for p in &table_arg.partition_by {
            let name = match p {
                Expr::Identifier(i) => i.value.clone(),
                _ => return Err("a PARTITION BY key is not a column".into()),
            };
            if !plain_keys.iter().any(|k| k == &name) {
                return Err(format!("PARTITION BY {name} is not a GROUP BY key; a legacy session window groups by its keys"));
            }
        }
        let proctime = self
            .catalog
            .table(&table_arg.name)
            .and_then(|t| t.column(time.trim_matches('`')))
            .is_some_and(|c| c.time_attribute == Some(TimeAttribute::Proctime));
        let window = mappings()
            .windows
            .window("SESSION")
            .ok_or("no SESSION window in the mapping")?;
        let group_call = format!("SESSION({time}, {gap})");
        let mut patches = Vec::new();
        // GROUP BY: the first window column becomes the window, the others go with their comma.
        for (n, key) in window_keys.iter().enumerate() {
            let range = src.range(Span::from(key.span()));
            if n == 0 {
                patches.push(Patch::replace(range, group_call.clone()));
            } else {
                let start = src
                    .prev_significant(range.start)
                    .filter(|t| t.token == Token::Comma)
                    .map_or(range.start, |t| t.range.start);
                patches.push(Patch::delete(start..range.end));
            }
        }
        // Projection and HAVING: window columns -> auxiliary calls.
        let mut exprs: Vec<&Expr> = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    exprs.push(e)
                }
                _ => return Err("SELECT * over a window TVF".into()),
            }
        }
        exprs.extend(select.having.iter());
        for e in exprs {
            let mut found: Vec<(Span, String)> = Vec::new();
            let _ = sqlparser::ast::visit_expressions(e, |inner: &Expr| {
                if let Some(column) = window_column(inner) {
                    found.push((Span::from(inner.span()), column.to_string()));
                }
                ControlFlow::<()>::Continue(())
            });
            for (span, column) in found {
                let function = mappings()
                    .windows
                    .auxiliary_for_column(window, &column, proctime)
                    .ok_or_else(|| format!("no legacy function yields {column}"))?;
                let text = format!("{function}({time}, {gap})");
                // An unaliased column keeps its name.
                let bare = select.projection.iter().any(|item| {
                    matches!(item, SelectItem::UnnamedExpr(x) if Span::from(x.span()) == span)
                });
                let text = if bare {
                    format!("{text} AS {column}")
                } else {
                    text
                };
                patches.push(Patch::replace(src.range(span), text));
            }
        }
        // FROM: the TVF -> its table.
        let call_range = src
            .call_range(Span::from(tvf.call.span()))
            .ok_or("its parentheses were not found")?;
        let open = src
            .prev_significant(call_range.start)
            .filter(|t| t.token == Token::LParen)
            .ok_or("its TABLE(...) was not found")?;
        let table_kw = src
            .prev_significant(open.range.start)
            .filter(|t| matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case("TABLE")))
            .ok_or("its TABLE(...) was not found")?;
        let close = src
            .next_significant(call_range.end)
            .filter(|t| t.token == Token::RParen)
            .ok_or("its TABLE(...) was not found")?;
        let table_text = table_arg.name.to_string();
        patches.push(Patch::replace(
            table_kw.range.start..close.range.end,
            table_text,
        ));
        Ok(patches)
    }
}

/// `window_start` / `window_end` / `window_time` (possibly qualified).
fn window_column(e: &Expr) -> Option<&'static str> {
    let name = match e {
        Expr::Identifier(i) => &i.value,
        Expr::CompoundIdentifier(parts) => &parts.last()?.value,
        _ => return None,
    };
    mappings()
        .windows
        .window_columns
        .iter()
        .find(|c| c.eq_ignore_ascii_case(name))
        .map(String::as_str)
}
