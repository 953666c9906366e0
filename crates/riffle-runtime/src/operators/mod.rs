//! The stream operators: what one subtask does with its input.

/// Implements the checkpoint methods of a stateless operator (defined before the operator modules
/// so they can use it too).
macro_rules! stateless {
    () => {
        fn checkpoint_unsupported(&self) -> Option<String> {
            None
        }

        fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
            Ok(Vec::new())
        }

        fn restore(&mut self, _state: &[u8]) -> Result<(), RuntimeError> {
            Ok(())
        }
    };
}

mod aggregate;
mod correlate;
mod group_store;
mod interval_join;
mod join;
mod keyed;
mod match_nfa;
mod match_recognize;
mod over;
mod rank;
#[cfg(test)]
mod resume;
mod temporal_join;
mod temporal_sort;
mod time_shift;
mod window_join;

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, TimestampMillisecondArray, UInt32Array,
};
use arrow::compute::{cast, concat, filter_record_batch, interleave, take};
use arrow::datatypes::{
    DataType, Field as ArrowField, Schema, SchemaRef, TimeUnit, TimestampMillisecondType,
};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_connectors::{ChangeBatch, RowKind, SinkWriter, SourceReader};
use riffle_plan::window::assign_windows;
use riffle_plan::{
    arrow_schema, Field, FlinkSession, LocalZone, NamedExpr, Operator, OperatorKind, WindowSpec,
};

pub(crate) use aggregate::key_columns;
pub use group_store::StateContext;

use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::task::RuntimeError;

/// Something an operator produces.
#[derive(Debug)]
pub enum Emit {
    /// Rows.
    Data(ChangeBatch),
    /// A watermark to forward.
    Watermark(i64),
}

/// The behaviour of one subtask of a non-source operator.
pub trait StreamOperator: Send {
    /// Handles rows that arrived on input `input`.
    fn process(
        &mut self,
        input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError>;

    /// Notes an advance of the watermark of input `input` alone (the minimum over that input's
    /// channels); called before [`Self::watermark`] sees the combined one. Operators whose
    /// results depend on how far each input has progressed use it.
    fn input_watermark(&mut self, _input: usize, _watermark: i64) {}

    /// Handles an advance of the input watermark (the minimum over all input channels).
    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        out.push(Emit::Watermark(watermark));
        Ok(())
    }

    /// Called once after every input has ended.
    fn end(&mut self, _out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// The wall-clock instant (milliseconds since the epoch) at which the operator next wants
    /// [`Self::processing_time`] called, if any: operators on processing time act on the
    /// clock also while no input arrives.
    fn processing_timer(&self) -> Option<i64> {
        None
    }

    /// Called once the wall clock (`now`) reached [`Self::processing_timer`].
    fn processing_time(&mut self, _now: i64, _out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// Why [`Self::snapshot`] and [`Self::restore`] cannot work for this operator (`None`:
    /// they work); a job with an operator that cannot be checkpointed is refused when
    /// checkpointing is on, with this reason.
    fn checkpoint_unsupported(&self) -> Option<String> {
        Some("its state cannot be checkpointed yet".to_string())
    }

    /// The operator's state at barrier `checkpoint` (empty: no state).
    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        Err(RuntimeError::new("this operator cannot be checkpointed"))
    }

    /// Replaces the (fresh) state with one from [`Self::snapshot`].
    fn restore(&mut self, _state: &[u8]) -> Result<(), RuntimeError> {
        Err(RuntimeError::new("this operator cannot be restored"))
    }

    /// Whether [`Self::snapshot`] writes a keyed snapshot ([`crate::keyed_snapshot`]), which a
    /// restore with another parallelism splits by key group (and merges) before
    /// [`Self::restore`] reads it.
    fn keyed_snapshot(&self) -> bool {
        false
    }
}

/// The schema the runtime builds arrays with: the graph's types, every column nullable (the
/// graph keeps Flink's nullability for display; NOT NULL is not re-checked here).
pub fn runtime_schema(fields: &[Field]) -> Result<SchemaRef, RuntimeError> {
    let schema = arrow_schema(fields)?;
    Ok(Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| ArrowField::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    )))
}

/// An operator reading another's output: how the rows reach it, and the operator.
pub type Consumer<'a> = (&'a riffle_plan::Partitioning, &'a Operator);

/// The columns of `op`'s output that its consumers read (distribute by, filter or compute
/// from), or `None` when one of them may read any column (anything but a Calc).
fn columns_read(
    op: &Operator,
    consumers: &[Consumer<'_>],
    session: &FlinkSession,
) -> Result<Option<Vec<usize>>, RuntimeError> {
    let schema = runtime_schema(&op.schema)?;
    let mut read = Vec::new();
    for (partitioning, consumer) in consumers {
        if let riffle_plan::Partitioning::Hash(keys) = partitioning {
            read.extend_from_slice(keys);
        }
        let OperatorKind::Calc { filter, projection } = &consumer.kind else {
            return Ok(None);
        };
        for sql in filter
            .iter()
            .map(String::as_str)
            .chain(projection.iter().map(|p| p.sql.as_str()))
        {
            let expr = session
                .physical_expr(sql, &schema)
                .map_err(|e| RuntimeError::new(format!("cannot compile `{sql}`: {e}")))?;
            read.extend(collect_columns(&expr).iter().map(|c| c.index()));
        }
    }
    read.sort_unstable();
    read.dedup();
    Ok(Some(read))
}

/// Builds the operator for one subtask of `op` (not sources, values or sinks), whose output
/// goes to `consumers`.
pub fn create(
    op: &Operator,
    inputs: &[&Operator],
    consumers: &[Consumer<'_>],
    session: &FlinkSession,
    state: &StateContext,
) -> Result<Box<dyn StreamOperator>, RuntimeError> {
    let schema = runtime_schema(&op.schema)?;
    let input = match inputs.first() {
        Some(i) => runtime_schema(&i.schema)?,
        None => {
            return Err(RuntimeError::new(format!(
                "operator {} has no input",
                op.id
            )))
        }
    };
    let compile = |sql: &str| -> Result<Arc<dyn PhysicalExpr>, RuntimeError> {
        session
            .physical_expr(sql, &input)
            .map_err(|e| RuntimeError::new(format!("cannot compile `{sql}`: {e}")))
    };
    Ok(match &op.kind {
        OperatorKind::Calc { filter, projection } => Box::new(Calc::new(
            filter.as_deref().map(compile).transpose()?,
            projection
                .iter()
                .map(|NamedExpr { sql, .. }| compile(sql))
                .collect::<Result<_, _>>()?,
            schema,
            &input,
        )?),
        OperatorKind::Expand { projections } => Box::new(Expand {
            projections: projections
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|NamedExpr { sql, .. }| compile(sql))
                        .collect::<Result<_, _>>()
                })
                .collect::<Result<_, _>>()?,
            schema,
        }),
        OperatorKind::WatermarkAssigner {
            rowtime,
            expr,
            interval_ms,
        } => Box::new({
            let expr = compile(expr)?;
            WatermarkAssigner {
                shift: time_shift::TimeShift::recognize(&expr, &input),
                expr,
                rowtime: *rowtime,
                interval: *interval_ms,
                current: 0,
                last: 0,
            }
        }),
        OperatorKind::WindowAssign {
            window,
            time_column,
            processing_time,
            slice,
        } => {
            // Windows over a TIMESTAMP_LTZ time attribute are laid out in the session time zone.
            let ltz = matches!(
                input.fields().get(*time_column).map(|f| f.data_type()),
                Some(DataType::Timestamp(_, Some(_)))
            );
            let zone = session.local_zone();
            let read = columns_read(op, consumers, session)?;
            Box::new(WindowAssign {
                spec: slice.map_or(*window, |length| {
                    riffle_plan::window::slices_of(window, length)
                }),
                time_column: *time_column,
                unread: read.map(|read| {
                    (0..input.fields().len())
                        .map(|c| read.binary_search(&c).is_err())
                        .collect()
                }),
                schema,
                windows: Vec::new(),
                zone: (ltz && !zone.is_utc()).then_some(zone),
                clock: processing_time.then(ProcessingClock::default),
            })
        }
        OperatorKind::WindowAggregate {
            keys,
            window_end,
            aggregates,
            local_bounds,
            flush_points,
            slices,
        } => {
            let clock = window_clock(session, *local_bounds);
            let mut op = aggregate::WindowAggregate::new(
                keys,
                *window_end,
                aggregates,
                &input,
                schema,
                clock,
                *slices,
            )?;
            if let Some(points) = flush_points {
                op = op.buffered(*points);
            }
            Box::new(op)
        }
        OperatorKind::SessionWindowAggregate {
            keys,
            window_start,
            window_end,
            gap,
            aggregates,
            local_bounds,
        } => Box::new(aggregate::SessionWindowAggregate::new(
            keys,
            (*window_start, *window_end),
            *gap,
            aggregates,
            &input,
            schema,
            window_clock(session, *local_bounds),
        )?),
        OperatorKind::GroupAggregate { keys, aggregates } => Box::new(
            aggregate::GroupAggregate::new(keys, aggregates, &input, schema, state)?,
        ),
        OperatorKind::ChangelogNormalize { keys } => {
            rank::changelog_normalize(keys, &input, schema)?
        }
        OperatorKind::Join { .. }
        | OperatorKind::IntervalJoin { .. }
        | OperatorKind::TemporalJoin { .. }
        | OperatorKind::WindowJoin { .. } => create_join(op, inputs, session, schema)?,
        OperatorKind::OverAggregate(spec) => {
            Box::new(over::OverAggregate::new(spec, &input, schema)?)
        }
        OperatorKind::Rank(spec) => rank::create(
            spec,
            &input,
            schema,
            inputs.first().is_some_and(|i| inserts_only(i)),
        )?,
        OperatorKind::MatchRecognize(spec) => Box::new(match_recognize::MatchRecognize::new(
            spec, &input, schema, session,
        )?),
        OperatorKind::Union => Box::new(Union),
        OperatorKind::Correlate(spec) => {
            Box::new(correlate::Correlate::new(spec, &input, schema, session)?)
        }
        OperatorKind::Limit { offset, fetch } => Box::new(Limit {
            skip: *offset,
            left: *fetch,
        }),
        OperatorKind::TopN { order, fetch } => {
            Box::new(aggregate::TopN::new(order, *fetch, &input)?)
        }
        OperatorKind::TemporalSort { time_column, order } => Box::new(
            temporal_sort::TemporalSort::new(*time_column, order, &input)?,
        ),
        OperatorKind::Source { .. } | OperatorKind::Values { .. } | OperatorKind::Sink { .. } => {
            return Err(RuntimeError::new(format!(
                "operator {} is not a stream operator",
                op.id
            )))
        }
    })
}

/// Builds a join operator: its condition is compiled over the left then the right columns.
fn create_join(
    op: &Operator,
    inputs: &[&Operator],
    session: &FlinkSession,
    schema: SchemaRef,
) -> Result<Box<dyn StreamOperator>, RuntimeError> {
    let [left, right] = inputs else {
        return Err(RuntimeError::new(format!(
            "join operator {} needs two inputs",
            op.id
        )));
    };
    let combined = runtime_schema(&riffle_plan::join_fields(&left.schema, &right.schema))?;
    let sides = [
        runtime_schema(&left.schema)?,
        runtime_schema(&right.schema)?,
    ];
    let spec = match &op.kind {
        OperatorKind::Join { spec }
        | OperatorKind::IntervalJoin { spec, .. }
        | OperatorKind::TemporalJoin { spec, .. }
        | OperatorKind::WindowJoin { spec, .. } => spec,
        _ => return Err(RuntimeError::new("not a join operator")),
    };
    let condition = spec
        .condition
        .as_deref()
        .map(|sql| {
            session
                .physical_expr(sql, &combined)
                .map_err(|e| RuntimeError::new(format!("cannot compile `{sql}`: {e}")))
        })
        .transpose()?;
    let inputs = [&sides[0], &sides[1]];
    Ok(match &op.kind {
        OperatorKind::IntervalJoin {
            left_time,
            right_time,
            lower,
            upper,
            ..
        } => Box::new(interval_join::IntervalJoin::new(
            spec,
            interval_join::IntervalBounds {
                times: [*left_time, *right_time],
                lower: *lower,
                upper: *upper,
            },
            condition,
            inputs,
            combined,
            schema,
        )?),
        OperatorKind::TemporalJoin {
            left_time,
            right_time,
            ..
        } => Box::new(temporal_join::TemporalJoin::new(
            spec,
            [*left_time, *right_time],
            condition,
            inputs,
            combined,
            schema,
        )?),
        OperatorKind::WindowJoin {
            left_window_end,
            right_window_end,
            ..
        } => Box::new(window_join::WindowJoin::new(
            spec,
            [*left_window_end, *right_window_end],
            condition,
            inputs,
            combined,
            schema,
        )?),
        _ => Box::new(join::Join::new(
            spec,
            condition,
            inputs,
            [left, right].map(|input| inserts_only(input)),
            combined,
            schema,
        )?),
    })
}

/// Whether `input` emits only insertions (its planned changelog mode is `[I]`).
fn inserts_only(input: &Operator) -> bool {
    input.changelog == riffle_plan::ChangelogMode::InsertOnly
}

/// Evaluates an expression to an array of `rows` values.
fn evaluate(expr: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<ArrayRef, RuntimeError> {
    Ok(expr.evaluate(batch)?.into_array(batch.num_rows())?)
}

/// Keeps the change kinds of the rows selected by `mask`.
fn filter_kinds(kinds: &Option<Arc<[RowKind]>>, mask: &BooleanArray) -> Option<Arc<[RowKind]>> {
    kinds.as_ref().map(|k| {
        k.iter()
            .enumerate()
            .filter(|(i, _)| mask.is_valid(*i) && mask.value(*i))
            .map(|(_, k)| *k)
            .collect()
    })
}

/// The columns of `schema` computed by `projection` over `batch`, cast to the schema's types
/// where an expression's own type differs.
fn project(
    projection: &[Arc<dyn PhysicalExpr>],
    schema: &SchemaRef,
    batch: &RecordBatch,
) -> Result<Vec<ArrayRef>, RuntimeError> {
    projection
        .iter()
        .zip(schema.fields())
        .map(|(expr, field)| of_field_type(evaluate(expr, batch)?, field))
        .collect()
}

/// `array` as the type of the output column `field` (cast when the expression's type differs).
fn of_field_type(array: ArrayRef, field: &ArrowField) -> Result<ArrayRef, RuntimeError> {
    Ok(if array.data_type() == field.data_type() {
        array
    } else {
        cast(&array, field.data_type())?
    })
}

/// Filter + projection.
struct Calc {
    filter: Option<Arc<dyn PhysicalExpr>>,
    projection: Vec<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    /// The input columns the expressions read, when a filter copies rows and some columns
    /// are not read (the expressions then address the narrowed batch).
    narrowed: Option<Vec<usize>>,
    /// Per projection expression, its ROW field accesses evaluated up front (see
    /// [`FieldsFirst`]).
    fields_first: Vec<Option<FieldsFirst>>,
}

/// A projection expression that reads fields of ROW columns, evaluated over a batch of only the
/// columns it reads with those fields extracted first. Taking a field of a ROW column is a view
/// (no copy), while a conditional expression (`CASE`) copies every column of the batch it is
/// given for each branch: the Nexmark `dateTime` column's `CASE` copied the whole `person`,
/// `auction` and `bid` ROWs of every event three times to read one timestamp from each.
struct FieldsFirst {
    /// The input columns the expression reads outside the hoisted field accesses.
    columns: Vec<usize>,
    /// The field accesses, over the input batch.
    fields: Vec<Arc<dyn PhysicalExpr>>,
    /// The schema of `columns` followed by `fields`.
    schema: SchemaRef,
    /// The expression over that batch.
    expr: Arc<dyn PhysicalExpr>,
}

impl FieldsFirst {
    /// Hoists the field accesses of `expr` over `input`, or `None` when it has none (or is one).
    fn new(expr: &Arc<dyn PhysicalExpr>, input: &Schema) -> Result<Option<Self>, RuntimeError> {
        let is_field = |e: &Arc<dyn PhysicalExpr>| -> bool {
            let Some(f) = e.as_ref().downcast_ref::<ScalarFunctionExpr>() else {
                return false;
            };
            f.name() == "get_field"
                && f.args()
                    .first()
                    .is_some_and(|a| matches!(a.data_type(input), Ok(DataType::Struct(_))))
        };
        if is_field(expr) || expr.as_ref().downcast_ref::<Column>().is_some() {
            return Ok(None);
        }
        // The outermost field accesses, and the columns read elsewhere.
        let mut fields: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
        let mut columns: Vec<usize> = Vec::new();
        expr.apply(|e| {
            if is_field(e) {
                if !fields.iter().any(|f| f.as_ref() == e.as_ref()) {
                    fields.push(Arc::clone(e));
                }
                return Ok(TreeNodeRecursion::Jump);
            }
            if let Some(c) = e.as_ref().downcast_ref::<Column>() {
                columns.push(c.index());
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        if fields.is_empty() {
            return Ok(None);
        }
        columns.sort_unstable();
        columns.dedup();
        let rewritten = Arc::clone(expr)
            .transform_down(|e| {
                if let Some(i) = fields.iter().position(|f| f.as_ref() == e.as_ref()) {
                    let name = format!("field{i}");
                    let column = Arc::new(Column::new(&name, columns.len() + i));
                    return Ok(Transformed::new(
                        column as Arc<dyn PhysicalExpr>,
                        true,
                        TreeNodeRecursion::Jump,
                    ));
                }
                let Some(c) = e.as_ref().downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                let index = columns.binary_search(&c.index()).unwrap_or_default();
                Ok(Transformed::yes(
                    Arc::new(Column::new(c.name(), index)) as Arc<dyn PhysicalExpr>
                ))
            })?
            .data;
        let mut schema_fields: Vec<ArrowField> = Vec::with_capacity(columns.len() + fields.len());
        for c in &columns {
            let Some(f) = input.fields().get(*c) else {
                return Err(RuntimeError::new("projection column out of range"));
            };
            schema_fields.push(f.as_ref().clone());
        }
        for (i, f) in fields.iter().enumerate() {
            schema_fields.push(ArrowField::new(
                format!("field{i}"),
                f.data_type(input)?,
                f.nullable(input)?,
            ));
        }
        Ok(Some(Self {
            columns,
            fields,
            schema: Arc::new(Schema::new(schema_fields)),
            expr: rewritten,
        }))
    }

    /// The expression's value over `batch` (a batch of the input).
    fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef, RuntimeError> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for c in &self.columns {
            let Some(column) = batch.columns().get(*c) else {
                return Err(RuntimeError::new("projection column out of range"));
            };
            columns.push(Arc::clone(column));
        }
        for f in &self.fields {
            columns.push(evaluate(f, batch)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let narrow = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        evaluate(&self.expr, &narrow)
    }
}

impl Calc {
    /// A Calc over `input`.
    fn new(
        filter: Option<Arc<dyn PhysicalExpr>>,
        projection: Vec<Arc<dyn PhysicalExpr>>,
        schema: SchemaRef,
        input: &SchemaRef,
    ) -> Result<Self, RuntimeError> {
        let mut calc = Self::narrow(filter, projection, schema, input.fields().len())?;
        // The expressions address the input as narrowed by the filter.
        let input = match &calc.narrowed {
            Some(columns) => Arc::new(input.project(columns)?),
            None => Arc::clone(input),
        };
        calc.fields_first = calc
            .projection
            .iter()
            .map(|e| FieldsFirst::new(e, &input))
            .collect::<Result<_, _>>()?;
        Ok(calc)
    }

    /// A Calc over an input of `width` columns whose filter copies only the columns read.
    fn narrow(
        filter: Option<Arc<dyn PhysicalExpr>>,
        projection: Vec<Arc<dyn PhysicalExpr>>,
        schema: SchemaRef,
        width: usize,
    ) -> Result<Self, RuntimeError> {
        let mut calc = Self {
            filter,
            projection,
            schema,
            narrowed: None,
            fields_first: Vec::new(),
        };
        let Some(filter) = &calc.filter else {
            return Ok(calc);
        };
        let mut used: Vec<usize> = std::iter::once(filter)
            .chain(&calc.projection)
            .flat_map(collect_columns)
            .map(|c| c.index())
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.is_empty() || used.len() >= width {
            return Ok(calc);
        }
        let narrow = |expr: &Arc<dyn PhysicalExpr>| -> Result<Arc<dyn PhysicalExpr>, RuntimeError> {
            Ok(Arc::clone(expr)
                .transform_down(|e| {
                    let Some(column) = e.as_ref().downcast_ref::<Column>() else {
                        return Ok(Transformed::no(e));
                    };
                    let index = used.binary_search(&column.index()).unwrap_or_default();
                    Ok(Transformed::yes(
                        Arc::new(Column::new(column.name(), index)) as Arc<dyn PhysicalExpr>,
                    ))
                })?
                .data)
        };
        calc.filter = calc.filter.as_ref().map(narrow).transpose()?;
        calc.projection = calc
            .projection
            .iter()
            .map(narrow)
            .collect::<Result<_, _>>()?;
        calc.narrowed = Some(used);
        Ok(calc)
    }
}

impl StreamOperator for Calc {
    stateless!();

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let ChangeBatch { batch, kinds } = batch;
        // Rows are copied by the filter: only the columns read are kept.
        let batch = match &self.narrowed {
            Some(columns) => batch.project(columns)?,
            None => batch,
        };
        let (batch, kinds) = match &self.filter {
            Some(f) => {
                let mask = evaluate(f, &batch)?;
                let Some(mask) = mask.as_boolean_opt() else {
                    return Err(RuntimeError::new("filter condition is not boolean"));
                };
                (
                    filter_record_batch(&batch, mask)?,
                    filter_kinds(&kinds, mask),
                )
            }
            None => (batch, kinds),
        };
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut columns = Vec::with_capacity(self.projection.len());
        for ((expr, field), first) in self
            .projection
            .iter()
            .zip(self.schema.fields())
            .zip(&self.fields_first)
        {
            let array = match first {
                Some(first) => first.evaluate(&batch)?,
                None => evaluate(expr, &batch)?,
            };
            columns.push(of_field_type(array, field)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        out.push(Emit::Data(ChangeBatch { batch, kinds }));
        Ok(())
    }
}

/// Each row once per projection, the copies of a row next to each other in projection order (as
/// Flink's Expand emits them, so each grouping set's aggregate sees the rows in arrival order).
struct Expand {
    projections: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    schema: SchemaRef,
}

impl StreamOperator for Expand {
    stateless!();

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let ChangeBatch { batch, kinds } = batch;
        let rows = batch.num_rows();
        if rows == 0 || self.projections.is_empty() {
            return Ok(());
        }
        let copies = self.projections.len();
        let projected: Vec<Vec<ArrayRef>> = self
            .projections
            .iter()
            .map(|p| project(p, &self.schema, &batch))
            .collect::<Result<_, _>>()?;
        let order: Vec<(usize, usize)> = (0..rows)
            .flat_map(|row| (0..copies).map(move |copy| (copy, row)))
            .collect();
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for column in 0..self.schema.fields().len() {
            let sources: Vec<&dyn Array> = projected.iter().map(|p| p[column].as_ref()).collect();
            columns.push(interleave(&sources, &order)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows * copies));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let kinds = kinds.map(|k| {
            k.iter()
                .flat_map(|kind| std::iter::repeat_n(*kind, copies))
                .collect()
        });
        out.push(Emit::Data(ChangeBatch { batch, kinds }));
        Ok(())
    }
}

/// Flink's watermark assigner: per row, the watermark is the maximum of the strategy
/// expression so far (starting at 0); it is emitted whenever it advanced by more than the
/// interval since the last emitted one. Upstream watermarks are ignored except the final one.
struct WatermarkAssigner {
    expr: Arc<dyn PhysicalExpr>,
    /// `expr` as millisecond arithmetic, when it is that simple.
    shift: Option<time_shift::TimeShift>,
    rowtime: usize,
    interval: i64,
    current: i64,
    last: i64,
}

/// Epoch milliseconds of a timestamp array.
fn millis(array: &ArrayRef) -> Result<TimestampMillisecondArray, RuntimeError> {
    let ms = match array.data_type() {
        DataType::Timestamp(TimeUnit::Millisecond, _) => array.clone(),
        _ => cast(array, &DataType::Timestamp(TimeUnit::Millisecond, None))?,
    };
    match ms.as_primitive_opt::<TimestampMillisecondType>() {
        Some(a) => Ok(a.clone()),
        None => Err(RuntimeError::new(format!(
            "expected a timestamp, got {}",
            array.data_type()
        ))),
    }
}

impl StreamOperator for WatermarkAssigner {
    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        if let Some(rowtime) = batch.batch.columns().get(self.rowtime) {
            if rowtime.null_count() > 0 {
                return Err(RuntimeError::new(
                    "RowTime field should not be null, please convert it to a non-null long value.",
                ));
            }
        }
        let marks = match self.shift.and_then(|s| s.evaluate(&batch.batch)) {
            Some(marks) => marks,
            None => millis(&evaluate(&self.expr, &batch.batch)?)?,
        };
        let mut start = 0;
        for row in 0..batch.num_rows() {
            if marks.is_valid(row) {
                self.current = self.current.max(marks.value(row));
            }
            if self.current.saturating_sub(self.last) > self.interval {
                out.push(Emit::Data(slice(&batch, start, row + 1)));
                out.push(Emit::Watermark(self.current));
                self.last = self.current;
                start = row + 1;
            }
        }
        if start < batch.num_rows() {
            out.push(Emit::Data(slice(&batch, start, batch.num_rows())));
        }
        Ok(())
    }

    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    /// Operator-wide state only (no keys): a keyed snapshot, so that a subtask of another
    /// parallelism goes on from the least advanced watermark of the subtasks it replaces.
    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.current);
        w.i64(self.last);
        out.global(w.finish());
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a watermark assigner";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        let globals = snapshot.globals(what, |r| Ok((r.i64()?, r.i64()?)))?;
        self.current = min_time(globals.iter().map(|g| g.0));
        self.last = min_time(globals.iter().map(|g| g.1));
        Ok(())
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        // Forwarded even when a restored snapshot already saw it: downstream watermarks are
        // not part of checkpoints, so a source that ends again must end the stream again.
        if watermark == i64::MAX {
            self.current = i64::MAX;
            out.push(Emit::Watermark(i64::MAX));
        }
        Ok(())
    }
}

/// Rows `[from, to)` of a change batch.
fn slice(batch: &ChangeBatch, from: usize, to: usize) -> ChangeBatch {
    ChangeBatch {
        batch: batch.batch.slice(from, to - from),
        kinds: batch.kinds.as_ref().map(|k| {
            k.get(from..to)
                .map(Arc::from)
                .unwrap_or_else(|| Arc::from(Vec::new()))
        }),
    }
}

/// How the windows of an operator fire (see [`aggregate::WindowClock`]).
fn window_clock(session: &FlinkSession, local_bounds: bool) -> aggregate::WindowClock {
    aggregate::WindowClock(local_bounds.then(|| session.local_zone()))
}

/// Window TVF: one output row per (row, window) with the window's start, end and time.
struct WindowAssign {
    spec: WindowSpec,
    time_column: usize,
    /// Which input columns no consumer reads (`None`: unknown). A row is copied once per
    /// window (five times for q5's HOP); a nullable column nobody reads is passed on as NULLs
    /// instead of being copied.
    unread: Option<Vec<bool>>,
    schema: SchemaRef,
    windows: Vec<(i64, i64)>,
    /// The session time zone the windows are laid out in (TIMESTAMP_LTZ time attributes in a
    /// zone other than UTC): start and end are local date-times, `window_time` the instant of
    /// the window's last local millisecond.
    zone: Option<LocalZone>,
    /// Set for processing-time windows (see [`ProcessingClock`]).
    clock: Option<ProcessingClock>,
}

/// The wall clock of a processing-time window assigner. Rows are assigned by the clock when
/// they pass, and the input's (event-time) watermarks are replaced by the clock's: after each
/// batch, and when a window ends while no rows arrive, the assigner emits `now - 1`, which
/// fires the windows that ended, and no later row can belong to them. The final watermark of a
/// bounded input is not passed on: windows still open then never fire, as in Flink.
#[derive(Debug, Default)]
struct ProcessingClock {
    /// The last watermark emitted (`None`: none yet).
    emitted: Option<i64>,
}

/// How often a processing-time SESSION assigner (whose window ends depend on the rows) moves
/// its watermark while no rows arrive, in milliseconds.
const SESSION_CLOCK_TICK_MS: i64 = 100;

impl WindowAssign {
    /// Emits the clock's watermark `now - 1` when it moved.
    fn clock_watermark(&mut self, now: i64, out: &mut Vec<Emit>) {
        if let Some(clock) = &mut self.clock {
            let watermark = now - 1;
            if clock.emitted.is_none_or(|e| watermark > e) {
                clock.emitted = Some(watermark);
                out.push(Emit::Watermark(watermark));
            }
        }
    }
}

impl StreamOperator for WindowAssign {
    stateless!();

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        // On processing time the clock's watermarks replace the input's.
        if self.clock.is_none() {
            out.push(Emit::Watermark(watermark));
        }
        Ok(())
    }

    fn processing_timer(&self) -> Option<i64> {
        let emitted = self.clock.as_ref()?.emitted?;
        let now = emitted + 1;
        match self.zone {
            Some(zone) => riffle_plan::window::next_window_end(&self.spec, zone.to_local(now))
                .map(|end| zone.to_utc(end)),
            None => riffle_plan::window::next_window_end(&self.spec, now),
        }
        .or(Some(now + SESSION_CLOCK_TICK_MS))
    }

    fn processing_time(&mut self, now: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.clock_watermark(now, out);
        Ok(())
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let Some(time) = batch.batch.columns().get(self.time_column) else {
            return Err(RuntimeError::new("window time column out of range"));
        };
        let time = millis(time)?;
        // Processing time: every row of the batch passes now.
        let now = self.clock.as_ref().map(|_| riffle_plan::now_ms());
        let mut rows = Vec::new();
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for row in 0..batch.num_rows() {
            if now.is_none() && time.is_null(row) {
                continue;
            }
            let t = now.unwrap_or_else(|| time.value(row));
            let t = self.zone.map_or(t, |z| z.to_local(t));
            assign_windows(&self.spec, t, &mut self.windows);
            for (s, e) in &self.windows {
                rows.push(row as u32);
                starts.push(*s);
                ends.push(*e);
            }
        }
        // One window per row (TUMBLE without NULL times) keeps the input's columns as they are.
        let identity = rows.len() == batch.num_rows()
            && rows.iter().enumerate().all(|(i, r)| *r as usize == i);
        let n = rows.len();
        let mut columns = if identity {
            batch.batch.columns().to_vec()
        } else {
            let indices = UInt32Array::from(rows);
            let fields = batch.batch.schema().fields().clone();
            let mut columns = Vec::with_capacity(fields.len() + 3);
            for (i, (column, field)) in batch.batch.columns().iter().zip(fields.iter()).enumerate()
            {
                let unread = self
                    .unread
                    .as_ref()
                    .is_some_and(|u| u.get(i).copied().unwrap_or(false));
                let nullable = field.is_nullable()
                    && self.schema.fields().get(i).is_some_and(|f| f.is_nullable());
                columns.push(if unread && nullable {
                    new_null_array(column.data_type(), n)
                } else {
                    take(column.as_ref(), &indices, None)?
                });
            }
            columns
        };
        let window_time: Vec<i64> = ends
            .iter()
            .map(|e| self.zone.map_or(e - 1, |z| z.to_utc(e - 1)))
            .collect();
        columns.push(Arc::new(TimestampMillisecondArray::from(starts)));
        columns.push(Arc::new(TimestampMillisecondArray::from(ends)));
        let time_type = self
            .schema
            .fields()
            .last()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null);
        columns.push(cast(
            &(Arc::new(TimestampMillisecondArray::from(window_time)) as ArrayRef),
            &time_type,
        )?);
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        out.push(Emit::Data(ChangeBatch::inserts(batch)));
        if let Some(now) = now {
            self.clock_watermark(now, out);
        }
        Ok(())
    }
}

/// `LIMIT`/`OFFSET` on one subtask: skips, then forwards, then drops.
struct Limit {
    skip: usize,
    /// Rows still to forward (`None`: unlimited).
    left: Option<usize>,
}

impl StreamOperator for Limit {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut w = StateWriter::new();
        w.length(self.skip);
        w.bool(self.left.is_some());
        w.length(self.left.unwrap_or(0));
        Ok(w.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let mut r = StateReader::new(state, "a LIMIT");
        self.skip = r.u64()? as usize;
        let limited = r.bool()?;
        let left = r.u64()? as usize;
        self.left = limited.then_some(left);
        Ok(r.finish()?)
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let rows = batch.num_rows();
        let from = self.skip.min(rows);
        self.skip -= from;
        let available = rows - from;
        let take = self.left.map_or(available, |l| l.min(available));
        if let Some(l) = self.left.as_mut() {
            *l -= take;
        }
        if take > 0 {
            out.push(Emit::Data(slice(&batch, from, from + take)));
        }
        Ok(())
    }
}

/// UNION ALL: forwards every input.
struct Union;

impl StreamOperator for Union {
    stateless!();

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        out.push(Emit::Data(batch));
        Ok(())
    }
}

/// Writes rows to a connector sink.
pub struct SinkOperator {
    writer: Box<dyn SinkWriter>,
}

impl SinkOperator {
    /// Wraps an opened sink.
    pub fn new(writer: Box<dyn SinkWriter>) -> Self {
        Self { writer }
    }
}

impl StreamOperator for SinkOperator {
    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        _out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        Ok(self.writer.write(&batch)?)
    }

    fn watermark(&mut self, watermark: i64, _out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        Ok(self.writer.write_watermark(watermark)?)
    }

    fn end(&mut self, _out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        Ok(self.writer.finish()?)
    }

    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    /// The sink's transaction: the coordinator commits it once the checkpoint is complete.
    fn snapshot(&mut self, checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        Ok(self.writer.prepare_commit(checkpoint)?)
    }
}

/// A source emitting constant rows (`VALUES`); only subtask 0 emits them.
pub fn values(
    rows: &[Vec<String>],
    schema: SchemaRef,
    session: &FlinkSession,
    subtask: usize,
) -> Result<Box<dyn SourceReader>, RuntimeError> {
    let empty = Schema::empty();
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(empty.clone()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let runtime = Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| ArrowField::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let mut columns: Vec<Vec<ArrayRef>> = vec![Vec::new(); runtime.fields().len()];
    for row in rows {
        if row.len() != columns.len() {
            return Err(RuntimeError::new(
                "VALUES row has the wrong number of columns",
            ));
        }
        for ((sql, column), field) in row.iter().zip(columns.iter_mut()).zip(runtime.fields()) {
            let expr = session.physical_expr(sql, &empty)?;
            let array = evaluate(&expr, &one_row)?;
            column.push(of_field_type(array, field)?);
        }
    }
    let batch = if subtask == 0 && !rows.is_empty() {
        let mut arrays = Vec::with_capacity(columns.len());
        for column in &columns {
            let refs: Vec<&dyn Array> = column.iter().map(|a| a.as_ref()).collect();
            arrays.push(concat(&refs)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        Some(RecordBatch::try_new_with_options(
            runtime, arrays, &options,
        )?)
    } else {
        None
    };
    Ok(Box::new(ValuesSource { batch }))
}

struct ValuesSource {
    batch: Option<RecordBatch>,
}

impl SourceReader for ValuesSource {
    fn next_batch(&mut self) -> riffle_connectors::Result<Option<RecordBatch>> {
        Ok(self.batch.take())
    }

    fn enable_checkpointing(&mut self) -> bool {
        true
    }

    fn snapshot_position(&mut self, _checkpoint: u64) -> riffle_connectors::Result<Vec<u8>> {
        let mut w = StateWriter::new();
        w.bool(self.batch.is_none());
        Ok(w.finish())
    }

    /// Only subtask 0 emits the rows: its position decides whether they were emitted.
    fn restore_rescaled(&mut self, positions: &[&[u8]]) -> riffle_connectors::Result<()> {
        match positions.first() {
            Some(first) if !first.is_empty() => self.restore_position(first),
            _ => Ok(()),
        }
    }

    fn restore_position(&mut self, position: &[u8]) -> riffle_connectors::Result<()> {
        let mut r = StateReader::new(position, "VALUES");
        if r.bool()? {
            self.batch = None;
        }
        r.finish()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::Literal;

    use super::*;

    /// A filtering Calc copies only the columns its expressions read, with the same result.
    #[test]
    fn a_filtering_calc_reads_only_the_columns_it_needs() {
        use arrow::array::{Int64Array, StringArray};
        let input = Arc::new(Schema::new(vec![
            ArrowField::new("a", DataType::Int64, true),
            ArrowField::new("unused", DataType::Utf8, true),
            ArrowField::new("b", DataType::Int64, true),
        ]));
        let session = FlinkSession::default();
        let compile = |sql: &str| session.physical_expr(sql, &input).unwrap();
        let output = Arc::new(Schema::new(vec![
            ArrowField::new("b", DataType::Int64, true),
            ArrowField::new("sum", DataType::Int64, true),
        ]));
        let mut calc = Calc::new(
            Some(compile("a > 1")),
            vec![compile("b"), compile("a + b")],
            output,
            &input,
        )
        .unwrap();
        assert_eq!(calc.narrowed, Some(vec![0, 2]));
        let batch = RecordBatch::try_new(
            input.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec!["x", "y", "z"])),
                Arc::new(Int64Array::from(vec![10, 20, 30])),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        calc.process(0, ChangeBatch::inserts(batch), &mut out)
            .unwrap();
        let [Emit::Data(result)] = out.as_slice() else {
            panic!("{out:?}");
        };
        let columns: Vec<Vec<i64>> = result
            .batch
            .columns()
            .iter()
            .map(|c| {
                c.as_primitive::<arrow::datatypes::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(columns, [vec![20, 30], vec![22, 33]]);
    }

    /// A `CASE` reading fields of ROW columns is evaluated over those fields only (the ROWs
    /// are not copied per branch), with the same result.
    #[test]
    fn a_case_over_row_fields_reads_only_those_fields() {
        use arrow::array::{Int32Array, Int64Array, StringArray, StructArray};
        let row = |name: &str| {
            let fields = vec![
                ArrowField::new("t", DataType::Int64, true),
                ArrowField::new("extra", DataType::Utf8, true),
            ];
            let array = StructArray::new(
                fields.clone().into(),
                vec![
                    Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
                    Arc::new(StringArray::from(vec!["x", "y", "z"])),
                ],
                None,
            );
            (
                ArrowField::new(name, DataType::Struct(fields.into()), true),
                Arc::new(array) as ArrayRef,
            )
        };
        let ((pf, p), (bf, b)) = (row("p"), row("b"));
        let input = Arc::new(Schema::new(vec![
            ArrowField::new("kind", DataType::Int32, true),
            pf,
            bf,
        ]));
        let session = FlinkSession::default();
        let compile = |sql: &str| session.physical_expr(sql, &input).unwrap();
        let case = compile("CASE WHEN kind = 0 THEN p['t'] ELSE b['t'] + kind END");
        let output = Arc::new(Schema::new(vec![ArrowField::new(
            "t",
            case.data_type(&input).unwrap(),
            true,
        )]));
        let mut calc = Calc::new(None, vec![Arc::clone(&case)], output, &input).unwrap();
        let first = calc.fields_first[0].as_ref().expect("fields first");
        assert_eq!(
            (first.columns.as_slice(), first.fields.len()),
            (&[0][..], 2)
        );
        let batch = RecordBatch::try_new(
            input.clone(),
            vec![Arc::new(Int32Array::from(vec![0, 1, 2])), p, b],
        )
        .unwrap();
        let expected = evaluate(&case, &batch).unwrap();
        let mut out = Vec::new();
        calc.process(0, ChangeBatch::inserts(batch), &mut out)
            .unwrap();
        let [Emit::Data(result)] = out.as_slice() else {
            panic!("{out:?}");
        };
        assert_eq!(result.batch.column(0).as_ref(), expected.as_ref());
    }

    /// A HOP assigner copies each row once per window, except the nullable columns no consumer
    /// reads, which it passes on as NULLs.
    #[test]
    fn a_hop_assigner_copies_only_the_columns_read() {
        use arrow::array::StringArray;
        let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None);
        let input = Arc::new(Schema::new(vec![
            ArrowField::new("t", ts.clone(), false),
            ArrowField::new("unused", DataType::Utf8, true),
            ArrowField::new("used", DataType::Utf8, true),
        ]));
        let mut fields: Vec<ArrowField> =
            input.fields().iter().map(|f| f.as_ref().clone()).collect();
        for name in ["window_start", "window_end", "window_time"] {
            fields.push(ArrowField::new(name, ts.clone(), false));
        }
        let mut assign = WindowAssign {
            spec: WindowSpec::Hop {
                slide: 2,
                size: 4,
                offset: 0,
            },
            time_column: 0,
            unread: Some(vec![false, true, false]),
            schema: Arc::new(Schema::new(fields)),
            windows: Vec::new(),
            zone: None,
            clock: None,
        };
        let batch = RecordBatch::try_new(
            input,
            vec![
                Arc::new(TimestampMillisecondArray::from(vec![1, 2])),
                Arc::new(StringArray::from(vec!["a", "b"])),
                Arc::new(StringArray::from(vec!["x", "y"])),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        assign
            .process(0, ChangeBatch::inserts(batch), &mut out)
            .unwrap();
        let [Emit::Data(result)] = out.as_slice() else {
            panic!("{out:?}");
        };
        let strings = |c: usize| -> Vec<Option<String>> {
            result
                .batch
                .column(c)
                .as_string::<i32>()
                .iter()
                .map(|s| s.map(str::to_string))
                .collect()
        };
        assert_eq!(result.batch.num_rows(), 4);
        assert_eq!(strings(1), [None, None, None, None]);
        let used: Vec<Option<String>> = ["x", "x", "y", "y"].map(|s| Some(s.to_string())).into();
        assert_eq!(strings(2), used);
    }

    /// Rows of `(key, value, time)` or a watermark, fed to both pipelines of
    /// [`sharing_slices_gives_what_every_window_gives`].
    enum Feed {
        Rows(Vec<(i64, i64, i64)>),
        Watermark(i64),
    }

    /// A HOP assigner feeding a window aggregation: with `sliced`, the assigner puts each row into
    /// its slice and the aggregation merges slices; otherwise every window gets the row.
    fn hop_pipeline(sliced: bool, buffered: bool) -> (WindowAssign, aggregate::WindowAggregate) {
        use riffle_plan::{AggregateCall, AggregateFunction, SharedSlices};
        let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None);
        let hop = WindowSpec::Hop {
            slide: 4,
            size: 10,
            offset: 1,
        };
        let slice = riffle_plan::window::slice_triggers(&hop).expect("hop slices");
        let mut fields = vec![
            ArrowField::new("k", DataType::Int64, true),
            ArrowField::new("v", DataType::Int64, true),
            ArrowField::new("t", ts.clone(), true),
        ];
        for name in ["window_start", "window_end", "window_time"] {
            fields.push(ArrowField::new(name, ts.clone(), false));
        }
        let assigned = Arc::new(Schema::new(fields));
        let assign = WindowAssign {
            spec: if sliced {
                riffle_plan::window::slices_of(&hop, slice.length)
            } else {
                hop
            },
            time_column: 2,
            unread: None,
            schema: assigned.clone(),
            windows: Vec::new(),
            zone: None,
            clock: None,
        };
        let call = |function, arg, name: &str| AggregateCall {
            function,
            arg,
            distinct: false,
            filter: None,
            name: name.into(),
            data_type: "BIGINT".into(),
            user: None,
            separator: None,
        };
        let output = Arc::new(Schema::new(vec![
            ArrowField::new("window_start", ts.clone(), false),
            ArrowField::new("k", DataType::Int64, true),
            ArrowField::new("window_end", ts, false),
            ArrowField::new("n", DataType::Int64, false),
            ArrowField::new("s", DataType::Int64, true),
            ArrowField::new("m", DataType::Int64, true),
            ArrowField::new("a", DataType::Int64, true),
        ]));
        let mut aggregate = aggregate::WindowAggregate::new(
            &[3, 0, 4],
            4,
            &[
                call(AggregateFunction::CountStar, None, "n"),
                call(AggregateFunction::Sum, Some(1), "s"),
                call(AggregateFunction::Max, Some(1), "m"),
                call(AggregateFunction::Avg, Some(1), "a"),
            ],
            &assigned,
            output,
            aggregate::WindowClock(None),
            sliced.then_some(SharedSlices {
                window: hop,
                slice: slice.length,
                window_start: 3,
            }),
        )
        .expect("aggregate");
        if buffered {
            aggregate = aggregate.buffered(slice);
        }
        (assign, aggregate)
    }

    /// What a HOP pipeline emits for `feed`: per watermark, the rows it released (sorted: the
    /// order of groups within a window is the hash map's), then the watermark.
    fn hop_output(sliced: bool, buffered: bool, feed: &[Feed]) -> Vec<String> {
        use super::join::tests::lines;
        use arrow::array::Int64Array;
        let (mut assign, mut aggregate) = hop_pipeline(sliced, buffered);
        let input = Arc::new(Schema::new(vec![
            ArrowField::new("k", DataType::Int64, true),
            ArrowField::new("v", DataType::Int64, true),
            ArrowField::new(
                "t",
                DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
                true,
            ),
        ]));
        let mut released = Vec::new();
        let mut pending = Vec::new();
        for step in feed {
            let mut assigned = Vec::new();
            match step {
                Feed::Rows(rows) => {
                    let batch = RecordBatch::try_new(
                        input.clone(),
                        vec![
                            Arc::new(Int64Array::from_iter(rows.iter().map(|r| Some(r.0)))),
                            Arc::new(Int64Array::from_iter(rows.iter().map(|r| Some(r.1)))),
                            Arc::new(TimestampMillisecondArray::from_iter(
                                rows.iter().map(|r| Some(r.2)),
                            )),
                        ],
                    )
                    .expect("batch");
                    assign
                        .process(0, ChangeBatch::inserts(batch), &mut assigned)
                        .expect("assign");
                }
                Feed::Watermark(w) => assign.watermark(*w, &mut assigned).expect("watermark"),
            }
            let mut out = Vec::new();
            for emit in assigned {
                match emit {
                    Emit::Data(batch) => aggregate.process(0, batch, &mut out),
                    Emit::Watermark(w) => aggregate.watermark(w, &mut out),
                }
                .expect("aggregate");
            }
            for line in lines(&out) {
                if line.starts_with("WM") {
                    pending.sort();
                    released.append(&mut pending);
                    released.push(line);
                } else {
                    pending.push(line);
                }
            }
        }
        released
    }

    /// Merging per-slice accumulators gives each window what accumulating the window's rows
    /// gives, late rows (whose first windows fired already) and the slicing buffer included.
    #[test]
    fn sharing_slices_gives_what_every_window_gives() {
        // A small linear congruential generator: rows with times mostly rising, some late.
        let mut seed: u64 = 7;
        let mut next = |bound: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % bound
        };
        let mut feed = Vec::new();
        let mut clock = 0i64;
        for _ in 0..40 {
            let rows: Vec<(i64, i64, i64)> = (0..next(6))
                .map(|_| {
                    let t = clock + next(9) as i64 - 6;
                    (next(4) as i64, next(100) as i64 - 50, t)
                })
                .collect();
            feed.push(Feed::Rows(rows));
            clock += next(5) as i64;
            if next(3) == 0 {
                feed.push(Feed::Watermark(clock - 3));
            }
        }
        feed.push(Feed::Watermark(i64::MAX));
        for buffered in [false, true] {
            let every_window = hop_output(false, buffered, &feed);
            let slices = hop_output(true, buffered, &feed);
            assert!(
                every_window.iter().filter(|l| l.starts_with("+I")).count() > 40,
                "{every_window:?}"
            );
            assert_eq!(slices, every_window, "buffered: {buffered}");
        }
    }

    /// A processing-time assigner puts rows in the wall clock's window, replaces the input's
    /// watermarks by the clock's, and asks to be woken when the current window ends.
    #[test]
    fn a_processing_time_assigner_follows_the_wall_clock() {
        let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None);
        let input = Arc::new(Schema::new(vec![ArrowField::new("pt", ts.clone(), true)]));
        let schema = Arc::new(Schema::new(vec![
            ArrowField::new("pt", ts.clone(), true),
            ArrowField::new("window_start", ts.clone(), true),
            ArrowField::new("window_end", ts.clone(), true),
            ArrowField::new("window_time", ts, true),
        ]));
        let hour = 3_600_000;
        let mut assign = WindowAssign {
            spec: WindowSpec::Tumble {
                size: hour,
                offset: 0,
            },
            time_column: 0,
            unread: None,
            schema,
            windows: Vec::new(),
            zone: None,
            clock: Some(ProcessingClock::default()),
        };
        assert_eq!(assign.processing_timer(), None, "no rows, no timer");
        // The column's (stale) value does not matter: the clock assigns.
        let batch = RecordBatch::try_new(
            input,
            vec![Arc::new(TimestampMillisecondArray::from(vec![
                Some(0),
                None,
            ]))],
        )
        .unwrap();
        let before = riffle_plan::now_ms();
        let mut out = Vec::new();
        assign
            .process(0, ChangeBatch::inserts(batch), &mut out)
            .unwrap();
        let after = riffle_plan::now_ms();
        let [Emit::Data(rows), Emit::Watermark(watermark)] = out.as_slice() else {
            panic!("{out:?}");
        };
        assert_eq!(rows.batch.num_rows(), 2);
        let starts = millis(rows.batch.column(1)).unwrap();
        assert!(starts.value(0) > before - hour && starts.value(0) <= after);
        assert!((before - 1..after).contains(watermark));
        let end = starts.value(0) + hour;
        assert_eq!(assign.processing_timer(), Some(end));
        // Event-time watermarks of the input, the final one included, are not passed on.
        let mut out = Vec::new();
        assign.watermark(i64::MAX, &mut out).unwrap();
        assert!(out.is_empty(), "{out:?}");
        // The timer moves the clock's watermark to the window's last millisecond.
        assign.processing_time(end, &mut out).unwrap();
        assert!(matches!(out.as_slice(), [Emit::Watermark(w)] if *w == end - 1));
        assert_eq!(assign.processing_timer(), Some(end + hour));
    }

    /// A job restored from a checkpoint taken after a source ended must still end its stream:
    /// the operators after the assigner start from no watermark again.
    #[test]
    fn a_restored_watermark_assigner_forwards_the_final_watermark_again() {
        let assigner = || WatermarkAssigner {
            expr: Arc::new(Literal::new(ScalarValue::Null)),
            shift: None,
            rowtime: 0,
            interval: 0,
            current: 0,
            last: 0,
        };
        let mut first = assigner();
        let mut out = Vec::new();
        first.watermark(i64::MAX, &mut out).unwrap();
        let state = first.snapshot(1).unwrap();
        let mut restored = assigner();
        restored.restore(&state).unwrap();
        let mut out = Vec::new();
        restored.watermark(i64::MAX, &mut out).unwrap();
        assert!(matches!(out.as_slice(), [Emit::Watermark(i64::MAX)]));
    }
}
