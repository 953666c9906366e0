//! JobGraph description of an OVER aggregation (`agg(..) OVER (PARTITION BY .. ORDER BY
//! rowtime ROWS|RANGE BETWEEN .. PRECEDING AND CURRENT ROW)`).

use serde::{Deserialize, Serialize};

use crate::graph::AggregateFunction;

/// An OVER aggregation (Flink's `{RowTime,ProcTime}{Rows,Range}{Bounded,Unbounded}Preceding`
/// functions): on event time rows are buffered per partition until the watermark passes their
/// time, then processed in time order (late rows are dropped); on processing time each row is
/// processed as it arrives. Every row is emitted once with the values of its frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverSpec {
    /// Partition key columns (`PARTITION BY`).
    pub partition: Vec<usize>,
    /// The rowtime column the window is ordered by; `None` for processing time (every row is
    /// processed as it arrives).
    pub time: Option<usize>,
    /// The frame.
    pub frame: OverFrame,
    /// The first `forwarded` input columns are emitted as they are, followed by one column per
    /// call (the other input columns hold call arguments).
    pub forwarded: usize,
    /// The calls, in output order.
    pub calls: Vec<OverCall>,
}

/// The frame of an OVER window; it always ends at the current row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverFrame {
    /// `ROWS` (each row on its own) rather than `RANGE` (rows with equal times see each other).
    pub rows: bool,
    /// How far the frame reaches back: rows for `ROWS`, milliseconds for `RANGE`; `None` for
    /// `UNBOUNDED PRECEDING`.
    pub preceding: Option<i64>,
}

/// What one OVER call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverFunction {
    /// An aggregate over the frame (with retraction when the frame is bounded).
    Aggregate(AggregateFunction),
    /// `ROW_NUMBER()`: the row's position in its partition.
    RowNumber,
    /// `FIRST_VALUE(x)`: the first non-null value in the frame.
    FirstValue,
    /// `LAST_VALUE(x)`: the last non-null value in the frame.
    LastValue,
    /// `LAG(x, offset, default)`: the value `offset` rows before in the partition.
    Lag,
}

/// One call of an OVER aggregation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverCall {
    /// The function.
    pub function: OverFunction,
    /// Input column of the argument (`None` for `COUNT(*)` and `ROW_NUMBER()`).
    pub arg: Option<usize>,
    /// `DISTINCT` was given.
    pub distinct: bool,
    /// `LAG` offset (1 unless given).
    pub offset: usize,
    /// `LAG` default value: an input column (`None`: NULL).
    pub default: Option<usize>,
    /// Output column name.
    pub name: String,
}

/// The explain line of an OVER aggregation.
pub(crate) fn describe(op: &crate::graph::Operator, spec: &OverSpec) -> String {
    let name = |i: usize| {
        op.schema
            .get(i)
            .map_or_else(|| format!("${i}"), |f| f.name.clone())
    };
    let partition: Vec<String> = spec.partition.iter().map(|i| name(*i)).collect();
    let frame = match (spec.frame.rows, spec.frame.preceding) {
        (true, None) => "ROWS UNBOUNDED PRECEDING".to_string(),
        (true, Some(n)) => format!("ROWS {n} PRECEDING"),
        (false, None) => "RANGE UNBOUNDED PRECEDING".to_string(),
        (false, Some(ms)) => format!("RANGE {ms} ms PRECEDING"),
    };
    let calls: Vec<String> = spec
        .calls
        .iter()
        .map(|c| {
            let f = match c.function {
                OverFunction::Aggregate(a) => format!("{a:?}"),
                other => format!("{other:?}"),
            };
            format!("{f} AS {}", c.name)
        })
        .collect();
    let order = spec.time.map_or_else(|| "PROCTIME".to_string(), name);
    format!(
        "OverAggregate(partitionBy=[{}], orderBy=[{order} ASC], frame=[{frame}], select=[{}])",
        partition.join(", "),
        calls.join(", ")
    )
}
