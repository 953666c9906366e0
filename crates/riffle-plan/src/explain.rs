//! Human-readable renderings of a [`JobGraph`]: an indented text listing and Graphviz DOT.

use std::fmt::Write;

use crate::graph::{JobGraph, JoinSpec, NamedExpr, Operator, OperatorKind, Partitioning};

/// `expr AS name, ...` (just `name` where the expression is the column itself).
fn select_list(projection: &[NamedExpr]) -> String {
    projection
        .iter()
        .map(|p| {
            if p.sql == p.name {
                p.name.clone()
            } else {
                format!("{} AS {}", p.sql, p.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A one-line description of an operator (`Calc(filter=[...], select=[...])`).
pub fn describe(op: &Operator) -> String {
    match &op.kind {
        OperatorKind::Source { connector } => {
            let read = connector
                .read_columns
                .as_ref()
                .map_or(String::new(), |paths| {
                    let paths: Vec<String> = paths.iter().map(|p| p.join(".")).collect();
                    format!(", read=[{}]", paths.join(", "))
                });
            format!(
                "Source(table=[{}], connector=[{}]{read})",
                connector.table, connector.connector
            )
        }
        OperatorKind::Values { rows } => format!("Values(rows=[{}])", rows.len()),
        OperatorKind::Calc { filter, projection } => {
            let select = select_list(projection);
            match filter {
                Some(f) => format!("Calc(select=[{select}], where=[{f}])"),
                None => format!("Calc(select=[{select}])"),
            }
        }
        OperatorKind::Expand { projections } => {
            let projects: Vec<String> = projections
                .iter()
                .map(|p| format!("{{{}}}", select_list(p)))
                .collect();
            format!("Expand(projects=[{}])", projects.join(", "))
        }
        OperatorKind::WatermarkAssigner {
            rowtime,
            expr,
            interval_ms,
        } => format!(
            "WatermarkAssigner(rowtime=[{}], watermark=[{expr}], interval=[{interval_ms} ms])",
            column(op, *rowtime)
        ),
        OperatorKind::WindowAssign {
            window,
            time_column,
            processing_time,
            slice,
        } => {
            let time = if *processing_time {
                "proctime"
            } else {
                "time_col"
            };
            let slice = slice.map_or(String::new(), |ms| format!(", slice=[{ms} ms]"));
            format!("WindowAssign(window=[{window:?}], {time}=[{time_column}]{slice})")
        }
        OperatorKind::WindowAggregate {
            keys,
            window_end,
            aggregates,
            slices,
            ..
        } => format!(
            "WindowAggregate(groupBy=[{}], window_end=[{}], select=[{}]{})",
            columns(op, keys),
            column(op, *window_end),
            aggregates
                .iter()
                .map(|a| a.name.clone())
                .collect::<Vec<_>>()
                .join(", "),
            slices.map_or(String::new(), |s| format!(
                ", merges=[{:?} of {} ms slices]",
                s.window, s.slice
            ))
        ),
        OperatorKind::SessionWindowAggregate {
            keys,
            gap,
            aggregates,
            ..
        } => format!(
            "SessionWindowAggregate(groupBy=[{}], gap=[{gap} ms], select=[{}])",
            columns(op, keys),
            aggregates
                .iter()
                .map(|a| a.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        OperatorKind::GroupAggregate { keys, aggregates } => format!(
            "GroupAggregate(groupBy=[{}], select=[{}])",
            columns(op, keys),
            aggregates
                .iter()
                .map(|a| a.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        OperatorKind::ChangelogNormalize { keys } => {
            format!("ChangelogNormalize(key=[{}])", columns(op, keys))
        }
        OperatorKind::Join { spec } => format!("Join({})", describe_join(spec)),
        OperatorKind::IntervalJoin {
            spec, lower, upper, ..
        } => format!(
            "IntervalJoin({}, bounds=[{lower} ms, {upper} ms])",
            describe_join(spec)
        ),
        OperatorKind::TemporalJoin {
            spec,
            left_time,
            right_time,
        } => format!(
            "TemporalJoin({}, period=[${left_time}], versionTime=[${right_time}])",
            describe_join(spec)
        ),
        OperatorKind::WindowJoin { spec, .. } => format!("WindowJoin({})", describe_join(spec)),
        OperatorKind::Union => "Union".to_string(),
        OperatorKind::Correlate(spec) => crate::correlate::describe(spec),
        OperatorKind::Limit { offset, fetch } => match fetch {
            Some(f) => format!("Limit(offset=[{offset}], fetch=[{f}])"),
            None => format!("Limit(offset=[{offset}])"),
        },
        OperatorKind::TopN { order, fetch } => format!(
            "TopN(orderBy=[{}], fetch=[{fetch}])",
            order
                .iter()
                .map(|k| format!("${} {}", k.column, if k.ascending { "ASC" } else { "DESC" }))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        OperatorKind::TemporalSort { time_column, order } => format!(
            "TemporalSort(orderBy=[${time_column} ASC{}])",
            order
                .iter()
                .map(|k| format!(
                    ", ${} {}",
                    k.column,
                    if k.ascending { "ASC" } else { "DESC" }
                ))
                .collect::<String>()
        ),
        OperatorKind::OverAggregate(spec) => crate::over::describe(op, spec),
        OperatorKind::Rank(spec) => crate::rank::describe(op, spec),
        OperatorKind::MatchRecognize(spec) => crate::match_recognize::describe(op, spec),
        OperatorKind::Sink { connector } => {
            if connector.table.is_empty() {
                format!("Sink(connector=[{}])", connector.connector)
            } else {
                format!(
                    "Sink(table=[{}], connector=[{}])",
                    connector.table, connector.connector
                )
            }
        }
    }
}

/// The join type, key columns (`$i` of each input) and residual condition of a join.
fn describe_join(spec: &JoinSpec) -> String {
    let keys: Vec<String> = spec
        .left_keys
        .iter()
        .zip(&spec.right_keys)
        .zip(&spec.null_safe)
        .map(|((l, r), safe)| {
            let op = if *safe { "<=>" } else { "=" };
            format!("${l} {op} ${r}")
        })
        .collect();
    let mut text = format!(
        "joinType=[{:?}], keys=[{}]",
        spec.join_type,
        keys.join(", ")
    );
    if let Some(c) = &spec.condition {
        let _ = write!(text, ", where=[{c}]");
    }
    text
}

/// Output column names at `indices` (the operator's own output names, which for the aggregates
/// start with the keys).
fn columns(op: &Operator, indices: &[usize]) -> String {
    indices
        .iter()
        .map(|i| column(op, *i))
        .collect::<Vec<_>>()
        .join(", ")
}

fn column(op: &Operator, i: usize) -> String {
    op.schema
        .get(i)
        .map(|f| f.name.clone())
        .unwrap_or_else(|| format!("${i}"))
}

fn partitioning(p: &Partitioning) -> String {
    match p {
        Partitioning::Forward => "FORWARD".into(),
        Partitioning::Rebalance => "REBALANCE".into(),
        Partitioning::Hash(keys) => format!(
            "HASH[{}]",
            keys.iter()
                .map(|k| format!("${k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Partitioning::Broadcast => "BROADCAST".into(),
        Partitioning::Global => "GLOBAL".into(),
    }
}

/// The graph as text: one block per operator with its schema, parallelism, changelog mode and
/// input edges.
pub fn to_text(graph: &JobGraph) -> String {
    let mut out = String::new();
    for op in &graph.operators {
        let _ = writeln!(out, "[{}] {}", op.id, describe(op));
        let _ = writeln!(
            out,
            "    parallelism={} changelog={}",
            op.parallelism,
            op.changelog.notation()
        );
        let schema: Vec<String> = op
            .schema
            .iter()
            .map(|f| {
                format!(
                    "{}: {}{}",
                    f.name,
                    f.data_type,
                    if f.rowtime { " *ROWTIME*" } else { "" }
                )
            })
            .collect();
        let _ = writeln!(out, "    schema=[{}]", schema.join(", "));
        for e in graph.inputs_of(op.id) {
            let _ = writeln!(
                out,
                "    input {} <- [{}] {} {}",
                e.input,
                e.from,
                partitioning(&e.partitioning),
                e.changelog.notation()
            );
        }
    }
    out
}

/// The graph in Graphviz DOT.
pub fn to_dot(graph: &JobGraph) -> String {
    let mut out = String::from("digraph job {\n  rankdir=LR;\n  node [shape=box];\n");
    for op in &graph.operators {
        let label = format!("{}\\nparallelism={}", describe(op), op.parallelism);
        let _ = writeln!(out, "  op{} [label=\"{}\"];", op.id, escape(&label));
    }
    for e in &graph.edges {
        let label = format!(
            "{} {}",
            partitioning(&e.partitioning),
            e.changelog.notation()
        );
        let _ = writeln!(
            out,
            "  op{} -> op{} [label=\"{}\"];",
            e.from,
            e.to,
            escape(&label)
        );
    }
    out.push_str("}\n");
    out
}

/// Escapes double quotes for a DOT string (the `\n` line breaks are kept).
fn escape(s: &str) -> String {
    s.replace('"', "\\\"")
}
