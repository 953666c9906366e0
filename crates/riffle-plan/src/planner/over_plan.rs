//! Planning of OVER aggregations (`LogicalPlan::Window`) into [`OverSpec`] operators, with
//! Flink's restrictions: one window per query block, ordered ascending by a time attribute,
//! frames ending at the current row.

use arrow::datatypes::DataType as ArrowType;
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::{Expr, LogicalPlan, WindowFrameBound, WindowFrameUnits};

use super::{
    aggregate_type, df_error, interval_ms, names_schema, plan_error, unsupported, GraphBuilder,
    Node, PlanResult, UniqueNames,
};
use crate::graph::{AggregateFunction, ChangelogMode, Field, OperatorKind, Partitioning};
use crate::over::{OverCall, OverFrame, OverFunction, OverSpec};

/// Flink's message when the calls of one SELECT use different windows.
const SAME_WINDOW: &str = "Over Agg: Unsupported use of OVER windows. All aggregates must be \
     computed on the same window. please re-check the over window statement.";

/// One call as found in the plan, before its arguments are projected.
struct PendingCall<'a> {
    function: OverFunction,
    args: &'a [Expr],
    distinct: bool,
    name: String,
}

impl GraphBuilder<'_> {
    /// An OVER aggregation: the input's columns followed by one column per window call.
    pub(super) fn over(&mut self, window: &datafusion::logical_expr::Window) -> PlanResult<Node> {
        let span = self.span;
        if matches!(window.input.as_ref(), LogicalPlan::Window(_)) {
            return Err(plan_error(SAME_WINDOW, span));
        }
        let base = window.input.schema().fields().len();
        let mut calls = Vec::new();
        let mut shape: Option<&WindowFunctionParams> = None;
        let mut frame_params: Option<&WindowFunctionParams> = None;
        for (i, expr) in window.window_expr.iter().enumerate() {
            let wf: &WindowFunction = match expr {
                Expr::WindowFunction(w) => w,
                Expr::Alias(a) => match a.expr.as_ref() {
                    Expr::WindowFunction(w) => w,
                    _ => return Err(unsupported(format!("window expression {expr}"), span)),
                },
                _ => return Err(unsupported(format!("window expression {expr}"), span)),
            };
            let name = window.schema.field(base + i).name().clone();
            let function = over_function(wf.fun.name(), span)?;
            let params = &wf.params;
            if params.filter.is_some() {
                return Err(unsupported("FILTER in an OVER aggregation", span));
            }
            if params.null_treatment.is_some() {
                return Err(unsupported(
                    "IGNORE NULLS / RESPECT NULLS in an OVER aggregation",
                    span,
                ));
            }
            match shape {
                None => shape = Some(params),
                Some(s)
                    if s.partition_by != params.partition_by || s.order_by != params.order_by =>
                {
                    return Err(plan_error(SAME_WINDOW, span))
                }
                Some(_) => {}
            }
            if frame_dependent(function) {
                match frame_params {
                    None => frame_params = Some(params),
                    Some(f) if f.window_frame != params.window_frame => {
                        return Err(plan_error(SAME_WINDOW, span))
                    }
                    Some(_) => {}
                }
            }
            calls.push(PendingCall {
                function,
                args: &params.args,
                distinct: params.distinct,
                name,
            });
        }
        let Some(shape) = shape else {
            return Err(plan_error("OVER aggregation without calls", span));
        };
        let input = self.translate(&window.input)?;
        if input.changelog != ChangelogMode::InsertOnly {
            return Err(unsupported(
                "OVER aggregation over an updating stream",
                span,
            ));
        }
        let mut frame = match frame_params {
            Some(p) => frame_of(&p.window_frame, span)?,
            None => OverFrame {
                rows: true,
                preceding: None,
            },
        };
        let time = self.over_order(window, shape, &input, frame)?;
        if time.is_none() {
            if !frame.rows && frame.preceding.is_some() {
                return Err(unsupported(
                    "bounded RANGE OVER windows on processing time",
                    span,
                ));
            }
            // On processing time rows arrive one by one: an unbounded RANGE frame is a ROWS one.
            frame.rows = true;
        }
        let in_schema = window.input.schema();
        // Pre-projection: the input's columns, then the PARTITION BY expressions that are not
        // columns, then every call's argument (and LAG default).
        let forwarded = input.fields.len();
        let mut pre: Vec<Expr> = input
            .fields
            .iter()
            .map(|f| Expr::Column(Column::from_name(f.name.clone())))
            .collect();
        let mut pre_names: Vec<String> = input.fields.iter().map(|f| f.name.clone()).collect();
        let mut partition = Vec::new();
        for (k, e) in shape.partition_by.iter().enumerate() {
            if let Expr::Column(c) = e {
                partition.push(
                    in_schema
                        .index_of_column(c)
                        .map_err(|e| df_error(e, span))?,
                );
            } else {
                pre.push(self.rewrite(e, in_schema, &input)?);
                pre_names.push(format!("$partition{k}"));
                partition.push(pre.len() - 1);
            }
        }
        let mut over_calls = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let mut arg_column = |e: &Expr, what: &str| -> PlanResult<usize> {
                pre.push(self.rewrite(e, in_schema, &input)?);
                pre_names.push(format!("${what}{i}"));
                Ok(pre.len() - 1)
            };
            let (arg, offset, default) = match (call.function, call.args) {
                (OverFunction::RowNumber, []) => (None, 1, None),
                (OverFunction::Aggregate(AggregateFunction::Count), []) => (None, 1, None),
                (OverFunction::Aggregate(AggregateFunction::Count), [Expr::Literal(v, _)])
                    if !v.is_null() =>
                {
                    (None, 1, None)
                }
                (OverFunction::Lag, [arg, rest @ ..]) if rest.len() <= 2 => {
                    let arg = arg_column(arg, "arg")?;
                    let offset = match rest.first() {
                        None => 1,
                        Some(e) => {
                            let n = constant_offset(e).ok_or_else(|| {
                                unsupported("LAG with a non-constant offset", span)
                            })?;
                            usize::try_from(n).map_err(|_| {
                                plan_error(format!("Offset({n}) should be positive."), span)
                            })?
                        }
                    };
                    let default = rest.get(1).map(|d| arg_column(d, "default")).transpose()?;
                    (Some(arg), offset, default)
                }
                (f, [arg]) if f != OverFunction::RowNumber && f != OverFunction::Lag => {
                    (Some(arg_column(arg, "arg")?), 1, None)
                }
                _ => {
                    return Err(unsupported(
                        format!("{} with these arguments", call.name),
                        span,
                    ))
                }
            };
            let function = match (call.function, arg) {
                (OverFunction::Aggregate(AggregateFunction::Count), None) => {
                    OverFunction::Aggregate(AggregateFunction::CountStar)
                }
                (f, _) => f,
            };
            over_calls.push(OverCall {
                function,
                arg,
                distinct: call.distinct,
                offset,
                default,
                name: call.name.clone(),
            });
        }
        let pre_schema = names_schema(&pre_names, span)?;
        let projected = self.calc(input, None, &pre, &pre_schema)?;
        let mut names = UniqueNames::default();
        let mut schema: Vec<Field> = projected.fields[..forwarded]
            .iter()
            .map(|f| {
                names.unique(&f.name);
                f.clone()
            })
            .collect();
        for call in &over_calls {
            // Flink's LAG needs a default of the value's runtime class (DATE and INT share one).
            let class = |i: Option<usize>| {
                i.and_then(|i| projected.fields.get(i))
                    .map(|f| internal_class(&f.data_type))
            };
            if let (Some(value), Some(default)) = (class(call.arg), class(call.default)) {
                if default != "NULL" && value != default {
                    return Err(plan_error(
                        format!(
                            "Please explicitly cast default value of {} to the value's type.",
                            call.name
                        ),
                        span,
                    ));
                }
            }
        }
        for call in &mut over_calls {
            call.name = names.unique(&call.name);
            let arg = call.arg.and_then(|a| projected.fields.get(a));
            schema.push(call_field(call, arg).map_err(|m| unsupported(m, span))?);
        }
        let spec = OverSpec {
            partition: partition.clone(),
            time,
            frame,
            forwarded,
            calls: over_calls,
        };
        let (parallelism, partitioning) = if partition.is_empty() {
            (1, Partitioning::Global)
        } else {
            (self.parallelism, Partitioning::Hash(partition))
        };
        Ok(self.add(
            OperatorKind::OverAggregate(spec),
            parallelism,
            schema,
            ChangelogMode::InsertOnly,
            &[(&projected, partitioning)],
        ))
    }

    /// The time attribute a window is ordered by (`None`: processing time), or Flink's rejection
    /// of its ordering.
    fn over_order(
        &self,
        window: &datafusion::logical_expr::Window,
        params: &WindowFunctionParams,
        input: &Node,
        frame: OverFrame,
    ) -> PlanResult<Option<usize>> {
        let span = self.span;
        let [key] = params.order_by.as_slice() else {
            return Err(if params.order_by.is_empty() {
                unsupported("OVER window without ORDER BY", span)
            } else {
                plan_error(
                    "The window can only be ordered by a single time column.",
                    span,
                )
            });
        };
        let Expr::Column(c) = &key.expr else {
            return Err(unsupported("OVER window ordered by an expression", span));
        };
        let idx = window
            .input
            .schema()
            .index_of_column(c)
            .map_err(|e| df_error(e, span))?;
        let rowtime = input.fields.get(idx).is_some_and(|f| f.rowtime);
        let proctime = !rowtime && super::rank_plan::is_proctime(self.catalog, &window.input, idx);
        if !rowtime && !proctime {
            if frame.preceding.is_some() {
                return Err(plan_error(
                    "Non-time attribute sort is not supported for bounded OVER window.",
                    span,
                ));
            }
            return Err(unsupported(
                "OVER windows ordered by a non-time attribute",
                span,
            ));
        }
        if !key.asc {
            return Err(plan_error(
                "The window can only be ordered in ASCENDING mode.",
                span,
            ));
        }
        Ok(rowtime.then_some(idx))
    }
}

/// The OVER function a DataFusion window or aggregate function name stands for.
fn over_function(name: &str, span: riffle_sql::Span) -> PlanResult<OverFunction> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "count" => OverFunction::Aggregate(AggregateFunction::Count),
        "sum" => OverFunction::Aggregate(AggregateFunction::Sum),
        "min" => OverFunction::Aggregate(AggregateFunction::Min),
        "max" => OverFunction::Aggregate(AggregateFunction::Max),
        "avg" => OverFunction::Aggregate(AggregateFunction::Avg),
        "row_number" => OverFunction::RowNumber,
        "first_value" => OverFunction::FirstValue,
        "last_value" => OverFunction::LastValue,
        "lag" => OverFunction::Lag,
        // Flink has these only in batch mode.
        "lead" | "ntile" | "percent_rank" | "cume_dist" => {
            return Err(plan_error(
                format!(
                    "{} Function is not supported in stream mode.",
                    name.to_ascii_uppercase()
                ),
                span,
            ))
        }
        other => {
            return Err(unsupported(
                format!("{} in an OVER window", other.to_ascii_uppercase()),
                span,
            ))
        }
    })
}

/// Whether a call's value depends on the frame (ROW_NUMBER and LAG look at the partition).
fn frame_dependent(function: OverFunction) -> bool {
    !matches!(function, OverFunction::RowNumber | OverFunction::Lag)
}

/// The frame of a window, or Flink's rejection of it.
fn frame_of(
    frame: &datafusion::logical_expr::WindowFrame,
    span: riffle_sql::Span,
) -> PlanResult<OverFrame> {
    if !matches!(frame.end_bound, WindowFrameBound::CurrentRow) {
        return Err(plan_error(
            "OVER RANGE FOLLOWING windows are not supported yet.",
            span,
        ));
    }
    let rows = match frame.units {
        WindowFrameUnits::Rows => true,
        WindowFrameUnits::Range => false,
        WindowFrameUnits::Groups => return Err(unsupported("GROUPS frames", span)),
    };
    let preceding = match &frame.start_bound {
        WindowFrameBound::CurrentRow => Some(0),
        WindowFrameBound::Following(_) => {
            return Err(plan_error(
                "OVER RANGE FOLLOWING windows are not supported yet.",
                span,
            ))
        }
        WindowFrameBound::Preceding(v) if v.is_null() => None,
        WindowFrameBound::Preceding(v) if rows => Some(
            constant_offset(&Expr::Literal(v.clone(), None))
                .filter(|n| *n >= 0)
                .ok_or_else(|| unsupported(format!("ROWS frame offset {v}"), span))?,
        ),
        WindowFrameBound::Preceding(v) => {
            Some(interval_ms(Expr::Literal(v.clone(), None)).map_err(|e| df_error(e, span))?)
        }
    };
    Ok(OverFrame { rows, preceding })
}

/// A non-negative integer constant.
fn constant_offset(e: &Expr) -> Option<i64> {
    let e = match e {
        Expr::Cast(c) => c.expr.as_ref(),
        other => other,
    };
    match e {
        // `LAG(v, -1)`: a negated literal.
        Expr::Negative(inner) => constant_offset(inner).map(|n| -n),
        Expr::Literal(v, _) => match v {
            ScalarValue::Int8(Some(n)) => Some(i64::from(*n)),
            ScalarValue::Int16(Some(n)) => Some(i64::from(*n)),
            ScalarValue::Int32(Some(n)) => Some(i64::from(*n)),
            ScalarValue::Int64(Some(n)) => Some(*n),
            ScalarValue::UInt8(Some(n)) => Some(i64::from(*n)),
            ScalarValue::UInt16(Some(n)) => Some(i64::from(*n)),
            ScalarValue::UInt32(Some(n)) => Some(i64::from(*n)),
            ScalarValue::UInt64(Some(n)) => i64::try_from(*n).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The output column of a call.
fn call_field(call: &OverCall, arg: Option<&Field>) -> Result<Field, String> {
    let (flink, arrow, nullable) = match call.function {
        OverFunction::Aggregate(f) => aggregate_type(f, arg)?,
        OverFunction::RowNumber => ("BIGINT NOT NULL".into(), ArrowType::Int64, false),
        OverFunction::FirstValue | OverFunction::LastValue | OverFunction::Lag => {
            let Some(arg) = arg else {
                return Err(format!("{} without argument", call.name));
            };
            let t = arg.arrow().map_err(|e| e.to_string())?;
            let base = arg.data_type.trim_end_matches(" NOT NULL").to_string();
            (base, t, true)
        }
    };
    Ok(Field {
        name: call.name.clone(),
        data_type: flink,
        arrow_type: arrow.to_string(),
        nullable,
        rowtime: false,
    })
}

/// The Java class Flink holds a value of `flink_type` (a summary type) in at runtime.
fn internal_class(flink_type: &str) -> &'static str {
    let t = flink_type.trim_end_matches(" NOT NULL");
    let root = t.split(['(', '<', ' ']).next().unwrap_or(t);
    match root {
        "TINYINT" => "Byte",
        "SMALLINT" => "Short",
        "INT" | "INTEGER" | "DATE" | "TIME" => "Integer",
        "INTERVAL" if t.contains("MONTH") => "Integer",
        "BIGINT" | "INTERVAL" => "Long",
        "FLOAT" => "Float",
        "DOUBLE" => "Double",
        "DECIMAL" => "DecimalData",
        "CHAR" | "VARCHAR" | "STRING" => "StringData",
        "BOOLEAN" => "Boolean",
        "BINARY" | "VARBINARY" | "BYTES" => "byte[]",
        "TIMESTAMP" | "TIMESTAMP_LTZ" => "TimestampData",
        "NULL" => "NULL",
        _ => "other",
    }
}
