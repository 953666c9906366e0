//! `riffle run JOB.sql`: plans every INSERT (and a bare query) of a Flink SQL script as one job
//! and runs it natively until its bounded inputs are exhausted, or until Ctrl-C.
//!
//! Print sinks and query results go to stdout; everything else (diagnostics, progress) to
//! stderr. On a terminal, a progress line (rows read and written, and for inputs of known
//! size a bar) shows on stderr while the job runs, unless printed rows share the terminal. Exit codes: 0 — the job finished; 1 — the job was rejected (with a located
//! diagnostic) or failed; 2 — the file could not be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use riffle_sql::Diagnostic;
use riffle_toolkit::render::render_text;
use riffle_toolkit::{check_job, JobSource, Status};

/// Arguments of `riffle run`.
#[derive(Args)]
pub struct RunArgs {
    /// The Flink SQL script to run.
    file: PathBuf,
    /// Configuration applied before the script's own `SET`s, as `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The job's id, naming its checkpoints (default: `pipeline.name`, else a hash of the
    /// script and its `--set`s). A checkpointed job resumes from the latest completed
    /// checkpoint of its id.
    #[arg(long = "job-id", value_name = "ID")]
    job_id: Option<String>,
    /// Start from this savepoint (`riffle savepoint`) or checkpoint directory instead of the
    /// job's newest checkpoint (needs checkpointing on).
    #[arg(long = "from-savepoint", value_name = "DIR")]
    from_savepoint: Option<PathBuf>,
    /// Run the job split into per-queue units over shuffle topics, sharing the units with
    /// every `riffle run` of the same job and group (start it several times; see
    /// docs/scale-out.md).
    #[arg(long = "group", value_name = "NAME", conflicts_with = "from_savepoint")]
    group: Option<String>,
}

/// Runs `riffle run` and returns its exit code.
pub fn run(args: RunArgs) -> ExitCode {
    let sql = match std::fs::read_to_string(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let mut prelude = String::new();
    for kv in &args.set {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("error: --set expects KEY=VALUE, got '{kv}'");
            return ExitCode::from(2);
        };
        prelude.push_str(&format!(
            "SET '{}' = '{}';\n",
            k.trim().replace('\'', "''"),
            v.trim().replace('\'', "''")
        ));
    }
    // A job runs only when `riffle check` finds nothing unsupported in it, with the same
    // diagnostics: the check also knows constructs the planner passes over (hints).
    let report = check_job(&JobSource {
        path: args.file.display().to_string(),
        text: sql.clone(),
    });
    if report.status >= Status::Unsupported {
        eprint!("{}", render_text(&[report], Status::Unsupported));
        return ExitCode::from(1);
    }
    let graph = match plan_file(&args.file, &sql, &prelude) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let job_id = job_id(args.job_id.as_deref(), &graph, &format!("{prelude}{sql}"));
    if args.from_savepoint.is_some()
        && !graph
            .config
            .contains_key("execution.checkpointing.interval")
    {
        eprintln!(
            "error: --from-savepoint needs checkpointing: set 'execution.checkpointing.interval'"
        );
        return ExitCode::from(2);
    }
    if let Some(group) = &args.group {
        return match riffle_cluster::runner::run_blocking(&graph, &job_id, Some(group)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: job failed: {e}");
                ExitCode::from(1)
            }
        };
    }
    let options = riffle_runtime::RunOptions {
        print_target: riffle_runtime::PrintTarget::Stdout,
        job_id: Some(job_id),
        from_savepoint: args.from_savepoint,
        ..Default::default()
    };
    let metrics = riffle_runtime::metrics::JobMetrics::new(&graph);
    let progress = crate::progress::Progress::start(&graph, metrics.clone());
    let result =
        riffle_runtime::run_blocking_with_metrics(&graph, options, std::future::pending(), metrics);
    if let Some(progress) = progress {
        progress.finish();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: job failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// The job id: given, else `pipeline.name` (characters other than letters, digits, `-`, `_`
/// and `.` become `-`), else a hash of the script text.
fn job_id(given: Option<&str>, graph: &riffle_plan::JobGraph, script: &str) -> String {
    if let Some(id) = given {
        return id.to_string();
    }
    match graph.config.get("pipeline.name") {
        Some(name) if !name.trim().is_empty() => name
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_start_matches('.')
            .to_string(),
        _ => riffle_runtime::checkpoint::job_id_for(script),
    }
}

/// Plans `sql` (after `prelude`, whose lines are not part of the file); prints located
/// diagnostics on failure.
pub fn plan_file(path: &Path, sql: &str, prelude: &str) -> Result<riffle_plan::JobGraph, ExitCode> {
    let offset = prelude.lines().count() as u64;
    let text = format!("{prelude}{sql}");
    riffle_plan::plan_sql(&text).map_err(|diagnostics| {
        for d in &diagnostics {
            eprintln!("{}", render(path, d, offset));
        }
        ExitCode::from(1)
    })
}

/// `file:line:col: error[code]: message`.
fn render(path: &Path, d: &Diagnostic, line_offset: u64) -> String {
    let severity = match d.severity {
        riffle_sql::Severity::Error => "error",
        riffle_sql::Severity::Warning => "warning",
        riffle_sql::Severity::Note => "note",
    };
    let mut out = if d.span.is_unknown() {
        format!("{}: {severity}[{}]: {}", path.display(), d.code, d.message)
    } else {
        format!(
            "{}:{}:{}: {severity}[{}]: {}",
            path.display(),
            d.span.start.line.saturating_sub(line_offset),
            d.span.start.column,
            d.code,
            d.message
        )
    };
    if let Some(help) = &d.help {
        out.push_str(&format!("\n  help: {help}"));
    }
    out
}
