//! What a state topic's messages hold: their keys, an entry's body, a checkpoint's header
//! (its manifest), and content-addressed pieces of whole files.

use riffle_connectors::snapshot::{StateReader, StateWriter};
use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// The largest piece of a file in one message.
pub const PIECE_BYTES: usize = 3 << 20;
/// The property of a checkpoint's header naming its checkpoint number.
pub const CHECKPOINT_PROPERTY: &str = "RIFFLE_CHK";

/// First byte of an entry's body: the entry's value follows.
const VALUE: u8 = 1;
/// An entry's body meaning "deleted" (kept by compaction, unlike an empty tombstone).
pub(super) const DELETED: &[u8] = &[2];

/// A checkpoint's header: what its files are made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Manifest {
    /// Every file of the checkpoint.
    pub files: Vec<FileRef>,
}

/// How one file of a checkpoint is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum FileRef {
    /// The file's bytes, as one blob.
    Whole {
        /// Path relative to the checkpoint directory.
        path: String,
        /// Its content.
        blob: BlobRef,
    },
    /// A keyed snapshot stored entry by entry (`<unit>/e/<path>/...` messages) and its
    /// operator-wide parts as one blob.
    Keyed {
        /// Path relative to the checkpoint directory.
        path: String,
        /// The operator-wide parts (a list of byte strings).
        globals: BlobRef,
        /// The number of entries.
        entries: usize,
        /// The wrapping sum of the FNV-1a hashes of the entries' bodies.
        digest: u64,
    },
}

impl FileRef {
    /// The file's path relative to the checkpoint directory.
    pub fn path(&self) -> &str {
        match self {
            FileRef::Whole { path, .. } | FileRef::Keyed { path, .. } => path,
        }
    }

    /// The blobs the file needs.
    pub fn blob(&self) -> &BlobRef {
        match self {
            FileRef::Whole { blob, .. } => blob,
            FileRef::Keyed { globals, .. } => globals,
        }
    }
}

/// Content stored in pieces under keys naming the content itself, so that the same key
/// always carries the same bytes (a torn append can never change a piece someone needs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(super) struct BlobRef {
    /// FNV-1a and CRC-32 of the content, and its length.
    pub id: String,
    /// Length in bytes.
    pub len: u64,
    /// Number of pieces (none for empty content: an empty body would be a tombstone).
    pub pieces: usize,
}

impl BlobRef {
    /// The reference of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let id = format!(
            "{:016x}{:08x}-{}",
            riffle_state::fnv1a(bytes),
            crc32fast::hash(bytes),
            bytes.len()
        );
        Self {
            id,
            len: bytes.len() as u64,
            pieces: bytes.len().div_ceil(PIECE_BYTES),
        }
    }
}

/// The key of the header of `unit`'s checkpoints.
pub(super) fn header_key(unit: &str) -> String {
    unit.to_string()
}

/// The key of piece `i` of blob `id`.
pub(super) fn piece_key(unit: &str, id: &str, i: usize) -> String {
    format!("{unit}/b/{id}/{i}")
}

/// The key of `slot` (0 or 1) of the entry `identity`.
pub(super) fn entry_key(unit: &str, identity: &str, slot: u8) -> String {
    format!("{unit}/e/{identity}/{slot}")
}

/// The prefix of every entry's key.
pub(super) fn entry_prefix(unit: &str) -> String {
    format!("{unit}/e/")
}

/// What names an entry of a keyed file: the file, the entry's table, its key (in hex when
/// short, else hashed) and its rank among the file's entries of the same table and key.
pub(super) fn identity(path: &str, table: u8, key: &[u8], ordinal: usize) -> String {
    let key_id = if key.len() <= 24 {
        key.iter().map(|b| format!("{b:02x}")).collect::<String>()
    } else {
        format!(
            "h{:016x}{:08x}{}",
            riffle_state::fnv1a(key),
            crc32fast::hash(key),
            key.len()
        )
    };
    format!("{path}/{table}/{key_id}/{ordinal}")
}

/// The file and the rank of an entry identity.
pub(super) fn split_identity(identity: &str) -> Option<(&str, usize)> {
    let mut parts = identity.rsplitn(4, '/');
    let ordinal = parts.next()?.parse().ok()?;
    parts.next()?;
    parts.next()?;
    Some((parts.next()?, ordinal))
}

/// An entry's body: its table, key and value.
pub(super) fn entry_body(table: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut w = StateWriter::new();
    w.u8(VALUE);
    w.u8(table);
    w.bytes(key);
    w.bytes(value);
    w.finish()
}

/// An entry read back: table, key, value.
pub(super) type EntryParts<'a> = (u8, &'a [u8], &'a [u8]);

/// Reads an entry's body (`None` for a deleted entry or a tombstone).
pub(super) fn read_entry(body: &[u8]) -> Result<Option<EntryParts<'_>>, ClusterError> {
    if body.is_empty() || body == DELETED {
        return Ok(None);
    }
    let corrupted = |e: riffle_connectors::ConnectorError| {
        ClusterError::new(format!("corrupted state topic entry: {e}"))
    };
    let mut r = StateReader::new(body, "a state topic entry");
    if r.u8().map_err(corrupted)? != VALUE {
        return Err(ClusterError::new(
            "corrupted state topic entry: unknown kind",
        ));
    }
    let table = r.u8().map_err(corrupted)?;
    let key = r.bytes().map_err(corrupted)?;
    let value = r.bytes().map_err(corrupted)?;
    r.finish().map_err(corrupted)?;
    Ok(Some((table, key, value)))
}

/// A keyed snapshot's operator-wide parts as one blob.
pub(super) fn encode_globals(globals: &[&[u8]]) -> Vec<u8> {
    let mut w = StateWriter::new();
    w.length(globals.len());
    for g in globals {
        w.bytes(g);
    }
    w.finish()
}

/// Reads what [`encode_globals`] wrote.
pub(super) fn decode_globals(bytes: &[u8]) -> Result<Vec<&[u8]>, ClusterError> {
    let corrupted = |e: riffle_connectors::ConnectorError| {
        ClusterError::new(format!("corrupted state topic globals: {e}"))
    };
    let mut r = StateReader::new(bytes, "a state topic's operator-wide state");
    let n = r.length().map_err(corrupted)?;
    let mut out = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        out.push(r.bytes().map_err(corrupted)?);
    }
    r.finish().map_err(corrupted)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_name_the_file_and_rank_of_short_and_long_keys() {
        let short = identity("1-0.state", 3, b"ab", 2);
        assert_eq!(short, "1-0.state/3/6162/2");
        let long = identity("1-0.state", 3, &[7u8; 100], 0);
        assert!(long.len() < 60, "{long}");
        assert_ne!(long, identity("1-0.state", 3, &[8u8; 100], 0));
        for id in [&short, &long] {
            assert!(!id.contains(' '), "RocketMQ splits keys at spaces: {id}");
        }
        assert_eq!(split_identity(&short), Some(("1-0.state", 2)));
        assert_eq!(split_identity(&long), Some(("1-0.state", 0)));
        assert_eq!(split_identity("x/1"), None);
    }

    #[test]
    fn entry_bodies_round_trip_and_deletions_read_as_none() {
        let body = entry_body(4, b"key", b"value");
        assert_eq!(
            read_entry(&body).unwrap(),
            Some((4, &b"key"[..], &b"value"[..]))
        );
        assert_eq!(read_entry(DELETED).unwrap(), None);
        assert_eq!(read_entry(&[]).unwrap(), None);
        assert!(read_entry(&[9, 1]).is_err());
        assert!(read_entry(&body[..body.len() - 1]).is_err());
        let globals = encode_globals(&[b"a", b""]);
        assert_eq!(decode_globals(&globals).unwrap(), vec![&b"a"[..], &b""[..]]);
        assert_eq!(BlobRef::of(&[]).pieces, 0);
        assert_eq!(BlobRef::of(&vec![0u8; PIECE_BYTES + 1]).pieces, 2);
    }
}
