//! Running a scaled-out job's units: all of them in one process, or this process's share of
//! them in a group ([`Membership`]).
//!
//! Every few hundred milliseconds a member looks at its assignment: it starts the units it
//! was given and stops the ones it lost (a stopped unit's uncommitted work is discarded; its
//! next owner resumes it from its last checkpoint). A unit runs only while its process holds
//! the unit's lock file, from before it restores its checkpoint until after its last commit,
//! so a new owner cannot start before the old one is done — the old one's late commit is
//! fenced off — and a killed owner's lock goes with it. A unit whose bounded input is done
//! leaves a `.finished` mark; the job ends when every unit has one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use riffle_connectors::SubtaskInfo;
use riffle_plan::JobGraph;
use riffle_runtime::{PrintTarget, RunOptions, StopHandle};
use riffle_store::Topics;
use tokio::task::JoinHandle;

use crate::backend::TopicBackend;
use crate::coord_log::{CoordLog, LogCoordination, LogGroup};
use crate::coordination::{Coordination, FileCoordination, UnitGuard};
use crate::job_checkpoint::{self, CheckpointLog, UnitCuts};
use crate::membership::{Membership, Solo, StoreGroup};
use crate::shuffle;
use crate::stages::{split, StagePlan};
use crate::state_topic::{self, StateTopic};
use crate::status::{PlanFile, StageFile, PLAN_FILE};
use crate::units::UnitId;
use crate::ClusterError;

/// How often a member looks at its assignment and its units.
const POLL: Duration = Duration::from_millis(100);

/// How long a member's view of its group must stay unchanged before it starts units — also
/// while it is alone: processes started together see each other first instead of one of them
/// starting every unit and handing most over a moment later (Kafka's initial rebalance delay
/// serves the same end).
const SETTLE_OPTION: &str = "riffle.group.settle-time";

/// The settle time when the job does not set [`SETTLE_OPTION`].
const DEFAULT_SETTLE: Duration = Duration::from_secs(1);

/// The duration the job sets for `key` (`SET 'key' = '5 s'`), else `default`.
fn duration_option(
    graph: &JobGraph,
    key: &str,
    default: Duration,
) -> Result<Duration, ClusterError> {
    match graph.config.get(key) {
        Some(text) => riffle_runtime::checkpoint::parse_duration(text)
            .map_err(|e| ClusterError::new(format!("'{key}': {e}"))),
        None => Ok(default),
    }
}

/// A job split into units, ready to run.
pub struct ClusterJob {
    /// The stages and shuffle topics.
    pub plan: StagePlan,
    /// Each stage's job graph.
    stage_graphs: Vec<Arc<JobGraph>>,
    /// Where the units' checkpoints (and the job's `.cluster` directory) live.
    checkpoint_root: PathBuf,
    print_target: PrintTarget,
    /// The job's topics (shuffle, state, coordination), open while the job runs.
    topics: Arc<dyn Topics>,
    /// Who owns which unit.
    coordination: Arc<dyn Coordination>,
    /// On a cluster: this process's membership in the job's coordination topic.
    log: Option<Arc<CoordLog>>,
    /// The job-wide checkpoints (in the coordination topic, on either backend).
    checkpoints: Arc<CheckpointLog>,
    /// The units this process runs now.
    running: std::sync::Mutex<Vec<UnitId>>,
    /// How long a group must stay unchanged before a member starts units.
    settle: Duration,
}

/// How often a unit that failed in this process is restarted before the process gives up.
const UNIT_RESTARTS: u32 = 3;

/// How long a failed unit waits before it restarts.
const RESTART_DELAY: Duration = Duration::from_secs(2);

/// A unit running in this process.
struct Running {
    stop: StopHandle,
    /// The unit's job checkpoint cuts.
    cuts: Arc<UnitCuts>,
    task: JoinHandle<Result<(), ClusterError>>,
}

impl ClusterJob {
    /// Splits `graph` (job id `job`) into units and creates its shuffle topics.
    pub fn new(
        graph: &JobGraph,
        job: &str,
        print_target: PrintTarget,
    ) -> Result<Self, ClusterError> {
        shuffle::register();
        let queues_of = |topic: &str, backend: &TopicBackend| {
            let topics = backend.open().ok()?;
            topics.topic_config(topic).ok().map(|c| c.queues)
        };
        let plan = split(graph, job, &queues_of)?;
        let topics = plan.backend.open()?;
        plan.create_topics(topics.as_ref())?;
        for (stage, s) in plan.stages.iter().enumerate() {
            state_topic::create(topics.as_ref(), job, stage, s.units)?;
        }
        let stage_graphs = (0..plan.stages.len())
            .map(|s| plan.stage_graph(graph, s).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let checkpoint_root = match stage_graphs.first() {
            Some(g) => riffle_runtime::checkpoint::CheckpointConfig::from_graph(g, Some(job))?
                .map(|c| c.root),
            None => None,
        }
        .unwrap_or_else(|| PathBuf::from(riffle_runtime::checkpoint::DEFAULT_DIR));
        let interval = duration_option(
            graph,
            job_checkpoint::INTERVAL_OPTION,
            job_checkpoint::DEFAULT_INTERVAL,
        )?;
        let settle = duration_option(graph, SETTLE_OPTION, DEFAULT_SETTLE)?;
        let checkpoints = CheckpointLog::open(topics.clone(), job, interval)?;
        let cluster_dir = checkpoint_root.join(format!("{}.cluster", plan.job));
        let (coordination, log): (Arc<dyn Coordination>, _) = match &plan.backend {
            TopicBackend::Embedded(_) => (Arc::new(FileCoordination::new(cluster_dir)), None),
            TopicBackend::Cluster(_) => {
                let log = CoordLog::join(topics.clone(), job, crate::coord_log::LEASE)?;
                (Arc::new(LogCoordination(log.clone())), Some(log))
            }
        };
        let job = Self {
            plan,
            stage_graphs,
            checkpoint_root,
            print_target,
            topics,
            coordination,
            log,
            checkpoints,
            running: std::sync::Mutex::new(Vec::new()),
            settle,
        };
        job.write_plan_file()?;
        Ok(job)
    }

    /// Describes the units for `riffle job status`.
    fn write_plan_file(&self) -> Result<(), ClusterError> {
        let stages = self
            .stage_graphs
            .iter()
            .zip(&self.plan.stages)
            .map(|(graph, stage)| StageFile {
                units: stage.units,
                operators: graph
                    .operators
                    .iter()
                    .map(|op| {
                        let what = riffle_runtime::checkpoint::fingerprint(op);
                        match &op.kind {
                            riffle_plan::OperatorKind::Source { connector }
                            | riffle_plan::OperatorKind::Sink { connector } => {
                                format!("{what} {}", connector.table)
                            }
                            _ => what,
                        }
                    })
                    .collect(),
                inputs: graph
                    .operators
                    .iter()
                    .filter_map(|op| match &op.kind {
                        riffle_plan::OperatorKind::Source { connector } => input_topic(connector),
                        _ => None,
                    })
                    .collect(),
            })
            .collect();
        let file = PlanFile {
            job: self.plan.job.clone(),
            store_dir: self
                .plan
                .backend
                .store_dir()
                .map(PathBuf::from)
                .unwrap_or_default(),
            namesrv: match &self.plan.backend {
                TopicBackend::Cluster(address) => Some(address.namesrv.clone()),
                TopicBackend::Embedded(_) => None,
            },
            stages,
        };
        let dir = self.cluster_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| ClusterError::new(format!("cannot create {}: {e}", dir.display())))?;
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| ClusterError::new(format!("cannot encode the plan: {e}")))?;
        // On a cluster the processes share no directory with `riffle job status`: the plan
        // goes to the coordination topic too.
        if let Some(log) = &self.log {
            log.publish_plan(text.as_bytes())?;
        }
        let path = dir.join(PLAN_FILE);
        let temp = dir.join(format!("{PLAN_FILE}.{}", std::process::id()));
        std::fs::write(&temp, text)
            .and_then(|()| std::fs::rename(&temp, &path))
            .map_err(|e| ClusterError::new(format!("cannot write {}: {e}", path.display())))
    }

    /// The job graph one unit of `stage` runs.
    pub fn stage_graph(&self, stage: usize) -> Option<&JobGraph> {
        self.stage_graphs.get(stage).map(Arc::as_ref)
    }

    /// The job's topics (shuffle, state and, on a cluster, coordination).
    pub fn topics(&self) -> &Arc<dyn Topics> {
        &self.topics
    }

    /// This process's membership in group `group` of the job (`None`: run every unit): the
    /// embedded store's consumer group `<job>--units-<group>`, or, on a cluster, the job's
    /// coordination topic (every process of the job is one group there).
    pub fn membership(&self, group: Option<&str>) -> Result<Box<dyn Membership>, ClusterError> {
        let Some(name) = group else {
            return Ok(Box::new(Solo));
        };
        Ok(match (&self.plan.backend, &self.log) {
            (_, Some(log)) => Box::new(LogGroup(log.clone())),
            (TopicBackend::Embedded(dir), None) => {
                let store = riffle_connectors::rocketmq::shared_store(dir)?;
                Box::new(StoreGroup::join(&store, &self.plan.job, name)?)
            }
            (TopicBackend::Cluster(_), None) => {
                return Err(ClusterError::new(
                    "a cluster job without its coordination topic",
                ))
            }
        })
    }

    /// The job's own directory next to its units' checkpoints: unit locks, finished marks,
    /// groups.
    pub fn cluster_dir(&self) -> PathBuf {
        self.checkpoint_root
            .join(format!("{}.cluster", self.plan.job))
    }

    /// Where the units' checkpoints live.
    pub fn checkpoint_root(&self) -> &std::path::Path {
        &self.checkpoint_root
    }

    /// Whether `unit` has finished its bounded input (in any process).
    pub fn is_finished(&self, unit: UnitId) -> bool {
        self.coordination.is_finished(unit).unwrap_or(false)
    }

    /// The units this process runs now (started and not yet ended).
    pub fn running(&self) -> Vec<UnitId> {
        self.running.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn set_running(&self, running: &BTreeMap<UnitId, Running>) {
        if let Ok(mut r) = self.running.lock() {
            *r = running.keys().copied().collect();
        }
    }

    fn all_finished(&self, units: &[UnitId]) -> Result<bool, ClusterError> {
        for unit in units {
            if !self.coordination.is_finished(*unit)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Starts `unit` on the current tokio runtime, holding `lock` until it has ended.
    fn start(&self, unit: UnitId, lock: UnitGuard) -> Result<Running, ClusterError> {
        let graph = self
            .stage_graphs
            .get(unit.stage)
            .cloned()
            .ok_or_else(|| ClusterError::new(format!("the job has no unit {unit}")))?;
        let units = self.plan.stages[unit.stage].units;
        let stop = StopHandle::default();
        let options = RunOptions {
            print_target: self.print_target.clone(),
            stop: stop.clone(),
            job_id: Some(unit.job_id(&self.plan.job)),
            from_savepoint: None,
        };
        let unit_stop = stop.clone();
        // The unit's checkpoints go to its state topic too, and come back from it when this
        // machine's checkpoint directory lacks the newest one. On a cluster the topic is the
        // truth: this machine's directory may hold the unit's checkpoints from before another
        // machine ran it.
        let state = StateTopic::new(self.topics.clone(), &self.plan.job, unit);
        let authoritative = matches!(self.plan.backend, TopicBackend::Cluster(_));
        if let Some(n) = state.restore_into(
            &self.checkpoint_root,
            &unit.job_id(&self.plan.job),
            authoritative,
        )? {
            log(&format!(
                "unit {unit}: checkpoint {n} restored from its state topic"
            ));
        }
        // The unit's newest cut of a job checkpoint moves with its checkpoints; recorded again
        // in case the process that made it died before it recorded it.
        let unit_job = unit.job_id(&self.plan.job);
        let restored = crate::status::newest_checkpoint(&self.checkpoint_root.join(&unit_job))
            .map(|n| {
                job_checkpoint::read_cut(
                    &self
                        .checkpoint_root
                        .join(&unit_job)
                        .join(format!("chk-{n}")),
                )
            })
            .transpose()?
            .flatten();
        if let Some(cut) = &restored {
            self.checkpoints.record(unit, cut)?;
        }
        let cuts = UnitCuts::new(self.checkpoints.clone(), restored);
        job_checkpoint::register(&unit_job, cuts.clone());
        let hook_cuts = cuts.clone();
        let owner = self.coordination.clone();
        let hook: riffle_runtime::checkpoint::coordinator::CheckpointHook =
            Arc::new(move |n, dir| {
                // Fencing: a process that lost the unit publishes and commits nothing more.
                if !owner
                    .still_owns(unit)
                    .map_err(|e| riffle_runtime::RuntimeError::new(e.message))?
                {
                    return Err(riffle_runtime::RuntimeError::new(format!(
                        "unit {unit} {FENCED}: checkpoint {n} is not committed"
                    )));
                }
                let failed = |e: ClusterError| riffle_runtime::RuntimeError::new(e.message);
                // The cut goes into the checkpoint, the checkpoint into the state topic, and
                // only then is the cut recorded: a recorded cut can always be restored.
                let cut = hook_cuts.write_into(n, dir).map_err(failed)?;
                state.publish(n, dir).map_err(failed)?;
                if let Some(cut) = cut {
                    hook_cuts.record(unit, &cut).map_err(failed)?;
                    log(&format!(
                        "unit {unit}: checkpoint {n} is its cut of job checkpoint {}",
                        cut.job_checkpoint
                    ));
                }
                Ok(())
            });
        let coordination = self.coordination.clone();
        let task_cuts = cuts.clone();
        log(&format!("unit {unit} starts"));
        let task = tokio::spawn(async move {
            let _lock = lock;
            let subtask = riffle_runtime::UnitOptions {
                subtask: SubtaskInfo {
                    index: unit.unit,
                    parallelism: units,
                    // Set per source by the runtime.
                    earlier_reads: 0,
                },
                on_checkpoint: Some(hook),
                checkpoint_now: Some(task_cuts.checkpoint_now()),
            };
            let outcome = riffle_runtime::run_as_subtask(&graph, options, subtask).await;
            job_checkpoint::unregister(&unit_job, &task_cuts);
            outcome.map_err(|e| ClusterError::new(format!("unit {unit}: {e}")))?;
            if !unit_stop.is_stopped() {
                coordination.mark_finished(unit)?;
                log(&format!("unit {unit} finished"));
            } else {
                log(&format!("unit {unit} stopped"));
            }
            Ok(())
        });
        Ok(Running { stop, cuts, task })
    }

    /// Runs this member's share of the units until every unit of the job has finished (or
    /// `stop` is requested), following the assignment as the group changes.
    pub async fn run(
        &self,
        membership: &dyn Membership,
        stop: &StopHandle,
    ) -> Result<(), ClusterError> {
        let units = self.plan.units();
        let mut running: BTreeMap<UnitId, Running> = BTreeMap::new();
        let mut last_mine: Option<Vec<UnitId>> = None;
        let mut generation: Option<(u64, std::time::Instant)> = None;
        let mut restarts = Restarts::default();
        loop {
            let ended: Vec<UnitId> = running
                .iter()
                .filter(|(_, r)| r.task.is_finished())
                .map(|(u, _)| *u)
                .collect();
            for unit in ended {
                let Some(r) = running.remove(&unit) else {
                    continue;
                };
                let outcome = r
                    .task
                    .await
                    .map_err(|e| ClusterError::new(format!("unit {unit} failed: {e}")))
                    .and_then(|r| r);
                // A unit another process took over ends here; its new owner goes on.
                if let Err(e) = outcome {
                    if e.message.contains(FENCED) {
                        log(&e.message);
                        continue;
                    }
                    if let Err(e) = restarts.failed(unit, e) {
                        stop_all(&mut running).await;
                        self.set_running(&running);
                        return Err(e);
                    }
                }
            }
            self.set_running(&running);
            if stop.is_stopped() {
                stop_all(&mut running).await;
                self.set_running(&running);
                return Ok(());
            }
            if self.all_finished(&units)? {
                return self.checkpoints.complete_finished();
            }
            let assignment = membership.assignment(&units)?;
            // The first live member coordinates the job checkpoints; every member follows
            // their announcements.
            let coordinator =
                assignment.members.first().map(String::as_str) == Some(membership.name());
            self.checkpoints
                .step(coordinator, &units, |u| self.coordination.is_finished(u))?;
            for r in running.values() {
                r.cuts.poke();
            }
            if last_mine.as_ref() != Some(&assignment.mine) {
                let names: Vec<String> = assignment.mine.iter().map(UnitId::to_string).collect();
                log(&format!(
                    "member {} of {}: units [{}]",
                    membership.name(),
                    assignment.members.len(),
                    names.join(", ")
                ));
                last_mine = Some(assignment.mine.clone());
            }
            for (unit, r) in &running {
                if !assignment.mine.contains(unit) {
                    r.stop.stop();
                }
            }
            let since = match generation {
                Some((g, since)) if g == assignment.generation => since,
                _ => {
                    let now = std::time::Instant::now();
                    generation = Some((assignment.generation, now));
                    now
                }
            };
            if membership.may_grow() && since.elapsed() < self.settle {
                tokio::time::sleep(POLL).await;
                continue;
            }
            for unit in &assignment.mine {
                if running.contains_key(unit)
                    || !restarts.may_start(*unit)
                    || self.coordination.is_finished(*unit)?
                {
                    continue;
                }
                // The previous owner may still be finishing: try again at the next look.
                if let Some(lock) = self.coordination.try_acquire(*unit)? {
                    // Acquiring read the coordination up to now, so this sees a finish the
                    // look above missed (a view read a moment before the unit, here or in its
                    // previous owner, finished): a finished unit does not run again.
                    if self.coordination.is_finished(*unit)? {
                        continue;
                    }
                    match self.start(*unit, lock) {
                        Ok(started) => {
                            running.insert(*unit, started);
                        }
                        Err(e) => {
                            if let Err(e) = restarts.failed(*unit, e) {
                                stop_all(&mut running).await;
                                self.set_running(&running);
                                return Err(e);
                            }
                        }
                    }
                }
            }
            self.set_running(&running);
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The failures of this process's units. A failed unit restarts from its last checkpoint
/// (here or in the process the assignment gives it to), as Flink restarts a failed task: a
/// broker that did not answer in time is no reason to end the job. An error that keeps coming
/// back ends it.
#[derive(Default)]
struct Restarts {
    failures: BTreeMap<UnitId, u32>,
    retry_at: BTreeMap<UnitId, std::time::Instant>,
}

impl Restarts {
    /// Whether `unit` may start now (a failed unit waits [`RESTART_DELAY`]).
    fn may_start(&self, unit: UnitId) -> bool {
        self.retry_at
            .get(&unit)
            .is_none_or(|at| std::time::Instant::now() >= *at)
    }

    /// Records that `unit` failed with `error`; the error back when it failed too often.
    fn failed(&mut self, unit: UnitId, error: ClusterError) -> Result<(), ClusterError> {
        let count = self.failures.entry(unit).or_insert(0);
        *count += 1;
        if *count > UNIT_RESTARTS {
            return Err(error);
        }
        eprintln!(
            "riffle: {error}; restarting unit {unit} from its last checkpoint (restart {count} of {UNIT_RESTARTS})"
        );
        self.retry_at
            .insert(unit, std::time::Instant::now() + RESTART_DELAY);
        Ok(())
    }
}

/// What a fenced unit's failure says: another process owns the unit now.
const FENCED: &str = "was taken over by another process";

/// The (topic, consumer group) a source of a unit graph reads.
fn input_topic(connector: &riffle_plan::ConnectorSpec) -> Option<(String, String)> {
    if connector.connector == shuffle::CONNECTOR {
        let topic = connector.options.get(shuffle::options::TOPIC)?;
        let group = connector.options.get(shuffle::options::GROUP)?;
        return Some((topic.clone(), group.clone()));
    }
    if connector.connector != riffle_connectors::rocketmq::options::CONNECTOR {
        return None;
    }
    let mut options = riffle_connectors::options::Options::new(connector);
    let opts = riffle_connectors::rocketmq::options::normalize(
        connector,
        riffle_connectors::rocketmq::options::Role::Source,
        &mut options,
    )
    .ok()?;
    Some((opts.topic, opts.group?))
}

async fn stop_all(running: &mut BTreeMap<UnitId, Running>) {
    for r in running.values() {
        r.stop.stop();
    }
    for (_, r) in std::mem::take(running) {
        let _ = r.task.await;
    }
}

/// Progress lines on stderr when `RIFFLE_CLUSTER_LOG` is set.
pub(crate) fn log(line: &str) {
    if std::env::var_os("RIFFLE_CLUSTER_LOG").is_some() {
        eprintln!("riffle: {line}");
    }
}

/// Runs `graph` as job `job` split into units: in group `group` (this process's share of the
/// units, sharing them with every process started with the same group and job), or every
/// unit in this process when `group` is `None`. Blocks until every unit finished its bounded
/// input or Ctrl-C.
pub fn run_blocking(graph: &JobGraph, job: &str, group: Option<&str>) -> Result<(), ClusterError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ClusterError::new(format!("cannot start the tokio runtime: {e}")))?;
    runtime.block_on(async {
        let cluster = ClusterJob::new(graph, job, PrintTarget::Stdout)?;
        let membership = cluster.membership(group)?;
        let stop = StopHandle::default();
        let watcher = stop.clone();
        let signal = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("riffle: stopping (Ctrl-C)");
                watcher.stop();
            }
        });
        let result = cluster.run(membership.as_ref(), &stop).await;
        signal.abort();
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_unit_waits_then_restarts_until_it_failed_too_often() {
        let unit = UnitId { stage: 1, unit: 0 };
        let other = UnitId { stage: 1, unit: 1 };
        let mut restarts = Restarts::default();
        assert!(restarts.may_start(unit));
        for _ in 0..UNIT_RESTARTS {
            restarts
                .failed(unit, ClusterError::new("no answer"))
                .expect("restarted");
            assert!(!restarts.may_start(unit));
            assert!(restarts.may_start(other));
        }
        let error = restarts
            .failed(unit, ClusterError::new("no answer"))
            .expect_err("failed too often");
        assert_eq!(error.message, "no answer");
    }
}
