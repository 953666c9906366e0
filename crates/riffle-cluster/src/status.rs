//! `riffle job status`: a scaled-out job's processes, unit assignment, lag per queue and
//! state size per operator, read from what the running members leave on disk and in the
//! store: the job's plan (`plan.json` in its `.cluster` directory, written when a member
//! starts), the group's member files, the units' lock and finished files, the offsets the
//! units' sources commit when a checkpoint completes, and the units' newest checkpoints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use riffle_store::membership::{allocate_averagely, members as group_members};

use crate::membership::group_name;
use crate::state_topic::{FileSizes, StateTopic};
use crate::units::UnitId;
use crate::ClusterError;

/// The file in a job's `.cluster` directory that describes its units.
pub const PLAN_FILE: &str = "plan.json";

/// What `riffle job status` needs to know about a job's units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFile {
    /// The job id.
    pub job: String,
    /// The store of the job's topics (on the embedded store).
    pub store_dir: PathBuf,
    /// The name server of the RocketMQ cluster holding the job's topics, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namesrv: Option<String>,
    /// The stages.
    pub stages: Vec<StageFile>,
}

/// One stage of a [`PlanFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageFile {
    /// Number of units.
    pub units: usize,
    /// What each operator of the stage's unit graph is (by its id there).
    pub operators: Vec<String>,
    /// The topics the stage reads: (topic, consumer group).
    pub inputs: Vec<(String, String)>,
}

/// One unit's line of the status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitStatus {
    /// The unit.
    pub unit: String,
    /// `finished`, `running` (a process holds its lock) or `waiting`.
    pub state: String,
    /// The member the current assignment gives it to.
    pub owner: Option<String>,
    /// Per input queue: topic, queue, end offset, consumed (committed) offset.
    pub lag: Vec<QueueLag>,
    /// The newest completed checkpoint in the local checkpoint directory.
    pub checkpoint: Option<u64>,
}

/// The lag of one input queue of a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueLag {
    /// The topic.
    pub topic: String,
    /// The queue.
    pub queue: u32,
    /// The end (next) offset of the queue.
    pub end: u64,
    /// The offset the unit's last completed checkpoint consumed up to.
    pub consumed: u64,
}

/// The state size of one operator of a stage, summed over its units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorState {
    /// The stage.
    pub stage: usize,
    /// The operator (as labelled in the plan).
    pub operator: String,
    /// Bytes in the units' newest checkpoints.
    pub bytes: u64,
}

/// The status of a scaled-out job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobStatus {
    /// The job id.
    pub job: String,
    /// The group.
    pub group: String,
    /// Live members (processes), sorted as the assignment sorts them.
    pub members: Vec<String>,
    /// Every unit.
    pub units: Vec<UnitStatus>,
    /// State size per operator.
    pub state: Vec<OperatorState>,
    /// The newest complete job-wide checkpoint ([`crate::job_checkpoint`]).
    pub job_checkpoint: Option<u64>,
}

/// Reads the status of job `job` in group `group` whose checkpoints live under `root`: from
/// the embedded store and that directory, or — when the job's topics are on a RocketMQ
/// cluster — from the cluster ([`read_cluster`]).
pub fn read(root: &Path, job: &str, group: &str) -> Result<JobStatus, ClusterError> {
    let cluster = root.join(format!("{job}.cluster"));
    let plan_path = cluster.join(PLAN_FILE);
    let text = std::fs::read_to_string(&plan_path).map_err(|e| {
        ClusterError::new(format!(
            "job '{job}' has not run with --group under {} ({}: {e})",
            root.display(),
            plan_path.display()
        ))
    })?;
    let plan: PlanFile = serde_json::from_str(&text)
        .map_err(|e| ClusterError::new(format!("{} is corrupted: {e}", plan_path.display())))?;
    if let Some(namesrv) = &plan.namesrv {
        return read_cluster(namesrv, job, group);
    }
    let store = riffle_connectors::rocketmq::shared_store(&plan.store_dir)?;
    let infos = group_members(&store, &group_name(job, group))
        .map_err(|e| ClusterError::new(format!("group '{group}': {e}")))?;
    let members: Vec<String> = infos.iter().map(|m| m.id.clone()).collect();
    let mut status = JobStatus::new(job, group, members);
    status.job_checkpoint = newest_job_checkpoint(store.as_ref(), job)?;
    for unit in plan.units() {
        let finished = cluster.join(format!("{unit}.finished")).exists();
        let locked = std::fs::File::open(cluster.join(format!("{unit}.lock")))
            .map(|f| f.try_lock_shared().is_err())
            .unwrap_or(false);
        let job_dir = root.join(unit.job_id(job));
        let checkpoint = newest_checkpoint(&job_dir).map(|n| {
            let files = std::fs::read_dir(job_dir.join(format!("chk-{n}")))
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| {
                            (
                                e.file_name().to_string_lossy().into_owned(),
                                size_of(&e.path()),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            (n, files)
        });
        status.add_unit(&plan, store.as_ref(), unit, finished, locked, checkpoint);
    }
    Ok(status)
}

/// Reads the status of job `job` whose topics are on the RocketMQ cluster behind `namesrv`:
/// the plan, the live processes, who owns which unit and which units finished come from the
/// job's coordination topic, the lag from the consumer groups' committed offsets, checkpoints
/// and state sizes from the state topics. On a cluster every process of the job is one group;
/// `group` is only shown.
pub fn read_cluster(namesrv: &str, job: &str, group: &str) -> Result<JobStatus, ClusterError> {
    let topics = riffle_connectors::rocketmq::cluster::connect_namesrv(namesrv)
        .map_err(|e| ClusterError::new(format!("RocketMQ cluster at {namesrv}: {e}")))?;
    let seen = crate::coord_log::snapshot(topics.as_ref(), job).map_err(|e| {
        ClusterError::new(format!(
            "job '{job}' has not run with --group on the RocketMQ cluster at {namesrv} ({e})"
        ))
    })?;
    let text = seen.plan.as_deref().ok_or_else(|| {
        ClusterError::new(format!(
            "job '{job}': its coordination topic on the RocketMQ cluster at {namesrv} holds no plan"
        ))
    })?;
    let plan: PlanFile = serde_json::from_slice(text).map_err(|e| {
        ClusterError::new(format!("job '{job}': its published plan is corrupted: {e}"))
    })?;
    let topics: std::sync::Arc<dyn riffle_store::Topics> = topics;
    let mut status = JobStatus::new(job, group, seen.members.clone());
    status.job_checkpoint = newest_job_checkpoint(topics.as_ref(), job)?;
    for unit in plan.units() {
        let checkpoint = StateTopic::new(topics.clone(), job, unit).newest_sizes()?;
        status.add_unit(
            &plan,
            topics.as_ref(),
            unit,
            seen.finished.contains(&unit),
            seen.owners.contains_key(&unit),
            checkpoint,
        );
    }
    Ok(status)
}

/// The newest complete job checkpoint of job `job`, from its coordination topic.
fn newest_job_checkpoint(
    topics: &dyn riffle_store::Topics,
    job: &str,
) -> Result<Option<u64>, ClusterError> {
    let complete = crate::job_checkpoint::newest_complete(topics, job)?;
    Ok(Some(complete).filter(|n| *n > 0))
}

impl PlanFile {
    /// Every unit of the plan, sorted.
    fn units(&self) -> Vec<UnitId> {
        self.stages
            .iter()
            .enumerate()
            .flat_map(|(stage, s)| (0..s.units).map(move |unit| UnitId { stage, unit }))
            .collect()
    }
}

impl JobStatus {
    fn new(job: &str, group: &str, members: Vec<String>) -> Self {
        Self {
            job: job.to_string(),
            group: group.to_string(),
            members,
            units: Vec::new(),
            state: Vec::new(),
            job_checkpoint: None,
        }
    }

    /// Adds `unit`'s line — its owner by the members' assignment, the lag of its input queues
    /// in `store` — and its newest checkpoint's files, (name relative to the checkpoint,
    /// bytes), to the state of its operators.
    fn add_unit(
        &mut self,
        plan: &PlanFile,
        store: &dyn riffle_store::Topics,
        unit: UnitId,
        finished: bool,
        running: bool,
        checkpoint: Option<(u64, FileSizes)>,
    ) {
        let Some(stage) = plan.stages.get(unit.stage) else {
            return;
        };
        let state = if finished {
            "finished"
        } else if running {
            "running"
        } else {
            "waiting"
        };
        let all = plan.units();
        let owner = self
            .members
            .iter()
            .find(|m| allocate_averagely(&all, &self.members, m).contains(&unit))
            .cloned();
        let mut lag = Vec::new();
        for (topic, group) in &stage.inputs {
            let Ok(config) = store.topic_config(topic) else {
                continue;
            };
            for queue in (0..config.queues).filter(|q| *q as usize % stage.units == unit.unit) {
                let Ok(info) = store.queue_info(topic, queue) else {
                    continue;
                };
                let consumed = store
                    .committed_offset(group, topic, queue)
                    .ok()
                    .flatten()
                    .unwrap_or(info.min_offset);
                lag.push(QueueLag {
                    topic: topic.clone(),
                    queue,
                    end: info.max_offset,
                    consumed,
                });
            }
        }
        let number = checkpoint.as_ref().map(|(n, _)| *n);
        for (op, bytes) in per_operator(checkpoint.map(|(_, files)| files).unwrap_or_default()) {
            let label = stage
                .operators
                .get(op)
                .cloned()
                .unwrap_or_else(|| format!("operator {op}"));
            match self
                .state
                .iter_mut()
                .find(|s| s.stage == unit.stage && s.operator == label)
            {
                Some(s) => s.bytes += bytes,
                None => self.state.push(OperatorState {
                    stage: unit.stage,
                    operator: label,
                    bytes,
                }),
            }
        }
        self.units.push(UnitStatus {
            unit: unit.to_string(),
            state: state.to_string(),
            owner,
            lag,
            checkpoint: number,
        });
    }
}

/// The newest completed checkpoint in a unit's checkpoint directory.
pub fn newest_checkpoint(job_dir: &Path) -> Option<u64> {
    std::fs::read_dir(job_dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().join("_metadata").is_file())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok())
        .max()
}

/// Bytes per operator (of the unit graph) of a checkpoint's files — (path relative to the
/// checkpoint, bytes) — from their `<op>-<subtask>.*` state files and RocksDB directories.
fn per_operator(files: FileSizes) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    for (path, bytes) in files {
        let Some(op) = path
            .split(['/', '-'])
            .next()
            .and_then(|o| o.parse::<usize>().ok())
        else {
            continue;
        };
        match out.iter_mut().find(|(o, _)| *o == op) {
            Some((_, b)) => *b += bytes,
            None => out.push((op, bytes)),
        }
    }
    out.sort();
    out
}

fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }
}

impl JobStatus {
    /// The status as text tables.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "job {} — group {}: {} process(es)",
            self.job,
            self.group,
            self.members.len()
        );
        for m in &self.members {
            let units: Vec<&str> = self
                .units
                .iter()
                .filter(|u| u.owner.as_deref() == Some(m.as_str()))
                .map(|u| u.unit.as_str())
                .collect();
            let _ = writeln!(out, "  {m}  units {}", units.join(" "));
        }
        let _ = writeln!(
            out,
            "job checkpoint: {}",
            self.job_checkpoint
                .map_or("none complete".to_string(), |n| format!("{n} complete"))
        );
        let _ = writeln!(
            out,
            "\nUNIT   STATE     CHECKPOINT  INPUT QUEUE (consumed/end, lag)"
        );
        for u in &self.units {
            let checkpoint = u.checkpoint.map_or("-".to_string(), |c| c.to_string());
            let inputs: Vec<String> = u
                .lag
                .iter()
                .map(|l| {
                    format!(
                        "{}[{}] {}/{} lag {}",
                        l.topic,
                        l.queue,
                        l.consumed,
                        l.end,
                        l.end.saturating_sub(l.consumed)
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "{:<6} {:<9} {:<11} {}",
                u.unit,
                u.state,
                checkpoint,
                inputs.join(", ")
            );
        }
        let _ = writeln!(out, "\nSTAGE  STATE BYTES  OPERATOR");
        for s in &self.state {
            let _ = writeln!(out, "{:<6} {:<12} {}", s.stage, s.bytes, s.operator);
        }
        out
    }
}
