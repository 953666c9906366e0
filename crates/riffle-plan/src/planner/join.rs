//! Planning of joins: regular joins, interval joins on rowtime, window joins, and the semi/anti
//! joins that `IN` / `EXISTS` subqueries become.
//!
//! The join condition is split into equal keys (both inputs are hash-partitioned on them) and a
//! residual condition. Like Flink, a join whose condition bounds the two rowtime attributes
//! against each other from both sides is an interval join, and a join of two window TVF outputs
//! on equal `window_start` and `window_end` is a window join; every other join is a regular
//! join, whose output holds no time attribute.

use std::sync::Arc;

use arrow::datatypes::DataType as ArrowType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, NullEquality, Result as DfResult};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    BinaryExpr, Expr, Join, JoinType as DfJoinType, LogicalPlan, Operator as BinaryOp,
};
use datafusion::optimizer::decorrelate_predicate_subquery::DecorrelatePredicateSubquery;
use datafusion::optimizer::optimizer::{Optimizer, OptimizerContext};
use datafusion::optimizer::scalar_subquery_to_join::ScalarSubqueryToJoin;
use datafusion::optimizer::OptimizerRule;

use super::temporal_plan::snapshot_of;
use super::{
    check_functions, df_error, interval_ms, plan_error, trace_to_tvf, type_of, unsupported,
    GraphBuilder, Node, PlanResult, TvfPath,
};
use crate::graph::{
    join_fields, ChangelogMode, Field, JoinSpec, JoinType, NamedExpr, OperatorKind, Partitioning,
};
use crate::session::quote_ident;

/// Prepares a query plan for translation: `IN` / `EXISTS` subqueries become semi and anti
/// joins, and a `WHERE` directly over an inner join (`FROM a, b WHERE ...`) becomes part of the
/// join condition, as Flink's planner pushes it there.
pub(super) fn prepare(plan: LogicalPlan) -> DfResult<LogicalPlan> {
    let rules: Vec<Arc<dyn OptimizerRule + Send + Sync>> = vec![
        Arc::new(DecorrelatePredicateSubquery::new()),
        Arc::new(ScalarSubqueryToJoin::new()),
    ];
    // Uncorrelated scalar subqueries become joins too (DataFusion would otherwise leave them
    // to its batch executor).
    let mut options = datafusion::config::ConfigOptions::default();
    options
        .optimizer
        .enable_physical_uncorrelated_scalar_subquery = false;
    let context = OptimizerContext::new_with_config_options(Arc::new(options));
    let plan = Optimizer::with_rules(rules).optimize(plan, &context, |_, _| {})?;
    plan.transform_up(|node| match node {
        LogicalPlan::Filter(filter)
            if matches!(filter.input.as_ref(), LogicalPlan::Join(j) if j.join_type == DfJoinType::Inner) =>
        {
            let LogicalPlan::Join(mut join) = Arc::unwrap_or_clone(filter.input) else {
                return datafusion::common::internal_err!("filter input changed");
            };
            join.filter = conjunction(join.filter.take().into_iter().chain([filter.predicate]));
            Ok(Transformed::yes(LogicalPlan::Join(join)))
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

/// An equality between an expression of the left input and one of the right input.
struct KeyPair {
    left: Expr,
    right: Expr,
    /// `IS NOT DISTINCT FROM`: NULL equals NULL.
    null_safe: bool,
}

/// Which input the columns of an expression come from.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Sides {
    None,
    Left,
    Right,
    Both,
}

/// The input side(s) an expression reads, given the combined schema and the left width.
fn sides(expr: &Expr, both: &DFSchema, left_width: usize) -> Sides {
    let mut sides = Sides::None;
    for c in expr.column_refs() {
        let side = match both.index_of_column(c) {
            Ok(i) if i < left_width => Sides::Left,
            Ok(_) => Sides::Right,
            Err(_) => return Sides::Both,
        };
        sides = match (sides, side) {
            (Sides::None, s) => s,
            (s, t) if s == t => s,
            _ => Sides::Both,
        };
    }
    sides
}

/// The conjunct as an equality of a left and a right expression, if it is one.
fn key_pair(conjunct: &Expr, both: &DFSchema, left_width: usize) -> Option<KeyPair> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = conjunct else {
        return None;
    };
    let null_safe = match op {
        BinaryOp::Eq => false,
        BinaryOp::IsNotDistinctFrom => true,
        _ => return None,
    };
    match (
        sides(left, both, left_width),
        sides(right, both, left_width),
    ) {
        (Sides::Left, Sides::Right) => Some(KeyPair {
            left: left.as_ref().clone(),
            right: right.as_ref().clone(),
            null_safe,
        }),
        (Sides::Right, Sides::Left) => Some(KeyPair {
            left: right.as_ref().clone(),
            right: left.as_ref().clone(),
            null_safe,
        }),
        _ => None,
    }
}

/// A time operand of an interval bound: a rowtime column (index in the combined schema) plus a
/// constant offset in milliseconds.
fn time_operand(expr: &Expr, both: &DFSchema, rowtime: &[bool]) -> Option<(usize, i64)> {
    match expr {
        Expr::Cast(c) => time_operand(&c.expr, both, rowtime),
        Expr::Column(c) => {
            let i = both.index_of_column(c).ok()?;
            rowtime.get(i).copied().unwrap_or(false).then_some((i, 0))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, offset) = time_operand(left, both, rowtime)?;
            let ms = interval_ms(right.as_ref().clone()).ok()?;
            match op {
                BinaryOp::Plus => Some((column, offset.checked_add(ms)?)),
                BinaryOp::Minus => Some((column, offset.checked_sub(ms)?)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Bounds on `left_time - right_time` collected from the condition.
#[derive(Default)]
struct TimeBounds {
    /// (left rowtime, right rowtime) in the combined schema.
    columns: Option<(usize, usize)>,
    lower: Option<i64>,
    upper: Option<i64>,
    /// The bounds use more than one pair of time columns (not an interval join).
    mixed: bool,
}

impl TimeBounds {
    /// Records the comparison `a op b` when it bounds a left rowtime against a right one.
    fn comparison(&mut self, a: (usize, i64), op: BinaryOp, b: (usize, i64), left_width: usize) {
        // Normalise to `left + x op right + y`, i.e. `left - right op y - x`.
        let (op, (l, x), (r, y)) = if a.0 < left_width && b.0 >= left_width {
            (op, a, b)
        } else if b.0 < left_width && a.0 >= left_width {
            let flipped = match op {
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                other => other,
            };
            (flipped, b, a)
        } else {
            return;
        };
        match self.columns {
            Some(c) if c != (l, r) => self.mixed = true,
            _ => self.columns = Some((l, r)),
        }
        let d = y.saturating_sub(x);
        let lower = |v: i64, s: &mut Self| s.lower = Some(s.lower.map_or(v, |l| l.max(v)));
        let upper = |v: i64, s: &mut Self| s.upper = Some(s.upper.map_or(v, |u| u.min(v)));
        match op {
            BinaryOp::GtEq => lower(d, self),
            BinaryOp::Gt => lower(d.saturating_add(1), self),
            BinaryOp::LtEq => upper(d, self),
            BinaryOp::Lt => upper(d.saturating_sub(1), self),
            _ => {}
        }
    }

    fn conjunct(&mut self, e: &Expr, both: &DFSchema, rowtime: &[bool], left_width: usize) {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if matches!(
                    op,
                    BinaryOp::Gt | BinaryOp::GtEq | BinaryOp::Lt | BinaryOp::LtEq
                ) =>
            {
                if let (Some(a), Some(b)) = (
                    time_operand(left, both, rowtime),
                    time_operand(right, both, rowtime),
                ) {
                    self.comparison(a, *op, b, left_width);
                }
            }
            Expr::Between(between) if !between.negated => {
                let value = time_operand(&between.expr, both, rowtime);
                let low = time_operand(&between.low, both, rowtime);
                let high = time_operand(&between.high, both, rowtime);
                if let (Some(v), Some(low)) = (value, low) {
                    self.comparison(v, BinaryOp::GtEq, low, left_width);
                }
                if let (Some(v), Some(high)) = (value, high) {
                    self.comparison(v, BinaryOp::LtEq, high, left_width);
                }
            }
            _ => {}
        }
    }

    /// `(left column, right column, lower, upper)` when the condition bounds both ways.
    fn interval(&self) -> Option<(usize, usize, i64, i64)> {
        if self.mixed {
            return None;
        }
        let (l, r) = self.columns?;
        Some((l, r, self.lower?, self.upper?))
    }
}

/// What kind of join operator a join becomes.
enum Flavor {
    Regular,
    /// Left and right rowtime columns (in the inputs) and the bounds of their difference.
    Interval {
        times: (usize, usize),
        lower: i64,
        upper: i64,
    },
    /// Index of the equal `window_end` key pair.
    Window {
        end_key: usize,
    },
    /// Left and right rowtime columns (in the inputs) of a temporal join.
    Temporal {
        times: (usize, usize),
    },
}

impl GraphBuilder<'_> {
    /// Translates a join.
    pub(super) fn join(&mut self, join: &Join) -> PlanResult<Node> {
        let span = self.span;
        let join_type = match join.join_type {
            DfJoinType::Inner => JoinType::Inner,
            DfJoinType::Left => JoinType::Left,
            DfJoinType::Right => JoinType::Right,
            DfJoinType::Full => JoinType::Full,
            DfJoinType::LeftSemi => JoinType::Semi,
            DfJoinType::LeftAnti => JoinType::Anti,
            other => return Err(unsupported(format!("{other} joins"), span)),
        };
        let left = self.translate(&join.left)?;
        // A join against `FOR SYSTEM_TIME AS OF` is a temporal join.
        let snapshot = snapshot_of(&join.right);
        let right = self.translate(snapshot.map_or(join.right.as_ref(), |s| &s.input))?;
        if left.changelog == ChangelogMode::Upsert || right.changelog == ChangelogMode::Upsert {
            return Err(unsupported("joins of upsert streams", span));
        }
        let both = join
            .left
            .schema()
            .join(join.right.schema())
            .map_err(|e| df_error(e, span))?;
        let left_width = join.left.schema().fields().len();

        // Split the condition into key pairs and the residual condition.
        let null_safe_on = join.null_equality == NullEquality::NullEqualsNull;
        let mut keys: Vec<KeyPair> = join
            .on
            .iter()
            .map(|(l, r)| KeyPair {
                left: l.clone(),
                right: r.clone(),
                null_safe: null_safe_on,
            })
            .collect();
        let mut residual: Vec<Expr> = Vec::new();
        let conjuncts: Vec<&Expr> = join
            .filter
            .as_ref()
            .map(split_conjunction)
            .unwrap_or_default();
        for (i, c) in conjuncts.into_iter().enumerate() {
            // NOT IN (a null-aware anti join; its IN equality comes first): a NULL on either
            // side makes the comparison unknown, which rules the left row out (Flink's
            // `a = b OR a IS NULL OR b IS NULL`).
            if join.null_aware && i == 0 {
                if let Expr::BinaryExpr(BinaryExpr { left, right, .. }) = c {
                    let unknown = c
                        .clone()
                        .or(left.as_ref().clone().is_null())
                        .or(right.as_ref().clone().is_null());
                    residual.push(unknown);
                    continue;
                }
            }
            match key_pair(c, &both, left_width) {
                Some(k) => keys.push(k),
                None => residual.push(c.clone()),
            }
        }

        let insert_only = left.changelog == ChangelogMode::InsertOnly
            && right.changelog == ChangelogMode::InsertOnly;
        let flavor = match snapshot {
            Some(snapshot) => {
                if left.changelog != ChangelogMode::InsertOnly {
                    return Err(unsupported(
                        "temporal joins of an updating left input",
                        span,
                    ));
                }
                let right_keys: Vec<&Expr> = keys.iter().map(|k| &k.right).collect();
                let times = self.temporal_times(join, snapshot, &right_keys, &left)?;
                Flavor::Temporal {
                    times: (times.left, times.right),
                }
            }
            None => self.flavor(join, &keys, &residual, &both, &left, &right, insert_only)?,
        };

        // Key columns, computed in a Calc before the join when they are expressions.
        let (left_key_exprs, right_key_exprs): (Vec<Expr>, Vec<Expr>) = keys
            .iter()
            .map(|k| (k.left.clone(), k.right.clone()))
            .unzip();
        let (left_in, left_keys) = self.key_columns(left, join.left.schema(), &left_key_exprs)?;
        let (right_in, right_keys) =
            self.key_columns(right, join.right.schema(), &right_key_exprs)?;
        for (l, r) in left_keys.iter().zip(&right_keys) {
            if left_in.fields[*l].arrow_type != right_in.fields[*r].arrow_type {
                return Err(unsupported(
                    format!(
                        "join keys of different types ({} and {})",
                        left_in.fields[*l].data_type, right_in.fields[*r].data_type
                    ),
                    span,
                ));
            }
        }
        let combined = join_fields(&left_in.fields, &right_in.fields);
        let condition = self.condition(&residual, &both, left_width, &left_in, &combined)?;
        let spec = JoinSpec {
            join_type,
            left_keys: left_keys.clone(),
            right_keys: right_keys.clone(),
            null_safe: keys.iter().map(|k| k.null_safe).collect(),
            condition,
        };

        // Output columns: outer joins make the padded side nullable; a regular join's output
        // holds no time attribute.
        let regular = matches!(flavor, Flavor::Regular);
        // A temporal join keeps the versioned side's time attribute (which a deduplication
        // into a versioned view does not mark as one).
        let right_time = match flavor {
            Flavor::Temporal { times } => Some(times.1),
            _ => None,
        };
        let side_fields = |fields: &[Field], padded: bool, time: Option<usize>| -> Vec<Field> {
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut f = f.clone();
                    if time == Some(i) {
                        f.rowtime = true;
                    }
                    if padded {
                        f.nullable = true;
                        if let Some(t) = f.data_type.strip_suffix(" NOT NULL") {
                            f.data_type = t.to_string();
                        }
                    }
                    if regular {
                        f.rowtime = false;
                    }
                    f
                })
                .collect()
        };
        let left_fields = side_fields(&left_in.fields, join_type.right_outer(), None);
        let schema = if join_type.left_only() {
            left_fields
        } else {
            join_fields(
                &left_fields,
                &side_fields(&right_in.fields, join_type.left_outer(), right_time),
            )
        };

        let (kind, changelog) = match flavor {
            Flavor::Regular => {
                let changelog = match join_type {
                    JoinType::Inner | JoinType::Semi => left_in.changelog.merge(right_in.changelog),
                    _ => ChangelogMode::Retract,
                };
                (OperatorKind::Join { spec }, changelog)
            }
            Flavor::Interval {
                times,
                lower,
                upper,
            } => (
                OperatorKind::IntervalJoin {
                    spec,
                    left_time: times.0,
                    right_time: times.1,
                    lower,
                    upper,
                },
                ChangelogMode::InsertOnly,
            ),
            Flavor::Temporal { times } => (
                OperatorKind::TemporalJoin {
                    spec,
                    left_time: times.0,
                    right_time: times.1,
                },
                ChangelogMode::InsertOnly,
            ),
            Flavor::Window { end_key } => (
                OperatorKind::WindowJoin {
                    spec,
                    left_window_end: left_keys[end_key],
                    right_window_end: right_keys[end_key],
                },
                ChangelogMode::InsertOnly,
            ),
        };
        let (parallelism, left_part, right_part) = if left_keys.is_empty() {
            (1, Partitioning::Global, Partitioning::Global)
        } else {
            (
                self.parallelism,
                Partitioning::Hash(left_keys),
                Partitioning::Hash(right_keys),
            )
        };
        let extra = left_in.fields.len() + right_in.fields.len()
            - join.left.schema().fields().len()
            - join.right.schema().fields().len();
        let node = self.add(
            kind,
            parallelism,
            schema,
            changelog,
            &[(&left_in, left_part), (&right_in, right_part)],
        );
        if extra == 0 {
            return Ok(node);
        }
        // Drop the computed key columns again.
        let keep: Vec<usize> = (0..join.left.schema().fields().len())
            .chain(if join_type.left_only() {
                0..0
            } else {
                let start = left_in.fields.len();
                start..start + join.right.schema().fields().len()
            })
            .collect();
        Ok(self.select_columns(node, &keep))
    }

    /// Decides between a window join, an interval join and a regular join.
    #[allow(clippy::too_many_arguments)]
    fn flavor(
        &self,
        join: &Join,
        keys: &[KeyPair],
        residual: &[Expr],
        both: &DFSchema,
        left: &Node,
        right: &Node,
        insert_only: bool,
    ) -> PlanResult<Flavor> {
        // Window join: equal window_start and window_end of two window TVFs.
        let window_column = |plan: &LogicalPlan, e: &Expr| -> Option<usize> {
            let Expr::Column(c) = e else { return None };
            let idx = plan.schema().index_of_column(c).ok()?;
            let (tvf, at) = trace_to_tvf(plan, idx, &mut TvfPath::default())?;
            at.checked_sub(tvf.input.schema().fields().len())
        };
        let mut start = false;
        let mut end_key = None;
        for (i, k) in keys.iter().enumerate() {
            match (
                window_column(&join.left, &k.left),
                window_column(&join.right, &k.right),
            ) {
                (Some(0), Some(0)) => start = true,
                (Some(1), Some(1)) => end_key = Some(i),
                _ => {}
            }
        }
        if let (true, Some(end_key)) = (start, end_key) {
            if self.has_processing_time_windows(&join.left)
                || self.has_processing_time_windows(&join.right)
            {
                return Err(plan_error(
                    "Processing time Window Join is not supported yet.",
                    self.span,
                ));
            }
            if self.has_local_windows(&join.left) || self.has_local_windows(&join.right) {
                return Err(unsupported(super::LOCAL_WINDOWS, self.span));
            }
            return Ok(Flavor::Window { end_key });
        }
        // Equal window bounds that do not come straight from window TVFs (e.g. the outputs of
        // window aggregations) make a window join in Flink too; a regular join would emit a
        // different changelog.
        let named = |plan: &LogicalPlan, e: &Expr, name: &str| {
            matches!(e, Expr::Column(c) if c.name == name)
                && plan.schema().fields().iter().any(|f| f.name() == name)
        };
        let equal_bound = |name: &str| {
            keys.iter()
                .any(|k| named(&join.left, &k.left, name) && named(&join.right, &k.right, name))
        };
        if equal_bound("window_start") && equal_bound("window_end") {
            return Err(unsupported(
                "window joins over the results of window aggregations or other window operations",
                self.span,
            ));
        }
        if !insert_only || matches!(join.join_type, DfJoinType::LeftSemi | DfJoinType::LeftAnti) {
            return Ok(Flavor::Regular);
        }
        let rowtime: Vec<bool> = left
            .fields
            .iter()
            .chain(&right.fields)
            .map(|f| f.rowtime)
            .collect();
        let left_width = left.fields.len();
        let mut bounds = TimeBounds::default();
        for c in residual {
            bounds.conjunct(c, both, &rowtime, left_width);
        }
        Ok(match bounds.interval() {
            Some((l, r, lower, upper)) => Flavor::Interval {
                times: (l, r - left_width),
                lower,
                upper,
            },
            None => Flavor::Regular,
        })
    }

    /// The input with its key expressions as columns: their indices, after a Calc appending
    /// the keys that are not plain columns.
    fn key_columns(
        &mut self,
        input: Node,
        schema: &DFSchema,
        exprs: &[Expr],
    ) -> PlanResult<(Node, Vec<usize>)> {
        let span = self.span;
        let mut indices = Vec::with_capacity(exprs.len());
        let mut computed: Vec<(String, Expr)> = Vec::new();
        for e in exprs {
            let rewritten = self.rewrite(e, schema, &input)?;
            match &rewritten {
                Expr::Column(c) => match input.fields.iter().position(|f| f.name == c.name) {
                    Some(i) => indices.push(i),
                    None => return Err(plan_error(format!("join key {c} not found"), span)),
                },
                _ => {
                    indices.push(input.fields.len() + computed.len());
                    computed.push((format!("$join_key{}", computed.len()), rewritten));
                }
            }
        }
        if computed.is_empty() {
            return Ok((input, indices));
        }
        check_functions(&computed.iter().map(|(_, e)| e).collect::<Vec<_>>(), span)?;
        let input_schema = input.arrow_schema()?;
        let df = DFSchema::try_from(input_schema.clone()).map_err(|e| df_error(e, span))?;
        let mut projection: Vec<NamedExpr> = input
            .fields
            .iter()
            .map(|f| NamedExpr {
                name: f.name.clone(),
                sql: quote_ident(&f.name),
            })
            .collect();
        let mut fields = input.fields.clone();
        for (name, e) in computed {
            let (t, nullable): (ArrowType, bool) =
                type_of(&e, &df).map_err(|e| df_error(e, span))?;
            let sql = self
                .session
                .expr_to_sql(&e)
                .map_err(|e| df_error(e, span))?;
            self.session
                .physical_expr(&sql, &input_schema)
                .map_err(|e| df_error(e, span))?;
            projection.push(NamedExpr {
                name: name.clone(),
                sql,
            });
            fields.push(Field::from_arrow(name, &t, nullable));
        }
        let changelog = input.changelog;
        let node = self.add(
            OperatorKind::Calc {
                filter: None,
                projection,
            },
            self.parallelism,
            fields,
            changelog,
            &[(&input, Partitioning::Forward)],
        );
        Ok((node, indices))
    }

    /// The residual condition as SQL over the combined columns, checked to compile.
    fn condition(
        &self,
        residual: &[Expr],
        both: &DFSchema,
        left_width: usize,
        left: &Node,
        combined: &[Field],
    ) -> PlanResult<Option<String>> {
        let span = self.span;
        let Some(condition) = conjunction(residual.iter().cloned()) else {
            return Ok(None);
        };
        check_functions(&[&condition], span)?;
        // Columns of the combined schema: the left input (with any computed keys), then the
        // right input.
        let names: Vec<Field> = (0..both.fields().len())
            .filter_map(|i| {
                let at = if i < left_width {
                    i
                } else {
                    left.fields.len() + i - left_width
                };
                combined.get(at).cloned()
            })
            .collect();
        let node = Node {
            op: left.op,
            fields: names,
            changelog: left.changelog,
        };
        let rewritten = self.rewrite(&condition, both, &node)?;
        let sql = self
            .session
            .expr_to_sql(&rewritten)
            .map_err(|e| df_error(e, span))?;
        let schema = crate::graph::arrow_schema(combined).map_err(|e| plan_error(e, span))?;
        self.session
            .physical_expr(&sql, &schema)
            .map_err(|e| df_error(e, span))?;
        Ok(Some(sql))
    }

    /// A Calc keeping the columns `keep` of `input`.
    fn select_columns(&mut self, input: Node, keep: &[usize]) -> Node {
        let projection = keep
            .iter()
            .filter_map(|i| input.fields.get(*i))
            .map(|f| NamedExpr {
                name: f.name.clone(),
                sql: quote_ident(&f.name),
            })
            .collect();
        let fields = keep
            .iter()
            .filter_map(|i| input.fields.get(*i).cloned())
            .collect();
        let changelog = input.changelog;
        self.add(
            OperatorKind::Calc {
                filter: None,
                projection,
            },
            self.parallelism,
            fields,
            changelog,
            &[(&input, Partitioning::Forward)],
        )
    }
}
