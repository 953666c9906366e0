//! `riffle sql` driven through a pseudo-terminal, as a user types: a background `INSERT` produces
//! into an embedded-store topic at a steady pace, a `SELECT` over the topic shows the rows as
//! they arrive (tableau mode), Ctrl-C cancels the query but not the client, and an updating
//! aggregation is shown materialized (table mode) with its counts changing in place.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rexpect::session::PtySession;

/// `riffle sql` in `dir`, on a pty.
fn spawn_sql(dir: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_riffle"));
    command
        .arg("sql")
        .arg("--history")
        .arg(dir.join("history"))
        .current_dir(dir);
    rexpect::session::spawn_with_options(
        command,
        rexpect::reader::Options {
            timeout_ms: Some(60_000),
            strip_ansi_escape_codes: true,
        },
    )
    .expect("spawn riffle sql")
}

fn prompt(p: &mut PtySession) {
    p.exp_string("riffle> ").expect("prompt");
}

/// Types a statement line by line, as a user does: each next line only once the continuation
/// prompt shows (the line editor discards what is typed before it reads), then waits for
/// `expect`.
fn start_statement(p: &mut PtySession, sql: &str, expect: &str) {
    let mut lines = sql.lines().peekable();
    while let Some(line) = lines.next() {
        p.send_line(line).expect("send");
        if lines.peek().is_some() {
            p.exp_string("     > ").expect("continuation prompt");
        }
    }
    p.exp_string(expect)
        .unwrap_or_else(|e| panic!("after `{sql}`: expected `{expect}`: {e}"));
}

/// Runs a statement that returns to the prompt, checking its output shows `expect`.
fn statement(p: &mut PtySession, sql: &str, expect: &str) {
    start_statement(p, sql, expect);
    prompt(p);
}

#[test]
fn select_over_a_topic_shows_rows_as_they_are_produced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let created = Command::new(env!("CARGO_BIN_EXE_riffle"))
        .args(["topic", "create", "ticks", "--queues", "1"])
        .current_dir(dir.path())
        .output()
        .expect("riffle topic create");
    assert!(created.status.success(), "{created:?}");

    let mut p = spawn_sql(dir.path());
    prompt(&mut p);
    statement(
        &mut p,
        "CREATE TABLE gen (id BIGINT) WITH (\n  'connector' = 'datagen',\n  'rows-per-second' = '4',\n  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100000'\n);",
        "table 'gen' created",
    );
    statement(
        &mut p,
        "CREATE TABLE ticks (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'ticks', 'rocketmq.source.group' = 'watchers', 'rocketmq.sink.topic' = 'ticks', 'format' = 'json', 'rocketmq.source.startup.scan.mode' = 'earliest');",
        "table 'ticks' created",
    );
    statement(&mut p, "SHOW TABLES;", "2 rows in set");
    statement(&mut p, "DESCRIBE ticks;", "BIGINT");
    statement(
        &mut p,
        "INSERT INTO ticks SELECT id FROM gen;",
        "started in the background",
    );
    statement(&mut p, "SHOW JOBS;", "RUNNING");

    // Rows appear one after another while the job produces them, four a second.
    start_statement(
        &mut p,
        "SELECT id, id * 10 AS tenfold FROM ticks;",
        "tenfold",
    );
    p.exp_string("| +I |                    1 |                   10 |")
        .expect("first row");
    let first = Instant::now();
    p.exp_string("| +I |                    9 |                   90 |")
        .expect("ninth row");
    assert!(
        first.elapsed() >= Duration::from_millis(1200),
        "rows arrived together ({:?}), not as they were produced",
        first.elapsed()
    );
    // Ctrl-C cancels the query, not the client.
    p.send_control('c').expect("ctrl-c");
    p.exp_string("Query cancelled.").expect("cancelled");
    prompt(&mut p);

    // An updating aggregation, materialized: the count of a key is replaced in place.
    statement(
        &mut p,
        "SET 'sql-client.execution.result-mode' = 'table';",
        "Result mode: table",
    );
    start_statement(
        &mut p,
        "SELECT id % 2 AS parity, COUNT(*) AS n\n  FROM ticks GROUP BY id % 2;",
        "parity",
    );
    // Both keys, each exactly once per drawing, with growing counts.
    p.exp_regex(r"2 rows in the result").expect("two rows");
    let drawn = p
        .exp_regex(r"\|\s+1 \|\s+(\d+) \|[^|]*\|\s+0 \|\s+(\d+) \|")
        .expect("a drawing of both keys")
        .1;
    let counts = |text: &str| -> Vec<u64> {
        text.split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect()
    };
    let before = counts(&drawn);
    std::thread::sleep(Duration::from_millis(1500));
    let later = p
        .exp_regex(r"\|\s+1 \|\s+(\d+) \|[^|]*\|\s+0 \|\s+(\d+) \|")
        .expect("a later drawing")
        .1;
    let after = counts(&later);
    assert!(
        after.iter().sum::<u64>() > before.iter().sum::<u64>(),
        "counts did not grow: {before:?} then {after:?}"
    );
    p.send_control('c').expect("ctrl-c");
    p.exp_string("Query cancelled.").expect("cancelled");
    prompt(&mut p);

    statement(&mut p, "SHOW JOBS;", "RUNNING");
    p.send_line("QUIT;").expect("quit");
    p.exp_string("Goodbye.").expect("goodbye");
    p.exp_eof().expect("exit");
}

#[test]
fn a_script_runs_statements_and_fails_on_the_first_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE t (a INT, b STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '3',
  'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '3', 'fields.b.length' = '2');
SET 'sql-client.execution.result-mode' = 'changelog';
SELECT a FROM t;
SELECT nope FROM t;
SELECT a FROM t;
",
    )
    .expect("write script");
    let out = Command::new(env!("CARGO_BIN_EXE_riffle"))
        .arg("sql")
        .arg("-f")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .expect("riffle sql -f");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("+I[1]\n+I[2]\n+I[3]\n"), "{stdout}");
    assert!(stdout.contains("Received a total of 3 rows"), "{stdout}");
    assert!(stdout.contains("[ERROR]"), "{stdout}");
    assert!(stdout.contains("nope"), "{stdout}");
    // The statement after the failing one did not run.
    assert_eq!(stdout.matches("Received a total").count(), 1, "{stdout}");
}
