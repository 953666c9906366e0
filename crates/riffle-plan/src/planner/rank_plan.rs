//! Planning of `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)` filtered by a rank range into
//! [`RankSpec`] operators, choosing Flink's strategy: window Top-N when the partition holds a
//! window's start and end, deduplication when only the first row by a single time attribute is
//! kept (with or without its rank number, always 1), Top-N otherwise.

use std::collections::{BTreeSet, HashSet};

use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    BinaryExpr, Expr, Filter, LogicalPlan, Operator, Projection, Window,
};
use datafusion::sql::sqlparser::ast as sql;

use super::{
    df_error, names_schema, plan_error, unsupported, window_keys, Catalog, GraphBuilder, Node,
    PlanResult,
};
use crate::graph::{AggregateFunction, ChangelogMode, Field, OperatorKind, Partitioning, SortKey};
use crate::rank::{RankSpec, RankStrategy};
use crate::window::WindowTvfNode;

/// A filter on the rank column of a single-call window: `rn <= N`, `rn = 1`, `rn BETWEEN ..`.
struct RankFilter<'a> {
    window: &'a Window,
    /// Projections between the filter and the window, top first.
    chain: Vec<&'a Projection>,
    /// Name of the ranking function (`row_number`, `rank`, `dense_rank`).
    function: String,
    start: usize,
    end: usize,
    /// Conjuncts of the filter that do not bound the rank.
    residual: Vec<Expr>,
}

impl GraphBuilder<'_> {
    /// A projection over a rank filter: the rank, then the projection.
    pub(super) fn rank_projection(&mut self, p: &Projection) -> PlanResult<Option<Node>> {
        let LogicalPlan::Filter(f) = p.input.as_ref() else {
            return Ok(None);
        };
        let Some(rank) = rank_filter(f) else {
            return Ok(None);
        };
        let node = self.rank(f, rank)?;
        let exprs = p
            .expr
            .iter()
            .map(|e| self.rewrite(e, f.input.schema(), &node))
            .collect::<PlanResult<Vec<_>>>()?;
        self.calc(node, None, &exprs, &p.schema).map(Some)
    }

    /// A rank filter on its own.
    pub(super) fn rank_filter(&mut self, f: &Filter) -> PlanResult<Option<Node>> {
        match rank_filter(f) {
            Some(rank) => self.rank(f, rank).map(Some),
            None => Ok(None),
        }
    }

    /// The rank operator (its output always carries the rank column; whether the rank number is
    /// part of the changelog depends on whether the statement uses it, as Flink prunes it),
    /// then the projections and residual filter between it and the filter.
    fn rank(&mut self, f: &Filter, rank: RankFilter<'_>) -> PlanResult<Node> {
        let span = self.span;
        let w = rank.window;
        let output_rank = self.rank_usage.uses(w);
        let mut input = self.translate(&w.input)?;
        let Some(Expr::WindowFunction(wf)) = w.window_expr.first().map(|e| e.clone().unalias())
        else {
            return Err(plan_error("rank without a window function", span));
        };
        let in_schema = w.input.schema();
        // Partition and sort expressions other than columns, computed after the input's
        // columns (as Flink computes them in a Calc before its Rank).
        let mut computed = Vec::new();
        let mut partition = Vec::new();
        for e in &wf.params.partition_by {
            partition.push(match e {
                Expr::Column(c) => in_schema
                    .index_of_column(c)
                    .map_err(|e| df_error(e, span))?,
                e => {
                    computed.push(self.rewrite(e, in_schema, &input)?);
                    input.fields.len() + computed.len() - 1
                }
            });
        }
        let mut order = Vec::new();
        for key in &wf.params.order_by {
            let column = match &key.expr {
                Expr::Column(c) => in_schema
                    .index_of_column(c)
                    .map_err(|e| df_error(e, span))?,
                e => {
                    computed.push(self.rewrite(e, in_schema, &input)?);
                    input.fields.len() + computed.len() - 1
                }
            };
            order.push(SortKey {
                column,
                ascending: key.asc,
                nulls_first: key.nulls_first,
            });
        }
        let kept = input.fields.len();
        if !computed.is_empty() {
            let mut names: Vec<String> = input.fields.iter().map(|f| f.name.clone()).collect();
            let mut exprs: Vec<Expr> = names
                .iter()
                .map(|n| Expr::Column(Column::from_name(n.clone())))
                .collect();
            for (i, e) in computed.into_iter().enumerate() {
                names.push(format!("$rank_key{i}"));
                exprs.push(e);
            }
            let schema = names_schema(&names, span)?;
            input = self.calc(input, None, &exprs, &schema)?;
        }
        if order.is_empty() {
            return Err(plan_error(
                "Over Agg: The window rank function requires order by clause with non-constant fields. please re-check the over window statement.",
                span,
            ));
        }
        let window_end = window_partition(&w.input, &partition);
        let function = rank.function.to_ascii_uppercase();
        if function != "ROW_NUMBER" {
            let message = if window_end.is_some() {
                format!("{function}() function is not supported on Window TopN currently, only ROW_NUMBER() is supported.")
            } else {
                format!("{function}() on streaming table is not supported currently")
            };
            return Err(plan_error(message, span));
        }
        let insert_only = input.changelog == ChangelogMode::InsertOnly;
        let single_time_key = match order.as_slice() {
            [key] => {
                let rowtime = input.fields.get(key.column).is_some_and(|f| f.rowtime);
                let proctime = !rowtime
                    && key.column < kept
                    && is_proctime(self.catalog, &w.input, key.column);
                Some((key, rowtime, proctime))
            }
            _ => None,
        };
        let first_only = rank.start == 1 && rank.end == 1;
        let strategy = match (window_end, single_time_key) {
            (Some(_), _) if !insert_only => {
                return Err(unsupported("window Top-N over an updating stream", span))
            }
            (Some(_), key) if self.has_processing_time_windows(&w.input) => {
                // Flink plans a first row by a time attribute as a window deduplication.
                let what = if first_only && key.is_some_and(|(_, rowtime, proc)| rowtime || proc) {
                    "Deduplication"
                } else {
                    "TopN"
                };
                return Err(plan_error(
                    format!("Processing time Window {what} is not supported yet."),
                    span,
                ));
            }
            (Some(_), _) if self.has_local_windows(&w.input) => {
                return Err(unsupported(super::LOCAL_WINDOWS, span))
            }
            (Some(window_end), key) => RankStrategy::Window {
                window_end,
                latest_first: first_only
                    && key.is_some_and(|(k, rowtime, _)| rowtime && !k.ascending),
            },
            (None, Some((key, true, _))) if first_only && insert_only => {
                RankStrategy::RowTimeDedup {
                    keep_last: !key.ascending,
                    time: key.column,
                }
            }
            (None, Some((key, _, true))) if first_only && insert_only => {
                RankStrategy::ProcTimeDedup {
                    keep_last: !key.ascending,
                }
            }
            _ => RankStrategy::TopN,
        };
        let updating = !matches!(
            strategy,
            RankStrategy::Window { .. }
                | RankStrategy::ProcTimeDedup { keep_last: false }
                | RankStrategy::RowTimeDedup {
                    keep_last: false,
                    ..
                }
        );
        let top_n = strategy == RankStrategy::TopN;
        // Flink 2.3 takes a Top-1 without the rank number over an insert-only input for a
        // keep-first deduplication unless its order is a single descending key (or mini-batch
        // is on): it declares it insert-only and its FastTop1Function then emits no -U.
        let drop_update_before = top_n
            && first_only
            && insert_only
            && !self.mini_batch
            && !matches!(order.as_slice(), [key] if !key.ascending);
        let row_key = if top_n && !insert_only {
            self.update_fast_key(&input, &partition, &order)
        } else {
            None
        };
        let changelog = if updating && !drop_update_before {
            ChangelogMode::Retract
        } else {
            ChangelogMode::InsertOnly
        };
        let mut schema = input.fields.clone();
        if updating {
            for f in &mut schema {
                f.rowtime = false;
            }
        }
        let rn_name = w
            .schema
            .fields()
            .last()
            .map(|f| f.name().clone())
            .unwrap_or_else(|| "rn".into());
        schema.push(Field {
            name: rn_name,
            data_type: "BIGINT NOT NULL".into(),
            arrow_type: arrow::datatypes::DataType::Int64.to_string(),
            nullable: false,
            rowtime: false,
        });
        let spec = RankSpec {
            partition: partition.clone(),
            order,
            start: rank.start,
            end: rank.end,
            // Flink computes the number of a single rank (`rn = 2`) as a constant.
            output_rank: output_rank && rank.start != rank.end,
            strategy,
            row_key,
            drop_update_before,
        };
        let (parallelism, partitioning) = if partition.is_empty() {
            (1, Partitioning::Global)
        } else {
            (self.parallelism, Partitioning::Hash(partition))
        };
        let mut node = self.add(
            OperatorKind::Rank(spec),
            parallelism,
            schema,
            changelog,
            &[(&input, partitioning)],
        );
        if node.fields.len() > kept + 1 {
            // Drop the computed sort columns again: the window's own columns and the rank.
            let exprs: Vec<Expr> = node.fields[..kept]
                .iter()
                .chain(node.fields.last())
                .map(|f| Expr::Column(Column::from_name(f.name.clone())))
                .collect();
            node = self.calc(node, None, &exprs, &w.schema)?;
        }
        // The projections between the filter and the window, bottom first.
        for p in rank.chain.iter().rev() {
            let exprs = p
                .expr
                .iter()
                .map(|e| self.rewrite(e, p.input.schema(), &node))
                .collect::<PlanResult<Vec<_>>>()?;
            node = self.calc(node, None, &exprs, &p.schema)?;
        }
        if let Some(residual) = conjunction(rank.residual) {
            let predicate = self.rewrite(&residual, f.input.schema(), &node)?;
            let exprs: Vec<Expr> = node
                .fields
                .iter()
                .map(|fl| Expr::Column(Column::from_name(fl.name.clone())))
                .collect();
            node = self.calc(node, Some(&predicate), &exprs, f.input.schema())?;
        }
        Ok(node)
    }
}

impl GraphBuilder<'_> {
    /// `ORDER BY .. LIMIT` with an `OFFSET` or over an updating input, which Flink runs with
    /// its Top-N functions (no partition, ranks `offset + 1 ..= offset + fetch`, no rank
    /// number): a rank operator, then the rank column dropped (`schema` is the sort's).
    pub(super) fn sort_limit(
        &mut self,
        input: Node,
        order: Vec<SortKey>,
        offset: usize,
        fetch: usize,
        schema: &datafusion::common::DFSchema,
    ) -> PlanResult<Node> {
        let insert_only = input.changelog == ChangelogMode::InsertOnly;
        let row_key = if insert_only {
            None
        } else {
            self.update_fast_key(&input, &[], &order)
        };
        let mut fields = input.fields.clone();
        for f in &mut fields {
            f.rowtime = false;
        }
        let columns: Vec<Expr> = fields
            .iter()
            .map(|f| Expr::Column(Column::from_name(f.name.clone())))
            .collect();
        fields.push(Field {
            name: "$rank".into(),
            data_type: "BIGINT NOT NULL".into(),
            arrow_type: arrow::datatypes::DataType::Int64.to_string(),
            nullable: false,
            rowtime: false,
        });
        let spec = RankSpec {
            partition: Vec::new(),
            order,
            start: offset + 1,
            end: offset + fetch,
            output_rank: false,
            strategy: RankStrategy::TopN,
            row_key,
            drop_update_before: false,
        };
        let node = self.add(
            OperatorKind::Rank(spec),
            1,
            fields,
            ChangelogMode::Retract,
            &[(&input, Partitioning::Global)],
        );
        self.calc(node, None, &columns, schema)
    }

    /// The unique key Flink's update-fast Top-N keys rows by, when `input` allows one: an
    /// unbounded aggregation over an insert-only input, reached through filterless
    /// projections of plain columns, grouped by keys that hold the partition key (empty when
    /// a projection dropped some of them), every sort key a group key or an aggregate that only moves toward the top
    /// (`COUNT` or `MAX` descending, `MIN` ascending; Flink's `SUM` needs a known sign of its
    /// argument, which Riffle does not track). Otherwise Flink runs its retractable Top-N.
    fn update_fast_key(
        &self,
        input: &Node,
        partition: &[usize],
        order: &[SortKey],
    ) -> Option<Vec<usize>> {
        if order.is_empty() {
            return None;
        }
        // What each column of the rank's input is among the current operator's columns.
        let mut columns: Vec<usize> = (0..input.fields.len()).collect();
        let mut op = input.op;
        loop {
            let from = self.edges.iter().find(|e| e.to == op)?;
            match &self.operators.get(op)?.kind {
                OperatorKind::Calc {
                    filter: None,
                    projection,
                } => {
                    let source = &self.operators.get(from.from)?.schema;
                    columns = columns
                        .iter()
                        .map(|c| plain_column(&projection.get(*c)?.sql, source))
                        .collect::<Option<_>>()?;
                    op = from.from;
                }
                OperatorKind::GroupAggregate { keys, aggregates } => {
                    if from.changelog != ChangelogMode::InsertOnly {
                        return None;
                    }
                    let n = keys.len();
                    if !partition.iter().all(|p| columns[*p] < n) {
                        return None;
                    }
                    let toward_top = |key: &SortKey| {
                        let c = columns[key.column];
                        c < n
                            || match aggregates.get(c - n).map(|a| a.function) {
                                Some(AggregateFunction::CountStar)
                                | Some(AggregateFunction::Count)
                                | Some(AggregateFunction::Max) => !key.ascending,
                                Some(AggregateFunction::Min) => key.ascending,
                                _ => false,
                            }
                    };
                    if !order.iter().all(toward_top) {
                        return None;
                    }
                    // Flink keeps the key below the rank even when the query drops it; without
                    // it here, rows are matched by their update-before values.
                    let key: Option<Vec<usize>> = (0..n)
                        .map(|g| columns.iter().position(|c| *c == g))
                        .collect();
                    return Some(key.unwrap_or_default());
                }
                _ => return None,
            }
        }
    }
}

/// The input column a projected expression's SQL names, when it is a plain column reference.
fn plain_column(sql: &str, input: &[Field]) -> Option<usize> {
    let name = sql.trim_matches(|c| c == '"' || c == '`');
    input.iter().position(|f| f.name == name)
}

/// Matches a filter bounding the rank of a single-call ranking window.
fn rank_filter(f: &Filter) -> Option<RankFilter<'_>> {
    let mut chain = Vec::new();
    let mut current = f.input.as_ref();
    let window = loop {
        match current {
            LogicalPlan::SubqueryAlias(a) => current = &a.input,
            LogicalPlan::Projection(p) => {
                chain.push(p);
                current = &p.input;
            }
            LogicalPlan::Window(w) => break w,
            _ => return None,
        }
    };
    let [expr] = window.window_expr.as_slice() else {
        return None;
    };
    let Expr::WindowFunction(wf) = expr.clone().unalias() else {
        return None;
    };
    let function = wf.fun.name().to_ascii_lowercase();
    if !matches!(function.as_str(), "row_number" | "rank" | "dense_rank") {
        return None;
    }
    let rn = window.input.schema().fields().len();
    let is_rank = |e: &Expr| -> bool {
        let e = strip_cast(e);
        let Expr::Column(c) = e else {
            return false;
        };
        f.input
            .schema()
            .index_of_column(c)
            .ok()
            .and_then(|i| trace_column(&chain, i))
            == Some(rn)
    };
    let (mut start, mut end) = (1usize, None::<usize>);
    let mut residual = Vec::new();
    let mut bounded = false;
    for conjunct in split_conjunction(&f.predicate) {
        match rank_bound(conjunct, &is_rank) {
            Some((lo, hi)) => {
                bounded = true;
                start = start.max(lo);
                end = Some(end.map_or(hi, |e| e.min(hi)));
            }
            None => residual.push(conjunct.clone()),
        }
    }
    let end = end.filter(|e| bounded && *e != usize::MAX)?;
    Some(RankFilter {
        window,
        chain,
        function,
        start,
        end,
        residual,
    })
}

/// A `ROW_NUMBER() OVER (PARTITION BY k ORDER BY c) = 1` filter (a deduplication), as the
/// filter's output sees it.
pub(super) struct FirstRow<'a> {
    /// The partition columns among the filter's output columns (a unique key of its rows);
    /// `None` when one of them is not among them.
    pub(super) key: Option<Vec<usize>>,
    /// The single ORDER BY column among the window input's columns.
    pub(super) order: Option<usize>,
    /// The window's input.
    pub(super) input: &'a LogicalPlan,
    /// Projections between the filter and the window, top first.
    chain: Vec<&'a Projection>,
}

impl FirstRow<'_> {
    /// Column `idx` of the window's input among the filter's output columns.
    pub(super) fn output_column(&self, idx: usize) -> Option<usize> {
        let mut idx = idx;
        for p in self.chain.iter().rev() {
            idx = p.expr.iter().position(|e| {
                matches!(e.clone().unalias(), Expr::Column(c)
                    if p.input.schema().index_of_column(&c).ok() == Some(idx))
            })?;
        }
        Some(idx)
    }
}

/// Matches a filter keeping the first `ROW_NUMBER()` of each partition.
pub(super) fn first_row_filter(f: &Filter) -> Option<FirstRow<'_>> {
    let rank = rank_filter(f)?;
    if rank.function != "row_number" || rank.start != 1 || rank.end != 1 {
        return None;
    }
    let Some(Expr::WindowFunction(wf)) =
        rank.window.window_expr.first().map(|e| e.clone().unalias())
    else {
        return None;
    };
    let input = rank.window.input.as_ref();
    let column = |e: &Expr| match e {
        Expr::Column(c) => input.schema().index_of_column(c).ok(),
        _ => None,
    };
    let order = match wf.params.order_by.as_slice() {
        [key] => column(&key.expr),
        _ => None,
    };
    let mut first = FirstRow {
        key: None,
        order,
        input,
        chain: rank.chain,
    };
    first.key = wf
        .params
        .partition_by
        .iter()
        .map(|e| column(e).and_then(|i| first.output_column(i)))
        .collect();
    Some(first)
}

/// The rank range `(start, end)` a conjunct allows, when it compares the rank with a constant.
fn rank_bound(e: &Expr, is_rank: &dyn Fn(&Expr) -> bool) -> Option<(usize, usize)> {
    match e {
        Expr::Between(b) if !b.negated && is_rank(&b.expr) => {
            Some((constant(&b.low)?.max(1), constant(&b.high)?))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (n, op) = if is_rank(left) {
                (constant(right)?, *op)
            } else if is_rank(right) {
                (constant(left)?, op.swap()?)
            } else {
                return None;
            };
            match op {
                Operator::Eq => Some((n.max(1), n)),
                Operator::LtEq => Some((1, n)),
                Operator::Lt => Some((1, n.checked_sub(1)?)),
                Operator::GtEq => Some((n.max(1), usize::MAX)),
                Operator::Gt => Some((n + 1, usize::MAX)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn strip_cast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(c) => strip_cast(&c.expr),
        Expr::TryCast(c) => strip_cast(&c.expr),
        other => other,
    }
}

/// A non-negative integer constant.
fn constant(e: &Expr) -> Option<usize> {
    let Expr::Literal(v, _) = strip_cast(e) else {
        return None;
    };
    let n = match v {
        ScalarValue::Int8(Some(n)) => i64::from(*n),
        ScalarValue::Int16(Some(n)) => i64::from(*n),
        ScalarValue::Int32(Some(n)) => i64::from(*n),
        ScalarValue::Int64(Some(n)) => *n,
        ScalarValue::UInt8(Some(n)) => i64::from(*n),
        ScalarValue::UInt16(Some(n)) => i64::from(*n),
        ScalarValue::UInt32(Some(n)) => i64::from(*n),
        ScalarValue::UInt64(Some(n)) => i64::try_from(*n).ok()?,
        _ => return None,
    };
    usize::try_from(n).ok()
}

/// Follows column `idx` of the chain's top down through plain column references to the
/// window's output.
fn trace_column(chain: &[&Projection], idx: usize) -> Option<usize> {
    let mut idx = idx;
    for p in chain {
        let Expr::Column(c) = p.expr.get(idx)?.clone().unalias() else {
            return None;
        };
        idx = p.input.schema().index_of_column(&c).ok()?;
    }
    Some(idx)
}

/// The index of the `window_end` column when the partition holds both the start and the end of
/// a window (from a window TVF or a window aggregation).
fn window_partition(input: &LogicalPlan, partition: &[usize]) -> Option<usize> {
    let mut start = false;
    let mut end = None;
    for &idx in partition {
        match window_column(input, idx) {
            Some(false) => start = true,
            Some(true) => end = Some(idx),
            None => {}
        }
    }
    end.filter(|_| start)
}

/// Whether column `idx` of `plan` is a window's start (`false`) or end (`true`).
fn window_column(plan: &LogicalPlan, idx: usize) -> Option<bool> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => window_column(&a.input, idx),
        LogicalPlan::Filter(f) => window_column(&f.input, idx),
        LogicalPlan::Projection(p) => match p.expr.get(idx)?.clone().unalias() {
            Expr::Column(c) => window_column(&p.input, p.input.schema().index_of_column(&c).ok()?),
            _ => None,
        },
        LogicalPlan::Extension(ext) => {
            let tvf = ext.node.as_any().downcast_ref::<WindowTvfNode>()?;
            match idx.checked_sub(tvf.input.schema().fields().len()) {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            }
        }
        LogicalPlan::Aggregate(agg) => {
            let keys = window_keys(&agg.input, &agg.group_expr)?;
            if idx == keys.start {
                Some(false)
            } else if idx == keys.end {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether column `idx` of `plan` is a processing-time attribute (`PROCTIME()`).
pub(super) fn is_proctime(catalog: &Catalog, plan: &LogicalPlan, idx: usize) -> bool {
    match plan {
        LogicalPlan::SubqueryAlias(a) => is_proctime(catalog, &a.input, idx),
        LogicalPlan::Filter(f) => is_proctime(catalog, &f.input, idx),
        LogicalPlan::Window(w) => {
            idx < w.input.schema().fields().len() && is_proctime(catalog, &w.input, idx)
        }
        LogicalPlan::Projection(p) => match p.expr.get(idx).map(|e| e.clone().unalias()) {
            Some(Expr::ScalarFunction(f)) => f.func.name().eq_ignore_ascii_case("proctime"),
            Some(Expr::Column(c)) => p
                .input
                .schema()
                .index_of_column(&c)
                .is_ok_and(|i| is_proctime(catalog, &p.input, i)),
            _ => false,
        },
        LogicalPlan::TableScan(scan) => {
            let column = match &scan.projection {
                Some(p) => p.get(idx).copied(),
                None => Some(idx),
            };
            let table = catalog.tables.get(scan.table_name.table());
            match (table, column) {
                (Some(t), Some(i)) => t.columns.get(i).is_some_and(|c| {
                    matches!(&c.computed, Some(sql::Expr::Function(f)) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
                }),
                _ => false,
            }
        }
        _ => false,
    }
}

/// The single-call windows whose rank column a statement uses. Flink prunes unused columns
/// before choosing a rank strategy, so a rank number nobody reads is not emitted; this walks the
/// statement from its output down, tracking which columns each node needs.
#[derive(Debug, Default)]
pub(super) struct RankUsage {
    used: HashSet<Window>,
}

impl RankUsage {
    /// The usage in the statement planned as `plan` (all of whose columns are used).
    pub(super) fn of(plan: &LogicalPlan) -> Self {
        let mut usage = Self::default();
        usage.visit(plan, &(0..plan.schema().fields().len()).collect());
        usage
    }

    /// Whether the rank column of `window` is used.
    fn uses(&self, window: &Window) -> bool {
        self.used.contains(window)
    }

    fn visit(&mut self, plan: &LogicalPlan, required: &BTreeSet<usize>) {
        let all = |p: &LogicalPlan| -> BTreeSet<usize> { (0..p.schema().fields().len()).collect() };
        match plan {
            LogicalPlan::Projection(p) => {
                let mut need = BTreeSet::new();
                for e in required.iter().filter_map(|i| p.expr.get(*i)) {
                    add_refs(e, &p.input, &mut need);
                }
                self.visit(&p.input, &need);
            }
            LogicalPlan::Filter(f) => {
                let mut need = required.clone();
                match rank_filter(f) {
                    Some(rank) => rank
                        .residual
                        .iter()
                        .for_each(|e| add_refs(e, &f.input, &mut need)),
                    None => add_refs(&f.predicate, &f.input, &mut need),
                }
                self.visit(&f.input, &need);
            }
            LogicalPlan::SubqueryAlias(a) => self.visit(&a.input, required),
            LogicalPlan::Limit(l) => self.visit(&l.input, required),
            LogicalPlan::Sort(s) => {
                let mut need = required.clone();
                s.expr
                    .iter()
                    .for_each(|k| add_refs(&k.expr, &s.input, &mut need));
                self.visit(&s.input, &need);
            }
            LogicalPlan::Window(w) => {
                let base = w.input.schema().fields().len();
                if (base..base + w.window_expr.len()).any(|i| required.contains(&i)) {
                    self.used.insert(w.clone());
                }
                let mut need: BTreeSet<usize> =
                    required.iter().copied().filter(|i| *i < base).collect();
                w.window_expr
                    .iter()
                    .for_each(|e| add_refs(e, &w.input, &mut need));
                self.visit(&w.input, &need);
            }
            LogicalPlan::Aggregate(a) => {
                let mut need = BTreeSet::new();
                a.group_expr
                    .iter()
                    .chain(&a.aggr_expr)
                    .for_each(|e| add_refs(e, &a.input, &mut need));
                self.visit(&a.input, &need);
            }
            LogicalPlan::Union(u) => u.inputs.iter().for_each(|i| self.visit(i, required)),
            other => {
                for input in other.inputs() {
                    self.visit(input, &all(input));
                }
            }
        }
    }
}

/// Adds the indices (in `input`) of the columns `e` references.
fn add_refs(e: &Expr, input: &LogicalPlan, need: &mut BTreeSet<usize>) {
    for c in e.column_refs() {
        match input.schema().index_of_column(c) {
            Ok(i) => {
                need.insert(i);
            }
            // An outer reference or an unresolvable name: keep everything.
            Err(_) => need.extend(0..input.schema().fields().len()),
        }
    }
}
