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
//! Fencing: a process commits a unit's checkpoint only while the view says it owns the unit
//! *and* its last heartbeat was sent less than half a lease ago. A claim wins over a live
//! owner only a lease after that owner's last beat was stored, so the stale owner has half a
//! lease to finish the commit it began — a lease, as any lease, assumes clocks that run at
//! about the same rate and a commit shorter than half a lease.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use riffle_store::{Message, StoreError, TopicConfig, Topics};

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

/// How long a claimer waits to see its own claim in the queue.
const SEE_OWN_EVENT: Duration = Duration::from_secs(60);

/// The coordination topic of job `job`.
pub fn topic_name(job: &str) -> String {
    crate::stages::store_name(&format!("{job}--coord"))
}

/// Creates job `job`'s coordination topic (one queue) when it is missing; returns its name.
pub(crate) fn create_topic(topics: &dyn Topics, job: &str) -> Result<String, ClusterError> {
    let topic = topic_name(job);
    let config = TopicConfig {
        queues: 1,
        ..TopicConfig::default()
    };
    match topics.create_topic(&topic, config) {
        Ok(()) | Err(StoreError::TopicExists(_)) => Ok(topic),
        Err(e) => Err(ClusterError::new(format!(
            "cannot create the coordination topic '{topic}': {e}"
        ))),
    }
}

/// What the queue says so far.
#[derive(Debug, Default)]
struct View {
    /// The next offset to fold.
    next: u64,
    /// The newest store timestamp folded.
    latest: i64,
    /// Live-or-dead members and their last beat (store timestamp).
    beats: BTreeMap<String, i64>,
    /// Unit owners.
    owners: BTreeMap<UnitId, String>,
    finished: BTreeSet<UnitId>,
    /// The id of every member's last claim folded.
    last_claim: BTreeMap<String, String>,
    /// The job's plan for `riffle job status`, as the latest `plan` event holds it.
    plan: Option<Vec<u8>>,
    /// When the view last read the queue to its end.
    read_at: Option<Instant>,
}

impl View {
    fn alive(&self, member: &str, at: i64, lease_ms: i64) -> bool {
        self.beats
            .get(member)
            .is_some_and(|beat| at - beat <= lease_ms)
    }

    fn fold(&mut self, at: i64, message: &Message, lease_ms: i64) {
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
            "plan" => self.plan = Some(message.body.clone()),
            _ => {}
        }
    }
}

/// One process's handle on a job's coordination topic.
pub struct CoordLog {
    topics: Arc<dyn Topics>,
    topic: String,
    member: String,
    lease: Duration,
    view: Mutex<View>,
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
            view: Mutex::new(View::default()),
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

    /// Folds the queue up to its end; runs `inspect` on the view then.
    fn refresh<T>(&self, inspect: impl FnOnce(&View) -> T) -> Result<T, ClusterError> {
        let mut view = self
            .view
            .lock()
            .map_err(|_| self.error("the view is poisoned"))?;
        let lease_ms = self.lease.as_millis() as i64;
        loop {
            let read = self
                .topics
                .read(&self.topic, 0, view.next, 1024)
                .map_err(|e| self.error(e))?;
            let Some(last) = read.last() else {
                break;
            };
            view.next = last.offset + 1;
            for stored in &read {
                view.fold(stored.store_timestamp, &stored.message, lease_ms);
            }
        }
        view.read_at = Some(Instant::now());
        Ok(inspect(&view))
    }

    /// [`Self::refresh`] unless the view read the queue less than 100 ms ago.
    fn recent<T>(&self, inspect: impl FnOnce(&View) -> T) -> Result<T, ClusterError> {
        {
            let view = self
                .view
                .lock()
                .map_err(|_| self.error("the view is poisoned"))?;
            if view
                .read_at
                .is_some_and(|at| at.elapsed() < Duration::from_millis(100))
            {
                return Ok(inspect(&view));
            }
        }
        self.refresh(inspect)
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
    let error = |e: StoreError| ClusterError::new(format!("coordination topic '{topic}': {e}"));
    let mut view = View::default();
    loop {
        let read = topics.read(&topic, 0, view.next, 1024).map_err(error)?;
        let Some(last) = read.last() else { break };
        view.next = last.offset + 1;
        for stored in &read {
            view.fold(stored.store_timestamp, &stored.message, lease_ms);
        }
    }
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
        plan: view.plan,
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
}
