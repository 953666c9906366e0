//! A compact, stable text rendering of parse results for snapshot tests.
//!
//! Riffle nodes are listed field by field; sqlparser queries and expressions are printed with their
//! `Display` (which round-trips), so snapshots stay readable and still show every parsed detail.

use std::fmt::Write;

use riffle_sql::ast::{ColumnKind, Insert, Statement, StatementKind, TableOption};
use riffle_sql::{ParsedScript, Span};

/// `line:col-line:col`.
pub fn span(s: &Span) -> String {
    format!(
        "{}:{}-{}:{}",
        s.start.line, s.start.column, s.end.line, s.end.column
    )
}

/// Renders statements, `WITHIN` clauses and diagnostics.
pub fn render(parsed: &ParsedScript) -> String {
    let mut out = String::new();
    for statement in &parsed.script.statements {
        render_statement(&mut out, statement, 0);
    }
    for within in &parsed.match_within {
        let _ = writeln!(
            out,
            "match-within {} @{}",
            within.interval,
            span(&within.span)
        );
    }
    for d in &parsed.diagnostics {
        let _ = writeln!(
            out,
            "{:?} {} @{}: {}",
            d.severity,
            d.code,
            span(&d.span),
            d.message
        );
    }
    out
}

fn options(out: &mut String, pad: &str, options: &[TableOption]) {
    for o in options {
        let _ = writeln!(
            out,
            "{pad}  option {}{:?} = {:?} @{} @{}",
            if o.key_unquoted { "unquoted " } else { "" },
            o.key,
            o.value,
            span(&o.key_span),
            span(&o.value_span)
        );
    }
}

fn insert(out: &mut String, pad: &str, i: &Insert) {
    let _ = writeln!(
        out,
        "{pad}{} {} @{} table@{}",
        if i.overwrite {
            "INSERT OVERWRITE"
        } else {
            "INSERT INTO"
        },
        i.table,
        span(&i.span),
        span(&i.table_span)
    );
    for (k, v) in &i.partition {
        let _ = writeln!(out, "{pad}  partition {k} = {v}");
    }
    if !i.columns.is_empty() {
        let cols: Vec<String> = i.columns.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "{pad}  columns ({})", cols.join(", "));
    }
    let _ = writeln!(out, "{pad}  query {}", i.query);
}

fn render_statement(out: &mut String, s: &Statement, depth: usize) {
    let pad = "  ".repeat(depth);
    let _ = write!(out, "{pad}@{} ", span(&s.span));
    match &s.kind {
        StatementKind::CreateTable(t) => {
            let _ = writeln!(
                out,
                "CREATE{} TABLE{} {} name@{}",
                if t.temporary { " TEMPORARY" } else { "" },
                if t.if_not_exists {
                    " IF NOT EXISTS"
                } else {
                    ""
                },
                t.name,
                span(&t.name_span)
            );
            for c in &t.columns {
                let kind = match &c.kind {
                    ColumnKind::Physical {
                        data_type,
                        primary_key,
                    } => {
                        format!(
                            "{data_type}{}",
                            if *primary_key { " [inline PK]" } else { "" }
                        )
                    }
                    ColumnKind::Computed { expr } => format!("AS {expr}"),
                    ColumnKind::Metadata {
                        data_type,
                        key,
                        is_virtual,
                    } => format!(
                        "{data_type} METADATA{}{}",
                        key.as_ref()
                            .map(|k| format!(" FROM {k:?}"))
                            .unwrap_or_default(),
                        if *is_virtual { " VIRTUAL" } else { "" }
                    ),
                    ColumnKind::Header { data_type } => format!("{data_type} HEADER"),
                };
                let comment = c
                    .comment
                    .as_ref()
                    .map(|c| format!(" COMMENT {c:?}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}  column {} {kind}{comment} @{}",
                    c.name,
                    span(&c.span)
                );
            }
            if let Some(w) = &t.watermark {
                let col: Vec<String> = w.column.iter().map(ToString::to_string).collect();
                let name = w.name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}  watermark{name} FOR {} AS {} @{}",
                    col.join("."),
                    w.expr,
                    span(&w.span)
                );
            }
            if let Some(pk) = &t.primary_key {
                let cols: Vec<String> = pk.columns.iter().map(ToString::to_string).collect();
                let name = pk
                    .constraint_name
                    .as_ref()
                    .map(|n| format!(" CONSTRAINT {n}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}  primary key{name} ({}){} @{}",
                    cols.join(", "),
                    if pk.not_enforced { " NOT ENFORCED" } else { "" },
                    span(&pk.span)
                );
            }
            if !t.partitioned_by.is_empty() {
                let cols: Vec<String> = t.partitioned_by.iter().map(ToString::to_string).collect();
                let _ = writeln!(out, "{pad}  partitioned by ({})", cols.join(", "));
            }
            if let Some(c) = &t.comment {
                let _ = writeln!(out, "{pad}  comment {c:?}");
            }
            options(out, &pad, &t.options);
            if let Some(query) = &t.as_query {
                let _ = writeln!(out, "{pad}  as {query}");
            }
            if let Some(like) = &t.like {
                let _ = writeln!(
                    out,
                    "{pad}  like {} {:?} @{}",
                    like.source,
                    like.options,
                    span(&like.span)
                );
            }
        }
        StatementKind::CreateView(v) => {
            let cols: Vec<String> = v.columns.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "CREATE{} VIEW{} {} ({}) name@{}\n{pad}  query {}",
                if v.temporary { " TEMPORARY" } else { "" },
                if v.if_not_exists {
                    " IF NOT EXISTS"
                } else {
                    ""
                },
                v.name,
                cols.join(", "),
                span(&v.name_span),
                v.query
            );
        }
        StatementKind::CreateFunction(f) => {
            let _ = writeln!(
                out,
                "CREATE{}{} FUNCTION{} {} AS {:?} language={:?} jars={:?} name@{}",
                if f.temporary { " TEMPORARY" } else { "" },
                if f.system { " SYSTEM" } else { "" },
                if f.if_not_exists {
                    " IF NOT EXISTS"
                } else {
                    ""
                },
                f.name,
                f.identifier,
                f.language,
                f.jars,
                span(&f.name_span)
            );
        }
        StatementKind::CreateCatalog(c) => {
            let _ = writeln!(out, "CREATE CATALOG {}", c.name);
            options(out, &pad, &c.options);
        }
        StatementKind::CreateDatabase(d) => {
            let _ = writeln!(
                out,
                "CREATE DATABASE{} {} comment={:?}",
                if d.if_not_exists {
                    " IF NOT EXISTS"
                } else {
                    ""
                },
                d.name,
                d.comment
            );
            options(out, &pad, &d.options);
        }
        StatementKind::Drop(d) => {
            let _ = writeln!(
                out,
                "DROP {:?} {} temporary={} system={} if_exists={}",
                d.object, d.name, d.temporary, d.system, d.if_exists
            );
        }
        StatementKind::Alter(u) => {
            let _ = writeln!(out, "ALTER [{}] {:?}", u.keywords, u.text);
        }
        StatementKind::Client(u) => {
            let _ = writeln!(out, "CLIENT [{}] {:?}", u.keywords, u.text);
        }
        StatementKind::Set(None) => {
            let _ = writeln!(out, "SET");
        }
        StatementKind::Set(Some(o)) => {
            let _ = writeln!(
                out,
                "SET {:?} = {:?} @{} @{}",
                o.key,
                o.value,
                span(&o.key_span),
                span(&o.value_span)
            );
        }
        StatementKind::Reset(k) => {
            let _ = match k {
                Some(k) => writeln!(out, "RESET {:?} @{}", k.key, span(&k.span)),
                None => writeln!(out, "RESET"),
            };
        }
        StatementKind::Use(u) => {
            let _ = writeln!(
                out,
                "USE{} {}",
                if u.catalog { " CATALOG" } else { "" },
                u.name
            );
        }
        StatementKind::Insert(i) => insert(out, "", i),
        StatementKind::StatementSet(set) => {
            let _ = writeln!(out, "STATEMENT SET {:?}", set.syntax);
            for i in &set.inserts {
                insert(out, &format!("{pad}  "), i);
            }
        }
        StatementKind::Query(q) => {
            let _ = writeln!(out, "QUERY {q}");
        }
        StatementKind::Explain(e) => {
            let _ = writeln!(out, "EXPLAIN {:?}", e.details);
            render_statement(out, &e.statement, depth + 1);
        }
    }
    for h in &s.hints {
        let _ = writeln!(
            out,
            "{pad}  hint {} options={:?} args={:?} @{}",
            h.name,
            h.options,
            h.args,
            span(&h.span)
        );
    }
}
