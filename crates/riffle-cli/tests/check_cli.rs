//! End-to-end tests of `riffle check`: exit codes, formats, and the fixtures corpus.

use std::path::{Path, PathBuf};
use std::process::Command;

fn riffle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_riffle"))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    repo_root().join("fixtures/jobs")
}

#[test]
fn json_report_covers_every_fixture_job_and_nothing_fails_to_parse() {
    let out = riffle()
        .args(["check", "--format", "json", "--fail-on", "never"])
        .arg(fixtures())
        .output()
        .expect("run riffle");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let jobs = report["jobs"].as_array().expect("jobs array");
    assert!(
        jobs.len() >= 40,
        "expected the whole corpus, got {} jobs",
        jobs.len()
    );
    for job in jobs {
        let path = job["path"].as_str().unwrap_or_default();
        assert!(
            job["statements"].as_array().is_some_and(|s| !s.is_empty()),
            "{path}: no statements"
        );
        for finding in job["findings"].as_array().into_iter().flatten() {
            assert_ne!(finding["code"], "parse-error", "{path}: {finding}");
        }
    }
    assert_eq!(report["summary"]["jobs"].as_u64(), Some(jobs.len() as u64));
}

#[test]
fn sarif_output_validates_against_the_sarif_2_1_0_schema() {
    let out = riffle()
        .args([
            "check",
            "--format",
            "sarif",
            "--verbose",
            "--fail-on",
            "never",
        ])
        .arg(fixtures())
        .arg(repo_root().join("crates/riffle-cli/tests/data/broken.sql"))
        .output()
        .expect("run riffle");
    assert_eq!(out.status.code(), Some(0));
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let schema_text = std::fs::read_to_string(
        repo_root().join("crates/riffle-cli/tests/data/sarif-schema-2.1.0.json"),
    )
    .expect("schema file");
    // The published schema's `language` pattern has a bare `]`, a literal in ECMA-262 regexes
    // (what JSON Schema specifies) but an error for Rust's engines: escape it, same meaning.
    let schema_text = schema_text.replace("[a-zA-Z]{2}]?$", "[a-zA-Z]{2}\\\\]?$");
    let schema: serde_json::Value = serde_json::from_str(&schema_text).expect("schema JSON");
    let validator = jsonschema::draft7::new(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF schema violations:\n{}",
        errors.join("\n")
    );
    // The validator does reject a malformed report (so this test can fail).
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = serde_json::json!("fatal");
    assert!(!validator.is_valid(&broken));
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    assert!(
        results.iter().any(|r| r["ruleId"] == "parse-error"),
        "the broken file must produce a parse error"
    );
}

#[test]
fn broken_file_fails_with_line_and_column() {
    let broken = repo_root().join("crates/riffle-cli/tests/data/broken.sql");
    let out = riffle()
        .args(["check", "--fail-on", "error"])
        .arg(&broken)
        .output()
        .expect("run riffle");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    // The misspelled keyword sits on line 4, column 1 of the file.
    assert!(
        text.contains("broken.sql:4:1"),
        "report lacks the location:\n{text}"
    );
    assert!(text.contains("parse-error"), "{text}");
}

#[test]
fn missing_file_is_an_io_error() {
    let out = riffle()
        .args(["check", "no/such/job.sql"])
        .output()
        .expect("run riffle");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/job.sql"));
}

#[test]
fn junit_marks_statements_at_or_above_fail_on_as_failures() {
    let broken = repo_root().join("crates/riffle-cli/tests/data/broken.sql");
    let out = riffle()
        .args(["check", "--format", "junit", "--fail-on", "error"])
        .arg(&broken)
        .output()
        .expect("run");
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(xml.contains("<testsuites"), "{xml}");
    assert!(xml.contains("<failure"), "{xml}");
    assert_eq!(out.status.code(), Some(1));
}
