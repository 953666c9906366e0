//! Consumer-group offsets on disk: `groups/<group>.json`, read whole and replaced atomically.
//!
//! Several processes may commit for one group: an update holds `groups/<group>.lock`, re-reads
//! the file, changes it and renames the new version into place, so no process overwrites
//! another's commit with a stale copy. Readers need no lock (a rename is atomic).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StoreError};
use crate::flock::LockedFile;
use crate::fsutil::write_atomic;

/// topic → queue → next offset to consume.
pub(crate) type GroupOffsets = BTreeMap<String, BTreeMap<u32, u64>>;

/// The on-disk `groups/<group>.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct GroupFile {
    format: u32,
    offsets: GroupOffsets,
}

const FORMAT: u32 = 1;

fn group_path(groups_dir: &Path, group: &str) -> PathBuf {
    groups_dir.join(format!("{group}.json"))
}

/// A group's committed offsets; none if it never committed.
pub(crate) fn read_group(groups_dir: &Path, group: &str) -> Result<GroupOffsets> {
    let path = group_path(groups_dir, group);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(GroupOffsets::new()),
        Err(e) => return Err(e).ctx(|| format!("reading {}", path.display())),
    };
    let file: GroupFile = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    Ok(file.offsets)
}

/// Changes a group's offsets under the group's lock: reads the current file, applies
/// `change`, and replaces the file (temporary file, fsync, rename, directory fsync).
pub(crate) fn update_group(
    groups_dir: &Path,
    group: &str,
    change: impl FnOnce(&mut GroupOffsets),
) -> Result<()> {
    let _lock = LockedFile::open(&groups_dir.join(format!("{group}.lock")))?;
    let mut offsets = read_group(groups_dir, group)?;
    change(&mut offsets);
    let file = GroupFile {
        format: FORMAT,
        offsets,
    };
    let json = serde_json::to_vec_pretty(&file)
        .map_err(|e| StoreError::Invalid(format!("encoding offsets of group {group}: {e}")))?;
    write_atomic(&group_path(groups_dir, group), &json)
}

/// Names of the groups with an offsets file, sorted.
pub(crate) fn list_groups(groups_dir: &Path) -> Result<Vec<String>> {
    let listing = fs::read_dir(groups_dir).ctx(|| format!("listing {}", groups_dir.display()))?;
    let mut groups = Vec::new();
    for entry in listing {
        let entry = entry.ctx(|| format!("listing {}", groups_dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(group) = name.strip_suffix(".json") {
            groups.push(group.to_owned());
        }
    }
    groups.sort();
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_merge_with_what_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_group(dir.path(), "g").unwrap().is_empty());
        update_group(dir.path(), "g", |o| {
            o.entry("t".into()).or_default().insert(0, 5);
        })
        .unwrap();
        update_group(dir.path(), "g", |o| {
            o.entry("t".into()).or_default().insert(1, 7);
        })
        .unwrap();
        let got = read_group(dir.path(), "g").unwrap();
        assert_eq!(got["t"][&0], 5);
        assert_eq!(got["t"][&1], 7);
        assert_eq!(list_groups(dir.path()).unwrap(), vec!["g".to_string()]);
    }
}
