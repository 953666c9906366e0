//! Coordination through a topic: the group membership and the unit ownership of a job whose
//! processes share no file system (a real RocketMQ cluster), written once against [`Topics`].
//!
//! The job's processes append *events* to the one queue of the topic `<job>--coord` and every
//! process folds the queue, in its order, into the same view:
//!
//! - `beat` (every [`CoordLog::lease`] / 4, from a thread of its own): the member is alive;
//!   a member whose last beat is older than the lease — measured in the broker's store
//!   timestamps, so machine clocks need not agree — is dead; `leave` ends it at once.
//! - `claim <unit>`: takes the unit if, at that point of the queue, it has no owner or its
//!   owner is dead or gone; otherwise nothing. Every process agrees on the winner, and the
//!   claimer reads the queue up to its own claim before it restores the unit — so everything
//!   the previous owner wrote before (its last state-topic checkpoint, its commits) has
//!   reached the broker's queues too (a broker dispatches its commit log in order).
//! - `release <unit>` (the owner's unit ended), `finished <unit>`.
//!
//! Snapshots: the topic only grows (a broker cannot truncate a queue), so a process does not
//! fold it from its start. Every view of the topic (this one, and the job checkpoints of
//! [`crate::job_checkpoint`]) is a [`Fold`]; once [`SNAPSHOT_EVERY`] events were folded since
//! the view's newest *snapshot record* — its folded state as JSON, with the offset up to
//! which it folded the queue — one process appends another (here the first live member,
//! there the coordinator). A reader that opens the topic scans it backwards from its end for
//! the newest snapshot of its view and folds from that snapshot's offset on: the cost of
//! joining is bounded by the snapshot interval, not by the job's age. On the embedded store
//! the topic is created with a size cap (two segments), so old segments are removed too;
//! a reader that finds the events it was about to fold removed starts again from the newest
//! snapshot.
//!
//! Fencing: a process commits a unit's checkpoint only while the view says it owns the unit
//! *and* its last heartbeat was sent less than half a lease ago. A claim wins over a live
//! owner only a lease after that owner's last beat was stored, so the stale owner has half a
//! lease to finish the commit it began — a lease, as any lease, assumes clocks that run at
//! about the same rate and a commit shorter than half a lease.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use riffle_store::{Message, StoreError, StoredMessage, TopicConfig, Topics};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::coordination::{Coordination, UnitGuard};
use crate::membership::{Assignment, Membership};
use crate::units::UnitId;
use crate::ClusterError;

/// A process's default lease.
pub const LEASE: Duration = Duration::from_secs(6);

/// The message property holding an event's kind.
pub(crate) const KIND: &str = "RIFFLE_COORD";
const MEMBER: &str = "RIFFLE_MEMBER";
/// The message property holding an event's unit.
pub(crate) const UNIT: &str = "RIFFLE_UNIT";
/// A claim's own id, by which its claimer recognises it.
const CLAIM: &str = "RIFFLE_CLAIM";
/// The property of a snapshot record: the queue offset before which its view folded every
/// event.
const UPTO: &str = "RIFFLE_UPTO";

/// Events folded between two snapshot records of a view (the bound on what a reader folds
/// beyond the newest snapshot, give or take the events appended while it was written).
pub const SNAPSHOT_EVERY: u64 = 1000;

/// Messages read at a time.
const READ_MESSAGES: usize = 1024;

/// How long a claimer waits to see its own claim in the queue.
const SEE_OWN_EVENT: Duration = Duration::from_secs(60);

/// The coordination topic of job `job`.
pub fn topic_name(job: &str) -> String {
    crate::stages::store_name(&format!("{job}--coord"))
}

/// Creates job `job`'s coordination topic (one queue) when it is missing; returns its name.
/// On the embedded store the topic keeps at most two segments: the newest snapshot of every
/// view, written every [`SNAPSHOT_EVERY`] events, is always in the newer two (a broker
/// applies its own retention and takes no per-topic cap).
pub(crate) fn create_topic(topics: &dyn Topics, job: &str) -> Result<String, ClusterError> {
    let topic = topic_name(job);
    let config = TopicConfig {
        queues: 1,
        retention_bytes: topics
            .as_store()
            .map(|_| 2 * riffle_store::StoreOptions::default().segment_bytes),
        ..TopicConfig::default()
    };
    match topics.create_topic(&topic, config) {
        Ok(()) | Err(StoreError::TopicExists(_)) => Ok(topic),
        Err(e) => Err(ClusterError::new(format!(
            "cannot create the coordination topic '{topic}': {e}"
        ))),
    }
}

/// A view of the coordination topic, folded from its events in queue order (and resumed
/// from its newest snapshot record).
pub(crate) trait Fold: Default + Serialize + DeserializeOwned {
    /// The event kind of the view's snapshot records.
    const SNAPSHOT: &'static str;
    /// What folding needs besides the events (not part of a snapshot).
    type Context: Copy;
    /// Folds one event (snapshot records too, as every reader from an older snapshot or the
    /// queue's start sees them).
    fn fold(&mut self, stored: &StoredMessage, context: Self::Context);
}

/// A view and its place in the queue.
pub(crate) struct Folded<V: Fold> {
    /// What the events before `next` say.
    pub(crate) view: V,
    /// The next offset to fold.
    next: u64,
    /// Events folded since the view's newest snapshot record.
    since_snapshot: u64,
    context: V::Context,
}

/// The newest snapshot record of `kind` in the queue of `topic`: its view's JSON and the offset
/// it folded up to. Scans the queue backwards from its end, a read at a time.
fn newest_snapshot(
    topics: &dyn Topics,
    topic: &str,
    kind: &str,
) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
    let info = topics.queue_info(topic, 0)?;
    let mut end = info.max_offset;
    while end > info.min_offset {
        let from = end
            .saturating_sub(READ_MESSAGES as u64)
            .max(info.min_offset);
        let mut chunk = Vec::new();
        let mut next = from;
        while next < end {
            let read = topics.read(topic, 0, next, (end - next) as usize)?;
            let Some(last) = read.last() else { break };
            next = last.offset + 1;
            chunk.extend(read.into_iter().filter(|m| m.offset < end));
        }
        for stored in chunk.into_iter().rev() {
            let m = stored.message;
            if m.properties.get(KIND).map(String::as_str) == Some(kind) {
                if let Some(upto) = m.properties.get(UPTO).and_then(|u| u.parse().ok()) {
                    return Ok(Some((upto, m.body)));
                }
            }
        }
        end = from;
    }
    Ok(None)
}

/// An error of the coordination topic `topic`.
pub(crate) fn topic_error(topic: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::new(format!("coordination topic '{topic}': {e}"))
}

impl<V: Fold> Folded<V> {
    /// The empty view at the queue's start (its oldest event still there), not yet caught up.
    pub(crate) fn from_start(
        topics: &dyn Topics,
        topic: &str,
        context: V::Context,
    ) -> Result<Self, ClusterError> {
        Ok(Self {
            view: V::default(),
            next: topics
                .queue_info(topic, 0)
                .map_err(|e| topic_error(topic, e))?
                .min_offset,
            since_snapshot: 0,
            context,
        })
    }

    /// The view as of the newest snapshot record (or the queue's start when there is none),
    /// not yet caught up.
    pub(crate) fn open(
        topics: &dyn Topics,
        topic: &str,
        context: V::Context,
    ) -> Result<Self, ClusterError> {
        match newest_snapshot(topics, topic, V::SNAPSHOT).map_err(|e| topic_error(topic, e))? {
            Some((upto, body)) => Ok(Self {
                view: serde_json::from_slice(&body).map_err(|e| {
                    topic_error(topic, format!("a corrupted {} record: {e}", V::SNAPSHOT))
                })?,
                next: upto,
                since_snapshot: 0,
                context,
            }),
            None => Self::from_start(topics, topic, context),
        }
    }

    /// Folds the queue up to its end. When the events to fold next were removed (retention),
    /// starts again from the newest snapshot record.
    pub(crate) fn catch_up(
        &mut self,
        topics: &dyn Topics,
        topic: &str,
    ) -> Result<(), ClusterError> {
        loop {
            let read = topics
                .read(topic, 0, self.next, READ_MESSAGES)
                .map_err(|e| topic_error(topic, e))?;
            let (Some(first), Some(last)) = (read.first(), read.last()) else {
                return Ok(());
            };
            if first.offset > self.next {
                let reopened = Self::open(topics, topic, self.context)?;
                if reopened.next > self.next {
                    *self = reopened;
                    continue;
                }
                return Err(topic_error(
                    topic,
                    format!(
                        "its events {}..{} were removed and no snapshot follows them",
                        self.next, first.offset
                    ),
                ));
            }
            self.next = last.offset + 1;
            for stored in &read {
                self.view.fold(stored, self.context);
                if stored.message.properties.get(KIND).map(String::as_str) == Some(V::SNAPSHOT) {
                    self.since_snapshot = 0;
                } else {
                    self.since_snapshot += 1;
                }
            }
        }
    }

    /// Appends a snapshot record of the view when [`SNAPSHOT_EVERY`] events were folded since
    /// the newest one; returns whether it did.
    pub(crate) fn snapshot_if_due(
        &mut self,
        topics: &dyn Topics,
        topic: &str,
    ) -> Result<bool, ClusterError> {
        if self.since_snapshot < SNAPSHOT_EVERY {
            return Ok(false);
        }
        let body = serde_json::to_vec(&self.view).map_err(|e| topic_error(topic, e))?;
        let mut m = Message::new(body).with_key(V::SNAPSHOT.to_string());
        m.properties.insert(KIND.into(), V::SNAPSHOT.into());
        m.properties.insert(UPTO.into(), self.next.to_string());
        topics
            .append_batch(topic, 0, &[m])
            .map_err(|e| topic_error(topic, e))?;
        // Not again before more events: the record itself is folded as the newest snapshot.
        self.since_snapshot = 0;
        Ok(true)
    }
}

/// What the queue says about the group: members, unit owners, finished units, the plan.
#[derive(Debug, Default, Serialize, Deserialize)]
struct View {
    /// The newest store timestamp folded.
    latest: i64,
    /// Live-or-dead members and their last beat (store timestamp).
    beats: BTreeMap<String, i64>,
    /// Unit owners.
    owners: BTreeMap<UnitId, String>,
    finished: BTreeSet<UnitId>,
    /// The id of every member's last claim folded.
    last_claim: BTreeMap<String, String>,
    /// The job's plan for `riffle job status`, as the latest `plan` event holds it (JSON text).
    plan: Option<String>,
    /// When the view last read the queue to its end (this process's, not in snapshots).
    #[serde(skip)]
    read_at: Option<Instant>,
}

impl View {
    fn alive(&self, member: &str, at: i64, lease_ms: i64) -> bool {
        self.beats
            .get(member)
            .is_some_and(|beat| at - beat <= lease_ms)
    }

    fn fold_event(&mut self, at: i64, message: &Message, lease_ms: i64) {
        self.latest = self.latest.max(at);
        let get = |k: &str| message.properties.get(k).cloned().unwrap_or_default();
        let member = get(MEMBER);
        let unit = UnitId::parse(&get(UNIT));
        match get(KIND).as_str() {
            "beat" => {
                self.beats.insert(member, at);
            }
            "leave" => {
                self.beats.remove(&member);
                self.owners.retain(|_, owner| *owner != member);
            }
            "claim" => {
                self.last_claim.insert(member.clone(), get(CLAIM));
                let Some(unit) = unit else { return };
                let free = match self.owners.get(&unit) {
                    None => true,
                    Some(owner) => *owner == member || !self.alive(owner, at, lease_ms),
                };
                if free {
                    self.owners.insert(unit, member);
                }
            }
            "release" => {
                if let Some(unit) = unit {
                    if self.owners.get(&unit) == Some(&member) {
                        self.owners.remove(&unit);
                    }
                }
            }
            "finished" => {
                if let Some(unit) = unit {
                    self.finished.insert(unit);
                }
            }
            "plan" => self.plan = String::from_utf8(message.body.clone()).ok(),
            _ => {}
        }
    }
}

impl Fold for View {
    const SNAPSHOT: &'static str = "snapshot";
    /// The lease in milliseconds.
    type Context = i64;

    fn fold(&mut self, stored: &StoredMessage, lease_ms: i64) {
        self.fold_event(stored.store_timestamp, &stored.message, lease_ms);
    }
}

/// One process's handle on a job's coordination topic.
pub struct CoordLog {
    topics: Arc<dyn Topics>,
    topic: String,
    member: String,
    lease: Duration,
    view: Mutex<Folded<View>>,
    /// When the newest heartbeat that reached the broker was sent.
    last_beat: Mutex<Option<Instant>>,
    /// Claims made so far (ids of claims).
    claims: AtomicU64,
    stopped: Arc<AtomicBool>,
}

impl CoordLog {
    /// Joins job `job`'s coordination topic (created when missing) as a new member, beating
    /// every `lease / 4` from a thread of its own until dropped, when it leaves. Every process
    /// of the job is a member: on a cluster, the job's processes are its group.
    pub fn join(
        topics: Arc<dyn Topics>,
        job: &str,
        lease: Duration,
    ) -> Result<Arc<Self>, ClusterError> {
        let topic = create_topic(topics.as_ref(), job)?;
        let view = Folded::open(topics.as_ref(), &topic, lease.as_millis() as i64)?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let log = Arc::new(Self {
            topics,
            topic,
            // Sorts by join time, as the embedded store's members: a newcomer takes units
            // from the end.
            member: format!("{nanos:024}-{}", std::process::id()),
            lease,
            view: Mutex::new(view),
            last_beat: Mutex::new(None),
            claims: AtomicU64::new(0),
            stopped: Arc::new(AtomicBool::new(false)),
        });
        log.beat()?;
        let weak = Arc::downgrade(&log);
        let stopped = log.stopped.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                std::thread::sleep(lease / 4);
                match weak.upgrade() {
                    // A failed beat is retried; missing beats only make others take over.
                    Some(log) if !stopped.load(Ordering::SeqCst) => {
                        let _ = log.beat();
                        // A snapshot that fails is written at a later beat.
                        let _ = log.snapshot_if_due();
                    }
                    _ => return,
                }
            }
        });
        Ok(log)
    }

    /// This member's id.
    pub fn member(&self) -> &str {
        &self.member
    }

    /// The lease.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn error(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::new(format!("coordination topic '{}': {e}", self.topic))
    }

    fn append(&self, kind: &str, unit: Option<UnitId>) -> Result<(), ClusterError> {
        self.append_with(kind, unit, None)
    }

    /// Publishes the job's plan (`plan.json`'s text) for `riffle job status`, which reads it
    /// from the topic when the processes share no directory with it.
    pub fn publish_plan(&self, plan: &[u8]) -> Result<(), ClusterError> {
        let mut m = Message::new(plan.to_vec()).with_key("plan".to_string());
        m.properties.insert(KIND.into(), "plan".into());
        m.properties.insert(MEMBER.into(), self.member.clone());
        self.topics
            .append_batch(&self.topic, 0, &[m])
            .map_err(|e| self.error(e))
    }

    fn append_with(
        &self,
        kind: &str,
        unit: Option<UnitId>,
        claim: Option<&str>,
    ) -> Result<(), ClusterError> {
        let mut m = Message::new(kind.to_string()).with_key(kind.to_string());
        if let Some(claim) = claim {
            m.properties.insert(CLAIM.into(), claim.to_string());
        }
        m.properties.insert(KIND.into(), kind.into());
        m.properties.insert(MEMBER.into(), self.member.clone());
        if let Some(unit) = unit {
            m.properties.insert(UNIT.into(), unit.to_string());
        }
        self.topics
            .append_batch(&self.topic, 0, &[m])
            .map_err(|e| self.error(e))
    }

    fn beat(&self) -> Result<(), ClusterError> {
        let sent = Instant::now();
        self.append("beat", None)?;
        if let Ok(mut last) = self.last_beat.lock() {
            *last = Some(sent);
        }
        Ok(())
    }

    fn folded(&self) -> Result<std::sync::MutexGuard<'_, Folded<View>>, ClusterError> {
        self.view
            .lock()
            .map_err(|_| self.error("the view is poisoned"))
    }

    /// Folds the queue up to its end; runs `inspect` on the view then.
    fn refresh<T>(&self, inspect: impl FnOnce(&View) -> T) -> Result<T, ClusterError> {
        let mut folded = self.folded()?;
        folded.catch_up(self.topics.as_ref(), &self.topic)?;
        folded.view.read_at = Some(Instant::now());
        Ok(inspect(&folded.view))
    }

    /// [`Self::refresh`] unless the view read the queue less than 100 ms ago.
    fn recent<T>(&self, inspect: impl FnOnce(&View) -> T) -> Result<T, ClusterError> {
        {
            let folded = self.folded()?;
            if folded
                .view
                .read_at
                .is_some_and(|at| at.elapsed() < Duration::from_millis(100))
            {
                return Ok(inspect(&folded.view));
            }
        }
        self.refresh(inspect)
    }

    /// Appends a snapshot record of the view when one is due and this process is the group's
    /// first live member (one writer; when it dies, the next member takes over).
    fn snapshot_if_due(&self) -> Result<bool, ClusterError> {
        let mut folded = self.folded()?;
        folded.catch_up(self.topics.as_ref(), &self.topic)?;
        if self.members(&folded.view).first() != Some(&self.member) {
            return Ok(false);
        }
        folded.snapshot_if_due(self.topics.as_ref(), &self.topic)
    }

    /// The live members, sorted.
    fn members(&self, view: &View) -> Vec<String> {
        let lease_ms = self.lease.as_millis() as i64;
        view.beats
            .keys()
            .filter(|m| view.alive(m, view.latest, lease_ms))
            .cloned()
            .collect()
    }

    /// Leaves the group and stops beating.
    fn leave(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = self.append("leave", None);
    }
}

impl Drop for CoordLog {
    fn drop(&mut self) {
        self.leave();
    }
}

/// What a job's coordination topic says, for `riffle job status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    /// The live members, sorted (a member is live while its last heartbeat is less than a
    /// lease older than the newer of the topic's newest event and this machine's clock).
    pub members: Vec<String>,
    /// The owner of every owned unit.
    pub owners: BTreeMap<UnitId, String>,
    /// The finished units.
    pub finished: BTreeSet<UnitId>,
    /// The latest published plan (`plan.json`'s text).
    pub plan: Option<Vec<u8>>,
}

/// Reads job `job`'s coordination topic without joining it.
pub fn snapshot(topics: &dyn Topics, job: &str) -> Result<GroupSnapshot, ClusterError> {
    let topic = topic_name(job);
    let lease_ms = LEASE.as_millis() as i64;
    let mut folded = Folded::<View>::open(topics, &topic, lease_ms)?;
    folded.catch_up(topics, &topic)?;
    let view = folded.view;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
        .max(view.latest);
    let members: Vec<String> = view
        .beats
        .keys()
        .filter(|m| view.alive(m, now, lease_ms))
        .cloned()
        .collect();
    let owners = view
        .owners
        .iter()
        .filter(|(_, owner)| members.contains(owner))
        .map(|(unit, owner)| (*unit, owner.clone()))
        .collect();
    Ok(GroupSnapshot {
        members,
        owners,
        finished: view.finished,
        plan: view.plan.map(String::into_bytes),
    })
}

/// Releases a claimed unit when dropped.
struct Claimed {
    log: Arc<CoordLog>,
    unit: UnitId,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // A release that fails leaves the unit to the lease.
        let _ = self.log.append("release", Some(self.unit));
    }
}

/// [`Coordination`] through a [`CoordLog`].
pub struct LogCoordination(pub Arc<CoordLog>);

impl Coordination for LogCoordination {
    fn try_acquire(&self, unit: UnitId) -> Result<Option<UnitGuard>, ClusterError> {
        let log = &self.0;
        let lease_ms = log.lease.as_millis() as i64;
        let (owner, alive) = log.refresh(|v| {
            let owner = v.owners.get(&unit).cloned();
            let alive = owner
                .as_ref()
                .is_some_and(|o| v.alive(o, v.latest, lease_ms));
            (owner, alive)
        })?;
        if owner.as_deref() != Some(log.member.as_str()) {
            if alive {
                return Ok(None);
            }
            let claim = format!(
                "{}/{}",
                log.member,
                log.claims.fetch_add(1, Ordering::SeqCst)
            );
            log.append_with("claim", Some(unit), Some(&claim))?;
            // Read up to the claim: only then is the outcome — and everything before it — known.
            let deadline = Instant::now() + SEE_OWN_EVENT;
            loop {
                let outcome = log.refresh(|v| {
                    (v.last_claim.get(&log.member) == Some(&claim))
                        .then(|| v.owners.get(&unit) == Some(&log.member))
                })?;
                match outcome {
                    Some(true) => break,
                    Some(false) => return Ok(None),
                    None if Instant::now() > deadline => {
                        return Err(log.error(format!(
                            "the claim of unit {unit} did not become readable within {} s",
                            SEE_OWN_EVENT.as_secs()
                        )))
                    }
                    None => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
        Ok(Some(UnitGuard::new(Claimed {
            log: log.clone(),
            unit,
        })))
    }

    fn still_owns(&self, unit: UnitId) -> Result<bool, ClusterError> {
        let log = &self.0;
        let fresh = log
            .last_beat
            .lock()
            .map_err(|_| log.error("the heartbeat clock is poisoned"))?
            .is_some_and(|sent| sent.elapsed() < log.lease / 2);
        Ok(fresh && log.refresh(|v| v.owners.get(&unit) == Some(&log.member))?)
    }

    fn mark_finished(&self, unit: UnitId) -> Result<(), ClusterError> {
        self.0.append("finished", Some(unit))
    }

    fn is_finished(&self, unit: UnitId) -> Result<bool, ClusterError> {
        self.0.recent(|v| v.finished.contains(&unit))
    }
}

/// [`Membership`] of a group through a [`CoordLog`].
pub struct LogGroup(pub Arc<CoordLog>);

impl Membership for LogGroup {
    fn name(&self) -> &str {
        self.0.member()
    }

    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError> {
        let log = &self.0;
        let members = log.refresh(|v| log.members(v))?;
        let mut sorted = units.to_vec();
        sorted.sort();
        let mine = riffle_store::membership::allocate_averagely(&sorted, &members, log.member());
        Ok(Assignment {
            generation: riffle_state::fnv1a(members.join(",").as_bytes()),
            members,
            mine,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(dir: &std::path::Path) -> Arc<dyn Topics> {
        riffle_connectors::rocketmq::shared_store(dir).unwrap()
    }

    const UNIT: UnitId = UnitId { stage: 1, unit: 2 };

    #[test]
    fn a_unit_has_one_owner_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let a = LogCoordination(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let b = LogCoordination(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let held = a.try_acquire(UNIT).unwrap().expect("a takes the free unit");
        assert!(b.try_acquire(UNIT).unwrap().is_none());
        assert!(a.still_owns(UNIT).unwrap());
        assert!(!b.still_owns(UNIT).unwrap());
        drop(held);
        let _held = b
            .try_acquire(UNIT)
            .unwrap()
            .expect("b takes the released unit");
        assert!(!a.still_owns(UNIT).unwrap());
        assert!(b.still_owns(UNIT).unwrap());
        assert!(!a.is_finished(UNIT).unwrap());
        b.mark_finished(UNIT).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        assert!(a.is_finished(UNIT).unwrap());
    }

    #[test]
    fn acquiring_a_unit_sees_that_it_finished_even_when_the_last_look_did_not() {
        let dir = tempfile::tempdir().unwrap();
        let a = LogCoordination(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let b = LogCoordination(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let held = a.try_acquire(UNIT).unwrap().expect("a takes the unit");
        // b looks while the unit runs; its view is then recent enough to be reused.
        assert!(!b.is_finished(UNIT).unwrap());
        a.mark_finished(UNIT).unwrap();
        drop(held);
        let _taken = b
            .try_acquire(UNIT)
            .unwrap()
            .expect("the released unit is free");
        assert!(b.is_finished(UNIT).unwrap());
    }

    #[test]
    fn a_silent_owner_is_fenced_and_its_units_taken_after_its_lease() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Duration::from_millis(800);
        let a = LogCoordination(CoordLog::join(topics(dir.path()), "j", lease).unwrap());
        let b = LogCoordination(CoordLog::join(topics(dir.path()), "j", lease).unwrap());
        let _held = a.try_acquire(UNIT).unwrap().expect("a takes the unit");
        // a stops beating (a hung or cut-off process) without leaving.
        a.0.stopped.store(true, Ordering::SeqCst);
        assert!(b.try_acquire(UNIT).unwrap().is_none());
        std::thread::sleep(lease / 2);
        // Half a lease after its last beat, a commits nothing more.
        assert!(!a.still_owns(UNIT).unwrap());
        std::thread::sleep(lease);
        let _taken = b.try_acquire(UNIT).unwrap().expect("b takes a's unit");
        assert!(b.still_owns(UNIT).unwrap());
        assert!(!a.still_owns(UNIT).unwrap());
    }

    #[test]
    fn a_snapshot_shows_members_owners_finished_units_and_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let a = LogCoordination(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let b = CoordLog::join(topics(dir.path()), "j", LEASE).unwrap();
        let _held = a.try_acquire(UNIT).unwrap().expect("a takes the unit");
        let done = UnitId { stage: 0, unit: 0 };
        a.mark_finished(done).unwrap();
        a.0.publish_plan(b"{\"job\":\"j\"}").unwrap();
        let seen = snapshot(topics(dir.path()).as_ref(), "j").unwrap();
        let mut members = vec![a.0.member().to_string(), b.member().to_string()];
        members.sort();
        assert_eq!(seen.members, members);
        assert_eq!(seen.owners.get(&UNIT), Some(&a.0.member().to_string()));
        assert!(seen.finished.contains(&done));
        assert_eq!(seen.plan.as_deref(), Some(&b"{\"job\":\"j\"}"[..]));
        drop(b);
        assert_eq!(
            snapshot(topics(dir.path()).as_ref(), "j")
                .unwrap()
                .members
                .len(),
            1
        );
    }

    #[test]
    fn members_share_the_units_and_a_leaving_member_gives_its_share_back() {
        let dir = tempfile::tempdir().unwrap();
        let units: Vec<UnitId> = (0..5).map(|unit| UnitId { stage: 0, unit }).collect();
        let a = LogGroup(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let b = LogGroup(CoordLog::join(topics(dir.path()), "j", LEASE).unwrap());
        let (sa, sb) = (a.assignment(&units).unwrap(), b.assignment(&units).unwrap());
        assert_eq!(sa.members.len(), 2);
        assert_eq!(sa.generation, sb.generation);
        assert_eq!([sa.mine.clone(), sb.mine].concat(), units);
        drop(b);
        let after = a.assignment(&units).unwrap();
        assert_eq!(after.mine, units);
        assert_ne!(after.generation, sa.generation);
    }
    /// Counts the messages read through it.
    struct Counting {
        inner: Arc<riffle_store::Store>,
        read: std::sync::atomic::AtomicUsize,
    }

    impl Topics for Counting {
        fn location(&self) -> String {
            self.inner.location()
        }
        fn topics(&self) -> riffle_store::Result<Vec<String>> {
            Topics::topics(self.inner.as_ref())
        }
        fn create_topic(&self, name: &str, config: TopicConfig) -> riffle_store::Result<()> {
            Topics::create_topic(self.inner.as_ref(), name, config)
        }
        fn delete_topic(&self, name: &str) -> riffle_store::Result<()> {
            Topics::delete_topic(self.inner.as_ref(), name)
        }
        fn topic_config(&self, name: &str) -> riffle_store::Result<TopicConfig> {
            Topics::topic_config(self.inner.as_ref(), name)
        }
        fn describe(&self, name: &str) -> riffle_store::Result<riffle_store::TopicInfo> {
            Topics::describe(self.inner.as_ref(), name)
        }
        fn queue_info(
            &self,
            topic: &str,
            queue: u32,
        ) -> riffle_store::Result<riffle_store::QueueInfo> {
            Topics::queue_info(self.inner.as_ref(), topic, queue)
        }
        fn read(
            &self,
            topic: &str,
            queue: u32,
            offset: u64,
            max: usize,
        ) -> riffle_store::Result<Vec<StoredMessage>> {
            let read = Topics::read(self.inner.as_ref(), topic, queue, offset, max)?;
            self.read.fetch_add(read.len(), Ordering::SeqCst);
            Ok(read)
        }
        fn offset_for_timestamp(
            &self,
            topic: &str,
            queue: u32,
            ts: i64,
        ) -> riffle_store::Result<u64> {
            Topics::offset_for_timestamp(self.inner.as_ref(), topic, queue, ts)
        }
        fn append_batch(
            &self,
            topic: &str,
            queue: u32,
            messages: &[Message],
        ) -> riffle_store::Result<()> {
            Topics::append_batch(self.inner.as_ref(), topic, queue, messages)
        }
        fn committed_offset(
            &self,
            group: &str,
            topic: &str,
            queue: u32,
        ) -> riffle_store::Result<Option<u64>> {
            Topics::committed_offset(self.inner.as_ref(), group, topic, queue)
        }
        fn commit_offsets(
            &self,
            group: &str,
            topic: &str,
            offsets: &[(u32, u64)],
        ) -> riffle_store::Result<()> {
            Topics::commit_offsets(self.inner.as_ref(), group, topic, offsets)
        }
        fn flush(&self) -> riffle_store::Result<()> {
            Topics::flush(self.inner.as_ref())
        }
    }

    /// `rounds` job checkpoints of two units, each unit's member beating and claiming in
    /// between (the events of a long-running job), with the coordinator and the first member
    /// writing their snapshots as they do when running.
    fn long_job(topics: Arc<dyn Topics>, rounds: u64) -> (Arc<CoordLog>, Arc<CoordLog>) {
        let a = CoordLog::join(topics.clone(), "j", LEASE).unwrap();
        let b = CoordLog::join(topics.clone(), "j", LEASE).unwrap();
        let checkpoints =
            crate::job_checkpoint::CheckpointLog::open(topics, "j", Duration::ZERO).unwrap();
        let units = [UNIT, UnitId { stage: 0, unit: 0 }];
        for n in 1..=rounds {
            checkpoints.step(true, &units, |_| Ok(false)).unwrap();
            for (unit, member) in units.iter().zip([&a, &b]) {
                member.beat().unwrap();
                member
                    .append_with("claim", Some(*unit), Some(&format!("c{n}")))
                    .unwrap();
                let cut = crate::job_checkpoint::UnitCut {
                    job_checkpoint: n,
                    unit_checkpoint: n,
                    inputs: Vec::new(),
                };
                checkpoints.record(*unit, &cut).unwrap();
            }
            assert_eq!(checkpoints.step(true, &units, |_| Ok(false)).unwrap(), n);
            a.snapshot_if_due().unwrap();
            b.snapshot_if_due().unwrap();
        }
        (a, b)
    }

    /// Both views of the coordination topic, folded from its start.
    fn folded_from_start(
        topics: &dyn Topics,
    ) -> (serde_json::Value, crate::job_checkpoint::JobCheckpoints) {
        let topic = topic_name("j");
        let mut group =
            Folded::<View>::from_start(topics, &topic, LEASE.as_millis() as i64).unwrap();
        group.catch_up(topics, &topic).unwrap();
        let mut jc =
            Folded::<crate::job_checkpoint::JobCheckpoints>::from_start(topics, &topic, false)
                .unwrap();
        jc.catch_up(topics, &topic).unwrap();
        (serde_json::to_value(&group.view).unwrap(), jc.view)
    }

    /// A reader that opens the coordination topic of a long-running job folds from the newest
    /// snapshot records: it reads about one snapshot interval of events whatever the job's age,
    /// and sees exactly what folding every event from the start gives.
    #[test]
    fn a_reader_folds_from_the_newest_snapshot_and_sees_what_the_whole_topic_says() {
        let dir = tempfile::tempdir().unwrap();
        let store = riffle_connectors::rocketmq::shared_store(dir.path()).unwrap();
        let (_a, _b) = long_job(store.clone(), 1000);
        let topic = topic_name("j");
        let events = store.queue_info(&topic, 0).unwrap().max_offset;
        assert!(events > 5 * SNAPSHOT_EVERY, "{events} events");
        let (group, jc) = folded_from_start(store.as_ref());
        assert_eq!(jc.complete, 1000);

        let counting = Counting {
            inner: store.clone(),
            read: Default::default(),
        };
        let started = Instant::now();
        let mut opened = Folded::<View>::open(&counting, &topic, LEASE.as_millis() as i64).unwrap();
        opened.catch_up(&counting, &topic).unwrap();
        assert_eq!(serde_json::to_value(&opened.view).unwrap(), group);
        assert_eq!(
            crate::job_checkpoint::newest_complete(&counting, "j").unwrap(),
            1000
        );
        let mut jc_opened =
            Folded::<crate::job_checkpoint::JobCheckpoints>::open(&counting, &topic, false)
                .unwrap();
        jc_opened.catch_up(&counting, &topic).unwrap();
        assert_eq!(jc_opened.view, jc);
        let read = counting.read.load(Ordering::SeqCst) as u64;
        eprintln!(
            "{events} events: three readers from the newest snapshots read {read} messages in {:?}",
            started.elapsed()
        );
        // Each reader: the backward scan (a read) and at most an interval of events.
        assert!(
            read <= 3 * (2 * READ_MESSAGES as u64 + SNAPSHOT_EVERY),
            "{read} read"
        );
        let started = Instant::now();
        folded_from_start(&counting);
        eprintln!(
            "folding both views from the start: {} messages read in {:?}",
            counting.read.load(Ordering::SeqCst) as u64 - read,
            started.elapsed()
        );
    }

    /// When retention removed the oldest events of the coordination topic (the embedded
    /// store's size cap), a fresh reader and one that had fallen behind both resume from the
    /// newest snapshot and agree with the writers' view.
    #[test]
    fn a_reader_behind_removed_events_resumes_from_the_newest_snapshot() {
        // Well above a snapshot interval of events, as the embedded store's 64 MiB are.
        const SEGMENT: u64 = 256 * 1024;
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            riffle_store::Store::open(
                dir.path(),
                riffle_store::StoreOptions {
                    segment_bytes: SEGMENT,
                    maintenance_interval: None,
                    ..riffle_store::StoreOptions::default()
                },
            )
            .unwrap(),
        );
        let topic = topic_name("j");
        // The embedded store's cap of two segments, at this store's segment size.
        store
            .create_topic(
                &topic,
                TopicConfig {
                    queues: 1,
                    retention_bytes: Some(2 * SEGMENT),
                    ..TopicConfig::default()
                },
            )
            .unwrap();
        let mut behind = Folded::<crate::job_checkpoint::JobCheckpoints>::from_start(
            store.as_ref(),
            &topic,
            false,
        )
        .unwrap();
        let (a, _b) = long_job(store.clone(), 1200);
        assert!(store.apply_retention().unwrap() > 0, "nothing removed");
        let info = store.queue_info(&topic, 0).unwrap();
        assert!(info.min_offset > 0, "{info:?}");
        behind.catch_up(store.as_ref(), &topic).unwrap();
        assert_eq!(behind.view.complete, 1200);
        assert_eq!(
            crate::job_checkpoint::newest_complete(store.as_ref(), "j").unwrap(),
            1200
        );
        let seen = snapshot(store.as_ref(), "j").unwrap();
        let expected = a
            .refresh(|v| (v.owners.clone(), v.finished.clone()))
            .unwrap();
        assert_eq!((seen.owners, seen.finished), expected);
        assert_eq!(seen.members.len(), 2);
    }
}
