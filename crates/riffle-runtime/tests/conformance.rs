//! Runs the conformance cases (`compat-tests/cases`) on Riffle's engine and compares the output
//! with what Flink 2.3 produced.
//!
//! Every case ends up as passed, failed, or unsupported (the planner rejected it with an
//! `unsupported-feature` diagnostic before starting). The cases known to pass are listed in
//! `tests/conformance-passing.txt`: the test fails when one of them no longer passes (a
//! regression); cases added to the suite later do not fail the test until they are added to the
//! list. Run with `RIFFLE_COMPAT_FILTER=windows/` to select cases, `RIFFLE_COMPAT_VERBOSE=1` for
//! diffs, and `RIFFLE_COMPAT_WRITE_PASSING=1` to rewrite the list from the current results.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use riffle_compat::{compare, load_cases, ActualOutput, Case};
use riffle_runtime::{PrintTarget, RunOptions};

enum Outcome {
    Passed,
    Failed(String),
    Unsupported(String),
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../compat-tests/cases")
}

fn passing_list() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-passing.txt")
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

/// The case's statements as one script, its config applied first with `SET`.
fn script(case: &Case, dir: &Path) -> Result<String, String> {
    let paths = case.write_inputs(dir).map_err(|e| e.to_string())?;
    let statements = case
        .statements_with_paths(&paths)
        .map_err(|e| e.to_string())?;
    let mut sql = String::new();
    for (k, v) in case.effective_config() {
        sql.push_str(&format!("SET '{k}' = '{v}';\n"));
    }
    for s in statements {
        sql.push_str(&s);
        sql.push_str(";\n");
    }
    Ok(sql)
}

fn run_case(case: &Case) -> Outcome {
    let Some(expected) = &case.expected else {
        return Outcome::Unsupported("no expectation recorded".into());
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return Outcome::Failed(format!("tempdir: {e}")),
    };
    let sql = match script(case, dir.path()) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e),
    };
    let actual = match riffle_plan::plan_sql(&sql) {
        Err(diags) => {
            if let Some(d) = diags.iter().find(|d| d.code == riffle_plan::UNSUPPORTED) {
                return Outcome::Unsupported(d.message.clone());
            }
            ActualOutput::Error(
                diags
                    .iter()
                    .map(|d| d.message.clone())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        Ok(graph) => {
            let lines = Arc::new(Mutex::new(Vec::new()));
            let options = RunOptions {
                print_target: PrintTarget::Capture(lines.clone()),
                ..Default::default()
            };
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(format!("runtime: {e}")),
            };
            let timeout = std::time::Duration::from_secs(case.options.timeout_secs.max(1));
            let result = runtime.block_on(async {
                tokio::time::timeout(timeout, riffle_runtime::run(&graph, options)).await
            });
            let result = match result {
                Ok(r) => r,
                Err(_) => return Outcome::Failed(format!("timed out after {timeout:?}")),
            };
            match result {
                Ok(()) => ActualOutput::Rows(lines.lock().map(|l| l.clone()).unwrap_or_default()),
                Err(e) if e.message.starts_with("unsupported feature") => {
                    return Outcome::Unsupported(e.message)
                }
                Err(e) => ActualOutput::Error(e.message),
            }
        }
    };
    let comparison = compare(expected, &actual);
    if comparison.passed() {
        Outcome::Passed
    } else {
        Outcome::Failed(comparison.to_string())
    }
}

#[test]
fn conformance_cases() {
    let filter = std::env::var("RIFFLE_COMPAT_FILTER").ok();
    let verbose = std::env::var("RIFFLE_COMPAT_VERBOSE").is_ok();
    let known = known_passing();
    let (mut passed, mut failed, mut unsupported) = (0, 0, 0);
    let mut regressions = Vec::new();
    let mut new_passes = Vec::new();
    let mut passing = Vec::new();
    for case in load_cases(&cases_dir(), filter.as_deref()) {
        let case = match case {
            Ok(c) => c,
            Err(e) => {
                regressions.push(format!("malformed case: {e}"));
                continue;
            }
        };
        match run_case(&case) {
            Outcome::Passed => {
                passed += 1;
                if !known.contains(&case.id) {
                    new_passes.push(case.id.clone());
                }
                passing.push(case.id.clone());
                println!("PASS        {}", case.id);
            }
            Outcome::Failed(why) => {
                failed += 1;
                println!("FAIL        {}", case.id);
                if verbose {
                    println!("{why}");
                }
                if known.contains(&case.id) {
                    regressions.push(format!("{}:\n{why}", case.id));
                }
            }
            Outcome::Unsupported(why) => {
                unsupported += 1;
                println!("UNSUPPORTED {} ({why})", case.id);
                if known.contains(&case.id) {
                    regressions.push(format!("{}: now unsupported: {why}", case.id));
                }
            }
        }
    }
    println!("conformance: {passed} passed, {failed} failed, {unsupported} unsupported");
    if !new_passes.is_empty() {
        println!("passing but not yet in the list: {new_passes:?}");
    }
    if filter.is_none() && std::env::var("RIFFLE_COMPAT_WRITE_PASSING").is_ok() {
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
