//! `riffle migrate FILES...`: rewrites Flink SQL jobs into jobs Riffle runs.
//!
//! Exit codes: 0 — done (items left for a human are in the report); 1 — a job could not be
//! rewritten, or `--strict` and some item is left for a human; 2 — usage or I/O error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use riffle_toolkit::migrate::{migrate_all, render_json, render_text, JobChanges, MigrateOptions};
use riffle_toolkit::JobSource;

use crate::check::collect_sql_files;

/// Arguments of `riffle migrate`.
#[derive(Args)]
pub struct MigrateArgs {
    /// Job files, or directories searched recursively for `*.sql`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// RocketMQ name server the Kafka clusters map to (tables without one use Riffle's
    /// embedded store).
    #[arg(long, value_name = "ADDR")]
    namesrv: Option<String>,
    /// TOML file mapping Kafka bootstrap servers to name servers: `[clusters]` with
    /// `"<bootstrap servers>" = "<name server>"` lines; wins over --namesrv.
    #[arg(long, value_name = "FILE")]
    cluster_map: Option<PathBuf>,
    /// Also rewrite legacy group windows (GROUP BY TUMBLE/HOP/SESSION) into window TVFs where
    /// the result is the same.
    #[arg(long)]
    modernize: bool,
    /// Rewrite the files in place.
    #[arg(long, conflicts_with = "output_dir")]
    in_place: bool,
    /// Write the rewritten jobs to DIR/<file name>.
    #[arg(long = "output-dir", short = 'o', value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Print a unified diff of every change to stdout (the report then goes to stderr).
    #[arg(long)]
    diff: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    report: ReportFormat,
    /// Write the report to this file.
    #[arg(long, value_name = "FILE")]
    report_file: Option<PathBuf>,
    /// Exit with 1 when an item is left for a human.
    #[arg(long)]
    strict: bool,
}

/// Report formats.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReportFormat {
    Text,
    Json,
}

/// Reads the job files named by `files` (directories searched for `*.sql`).
pub(crate) fn read_jobs(files: &[PathBuf]) -> Result<Vec<JobSource>, String> {
    let mut paths = Vec::new();
    for path in files {
        collect_sql_files(path, &mut paths)?;
    }
    paths
        .into_iter()
        .map(|path| {
            std::fs::read_to_string(&path)
                .map(|text| JobSource {
                    path: path.display().to_string(),
                    text,
                })
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
        })
        .collect()
}

/// Reads a cluster map file.
pub(crate) fn read_cluster_map(
    path: &Path,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    MigrateOptions::read_cluster_map(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The target of `-o DIR` for a job: DIR/<its file name>; two jobs with one name are an error.
pub(crate) fn output_paths(
    jobs: &[JobSource],
    dir: &Path,
    extension: Option<&str>,
) -> Result<Vec<PathBuf>, String> {
    let mut seen = BTreeSet::new();
    jobs.iter()
        .map(|job| {
            let name = Path::new(&job.path)
                .file_name()
                .ok_or_else(|| format!("{} has no file name", job.path))?;
            let mut target = dir.join(name);
            if let Some(ext) = extension {
                target.set_extension(ext);
            }
            if !seen.insert(target.clone()) {
                return Err(format!(
                    "two jobs would be written to {}; migrate them separately",
                    target.display()
                ));
            }
            Ok(target)
        })
        .collect()
}

/// Writes `text` to `path`.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs `riffle migrate` and returns its exit code.
pub fn run(args: MigrateArgs) -> ExitCode {
    match migrate(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn migrate(args: &MigrateArgs) -> Result<ExitCode, String> {
    let jobs = read_jobs(&args.files)?;
    let mut options = MigrateOptions {
        namesrv: args.namesrv.clone(),
        modernize: args.modernize,
        ..MigrateOptions::default()
    };
    if let Some(path) = &args.cluster_map {
        options.clusters = read_cluster_map(path)?;
    }
    let results = migrate_all(&jobs, &options);
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for (result, target) in results.iter().zip(output_paths(&jobs, dir, None)?) {
            write(&target, &result.output)?;
        }
    }
    if args.in_place {
        for result in results.iter().filter(|r| r.is_changed()) {
            write(Path::new(&result.path), &result.output)?;
        }
    }
    if args.diff {
        let diffs: String = results.iter().map(JobChanges::unified_diff).collect();
        print!("{diffs}");
    }
    let report = match args.report {
        ReportFormat::Text => render_text(&results, ""),
        ReportFormat::Json => render_json(&results) + "\n",
    };
    match &args.report_file {
        Some(path) => write(path, &report)?,
        None if args.diff => eprint!("{report}"),
        None => print!("{report}"),
    }
    let failed = results.iter().any(|r| r.error.is_some());
    let manual = results.iter().any(|r| !r.manual.is_empty());
    Ok(if failed || (args.strict && manual) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
