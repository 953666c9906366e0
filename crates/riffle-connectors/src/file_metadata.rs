//! Metadata columns of filesystem tables (`col STRING METADATA FROM 'file.name' VIRTUAL`).
//!
//! The keys and their types are data (`[[metadata]]` in `dialects/connectors/filesystem.toml`).
//! A value describes the file a row was read from; a source batch never spans two files, so each
//! metadata column of a batch is one value repeated.

use std::path::Path;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use riffle_plan::ConnectorSpec;

use crate::{ChangeBatch, ConnectorError, Result};

/// One metadata value of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Path,
    Name,
    Size,
    ModificationTime,
}

impl Key {
    fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "file.path" => Key::Path,
            "file.name" => Key::Name,
            "file.size" => Key::Size,
            "file.modification-time" => Key::ModificationTime,
            _ => return None,
        })
    }
}

/// Where a column of the table comes from.
enum Slot {
    /// The decoder's physical column at this index.
    Physical(usize),
    /// A metadata value, cast to the declared type.
    Metadata(Key, DataType),
}

/// Adds a table's metadata columns to the physical columns its format decodes.
pub struct FileColumns {
    /// The table's columns (physical and metadata) in declared order.
    schema: SchemaRef,
    slots: Vec<Slot>,
}

impl FileColumns {
    /// Splits `schema` (the table's columns) into the physical columns a format decodes and
    /// the metadata columns of `spec`; `None` when the table declares no metadata.
    pub fn new(spec: &ConnectorSpec, schema: &SchemaRef) -> Result<Option<(Self, SchemaRef)>> {
        let declared = crate::check_metadata_keys(spec, "filesystem", |k| Key::parse(k).is_some())?;
        if declared.is_empty() {
            return Ok(None);
        }
        let mut physical = Vec::new();
        let mut slots = Vec::new();
        for field in schema.fields() {
            match declared.iter().find(|m| m.column == *field.name()) {
                Some(m) => {
                    let key = Key::parse(&m.key).ok_or_else(|| {
                        ConnectorError::new(format!("unknown file metadata key '{}'", m.key))
                    })?;
                    slots.push(Slot::Metadata(key, field.data_type().clone()));
                }
                None => {
                    slots.push(Slot::Physical(physical.len()));
                    physical.push(field.clone());
                }
            }
        }
        let physical = Arc::new(Schema::new_with_metadata(
            physical,
            schema.metadata().clone(),
        ));
        let columns = FileColumns {
            schema: schema.clone(),
            slots,
        };
        Ok(Some((columns, physical)))
    }

    /// `changes` (decoded from `file`) with the metadata columns added.
    pub fn complete(&self, changes: ChangeBatch, file: &FileFacts) -> Result<ChangeBatch> {
        let rows = changes.batch.num_rows();
        let columns = self
            .slots
            .iter()
            .map(|slot| match slot {
                Slot::Physical(i) => Ok(changes.batch.column(*i).clone()),
                Slot::Metadata(key, declared) => file.column(*key, declared, rows),
            })
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| ConnectorError::new(format!("file metadata columns: {e}")))?;
        Ok(ChangeBatch { batch, ..changes })
    }
}

/// What the metadata columns say about one file.
pub struct FileFacts {
    path: String,
    name: String,
    size: i64,
    modified_ms: i64,
}

impl FileFacts {
    /// Reads the facts of the file at `path`.
    pub fn of(path: &Path) -> Result<Self> {
        let fail = |e: std::io::Error| {
            ConnectorError::new(format!(
                "cannot read the metadata of {}: {e}",
                path.display()
            ))
        };
        let meta = std::fs::metadata(path).map_err(fail)?;
        let modified_ms = meta
            .modified()
            .map_err(fail)?
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let absolute = std::path::absolute(path).map_err(fail)?;
        Ok(FileFacts {
            path: absolute.to_string_lossy().into_owned(),
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            size: i64::try_from(meta.len()).unwrap_or(i64::MAX),
            modified_ms,
        })
    }

    /// The value of `key` repeated `rows` times, as `declared`.
    fn column(&self, key: Key, declared: &DataType, rows: usize) -> Result<ArrayRef> {
        let array: ArrayRef = match key {
            Key::Path => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                &self.path, rows,
            ))),
            Key::Name => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                &self.name, rows,
            ))),
            Key::Size => Arc::new(Int64Array::from_value(self.size, rows)),
            Key::ModificationTime => Arc::new(
                TimestampMillisecondArray::from_value(self.modified_ms, rows)
                    .with_timezone(riffle_plan::types::LTZ_TIME_ZONE),
            ),
        };
        if array.data_type() == declared {
            return Ok(array);
        }
        arrow::compute::cast(&array, declared).map_err(|e| {
            ConnectorError::new(format!("file metadata cannot be read as {declared}: {e}"))
        })
    }
}
