//! The progress line of `riffle run` on a terminal: rows read and written, the read rate,
//! and — when every source knows how much input it has (files, bounded topics) — a bar with
//! the share of the input read. Drawn on stderr from the job's live figures, a few times a
//! second, and only when stderr is a terminal that the job's printed rows do not share.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use riffle_plan::{JobGraph, OperatorKind};
use riffle_runtime::metrics::{JobMetrics, MetricsSnapshot};

/// How often the line is redrawn.
const REDRAW: Duration = Duration::from_millis(250);
/// Width of the bar, in characters.
const BAR_WIDTH: usize = 24;

/// A progress line being drawn; [`Progress::finish`] erases it.
pub struct Progress {
    done: Arc<AtomicBool>,
    drawer: JoinHandle<()>,
}

/// Which operators are sources and sinks.
#[derive(Debug, Clone)]
pub struct Roles {
    sources: Vec<usize>,
    sinks: Vec<usize>,
}

impl Roles {
    /// The sources and sinks of `graph`.
    pub fn of(graph: &JobGraph) -> Self {
        let with = |pick: fn(&OperatorKind) -> bool| {
            graph
                .operators
                .iter()
                .filter(|op| pick(&op.kind))
                .map(|op| op.id)
                .collect()
        };
        Self {
            sources: with(|k| {
                matches!(k, OperatorKind::Source { .. } | OperatorKind::Values { .. })
            }),
            sinks: with(|k| matches!(k, OperatorKind::Sink { .. })),
        }
    }
}

impl Progress {
    /// Starts drawing the progress of `graph`'s job from `metrics` when stderr is a terminal
    /// and no `print` sink writes to the same terminal through stdout.
    pub fn start(graph: &JobGraph, metrics: Arc<JobMetrics>) -> Option<Progress> {
        let prints = graph.operators.iter().any(|op| match &op.kind {
            OperatorKind::Sink { connector } => connector.connector == "print",
            _ => false,
        });
        if !std::io::stderr().is_terminal() || (prints && std::io::stdout().is_terminal()) {
            return None;
        }
        let roles = Roles::of(graph);
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let drawer = std::thread::spawn(move || {
            let started = Instant::now();
            let mut rate = Rate::default();
            while !stop.load(Ordering::Relaxed) {
                let snapshot = metrics.snapshot();
                let line = render(&roles, &snapshot, started.elapsed(), &mut rate);
                let mut err = std::io::stderr().lock();
                // A failed write to the terminal only loses a progress line.
                let _ = write!(err, "\r\x1b[2K{line}");
                let _ = err.flush();
                drop(err);
                std::thread::sleep(REDRAW);
            }
        });
        Some(Progress { done, drawer })
    }

    /// Stops drawing and erases the line.
    pub fn finish(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.drawer.join();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}

/// The read rate between two redraws.
#[derive(Debug, Default)]
pub struct Rate {
    last: Option<(Duration, u64)>,
    per_second: f64,
}

impl Rate {
    fn update(&mut self, at: Duration, read: u64) -> f64 {
        if let Some((then, before)) = self.last {
            let seconds = (at - then).as_secs_f64();
            if seconds > 0.0 {
                self.per_second = read.saturating_sub(before) as f64 / seconds;
            }
        }
        self.last = Some((at, read));
        self.per_second
    }
}

/// The share of the input read: from the sources' own progress when every source subtask
/// reports one, else from their queues' backlog when every one reports that; `None` when
/// some source cannot tell (an unbounded or generated input).
fn fraction(roles: &Roles, snapshot: &MetricsSnapshot) -> Option<f64> {
    let subtasks: Vec<_> = roles
        .sources
        .iter()
        .filter_map(|id| snapshot.operators.get(*id))
        .flatten()
        .collect();
    if subtasks.is_empty() {
        return None;
    }
    let (mut done, mut total) = (0u64, 0u64);
    if let Some(progress) = subtasks
        .iter()
        .map(|s| s.progress)
        .collect::<Option<Vec<_>>>()
    {
        for (d, t) in progress {
            done += d;
            total += t;
        }
    } else if subtasks.iter().all(|s| !s.backlog.is_empty()) {
        for s in &subtasks {
            let lag: u64 = s.backlog.iter().map(|q| q.lag).sum();
            done += s.records_out;
            total += s.records_out + lag;
        }
    } else {
        return None;
    }
    (total > 0).then(|| (done.min(total)) as f64 / total as f64)
}

/// One progress line.
pub fn render(
    roles: &Roles,
    snapshot: &MetricsSnapshot,
    elapsed: Duration,
    rate: &mut Rate,
) -> String {
    let sum = |ids: &[usize], out: bool| -> u64 {
        ids.iter()
            .filter_map(|id| snapshot.operators.get(*id))
            .flatten()
            .map(|s| if out { s.records_out } else { s.records_in })
            .sum()
    };
    let read = sum(&roles.sources, true);
    let written = sum(&roles.sinks, false);
    let per_second = rate.update(elapsed, read);
    let bar = match fraction(roles, snapshot) {
        Some(f) => {
            let filled = ((f * BAR_WIDTH as f64).round() as usize).min(BAR_WIDTH);
            format!(
                "[{}{}] {:>3.0}%  ",
                "#".repeat(filled),
                "-".repeat(BAR_WIDTH - filled),
                f * 100.0
            )
        }
        None => String::new(),
    };
    let seconds = elapsed.as_secs();
    format!(
        "{bar}{} rows read ({} rows/s), {} written  {:02}:{:02}",
        grouped(read),
        grouped(per_second.round() as u64),
        grouped(written),
        seconds / 60,
        seconds % 60
    )
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use riffle_runtime::metrics::{CheckpointFigures, QueueBacklog, SubtaskFigures};

    fn subtask(read_in: u64, out: u64) -> SubtaskFigures {
        SubtaskFigures {
            records_in: read_in,
            records_out: out,
            watermark: None,
            state_bytes: 0,
            backlog: Vec::new(),
            progress: None,
        }
    }

    fn roles() -> Roles {
        Roles {
            sources: vec![0],
            sinks: vec![2],
        }
    }

    fn snapshot(source: SubtaskFigures) -> MetricsSnapshot {
        MetricsSnapshot {
            operators: vec![
                vec![source],
                vec![subtask(0, 0)],
                vec![subtask(1500, 0), subtask(500, 0)],
            ],
            checkpoints: CheckpointFigures::default(),
        }
    }

    #[test]
    fn a_source_with_progress_draws_a_bar() {
        let mut rate = Rate::default();
        let source = SubtaskFigures {
            progress: Some((250, 1000)),
            ..subtask(0, 1_234_567)
        };
        let line = render(
            &roles(),
            &snapshot(source),
            Duration::from_secs(65),
            &mut rate,
        );
        assert_eq!(
            line,
            "[######------------------]  25%  1,234,567 rows read (0 rows/s), 2,000 written  01:05"
        );
    }

    #[test]
    fn a_backlog_gives_the_share_read_and_the_rate_follows_the_reads() {
        let mut rate = Rate::default();
        let source = |read| SubtaskFigures {
            backlog: vec![QueueBacklog {
                queue: "t/0".into(),
                lag: 1000 - read,
            }],
            ..subtask(0, read)
        };
        render(
            &roles(),
            &snapshot(source(100)),
            Duration::from_secs(1),
            &mut rate,
        );
        let line = render(
            &roles(),
            &snapshot(source(500)),
            Duration::from_secs(3),
            &mut rate,
        );
        assert!(
            line.starts_with("[############------------]  50%  500 rows read (200 rows/s)"),
            "{line}"
        );
    }

    #[test]
    fn an_input_of_unknown_size_shows_counts_only() {
        let mut rate = Rate::default();
        let line = render(
            &roles(),
            &snapshot(subtask(0, 42)),
            Duration::from_secs(2),
            &mut rate,
        );
        assert_eq!(line, "42 rows read (0 rows/s), 2,000 written  00:02");
    }
}
