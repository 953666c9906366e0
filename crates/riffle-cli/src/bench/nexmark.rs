//! `riffle bench nexmark`: runs Nexmark queries (the fixtures in `fixtures/nexmark/`) over N
//! generated events, or over a JSON-lines file of them.

use std::path::{Path, PathBuf};

use clap::Args;
use riffle_plan::{JobGraph, OperatorKind};
use serde_json::json;

use super::measure::{percentile, plan_script, run_measured};

/// Arguments of `riffle bench nexmark`.
#[derive(Args)]
pub struct NexmarkBenchArgs {
    /// Comma-separated queries, e.g. `q0,q1,q5`.
    #[arg(long, default_value = "q0,q1,q2")]
    queries: String,
    /// Events per query.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::BenchFormat::Text)]
    pub format: super::BenchFormat,
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

/// Runs every chosen query and returns one result object per query.
pub fn run(args: &NexmarkBenchArgs) -> Result<Vec<serde_json::Value>, String> {
    let mut results = Vec::new();
    for query in args
        .queries
        .split(',')
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let graph = plan_query(args, query).map_err(|e| format!("{query}: {e}"))?;
        let m = run_measured(&graph).map_err(|e| format!("{query} failed: {e}"))?;
        let events = args.events as f64;
        results.push(json!({
            "query": query,
            "events": args.events,
            "parallelism": args.parallelism,
            "source": if args.input.is_some() { "json-file" } else { "nexmark" },
            "seconds": m.seconds,
            "events_per_sec": events / m.seconds,
            "cpu_seconds": m.cpu_seconds,
            "events_per_sec_per_core": m.per_core(events),
            "peak_rss_bytes": m.peak_rss_bytes,
            "latency_p50_ms": percentile(&m.latencies_us, 0.50),
            "latency_p99_ms": percentile(&m.latencies_us, 0.99),
        }));
    }
    Ok(results)
}

/// Plans `<dir>/<query>.sql` with the event count, parallelism and input of the run.
fn plan_query(args: &NexmarkBenchArgs, query: &str) -> Result<JobGraph, String> {
    let path = args.dir.join(format!("{query}.sql"));
    let mut graph = plan_script(&path, args.parallelism)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
