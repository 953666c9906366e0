//! Measuring one benchmark job: wall time, CPU time of the process, peak RSS and the latency
//! samples of the probe, plus the planning steps every benchmark shares.

use std::path::Path;
use std::time::Instant;

use riffle_plan::JobGraph;
use riffle_toolkit::{check_job, JobSource, Status};

/// What one run of a job cost.
pub struct Measurement {
    /// Wall seconds from start to the end of the job.
    pub seconds: f64,
    /// User + system CPU seconds of the process during the job.
    pub cpu_seconds: Option<f64>,
    /// Peak resident set size during the job.
    pub peak_rss_bytes: Option<u64>,
    /// Latency samples (microseconds), sorted.
    pub latencies_us: Vec<u64>,
}

impl Measurement {
    /// `items` per CPU-second, when the CPU time is known.
    pub fn per_core(&self, items: f64) -> Option<f64> {
        self.cpu_seconds.filter(|c| *c > 0.0).map(|c| items / c)
    }
}

/// Runs `graph` to its end and measures it.
pub fn run_measured(graph: &JobGraph) -> Result<Measurement, String> {
    let probe = riffle_connectors::probe::install();
    probe.take_samples();
    reset_peak_rss();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    riffle_runtime::run_blocking(graph, None, std::future::pending()).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let mut latencies_us = probe.take_samples();
    latencies_us.sort_unstable();
    Ok(Measurement {
        seconds,
        cpu_seconds,
        peak_rss_bytes: peak_rss_bytes(),
        latencies_us,
    })
}

/// Checks and plans the script at `path` with `parallelism.default` set; fails when Riffle
/// does not run it.
pub fn plan_script(path: &Path, parallelism: usize) -> Result<JobGraph, String> {
    let sql = std::fs::read_to_string(path)
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
    let prelude = format!("SET 'parallelism.default' = '{parallelism}';\n");
    riffle_plan::plan_sql(&format!("{prelude}{sql}")).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The sample at rank `p` (0..=1) of sorted microsecond samples, in milliseconds.
pub fn percentile(sorted_us: &[u64], p: f64) -> Option<f64> {
    if sorted_us.is_empty() {
        return None;
    }
    let i = ((sorted_us.len() - 1) as f64 * p).round() as usize;
    sorted_us.get(i).map(|us| *us as f64 / 1000.0)
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
}
