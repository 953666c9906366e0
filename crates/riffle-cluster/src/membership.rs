//! Which process runs which units.
//!
//! Every member of a group sees the same sorted list of live members and splits the sorted
//! units among them with RocketMQ's `AllocateMessageQueueAveragely` ([`allocate_averagely`]):
//! member `i` of `m` gets a contiguous run of `units / m` units, the first `units % m` members
//! one more. [`FileGroup`] keeps the members on the local file system: a member holds an
//! exclusive lock on its own file for as long as it lives, so a killed process leaves the
//! group the moment the kernel drops its lock, and the others rebalance at their next look.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::units::UnitId;
use crate::ClusterError;

/// This member's view of its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The live members, sorted.
    pub members: Vec<String>,
    /// The units this member runs.
    pub mine: Vec<UnitId>,
}

/// A group of processes sharing a job's units.
pub trait Membership: Send + Sync {
    /// This member's name.
    fn name(&self) -> &str;
    /// The live members and this member's share of `units` (sorted).
    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError>;
}

/// `AllocateMessageQueueAveragely`: the units of member `me` among sorted `members`.
pub fn allocate_averagely(units: &[UnitId], members: &[String], me: &str) -> Vec<UnitId> {
    let Some(index) = members.iter().position(|m| m == me) else {
        return Vec::new();
    };
    let (n, m) = (units.len(), members.len());
    let size = n / m + usize::from(index < n % m);
    let start = index * (n / m) + index.min(n % m);
    units.iter().skip(start).take(size).copied().collect()
}

/// A group of one: runs every unit.
#[derive(Debug, Default)]
pub struct Solo;

impl Membership for Solo {
    fn name(&self) -> &str {
        "solo"
    }

    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError> {
        Ok(Assignment {
            members: vec!["solo".to_string()],
            mine: units.to_vec(),
        })
    }
}

/// A group whose members are locked files in one directory (processes on one machine, or
/// on machines sharing a file system with working `flock`).
pub struct FileGroup {
    dir: PathBuf,
    name: String,
    /// Held (locked) for the member's lifetime.
    _file: File,
}

impl FileGroup {
    /// Joins the group kept in `dir`.
    pub fn join(dir: &Path) -> Result<Self, ClusterError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        // Sorted by join time, so a newcomer takes units from the end of the list.
        let name = format!("{nanos:024}-{}", std::process::id());
        // Locked before it gets its member name, so nobody takes it for a dead member's file.
        let joining = dir.join(format!("{name}.joining"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&joining)
            .map_err(|e| io_error("create", &joining, e))?;
        file.try_lock()
            .map_err(|e| ClusterError::new(format!("cannot lock {}: {e}", joining.display())))?;
        let path = dir.join(format!("{name}.member"));
        std::fs::rename(&joining, &path).map_err(|e| io_error("rename", &joining, e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            name,
            _file: file,
        })
    }

    /// The live members, sorted; files of dead members are removed.
    pub fn members(&self) -> Result<Vec<String>, ClusterError> {
        live_members(&self.dir)
    }
}

/// The live members of the group kept in `dir`, sorted (files of dead members are removed).
pub fn live_members(dir: &Path) -> Result<Vec<String>, ClusterError> {
    let mut members = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(members),
        Err(e) => return Err(io_error("read", dir, e)),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".member"))
        else {
            continue;
        };
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match file.try_lock_shared() {
            // Nobody holds it: the member is gone.
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => members.push(name.to_string()),
        }
    }
    members.sort();
    Ok(members)
}

impl Membership for FileGroup {
    fn name(&self) -> &str {
        &self.name
    }

    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError> {
        let members = self.members()?;
        let mine = allocate_averagely(units, &members, &self.name);
        Ok(Assignment { members, mine })
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> ClusterError {
    ClusterError::new(format!("cannot {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(n: usize) -> Vec<UnitId> {
        (0..n).map(|unit| UnitId { stage: 0, unit }).collect()
    }

    #[test]
    fn averagely_gives_contiguous_shares_covering_every_unit() {
        let members: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let all = units(8);
        let shares: Vec<Vec<UnitId>> = members
            .iter()
            .map(|m| allocate_averagely(&all, &members, m))
            .collect();
        assert_eq!(
            shares.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 3, 2]
        );
        assert_eq!(shares.concat(), all);
        assert!(allocate_averagely(&all, &members, "z").is_empty());
        assert_eq!(allocate_averagely(&units(1), &members, "b"), vec![]);
    }

    #[test]
    fn a_member_leaves_when_its_lock_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let a = FileGroup::join(dir.path()).unwrap();
        let b = FileGroup::join(dir.path()).unwrap();
        assert_eq!(a.members().unwrap().len(), 2);
        let all = units(4);
        assert_eq!(a.assignment(&all).unwrap().mine.len(), 2);
        drop(b);
        assert_eq!(a.members().unwrap(), vec![a.name().to_string()]);
        assert_eq!(a.assignment(&all).unwrap().mine, all);
    }
}
