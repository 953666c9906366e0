//! `riffle bench`: throughput benchmarks of the engine.
//!
//! * `bench nexmark` runs Nexmark queries over generated events (or a file of them);
//! * `bench file` runs a pass-through and a TUMBLE aggregation over a generated CSV file.
//!
//! Per query: wall time of the whole job; CPU time of the process over the job (so "per core"
//! is items per CPU-second); peak RSS (the kernel's high-water mark, reset before each query);
//! latency = for each batch reaching the sink, the time since the source emitted its newest
//! batch (p50/p99 over those samples).

mod file;
mod measure;
mod nexmark;

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

/// Arguments of `riffle bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Run Nexmark queries and report their performance.
    Nexmark(nexmark::NexmarkBenchArgs),
    /// Run a pass-through and a TUMBLE aggregation over an N-row CSV file.
    File(file::FileBenchArgs),
}

/// How results are printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    /// A table.
    Text,
    /// A JSON list with one object per query.
    Json,
}

/// Runs `riffle bench` and returns its exit code.
pub fn run(args: BenchArgs) -> ExitCode {
    let (results, format, unit) = match &args.command {
        BenchCommand::Nexmark(a) => (nexmark::run(a), a.format, "events"),
        BenchCommand::File(a) => (file::run(a), a.format, "rows"),
    };
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match format {
        BenchFormat::Json => println!("{}", serde_json::Value::Array(results)),
        BenchFormat::Text => print_table(&results, unit),
    }
    ExitCode::SUCCESS
}

/// One line per result; `unit` names what was counted (`events` or `rows`).
fn print_table(results: &[serde_json::Value], unit: &str) {
    let per_sec = format!("{unit}/s");
    let per_core = format!("{unit}/s/core");
    println!(
        "{:<12} {:>12} {:>9} {:>14} {:>16} {:>12} {:>10} {:>10}",
        "query", unit, "seconds", per_sec, per_core, "peak RSS MB", "p50 ms", "p99 ms"
    );
    let num = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.0}"));
    let ms = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.1}"));
    for r in results {
        println!(
            "{:<12} {:>12} {:>9.2} {:>14} {:>16} {:>12} {:>10} {:>10}",
            r["query"].as_str().unwrap_or_default(),
            r[unit],
            r["seconds"].as_f64().unwrap_or_default(),
            num(&r[format!("{unit}_per_sec")]),
            num(&r[format!("{unit}_per_sec_per_core")]),
            r["peak_rss_bytes"]
                .as_u64()
                .map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1048576.0)),
            ms(&r["latency_p50_ms"]),
            ms(&r["latency_p99_ms"]),
        );
    }
}
