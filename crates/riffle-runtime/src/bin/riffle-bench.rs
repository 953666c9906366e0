//! Throughput benchmark of the engine (not run by tests).
//!
//! `riffle-bench [ROWS] [DIR]` writes a CSV file of ROWS bid rows (default 10,000,000) into DIR
//! (default a temporary directory), then runs two jobs into a `blackhole` sink and prints rows
//! per second: a pass-through (filter + projection) and a 10-minute TUMBLE aggregation per item.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use riffle_connectors::format::civil_from_days;
use riffle_runtime::RunOptions;

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = match args.next() {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join("riffle-bench"),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        std::process::exit(2);
    }
    let file = dir.join(format!("bids-{rows}.csv"));
    if !file.exists() {
        let started = Instant::now();
        if let Err(e) = write_bids(&file, rows) {
            eprintln!("error: cannot write {}: {e}", file.display());
            std::process::exit(2);
        }
        eprintln!(
            "generated {} in {:.1}s",
            file.display(),
            started.elapsed().as_secs_f64()
        );
    }
    let table = format!(
        "CREATE TABLE bids (ts TIMESTAMP(3), price DECIMAL(10, 2), item STRING, \
         WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE out_pass (ts TIMESTAMP(3), price DECIMAL(10, 2), item STRING) WITH ('connector' = 'blackhole');\n\
         CREATE TABLE out_agg (ws TIMESTAMP(3), we TIMESTAMP(3), item STRING, total DECIMAL(38, 2), cnt BIGINT) WITH ('connector' = 'blackhole');\n",
        file.display()
    );
    let jobs = [
        (
            "pass-through",
            "INSERT INTO out_pass SELECT ts, price * 2, UPPER(item) FROM bids WHERE price > 1;",
        ),
        (
            "tumble-10min-per-item",
            "INSERT INTO out_agg SELECT window_start, window_end, item, SUM(price), COUNT(*) \
             FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) \
             GROUP BY window_start, window_end, item;",
        ),
    ];
    for (name, insert) in jobs {
        let sql = format!("{table}{insert}");
        let graph = match riffle_plan::plan_sql(&sql) {
            Ok(g) => g,
            Err(d) => {
                eprintln!("error: {name} does not plan: {d:?}");
                std::process::exit(1);
            }
        };
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let started = Instant::now();
        if let Err(e) = runtime.block_on(riffle_runtime::run(&graph, RunOptions::default())) {
            eprintln!("error: {name} failed: {e}");
            std::process::exit(1);
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{name}: {rows} rows in {secs:.2}s = {:.0} rows/s",
            rows as f64 / secs
        );
    }
}

/// Bids one 10 ms apart (a watermark about every 20 rows), 1000 items, prices 0.01–99.99.
fn write_bids(path: &Path, rows: u64) -> std::io::Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let start_secs: u64 = 1_586_937_600; // 2020-04-15 08:00:00
    for i in 0..rows {
        let ms = i * 10;
        let secs = start_secs + ms / 1000;
        let (days, sod) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days as i64);
        writeln!(
            out,
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03},{}.{:02},item{}",
            sod / 3600,
            (sod / 60) % 60,
            sod % 60,
            ms % 1000,
            (i * 7919) % 100,
            (i * 31) % 100,
            (i * 2_654_435_761) % 1000
        )?;
    }
    out.flush()
}
