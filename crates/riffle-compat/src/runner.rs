//! Running conformance cases on Riffle's engine: build the case's script, plan it with
//! `riffle_plan`, run it with `riffle_runtime`, and judge the output with [`compare`].
//!
//! Both the `riffle compat run` command and the `cargo test` ratchet use this module, so the
//! two always agree on what passes.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use riffle_runtime::{PrintTarget, RunOptions};
use serde::Serialize;

use crate::case::{load_cases, Case, CaseError};
use crate::compare::{compare, ActualOutput};

/// What the planner's and the runtime's messages start with when Riffle lacks a feature.
const UNSUPPORTED_PREFIX: &str = "unsupported feature: ";

/// The verdict for one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    /// The engine's output conforms to Flink's.
    Passed {
        /// Remarks that did not fail the case (e.g. an error message worded differently).
        notes: Vec<String>,
    },
    /// The engine's output differs from Flink's, the engine failed where Flink did not, or the
    /// case could not be run at all.
    Failed {
        /// What went wrong: the failed comparison rules with a unified diff each (`-` expected,
        /// `+` actual), or the reason the case could not run.
        report: String,
    },
    /// The engine rejected the case because it lacks a feature.
    Unsupported {
        /// The missing feature, as the engine names it.
        feature: String,
    },
}

impl Outcome {
    fn failed(report: impl Into<String>) -> Outcome {
        Outcome::Failed {
            report: report.into(),
        }
    }

    /// The status word printed for the outcome: `PASS`, `FAIL` or `UNSUPPORTED`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Passed { .. } => "PASS",
            Outcome::Failed { .. } => "FAIL",
            Outcome::Unsupported { .. } => "UNSUPPORTED",
        }
    }
}

/// One case's id, feature area and verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case id, `<area>/<name>`.
    pub id: String,
    /// The feature area (the first component of the id).
    pub area: String,
    /// The verdict.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// How many cases passed, failed and were unsupported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Summary {
    /// Cases whose output conforms.
    pub passed: usize,
    /// Cases whose output differs (or that could not run).
    pub failed: usize,
    /// Cases the engine rejected for a missing feature.
    pub unsupported: usize,
}

impl Summary {
    /// Counts the outcomes of `results`.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Summary {
        let mut s = Summary::default();
        for r in results {
            s.add(&r.outcome);
        }
        s
    }

    /// Counts one more outcome.
    pub fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Passed { .. } => self.passed += 1,
            Outcome::Failed { .. } => self.failed += 1,
            Outcome::Unsupported { .. } => self.unsupported += 1,
        }
    }

    /// Every case counted.
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.unsupported
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} unsupported",
            self.passed, self.failed, self.unsupported
        )
    }
}

/// Runs every case below `cases_dir` whose id contains `filter` (sorted by id), calling
/// `on_result` as each finishes. A malformed case file fails under its own id.
pub fn run_suite(
    cases_dir: &Path,
    filter: Option<&str>,
    mut on_result: impl FnMut(&CaseResult),
) -> Vec<CaseResult> {
    let mut results = Vec::new();
    for loaded in load_cases(cases_dir, filter) {
        let result = match loaded {
            Ok(case) => CaseResult {
                id: case.id.clone(),
                area: case.area().to_string(),
                outcome: run_case(&case),
            },
            Err(e) => {
                let id = malformed_id(cases_dir, &e);
                CaseResult {
                    area: id.split('/').next().unwrap_or_default().to_string(),
                    id,
                    outcome: Outcome::failed(format!("malformed case: {e}")),
                }
            }
        };
        on_result(&result);
        results.push(result);
    }
    results
}

/// The id a malformed case file would have had (its path below `cases_dir`, no extension).
fn malformed_id(cases_dir: &Path, error: &CaseError) -> String {
    let file = match error {
        CaseError::Malformed { file, .. } | CaseError::Io { file, .. } => Path::new(file),
    };
    let relative = file.strip_prefix(cases_dir).unwrap_or(file);
    relative
        .with_extension("")
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs one case on the engine and compares its output with the expectation.
pub fn run_case(case: &Case) -> Outcome {
    let Some(expected) = &case.expected else {
        return Outcome::failed(
            "no expectation recorded: run compat-tests/oracle/regenerate --missing",
        );
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return Outcome::failed(format!("cannot create a directory for the inputs: {e}")),
    };
    let jobs = match scripts(case, dir.path()) {
        Ok(s) => s,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    let timeout = Duration::from_secs(case.options.timeout_secs.max(1));
    let actual = match execute_in_order(&jobs, timeout) {
        Ok(actual) => actual,
        Err(outcome) => return outcome,
    };
    let comparison = compare(expected, &actual);
    if comparison.passed() {
        Outcome::Passed {
            notes: comparison.notes,
        }
    } else {
        Outcome::failed(comparison.to_string())
    }
}

/// The case's statements as the scripts of its jobs, in order: the harness defaults and the
/// case's config first, as `SET`s, then the statements with input paths substituted (the inputs
/// are written to `dir`). As in Flink, where every `INSERT` or query is a job of its own that
/// ends before the next statement runs, a case with several of them becomes one script per
/// job (each with the DDL before it), so a query can read what an earlier `INSERT` wrote.
fn scripts(case: &Case, dir: &Path) -> Result<Vec<String>, CaseError> {
    let paths = case.write_inputs(dir)?;
    let statements = case.statements_with_paths(&paths)?;
    let mut prelude = String::new();
    for (k, v) in case.effective_config() {
        prelude.push_str(&format!("SET '{}' = '{}';\n", quote(&k), quote(&v)));
    }
    let jobs = statements.iter().filter(|s| !is_ddl(s)).count();
    if jobs <= 1 {
        let mut sql = prelude;
        for s in &statements {
            sql.push_str(s);
            sql.push_str(";\n");
        }
        return Ok(vec![sql]);
    }
    let mut scripts = Vec::new();
    let mut context = prelude;
    for s in &statements {
        if is_ddl(s) {
            context.push_str(s);
            context.push_str(";\n");
        } else {
            scripts.push(format!("{context}{s};\n"));
        }
    }
    Ok(scripts)
}

/// True for a statement that only declares or drops objects (it runs no job).
fn is_ddl(statement: &str) -> bool {
    let code = statement
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with("--"))
        .unwrap_or_default();
    let first = code
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    matches!(first.as_str(), "CREATE" | "DROP" | "ALTER" | "USE")
}

/// Runs the jobs one after the other; their printed rows, or the first job's error.
fn execute_in_order(jobs: &[String], timeout: Duration) -> Result<ActualOutput, Outcome> {
    let mut rows = Vec::new();
    for sql in jobs {
        match execute(sql, timeout)? {
            ActualOutput::Rows(lines) => rows.extend(lines),
            error => return Ok(error),
        }
    }
    Ok(ActualOutput::Rows(rows))
}

/// Escapes a SQL string literal's content.
fn quote(text: &str) -> String {
    text.replace('\'', "''")
}

/// Plans and runs `sql`; the engine's printed rows or error, or the case's final outcome when
/// the engine lacks a feature or the run could not finish.
fn execute(sql: &str, timeout: Duration) -> Result<ActualOutput, Outcome> {
    let graph = match riffle_plan::plan_sql(sql) {
        Ok(graph) => graph,
        Err(diags) => {
            if let Some(d) = diags.iter().find(|d| d.code == riffle_plan::UNSUPPORTED) {
                return Err(unsupported(&d.message));
            }
            let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
            return Ok(ActualOutput::Error(messages.join("\n")));
        }
    };
    let lines = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        print_target: PrintTarget::Capture(lines.clone()),
        ..Default::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Outcome::failed(format!("cannot start the tokio runtime: {e}")))?;
    let result = runtime
        .block_on(async {
            tokio::time::timeout(timeout, riffle_runtime::run(&graph, options)).await
        })
        .map_err(|_| Outcome::failed(format!("timed out after {} s", timeout.as_secs())))?;
    match result {
        Ok(()) => Ok(ActualOutput::Rows(
            lines.lock().map(|l| l.clone()).unwrap_or_default(),
        )),
        Err(e) if e.message.starts_with(UNSUPPORTED_PREFIX) => Err(unsupported(&e.message)),
        Err(e) => Ok(ActualOutput::Error(e.message)),
    }
}

/// An unsupported outcome naming the feature (the message without its common prefix).
fn unsupported(message: &str) -> Outcome {
    Outcome::Unsupported {
        feature: message
            .strip_prefix(UNSUPPORTED_PREFIX)
            .unwrap_or(message)
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(text: &str) -> Case {
        Case::parse("area/name.test", text).expect("a well-formed case")
    }

    const INPUT_AND_DDL: &str = "--- input t\na,1\nb,2\na,3\n--- sql\nCREATE TABLE t (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '${t}', 'format' = 'csv');\n";

    #[test]
    fn a_conforming_case_passes() {
        let c = case(&format!(
            "{INPUT_AND_DDL}SELECT k, v FROM t WHERE v > 1;\n--- expected (flink 2.3.0)\n+I[b, 2]\n+I[a, 3]\n"
        ));
        assert_eq!(run_case(&c), Outcome::Passed { notes: vec![] });
    }

    #[test]
    fn a_changed_expected_row_fails_with_a_diff() {
        let c = case(&format!(
            "{INPUT_AND_DDL}SELECT k, v FROM t WHERE v > 1;\n--- expected (flink 2.3.0)\n+I[b, 2]\n+I[a, 4]\n"
        ));
        let Outcome::Failed { report } = run_case(&c) else {
            panic!("expected a failure")
        };
        insta::assert_snapshot!(report, @r"
        FAIL rows (as a multiset):
        --- expected
        +++ actual
        @@ -1,2 +1,2 @@
        -+I[a, 4]
        ++I[a, 3]
         +I[b, 2]
        ");
    }

    #[test]
    fn a_case_without_expectation_fails() {
        let c = case(&format!("{INPUT_AND_DDL}SELECT k FROM t;\n"));
        assert!(matches!(run_case(&c), Outcome::Failed { .. }));
    }

    #[test]
    fn an_unsupported_feature_is_named_without_the_prefix() {
        assert_eq!(
            unsupported("unsupported feature: OVER windows"),
            Outcome::Unsupported {
                feature: "OVER windows".into()
            }
        );
    }

    #[test]
    fn config_values_are_quoted() {
        let c = case("--- config\na.b = it's\n--- sql\nSELECT 1;\n");
        let dir = tempfile::tempdir().expect("tempdir");
        let sql = scripts(&c, dir.path()).expect("script").concat();
        assert!(sql.contains("SET 'a.b' = 'it''s';"), "{sql}");
    }

    #[test]
    fn every_job_of_a_case_is_a_script_with_the_ddl_before_it() {
        let c = case(
            "--- sql\nCREATE TABLE a (x INT) WITH ('connector' = 'print');\nINSERT INTO a VALUES (1);\n-- read back\nCREATE VIEW v AS SELECT 2;\nSELECT * FROM v;\n",
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let jobs = scripts(&c, dir.path()).expect("scripts");
        assert_eq!(jobs.len(), 2, "{jobs:?}");
        assert!(
            jobs[0].ends_with(
                "CREATE TABLE a (x INT) WITH ('connector' = 'print');\nINSERT INTO a VALUES (1);\n"
            ),
            "{}",
            jobs[0]
        );
        assert!(!jobs[0].contains("VIEW"), "{}", jobs[0]);
        assert!(
            jobs[1].contains("CREATE VIEW v AS SELECT 2;\nSELECT * FROM v;"),
            "{}",
            jobs[1]
        );
        assert!(!jobs[1].contains("INSERT"), "{}", jobs[1]);
    }

    #[test]
    fn a_query_reads_what_an_earlier_insert_wrote() {
        let c = case(
            "--- input t\n1\n2\n--- sql\nCREATE TABLE t (v INT) WITH ('connector' = 'filesystem', 'path' = '${t}', 'format' = 'csv');\nCREATE TABLE o (v INT) WITH ('connector' = 'filesystem', 'path' = '${t}-out', 'format' = 'csv');\nINSERT INTO o SELECT v * 10 FROM t;\nSELECT v FROM o;\n--- expected (flink 2.3.0)\n+I[10]\n+I[20]\n",
        );
        assert_eq!(run_case(&c), Outcome::Passed { notes: vec![] });
    }

    #[test]
    fn summary_prints_the_three_counts() {
        let mut s = Summary::default();
        s.add(&Outcome::Passed { notes: vec![] });
        s.add(&Outcome::failed("x"));
        s.add(&Outcome::failed("y"));
        assert_eq!(s.to_string(), "1 passed, 2 failed, 0 unsupported");
        assert_eq!(s.total(), 3);
    }

    #[test]
    fn malformed_files_keep_their_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("joins")).expect("mkdir");
        std::fs::write(dir.path().join("joins/bad.test"), "--- bogus\n").expect("write");
        let results = run_suite(dir.path(), None, |_| {});
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].id, "joins/bad");
        assert_eq!(results[0].area, "joins");
        assert!(matches!(results[0].outcome, Outcome::Failed { .. }));
    }
}
