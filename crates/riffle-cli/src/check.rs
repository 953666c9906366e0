//! `riffle check FILES...`
//!
//! Exit codes: 0 — no finding at or above `--fail-on`; 1 — at least one such finding;
//! 2 — usage or I/O error (a file could not be read).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use riffle_toolkit::render;
use riffle_toolkit::{check_all, JobSource, Status};

/// Arguments of `riffle check`.
#[derive(Args)]
pub struct CheckArgs {
    /// Job files, or directories searched recursively for `*.sql`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Exit with 1 when a finding is at or above this level.
    #[arg(long, value_enum, default_value_t = Level::NeedsMigration)]
    fail_on: Level,
    /// Also list supported features (text, SARIF); JSON always lists everything.
    #[arg(long, short)]
    verbose: bool,
    /// Write the report to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Report formats.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
    Sarif,
    Junit,
}

/// `--fail-on` levels, from strictest to most lenient.
#[derive(Clone, Copy, ValueEnum)]
enum Level {
    NeedsMigration,
    Unsupported,
    Error,
    Never,
}

/// Runs `riffle check` and returns its exit code.
pub fn run(args: CheckArgs) -> ExitCode {
    let mut paths = Vec::new();
    for path in &args.files {
        if let Err(message) = collect_sql_files(path, &mut paths) {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    }
    let mut jobs = Vec::with_capacity(paths.len());
    for path in paths {
        match std::fs::read_to_string(&path) {
            Ok(text) => jobs.push(JobSource {
                path: path.display().to_string(),
                text,
            }),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let reports = check_all(&jobs);
    let fail_on = match args.fail_on {
        Level::NeedsMigration => Some(Status::NeedsMigration),
        Level::Unsupported => Some(Status::Unsupported),
        Level::Error => Some(Status::Error),
        Level::Never => None,
    };
    let shown = if args.verbose {
        Status::Supported
    } else {
        Status::NeedsMigration
    };
    let text = match args.format {
        Format::Text => render::render_text(&reports, shown),
        Format::Json => render::render_json(&reports),
        Format::Sarif => render::render_sarif(&reports, shown),
        Format::Junit => render::render_junit(&reports, fail_on.unwrap_or(Status::Error)),
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        None => print!("{text}"),
    }
    let failed = fail_on.is_some_and(|level| reports.iter().any(|r| r.status >= level));
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Adds `path` (a file) or every `*.sql` file under it (a directory, sorted) to `out`.
pub(crate) fn collect_sql_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let metadata =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !metadata.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("cannot read directory {}: {e}", path.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect_sql_files(&entry, out)?;
        } else if entry.extension().is_some_and(|ext| ext == "sql") {
            out.push(entry);
        }
    }
    Ok(())
}
