//! Consumer-group membership and rebalance between the processes that share a store directory.
//!
//! The processes of one job join one group ([`Membership::join`]); each then works on its
//! share of the job's *units* (source queues, key groups, ...). Every member computes the
//! same shares from the same view: RocketMQ's `AllocateMessageQueueAveragely` over the sorted
//! units and the sorted ids of the live members ([`allocate_averagely`]). When a member joins,
//! leaves or dies, the group's *generation* changes and everyone recomputes.
//!
//! # Liveness
//!
//! A member holds an exclusive `flock` on `groups/<group>/members/<id>.lock` for as long as it
//! is a member. The OS drops that lock the moment the process dies, even by `kill -9`, so a
//! member is live exactly while its lock is held — no heartbeats, no timeouts. Whoever looks
//! at the group ([`Membership::view`], [`members`]) probes the other members' locks, removes
//! the files of dead ones and bumps the generation. A member that polls every
//! [`POLL_INTERVAL`] (200 ms) thus sees a death or a join within a fraction of a second.
//!
//! # Generation and fencing
//!
//! `groups/<group>/generation` holds a counter bumped on every join, leave and removal of a
//! dead member, under that file's `flock`; joins, leaves and the probing all hold it. Equal
//! generations therefore mean equal member lists and equal assignments. A member that lost a
//! unit in a rebalance may still be finishing work on it; to keep it from committing over the
//! new owner, commit through [`Membership::fenced`] with the generation the work was assigned
//! under ([`Assignment::generation`]): the commit runs under the generation lock and only if
//! the generation is unchanged, so it either happens before the rebalance (and the new owner
//! starts from it) or not at all (the caller drops its uncommitted work and re-reads its
//! assignment). Fencing is per generation, not per unit: after any membership change every
//! member's in-flight commit is refused and every member restarts its units from their last
//! committed state, as in a stop-the-world rebalance.

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StoreError};
use crate::flock::{open_lock_file, LockedFile};
use crate::fsutil::remove_if_exists;
use crate::record::now_ms;
use crate::store::{validate_name, Store, GROUPS_DIR};

/// How often [`Membership::wait_for_change`] looks at the group.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

const MEMBERS_DIR: &str = "members";
const GENERATION_FILE: &str = "generation";
const LOCK_SUFFIX: &str = ".lock";

/// The live members of a group at one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupView {
    /// Bumped on every join, leave and death; equal generations have equal members.
    pub generation: u64,
    /// Ids of the live members, sorted.
    pub members: Vec<String>,
}

/// A live member, for `riffle job status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberInfo {
    /// Member id.
    pub id: String,
    /// Process id of the member.
    pub pid: u32,
    /// When it joined (ms since the epoch).
    pub joined_ms: i64,
}

/// A member's share of the units at one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment<T> {
    /// The generation the share was computed at; pass it to [`Membership::fenced`].
    pub generation: u64,
    /// The live members it was computed over, sorted.
    pub members: Vec<String>,
    /// This member's units, in the order of the sorted units.
    pub units: Vec<T>,
}

/// This process's membership of a group; it leaves the group when dropped (or dies).
#[derive(Debug)]
pub struct Membership {
    group: String,
    member_id: String,
    group_dir: PathBuf,
    /// The member's lock file, locked for the membership's lifetime.
    lock: Option<File>,
}

impl Membership {
    /// Joins `group` as `member_id` (names as for topics: `A-Z a-z 0-9 _ - %`). Fails if a live
    /// process is already a member under that id.
    pub fn join(store: &Store, group: &str, member_id: &str) -> Result<Membership> {
        validate_name("group", group)?;
        validate_name("member", member_id)?;
        let group_dir = store.dir().join(GROUPS_DIR).join(group);
        let members_dir = group_dir.join(MEMBERS_DIR);
        fs::create_dir_all(&members_dir).ctx(|| format!("creating {}", members_dir.display()))?;
        let generation = LockedFile::open(&group_dir.join(GENERATION_FILE))?;
        let path = member_path(&group_dir, member_id);
        let file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Invalid(format!(
                    "member id '{member_id}' of group '{group}' is in use by a live process"
                )))
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).ctx(|| format!("locking {}", path.display()))
            }
        }
        let info = MemberInfo {
            id: member_id.to_owned(),
            pid: std::process::id(),
            joined_ms: now_ms(),
        };
        let json = serde_json::to_vec(&info)
            .map_err(|e| StoreError::Invalid(format!("encoding member {member_id}: {e}")))?;
        file.set_len(0)
            .and_then(|()| file.write_all_at(&json, 0))
            .ctx(|| format!("writing {}", path.display()))?;
        bump_generation(&generation, &group_dir)?;
        drop(generation);
        Ok(Membership {
            group: group.to_owned(),
            member_id: member_id.to_owned(),
            group_dir,
            lock: Some(file),
        })
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// This member's id.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// The current generation and live members (removing dead members first).
    pub fn view(&self) -> Result<GroupView> {
        let generation = LockedFile::open(&self.group_dir.join(GENERATION_FILE))?;
        let (view, _) = observe(&generation, &self.group_dir)?;
        Ok(view)
    }

    /// This member's share of `units` (sorted and deduplicated first) at the current
    /// generation, by [`allocate_averagely`]. Every member gets the same answer for the same
    /// generation, and the shares of all members cover every unit exactly once.
    pub fn assignment<T: Clone + Ord>(&self, units: &[T]) -> Result<Assignment<T>> {
        let view = self.view()?;
        let mut sorted = units.to_vec();
        sorted.sort();
        sorted.dedup();
        Ok(Assignment {
            units: allocate_averagely(&sorted, &view.members, &self.member_id),
            generation: view.generation,
            members: view.members,
        })
    }

    /// Whether the generation moved away from `generation` (a member joined, left or died).
    pub fn changed(&self, generation: u64) -> Result<bool> {
        Ok(self.view()?.generation != generation)
    }

    /// Waits, looking every [`POLL_INTERVAL`], until the generation differs from `generation`;
    /// returns the new view, or `None` after `timeout`.
    pub fn wait_for_change(&self, generation: u64, timeout: Duration) -> Result<Option<GroupView>> {
        let start = Instant::now();
        loop {
            let view = self.view()?;
            if view.generation != generation {
                return Ok(Some(view));
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(left.min(POLL_INTERVAL));
        }
    }

    /// Runs `commit` only if the group is still at `generation` — the generation the work
    /// being committed was assigned under — and returns its result; `None` if a rebalance
    /// happened since (the work must be dropped and its units re-read from the last commit).
    ///
    /// `commit` runs under the group's generation lock, so no member can join or leave (and
    /// no new owner can start) while it runs: keep it short (write offsets, a checkpoint
    /// record, a sink's commit).
    pub fn fenced<R>(
        &self,
        generation: u64,
        commit: impl FnOnce() -> Result<R>,
    ) -> Result<Option<R>> {
        let lock = LockedFile::open(&self.group_dir.join(GENERATION_FILE))?;
        let (view, _) = observe(&lock, &self.group_dir)?;
        if view.generation != generation {
            return Ok(None);
        }
        commit().map(Some)
    }

    /// Leaves the group now (dropping the membership does the same, ignoring errors).
    pub fn leave(mut self) -> Result<()> {
        self.leave_group()
    }

    fn leave_group(&mut self) -> Result<()> {
        let Some(file) = self.lock.take() else {
            return Ok(());
        };
        let generation = LockedFile::open(&self.group_dir.join(GENERATION_FILE))?;
        remove_if_exists(&member_path(&self.group_dir, &self.member_id))?;
        drop(file);
        bump_generation(&generation, &self.group_dir).map(|_| ())
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        // If leaving fails, the lock is still released with the file, and the next member to
        // look at the group removes this one as dead.
        let _ = self.leave_group();
    }
}

/// The live members of `group` with their process ids, sorted by id, for status displays.
/// Dead members found on the way are removed (bumping the generation).
pub fn members(store: &Store, group: &str) -> Result<Vec<MemberInfo>> {
    validate_name("group", group)?;
    let group_dir = store.dir().join(GROUPS_DIR).join(group);
    if !group_dir.join(MEMBERS_DIR).is_dir() {
        return Ok(Vec::new());
    }
    let generation = LockedFile::open(&group_dir.join(GENERATION_FILE))?;
    let (_, infos) = observe(&generation, &group_dir)?;
    Ok(infos)
}

/// RocketMQ's `AllocateMessageQueueAveragely`: `member`'s share of `units` among `members`.
///
/// Both lists must be sorted and the same for every member. The units are cut into
/// contiguous ranges of `units / members` (the first `units % members` members get one more),
/// handed out in member order; with more members than units, the last members get none. A
/// `member` not in `members` gets nothing.
pub fn allocate_averagely<T: Clone>(units: &[T], members: &[String], member: &str) -> Vec<T> {
    let Some(index) = members.iter().position(|m| m == member) else {
        return Vec::new();
    };
    let (n, m) = (units.len(), members.len());
    if n == 0 {
        return Vec::new();
    }
    let rem = n % m;
    let larger = rem > 0 && index < rem;
    let average = if n <= m {
        1
    } else if larger {
        n / m + 1
    } else {
        n / m
    };
    let start = if larger {
        index * average
    } else {
        index * average + rem
    };
    let range = average.min(n.saturating_sub(start));
    units.iter().skip(start).take(range).cloned().collect()
}

fn member_path(group_dir: &Path, member_id: &str) -> PathBuf {
    group_dir
        .join(MEMBERS_DIR)
        .join(format!("{member_id}{LOCK_SUFFIX}"))
}

/// Reads the generation, probes every member's lock, removes dead members (bumping the
/// generation once if there were any). Caller holds the generation lock (`generation`).
fn observe(generation: &LockedFile, group_dir: &Path) -> Result<(GroupView, Vec<MemberInfo>)> {
    let members_dir = group_dir.join(MEMBERS_DIR);
    let mut infos = Vec::new();
    let mut dead = false;
    let listing = match fs::read_dir(&members_dir) {
        Ok(l) => Some(l),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).ctx(|| format!("listing {}", members_dir.display())),
    };
    for entry in listing.into_iter().flatten() {
        let entry = entry.ctx(|| format!("listing {}", members_dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(LOCK_SUFFIX) else {
            continue;
        };
        let path = entry.path();
        match LockedFile::try_open(&path)? {
            Some(_unheld) => {
                // Nobody holds it: the member died (joins happen under the generation lock,
                // so this is not a member between creating and locking its file).
                remove_if_exists(&path)?;
                dead = true;
            }
            None => infos.push(read_info(&path, id)),
        }
    }
    let mut current = read_generation(generation.file(), group_dir)?;
    if dead {
        current = bump_generation(generation, group_dir)?;
    }
    infos.sort_by(|a, b| a.id.cmp(&b.id));
    let view = GroupView {
        generation: current,
        members: infos.iter().map(|i| i.id.clone()).collect(),
    };
    Ok((view, infos))
}

/// A live member's recorded details; a member whose file cannot be read yet still counts.
fn read_info(path: &Path, id: &str) -> MemberInfo {
    fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<MemberInfo>(&b).ok())
        .filter(|info| info.id == id)
        .unwrap_or_else(|| MemberInfo {
            id: id.to_owned(),
            pid: 0,
            joined_ms: 0,
        })
}

fn read_generation(file: &File, group_dir: &Path) -> Result<u64> {
    let mut b = [0u8; 8];
    let n = file
        .read_at(&mut b, 0)
        .ctx(|| format!("reading the generation of {}", group_dir.display()))?;
    Ok(if n == 8 { u64::from_le_bytes(b) } else { 0 })
}

/// Increments the generation (fsynced: it must never go back while members run). Caller
/// holds the generation lock.
fn bump_generation(generation: &LockedFile, group_dir: &Path) -> Result<u64> {
    let next = read_generation(generation.file(), group_dir)? + 1;
    generation
        .file()
        .write_all_at(&next.to_le_bytes(), 0)
        .and_then(|()| generation.file().sync_data())
        .ctx(|| format!("writing the generation of {}", group_dir.display()))?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn averagely_matches_rocketmq() {
        let units: Vec<u32> = (0..8).collect();
        let members = ids(&["a", "b", "c"]);
        assert_eq!(allocate_averagely(&units, &members, "a"), vec![0, 1, 2]);
        assert_eq!(allocate_averagely(&units, &members, "b"), vec![3, 4, 5]);
        assert_eq!(allocate_averagely(&units, &members, "c"), vec![6, 7]);
        let two = [0u32, 1];
        assert_eq!(allocate_averagely(&two, &members, "a"), vec![0]);
        assert_eq!(allocate_averagely(&two, &members, "b"), vec![1]);
        assert!(allocate_averagely(&two, &members, "c").is_empty());
        assert!(allocate_averagely(&units, &members, "zz").is_empty());
        assert!(allocate_averagely::<u32>(&[], &members, "a").is_empty());
        // Every split covers every unit exactly once.
        for n in 0..20u32 {
            for m in 1..7 {
                let units: Vec<u32> = (0..n).collect();
                let members: Vec<String> = (0..m).map(|i| format!("m{i}")).collect();
                let mut all: Vec<u32> = members
                    .iter()
                    .flat_map(|id| allocate_averagely(&units, &members, id))
                    .collect();
                all.sort();
                assert_eq!(all, units, "{n} units, {m} members");
            }
        }
    }

    #[test]
    fn join_leave_and_fencing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let a = Membership::join(&store, "job", "a").unwrap();
        let first = a.view().unwrap();
        assert_eq!(first.members, ids(&["a"]));
        let err = Membership::join(&store, "job", "a").unwrap_err();
        assert!(
            err.to_string().contains("in use by a live process"),
            "{err}"
        );
        let b = Membership::join(&store, "job", "b").unwrap();
        let units = [3u32, 1, 2, 0, 1];
        let share_a = a.assignment(&units).unwrap();
        let share_b = b.assignment(&units).unwrap();
        assert_eq!(share_a.units, vec![0, 1]);
        assert_eq!(share_b.units, vec![2, 3]);
        assert_eq!(share_a.generation, share_b.generation);
        assert!(a.changed(first.generation).unwrap());
        let listed = members(&store, "job").unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].pid, std::process::id());
        // A commit under the current generation runs; after b leaves, it is refused.
        let g = share_a.generation;
        assert_eq!(a.fenced(g, || Ok(7)).unwrap(), Some(7));
        b.leave().unwrap();
        assert_eq!(a.fenced(g, || Ok(7)).unwrap(), None);
        let after = a
            .wait_for_change(g, Duration::from_secs(1))
            .unwrap()
            .unwrap();
        assert_eq!(after.members, ids(&["a"]));
        assert_eq!(a.assignment(&units).unwrap().units, vec![0, 1, 2, 3]);
        assert_eq!(
            a.wait_for_change(after.generation, Duration::from_millis(10))
                .unwrap(),
            None
        );
        drop(a);
        assert!(members(&store, "job").unwrap().is_empty());
        assert!(members(&store, "nobody").unwrap().is_empty());
    }
}
