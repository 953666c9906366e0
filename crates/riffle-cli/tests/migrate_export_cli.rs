//! `riffle migrate` and `riffle export` from the command line: where the rewritten jobs go
//! (`-o DIR`, `--in-place`), `--diff`, the text and JSON reports, exit codes, idempotence.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jobs")
        .join(name)
}

/// A temporary directory holding copies of fixture jobs under their file names.
fn workspace(fixtures: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for f in fixtures {
        let name = Path::new(f).file_name().expect("a file name");
        std::fs::copy(fixture(f), dir.path().join(name)).expect("copy the fixture");
    }
    dir
}

fn riffle(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_riffle"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the riffle binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn output_dir_gets_the_same_file_names_and_originals_stay() {
    let ws = workspace(&["kafka/nexmark_q1.sql", "rsqldb_clicks_tumble.sql"]);
    let dir = ws.path();
    let before = read(dir, "nexmark_q1.sql");
    let out = riffle(
        dir,
        &[
            "migrate",
            "nexmark_q1.sql",
            "rsqldb_clicks_tumble.sql",
            "-o",
            "out",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        read(dir, "nexmark_q1.sql"),
        before,
        "the original is untouched"
    );
    let migrated = read(dir, "out/nexmark_q1.sql");
    assert!(migrated.contains("'connector' = 'rocketmq'"), "{migrated}");
    assert!(!migrated.contains("'connector' = 'kafka'"), "{migrated}");
    let rsqldb = read(dir, "out/rsqldb_clicks_tumble.sql");
    assert!(rsqldb.contains("'connector' = 'rocketmq'"), "{rsqldb}");
}

#[test]
fn in_place_rewrites_once_and_a_second_run_changes_nothing() {
    let ws = workspace(&["kafka/legacy_connector_type_kafka.sql"]);
    let dir = ws.path();
    let job = "legacy_connector_type_kafka.sql";
    let original = read(dir, job);
    let first = riffle(dir, &["migrate", job, "--in-place", "--modernize"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let once = read(dir, job);
    assert_ne!(once, original);
    let second = riffle(
        dir,
        &[
            "migrate",
            job,
            "--in-place",
            "--modernize",
            "--report",
            "json",
        ],
    );
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(read(dir, job), once, "migrating twice changes nothing");
    let report: serde_json::Value = serde_json::from_slice(&second.stdout).expect("a JSON report");
    insta::assert_json_snapshot!("second_run_report", report);
}

#[test]
fn diff_goes_to_stdout_and_the_report_to_stderr() {
    let ws = workspace(&["kafka/upsert_wallet_balances.sql"]);
    let dir = ws.path();
    let out = riffle(dir, &["migrate", "upsert_wallet_balances.sql", "--diff"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(
        diff.starts_with("--- a/upsert_wallet_balances.sql\n+++ b/upsert_wallet_balances.sql\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n-    'connector' = 'upsert-kafka',\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+    'connector' = 'rocketmq',\n"),
        "{diff}"
    );
    assert!(text(&out.stderr).contains("1 job(s): 1 rewritten"));
    assert_eq!(
        read(dir, "upsert_wallet_balances.sql"),
        std::fs::read_to_string(fixture("kafka/upsert_wallet_balances.sql")).expect("fixture"),
        "--diff alone writes nothing"
    );
}

#[test]
fn text_and_json_reports_list_every_change_and_manual_item() {
    let ws = workspace(&["rsqldb_ticket_dim_join.sql", "kafka/nexmark_q5.sql"]);
    let dir = ws.path();
    let args = [
        "migrate",
        "rsqldb_ticket_dim_join.sql",
        "nexmark_q5.sql",
        "--modernize",
    ];
    let out = riffle(dir, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("text_report", text(&out.stdout));
    let json = riffle(dir, &[&args[..], &["--report", "json"]].concat());
    assert!(json.status.success(), "{}", text(&json.stderr));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("a JSON report");
    insta::assert_json_snapshot!("json_report", report);
}

#[test]
fn strict_fails_when_an_item_is_left_for_a_human() {
    let ws = workspace(&["rsqldb_ticket_dim_join.sql", "kafka/nexmark_q1.sql"]);
    let dir = ws.path();
    let manual = riffle(dir, &["migrate", "rsqldb_ticket_dim_join.sql", "--strict"]);
    assert_eq!(manual.status.code(), Some(1), "{}", text(&manual.stdout));
    let clean = riffle(dir, &["migrate", "nexmark_q1.sql", "--strict"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
}

#[test]
fn usage_errors_exit_with_2() {
    let ws = workspace(&["kafka/nexmark_q1.sql"]);
    let dir = ws.path();
    let both = riffle(
        dir,
        &["migrate", "nexmark_q1.sql", "--in-place", "-o", "out"],
    );
    assert_eq!(both.status.code(), Some(2));
    let missing = riffle(dir, &["migrate", "no_such_job.sql"]);
    assert_eq!(missing.status.code(), Some(2));
    let version = riffle(dir, &["export", "nexmark_q1.sql", "--flink-version", "0.9"]);
    assert_eq!(version.status.code(), Some(2), "{}", text(&version.stderr));
}

#[test]
fn export_writes_flink_sql_and_a_bundle() {
    let ws = workspace(&["window_session_partitioned.sql"]);
    let dir = ws.path();
    let out = riffle(
        dir,
        &[
            "export",
            "window_session_partitioned.sql",
            "--flink-version",
            "1.17",
            "--namesrv",
            "rocketmq-ns:9876",
            "-o",
            "out",
            "--bundle",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files: Vec<String> = walk(&dir.join("out"))
        .iter()
        .map(|p| {
            p.strip_prefix(dir.join("out"))
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    insta::assert_debug_snapshot!("export_bundle_files", files);
    let sql = std::fs::read_to_string(
        walk(&dir.join("out"))
            .into_iter()
            .find(|p| p.extension().is_some_and(|e| e == "sql"))
            .expect("an exported .sql file"),
    )
    .expect("exported SQL");
    assert!(
        !sql.contains("TABLE(SESSION("),
        "Flink 1.17 has no SESSION TVF: {sql}"
    );
}

/// Every file below `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
