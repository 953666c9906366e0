//! JobGraph description of `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)` filtered by a rank
//! range: Top-N, deduplication, and their per-window variants.

use serde::{Deserialize, Serialize};

use crate::graph::SortKey;

/// A ranking operator: keeps, per partition key, the rows whose `ROW_NUMBER` lies in
/// `start..=end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankSpec {
    /// Partition key columns.
    pub partition: Vec<usize>,
    /// Sort keys; rows equal in every key rank in arrival order.
    pub order: Vec<SortKey>,
    /// First rank kept (1-based).
    pub start: usize,
    /// Last rank kept.
    pub end: usize,
    /// The row number is appended as the last output column.
    pub output_rank: bool,
    /// How the ranking is computed and emitted.
    pub strategy: RankStrategy,
    /// Flink's update-fast Top-N ([`RankStrategy::TopN`] over an updating input whose unique
    /// key, these columns, holds the partition key and whose sort keys only move toward the
    /// top): an update of a kept row replaces it in place (`-U`/`+U` of that row); empty when
    /// the key is not among the input's columns, then the row an update replaces is the one
    /// its update-before row names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_key: Option<Vec<usize>>,
    /// A Top-1 Flink 2.3 declares insert-only (see `rank_plan`): a better row replaces the
    /// kept one with `+U` alone, no `-U`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_update_before: bool,
}

/// How a [`RankSpec`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankStrategy {
    /// Streaming Top-N (Flink's `AppendOnlyTopNFunction` / `RetractableTopNFunction` /
    /// `UpdatableTopNFunction` / `FastTop1Function`): every change of the kept ranks is emitted
    /// at once; with the row number (or a start above 1) as `-U`/`+U` per changed rank, without
    /// it as `-D` of the rows that left and `+I` of the rows that entered (`-U`/`+U` of a row
    /// updated in place, and of the replaced row of a Top-1 over an insert-only or update-fast
    /// input).
    TopN,
    /// Deduplication on a processing-time order (`ORDER BY proctime ASC|DESC`, `rn = 1`):
    /// keep-first emits a key's first row only; keep-last emits `+I`, then `-U`/`+U` per row.
    ProcTimeDedup {
        /// Keep the last row (descending order).
        keep_last: bool,
    },
    /// Deduplication on event time. Keep-last replaces a key's row by any row at the same or a
    /// later time (`-U`/`+U`); keep-first buffers rows until the watermark passes them and emits
    /// the earliest row of each key once, dropping late rows (insert-only).
    RowTimeDedup {
        /// Keep the last row (descending order).
        keep_last: bool,
        /// The rowtime column.
        time: usize,
    },
    /// Window Top-N / deduplication: the partition includes a window's start and end; each
    /// window's ranks are emitted once (`+I`) when the watermark passes its end, and rows of
    /// windows that already fired are dropped.
    Window {
        /// Index of the `window_end` column.
        window_end: usize,
        /// Rows equal in every sort key rank latest first (window keep-last deduplication).
        latest_first: bool,
    },
}

/// The explain line of a ranking operator.
pub(crate) fn describe(op: &crate::graph::Operator, spec: &RankSpec) -> String {
    let name = |i: usize| {
        op.schema
            .get(i)
            .map_or_else(|| format!("${i}"), |f| f.name.clone())
    };
    let partition: Vec<String> = spec.partition.iter().map(|i| name(*i)).collect();
    let order: Vec<String> = spec
        .order
        .iter()
        .map(|k| {
            let dir = if k.ascending { "ASC" } else { "DESC" };
            format!("{} {dir}", name(k.column))
        })
        .collect();
    let what = match spec.strategy {
        RankStrategy::TopN => "Rank",
        RankStrategy::ProcTimeDedup { .. } => "Deduplicate(proctime)",
        RankStrategy::RowTimeDedup { .. } => "Deduplicate(rowtime)",
        RankStrategy::Window { .. } => "WindowRank",
    };
    format!(
        "{what}(partitionBy=[{}], orderBy=[{}], rank=[{}..{}], rankNumber=[{}])",
        partition.join(", "),
        order.join(", "),
        spec.start,
        spec.end,
        spec.output_rank
    )
}
