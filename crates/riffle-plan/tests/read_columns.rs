//! Which columns of its sources a job reads (the projection pushed into the sources).

use riffle_plan::{plan_sql, JobGraph, OperatorKind};

const EVENTS: &str = "CREATE TABLE events (
  kind INT,
  p ROW<id BIGINT, name STRING, ts TIMESTAMP(3), extra STRING>,
  b ROW<item BIGINT, price BIGINT, url STRING, ts TIMESTAMP(3)>,
  note STRING,
  ts AS CASE WHEN kind = 0 THEN p.ts ELSE b.ts END,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/events.json', 'format' = 'json');
CREATE VIEW bids AS SELECT b.item AS item, b.price AS price, b.url AS url, ts FROM events WHERE kind = 1;
";

fn plan(sql: &str) -> JobGraph {
    match plan_sql(&format!("{EVENTS}{sql}")) {
        Ok(graph) => graph,
        Err(d) => panic!("does not plan: {d:?}"),
    }
}

/// The read paths of every source, dotted.
fn read_columns(graph: &JobGraph) -> Vec<Option<Vec<String>>> {
    graph
        .operators
        .iter()
        .filter_map(|op| match &op.kind {
            OperatorKind::Source { connector } => Some(
                connector
                    .read_columns
                    .as_ref()
                    .map(|paths| paths.iter().map(|p| p.join(".")).collect()),
            ),
            _ => None,
        })
        .collect()
}

fn paths(list: &[&str]) -> Vec<Option<Vec<String>>> {
    vec![Some(list.iter().map(|p| p.to_string()).collect())]
}

#[test]
fn fields_are_followed_through_views_filters_and_the_watermark() {
    let graph = plan("SELECT item, price * 2 FROM bids WHERE price > 10;");
    assert_eq!(
        read_columns(&graph),
        paths(&["kind", "p.ts", "b.item", "b.price", "b.ts"])
    );
}

#[test]
fn window_assignment_and_aggregation_read_their_inputs() {
    let graph = plan(
        "SELECT window_start, item, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, item;",
    );
    assert_eq!(
        read_columns(&graph),
        paths(&["kind", "p.ts", "b.item", "b.ts"])
    );
}

#[test]
fn a_join_reads_its_keys_condition_and_used_columns_of_both_sides() {
    let graph = plan(
        "SELECT l.item, r.note FROM bids AS l JOIN events AS r ON l.item = r.p.id AND r.b.price > l.price;",
    );
    // One source (reused) serves both sides: what either side reads.
    assert_eq!(
        read_columns(&graph),
        paths(&["kind", "p.id", "p.ts", "b.item", "b.price", "b.ts", "note"])
    );
}

#[test]
fn a_whole_row_or_a_sink_of_all_columns_reads_everything_below_it() {
    let graph = plan("SELECT kind, p FROM events;");
    assert_eq!(read_columns(&graph), paths(&["kind", "p", "b.ts"]));
    let graph = plan("SELECT * FROM events;");
    assert_eq!(read_columns(&graph), vec![None]);
}
