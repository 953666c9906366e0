//! `riffle bench nexmark`: runs Nexmark queries (the fixtures in `fixtures/nexmark/`) over N
//! generated events and reports throughput, throughput per CPU core, peak RSS and latency.
//!
//! Per query: wall time of the whole job; CPU time of the process over the job (so
//! "events/s per core" is events per CPU-second); peak RSS (the kernel's high-water mark, reset
//! before each query); latency = for each batch reaching the sink, the time since the source
//! emitted its newest batch (p50/p99 over those samples).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Subcommand, ValueEnum};
use riffle_plan::{JobGraph, OperatorKind};
use riffle_toolkit::{check_job, JobSource, Status};
use serde_json::json;

/// Arguments of `riffle bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Run Nexmark queries and report their performance.
    Nexmark(NexmarkBenchArgs),
}

/// Arguments of `riffle bench nexmark`.
#[derive(Args)]
struct NexmarkBenchArgs {
    /// Comma-separated queries, e.g. `q0,q1,q5`.
    #[arg(long, default_value = "q0,q1,q2")]
    queries: String,
    /// Events per query.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = BenchFormat::Text)]
    format: BenchFormat,
    /// Directory of the query files `<query>.sql`.
    #[arg(long, default_value = "fixtures/nexmark")]
    dir: PathBuf,
    /// Read the events from this JSON-lines file (`riffle nexmark gen`) instead of generating
    /// them; `--events` then only labels the results.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Parallelism of every operator (`parallelism.default`).
    #[arg(long, default_value_t = 1)]
    parallelism: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchFormat {
    Text,
    Json,
}

/// Runs `riffle bench` and returns its exit code.
pub fn run(args: BenchArgs) -> ExitCode {
    let BenchCommand::Nexmark(args) = args.command;
    let probe = riffle_connectors::probe::install();
    let mut results = Vec::new();
    for query in args
        .queries
        .split(',')
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let graph = match plan_query(&args, query) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("error: {query}: {e}");
                return ExitCode::from(1);
            }
        };
        probe.take_samples();
        reset_peak_rss();
        let cpu_before = cpu_seconds();
        let started = Instant::now();
        if let Err(e) = riffle_runtime::run_blocking(&graph, None, std::future::pending()) {
            eprintln!("error: {query} failed: {e}");
            return ExitCode::from(1);
        }
        let seconds = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds()
            .zip(cpu_before)
            .map(|(after, before)| after - before);
        let mut latencies = probe.take_samples();
        latencies.sort_unstable();
        let events = args.events as f64;
        results.push(json!({
            "query": query,
            "events": args.events,
            "parallelism": args.parallelism,
            "source": if args.input.is_some() { "json-file" } else { "nexmark" },
            "seconds": seconds,
            "events_per_sec": events / seconds,
            "cpu_seconds": cpu,
            "events_per_sec_per_core": cpu.filter(|c| *c > 0.0).map(|c| events / c),
            "peak_rss_bytes": peak_rss_bytes(),
            "latency_p50_ms": percentile(&latencies, 0.50),
            "latency_p99_ms": percentile(&latencies, 0.99),
        }));
    }
    match args.format {
        BenchFormat::Json => println!("{}", serde_json::Value::Array(results)),
        BenchFormat::Text => print_table(&results),
    }
    ExitCode::SUCCESS
}

/// Plans `<dir>/<query>.sql` with the event count, parallelism and input of the run.
fn plan_query(args: &NexmarkBenchArgs, query: &str) -> Result<JobGraph, String> {
    let path = args.dir.join(format!("{query}.sql"));
    let sql = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let report = check_job(&JobSource {
        path: path.display().to_string(),
        text: sql.clone(),
    });
    if report.status >= Status::Unsupported {
        return Err(format!(
            "Riffle does not run this query:\n{}",
            riffle_toolkit::render::render_text(&[report], Status::Unsupported)
        ));
    }
    let prelude = format!("SET 'parallelism.default' = '{}';\n", args.parallelism);
    let mut graph = riffle_plan::plan_sql(&format!("{prelude}{sql}")).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let mut sources = 0;
    for op in &mut graph.operators {
        if let OperatorKind::Source { connector } = &mut op.kind {
            if connector.connector == "nexmark" {
                sources += 1;
                retarget(connector, args.events, args.input.as_deref());
            }
        }
    }
    if sources == 0 {
        return Err(format!("{} reads no nexmark table", path.display()));
    }
    Ok(graph)
}

/// Points a nexmark source at `events` generated events, or at a JSON-lines file of them.
fn retarget(connector: &mut riffle_plan::ConnectorSpec, events: u64, input: Option<&Path>) {
    match input {
        None => {
            connector
                .options
                .insert("events.num".to_string(), events.to_string());
        }
        Some(file) => {
            connector.connector = "filesystem".to_string();
            connector.options = [
                ("connector", "filesystem".to_string()),
                ("path", file.display().to_string()),
                ("format", "json".to_string()),
                ("json.timestamp-format.standard", "ISO-8601".to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        }
    }
}

fn percentile(sorted_us: &[u64], p: f64) -> Option<f64> {
    if sorted_us.is_empty() {
        return None;
    }
    let i = ((sorted_us.len() - 1) as f64 * p).round() as usize;
    sorted_us.get(i).map(|us| *us as f64 / 1000.0)
}

fn print_table(results: &[serde_json::Value]) {
    println!(
        "{:<6} {:>12} {:>9} {:>14} {:>16} {:>12} {:>10} {:>10}",
        "query",
        "events",
        "seconds",
        "events/s",
        "events/s/core",
        "peak RSS MB",
        "p50 ms",
        "p99 ms"
    );
    let num = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.0}"));
    let ms = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.1}"));
    for r in results {
        println!(
            "{:<6} {:>12} {:>9.2} {:>14} {:>16} {:>12} {:>10} {:>10}",
            r["query"].as_str().unwrap_or_default(),
            r["events"],
            r["seconds"].as_f64().unwrap_or_default(),
            num(&r["events_per_sec"]),
            num(&r["events_per_sec_per_core"]),
            r["peak_rss_bytes"]
                .as_u64()
                .map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1048576.0)),
            ms(&r["latency_p50_ms"]),
            ms(&r["latency_p99_ms"]),
        );
    }
}

/// User + system CPU time of this process (Linux `/proc/self/stat`, in USER_HZ = 100 ticks).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Resets the kernel's peak-RSS mark (Linux `clear_refs` 5); ignored where unavailable.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size since the last reset (Linux `VmHWM`).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_ranked_samples() {
        let samples: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        assert_eq!(percentile(&samples, 0.5), Some(51.0));
        assert_eq!(percentile(&samples, 0.99), Some(99.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn retargeting_sets_the_event_count_or_the_file() {
        let mut spec = riffle_plan::ConnectorSpec {
            connector: "nexmark".to_string(),
            ..Default::default()
        };
        retarget(&mut spec, 42, None);
        assert_eq!(spec.options["events.num"], "42");
        retarget(&mut spec, 42, Some(Path::new("/tmp/events.json")));
        assert_eq!(spec.connector, "filesystem");
        assert_eq!(spec.options["path"], "/tmp/events.json");
        assert!(!spec.options.contains_key("events.num"));
    }
}
