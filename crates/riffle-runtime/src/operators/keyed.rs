//! Per-key state of one operator subtask, in memory.
//!
//! The OVER, rank and deduplication operators reach their state only through [`KeyedState`],
//! so that a persistent state backend can replace the map without touching them.

use std::collections::{BTreeMap, HashMap};

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use arrow::row::{OwnedRow, RowConverter, Rows};
use riffle_connectors::snapshot::{StateReader, StateWriter};

use super::aggregate::{group_converter, key_columns};
use crate::keyed_snapshot::{KeyedSnapshot, KeyedSnapshotWriter};
use crate::task::RuntimeError;

/// State values of type `V` per key (the key columns' values, encoded).
pub(super) struct KeyedState<V> {
    columns: Vec<usize>,
    converter: RowConverter,
    values: HashMap<OwnedRow, V>,
}

impl<V> KeyedState<V> {
    /// State keyed by `columns` of the input (of `input_types`); no columns: one global key.
    pub(super) fn new(columns: &[usize], input_types: &[DataType]) -> Result<Self, RuntimeError> {
        let types: Vec<DataType> = columns
            .iter()
            .filter_map(|c| input_types.get(*c).cloned())
            .collect();
        Ok(Self {
            columns: columns.to_vec(),
            converter: group_converter(&types)?,
            values: HashMap::new(),
        })
    }

    /// The encoded key of every row of `batch`.
    pub(super) fn keys(&self, batch: &RecordBatch) -> Result<Rows, RuntimeError> {
        let columns: Vec<ArrayRef> = key_columns(batch, &self.columns);
        Ok(self.converter.convert_columns(&columns)?)
    }

    /// The state of `key`, created with `init` when absent.
    pub(super) fn get_or_insert_with(
        &mut self,
        key: &OwnedRow,
        init: impl FnOnce() -> V,
    ) -> &mut V {
        self.values.entry(key.clone()).or_insert_with(init)
    }

    /// The state of `key`, if any.
    pub(super) fn get_mut(&mut self, key: &OwnedRow) -> Option<&mut V> {
        self.values.get_mut(key)
    }

    /// The keys whose state satisfies `wanted`.
    pub(super) fn keys_where(&self, wanted: impl Fn(&V) -> bool) -> Vec<OwnedRow> {
        self.values
            .iter()
            .filter(|(_, v)| wanted(v))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Drops the state of `key`.
    pub(super) fn remove(&mut self, key: &OwnedRow) -> Option<V> {
        self.values.remove(key)
    }

    /// The key whose encoded bytes are `bytes` (as [`Self::keys`] encodes it).
    pub(super) fn key_of(&self, bytes: &[u8]) -> OwnedRow {
        self.converter.parser().parse(bytes).owned()
    }

    /// Adds every key with its value to a keyed snapshot, as entries of `table`.
    pub(super) fn write(
        &self,
        out: &mut KeyedSnapshotWriter,
        table: u8,
        mut value: impl FnMut(&V, &mut StateWriter) -> Result<(), RuntimeError>,
    ) -> Result<(), RuntimeError> {
        for (key, v) in &self.values {
            out.entry(table, key.row().data(), |w| value(v, w))?;
        }
        Ok(())
    }

    /// Replaces every value with the entries of `table` written by [`Self::write`].
    pub(super) fn read(
        &mut self,
        snapshot: &KeyedSnapshot<'_>,
        table: u8,
        what: &str,
        mut value: impl FnMut(&mut StateReader<'_>) -> Result<V, RuntimeError>,
    ) -> Result<(), RuntimeError> {
        self.values.clear();
        let parser = self.converter.parser();
        let values = &mut self.values;
        snapshot.read_table(table, what, |key, r| {
            values.insert(parser.parse(key).owned(), value(r)?);
            Ok(())
        })
    }
}

/// Adds timers (keys waiting per time) to a keyed snapshot: one entry of `table` per key and
/// time, so that a timer follows its key to whichever subtask owns it.
pub(super) fn write_timers(
    out: &mut KeyedSnapshotWriter,
    table: u8,
    timers: &BTreeMap<i64, Vec<OwnedRow>>,
) -> Result<(), RuntimeError> {
    for (time, keys) in timers {
        for key in keys {
            out.entry(table, key.row().data(), |w| {
                w.i64(*time);
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Reads timers written by [`write_timers`]; `key_of` decodes a key.
pub(super) fn read_timers(
    snapshot: &KeyedSnapshot<'_>,
    table: u8,
    what: &str,
    key_of: impl Fn(&[u8]) -> OwnedRow,
) -> Result<BTreeMap<i64, Vec<OwnedRow>>, RuntimeError> {
    let mut timers: BTreeMap<i64, Vec<OwnedRow>> = BTreeMap::new();
    snapshot.read_table(table, what, |key, r| {
        timers.entry(r.i64()?).or_default().push(key_of(key));
        Ok(())
    })?;
    Ok(timers)
}
