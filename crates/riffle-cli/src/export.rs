//! `riffle export FILES... --flink-version V`: turns Riffle jobs into Flink SQL for a Flink
//! release, and optionally a deployment bundle.
//!
//! Exit codes: 0 — done (items left for a human are in the report); 1 — a job could not be
//! exported, or `--strict` and some item is left for a human; 2 — usage or I/O error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use riffle_toolkit::export::bundle::{bundle, BundleOptions};
use riffle_toolkit::export::{export_all, ExportOptions, SinkConnector, DEFAULT_ROCKETMQ_RELEASE};
use riffle_toolkit::migrate::{render_json, render_text, JobChanges};

use crate::migrate::{output_paths, read_cluster_map, read_jobs, write, ReportFormat};

/// Arguments of `riffle export`.
#[derive(Args)]
pub struct ExportArgs {
    /// Job files, or directories searched recursively for `*.sql`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The Flink release the SQL must run on (1.15 ... 2.3).
    #[arg(long, value_name = "VERSION")]
    flink_version: String,
    /// Where rocketmq tables go: the rocketmq-flink connector, or Flink's Kafka connectors.
    #[arg(long, value_enum, default_value_t = Connector::Rocketmq)]
    sink_connector: Connector,
    /// The rocketmq-flink release whose option keys to write (see dialects/mappings/rocketmq-keys.toml).
    #[arg(long, value_name = "RELEASE", default_value = DEFAULT_ROCKETMQ_RELEASE)]
    rocketmq_flink: String,
    /// RocketMQ name server for tables on Riffle's embedded store.
    #[arg(long, value_name = "ADDR")]
    namesrv: Option<String>,
    /// Kafka bootstrap servers for --sink-connector kafka.
    #[arg(long, value_name = "SERVERS")]
    bootstrap_servers: Option<String>,
    /// TOML cluster map (as for `riffle migrate`), read from name servers back to Kafka servers.
    #[arg(long, value_name = "FILE")]
    cluster_map: Option<PathBuf>,
    /// Write DIR/<name>.sql for every job (without it, one job's SQL goes to stdout).
    #[arg(long = "output-dir", short = 'o', value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// With -o: also write each job's deployment bundle (Kubernetes operator manifests,
    /// Dockerfile, jar list, report).
    #[arg(long, requires = "output_dir")]
    bundle: bool,
    /// Container image of the manifests (default: <job name>:latest, built from the Dockerfile).
    #[arg(long)]
    image: Option<String>,
    /// The session cluster of the FlinkSessionJob manifest.
    #[arg(long, default_value = "flink-session")]
    session_cluster: String,
    /// Job parallelism in the manifests.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    /// Report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    report: ReportFormat,
    /// Write the report to this file (by default it goes to stderr).
    #[arg(long, value_name = "FILE")]
    report_file: Option<PathBuf>,
    /// Exit with 1 when an item is left for a human.
    #[arg(long)]
    strict: bool,
}

/// Export connectors for rocketmq tables.
#[derive(Clone, Copy, ValueEnum)]
enum Connector {
    Rocketmq,
    Kafka,
}

/// Runs `riffle export` and returns its exit code.
pub fn run(args: ExportArgs) -> ExitCode {
    match export(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn export(args: &ExportArgs) -> Result<ExitCode, String> {
    let mut options = ExportOptions::for_flink(&args.flink_version)?;
    options.connector = match args.sink_connector {
        Connector::Kafka => SinkConnector::Kafka,
        Connector::Rocketmq => SinkConnector::Rocketmq {
            release: args.rocketmq_flink.clone(),
        },
    };
    options.namesrv = args.namesrv.clone();
    options.bootstrap_servers = args.bootstrap_servers.clone();
    if let Some(path) = &args.cluster_map {
        options.clusters = read_cluster_map(path)?;
    }
    let jobs = read_jobs(&args.files)?;
    let exported = export_all(&jobs, &options);
    match &args.output_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            for (job, target) in exported.iter().zip(output_paths(&jobs, dir, Some("sql"))?) {
                if !args.bundle {
                    write(&target, &job.changes.output)?;
                    continue;
                }
                let stem = target
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mut bundle_options = BundleOptions::for_job(&stem);
                bundle_options.image = args.image.clone();
                bundle_options.session_cluster = args.session_cluster.clone();
                bundle_options.parallelism = args.parallelism;
                for file in bundle(job, &stem, &bundle_options) {
                    write(&dir.join(&file.name), &file.contents)?;
                }
            }
        }
        None => match exported.as_slice() {
            [one] => print!("{}", one.changes.output),
            _ => return Err("several jobs: give -o DIR to write their SQL".to_string()),
        },
    }
    let changes: Vec<JobChanges> = exported.iter().map(|e| e.changes.clone()).collect();
    let report = match args.report {
        ReportFormat::Text => render_text(&changes, ""),
        ReportFormat::Json => render_json(&changes) + "\n",
    };
    match &args.report_file {
        Some(path) => write(Path::new(path), &report)?,
        None => eprint!("{report}"),
    }
    let failed = changes.iter().any(|c| c.error.is_some());
    let manual = changes.iter().any(|c| !c.manual.is_empty());
    Ok(if failed || (args.strict && manual) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
