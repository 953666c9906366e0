//! Aligned checkpoints (see `docs/checkpoints.md`).
//!
//! The [`coordinator`] asks every source subtask to inject a barrier; sources snapshot their
//! position and send the barrier downstream in band; an operator with several input channels
//! stops reading a channel once its barrier arrived until every channel delivered it
//! (alignment), then snapshots its state and forwards the barrier; sinks close their
//! transaction. Every subtask reports its snapshot to the coordinator, which writes the
//! checkpoint ([`storage`]) and then has the sinks' committers publish the transactions.

pub mod coordinator;
pub mod redistribute;
pub mod savepoint;
pub mod storage;

use std::path::PathBuf;
use std::time::Duration;

use riffle_plan::JobGraph;
use riffle_state::KeyGroups;

use crate::task::RuntimeError;

/// A subtask: operator id and subtask index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    /// Operator id in the job graph.
    pub operator: usize,
    /// Subtask index.
    pub subtask: usize,
}

/// Checkpoint directory used when `execution.checkpointing.dir` is not set.
pub const DEFAULT_DIR: &str = ".riffle/checkpoints";

/// How a job checkpoints.
#[derive(Debug, Clone)]
pub struct CheckpointConfig {
    /// Time between the end of one checkpoint and the start of the next.
    pub interval: Duration,
    /// Directory holding the checkpoints of every job (`<dir>/<job id>/chk-<n>`).
    pub root: PathBuf,
    /// The job's id.
    pub job_id: String,
    /// The job's key groups (`pipeline.max-parallelism`).
    pub key_groups: KeyGroups,
}

/// The key groups of `graph`: `pipeline.max-parallelism` (Flink's option; default 128), which
/// must be at least every operator's parallelism.
pub fn key_groups(graph: &JobGraph) -> Result<KeyGroups, RuntimeError> {
    let groups = match graph.config.get("pipeline.max-parallelism") {
        Some(text) => {
            let n: usize = text.trim().parse().map_err(|_| {
                RuntimeError::new(format!(
                    "'pipeline.max-parallelism' must be a positive integer, got '{text}'"
                ))
            })?;
            KeyGroups::new(n)?
        }
        None => KeyGroups::default(),
    };
    if let Some(op) = graph
        .operators
        .iter()
        .find(|op| op.parallelism > groups.max_parallelism())
    {
        return Err(RuntimeError::new(format!(
            "operator {} has parallelism {}, above 'pipeline.max-parallelism' ({})",
            op.id,
            op.parallelism,
            groups.max_parallelism()
        )));
    }
    Ok(groups)
}

impl CheckpointConfig {
    /// The configuration of `graph`: `None` when `execution.checkpointing.interval` is unset.
    /// `job_id` defaults to a hash of the job graph.
    pub fn from_graph(
        graph: &JobGraph,
        job_id: Option<&str>,
    ) -> Result<Option<Self>, RuntimeError> {
        let Some(text) = graph.config.get("execution.checkpointing.interval") else {
            return Ok(None);
        };
        let interval = parse_duration(text)
            .map_err(|e| RuntimeError::new(format!("'execution.checkpointing.interval': {e}")))?;
        let root = graph
            .config
            .get("execution.checkpointing.dir")
            .or_else(|| graph.config.get("state.checkpoints.dir"))
            .map(|d| PathBuf::from(d.strip_prefix("file://").unwrap_or(d)))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        let job_id = match job_id {
            Some(id) => validate_job_id(id)?,
            None => format!(
                "job-{:016x}",
                riffle_state::fnv1a(graph_text(graph).as_bytes())
            ),
        };
        Ok(Some(Self {
            interval,
            root,
            job_id,
            key_groups: key_groups(graph)?,
        }))
    }
}

fn graph_text(graph: &JobGraph) -> String {
    serde_json::to_string(&(&graph.operators, &graph.edges)).unwrap_or_default()
}

/// A job id usable as a directory name.
pub fn validate_job_id(id: &str) -> Result<String, RuntimeError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(id.to_string())
    } else {
        Err(RuntimeError::new(format!(
            "job id '{id}' must be 1-128 characters of letters, digits, '-', '_' and '.' (not starting with '.')"
        )))
    }
}

/// A job id derived from text (a job's script): `job-` and 16 hex digits of its FNV-1a hash.
pub fn job_id_for(text: &str) -> String {
    format!("job-{:016x}", riffle_state::fnv1a(text.as_bytes()))
}

/// What operator `op` is, for checking that a checkpoint belongs to this job: its kind and
/// its output columns' types.
pub fn fingerprint(op: &riffle_plan::Operator) -> String {
    let kind = match serde_json::to_value(&op.kind) {
        Ok(serde_json::Value::Object(map)) => map.keys().next().cloned().unwrap_or_default(),
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    };
    let types: Vec<String> = op.schema.iter().map(|f| f.data_type.to_string()).collect();
    format!("{kind}({})", types.join(", "))
}

/// Parses a Flink duration: a number with an optional unit (`ms` when none): `ms`, `s`,
/// `min`/`m`, `h`, `d` and their long forms (`500 ms`, `10s`, `1 min`, `2 hours`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 500 ms, 10 s, 1 min)"))?;
    let ms: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        other => return Err(format!("unknown time unit '{other}' in '{text}'")),
    };
    match n.checked_mul(ms) {
        Some(0) => Err(format!("'{text}' must be positive")),
        Some(v) => Ok(Duration::from_millis(v)),
        None => Err(format!("'{text}' is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_flink() {
        assert_eq!(parse_duration("500").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10 s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1min").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("0 s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("3 fortnights").is_err());
    }

    #[test]
    fn job_ids_are_stable_and_checked() {
        assert_eq!(
            job_id_for("INSERT INTO t SELECT 1"),
            job_id_for("INSERT INTO t SELECT 1")
        );
        assert_ne!(job_id_for("a"), job_id_for("b"));
        assert!(validate_job_id("orders-per-minute_1").is_ok());
        assert!(validate_job_id("../etc").is_err());
        assert!(validate_job_id("").is_err());
    }
}
