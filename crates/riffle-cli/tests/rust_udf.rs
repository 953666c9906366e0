//! Native Rust functions end to end: builds the example function library in
//! `fixtures/udf/rust` (a `cdylib` on the `riffle-udf` crate) with cargo, then runs a job that
//! calls its scalar and table functions through the real `riffle run`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the example library; returns the path of the `.so`.
fn build_library(target: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/udf/rust/Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--offline", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "building the example library failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = target.join("debug").join(format!(
        "{}riffle_example_udfs{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(lib.is_file(), "no library at {}", lib.display());
    lib
}

fn run(dir: &Path, sql: &str) -> std::process::Output {
    let job = dir.join("job.sql");
    std::fs::write(&job, sql).expect("write job");
    Command::new(env!("CARGO_BIN_EXE_riffle"))
        .arg("run")
        .arg(&job)
        .current_dir(dir)
        .output()
        .expect("run riffle")
}

#[test]
fn rust_scalar_and_table_functions_run_in_a_job() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = build_library(&dir.path().join("target"));
    let input = dir.path().join("docs.csv");
    std::fs::write(&input, "1,abc;de,2\n2,,3\n3,x,\n").expect("write input");
    let sql = format!(
        "CREATE FUNCTION rs_reverse AS 'rs_reverse' LANGUAGE RUST USING JAR '{lib}';
CREATE FUNCTION rs_scale AS 'rs_scale' LANGUAGE RUST USING JAR '{lib}';
CREATE FUNCTION rs_split AS 'rs_split' LANGUAGE RUST USING JAR '{lib}';
CREATE TABLE docs (id INT, s STRING, f INT) WITH (
  'connector' = 'filesystem', 'path' = '{input}', 'format' = 'csv', 'csv.null-literal' = '');
SELECT d.id, rs_reverse(d.s) AS r, rs_scale(d.id, d.f) AS scaled, p.part, p.pos
FROM docs AS d LEFT JOIN LATERAL TABLE(rs_split(d.s, ';')) AS p(part, pos) ON TRUE;",
        lib = lib.display(),
        input = input.display()
    );
    let out = run(dir.path(), &sql);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "riffle run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with('+')).collect();
    assert_eq!(
        rows,
        [
            "+I[1, ed;cba, 2, abc, 0]",
            "+I[1, ed;cba, 2, de, 1]",
            "+I[2, null, 6, null, null]",
            "+I[3, x, null, x, 0]",
        ],
        "{stdout}"
    );
}

#[test]
fn a_rust_function_error_fails_the_job_with_its_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = build_library(&dir.path().join("target"));
    let sql = format!(
        "CREATE FUNCTION rs_scale AS 'rs_scale' LANGUAGE RUST USING JAR '{lib}';
SELECT rs_scale(CAST(9223372036854775807 AS BIGINT), CAST(2 AS BIGINT));",
        lib = lib.display()
    );
    let out = run(dir.path(), &sql);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("overflows BIGINT"), "{stderr}");
}

#[test]
fn an_unknown_function_of_the_library_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = build_library(&dir.path().join("target"));
    let sql = format!(
        "CREATE FUNCTION nope AS 'nope' LANGUAGE RUST USING JAR '{lib}';\nSELECT 1;",
        lib = lib.display()
    );
    let out = run(dir.path(), &sql);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("has no function 'nope'"), "{stderr}");
    assert!(stderr.contains("rs_split"), "{stderr}");
}

/// The rows `riffle run` printed: change kind and values.
fn changelog(stdout: &str) -> Vec<(String, Vec<String>)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (kind, rest) = l.split_once('[')?;
            let values = rest.strip_suffix(']')?;
            Some((
                kind.to_string(),
                values.split(", ").map(str::to_string).collect(),
            ))
        })
        .collect()
}

/// 40 sales of 5 shops over 10 minutes, with some NULL values and weights.
fn write_sales(path: &Path) {
    let mut rows = String::new();
    for i in 0..40i64 {
        let value = if i % 7 == 3 {
            String::new()
        } else {
            (i * 13 % 50).to_string()
        };
        let weight = if i % 11 == 5 {
            String::new()
        } else {
            (i % 4 + 1).to_string()
        };
        rows.push_str(&format!(
            "{},{value},{weight},2024-01-01 10:{:02}:00\n",
            i % 5,
            i / 4
        ));
    }
    std::fs::write(path, rows).expect("write input");
}

/// Runs `query` over the sales table with the example library's functions declared; the
/// printed rows, or the error output.
fn run_sales_query(query: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = build_library(&dir.path().join("target"));
    let input = dir.path().join("sales.csv");
    write_sales(&input);
    let sql = format!(
        "SET 'execution.checkpointing.interval' = '50 ms';
CREATE FUNCTION rs_wavg AS 'rs_wavg' LANGUAGE RUST USING JAR '{lib}';
CREATE FUNCTION rs_longest AS 'rs_longest' LANGUAGE RUST USING JAR '{lib}';
CREATE TABLE sales (shop INT, v BIGINT, w INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '{input}', 'format' = 'csv', 'csv.null-literal' = '');
{query}",
        lib = lib.display(),
        input = input.display()
    );
    let out = run(dir.path(), &sql);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(changelog(&String::from_utf8_lossy(&out.stdout)))
}

/// Asserts that in every row the last two values (the Rust function and the same aggregate
/// built from built-in functions) are equal.
fn assert_same_as_builtin(rows: &[(String, Vec<String>)]) {
    assert!(rows.len() >= 4, "{rows:?}");
    for (kind, values) in rows {
        let [.., ours, builtin] = values.as_slice() else {
            panic!("short row {kind}{values:?}");
        };
        assert_eq!(ours, builtin, "{kind}{values:?}");
    }
}

#[test]
fn a_rust_aggregate_function_runs_in_a_window_aggregation() {
    let rows = run_sales_query(
        "SELECT window_start, rs_wavg(v, w),
  CAST(SUM(v * w) AS DOUBLE) / SUM(CASE WHEN v IS NULL THEN CAST(NULL AS INT) ELSE w END)
FROM TABLE(TUMBLE(TABLE sales, DESCRIPTOR(ts), INTERVAL '3' MINUTE))
GROUP BY window_start, window_end;",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_same_as_builtin(&rows);
    assert!(rows.iter().all(|(kind, _)| kind == "+I"), "{rows:?}");
}

#[test]
fn a_rust_aggregate_function_retracts_in_an_updating_aggregation() {
    // The inner aggregation updates its totals, so the outer one retracts old totals.
    let rows = run_sales_query(
        "SELECT cnt, rs_wavg(total, CAST(1 AS INT)), CAST(SUM(total) AS DOUBLE) / COUNT(total)
FROM (SELECT shop, COUNT(*) AS cnt, SUM(v) AS total FROM sales GROUP BY shop)
GROUP BY cnt;",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_same_as_builtin(&rows);
    assert!(
        rows.iter().any(|(kind, _)| kind == "-U" || kind == "-D"),
        "{rows:?}"
    );
}

#[test]
fn a_rust_aggregate_without_retract_fails_an_updating_aggregation() {
    let err = run_sales_query(
        "SELECT cnt, rs_longest(CAST(total AS STRING))
FROM (SELECT shop, COUNT(*) AS cnt, SUM(v) AS total FROM sales GROUP BY shop)
GROUP BY cnt;",
    )
    .expect_err("an updating input needs retract");
    assert!(
        err.contains("rs_longest") && err.contains("retract"),
        "{err}"
    );
}
