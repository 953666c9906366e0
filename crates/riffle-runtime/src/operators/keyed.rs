//! Per-key state of one operator subtask, in memory.
//!
//! The OVER, rank and deduplication operators reach their state only through [`KeyedState`],
//! so that a persistent state backend can replace the map without touching them.

use std::collections::HashMap;

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use arrow::row::{OwnedRow, RowConverter, Rows};

use super::aggregate::{group_converter, key_columns};
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

    /// Drops the state of `key`.
    pub(super) fn remove(&mut self, key: &OwnedRow) -> Option<V> {
        self.values.remove(key)
    }
}
