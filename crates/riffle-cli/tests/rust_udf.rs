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
