//! The JobGraph: the serializable seam between planning and running.
//!
//! A [`JobGraph`] is plain data: operators (each with a parallelism, an output schema and the
//! changelog mode of what it emits) and edges (forward, hash on key columns, broadcast). Expressions
//! are stored as SQL text over the operator's input columns and compiled at run time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Identifier of an operator inside one [`JobGraph`] (its index in [`JobGraph::operators`]).
pub type OperatorId = usize;

/// A whole streaming job: every INSERT (or the bare query) of a script, planned together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobGraph {
    /// Operators in topological order (inputs before consumers).
    pub operators: Vec<Operator>,
    /// Data edges between operators.
    pub edges: Vec<Edge>,
    /// Effective configuration (`SET` options over the defaults), e.g. `parallelism.default`.
    pub config: BTreeMap<String, String>,
    /// User-defined functions the job's expressions call (`CREATE FUNCTION`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<crate::udf::UserFunctionSpec>,
}

/// One logical operator; the runtime runs `parallelism` subtasks of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operator {
    /// Index of the operator in the graph.
    pub id: OperatorId,
    /// What the operator does.
    pub kind: OperatorKind,
    /// Number of parallel subtasks.
    pub parallelism: usize,
    /// Columns of the rows the operator emits.
    pub schema: Vec<Field>,
    /// Kinds of change the operator emits.
    pub changelog: ChangelogMode,
}

/// A column of an operator's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// Column name (unique within the schema).
    pub name: String,
    /// Flink type in its summary form (`DECIMAL(10, 2)`, `STRING NOT NULL`, `TIMESTAMP(3)`).
    pub data_type: String,
    /// The Arrow type of the column's arrays (Arrow's own notation, e.g. `Decimal128(10, 2)`).
    pub arrow_type: String,
    /// The column may hold NULL.
    pub nullable: bool,
    /// The column is the event-time attribute (rowtime) of the rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rowtime: bool,
}

/// A data edge from one operator's output to an input of another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// Producing operator.
    pub from: OperatorId,
    /// Consuming operator.
    pub to: OperatorId,
    /// Which input of the consumer this edge feeds (0 for single-input operators).
    pub input: usize,
    /// How rows are distributed over the consumer's subtasks.
    pub partitioning: Partitioning,
    /// Kinds of change that flow over the edge.
    pub changelog: ChangelogMode,
}

/// How rows move from producer subtasks to consumer subtasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Partitioning {
    /// Subtask `i` feeds subtask `i` (same parallelism on both sides).
    Forward,
    /// Round-robin over the consumer's subtasks (parallelism changes without keys).
    Rebalance,
    /// By hash of the given columns of the producer's output.
    Hash(Vec<usize>),
    /// Every row to every consumer subtask.
    Broadcast,
    /// Every row to consumer subtask 0 (global operators).
    Global,
}

/// Which kinds of change a stream carries (Flink's `ChangelogMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangelogMode {
    /// Only `+I`.
    InsertOnly,
    /// `+I`, `+U`, `-D` keyed by a unique key (no update-before).
    Upsert,
    /// `+I`, `-U`, `+U`, `-D`.
    Retract,
}

impl ChangelogMode {
    /// Flink's short notation: `[I]`, `[I,UA,D]`, `[I,UB,UA,D]`.
    pub fn notation(self) -> &'static str {
        match self {
            ChangelogMode::InsertOnly => "[I]",
            ChangelogMode::Upsert => "[I,UA,D]",
            ChangelogMode::Retract => "[I,UB,UA,D]",
        }
    }

    /// The mode of a stream combining `self` and `other` (e.g. a union).
    pub fn merge(self, other: ChangelogMode) -> ChangelogMode {
        match (self, other) {
            (ChangelogMode::InsertOnly, m) | (m, ChangelogMode::InsertOnly) => m,
            (ChangelogMode::Upsert, ChangelogMode::Upsert) => ChangelogMode::Upsert,
            _ => ChangelogMode::Retract,
        }
    }
}

/// A named SQL expression over the operator's input columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedExpr {
    /// Output column name.
    pub name: String,
    /// SQL text of the expression (column names refer to the input schema).
    pub sql: String,
}

/// A connector instance: its identifier and `WITH` options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorSpec {
    /// Name of the table it was declared for.
    pub table: String,
    /// `connector` option (`filesystem`, `datagen`, `print`, `blackhole`, ...).
    pub connector: String,
    /// All `WITH` options, keys as written.
    pub options: BTreeMap<String, String>,
    /// The table's `METADATA` columns, which a source produces next to its physical columns
    /// (the connector checks the keys; connectors without metadata reject them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<MetadataColumn>,
    /// The table's `PRIMARY KEY` columns (empty without one); sinks that support upserts key
    /// their writes by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary_key: Vec<String>,
    /// The table's `PARTITIONED BY` columns (empty when it is not partitioned); connectors
    /// that cannot write partitions refuse a partitioned sink.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partition_keys: Vec<String>,
    /// Of a source: the columns the job reads, set by the planner (`None`: every column). Each
    /// entry is a column name, then the names of the fields leading to a nested field read
    /// whole; a column not listed is not read at all. A connector may skip converting what is
    /// not read where Flink does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_columns: Option<Vec<Vec<String>>>,
}

/// A `name TYPE METADATA [FROM 'key'] [VIRTUAL]` column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataColumn {
    /// Column name.
    pub column: String,
    /// Metadata key (the column name when no `FROM` is given).
    pub key: String,
    /// `VIRTUAL`: read-only, not part of the sink's columns.
    pub is_virtual: bool,
}

/// What an operator does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorKind {
    /// Reads a table's physical columns from a connector.
    Source {
        /// The connector to read.
        connector: ConnectorSpec,
    },
    /// Emits constant rows (`VALUES`), each value an SQL literal expression.
    Values {
        /// Rows of SQL expressions, one per output column.
        rows: Vec<Vec<String>>,
    },
    /// Filters, then projects (stateless).
    Calc {
        /// Rows for which this predicate is not true are dropped.
        filter: Option<String>,
        /// Output columns.
        projection: Vec<NamedExpr>,
    },
    /// Emits every input row once per projection, in projection order (Flink's `Expand`, which
    /// feeds `GROUPING SETS` aggregations one row per grouping set).
    Expand {
        /// Per output copy, its columns (all projections share the operator's schema).
        projections: Vec<Vec<NamedExpr>>,
    },
    /// Assigns watermarks from a rowtime column (Flink's `WatermarkAssigner`).
    WatermarkAssigner {
        /// Index of the rowtime column.
        rowtime: usize,
        /// SQL text of the watermark strategy expression.
        expr: String,
        /// Minimum event-time advance between two emitted watermarks, in milliseconds
        /// (`pipeline.auto-watermark-interval`).
        interval_ms: i64,
    },
    /// Appends `window_start`, `window_end`, `window_time` to every row, once per window the
    /// row belongs to (window table-valued functions TUMBLE, HOP, CUMULATE).
    WindowAssign {
        /// The window function.
        window: WindowSpec,
        /// Index of the time attribute column the windows are computed from.
        time_column: usize,
        /// The time attribute is processing time (`PROCTIME()`): rows are assigned to the
        /// windows of the wall clock when they pass, the input's watermarks are replaced by the
        /// wall clock's, and windows still open when the input ends never fire (as in Flink,
        /// whose pending processing-time timers are dropped at the end of bounded input).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        processing_time: bool,
        /// Set when the window aggregation this feeds shares slices (see
        /// [`SharedSlices`]): each row gets one `window_start`/`window_end`, those of its slice
        /// of this many milliseconds, instead of one row per window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slice: Option<i64>,
    },
    /// Aggregates per key and window; emits each window's rows once the watermark passes its end
    /// and drops rows whose window has already fired.
    WindowAggregate {
        /// Group key columns (they include the window's start and end columns).
        keys: Vec<usize>,
        /// Index of the `window_end` column among the input columns.
        window_end: usize,
        /// Aggregate calls.
        aggregates: Vec<AggregateCall>,
        /// The window bounds are local date-times of a `TIMESTAMP_LTZ` time attribute in the
        /// session time zone (not UTC): a window fires when the watermark passes the instant of
        /// its last local millisecond.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        local_bounds: bool,
        /// Flink's slicing window operator (window TVFs) buffers rows and flushes them into their
        /// windows only when the watermark crosses one of these trigger points (see
        /// `riffle_runtime`'s window aggregation); `None` puts rows into their windows at once,
        /// as the legacy group window operator does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flush_points: Option<SliceTriggers>,
        /// Set when the input carries each row once, in its slice (see [`SharedSlices`]),
        /// rather than once per window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slices: Option<SharedSlices>,
    },
    /// Session windows per key: rows whose times are less than `gap` apart share a window
    /// `[first, last + gap)`; a window fires when the watermark passes its end. The input carries
    /// each row's event time in its `window_start` key column (see [`WindowSpec::Session`]).
    SessionWindowAggregate {
        /// Group key columns (the session key columns plus window start and end).
        keys: Vec<usize>,
        /// Index of the `window_start` column among the input columns.
        window_start: usize,
        /// Index of the `window_end` column among the input columns.
        window_end: usize,
        /// Session gap in milliseconds.
        gap: i64,
        /// Aggregate calls.
        aggregates: Vec<AggregateCall>,
        /// As for [`OperatorKind::WindowAggregate`].
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        local_bounds: bool,
    },
    /// `LIMIT`/`OFFSET` without ordering: forwards rows `offset .. offset + fetch` of its
    /// (single) input, as `+I`.
    Limit {
        /// Rows skipped first.
        offset: usize,
        /// Rows forwarded after the skipped ones (`None`: all).
        fetch: Option<usize>,
    },
    /// `ORDER BY .. LIMIT n` on an append-only stream (Flink's global Top-N): keeps the best
    /// `fetch` rows; a row entering the top emits `-D` of the row it pushes out, then `+I`.
    TopN {
        /// Sort keys: input column, ascending, nulls first.
        order: Vec<SortKey>,
        /// Rows kept.
        fetch: usize,
    },
    /// `ORDER BY` a time attribute (ascending) without `LIMIT`: rows wait until the watermark
    /// passes their time and leave in time order, ties in the order of the further keys.
    TemporalSort {
        /// Input column of the time attribute.
        time_column: usize,
        /// Further sort keys (after the time).
        order: Vec<SortKey>,
    },
    /// OVER aggregation on event time: every row with the values of its frame.
    OverAggregate(crate::over::OverSpec),
    /// `ROW_NUMBER()` filtered by a rank range: Top-N, deduplication, window Top-N.
    Rank(crate::rank::RankSpec),
    /// `MATCH_RECOGNIZE`: pattern matching per partition in event-time order.
    MatchRecognize(crate::match_recognize::MatchSpec),
    /// Normalizes an upsert changelog (or a CDC changelog that may repeat events) into a
    /// retract changelog keyed by the table's primary key (Flink's `ChangelogNormalize`): keeps
    /// the last row per key, drops repeats of it and update-before rows, emits `-U`/`+U` per
    /// change and `-D` of the kept row for a delete.
    ChangelogNormalize {
        /// Primary key columns.
        keys: Vec<usize>,
    },
    /// Unbounded (updating) aggregation per key: emits `+I`, then `-U`/`+U` per change.
    GroupAggregate {
        /// Group key columns.
        keys: Vec<usize>,
        /// Aggregate calls.
        aggregates: Vec<AggregateCall>,
    },
    /// Regular streaming join of input 0 (left) and input 1 (right) on equal keys, holding
    /// every row of both sides (Flink's `StreamingJoinOperator`, and its semi/anti variant).
    Join {
        /// Join type, keys and residual condition.
        spec: JoinSpec,
    },
    /// Interval join on rowtime: rows match when `left_time - right_time` lies within
    /// `[lower, upper]`; rows are dropped once the watermark makes them unmatchable.
    IntervalJoin {
        /// Join type, keys and residual condition (which includes the time bounds).
        spec: JoinSpec,
        /// Index of the left rowtime column among the left columns.
        left_time: usize,
        /// Index of the right rowtime column among the right columns.
        right_time: usize,
        /// Smallest `left_time - right_time` that matches, in milliseconds.
        lower: i64,
        /// Largest `left_time - right_time` that matches, in milliseconds.
        upper: i64,
    },
    /// Event-time temporal join (`FOR SYSTEM_TIME AS OF left.rowtime`): each left row joins
    /// the version of the right (versioned) table valid at its time, once the watermark passes
    /// it. Inner or left join; append-only output.
    TemporalJoin {
        /// Join type (inner or left), keys (including the right side's primary key) and
        /// residual condition.
        spec: JoinSpec,
        /// Index of the left rowtime column among the left columns.
        left_time: usize,
        /// Index of the right rowtime column among the right columns.
        right_time: usize,
    },
    /// Join of two window TVF outputs per window: each window's rows are joined once the
    /// watermark passes its end; rows of windows that already fired are dropped.
    WindowJoin {
        /// Join type, keys (among them window_start and window_end) and residual condition.
        spec: JoinSpec,
        /// Index of `window_end` among the left columns.
        left_window_end: usize,
        /// Index of `window_end` among the right columns.
        right_window_end: usize,
    },
    /// Merges its inputs (UNION ALL); the watermark is the minimum over the inputs.
    Union,
    /// Calls a table function per input row and emits the row joined with each row the
    /// function produced (`UNNEST`, `LATERAL TABLE`), keeping the input row's change kind.
    Correlate(crate::correlate::CorrelateSpec),
    /// Writes to a connector (or, for a bare query, prints to stdout).
    Sink {
        /// The connector to write.
        connector: ConnectorSpec,
    },
}

/// Which rows a join emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinType {
    /// Matching pairs.
    Inner,
    /// Matching pairs, and left rows without a match padded with NULLs.
    Left,
    /// Matching pairs, and right rows without a match padded with NULLs.
    Right,
    /// Matching pairs, and rows of either side without a match padded with NULLs.
    Full,
    /// Left rows that have a match (`IN` / `EXISTS`); only left columns.
    Semi,
    /// Left rows that have no match (`NOT IN` / `NOT EXISTS`); only left columns.
    Anti,
}

impl JoinType {
    /// Rows of the left side without a match are emitted (padded).
    pub fn left_outer(self) -> bool {
        matches!(self, JoinType::Left | JoinType::Full)
    }

    /// Rows of the right side without a match are emitted (padded).
    pub fn right_outer(self) -> bool {
        matches!(self, JoinType::Right | JoinType::Full)
    }

    /// Only the left columns are emitted (semi and anti joins).
    pub fn left_only(self) -> bool {
        matches!(self, JoinType::Semi | JoinType::Anti)
    }
}

/// What every join operator needs: its type, the equal keys and the rest of the condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinSpec {
    /// Join type.
    pub join_type: JoinType,
    /// Key columns of the left input.
    pub left_keys: Vec<usize>,
    /// Key columns of the right input (same length and types as `left_keys`).
    pub right_keys: Vec<usize>,
    /// Per key: NULL equals NULL (`IS NOT DISTINCT FROM`); otherwise a NULL key never matches.
    pub null_safe: Vec<bool>,
    /// SQL text of the residual condition over the columns of [`join_fields`] (left columns,
    /// then right columns).
    pub condition: Option<String>,
}

/// The columns a join condition sees and a (non semi/anti) join emits: the left columns, then
/// the right columns, names made unique by suffixing right names that clash (`id`, `id0`).
pub fn join_fields(left: &[Field], right: &[Field]) -> Vec<Field> {
    let mut names: std::collections::HashSet<String> =
        left.iter().map(|f| f.name.clone()).collect();
    let mut out = left.to_vec();
    for f in right {
        let mut name = f.name.clone();
        let mut n = 0;
        while names.contains(&name) {
            name = format!("{}{n}", f.name);
            n += 1;
        }
        names.insert(name.clone());
        out.push(Field { name, ..f.clone() });
    }
    out
}

/// The trigger points of Flink's slicing window operator: the ends of slices of `length`
/// milliseconds shifted by `offset` (the window's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SliceTriggers {
    /// The slice length in milliseconds.
    pub length: i64,
    /// The window offset in milliseconds.
    pub offset: i64,
}

/// How a window aggregation over hopping windows shares slices, as Flink's slicing window
/// operator does: the window assigner puts each row into its one slice (windows are unions of
/// consecutive slices), the aggregation accumulates per slice and key, and when a window fires
/// it merges the accumulators of the window's slices. A row is accumulated once instead of
/// once per window (five times for Nexmark q5's HOP), and floating-point sums add up slice by
/// slice, in the order Flink adds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SharedSlices {
    /// The windows (a `HOP`).
    pub window: WindowSpec,
    /// The slice length in milliseconds (divides the window's size and slide).
    pub slice: i64,
    /// Index of the `window_start` column among the input columns (a group key).
    pub window_start: usize,
}

/// A window table-valued function with its parameters in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSpec {
    /// `TUMBLE(data, DESCRIPTOR(ts), size [, offset])`
    Tumble {
        /// Window size.
        size: i64,
        /// Window offset.
        offset: i64,
    },
    /// `HOP(data, DESCRIPTOR(ts), slide, size [, offset])`
    Hop {
        /// Distance between window starts.
        slide: i64,
        /// Window size.
        size: i64,
        /// Window offset.
        offset: i64,
    },
    /// `SESSION(data [PARTITION BY k], DESCRIPTOR(ts), gap)`. Sessions depend on other rows, so
    /// the window assigner only marks each row with its event time (as start and end) and the
    /// session window aggregation forms the windows.
    Session {
        /// Gap that closes a session.
        gap: i64,
    },
    /// `CUMULATE(data, DESCRIPTOR(ts), step, size [, offset])`
    Cumulate {
        /// Growth step of the window end.
        step: i64,
        /// Maximum window size.
        size: i64,
        /// Window offset.
        offset: i64,
    },
}

/// The aggregate functions the runtime implements, with Flink's semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AggregateFunction {
    /// `COUNT(*)` / `COUNT(1)`: counts rows.
    CountStar,
    /// `COUNT(x)`: counts non-null values.
    Count,
    /// `SUM(x)`
    Sum,
    /// `MIN(x)`
    Min,
    /// `MAX(x)`
    Max,
    /// `AVG(x)` (integer average for integer inputs, as Flink).
    Avg,
    /// A user-defined aggregate function ([`AggregateCall::user`]).
    User,
    /// `STDDEV_POP(x)`
    StddevPop,
    /// `STDDEV_SAMP(x)`
    StddevSamp,
    /// `VAR_POP(x)`
    VarPop,
    /// `VAR_SAMP(x)`
    VarSamp,
    /// `LISTAGG(x [, separator])`: the non-null values joined in arrival order.
    ListAgg,
    /// `FIRST_VALUE(x)`: the first non-null value.
    FirstValue,
    /// `LAST_VALUE(x)`: the last non-null value.
    LastValue,
    /// `ARRAY_AGG(x)`: the values, NULLs included, in arrival order (NULL for none).
    ArrayAgg,
}

/// One sort key of a [`OperatorKind::TopN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortKey {
    /// Input column.
    pub column: usize,
    /// Ascending order.
    pub ascending: bool,
    /// NULLs sort before other values.
    pub nulls_first: bool,
}

/// One aggregate call of an aggregation operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AggregateCall {
    /// The function.
    pub function: AggregateFunction,
    /// Input column of the argument (`None` for `COUNT(*)`).
    pub arg: Option<usize>,
    /// `DISTINCT` was given.
    pub distinct: bool,
    /// Input column of the `FILTER (WHERE ...)` predicate, if any.
    pub filter: Option<usize>,
    /// Output column name.
    pub name: String,
    /// Flink result type (summary form).
    pub data_type: String,
    /// The user-defined function of an [`AggregateFunction::User`] call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserAggregate>,
    /// `LISTAGG`'s separator (`,` when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
}

/// A call of a user-defined aggregate function (from `CREATE FUNCTION`): a Java
/// `AggregateFunction` or an aggregate of a Rust library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAggregate {
    /// SQL name of the function.
    pub name: String,
    /// `LANGUAGE` of the function (`JAVA` or `RUST`).
    pub language: String,
    /// Java class, or the function's name in a Rust library.
    pub class: String,
    /// Jars to load the class from (a Rust function: its library).
    pub jars: Vec<String>,
    /// Input columns of the arguments.
    pub args: Vec<usize>,
    /// Flink types of the arguments (they choose the `accumulate` overload).
    pub arg_types: Vec<String>,
}

impl JobGraph {
    /// The input edges of `op`, ordered by input index.
    pub fn inputs_of(&self, op: OperatorId) -> Vec<&Edge> {
        let mut edges: Vec<&Edge> = self.edges.iter().filter(|e| e.to == op).collect();
        edges.sort_by_key(|e| e.input);
        edges
    }

    /// The output edges of `op`.
    pub fn outputs_of(&self, op: OperatorId) -> Vec<&Edge> {
        self.edges.iter().filter(|e| e.from == op).collect()
    }
}

impl Field {
    /// A field of the given Arrow type; the Flink type is derived from it.
    pub fn from_arrow(
        name: impl Into<String>,
        data_type: &arrow::datatypes::DataType,
        nullable: bool,
    ) -> Self {
        Field {
            name: name.into(),
            data_type: crate::types::flink_type(data_type, nullable),
            arrow_type: data_type.to_string(),
            nullable,
            rowtime: false,
        }
    }

    /// The Arrow type of the column.
    pub fn arrow(&self) -> Result<arrow::datatypes::DataType, arrow::error::ArrowError> {
        self.arrow_type.parse()
    }
}

/// The Arrow schema of a list of JobGraph fields.
pub fn arrow_schema(
    fields: &[Field],
) -> Result<arrow::datatypes::Schema, arrow::error::ArrowError> {
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        out.push(arrow::datatypes::Field::new(
            f.name.clone(),
            f.arrow()?,
            f.nullable,
        ));
    }
    Ok(arrow::datatypes::Schema::new(out))
}
