//! `riffle migrate --modernize`: which legacy group windows become window TVFs, and why the others
//! are left for a human. (That the rewrites give Flink's same rows is shown on real Flink by
//! `tests/flink/modernize_proof.py`.)

use riffle_toolkit::migrate::{migrate_job, JobChanges, MigrateOptions};
use riffle_toolkit::JobSource;

const BIDS: &str =
    "CREATE TABLE bids (bidtime TIMESTAMP(3), price INT, item STRING, supplier STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE items (item STRING, name STRING) WITH ('connector' = 'datagen');
CREATE TABLE sink (a TIMESTAMP(3), b BIGINT) WITH ('connector' = 'blackhole');
";

fn modernize(query: &str) -> JobChanges {
    let job = JobSource {
        path: "q.sql".into(),
        text: format!("{BIDS}{query}"),
    };
    let options = MigrateOptions {
        modernize: true,
        ..MigrateOptions::default()
    };
    let result = migrate_job(&job, &options);
    assert_eq!(result.error, None);
    result
}

/// The rewritten query (the text after the shared DDL).
fn rewritten(query: &str) -> String {
    let result = modernize(query);
    assert!(result.manual.is_empty(), "{:#?}", result.manual);
    result.output[BIDS.len()..].to_string()
}

fn refusal(query: &str) -> String {
    let result = modernize(query);
    assert!(!result.is_changed(), "{}", result.output);
    match result.manual.as_slice() {
        [item] => item.reason.clone(),
        other => panic!("expected one item for a human: {other:#?}"),
    }
}

#[test]
fn tumble_hop_and_session_become_tvfs() {
    assert_eq!(
        rewritten("INSERT INTO sink SELECT TUMBLE_START(bidtime, INTERVAL '1' MINUTE), COUNT(*) FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);"),
        "INSERT INTO sink SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;"
    );
    // HOP keeps (slide, size); qualified columns keep their alias.
    assert_eq!(
        rewritten("SELECT b.item, HOP_END(b.bidtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) AS e FROM bids AS b WHERE b.price > 3 GROUP BY HOP(b.bidtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE), b.item;"),
        "SELECT b.item, window_end AS e FROM TABLE(HOP(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)) AS b WHERE b.price > 3 GROUP BY window_start, window_end, b.item;"
    );
    // SESSION partitions by the other keys; a rowtime needs window_time among the keys.
    assert_eq!(
        rewritten("SELECT supplier, item, SESSION_ROWTIME(bidtime, INTERVAL '5' MINUTE) AS t FROM bids GROUP BY supplier, item, SESSION(bidtime, INTERVAL '5' MINUTE);"),
        "SELECT supplier, item, window_time AS t FROM TABLE(SESSION(TABLE bids PARTITION BY (supplier, item), DESCRIPTOR(bidtime), INTERVAL '5' MINUTE)) GROUP BY supplier, item, window_start, window_end, window_time;"
    );
}

#[test]
fn rewrites_that_would_change_results_are_left_for_a_human() {
    let cases = [
        (
            "SELECT COUNT(*) FROM bids JOIN items ON bids.item = items.item GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);",
            "join",
        ),
        (
            "SELECT COUNT(*) FROM (SELECT * FROM bids) GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);",
            "subquery",
        ),
        (
            "SELECT supplier, COUNT(*) FROM bids WHERE price > 1 GROUP BY supplier, SESSION(bidtime, INTERVAL '1' MINUTE);",
            "WHERE",
        ),
        (
            "SELECT COUNT(*) FROM (SELECT TUMBLE_START(bidtime, INTERVAL '1' MINUTE) AS s FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE)) GROUP BY s;",
            "feeds another query",
        ),
        (
            "SELECT COUNT(*) FROM bids GROUP BY SESSION(bidtime, INTERVAL '1' MINUTE), UPPER(item);",
            "expression",
        ),
        (
            "SELECT TUMBLE_START(bidtime, INTERVAL '2' MINUTE) FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);",
            "does not name the GROUP BY window",
        ),
    ];
    for (query, expected) in cases {
        let reason = refusal(query);
        assert!(reason.contains(expected), "{query}: {reason}");
    }
}

#[test]
fn views_over_windows_are_left_alone_and_reported() {
    let reason = refusal(
        "CREATE VIEW per_minute AS SELECT TUMBLE_END(bidtime, INTERVAL '1' MINUTE) AS e, COUNT(*) AS n FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);",
    );
    assert!(reason.contains("feeds another query"), "{reason}");
}

#[test]
fn a_table_with_a_window_column_is_not_windowed() {
    let job = "CREATE TABLE w (window_start TIMESTAMP(3), ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');
SELECT COUNT(*) FROM w GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);";
    let result = modernize(job);
    assert!(
        result
            .manual
            .iter()
            .any(|m| m.reason.contains("`window_start`")),
        "{:#?}",
        result.manual
    );
}

#[test]
fn without_modernize_windows_stay() {
    let job = JobSource {
        path: "q.sql".into(),
        text: format!(
            "{BIDS}SELECT COUNT(*) FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '1' MINUTE);"
        ),
    };
    let result = migrate_job(&job, &MigrateOptions::default());
    assert!(!result.is_changed());
    assert!(result.manual.is_empty());
}
