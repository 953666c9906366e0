//! The window table-valued functions (`TUMBLE`, `HOP`, `CUMULATE`) as a DataFusion logical node.
//!
//! `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES))` is planned as a
//! [`WindowTvfNode`] over the plan of `t`; it appends `window_start`, `window_end` and
//! `window_time` to the input columns, as Flink's windowing TVFs do.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, TimeUnit};
use datafusion::common::{DFSchema, DFSchemaRef, Result as DfResult};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};

use crate::graph::{SliceTriggers, WindowSpec};

/// Names of the columns a window TVF appends.
pub const WINDOW_COLUMNS: [&str; 3] = ["window_start", "window_end", "window_time"];

/// A window TVF applied to an input relation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WindowTvfNode {
    /// The windowed relation.
    pub input: LogicalPlan,
    /// The window function and its sizes.
    pub spec: WindowSpec,
    /// Index of the time attribute column in the input.
    pub time_column: usize,
    /// `PARTITION BY` columns (input indices) of a session window.
    pub partition_by: Vec<usize>,
    /// The TVF stands for a legacy group window (`GROUP BY TUMBLE(ts, ..)`), which Flink runs
    /// on its older window operator.
    pub legacy: bool,
    schema: DFSchemaRef,
}

impl WindowTvfNode {
    /// Builds the node; `window_time` keeps the time column's type (`TIMESTAMP(3)` or
    /// `TIMESTAMP_LTZ(3)`), `window_start`/`window_end` are `TIMESTAMP(3) NOT NULL`.
    pub fn try_new(
        input: LogicalPlan,
        spec: WindowSpec,
        time_column: usize,
        partition_by: Vec<usize>,
    ) -> DfResult<Self> {
        let time_type = input.schema().field(time_column).data_type().clone();
        let window_time_type = match time_type {
            ArrowType::Timestamp(_, tz) => ArrowType::Timestamp(TimeUnit::Millisecond, tz),
            other => {
                return datafusion::common::plan_err!(
                    "The window function requires the timecol is a time attribute type, but is {other}."
                )
            }
        };
        let ts = ArrowType::Timestamp(TimeUnit::Millisecond, None);
        let extra = DFSchema::from_unqualified_fields(
            vec![
                ArrowField::new(WINDOW_COLUMNS[0], ts.clone(), false),
                ArrowField::new(WINDOW_COLUMNS[1], ts, false),
                ArrowField::new(WINDOW_COLUMNS[2], window_time_type, false),
            ]
            .into(),
            Default::default(),
        )?;
        let mut schema = input.schema().as_ref().clone();
        schema.merge(&extra);
        Ok(Self {
            input,
            spec,
            time_column,
            partition_by,
            legacy: false,
            schema: Arc::new(schema),
        })
    }
}

impl PartialOrd for WindowTvfNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        // Plans are only compared for deduplication; the spec and time column order them.
        (self.time_column, format!("{:?}", self.spec))
            .partial_cmp(&(other.time_column, format!("{:?}", other.spec)))
    }
}

impl UserDefinedLogicalNodeCore for WindowTvfNode {
    fn name(&self) -> &str {
        "WindowTvf"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "WindowTvf: {:?} on column {}",
            self.spec, self.time_column
        )
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> DfResult<Self> {
        match inputs.pop() {
            Some(input) if inputs.is_empty() => Self::try_new(
                input,
                self.spec,
                self.time_column,
                self.partition_by.clone(),
            )
            .map(|node| Self {
                legacy: self.legacy,
                ..node
            }),
            _ => datafusion::common::internal_err!("WindowTvf takes exactly one input"),
        }
    }
}

/// The `(window_start, window_end)` pairs, in milliseconds, of the windows containing `ts`.
pub fn assign_windows(spec: &WindowSpec, ts: i64, out: &mut Vec<(i64, i64)>) {
    out.clear();
    match *spec {
        WindowSpec::Tumble { size, offset } => {
            let start = window_start(ts, offset, size);
            out.push((start, start + size));
        }
        WindowSpec::Hop {
            slide,
            size,
            offset,
        } => {
            let last_start = window_start(ts, offset, slide);
            let mut start = last_start;
            // Windows are emitted oldest first, as Flink's hopping assigner does.
            let mut starts = Vec::new();
            while start > ts - size {
                starts.push(start);
                start -= slide;
            }
            for s in starts.into_iter().rev() {
                out.push((s, s + size));
            }
        }
        WindowSpec::Session { .. } => out.push((ts, ts)),
        WindowSpec::Cumulate { step, size, offset } => {
            let start = window_start(ts, offset, size);
            let last_end = start + size;
            let first_end = window_start(ts, offset, step) + step;
            let mut end = first_end;
            while end <= last_end {
                out.push((start, end));
                end += step;
            }
        }
    }
}

/// The tumbling windows of `length` that slice the windows of `spec` (with its offset), for a
/// window aggregation that shares slices.
pub fn slices_of(spec: &WindowSpec, length: i64) -> WindowSpec {
    let offset = match *spec {
        WindowSpec::Tumble { offset, .. }
        | WindowSpec::Hop { offset, .. }
        | WindowSpec::Cumulate { offset, .. } => offset,
        WindowSpec::Session { .. } => 0,
    };
    WindowSpec::Tumble {
        size: length,
        offset,
    }
}

/// The first instant after `ts` at which a window of `spec` ends (in the same time base as
/// `ts`); `None` for SESSION, whose ends depend on the rows. Processing-time windows fire then.
pub fn next_window_end(spec: &WindowSpec, ts: i64) -> Option<i64> {
    // Window ends lie on a grid: its period and the phase of its points.
    let (period, phase) = match *spec {
        WindowSpec::Tumble { size, offset } => (size, offset),
        WindowSpec::Hop {
            slide,
            size,
            offset,
        } => (slide, offset.wrapping_add(size)),
        WindowSpec::Cumulate { step, offset, .. } => (step, offset),
        WindowSpec::Session { .. } => return None,
    };
    window_start(ts, phase % period, period).checked_add(period)
}

/// The trigger points of Flink's slicing window operator for `spec`: slices of a tumbling
/// window's size, of the greatest common divisor of a hopping window's size and slide, of a
/// cumulating window's step; `None` for session windows, which are not sliced.
pub fn slice_triggers(spec: &WindowSpec) -> Option<SliceTriggers> {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let (length, offset) = match *spec {
        WindowSpec::Tumble { size, offset } => (size, offset),
        WindowSpec::Hop {
            slide,
            size,
            offset,
        } => (gcd(size, slide), offset),
        WindowSpec::Cumulate { step, offset, .. } => (step, offset),
        WindowSpec::Session { .. } => return None,
    };
    Some(SliceTriggers { length, offset })
}

/// The start of the window of `size` (shifted by `offset`) holding `ts` (Flink's
/// `TimeWindow.getWindowStartWithOffset`).
pub fn window_start(ts: i64, offset: i64, size: i64) -> i64 {
    let remainder = (ts - offset) % size;
    if remainder < 0 {
        ts - (remainder + size)
    } else {
        ts - remainder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn the_next_window_end_is_the_first_end_after_the_instant() {
        let tumble = WindowSpec::Tumble {
            size: 10 * MIN,
            offset: MIN,
        };
        assert_eq!(next_window_end(&tumble, 0), Some(MIN));
        assert_eq!(next_window_end(&tumble, MIN), Some(11 * MIN));
        assert_eq!(next_window_end(&tumble, -1), Some(MIN));
        let hop = WindowSpec::Hop {
            slide: 5 * MIN,
            size: 10 * MIN,
            offset: 0,
        };
        assert_eq!(next_window_end(&hop, 7 * MIN), Some(10 * MIN));
        let cumulate = WindowSpec::Cumulate {
            step: 2 * MIN,
            size: 6 * MIN,
            offset: 0,
        };
        assert_eq!(next_window_end(&cumulate, 7 * MIN), Some(8 * MIN));
        // Every end assign_windows gives for an instant is at or after the next end.
        let mut windows = Vec::new();
        for spec in [tumble, hop, cumulate] {
            for ts in [-3 * MIN, 0, 7 * MIN + 5, 59 * MIN] {
                assign_windows(&spec, ts, &mut windows);
                let next = next_window_end(&spec, ts).expect("grid");
                assert!(windows.iter().all(|(_, end)| *end >= next), "{spec:?} {ts}");
                assert!(windows.iter().any(|(_, end)| *end == next), "{spec:?} {ts}");
            }
        }
        assert_eq!(next_window_end(&WindowSpec::Session { gap: MIN }, 0), None);
    }

    #[test]
    fn tumble_hop_cumulate_assign_like_flink() {
        let mut out = Vec::new();
        assign_windows(
            &WindowSpec::Tumble {
                size: 10 * MIN,
                offset: 0,
            },
            13 * MIN,
            &mut out,
        );
        assert_eq!(out, vec![(10 * MIN, 20 * MIN)]);
        assign_windows(
            &WindowSpec::Hop {
                slide: 5 * MIN,
                size: 10 * MIN,
                offset: 0,
            },
            13 * MIN,
            &mut out,
        );
        assert_eq!(out, vec![(5 * MIN, 15 * MIN), (10 * MIN, 20 * MIN)]);
        assign_windows(
            &WindowSpec::Cumulate {
                step: 2 * MIN,
                size: 6 * MIN,
                offset: 0,
            },
            3 * MIN,
            &mut out,
        );
        assert_eq!(out, vec![(0, 4 * MIN), (0, 6 * MIN)]);
        // Negative timestamps and offsets round towards negative infinity.
        assign_windows(
            &WindowSpec::Tumble {
                size: 10,
                offset: 3,
            },
            -1,
            &mut out,
        );
        assert_eq!(out, vec![(-7, 3)]);
    }
}
