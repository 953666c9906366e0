//! End-to-end tests of `riffle compat run`: per-case lines, the summary line, exit codes, the
//! JSON report and the matrix, on small suites.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn riffle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_riffle"))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A case of the real suite that the engine passes (it is in the ratchet list).
const PASSING_CASE: &str = "window-agg/filter_clause";

/// Copies `PASSING_CASE` into a fresh suite, optionally replacing `from` by `to` in the file.
fn suite_with(edit: Option<(&str, &str)>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = repo_root().join(format!("compat-tests/cases/{PASSING_CASE}.test"));
    let mut text = std::fs::read_to_string(source).expect("read the case");
    if let Some((from, to)) = edit {
        assert!(text.contains(from), "the case no longer holds {from:?}");
        text = text.replacen(from, to, 1);
    }
    let target = dir.path().join(format!("cases/{PASSING_CASE}.test"));
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    std::fs::write(target, text).expect("write the case");
    dir
}

#[test]
fn a_filtered_run_prints_one_line_per_case_and_the_summary() {
    let out = riffle()
        .args(["compat", "run", "--filter", "window-agg/"])
        .arg(repo_root().join("compat-tests"))
        .output()
        .expect("run riffle");
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.iter().any(|l| *l == format!("PASS {PASSING_CASE}")),
        "{text}"
    );
    let summary = lines.last().copied().unwrap_or_default();
    let counts: Vec<usize> = summary
        .split(", ")
        .filter_map(|part| part.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(counts.len(), 3, "summary line: {summary}");
    assert_eq!(
        summary,
        format!(
            "{} passed, {} failed, {} unsupported",
            counts[0], counts[1], counts[2]
        )
    );
    let verdicts = lines
        .iter()
        .filter(|l| {
            ["PASS ", "FAIL ", "UNSUPPORTED "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .count();
    assert_eq!(verdicts, counts.iter().sum::<usize>());
    assert!(lines
        .iter()
        .filter(|l| l.starts_with("UNSUPPORTED "))
        .all(|l| l.ends_with(')')));
    let expected_code = if counts[1] > 0 { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(expected_code), "{text}");
}

#[test]
fn a_changed_expected_row_fails_with_a_diff_and_exit_code_1() {
    let suite = suite_with(Some((
        "+I[2024-03-01T09:05, null, 25, 2, 2]",
        "+I[2024-03-01T09:05, null, 26, 2, 2]",
    )));
    let out = riffle()
        .args(["compat", "run"])
        .arg(suite.path())
        .output()
        .expect("run riffle");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with(&format!("FAIL {PASSING_CASE}\n")),
        "{text}"
    );
    assert!(
        text.contains("    -+I[2024-03-01T09:05, null, 26, 2, 2]\n"),
        "{text}"
    );
    assert!(
        text.contains("    ++I[2024-03-01T09:05, null, 25, 2, 2]\n"),
        "{text}"
    );
    assert!(
        text.ends_with("0 passed, 1 failed, 0 unsupported\n"),
        "{text}"
    );
}

#[test]
fn json_report_and_matrix_of_a_passing_suite() {
    let suite = suite_with(None);
    let matrix = suite.path().join("matrix.md");
    let out = riffle()
        .args(["compat", "run", "--format", "json", "--write-matrix"])
        .arg(&matrix)
        .arg(suite.path())
        .output()
        .expect("run riffle");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(report["cases"][0]["id"], PASSING_CASE);
    assert_eq!(report["cases"][0]["status"], "passed");
    assert_eq!(report["summary"]["passed"], 1);
    let matrix = std::fs::read_to_string(matrix).expect("matrix written");
    assert!(
        matrix.contains("| `window-agg` | 1 | 1 | 0 | 0 |"),
        "{matrix}"
    );
}

#[test]
fn usage_errors_exit_with_2() {
    let out = riffle()
        .args(["compat", "run", "--filter", "no-such-case-anywhere"])
        .arg(repo_root().join("compat-tests"))
        .output()
        .expect("run riffle");
    assert_eq!(out.status.code(), Some(2));
    let out = riffle()
        .args(["compat", "run", "--filter", "x", "--write-matrix", "m.md"])
        .arg(repo_root().join("compat-tests"))
        .output()
        .expect("run riffle");
    assert_eq!(
        out.status.code(),
        Some(2),
        "--write-matrix needs a full run"
    );
}
