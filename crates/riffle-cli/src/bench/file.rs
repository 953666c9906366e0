//! `riffle bench file`: a pass-through query and a TUMBLE aggregation (`benches/file/*.sql`)
//! over a generated N-row CSV file, into blackhole sinks.
//!
//! The file is deterministic for N and generated once (kept in the temp directory), so real
//! Flink can read the very same bytes (`benches/flink_file.py`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use riffle_connectors::format::civil_from_days;
use riffle_plan::{JobGraph, OperatorKind};
use serde_json::json;

use super::measure::{percentile, plan_script, run_measured};

/// Arguments of `riffle bench file`.
#[derive(Args)]
pub struct FileBenchArgs {
    /// Rows in the CSV file.
    #[arg(long, default_value_t = 10_000_000)]
    rows: u64,
    /// Comma-separated queries (files `<query>.sql` of `--dir`).
    #[arg(long, default_value = "passthrough,tumble")]
    queries: String,
    /// Directory of the query files.
    #[arg(long, default_value = "benches/file")]
    dir: PathBuf,
    /// The CSV file; generated when missing. Default: `riffle-bench/rows-<N>.csv` in the
    /// temp directory.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Parallelism of every operator (`parallelism.default`).
    #[arg(long, default_value_t = 1)]
    parallelism: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::BenchFormat::Text)]
    pub format: super::BenchFormat,
}

/// Generates the file when needed, runs every chosen query and returns one result per query.
pub fn run(args: &FileBenchArgs) -> Result<Vec<serde_json::Value>, String> {
    let input = args
        .input
        .clone()
        .unwrap_or_else(|| default_input(args.rows));
    if !input.exists() {
        generate(&input, args.rows)
            .map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    }
    let mut results = Vec::new();
    for query in args
        .queries
        .split(',')
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let path = args.dir.join(format!("{query}.sql"));
        let mut graph =
            plan_script(&path, args.parallelism).map_err(|e| format!("{query}: {e}"))?;
        retarget(&mut graph, &input).map_err(|e| format!("{}: {e}", path.display()))?;
        let m = run_measured(&graph).map_err(|e| format!("{query} failed: {e}"))?;
        let rows = args.rows as f64;
        results.push(json!({
            "query": query,
            "rows": args.rows,
            "input": input.display().to_string(),
            "parallelism": args.parallelism,
            "seconds": m.seconds,
            "rows_per_sec": rows / m.seconds,
            "cpu_seconds": m.cpu_seconds,
            "rows_per_sec_per_core": m.per_core(rows),
            "peak_rss_bytes": m.peak_rss_bytes,
            "latency_p50_ms": percentile(&m.latencies_us, 0.50),
            "latency_p99_ms": percentile(&m.latencies_us, 0.99),
        }));
    }
    Ok(results)
}

/// `<temp>/riffle-bench/rows-<rows>.csv`.
fn default_input(rows: u64) -> PathBuf {
    std::env::temp_dir()
        .join("riffle-bench")
        .join(format!("rows-{rows}.csv"))
}

/// Points every filesystem source of `graph` at `input`.
fn retarget(graph: &mut JobGraph, input: &Path) -> Result<(), String> {
    let mut sources = 0;
    for op in &mut graph.operators {
        if let OperatorKind::Source { connector } = &mut op.kind {
            if connector.connector == "filesystem" {
                sources += 1;
                connector
                    .options
                    .insert("path".to_string(), input.display().to_string());
            }
        }
    }
    if sources == 0 {
        return Err("the query reads no filesystem table".to_string());
    }
    Ok(())
}

/// Writes `rows` rows to `path` (through a temporary file, so a crash leaves no half file).
fn generate(path: &Path, rows: u64) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = path.with_extension("csv.partial");
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&partial)?);
    let mut line = String::new();
    for id in 0..rows {
        line.clear();
        write_row(&mut line, id);
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&partial, path)
}

/// Row `id`: `id,user_id,item,price,ts` — 1,000 users, 10,000 items, prices with cents, one
/// row per millisecond from 2026-01-01 00:00:00 (in order).
fn write_row(out: &mut String, id: u64) {
    use std::fmt::Write as _;
    let h = mix(id);
    let ms = id as i64;
    let (y, mo, d) = civil_from_days(DAY_ZERO + ms.div_euclid(86_400_000));
    let ms_of_day = ms.rem_euclid(86_400_000);
    let _ = writeln!(
        out,
        "{id},{},item-{},{}.{:02},{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        h % 1_000,
        (h >> 16) % 10_000,
        (h >> 32) % 1_000,
        (h >> 48) % 100,
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1_000 % 60,
        ms_of_day % 1_000,
    );
}

/// Days since 1970-01-01 of 2026-01-01, the first row's date.
const DAY_ZERO: i64 = 20_454;

/// SplitMix64: a fixed, well-spread hash of the row number.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_deterministic_csv_one_millisecond_apart() {
        let mut first = String::new();
        write_row(&mut first, 0);
        assert!(first.starts_with("0,"), "{first}");
        assert!(first.ends_with(",2026-01-01 00:00:00.000\n"), "{first}");
        let mut later = String::new();
        write_row(&mut later, 86_400_001);
        assert!(later.ends_with(",2026-01-02 00:00:00.001\n"), "{later}");
        let mut again = String::new();
        write_row(&mut again, 0);
        assert_eq!(first, again);
        assert_eq!(first.trim_end().split(',').count(), 5);
    }

    #[test]
    fn the_first_day_is_new_year_2026() {
        assert_eq!(civil_from_days(DAY_ZERO), (2026, 1, 1));
    }
}
