//! Reading a unit's queue of a state topic: the newest complete checkpoint, the messages it
//! is made of, and what a torn append left after it.
//!
//! A checkpoint's messages come before its header in the queue, so the newest header is the
//! newest complete checkpoint, and everything after it is the torn rest of a later one. Before
//! that header, the newest message of each key counts, whether or not compaction has run.

use std::collections::{BTreeMap, HashMap, HashSet};

use riffle_store::Topics;

use super::format::{
    self, header_key, read_entry, BlobRef, FileRef, Manifest, CHECKPOINT_PROPERTY,
};
use crate::ClusterError;

/// A unit's queue, read.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// The newest complete checkpoint: its number and manifest.
    pub newest: Option<(u64, Manifest)>,
    /// The newest message (offset, body) of every key before that checkpoint's header.
    pub live: HashMap<String, (u64, Vec<u8>)>,
    /// Keys appended after it (by an append that never completed).
    pub torn: HashSet<String>,
}

/// Reads `queue` of `topic`, the queue of unit `unit`.
pub(super) fn scan(
    store: &dyn Topics,
    topic: &str,
    queue: u32,
    unit: &str,
) -> Result<Scan, ClusterError> {
    let error =
        |e: riffle_store::StoreError| ClusterError::new(format!("state topic '{topic}': {e}"));
    let info = store.queue_info(topic, queue).map_err(error)?;
    let header = header_key(unit);
    let mut out = Scan::default();
    let mut pending: HashMap<String, (u64, Vec<u8>)> = HashMap::new();
    let mut next = info.min_offset;
    loop {
        let read = store.read(topic, queue, next, 256).map_err(error)?;
        let Some(last) = read.last() else {
            break;
        };
        next = last.offset + 1;
        for stored in read {
            let mut m = stored.message;
            let Some(key) = m.keys.first().cloned() else {
                continue;
            };
            if key != header {
                pending.insert(key, (stored.offset, std::mem::take(&mut m.body)));
                continue;
            }
            let checkpoint = m
                .properties
                .get(CHECKPOINT_PROPERTY)
                .and_then(|c| c.parse::<u64>().ok());
            let manifest = serde_json::from_slice::<Manifest>(&m.body);
            let (Some(checkpoint), Ok(manifest)) = (checkpoint, manifest) else {
                return Err(ClusterError::new(format!(
                    "state topic '{topic}': the checkpoint header of unit {unit} at offset {} is corrupted or written by another Riffle version",
                    stored.offset
                )));
            };
            out.live.extend(pending.drain());
            out.newest = Some((checkpoint, manifest));
        }
    }
    out.torn = pending.into_keys().collect();
    Ok(out)
}

impl Scan {
    /// The blob `blob`, from its pieces.
    fn blob(&self, unit: &str, blob: &BlobRef) -> Result<Vec<u8>, ClusterError> {
        let mut bytes = Vec::with_capacity(usize::try_from(blob.len).unwrap_or(0));
        for i in 0..blob.pieces {
            let key = format::piece_key(unit, &blob.id, i);
            match self.live.get(&key) {
                Some((_, piece)) if !piece.is_empty() => bytes.extend_from_slice(piece),
                _ => {
                    return Err(ClusterError::new(format!(
                        "state topic: the newest checkpoint of unit {unit} lacks piece {key}"
                    )))
                }
            }
        }
        if BlobRef::of(&bytes) != *blob {
            return Err(ClusterError::new(format!(
                "state topic: blob {} of unit {unit} is corrupted",
                blob.id
            )));
        }
        Ok(bytes)
    }

    /// The newest body of every entry of the newest checkpoint, by identity: the newer of
    /// its two slots.
    pub fn entries(&self, unit: &str) -> BTreeMap<&str, EntrySlots<'_>> {
        let prefix = format::entry_prefix(unit);
        let mut out: BTreeMap<&str, EntrySlots<'_>> = BTreeMap::new();
        for (key, (offset, body)) in &self.live {
            let Some((identity, slot)) = key
                .strip_prefix(&prefix)
                .and_then(|rest| rest.rsplit_once('/'))
            else {
                continue;
            };
            let Ok(slot) = slot.parse::<u8>() else {
                continue;
            };
            let slots = out.entry(identity).or_default();
            if slots.newest.is_none_or(|(o, _, _)| *offset > o) {
                slots.newest = Some((*offset, slot, body));
            }
        }
        out
    }

    /// The files of the newest checkpoint (path relative to its directory, bytes); keyed
    /// snapshots are rebuilt with their entries in key order, and `_metadata` is updated to
    /// their sizes and checksums.
    pub fn files(&self, unit: &str) -> Result<Option<(u64, Files)>, ClusterError> {
        let Some((checkpoint, manifest)) = &self.newest else {
            return Ok(None);
        };
        let entries = self.entries(unit);
        let mut by_file: HashMap<&str, Vec<(usize, format::EntryParts<'_>, u64)>> = HashMap::new();
        for (identity, slots) in &entries {
            let Some((_, _, body)) = slots.newest else {
                continue;
            };
            let Some(parts) = read_entry(body)? else {
                continue;
            };
            let Some((path, ordinal)) = format::split_identity(identity) else {
                continue;
            };
            by_file
                .entry(path)
                .or_default()
                .push((ordinal, parts, riffle_state::fnv1a(body)));
        }
        let mut files = Vec::with_capacity(manifest.files.len());
        for file in &manifest.files {
            let blob = self.blob(unit, file.blob())?;
            let bytes = match file {
                FileRef::Whole { .. } => blob,
                FileRef::Keyed {
                    path,
                    entries,
                    digest,
                    ..
                } => {
                    let globals = format::decode_globals(&blob)?;
                    let mut mine = by_file.remove(path.as_str()).unwrap_or_default();
                    let sum = mine.iter().fold(0u64, |s, (_, _, h)| s.wrapping_add(*h));
                    if mine.len() != *entries || sum != *digest {
                        return Err(ClusterError::new(format!(
                            "state topic: the entries of {path} in checkpoint {checkpoint} of unit {unit} are incomplete ({} of {entries})",
                            mine.len()
                        )));
                    }
                    mine.sort_by(|(oa, (ta, ka, _), _), (ob, (tb, kb, _), _)| {
                        (ta, ka, oa).cmp(&(tb, kb, ob))
                    });
                    let entries: Vec<riffle_runtime::keyed_snapshot::Entry<'_>> = mine
                        .iter()
                        .map(
                            |(_, (table, key, value), _)| riffle_runtime::keyed_snapshot::Entry {
                                table: *table,
                                key,
                                value,
                            },
                        )
                        .collect();
                    riffle_runtime::keyed_snapshot::assemble(&globals, &entries)
                }
            };
            files.push((file.path().to_string(), bytes));
        }
        update_metadata(&mut files)?;
        Ok(Some((*checkpoint, files)))
    }
}

/// The slots of one entry: its newest message.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct EntrySlots<'a> {
    /// The newest message: offset, slot, body.
    pub newest: Option<(u64, u8, &'a Vec<u8>)>,
}

/// A checkpoint's files: (path relative to its directory, bytes).
pub(super) type Files = Vec<(String, Vec<u8>)>;

/// Sets the sizes and checksums `_metadata` lists for the rebuilt keyed files.
fn update_metadata(files: &mut Files) -> Result<(), ClusterError> {
    use riffle_runtime::checkpoint::storage::{Metadata, METADATA};
    let sizes: HashMap<String, (u64, u32)> = files
        .iter()
        .map(|(p, b)| (p.clone(), (b.len() as u64, crc32fast::hash(b))))
        .collect();
    let Some((_, bytes)) = files.iter_mut().find(|(p, _)| p == METADATA) else {
        return Ok(());
    };
    let mut metadata: Metadata = serde_json::from_slice(bytes).map_err(|e| {
        ClusterError::new(format!("state topic: corrupted checkpoint metadata: {e}"))
    })?;
    for task in &mut metadata.tasks {
        if let Some((len, crc)) = task.file.as_ref().and_then(|f| sizes.get(f)) {
            task.bytes = *len;
            task.crc32 = *crc;
        }
    }
    *bytes = serde_json::to_vec_pretty(&metadata)
        .map_err(|e| ClusterError::new(format!("cannot encode checkpoint metadata: {e}")))?;
    Ok(())
}
