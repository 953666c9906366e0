//! Runs the conformance cases (`compat-tests/cases`) on Riffle's engine and compares the output
//! with what Flink 2.3 produced (the same run as `riffle compat run compat-tests/`).
//!
//! Two checks:
//! * **ratchet**: the cases known to pass are listed in `tests/conformance-passing.txt`; the
//!   test fails when one of them no longer passes (a regression). Cases that pass but are not
//!   listed yet do not fail it.
//! * **matrix**: on a full run (no filter), `docs/compatibility.md` must be what the run
//!   renders, so the published matrix never goes stale.
//!
//! Environment: `RIFFLE_COMPAT_FILTER=windows/` selects cases (id substring),
//! `RIFFLE_COMPAT_VERBOSE=1` prints each failure's diff, and `RIFFLE_COMPAT_WRITE_PASSING=1`
//! rewrites the list from the current results (full runs only).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use riffle_compat::{
    render_matrix, run_suite, CaseResult, Outcome, Summary, MATRIX_COMMAND, MATRIX_PATH,
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn passing_list() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-passing.txt")
}

fn filter() -> Option<String> {
    std::env::var("RIFFLE_COMPAT_FILTER").ok()
}

/// The suite's results, computed once and shared by both tests (they run concurrently).
fn results() -> &'static [CaseResult] {
    static RESULTS: OnceLock<Vec<CaseResult>> = OnceLock::new();
    RESULTS.get_or_init(|| {
        let verbose = std::env::var("RIFFLE_COMPAT_VERBOSE").is_ok();
        let results = run_suite(
            &repo_root().join("compat-tests/cases"),
            filter().as_deref(),
            |r| match &r.outcome {
                Outcome::Passed { .. } => println!("PASS        {}", r.id),
                Outcome::Failed { report } => {
                    println!("FAIL        {}", r.id);
                    if verbose {
                        println!("{report}");
                    }
                }
                Outcome::Unsupported { feature } => {
                    println!("UNSUPPORTED {} ({feature})", r.id)
                }
            },
        );
        println!("conformance: {}", Summary::of(&results));
        results
    })
}

fn known_passing() -> BTreeSet<String> {
    std::fs::read_to_string(passing_list())
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn conformance_cases() {
    let results = results();
    let known = known_passing();
    let mut regressions = Vec::new();
    let mut new_passes = Vec::new();
    for r in results {
        let listed = known.contains(&r.id);
        match &r.outcome {
            Outcome::Passed { .. } if !listed => new_passes.push(r.id.as_str()),
            Outcome::Passed { .. } => {}
            Outcome::Failed { report } if listed || report.starts_with("malformed case") => {
                regressions.push(format!("{}:\n{report}", r.id))
            }
            Outcome::Unsupported { feature } if listed => {
                regressions.push(format!("{}: now unsupported: {feature}", r.id))
            }
            Outcome::Failed { .. } | Outcome::Unsupported { .. } => {}
        }
    }
    if !new_passes.is_empty() {
        println!("passing but not yet in the list: {new_passes:?}");
    }
    if filter().is_none() && std::env::var("RIFFLE_COMPAT_WRITE_PASSING").is_ok() {
        let passing: Vec<&str> = results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Passed { .. }))
            .map(|r| r.id.as_str())
            .collect();
        let text = format!(
            "# Conformance cases the engine passes (kept by the conformance test).\n{}\n",
            passing.join("\n")
        );
        std::fs::write(passing_list(), text).expect("write the passing list");
    }
    assert!(
        regressions.is_empty(),
        "cases that passed before and do not now:\n{}",
        regressions.join("\n")
    );
}

#[test]
fn compatibility_matrix_is_current() {
    if filter().is_some() {
        return; // a partial run cannot render the whole matrix
    }
    let rendered = render_matrix(results());
    if std::env::var_os("RIFFLE_COMPAT_WRITE_PASSING").is_some() {
        std::fs::write(repo_root().join(MATRIX_PATH), &rendered).expect("write the matrix");
    }
    let committed = std::fs::read_to_string(repo_root().join(MATRIX_PATH)).unwrap_or_default();
    assert!(
        committed == rendered,
        "{MATRIX_PATH} is stale: run `{MATRIX_COMMAND}` to refresh it"
    );
}
