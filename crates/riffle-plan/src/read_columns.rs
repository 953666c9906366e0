//! Which columns of each source a job reads: the planner's projection push-down.
//!
//! Flink pushes a query's projection into its sources (`project=[...]` on a table scan), and
//! that is visible beyond cost: the filesystem source does not convert the columns no one
//! reads, so a badly typed value in such a column neither fails the job nor counts as a parse
//! error (the oracle shows it: `compat-tests/cases/formats/*unread*`). This pass works out, for
//! every source, the (nested) columns its consumers read and records them in the source's
//! [`ConnectorSpec::read_columns`]; the connector then decides what it may skip.
//!
//! The analysis walks the graph from the sinks back to the sources. It follows what a column
//! becomes through the operators that pass columns on unchanged (`Calc`, the watermark
//! assigner, window assignment, regular joins), down to fields of ROW columns; any other
//! operator is taken to read every column of its inputs.

use std::collections::BTreeMap;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::Expr;

use crate::graph::{arrow_schema, join_fields, Field, JobGraph, JoinType, OperatorKind};
use crate::session::FlinkSession;

/// How much of a column (or of a field of a ROW column) is read.
#[derive(Debug, Clone, PartialEq)]
enum Usage {
    /// All of it.
    Whole,
    /// Only these fields of the ROW, each with its own usage.
    Fields(BTreeMap<String, Usage>),
}

impl Usage {
    /// `leaf` at `path` inside a column (the field names below the column).
    fn at(path: &[String], leaf: Usage) -> Usage {
        path.iter().rev().fold(leaf, |inner, name| {
            Usage::Fields(BTreeMap::from([(name.clone(), inner)]))
        })
    }

    /// Adds what `other` reads.
    fn merge(&mut self, other: Usage) {
        match (&mut *self, other) {
            (Usage::Whole, _) => {}
            (_, Usage::Whole) => *self = Usage::Whole,
            (Usage::Fields(mine), Usage::Fields(theirs)) => {
                for (name, usage) in theirs {
                    match mine.get_mut(&name) {
                        Some(existing) => existing.merge(usage),
                        None => {
                            mine.insert(name, usage);
                        }
                    }
                }
            }
        }
    }

    /// The paths read whole, each below `prefix`.
    fn paths(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match self {
            Usage::Whole => out.push(prefix.clone()),
            Usage::Fields(fields) => {
                for (name, usage) in fields {
                    prefix.push(name.clone());
                    usage.paths(prefix, out);
                    prefix.pop();
                }
            }
        }
    }
}

/// What is read of each column of one operator's output (`None`: nothing).
type Columns = Vec<Option<Usage>>;

fn read(columns: &mut Columns, index: usize, usage: Usage) {
    if let Some(slot) = columns.get_mut(index) {
        match slot {
            Some(existing) => existing.merge(usage),
            None => *slot = Some(usage),
        }
    }
}

fn all_of(width: usize) -> Columns {
    vec![Some(Usage::Whole); width]
}

/// Sets [`crate::ConnectorSpec::read_columns`] on every source of `graph`.
pub fn mark_read_columns(graph: &mut JobGraph, session: &FlinkSession) {
    let mut outputs: Vec<Columns> = graph
        .operators
        .iter()
        .map(|op| vec![None; op.schema.len()])
        .collect();
    // Operators are in topological order: walking backwards, every consumer of an operator is
    // done before it.
    for id in (0..graph.operators.len()).rev() {
        // In input order (`inputs_of` sorts by input index).
        let inputs: Vec<usize> = graph.inputs_of(id).iter().map(|e| e.from).collect();
        let input_fields: Vec<&[Field]> = inputs
            .iter()
            .map(|from| graph.operators[*from].schema.as_slice())
            .collect();
        let op = &graph.operators[id];
        let needs = inputs_read(&op.kind, &outputs[id], &input_fields, session)
            .unwrap_or_else(|| input_fields.iter().map(|f| all_of(f.len())).collect());
        for (from, columns) in inputs.iter().zip(needs) {
            for (index, usage) in columns.into_iter().enumerate() {
                if let Some(usage) = usage {
                    read(&mut outputs[*from], index, usage);
                }
            }
        }
    }
    for (op, columns) in graph.operators.iter_mut().zip(outputs) {
        let OperatorKind::Source { connector } = &mut op.kind else {
            continue;
        };
        let mut paths = Vec::new();
        for (field, usage) in op.schema.iter().zip(&columns) {
            if let Some(usage) = usage {
                usage.paths(&mut vec![field.name.clone()], &mut paths);
            }
        }
        let everything = columns.iter().all(|c| c == &Some(Usage::Whole));
        connector.read_columns = (!everything).then_some(paths);
    }
}

/// What `kind` reads of each input given what is read of its output; `None` when the analysis
/// does not know the operator (then it reads everything).
fn inputs_read(
    kind: &OperatorKind,
    output: &Columns,
    inputs: &[&[Field]],
    session: &FlinkSession,
) -> Option<Vec<Columns>> {
    match (kind, inputs) {
        (OperatorKind::Calc { filter, projection }, [input]) => {
            let exprs = Exprs::new(input, session)?;
            let mut columns = vec![None; input.len()];
            if let Some(filter) = filter {
                exprs.read_by(filter, Usage::Whole, &mut columns)?;
            }
            for (item, usage) in projection.iter().zip(output) {
                if let Some(usage) = usage {
                    exprs.read_by(&item.sql, usage.clone(), &mut columns)?;
                }
            }
            Some(vec![columns])
        }
        (OperatorKind::WatermarkAssigner { rowtime, expr, .. }, [input]) => {
            let exprs = Exprs::new(input, session)?;
            let mut columns = passed_on(output, input.len());
            read(&mut columns, *rowtime, Usage::Whole);
            exprs.read_by(expr, Usage::Whole, &mut columns)?;
            Some(vec![columns])
        }
        (OperatorKind::WindowAssign { time_column, .. }, [input]) => {
            // The input's columns come first in the output, the window's after them.
            let mut columns = passed_on(output, input.len());
            read(&mut columns, *time_column, Usage::Whole);
            Some(vec![columns])
        }
        (OperatorKind::Join { spec }, [left, right]) => {
            let mut sides = [passed_on(output, left.len()), vec![None; right.len()]];
            if !matches!(spec.join_type, JoinType::Semi | JoinType::Anti) {
                for (index, usage) in output.iter().enumerate().skip(left.len()) {
                    if let Some(usage) = usage {
                        read(&mut sides[1], index - left.len(), usage.clone());
                    }
                }
            }
            for &key in &spec.left_keys {
                read(&mut sides[0], key, Usage::Whole);
            }
            for &key in &spec.right_keys {
                read(&mut sides[1], key, Usage::Whole);
            }
            if let Some(condition) = &spec.condition {
                let both = join_fields(left, right);
                let exprs = Exprs::new(&both, session)?;
                let mut columns = vec![None; both.len()];
                exprs.read_by(condition, Usage::Whole, &mut columns)?;
                for (index, usage) in columns.into_iter().enumerate() {
                    if let Some(usage) = usage {
                        match index.checked_sub(left.len()) {
                            None => read(&mut sides[0], index, usage),
                            Some(right_index) => read(&mut sides[1], right_index, usage),
                        }
                    }
                }
            }
            Some(sides.into())
        }
        _ => None,
    }
}

/// The first `width` columns of `output`, which an operator passes on from its input.
fn passed_on(output: &Columns, width: usize) -> Columns {
    let mut columns: Columns = output.iter().take(width).cloned().collect();
    columns.resize(width, None);
    columns
}

/// Expressions over one operator input, planned to find the columns they read.
pub(crate) struct Exprs<'a> {
    fields: &'a [Field],
    schema: DFSchema,
    session: &'a FlinkSession,
}

impl<'a> Exprs<'a> {
    pub(crate) fn new(fields: &'a [Field], session: &'a FlinkSession) -> Option<Self> {
        let schema = DFSchema::try_from(arrow_schema(fields).ok()?).ok()?;
        Some(Exprs {
            fields,
            schema,
            session,
        })
    }

    /// Adds to `columns` what `sql` reads when `usage` of its value is read: a column or a
    /// field path passes `usage` on; any other expression reads its columns (or fields) whole.
    /// `None` when the text does not plan (the caller then assumes everything is read).
    fn read_by(&self, sql: &str, usage: Usage, columns: &mut Columns) -> Option<()> {
        let expr = self.session.logical_from_sql(sql, &self.schema).ok()?;
        let expr = unalias(&expr);
        if let Some((index, path)) = self.path_of(expr) {
            read(columns, index, Usage::at(&path, usage));
            return Some(());
        }
        let mut unknown = false;
        let _ = expr.apply(|e| {
            if let Some((index, path)) = self.path_of(e) {
                read(columns, index, Usage::at(&path, Usage::Whole));
                return Ok(TreeNodeRecursion::Jump);
            }
            if let Expr::Column(_) = e {
                unknown = true;
            }
            Ok(TreeNodeRecursion::Continue)
        });
        (!unknown).then_some(())
    }

    /// The input column `sql` is, when it is nothing but a column (`None` otherwise, or when
    /// the text does not plan).
    pub(crate) fn plain_column(&self, sql: &str) -> Option<usize> {
        let expr = self.session.logical_from_sql(sql, &self.schema).ok()?;
        match self.path_of(&expr)? {
            (index, path) if path.is_empty() => Some(index),
            _ => None,
        }
    }

    /// Which input columns `sql` reads (`None` when the text does not plan).
    pub(crate) fn columns_read(&self, sql: &str) -> Option<Vec<bool>> {
        let mut columns = vec![None; self.fields.len()];
        self.read_by(sql, Usage::Whole, &mut columns)?;
        Some(columns.iter().map(Option::is_some).collect())
    }

    /// The column and field path `expr` reads, when it is a column or a chain of field accesses
    /// on one (`r.a.b`).
    fn path_of(&self, expr: &Expr) -> Option<(usize, Vec<String>)> {
        match unalias(expr) {
            Expr::Column(c) => {
                let index = self.fields.iter().position(|f| f.name == c.name)?;
                Some((index, Vec::new()))
            }
            Expr::ScalarFunction(f) if f.name() == "get_field" => match f.args.as_slice() {
                [base, Expr::Literal(ScalarValue::Utf8(Some(name)), _)] => {
                    let (index, mut path) = self.path_of(base)?;
                    path.push(name.clone());
                    Some((index, path))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

fn unalias(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(a) => unalias(&a.expr),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn usages_merge_down_to_the_fields_read() {
        let mut usage = Usage::at(&path(&["a", "x"]), Usage::Whole);
        usage.merge(Usage::at(&path(&["a", "y"]), Usage::Whole));
        usage.merge(Usage::at(&path(&["b"]), Usage::Whole));
        let mut paths = Vec::new();
        usage.paths(&mut path(&["r"]), &mut paths);
        assert_eq!(
            paths,
            vec![
                path(&["r", "a", "x"]),
                path(&["r", "a", "y"]),
                path(&["r", "b"])
            ]
        );
        usage.merge(Usage::at(&path(&["a"]), Usage::Whole));
        let mut paths = Vec::new();
        usage.paths(&mut path(&["r"]), &mut paths);
        assert_eq!(paths, vec![path(&["r", "a"]), path(&["r", "b"])]);
        usage.merge(Usage::Whole);
        assert_eq!(usage, Usage::Whole);
    }
}
