//! Job-wide checkpoints: one checkpoint id for all the units of a scaled-out job, under which
//! every unit records a consistent cut (Chandy–Lamport over the shuffle topics).
//!
//! 1. The *coordinator* (the first live member of the group) appends `jc-start N` to the job's
//!    coordination topic `<job>--coord`, once the previous job checkpoint is complete and
//!    `riffle.job-checkpoint.interval` has passed.
//! 2. A unit without shuffle inputs makes its next checkpoint its *cut* of `N`. Every shuffle
//!    sink of the unit then ends that checkpoint's transaction, in every queue, with a cut
//!    marker (property [`CUT_PROPERTY`] = `<producer unit>:<N>`): the rows before it in the
//!    queue are exactly the producer's output up to its cut.
//! 3. A consuming unit's shuffle source that reads producer `p`'s marker `N` skips `p`'s later
//!    messages (keeping only the offset of the first one skipped) until every producer's
//!    marker `N` arrived (or the producer ended): it is *aligned*. When every shuffle source
//!    of the unit is aligned, the unit's next checkpoint is its cut of `N` — its state
//!    reflects exactly its producers' output up to their cuts — and its own shuffle sinks
//!    write marker `N` downstream; the sources then read their queues again from the first
//!    skipped message.
//! 4. Each unit appends `jc-unit N` with its cut ([`UnitCut`]: its checkpoint's number and, per
//!    shuffle input queue and producer, the offset after the producer's marker) once that
//!    checkpoint is in the unit's state topic, before any of its transactions is committed.
//! 5. When every unit has recorded `N` or has finished, the coordinator appends `jc-done N`:
//!    job checkpoint `N` is complete. `riffle job status` shows the newest complete one.
//!
//! The coordinator also appends a snapshot record of the folded job checkpoints every
//! [`crate::coord_log::SNAPSHOT_EVERY`] events, from which a process that opens the topic
//! folds on (`coord_log::Fold`).
//!
//! A unit's newest cut is also written into each of its checkpoints (the file
//! [`CUT_FILE`]), so it moves with the unit: a unit restored from a checkpoint at or after its
//! cut of `N` does not cut `N` again, and one restored before it cuts `N` anew (what it did
//! after the restored checkpoint was never published). Units still restore to their own
//! newest checkpoint; the job-wide cut is a recovery point every unit holds in common.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use riffle_store::{Message, StoreError, StoredMessage, Topics};

use crate::coord_log::{Fold, Folded};

use crate::units::UnitId;
use crate::ClusterError;

/// The job option setting the time between the completion of one job checkpoint and the
/// start of the next.
pub const INTERVAL_OPTION: &str = "riffle.job-checkpoint.interval";

/// The job checkpoint interval when the job sets none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The shuffle message property of a cut marker: `<producer unit>:<job checkpoint>`.
pub const CUT_PROPERTY: &str = "RIFFLE_CUT";

/// The file in a unit's checkpoint directory holding the unit's newest cut (JSON
/// [`UnitCut`]).
pub const CUT_FILE: &str = "job-checkpoint.json";

/// The event kinds in the coordination topic.
const START: &str = "jc-start";
const UNIT: &str = "jc-unit";
const DONE: &str = "jc-done";
/// The property holding a job checkpoint's number.
const NUMBER: &str = "RIFFLE_JC";

/// A unit's part of a job checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitCut {
    /// The job checkpoint.
    pub job_checkpoint: u64,
    /// The unit's own checkpoint holding the cut (its source offsets, shuffle positions,
    /// state and staged output), kept in its state topic.
    pub unit_checkpoint: u64,
    /// Where the cut lies in every shuffle queue the unit reads, per producer.
    pub inputs: Vec<InputCut>,
}

/// Where a consumer's cut lies in one shuffle queue, for one producer unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputCut {
    /// The shuffle topic.
    pub topic: String,
    /// The queue.
    pub queue: u32,
    /// The producer unit (its index in its stage).
    pub producer: usize,
    /// The producer's messages before this offset are in the cut, none after: the offset after
    /// its cut marker, or after its last message when it had ended.
    pub offset: u64,
    /// Whether the producer had ended its input (it writes no more markers).
    pub ended: bool,
}

/// What the coordination topic says about job checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCheckpoints {
    /// The newest announced job checkpoint (0: none yet).
    pub announced: u64,
    /// The newest complete job checkpoint (0: none yet).
    pub complete: u64,
    /// The units' cuts per job checkpoint (only those after the newest complete one unless
    /// read with [`read_all`]).
    pub cuts: BTreeMap<u64, BTreeMap<UnitId, UnitCut>>,
}

impl Fold for JobCheckpoints {
    const SNAPSHOT: &'static str = "jc-snapshot";
    /// Whether every job checkpoint's cuts are kept.
    type Context = bool;

    fn fold(&mut self, stored: &StoredMessage, keep_all: bool) {
        self.fold_event(&stored.message, keep_all);
    }
}

impl JobCheckpoints {
    fn fold_event(&mut self, message: &Message, keep_all: bool) {
        let get = |k: &str| message.properties.get(k).map(String::as_str);
        let Some(n) = get(NUMBER).and_then(|n| n.parse::<u64>().ok()) else {
            return;
        };
        match get(crate::coord_log::KIND) {
            Some(START) => self.announced = self.announced.max(n),
            Some(DONE) => {
                self.complete = self.complete.max(n);
                if !keep_all {
                    self.cuts = self.cuts.split_off(&(self.complete + 1));
                }
            }
            Some(UNIT) => {
                let unit = get(crate::coord_log::UNIT).and_then(UnitId::parse);
                let cut = serde_json::from_slice::<UnitCut>(&message.body).ok();
                if let (Some(unit), Some(cut)) = (unit, cut) {
                    if keep_all || n > self.complete {
                        self.cuts.entry(n).or_default().insert(unit, cut);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Reads every job checkpoint event of job `job` still in its coordination topic, from the
/// topic's start (all cuts kept): for tests. A job whose coordination topic does not exist
/// has none.
pub fn read_all(topics: &dyn Topics, job: &str) -> Result<JobCheckpoints, ClusterError> {
    read(topics, job, |topic| Folded::from_start(topics, topic, true))
}

/// The newest complete job checkpoint of job `job` (0: none), folded from the newest
/// snapshot record of its coordination topic: for `riffle job status`.
pub fn newest_complete(topics: &dyn Topics, job: &str) -> Result<u64, ClusterError> {
    read(topics, job, |topic| Folded::open(topics, topic, false)).map(|v| v.complete)
}

/// Folds job `job`'s coordination topic from where `start` says.
fn read(
    topics: &dyn Topics,
    job: &str,
    start: impl FnOnce(&str) -> Result<Folded<JobCheckpoints>, ClusterError>,
) -> Result<JobCheckpoints, ClusterError> {
    let topic = crate::coord_log::topic_name(job);
    match topics.topic_config(&topic) {
        Ok(_) => {}
        Err(StoreError::TopicNotFound(_)) => return Ok(JobCheckpoints::default()),
        Err(e) => return Err(crate::coord_log::topic_error(&topic, e)),
    }
    let mut folded = start(&topic)?;
    folded.catch_up(topics, &topic)?;
    Ok(folded.view)
}

/// One process's handle on the job checkpoints of a job.
pub struct CheckpointLog {
    topics: Arc<dyn Topics>,
    topic: String,
    /// What was folded.
    view: Mutex<Folded<JobCheckpoints>>,
    /// The newest announced job checkpoint seen (read by units at their barriers).
    announced: AtomicU64,
    /// Time between one job checkpoint's completion and the next one's start.
    interval: Duration,
    /// When this process saw the newest job checkpoint complete (or started).
    since: Mutex<(u64, Instant)>,
}

impl CheckpointLog {
    /// The job checkpoints of job `job` in `topics` (its coordination topic is created when
    /// missing), started every `interval` by this process while it is the coordinator.
    pub fn open(
        topics: Arc<dyn Topics>,
        job: &str,
        interval: Duration,
    ) -> Result<Arc<Self>, ClusterError> {
        let topic = crate::coord_log::create_topic(topics.as_ref(), job)?;
        let view = Folded::open(topics.as_ref(), &topic, false)?;
        let log = Arc::new(Self {
            topics,
            topic,
            view: Mutex::new(view),
            announced: AtomicU64::new(0),
            interval,
            since: Mutex::new((0, Instant::now())),
        });
        log.refresh(|_| ())?;
        Ok(log)
    }

    fn error(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::new(format!("coordination topic '{}': {e}", self.topic))
    }

    fn folded(&self) -> Result<std::sync::MutexGuard<'_, Folded<JobCheckpoints>>, ClusterError> {
        self.view
            .lock()
            .map_err(|_| self.error("the view is poisoned"))
    }

    /// Folds the new events; runs `inspect` on the result.
    fn refresh<T>(&self, inspect: impl FnOnce(&JobCheckpoints) -> T) -> Result<T, ClusterError> {
        let mut folded = self.folded()?;
        folded.catch_up(self.topics.as_ref(), &self.topic)?;
        self.announced
            .store(folded.view.announced, Ordering::SeqCst);
        Ok(inspect(&folded.view))
    }

    /// The newest announced job checkpoint as last read (0: none).
    pub fn announced(&self) -> u64 {
        self.announced.load(Ordering::SeqCst)
    }

    fn append(
        &self,
        kind: &str,
        n: u64,
        unit: Option<UnitId>,
        body: Vec<u8>,
    ) -> Result<(), ClusterError> {
        let mut m = Message::new(body).with_key(kind.to_string());
        m.properties
            .insert(crate::coord_log::KIND.into(), kind.into());
        m.properties.insert(NUMBER.into(), n.to_string());
        if let Some(unit) = unit {
            m.properties
                .insert(crate::coord_log::UNIT.into(), unit.to_string());
        }
        self.topics
            .append_batch(&self.topic, 0, &[m])
            .map_err(|e| self.error(e))?;
        self.topics.flush().map_err(|e| self.error(e))
    }

    /// Records `unit`'s cut (again: a repeated record changes nothing).
    pub fn record(&self, unit: UnitId, cut: &UnitCut) -> Result<(), ClusterError> {
        let body = serde_json::to_vec(cut).map_err(|e| self.error(e))?;
        self.append(UNIT, cut.job_checkpoint, Some(unit), body)
    }

    /// Completes the announced job checkpoint once every unit of the job has finished: the
    /// units' final checkpoints are its cut.
    pub fn complete_finished(&self) -> Result<(), ClusterError> {
        let (announced, complete) = self.refresh(|v| (v.announced, v.complete))?;
        if announced > complete {
            self.append(DONE, announced, None, Vec::new())?;
            crate::runner::log(&format!("job checkpoint {announced} complete"));
        }
        Ok(())
    }

    /// A member's step: reads what is new; as the `coordinator`, also completes the
    /// announced job checkpoint when every unit of `units` has recorded it or `finished` says
    /// it finished, else starts the next one when the interval has passed since the last
    /// completed. Returns the newest complete one.
    pub fn step(
        &self,
        coordinator: bool,
        units: &[UnitId],
        finished: impl Fn(UnitId) -> Result<bool, ClusterError>,
    ) -> Result<u64, ClusterError> {
        let (announced, complete, recorded) = self.refresh(|v| {
            let recorded: BTreeSet<UnitId> = v
                .cuts
                .get(&v.announced)
                .map(|c| c.keys().copied().collect())
                .unwrap_or_default();
            (v.announced, v.complete, recorded)
        })?;
        if !coordinator {
            return Ok(complete);
        }
        self.folded()?
            .snapshot_if_due(self.topics.as_ref(), &self.topic)?;
        let mut since = self
            .since
            .lock()
            .map_err(|_| self.error("the clock is poisoned"))?;
        if since.0 != complete {
            *since = (complete, Instant::now());
        }
        if announced > complete {
            for unit in units {
                if !recorded.contains(unit) && !finished(*unit)? {
                    return Ok(complete);
                }
            }
            self.append(DONE, announced, None, Vec::new())?;
            crate::runner::log(&format!("job checkpoint {announced} complete"));
            *since = (announced, Instant::now());
            return Ok(announced);
        }
        if since.1.elapsed() >= self.interval {
            self.append(START, complete + 1, None, Vec::new())?;
            crate::runner::log(&format!("job checkpoint {} started", complete + 1));
            // Seen at the next step: no second start before this one completed.
            self.refresh(|_| ())?;
        }
        Ok(complete)
    }
}

/// What one shuffle source of a unit says about the cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceCut {
    /// Not aligned.
    Reading,
    /// Aligned: every producer's marker of job checkpoint `n` arrived or the producer ended
    /// (`None`: every producer ended); `inputs` is where the cut lies.
    Aligned {
        /// The job checkpoint.
        n: Option<u64>,
        /// The cut, per producer.
        inputs: Vec<InputCut>,
    },
}

#[derive(Debug, Default)]
struct CutState {
    /// The unit's newest cut as of its newest checkpoint.
    last: Option<UnitCut>,
    /// Its shuffle sources, by registration.
    sources: Vec<SourceCut>,
    /// The decision for the newest checkpoint asked about: (checkpoint, job checkpoint cut).
    decided: Option<(u64, Option<u64>)>,
}

/// The cuts of one running unit, shared by its shuffle sources and sinks and its checkpoint
/// hook (they find it by the unit's job id, [`for_unit`]).
pub struct UnitCuts {
    log: Arc<CheckpointLog>,
    state: Mutex<CutState>,
    /// Asks the unit's runtime for a checkpoint now.
    now: Arc<AtomicBool>,
}

impl UnitCuts {
    /// The cuts of a unit whose restored checkpoint holds `last` as its newest cut.
    pub fn new(log: Arc<CheckpointLog>, last: Option<UnitCut>) -> Arc<Self> {
        Arc::new(Self {
            log,
            state: Mutex::new(CutState {
                last,
                ..CutState::default()
            }),
            now: Arc::new(AtomicBool::new(false)),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CutState> {
        // The state is plain data, consistent after every statement: a panic elsewhere
        // does not make it unusable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a shuffle source of the unit; returns its index for [`Self::set_source`].
    pub fn register_source(&self) -> usize {
        let mut s = self.state();
        s.sources.push(SourceCut::Reading);
        s.sources.len() - 1
    }

    /// Updates what shuffle source `index` says about the cut.
    pub fn set_source(&self, index: usize, cut: SourceCut) {
        if let Some(slot) = self.state().sources.get_mut(index) {
            *slot = cut;
        }
        self.poke();
    }

    /// The cut the unit's next checkpoint would make: a unit without shuffle inputs cuts the
    /// newest announced job checkpoint it has not cut yet; a unit with shuffle inputs cuts
    /// when all its shuffle sources are aligned.
    fn due(&self, s: &CutState) -> Option<(u64, Vec<InputCut>)> {
        let done = s.last.as_ref().map_or(0, |c| c.job_checkpoint);
        if s.sources.is_empty() {
            let n = self.log.announced();
            return (n > done).then(|| (n, Vec::new()));
        }
        let mut ns = BTreeSet::new();
        let mut inputs = Vec::new();
        for source in &s.sources {
            match source {
                SourceCut::Reading => return None,
                SourceCut::Aligned { n, inputs: i } => {
                    ns.extend(*n);
                    inputs.extend(i.iter().cloned());
                }
            }
        }
        // Sources aligned on different job checkpoints cannot happen (a coordinator starts
        // one only after the previous completed); such a unit never cuts, which leaves the
        // job checkpoint incomplete rather than wrong.
        if ns.len() != 1 {
            return None;
        }
        let n = ns.into_iter().next().filter(|n| *n > done)?;
        Some((n, inputs))
    }

    /// Whether the unit's checkpoint `checkpoint` is its cut of a job checkpoint, and of which:
    /// decided once per checkpoint, at its barrier (the first of its sources, sinks or hook to
    /// ask).
    pub fn decide(&self, checkpoint: u64) -> Option<u64> {
        let mut s = self.state();
        if let Some((k, n)) = s.decided {
            if k == checkpoint {
                return n;
            }
        }
        let n = self.due(&s).map(|(n, inputs)| {
            s.last = Some(UnitCut {
                job_checkpoint: n,
                unit_checkpoint: checkpoint,
                inputs,
            });
            n
        });
        s.decided = Some((checkpoint, n));
        n
    }

    /// Asks the unit for a checkpoint now when it would be a cut: its aligned sources wait
    /// for it, and a job checkpoint waits for every unit.
    pub fn poke(&self) {
        let s = self.state();
        if self.due(&s).is_some() {
            self.now.store(true, Ordering::SeqCst);
        }
    }

    /// The flag by which the unit's runtime is asked for a checkpoint now.
    pub fn checkpoint_now(&self) -> Arc<AtomicBool> {
        self.now.clone()
    }

    /// The unit's newest cut.
    pub fn last(&self) -> Option<UnitCut> {
        self.state().last.clone()
    }

    /// Writes the unit's newest cut into the directory of its checkpoint `checkpoint` (after
    /// deciding it), so that it moves with the checkpoint; returns the cut when that
    /// checkpoint is it.
    pub fn write_into(&self, checkpoint: u64, dir: &Path) -> Result<Option<UnitCut>, ClusterError> {
        self.decide(checkpoint);
        let Some(last) = self.last() else {
            return Ok(None);
        };
        let path = dir.join(CUT_FILE);
        let text = serde_json::to_vec(&last)
            .map_err(|e| ClusterError::new(format!("cannot encode the cut: {e}")))?;
        std::fs::write(&path, text)
            .map_err(|e| ClusterError::new(format!("cannot write {}: {e}", path.display())))?;
        Ok((last.unit_checkpoint == checkpoint).then_some(last))
    }

    /// Records `cut` in the coordination topic.
    pub fn record(&self, unit: UnitId, cut: &UnitCut) -> Result<(), ClusterError> {
        self.log.record(unit, cut)
    }
}

/// The newest cut in a unit's checkpoint directory `chk` (`None`: the unit has not cut yet).
pub fn read_cut(chk: &Path) -> Result<Option<UnitCut>, ClusterError> {
    let path = chk.join(CUT_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ClusterError::new(format!("{} is corrupted: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ClusterError::new(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The running units' cuts of this process, by unit job id (`<job>.<stage>-<unit>`): the
/// connectors of a unit, opened by the runtime from their options, find theirs here.
fn registry() -> &'static Mutex<HashMap<String, Arc<UnitCuts>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<UnitCuts>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Makes `cuts` the cuts of the unit with job id `unit_job` until [`unregister`].
pub fn register(unit_job: &str, cuts: Arc<UnitCuts>) {
    if let Ok(mut r) = registry().lock() {
        r.insert(unit_job.to_string(), cuts);
    }
}

/// Forgets `cuts` (when they are still the unit's).
pub fn unregister(unit_job: &str, cuts: &Arc<UnitCuts>) {
    if let Ok(mut r) = registry().lock() {
        if r.get(unit_job).is_some_and(|c| Arc::ptr_eq(c, cuts)) {
            r.remove(unit_job);
        }
    }
}

/// The cuts of the running unit with job id `unit_job` (`None`: not a unit of a group job).
pub fn for_unit(unit_job: &str) -> Option<Arc<UnitCuts>> {
    registry().lock().ok()?.get(unit_job).cloned()
}
