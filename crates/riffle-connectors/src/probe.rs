//! A latency probe for benchmarks: sources note when they emit a batch, sinks note when output
//! arrives, and each arrival records how long ago the newest source batch was emitted. Off (one
//! atomic load per batch) unless a benchmark installs it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The installed probe's state.
pub struct Probe {
    origin: Instant,
    /// Microseconds since `origin` + 1 of the newest source emission; 0 before the first.
    last_emit: AtomicU64,
    samples: Mutex<Vec<u64>>,
}

/// Installs the probe (once per process); later calls return the same probe.
pub fn install() -> &'static Probe {
    PROBE.get_or_init(|| Probe {
        origin: Instant::now(),
        last_emit: AtomicU64::new(0),
        samples: Mutex::new(Vec::new()),
    })
}

impl Probe {
    fn now_us(&self) -> u64 {
        self.origin.elapsed().as_micros() as u64 + 1
    }

    /// Takes the latency samples recorded so far (microseconds) and forgets the last emission.
    pub fn take_samples(&self) -> Vec<u64> {
        self.last_emit.store(0, Ordering::Relaxed);
        match self.samples.lock() {
            Ok(mut s) => std::mem::take(&mut *s),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

/// Called by sources after producing a batch.
pub fn source_emitted() {
    if let Some(p) = PROBE.get() {
        p.last_emit.store(p.now_us(), Ordering::Relaxed);
    }
}

/// Called by sinks when a batch arrives.
pub fn sink_received() {
    if let Some(p) = PROBE.get() {
        let emitted = p.last_emit.load(Ordering::Relaxed);
        if emitted > 0 {
            let latency = p.now_us().saturating_sub(emitted);
            if let Ok(mut s) = p.samples.lock() {
                s.push(latency);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_one_sample_per_arrival_after_an_emission() {
        let probe = install();
        probe.take_samples();
        sink_received();
        assert!(probe.take_samples().is_empty());
        source_emitted();
        sink_received();
        sink_received();
        assert_eq!(probe.take_samples().len(), 2);
    }
}
