//! `riffle compat run SUITE`: runs the conformance cases on Riffle's engine and compares each
//! output with the one real Flink produced.
//!
//! Text output has one line per case (`PASS id`, `FAIL id` followed by the diff, `UNSUPPORTED id
//! (feature)`) and ends with the summary `N passed, N failed, N unsupported`; `--format json`
//! prints one JSON document instead. `--write-matrix FILE` also renders the compatibility matrix
//! from the run. Exit codes: 0 — no case failed; 1 — at least one failed; 2 — usage or I/O error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use riffle_compat::{render_matrix, run_suite, CaseResult, Outcome, Summary};

/// Arguments of `riffle compat`.
#[derive(Args)]
pub struct CompatArgs {
    #[command(subcommand)]
    command: CompatCommand,
}

#[derive(Subcommand)]
enum CompatCommand {
    /// Run the conformance cases on the engine and compare with Flink's recorded output.
    Run(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// The suite: a directory holding `cases/` (e.g. `compat-tests/`), or the cases directory.
    suite: PathBuf,
    /// Only cases whose id (`area/name`) contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print the notes of passing cases (e.g. an error message worded unlike Flink's).
    #[arg(long, short)]
    verbose: bool,
    /// Write the compatibility matrix rendered from this run to FILE (needs a full run).
    #[arg(long, value_name = "FILE", conflicts_with = "filter")]
    write_matrix: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Runs `riffle compat` and returns its exit code.
pub fn run(args: CompatArgs) -> ExitCode {
    match args.command {
        CompatCommand::Run(args) => run_cases(&args),
    }
}

fn run_cases(args: &RunArgs) -> ExitCode {
    let cases_dir = cases_dir(&args.suite);
    if !cases_dir.is_dir() {
        eprintln!("error: {} is not a directory", cases_dir.display());
        return ExitCode::from(2);
    }
    let text = args.format == Format::Text;
    let results = run_suite(&cases_dir, args.filter.as_deref(), |r| {
        if text {
            print!("{}", render_text(r, args.verbose));
        }
    });
    if results.is_empty() {
        eprintln!("error: no case in {} matches", cases_dir.display());
        return ExitCode::from(2);
    }
    let summary = Summary::of(&results);
    if text {
        println!("{summary}");
    } else {
        let doc = serde_json::json!({ "cases": results, "summary": summary });
        match serde_json::to_string_pretty(&doc) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("error: cannot render JSON: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(path) = &args.write_matrix {
        if let Err(e) = std::fs::write(path, render_matrix(&results)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
        eprintln!("wrote {}", path.display());
    }
    if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `compat-tests/` holds `cases/`; a directory without one is taken as the cases directory.
fn cases_dir(suite: &Path) -> PathBuf {
    let nested = suite.join("cases");
    if nested.is_dir() {
        nested
    } else {
        suite.to_path_buf()
    }
}

/// One case's lines: the verdict, then the diff of a failure (or notes, when verbose), indented.
fn render_text(result: &CaseResult, verbose: bool) -> String {
    let mut out = match &result.outcome {
        Outcome::Unsupported { feature } => format!("UNSUPPORTED {} ({feature})\n", result.id),
        outcome => format!("{} {}\n", outcome.label(), result.id),
    };
    let details: Vec<String> = match &result.outcome {
        Outcome::Failed { report } => report.lines().map(str::to_string).collect(),
        Outcome::Passed { notes } if verbose => {
            notes.iter().map(|n| format!("note: {n}")).collect()
        }
        _ => Vec::new(),
    };
    for line in details {
        out.push_str("    ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(outcome: Outcome) -> CaseResult {
        CaseResult {
            id: "windows/tumble".into(),
            area: "windows".into(),
            outcome,
        }
    }

    #[test]
    fn failures_show_their_diff_indented() {
        let r = result(Outcome::Failed {
            report: "FAIL rows (as a multiset):\n-+I[1]\n++I[2]\n".into(),
        });
        insta::assert_snapshot!(render_text(&r, false), @r"
        FAIL windows/tumble
            FAIL rows (as a multiset):
            -+I[1]
            ++I[2]
        ");
    }

    #[test]
    fn unsupported_names_the_feature() {
        let r = result(Outcome::Unsupported {
            feature: "OVER windows".into(),
        });
        assert_eq!(
            render_text(&r, false),
            "UNSUPPORTED windows/tumble (OVER windows)\n"
        );
    }

    #[test]
    fn notes_of_passing_cases_only_when_verbose() {
        let r = result(Outcome::Passed {
            notes: vec!["message differs".into()],
        });
        assert_eq!(render_text(&r, false), "PASS windows/tumble\n");
        assert_eq!(
            render_text(&r, true),
            "PASS windows/tumble\n    note: message differs\n"
        );
    }
}
