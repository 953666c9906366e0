//! Flink's time-attribute *types* of a query's columns, as `DESCRIBE <view>` prints them.
//!
//! In Flink a time attribute is a property of a column's type (`TIMESTAMP(3) *ROWTIME*`) that
//! the validator derives like any other type: it survives column references, joins, set
//! operations (taking the first input's type), `CASE` / `COALESCE`-like functions, datetime
//! `+`/`-` of an interval, `FLOOR`/`CEIL ... TO unit`, and the aggregates whose result type is
//! their argument's (`MAX`, `MIN`, `FIRST_VALUE`, `LAST_VALUE`, also over windows), while `CAST`
//! and functions computing a new value drop it. A view's schema is that validated type, so a
//! view column `MAX(rowtime)` stays a rowtime attribute even though a query over it materializes
//! it. (Operators track the *runtime* time attribute separately, in `graph::Field::rowtime`.)

use datafusion::logical_expr::expr::{Alias, WindowFunction};
use datafusion::logical_expr::{
    Aggregate, BinaryExpr, Expr, GroupingSet, LogicalPlan, Operator as BinaryOp,
};
use datafusion::sql::sqlparser::ast as sql;

use super::Catalog;
use crate::window::WindowTvfNode;

/// The kind of time attribute a column's type carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeKind {
    Rowtime,
    Proctime,
}

impl TimeKind {
    /// Flink's marker after the type in a schema summary.
    pub(super) fn marker(self) -> &'static str {
        match self {
            TimeKind::Rowtime => "*ROWTIME*",
            TimeKind::Proctime => "*PROCTIME*",
        }
    }
}

/// Scalar functions whose result type is the least restrictive type of their arguments, so a
/// time attribute argument's marker carries over (`IF(c, ts, ts)`, `COALESCE(ts, ...)`).
const TYPE_PRESERVING_FUNCTIONS: &[&str] = &[
    "coalesce",
    "ifnull",
    "nvl",
    "nullif",
    "greatest",
    "least",
    "if",
    "floor_time",
    "ceil_time",
];

/// Aggregates whose result type is their argument's.
const TYPE_PRESERVING_AGGREGATES: &[&str] = &["max", "min", "first_value", "last_value"];

/// The time attribute of each output column of `plan` (`None` for an ordinary column).
pub(super) fn time_attributes(catalog: &Catalog, plan: &LogicalPlan) -> Vec<Option<TimeKind>> {
    let width = plan.schema().fields().len();
    let mut attrs = match plan {
        LogicalPlan::TableScan(scan) => {
            let table = catalog.tables.get(scan.table_name.table());
            let column = |i: usize| match &scan.projection {
                Some(p) => p.get(i).copied(),
                None => Some(i),
            };
            (0..width)
                .map(|i| {
                    let c = table.zip(column(i)).and_then(|(t, c)| t.columns.get(c))?;
                    if c.rowtime {
                        Some(TimeKind::Rowtime)
                    } else {
                        matches!(&c.computed, Some(sql::Expr::Function(f)) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
                            .then_some(TimeKind::Proctime)
                    }
                })
                .collect()
        }
        LogicalPlan::Projection(p) => {
            let input = time_attributes(catalog, &p.input);
            p.expr
                .iter()
                .map(|e| expr_time(e, &p.input, &input))
                .collect()
        }
        LogicalPlan::Aggregate(a) => aggregate_times(catalog, a),
        LogicalPlan::Window(w) => {
            let input = time_attributes(catalog, &w.input);
            let over: Vec<_> = w
                .window_expr
                .iter()
                .map(|e| expr_time(e, &w.input, &input))
                .collect();
            input.into_iter().chain(over).collect()
        }
        LogicalPlan::Join(j) => {
            let mut attrs = time_attributes(catalog, &j.left);
            attrs.extend(time_attributes(catalog, &j.right));
            attrs
        }
        // Set operations take the first input's column types.
        LogicalPlan::Union(u) => u
            .inputs
            .first()
            .map(|i| time_attributes(catalog, i))
            .unwrap_or_default(),
        LogicalPlan::Extension(ext) => {
            match ext.node.as_any().downcast_ref::<WindowTvfNode>() {
                Some(tvf) => {
                    let mut attrs = time_attributes(catalog, &tvf.input);
                    // window_start, window_end, window_time
                    attrs.extend([None, None, Some(TimeKind::Rowtime)]);
                    attrs
                }
                None => match ext.node.inputs().as_slice() {
                    [input] => time_attributes(catalog, input),
                    _ => Vec::new(),
                },
            }
        }
        other => match other.inputs().as_slice() {
            // Filters, sorts, limits, aliases, DISTINCT, INTERSECT/EXCEPT (left input first).
            [input, ..] => time_attributes(catalog, input),
            _ => Vec::new(),
        },
    };
    // Whatever this walk does not know (semi-join widths, table functions) is no attribute.
    attrs.resize(width, None);
    attrs
}

/// Group keys keep their type; the type-preserving aggregates keep their argument's.
fn aggregate_times(catalog: &Catalog, a: &Aggregate) -> Vec<Option<TimeKind>> {
    let input = time_attributes(catalog, &a.input);
    let keys: Vec<&Expr> = match a.group_expr.as_slice() {
        [Expr::GroupingSet(set)] => match set {
            GroupingSet::Rollup(e) | GroupingSet::Cube(e) => e.iter().collect(),
            GroupingSet::GroupingSets(sets) => {
                let mut distinct: Vec<&Expr> = Vec::new();
                for e in sets.iter().flatten() {
                    if !distinct.contains(&e) {
                        distinct.push(e);
                    }
                }
                distinct
            }
        },
        exprs => exprs.iter().collect(),
    };
    let mut attrs: Vec<_> = keys
        .iter()
        .map(|e| expr_time(e, &a.input, &input))
        .collect();
    // The internal grouping id of grouping sets sits between keys and aggregates.
    let width = a.schema.fields().len();
    attrs.resize(width - a.aggr_expr.len().min(width), None);
    attrs.extend(a.aggr_expr.iter().map(|e| expr_time(e, &a.input, &input)));
    attrs
}

/// The time attribute of `e`'s type over `input`'s columns (with attributes `attrs`).
fn expr_time(e: &Expr, input: &LogicalPlan, attrs: &[Option<TimeKind>]) -> Option<TimeKind> {
    let first_of = |args: &[Expr]| args.iter().find_map(|a| expr_time(a, input, attrs));
    match e {
        Expr::Alias(Alias { expr, .. }) => expr_time(expr, input, attrs),
        Expr::Column(c) => input
            .schema()
            .index_of_column(c)
            .ok()
            .and_then(|i| attrs.get(i).copied().flatten()),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: BinaryOp::Plus | BinaryOp::Minus,
            right,
        }) => expr_time(left, input, attrs).or_else(|| expr_time(right, input, attrs)),
        Expr::Case(case) => case
            .when_then_expr
            .iter()
            .map(|(_, then)| then.as_ref())
            .chain(case.else_expr.as_deref())
            .find_map(|b| expr_time(b, input, attrs)),
        Expr::ScalarFunction(f) => {
            let name = f.func.name().to_ascii_lowercase();
            if name == "proctime" {
                Some(TimeKind::Proctime)
            } else if TYPE_PRESERVING_FUNCTIONS.contains(&name.as_str()) {
                first_of(&f.args)
            } else {
                None
            }
        }
        Expr::AggregateFunction(f) => {
            let name = f.func.name().to_ascii_lowercase();
            TYPE_PRESERVING_AGGREGATES
                .contains(&name.as_str())
                .then(|| first_of(&f.params.args))
                .flatten()
        }
        Expr::WindowFunction(w) => {
            let WindowFunction { fun, params } = w.as_ref();
            let name = fun.name().to_ascii_lowercase();
            TYPE_PRESERVING_AGGREGATES
                .contains(&name.as_str())
                .then(|| first_of(&params.args))
                .flatten()
        }
        _ => None,
    }
}
