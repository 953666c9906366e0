//! Planning of OVER aggregations, Top-N, deduplication and window Top-N: the strategy Flink
//! would choose, the changelog it emits, and Flink's rejections.

use riffle_plan::over::OverSpec;
use riffle_plan::rank::{RankSpec, RankStrategy};
use riffle_plan::{explain, plan_sql, ChangelogMode, JobGraph, OperatorKind, PLAN_ERROR};

const EVENTS: &str = "CREATE TABLE ev (
  ts TIMESTAMP(3),
  k STRING,
  v INT,
  pt AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/ev.csv', 'format' = 'csv');
";

fn plan(query: &str) -> JobGraph {
    plan_sql(&format!("{EVENTS}{query}")).unwrap_or_else(|d| panic!("does not plan: {d:?}"))
}

/// The single rank operator of a plan, with the changelog it emits.
fn rank(query: &str) -> (RankSpec, ChangelogMode) {
    let graph = plan(query);
    let found = graph.operators.iter().find_map(|op| match &op.kind {
        OperatorKind::Rank(spec) => Some((spec.clone(), op.changelog)),
        _ => None,
    });
    found.unwrap_or_else(|| panic!("no rank in {}", explain::to_text(&graph)))
}

fn over(query: &str) -> OverSpec {
    let graph = plan(query);
    let found = graph.operators.iter().find_map(|op| match &op.kind {
        OperatorKind::OverAggregate(spec) => Some(spec.clone()),
        _ => None,
    });
    found.unwrap_or_else(|| panic!("no OVER aggregation in {}", explain::to_text(&graph)))
}

fn error(query: &str) -> String {
    match plan_sql(&format!("{EVENTS}{query}")) {
        Ok(_) => panic!("planned: {query}"),
        Err(d) => {
            assert_eq!(d[0].code, PLAN_ERROR, "{d:?}");
            d[0].message.clone()
        }
    }
}

#[test]
fn top_n_outputs_the_rank_number_only_when_the_query_reads_it() {
    let (spec, mode) = rank(
        "SELECT k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM ev) WHERE rn <= 3;",
    );
    assert_eq!((spec.start, spec.end, spec.output_rank), (1, 3, true));
    assert_eq!(spec.strategy, RankStrategy::TopN);
    assert_eq!(mode, ChangelogMode::Retract);
    // Read by an outer query only through `*` that a later projection drops: pruned.
    let (spec, _) = rank(
        "SELECT k FROM (SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM ev) WHERE rn BETWEEN 2 AND 4);",
    );
    assert_eq!((spec.start, spec.end, spec.output_rank), (2, 4, false));
}

#[test]
fn first_row_by_a_time_attribute_is_a_deduplication() {
    let (spec, mode) = rank(
        "SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM ev) WHERE rn = 1;",
    );
    assert_eq!(
        spec.strategy,
        RankStrategy::RowTimeDedup {
            keep_last: false,
            time: 0
        }
    );
    assert_eq!(mode, ChangelogMode::InsertOnly);
    let (spec, mode) = rank(
        "SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt DESC) AS rn FROM ev) WHERE rn < 2;",
    );
    assert_eq!(
        spec.strategy,
        RankStrategy::ProcTimeDedup { keep_last: true }
    );
    assert_eq!(mode, ChangelogMode::Retract);
}

#[test]
fn ranking_per_window_fires_with_the_window() {
    let (spec, mode) = rank(
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY v DESC) AS rn
         FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) WHERE rn <= 2;",
    );
    assert!(matches!(
        spec.strategy,
        RankStrategy::Window {
            latest_first: false,
            ..
        }
    ));
    assert_eq!(mode, ChangelogMode::InsertOnly);
}

#[test]
fn over_frames_and_time_attributes() {
    let spec = over(
        "SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW) FROM ev;",
    );
    assert_eq!(
        (spec.time, spec.frame.rows, spec.frame.preceding),
        (Some(0), false, Some(60_000))
    );
    let spec = over("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY pt) FROM ev;");
    assert_eq!(
        (spec.time, spec.frame.rows, spec.frame.preceding),
        (None, true, None)
    );
}

#[test]
fn flink_rejections() {
    assert_eq!(
        error("SELECT * FROM (SELECT *, RANK() OVER (PARTITION BY k ORDER BY v) AS r FROM ev) WHERE r <= 2;"),
        "RANK() on streaming table is not supported currently"
    );
    assert_eq!(
        error("SELECT SUM(v) OVER (PARTITION BY k ORDER BY v ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ev;"),
        "Non-time attribute sort is not supported for bounded OVER window."
    );
    assert_eq!(
        error("SELECT SUM(v) OVER (ORDER BY ts DESC) FROM ev;"),
        "The window can only be ordered in ASCENDING mode."
    );
}
