//! What one checkpoint appends to its unit's queue: what changed since the unit's previous
//! checkpoint in the topic, then the checkpoint's header, then the removal of what the
//! checkpoint no longer needs.
//!
//! - A keyed snapshot (an operator's state split by key, `riffle_runtime::keyed_snapshot`) is
//!   stored entry by entry: an entry that is new or changed is appended, one that disappeared
//!   gets a deletion marker, an unchanged one costs nothing. Each entry has two slots (keys
//!   ending in `/0` and `/1`): a change goes to the slot that does not hold the value the
//!   newest checkpoint needs, so a torn append never overwrites it, even once compaction has
//!   dropped older messages. A deleted entry's slots become tombstones one checkpoint later.
//! - Any other file is a blob, stored under keys naming its content: one the topic already
//!   has (RocksDB's immutable SST files, unchanged source positions) is not appended again.
//!   Blobs the checkpoint no longer needs become tombstones after its header.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use riffle_runtime::keyed_snapshot::KeyedSnapshot;
use riffle_store::Message;

use super::format::{self, BlobRef, FileRef, Manifest, CHECKPOINT_PROPERTY, DELETED};
use super::scan::Scan;
use crate::ClusterError;

/// What the newest checkpoint in a unit's queue is made of.
#[derive(Debug, Default)]
pub(super) struct Committed {
    /// The blobs it references (id → pieces).
    blobs: HashMap<String, usize>,
    /// Its entries (and deleted ones whose slots are not tombstones yet), by identity.
    entries: HashMap<String, Tracked>,
    /// Keys holding something nobody needs (pieces of unreferenced blobs), to be removed.
    garbage: Vec<String>,
    /// Content ids of SST files, which RocksDB never changes: (path, length) → blob.
    sst: HashMap<(String, u64), BlobRef>,
}

/// One entry of the newest checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tracked {
    /// The slot holding its newest message.
    newest: u8,
    /// Its body's hash, or `None` when it is deleted.
    hash: Option<u64>,
    /// Slots a torn append wrote to (bit per slot): they must be rewritten.
    torn: u8,
}

/// A checkpoint's append.
#[derive(Debug)]
pub(super) struct Append {
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// What the topic holds once they are appended.
    pub next: Committed,
}

impl Committed {
    /// The newest checkpoint of a scanned queue, and what must be rewritten or removed
    /// because an append never completed.
    pub fn from_scan(scan: &Scan, unit: &str) -> Self {
        let mut out = Committed::default();
        if let Some((_, manifest)) = &scan.newest {
            for file in &manifest.files {
                let blob = file.blob();
                out.blobs.insert(blob.id.clone(), blob.pieces);
            }
        }
        for (identity, slots) in scan.entries(unit) {
            let Some((_, slot, body)) = slots.newest else {
                continue;
            };
            let hash = match body.as_slice() {
                [] if both_empty(scan, unit, identity) => continue,
                [] => None,
                b if b == DELETED => None,
                b => Some(riffle_state::fnv1a(b)),
            };
            out.entries.insert(
                identity.to_string(),
                Tracked {
                    newest: slot & 1,
                    hash,
                    torn: 0,
                },
            );
        }
        let entry_prefix = format::entry_prefix(unit);
        for key in &scan.torn {
            if let Some((identity, slot)) = key
                .strip_prefix(&entry_prefix)
                .and_then(|rest| rest.rsplit_once('/'))
            {
                let Ok(slot) = slot.parse::<u8>() else {
                    continue;
                };
                let slot = slot & 1;
                // An entry the newest checkpoint does not have: deleted, in the other slot.
                let tracked = out.entries.entry(identity.to_string()).or_insert(Tracked {
                    newest: 1 - slot,
                    hash: None,
                    torn: 0,
                });
                tracked.torn |= 1 << slot;
            }
        }
        let referenced: HashSet<String> = out
            .blobs
            .iter()
            .flat_map(|(id, pieces)| (0..*pieces).map(move |i| format::piece_key(unit, id, i)))
            .collect();
        let header = format::header_key(unit);
        out.garbage = scan
            .live
            .iter()
            .filter(|(_, (_, body))| !body.is_empty())
            .map(|(key, _)| key)
            .chain(&scan.torn)
            .filter(|key| {
                !key.starts_with(&entry_prefix) && **key != header && !referenced.contains(*key)
            })
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        out.garbage.sort();
        out
    }
}

fn both_empty(scan: &Scan, unit: &str, identity: &str) -> bool {
    (0..2).all(|slot| {
        scan.live
            .get(&format::entry_key(unit, identity, slot))
            .is_none_or(|(_, body)| body.is_empty())
    })
}

/// Builds the append of checkpoint `checkpoint` of `unit`: `files` are its files (path
/// relative to its directory, full path), `keyed` the paths of those that are keyed
/// snapshots.
pub(super) fn build(
    unit: &str,
    checkpoint: u64,
    files: &[(String, PathBuf)],
    keyed: &HashSet<String>,
    committed: &Committed,
) -> Result<Append, ClusterError> {
    let mut b = Builder {
        unit,
        committed,
        messages: Vec::new(),
        after_header: Vec::new(),
        blobs: HashMap::new(),
        entries: HashMap::new(),
        sst: HashMap::new(),
    };
    let mut manifest = Manifest { files: Vec::new() };
    for (path, full) in files {
        if let Some(blob) = b.known_sst(path, full) {
            manifest.files.push(FileRef::Whole {
                path: path.clone(),
                blob,
            });
            continue;
        }
        let bytes = std::fs::read(full)
            .map_err(|e| ClusterError::new(format!("cannot read {}: {e}", full.display())))?;
        let parsed = keyed
            .contains(path)
            .then(|| KeyedSnapshot::parse(&bytes, path).ok())
            .flatten();
        let file = match parsed {
            Some(snapshot) => b.keyed(path, &snapshot)?,
            None => {
                let blob = b.blob(&bytes);
                if path.ends_with(".sst") {
                    b.sst.insert((path.clone(), blob.len), blob.clone());
                }
                FileRef::Whole {
                    path: path.clone(),
                    blob,
                }
            }
        };
        manifest.files.push(file);
    }
    b.deletions();
    let body = serde_json::to_vec(&manifest)
        .map_err(|e| ClusterError::new(format!("cannot encode a checkpoint header: {e}")))?;
    let mut header = Message::new(body).with_key(format::header_key(unit));
    header
        .properties
        .insert(CHECKPOINT_PROPERTY.into(), checkpoint.to_string());
    b.messages.push(header);
    // What the checkpoint no longer needs goes only once it is complete.
    for (id, pieces) in &committed.blobs {
        if !b.blobs.contains_key(id) {
            for i in 0..*pieces {
                b.after_header
                    .push(Message::new(Vec::new()).with_key(format::piece_key(unit, id, i)));
            }
        }
    }
    // A torn append's pieces of a blob this checkpoint has appended again stay.
    let needed: HashSet<String> = b
        .blobs
        .iter()
        .flat_map(|(id, pieces)| (0..*pieces).map(move |i| format::piece_key(unit, id, i)))
        .collect();
    for key in committed.garbage.iter().filter(|k| !needed.contains(*k)) {
        b.after_header
            .push(Message::new(Vec::new()).with_key(key.clone()));
    }
    let Builder {
        mut messages,
        after_header,
        blobs,
        entries,
        sst,
        ..
    } = b;
    messages.extend(after_header);
    Ok(Append {
        messages,
        next: Committed {
            blobs,
            entries,
            garbage: Vec::new(),
            sst,
        },
    })
}

/// Builds one append.
struct Builder<'a> {
    unit: &'a str,
    committed: &'a Committed,
    messages: Vec<Message>,
    after_header: Vec<Message>,
    /// The blobs of this checkpoint.
    blobs: HashMap<String, usize>,
    /// The entries of this checkpoint (and deleted ones still to be tombstoned).
    entries: HashMap<String, Tracked>,
    sst: HashMap<(String, u64), BlobRef>,
}

impl Builder<'_> {
    /// The blob of an SST file seen before (same path and length: RocksDB never rewrites
    /// one), without reading it again.
    fn known_sst(&mut self, path: &str, full: &std::path::Path) -> Option<BlobRef> {
        if !path.ends_with(".sst") {
            return None;
        }
        let len = std::fs::metadata(full).ok()?.len();
        let key = (path.to_string(), len);
        let blob = self.committed.sst.get(&key)?.clone();
        if !self.committed.blobs.contains_key(&blob.id) {
            return None;
        }
        self.blobs.insert(blob.id.clone(), blob.pieces);
        self.sst.insert(key, blob.clone());
        Some(blob)
    }

    /// Stores `bytes` as a blob unless the topic or this append already has it.
    fn blob(&mut self, bytes: &[u8]) -> BlobRef {
        let blob = BlobRef::of(bytes);
        let known =
            self.committed.blobs.contains_key(&blob.id) || self.blobs.contains_key(&blob.id);
        if !known {
            for (i, piece) in bytes.chunks(format::PIECE_BYTES).enumerate() {
                self.messages.push(
                    Message::new(piece.to_vec())
                        .with_key(format::piece_key(self.unit, &blob.id, i)),
                );
            }
        }
        self.blobs.insert(blob.id.clone(), blob.pieces);
        blob
    }

    /// Stores a keyed snapshot: its operator-wide parts as a blob, its entries one by one.
    fn keyed(&mut self, path: &str, snapshot: &KeyedSnapshot<'_>) -> Result<FileRef, ClusterError> {
        let globals = self.blob(&format::encode_globals(&snapshot.globals));
        let mut ranks: HashMap<(u8, &[u8]), usize> = HashMap::new();
        let mut digest = 0u64;
        for e in &snapshot.entries {
            let rank = ranks.entry((e.table, e.key)).or_insert(0);
            let identity = format::identity(path, e.table, e.key, *rank);
            *rank += 1;
            let body = format::entry_body(e.table, e.key, e.value);
            let hash = riffle_state::fnv1a(&body);
            digest = digest.wrapping_add(hash);
            let before = self.committed.entries.get(&identity).copied();
            let tracked = match before {
                Some(t) if t.hash == Some(hash) && t.torn == 0 => t,
                Some(t) => self.write(&identity, t, &body, Some(hash)),
                None => {
                    let fresh = Tracked {
                        newest: 1,
                        hash: None,
                        torn: 0,
                    };
                    self.write(&identity, fresh, &body, Some(hash))
                }
            };
            if self.entries.insert(identity, tracked).is_some() {
                return Err(ClusterError::new(format!(
                    "state topic: two entries of {path} share a key hash; its state cannot be stored entry by entry"
                )));
            }
        }
        Ok(FileRef::Keyed {
            path: path.to_string(),
            globals,
            entries: snapshot.entries.len(),
            digest,
        })
    }

    /// Writes `body` to the slot that does not hold the entry's newest message (and first
    /// to any slot a torn append wrote to), so that slot becomes the newest.
    fn write(
        &mut self,
        identity: &str,
        before: Tracked,
        body: &[u8],
        hash: Option<u64>,
    ) -> Tracked {
        let target = 1 - before.newest;
        for slot in [before.newest, target] {
            if slot == target || before.torn & (1 << slot) != 0 {
                self.messages.push(
                    Message::new(body.to_vec())
                        .with_key(format::entry_key(self.unit, identity, slot)),
                );
            }
        }
        Tracked {
            newest: target,
            hash,
            torn: 0,
        }
    }

    /// Entries of the previous checkpoint that this one lacks: a deletion marker for those
    /// that were there, tombstones (older slot first) for those already marked deleted.
    fn deletions(&mut self) {
        let gone: Vec<(String, Tracked)> = self
            .committed
            .entries
            .iter()
            .filter(|(identity, _)| !self.entries.contains_key(*identity))
            .map(|(i, t)| (i.clone(), *t))
            .collect();
        for (identity, tracked) in gone {
            if tracked.hash.is_some() {
                let deleted = self.write(&identity, tracked, DELETED, None);
                self.entries.insert(identity, deleted);
            } else {
                for slot in [1 - tracked.newest, tracked.newest] {
                    self.after_header.push(
                        Message::new(Vec::new())
                            .with_key(format::entry_key(self.unit, &identity, slot)),
                    );
                }
            }
        }
    }
}
