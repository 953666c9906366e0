//! JobGraph description of `MATCH_RECOGNIZE` (Flink's `StreamExecMatch`, which runs Flink's CEP
//! library): rows are matched per partition, in event-time order, against a sequence of pattern
//! variables; every match emits one row of the partition columns and the measures.
//!
//! `DEFINE` conditions and `MEASURES` are SQL expressions over *primitives*: the values a
//! (partial) match provides, such as `LAST(A.price, 1)` or `SUM(A.price)`. The planner replaces
//! each such call with a column `__p<i>` of a per-expression schema, and the runtime computes the
//! primitives of a match, then evaluates the expression over them.

use serde::{Deserialize, Serialize};

use crate::graph::{AggregateFunction, Field, Operator, SortKey};

/// A `MATCH_RECOGNIZE` over one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchSpec {
    /// Partition key columns (`PARTITION BY`); the output starts with them.
    pub partition: Vec<usize>,
    /// The rowtime column the rows are ordered by.
    pub time: usize,
    /// Further `ORDER BY` keys: the order of rows with equal times (arrival order otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<SortKey>,
    /// The pattern variables in order.
    pub pattern: Vec<PatternVariable>,
    /// Where matching resumes after a match.
    pub skip: AfterMatch,
    /// `WITHIN`: a match must end less than this many milliseconds after its first row.
    pub within: Option<i64>,
    /// Columns computed per input row and appended to it (aggregate arguments), SQL over the
    /// input columns; primitives refer to them after the input columns.
    pub row_columns: Vec<String>,
    /// Per pattern variable (same order as `pattern`), its `DEFINE` condition (`None`: every row
    /// matches).
    pub defines: Vec<Option<MatchExpr>>,
    /// The measures, in output order.
    pub measures: Vec<MatchExpr>,
}

/// One variable of the pattern with its quantifier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternVariable {
    /// Variable name as written.
    pub name: String,
    /// Fewest rows.
    pub min: u32,
    /// Most rows (`None`: unbounded).
    pub max: Option<u32>,
    /// Greedy (the default) rather than reluctant (`*?`, `+?`, ...).
    pub greedy: bool,
}

/// `AFTER MATCH SKIP ...`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterMatch {
    /// `PAST LAST ROW`: the next match starts after the last row of this one.
    PastLastRow,
    /// `TO NEXT ROW`: the next match starts after the first row of this one.
    ToNextRow,
    /// `TO FIRST var`: the next match starts at the first row of `var`.
    ToFirst(String),
    /// `TO LAST var`: the next match starts at the last row of `var`.
    ToLast(String),
}

/// An expression over primitives: `sql` reads column `__p<i>` for `primitives[i]`, typed as
/// `fields[i]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchExpr {
    /// SQL text over the primitive columns.
    pub sql: String,
    /// The primitives the expression reads.
    pub primitives: Vec<Primitive>,
    /// The columns holding the primitives (`__p0`, `__p1`, ...), with their types.
    pub fields: Vec<Field>,
}

/// A value a (partial) match provides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Primitive {
    /// A column of one row of a variable: `LAST(A.x, offset)` counts from its last row,
    /// `FIRST(A.x, offset)` from its first. `variable` is an index into the pattern; `None` is
    /// every row of the match. In a `DEFINE` condition the row being classified counts as the
    /// defined variable's last row.
    Navigation {
        /// Pattern variable (`None`: all rows).
        variable: Option<usize>,
        /// Row column (input columns, then `row_columns`).
        column: usize,
        /// Counting from the first row rather than the last.
        from_first: bool,
        /// Rows from that end.
        offset: usize,
    },
    /// An aggregate over the rows of a variable (`None`: all rows).
    Aggregate {
        /// Pattern variable (`None`: all rows).
        variable: Option<usize>,
        /// The aggregate function.
        function: AggregateFunction,
        /// Row column of the argument (`None` for `COUNT(*)`).
        column: Option<usize>,
    },
    /// `MATCH_ROWTIME()`: the time at which the match was emitted.
    MatchRowtime,
}

/// The `explain` line of a `MATCH_RECOGNIZE` operator.
pub(crate) fn describe(op: &Operator, spec: &MatchSpec) -> String {
    let name = |c: usize| {
        op.schema
            .get(c)
            .map_or_else(|| format!("${c}"), |f| f.name.clone())
    };
    let partition: Vec<String> = (0..spec.partition.len()).map(name).collect();
    let measures: Vec<String> = (spec.partition.len()..op.schema.len()).map(name).collect();
    let pattern: Vec<String> = spec
        .pattern
        .iter()
        .map(|v| {
            let q = match (v.min, v.max) {
                (1, Some(1)) => String::new(),
                (0, Some(1)) => "?".to_string(),
                (0, None) => "*".to_string(),
                (1, None) => "+".to_string(),
                (n, Some(m)) if n == m => format!("{{{n}}}"),
                (n, None) => format!("{{{n},}}"),
                (n, Some(m)) => format!("{{{n},{m}}}"),
            };
            let reluctant = if v.greedy || q.is_empty() { "" } else { "?" };
            format!("{}{q}{reluctant}", v.name)
        })
        .collect();
    let skip = match &spec.skip {
        AfterMatch::PastLastRow => "SKIP PAST LAST ROW".to_string(),
        AfterMatch::ToNextRow => "SKIP TO NEXT ROW".to_string(),
        AfterMatch::ToFirst(v) => format!("SKIP TO FIRST {v}"),
        AfterMatch::ToLast(v) => format!("SKIP TO LAST {v}"),
    };
    let within = spec
        .within
        .map(|ms| format!(", within=[{ms} ms]"))
        .unwrap_or_default();
    let further: String = spec
        .order
        .iter()
        .map(|k| {
            format!(
                ", ${} {}",
                k.column,
                if k.ascending { "ASC" } else { "DESC" }
            )
        })
        .collect();
    format!(
        "Match(partitionBy=[{}], orderBy=[${} ASC{further}], measures=[{}], rowsPerMatch=[ONE ROW PER MATCH], after=[{skip}], pattern=[{}]{within})",
        partition.join(", "),
        spec.time,
        measures.join(", "),
        pattern.join(" "),
    )
}
