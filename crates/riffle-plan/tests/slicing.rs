//! Which hopping-window aggregations share slices (each row accumulated once, in its slice,
//! and the slices merged per window), and which keep one row per window.

use riffle_plan::{plan_sql, JobGraph, OperatorKind, Partitioning, SharedSlices, WindowSpec};

const BIDS: &str = "CREATE TABLE bids (
  auction BIGINT,
  price BIGINT,
  rate DOUBLE,
  amount DECIMAL(10, 2),
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/bids.json', 'format' = 'json');
CREATE TABLE out_table (a BIGINT, b BIGINT) WITH ('connector' = 'blackhole');
SET 'parallelism.default' = '2';
";

fn plan(sql: &str) -> JobGraph {
    match plan_sql(&format!("{BIDS}{sql}")) {
        Ok(graph) => graph,
        Err(d) => panic!("does not plan: {d:?}"),
    }
}

/// The aggregation's shared slices, the assigner's slice length and the columns the
/// aggregation's input is hashed by.
fn slicing(graph: &JobGraph) -> (Option<SharedSlices>, Option<i64>, Vec<usize>) {
    let (id, slices) = graph
        .operators
        .iter()
        .find_map(|op| match &op.kind {
            OperatorKind::WindowAggregate { slices, .. } => Some((op.id, *slices)),
            _ => None,
        })
        .expect("a window aggregation");
    let slice = graph.operators.iter().find_map(|op| match &op.kind {
        OperatorKind::WindowAssign { slice, .. } => Some(*slice),
        _ => None,
    });
    let hashed = graph
        .inputs_of(id)
        .iter()
        .find_map(|e| match &e.partitioning {
            Partitioning::Hash(columns) => Some(columns.clone()),
            _ => None,
        })
        .unwrap_or_default();
    (slices, slice.flatten(), hashed)
}

const HOP: &str =
    "TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))";

#[test]
fn a_hop_count_per_key_shares_two_second_slices_and_is_hashed_by_its_key_alone() {
    let graph = plan(&format!(
        "INSERT INTO out_table SELECT auction, COUNT(*) FROM {HOP} GROUP BY auction, window_start, window_end"
    ));
    let (slices, slice, hashed) = slicing(&graph);
    let slices = slices.expect("shares slices");
    assert_eq!(slice, Some(2000));
    assert_eq!(slices.slice, 2000);
    assert_eq!(
        slices.window,
        WindowSpec::Hop {
            slide: 2000,
            size: 10000,
            offset: 0
        }
    );
    // Keys: auction, window_start, window_end; only the auction is hashed.
    assert_eq!(hashed, vec![0]);
}

#[test]
fn sums_of_integers_and_doubles_min_max_and_avg_share_slices() {
    let graph = plan(&format!(
        "INSERT INTO out_table SELECT MAX(price), CAST(SUM(rate) + AVG(price) + MIN(rate) AS BIGINT) \
         FROM {HOP} GROUP BY window_start, window_end"
    ));
    let (slices, _, hashed) = slicing(&graph);
    assert!(slices.is_some());
    assert!(
        hashed.is_empty(),
        "a global aggregation per window: {hashed:?}"
    );
}

#[test]
fn aggregations_whose_accumulators_do_not_merge_exactly_keep_every_window() {
    for select in [
        "COUNT(DISTINCT price)",
        "CAST(SUM(amount) AS BIGINT)",
        "CAST(STDDEV_POP(price) AS BIGINT)",
    ] {
        let graph = plan(&format!(
            "INSERT INTO out_table SELECT auction, {select} FROM {HOP} GROUP BY auction, window_start, window_end"
        ));
        assert_eq!(slicing(&graph), (None, None, vec![0, 1, 2]), "{select}");
    }
}

#[test]
fn window_columns_read_beyond_the_group_keys_keep_every_window() {
    for sql in [
        format!("INSERT INTO out_table SELECT auction, COUNT(window_time) FROM {HOP} GROUP BY auction, window_start, window_end"),
        format!("INSERT INTO out_table SELECT auction, COUNT(*) FROM {HOP} WHERE window_start > TIMESTAMP '2024-01-01 00:00:00' GROUP BY auction, window_start, window_end"),
        format!("INSERT INTO out_table SELECT COUNT(*), SUM(price) FROM {HOP} GROUP BY window_end"),
    ] {
        let graph = plan(&sql);
        // (Some of these are not window aggregations at all.)
        let sliced = graph.operators.iter().any(|op| {
            matches!(
                op.kind,
                OperatorKind::WindowAssign { slice: Some(_), .. }
                    | OperatorKind::WindowAggregate { slices: Some(_), .. }
            )
        });
        assert!(!sliced, "{sql}");
    }
}

#[test]
fn tumbling_and_cumulating_windows_are_not_rewritten() {
    for tvf in [
        "TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))",
        "TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))",
    ] {
        let graph = plan(&format!(
            "INSERT INTO out_table SELECT auction, COUNT(*) FROM {tvf} GROUP BY auction, window_start, window_end"
        ));
        let (slices, slice, _) = slicing(&graph);
        assert_eq!((slices, slice), (None, None), "{tvf}");
    }
}
