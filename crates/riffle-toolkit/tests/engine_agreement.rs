//! `riffle check` and `riffle run` must agree: when the engine plans a job, the check report may
//! not call any SQL feature, function or configuration in it unsupported. The support statuses in `dialects/` are data kept by hand,
//! so this test holds them to the engine over every fixture job and every conformance case.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use riffle_toolkit::{check_job, JobSource, Status};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every SQL file below `dir`, sorted.
fn sql_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sql_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "sql") {
            out.push(path);
        }
    }
    out.sort();
}

/// The scripts to compare on: fixture jobs, and each conformance case as the runner assembles it.
fn scripts(inputs: &Path) -> Vec<(String, String)> {
    let mut scripts = Vec::new();
    let mut files = Vec::new();
    sql_files(&workspace().join("fixtures"), &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).expect("fixture readable");
        scripts.push((file.display().to_string(), text));
    }
    for case in riffle_compat::load_cases(&workspace().join("compat-tests/cases"), None) {
        let case = case.expect("conformance case parses");
        if !matches!(case.expected, Some(riffle_compat::Expected::Rows(_))) {
            continue;
        }
        let dir = inputs.join(case.id.replace('/', "__"));
        std::fs::create_dir_all(&dir).expect("input dir");
        let paths = case.write_inputs(&dir).expect("inputs written");
        let mut sql = String::new();
        for (k, v) in case.effective_config() {
            sql.push_str(&format!("SET '{k}' = '{v}';\n"));
        }
        for statement in case.statements_with_paths(&paths).expect("statements") {
            sql.push_str(&statement);
            sql.push_str(";\n");
        }
        scripts.push((case.id.clone(), sql));
    }
    scripts
}

/// Constructs the planner does not see (hints are comments to it) and that `riffle run` refuses
/// through the check report instead.
const PLANNER_PASSES_OVER: &[&str] = &["hint.options", "hint.state-ttl"];

#[test]
fn check_calls_nothing_unsupported_that_the_engine_plans() {
    let inputs = tempfile::tempdir().expect("tempdir");
    // feature code → the scripts the engine plans although check calls the feature unsupported.
    let mut stale: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut planned = 0;
    for (name, sql) in scripts(inputs.path()) {
        if riffle_plan::plan_sql(&sql).is_err() {
            continue;
        }
        planned += 1;
        let report = check_job(&JobSource {
            path: name.clone(),
            text: sql,
        });
        for finding in report.findings {
            // Connectors resolve their formats and options when a subtask opens (the files or
            // topics must exist), after planning; the planner accepting a job says nothing about
            // them, so their statuses are not held to it here.
            let opened_later = ["connector.", "format.", "option."]
                .iter()
                .any(|p| finding.code.starts_with(p));
            if finding.status >= Status::Unsupported
                && !opened_later
                && !PLANNER_PASSES_OVER.contains(&finding.code.as_str())
            {
                stale.entry(finding.code).or_default().push(name.clone());
            }
        }
    }
    assert!(planned > 100, "only {planned} scripts planned");
    let listing: Vec<String> = stale
        .iter()
        .map(|(code, names)| format!("{code}: {} (e.g. {})", names.len(), names[0]))
        .collect();
    assert!(
        stale.is_empty(),
        "the engine plans these, but check reports them unsupported — flip their status in \
         dialects/ (or make the planner reject them):\n{}",
        listing.join("\n")
    );
}
