//! Operator snapshots split by key, so that a restore with another parallelism hands each new
//! subtask exactly the state of the key groups it owns (Flink's key-group redistribution).
//!
//! A keyed snapshot holds *operator-wide* parts (one per subtask it comes from: watermarks,
//! counters) and *entries*: `(table, key, value)` triples, where `key` is the encoded routing
//! key (Arrow's row format of the operator's key columns, as the exchange encodes it) and
//! `table` tells the operator what the entry is (a group, a timer, a cached row…). The key
//! group of an entry is computed from its key at restore time, with the same function the
//! exchange routes rows with, so the operator only writes its entries and reads back the
//! ones the runtime kept ([`merge`]); the same code path restores at the same parallelism.

use std::ops::Range;

use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_state::KeyGroups;

use crate::task::RuntimeError;

/// First byte of a keyed snapshot (format version).
const FORMAT: u8 = 1;

/// Builds a keyed snapshot.
#[derive(Debug, Default)]
pub struct KeyedSnapshotWriter {
    global: Option<Vec<u8>>,
    entries: StateWriter,
    count: usize,
}

impl KeyedSnapshotWriter {
    /// An empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the operator-wide part.
    pub fn global(&mut self, bytes: Vec<u8>) {
        self.global = Some(bytes);
    }

    /// Adds an entry of `table` for the routing key `key`; `value` writes its content.
    pub fn entry(
        &mut self,
        table: u8,
        key: &[u8],
        value: impl FnOnce(&mut StateWriter) -> Result<(), RuntimeError>,
    ) -> Result<(), RuntimeError> {
        let mut w = StateWriter::new();
        value(&mut w)?;
        self.entries.u8(table);
        self.entries.bytes(key);
        self.entries.bytes(&w.finish());
        self.count += 1;
        Ok(())
    }

    /// The encoded snapshot.
    pub fn finish(self) -> Vec<u8> {
        encode(self.global.as_slice(), self.count, self.entries.finish())
    }
}

fn encode<G: AsRef<[u8]>>(globals: &[G], count: usize, entries: Vec<u8>) -> Vec<u8> {
    let mut w = StateWriter::new();
    w.u8(FORMAT);
    w.length(globals.len());
    for g in globals {
        w.bytes(g.as_ref());
    }
    w.length(count);
    let mut out = w.finish();
    out.extend_from_slice(&entries);
    out
}

/// A keyed snapshot made of `globals` and `entries`, in the given order (a snapshot rebuilt
/// from entries stored one by one, e.g. a scaled-out unit's state topic).
pub fn assemble<G: AsRef<[u8]>>(globals: &[G], entries: &[Entry<'_>]) -> Vec<u8> {
    let mut w = StateWriter::new();
    for e in entries {
        w.u8(e.table);
        w.bytes(e.key);
        w.bytes(e.value);
    }
    encode(globals, entries.len(), w.finish())
}

/// One entry of a keyed snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// What the entry is, as the operator numbered it.
    pub table: u8,
    /// The encoded routing key.
    pub key: &'a [u8],
    /// The operator's bytes.
    pub value: &'a [u8],
}

/// A keyed snapshot read back.
#[derive(Debug)]
pub struct KeyedSnapshot<'a> {
    /// The operator-wide parts of every subtask the state comes from (one when the
    /// parallelism did not change; none from a subtask that wrote none).
    pub globals: Vec<&'a [u8]>,
    /// The entries.
    pub entries: Vec<Entry<'a>>,
}

impl<'a> KeyedSnapshot<'a> {
    /// Reads a snapshot written by [`KeyedSnapshotWriter`] (or [`merge`]); `what` names the
    /// operator in errors.
    pub fn parse(bytes: &'a [u8], what: &'a str) -> Result<Self, RuntimeError> {
        let mut r = StateReader::new(bytes, what);
        if r.u8()? != FORMAT {
            return Err(RuntimeError::new(format!(
                "corrupted checkpoint state of {what}: unknown keyed snapshot format"
            )));
        }
        let mut globals = Vec::new();
        for _ in 0..r.length()? {
            globals.push(r.bytes()?);
        }
        let n = r.length()?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(Entry {
                table: r.u8()?,
                key: r.bytes()?,
                value: r.bytes()?,
            });
        }
        r.finish()?;
        Ok(Self { globals, entries })
    }

    /// The entries of `table`.
    pub fn table(&self, table: u8) -> impl Iterator<Item = &Entry<'a>> + '_ {
        self.entries.iter().filter(move |e| e.table == table)
    }

    /// Every operator-wide part, read with `read` (which must read all of it).
    pub fn globals<T>(
        &self,
        what: &str,
        mut read: impl FnMut(&mut StateReader<'_>) -> Result<T, RuntimeError>,
    ) -> Result<Vec<T>, RuntimeError> {
        let mut out = Vec::with_capacity(self.globals.len());
        for bytes in &self.globals {
            let mut r = StateReader::new(bytes, what);
            out.push(read(&mut r)?);
            r.finish()?;
        }
        Ok(out)
    }

    /// Calls `read` with the key and a reader of the value of every entry of `table`, in
    /// order (it must read the whole value).
    pub fn read_table(
        &self,
        table: u8,
        what: &str,
        mut read: impl FnMut(&'a [u8], &mut StateReader<'_>) -> Result<(), RuntimeError>,
    ) -> Result<(), RuntimeError> {
        for e in self.table(table) {
            let mut r = StateReader::new(e.value, what);
            read(e.key, &mut r)?;
            r.finish()?;
        }
        Ok(())
    }
}

/// The smallest of restored watermarks (or other event times): a subtask that takes state
/// from several others goes on from the least advanced one (`i64::MIN` when none).
pub fn min_time(times: impl IntoIterator<Item = i64>) -> i64 {
    times.into_iter().min().unwrap_or(i64::MIN)
}

/// The state of a subtask owning key groups `range`, from the snapshots of the subtasks of
/// another parallelism whose key groups overlap it: every operator-wide part, and the entries
/// whose key falls into `range`.
pub fn merge(
    snapshots: &[&[u8]],
    range: Range<u16>,
    groups: KeyGroups,
    what: &str,
) -> Result<Vec<u8>, RuntimeError> {
    let mut globals = Vec::new();
    let mut entries = StateWriter::new();
    let mut count = 0;
    for bytes in snapshots {
        let snapshot = KeyedSnapshot::parse(bytes, what)?;
        globals.extend(snapshot.globals);
        for e in snapshot.entries {
            if range.contains(&groups.of_key(e.key)) {
                entries.u8(e.table);
                entries.bytes(e.key);
                entries.bytes(e.value);
                count += 1;
            }
        }
    }
    Ok(encode(&globals, count, entries.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(global: &[u8], keys: &[&str]) -> Vec<u8> {
        let mut w = KeyedSnapshotWriter::new();
        w.global(global.to_vec());
        for k in keys {
            w.entry(7, k.as_bytes(), |v| {
                v.str(k);
                Ok(())
            })
            .unwrap();
        }
        w.finish()
    }

    #[test]
    fn merging_keeps_the_key_groups_of_the_new_subtask() {
        let groups = KeyGroups::new(16).unwrap();
        let keys: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        let owned_by = |p: usize, i: usize| -> Vec<&str> {
            keys.iter()
                .filter(|k| groups.subtask_of(groups.of_key(k.as_bytes()), p) == i)
                .map(String::as_str)
                .collect()
        };
        let old: Vec<Vec<u8>> = (0..2)
            .map(|i| snapshot(&[i as u8], &owned_by(2, i)))
            .collect();
        let old: Vec<&[u8]> = old.iter().map(Vec::as_slice).collect();
        for i in 0..3 {
            let merged = merge(&old, groups.range_of(i, 3), groups, "test").unwrap();
            let read = KeyedSnapshot::parse(&merged, "test").unwrap();
            assert_eq!(read.globals.len(), 2);
            let mut got: Vec<&str> = read
                .table(7)
                .map(|e| std::str::from_utf8(e.key).unwrap())
                .collect();
            got.sort();
            let mut want = owned_by(3, i);
            want.sort();
            assert_eq!(got, want);
            for e in read.table(7) {
                let mut r = StateReader::new(e.value, "test");
                assert_eq!(r.str().unwrap().as_bytes(), e.key);
            }
        }
        assert!(KeyedSnapshot::parse(&[9, 0], "test").is_err());
    }

    #[test]
    fn assembling_the_parsed_parts_gives_the_same_bytes() {
        let bytes = snapshot(&[4, 2], &["a", "b", "a"]);
        let read = KeyedSnapshot::parse(&bytes, "test").unwrap();
        assert_eq!(assemble(&read.globals, &read.entries), bytes);
    }
}
