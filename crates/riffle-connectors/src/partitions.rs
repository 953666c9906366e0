//! Partitioned filesystem tables (`PARTITIONED BY (a, b)`), laid out as Flink lays them out:
//! a row lives under `<path>/a=<value>/b=<value>/`, its file holds the other columns only, a
//! NULL or empty value goes to the default partition (`partition.default-name`, by default
//! `__DEFAULT_PARTITION__`), and names and values are escaped as Flink escapes path names.
//!
//! A partition value is the text of Flink's internal form of the column's value (`12` for an
//! INT, the days since 1970-01-01 for a DATE); reading a partition back casts that text to the
//! declared type (a DATE from `yyyy-MM-dd` only, so a DATE partition Flink wrote does not read
//! back, in Flink either). Flink 2.3 cannot read
//! a table holding a default partition back (it fails building the partition's path from the
//! NULL value): neither does Riffle.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use riffle_plan::ConnectorSpec;

use crate::options::Options;
use crate::{ChangeBatch, ConnectorError, Result};

/// The option naming the partition of NULL and blank values.
const DEFAULT_NAME_OPTION: &str = "partition.default-name";
/// Flink's default for [`DEFAULT_NAME_OPTION`].
const DEFAULT_NAME: &str = "__DEFAULT_PARTITION__";

/// True for the characters Flink's `PartitionPathUtils` escape in a path name: control
/// characters, `"#%'*/:=?\{}[]^` and DEL.
fn needs_escaping(c: char) -> bool {
    c < ' ' || "\"#%'*/:=?\\\u{7f}{}[]^".contains(c)
}

/// `text` with every character that cannot stand in a path name written as `%XX` (its code in
/// upper-case hex).
pub fn escape_path_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escaping(c) {
            out.push_str(&format!("%{:02X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Undoes [`escape_path_name`]: `%XX` (two hex digits) is that character; any other `%` stays.
pub fn unescape_path_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 3)
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32);
        match code {
            Some(c) => {
                out.push(c);
                rest = &rest[at + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// True for the types a partition value can be written from and read back as.
fn is_partition_type(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Decimal128(_, _)
    )
}

/// The partition columns of a table and the name of its default partition.
pub struct Partitioning {
    /// The partition columns' indexes in the table's columns, in `PARTITIONED BY` order.
    columns: Vec<usize>,
    /// The partition columns' names, in the same order.
    names: Vec<String>,
    default_name: String,
}

impl Partitioning {
    /// The partitioning of `spec` over the table's columns `schema`; `None` when the table is
    /// not partitioned. Consumes `partition.default-name`.
    pub fn new(
        spec: &ConnectorSpec,
        schema: &Schema,
        options: &mut Options,
    ) -> Result<Option<Self>> {
        let default_name = options
            .get(DEFAULT_NAME_OPTION)
            .unwrap_or(DEFAULT_NAME)
            .to_string();
        if spec.partition_keys.is_empty() {
            return Ok(None);
        }
        let mut columns = Vec::new();
        for key in &spec.partition_keys {
            let (index, field) = schema.column_with_name(key).ok_or_else(|| {
                ConnectorError::new(format!(
                    "partition column '{key}' of filesystem table '{}' is not one of its physical columns",
                    spec.table
                ))
            })?;
            if !is_partition_type(field.data_type()) {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: partition column '{key}' of type {} (filesystem table '{}'); partition columns of type STRING, BOOLEAN, TINYINT to BIGINT, DECIMAL and DATE are supported",
                    field.data_type(),
                    spec.table
                )));
            }
            columns.push(index);
        }
        Ok(Some(Partitioning {
            columns,
            names: spec.partition_keys.clone(),
            default_name,
        }))
    }

    /// True when column `index` of the table is a partition column.
    pub fn is_partition_column(&self, index: usize) -> bool {
        self.columns.contains(&index)
    }

    /// The directory (relative to the table's path) of every row of `batch` (the table's
    /// columns): `a=v1/b=v2`.
    pub fn directories(&self, batch: &RecordBatch) -> Result<Vec<String>> {
        let texts = self
            .columns
            .iter()
            .map(|&i| {
                let column = batch.column(i);
                // Flink writes a DATE's internal value: its days since the epoch.
                let internal = match column.data_type() {
                    DataType::Date32 => arrow::compute::cast(column, &DataType::Int32),
                    _ => Ok(column.clone()),
                };
                let text = internal.and_then(|c| arrow::compute::cast(&c, &DataType::Utf8));
                let text = text.map_err(|e| {
                    ConnectorError::new(format!("partition value of {}: {e}", column.data_type()))
                })?;
                Ok(text)
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let texts: Vec<&StringArray> = texts
            .iter()
            .filter_map(|a| a.as_any().downcast_ref::<StringArray>())
            .collect();
        let mut out = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let mut dir = String::new();
            for (name, values) in self.names.iter().zip(&texts) {
                let value = (!values.is_null(row))
                    .then(|| values.value(row))
                    .filter(|v| !v.is_empty())
                    .unwrap_or(&self.default_name);
                if !dir.is_empty() {
                    dir.push('/');
                }
                dir.push_str(&escape_path_name(name));
                dir.push('=');
                dir.push_str(&escape_path_name(value));
            }
            out.push(dir);
        }
        Ok(out)
    }

    /// The partition values of a file at `relative` (its path below the table `table`'s
    /// path), by partition column; `None` for a file outside a partition directory (Flink reads
    /// only the directories as deep as there are partition columns).
    pub fn values_of(&self, table: &str, relative: &Path) -> Result<Option<Vec<String>>> {
        let Some(parent) = relative.parent() else {
            return Ok(None);
        };
        let dirs: Vec<String> = parent
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if dirs.len() < self.names.len() {
            return Ok(None);
        }
        let mut found: Vec<Option<String>> = vec![None; self.names.len()];
        for dir in &dirs[..self.names.len()] {
            let Some((name, value)) = dir.split_once('=') else {
                return Ok(None);
            };
            let value = unescape_path_name(value);
            if value == self.default_name {
                return Err(ConnectorError::new(format!(
                    "filesystem table '{table}' holds the default partition '{}' (a NULL or empty partition value), which Flink cannot read back: Path should not be null or empty: null",
                    parent.display()
                )));
            }
            let name = unescape_path_name(name);
            if let Some(i) = self.names.iter().position(|n| *n == name) {
                found[i] = Some(value);
            }
        }
        Ok(found.into_iter().collect())
    }
}

/// Builds a partitioned table's rows from the columns its files hold and the values of the
/// partition the file is in.
pub struct PartitionColumns {
    /// The table's columns, in declared order.
    schema: SchemaRef,
    /// Per table column: the file column it is, or the partition column (index into the values).
    slots: Vec<Slot>,
}

/// Where a column of a partitioned table comes from.
enum Slot {
    File(usize),
    Partition(usize, DataType),
}

impl PartitionColumns {
    /// Splits `schema` into the columns the files hold (returned) and the partition columns.
    pub fn new(partitioning: &Partitioning, schema: &SchemaRef) -> (Self, SchemaRef) {
        let mut file = Vec::new();
        let mut slots = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            match partitioning.columns.iter().position(|&c| c == i) {
                Some(p) => slots.push(Slot::Partition(p, field.data_type().clone())),
                None => {
                    slots.push(Slot::File(file.len()));
                    file.push(field.clone());
                }
            }
        }
        let file = Arc::new(Schema::new_with_metadata(file, schema.metadata().clone()));
        (
            PartitionColumns {
                schema: schema.clone(),
                slots,
            },
            file,
        )
    }

    /// `changes` (decoded from a file of the partition `values`) with the partition columns.
    pub fn complete(&self, changes: ChangeBatch, values: &[String]) -> Result<ChangeBatch> {
        let rows = changes.batch.num_rows();
        let columns = self
            .slots
            .iter()
            .map(|slot| match slot {
                Slot::File(i) => Ok(changes.batch.column(*i).clone()),
                Slot::Partition(p, declared) => {
                    let value = values.get(*p).map_or("", String::as_str);
                    if *declared == DataType::Date32 && !is_iso_date(value) {
                        return Err(ConnectorError::new(format!(
                            "partition value '{value}' cannot be read as a DATE: Text '{value}' could not be parsed (yyyy-MM-dd expected)"
                        )));
                    }
                    let text: ArrayRef = Arc::new(StringArray::from(vec![value; rows]));
                    let options = arrow::compute::CastOptions {
                        safe: false,
                        ..Default::default()
                    };
                    arrow::compute::cast_with_options(&text, declared, &options).map_err(|e| {
                        ConnectorError::new(format!(
                            "partition value '{value}' cannot be read as {declared}: {e}"
                        ))
                    })
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| ConnectorError::new(format!("partition columns: {e}")))?;
        Ok(ChangeBatch { batch, ..changes })
    }
}

/// True for `yyyy-MM-dd` (the form Flink parses a DATE partition value from).
fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_keeps_plain_characters() {
        let text = "a/b=c:d%e #?*{}[]^'\"\\ \t~+";
        let escaped = escape_path_name(text);
        assert_eq!(
            escaped,
            "a%2Fb%3Dc%3Ad%25e %23%3F%2A%7B%7D%5B%5D%5E%27%22%5C %09~+"
        );
        assert_eq!(unescape_path_name(&escaped), text);
    }

    #[test]
    fn a_percent_without_two_hex_digits_stays() {
        assert_eq!(unescape_path_name("50%"), "50%");
        assert_eq!(unescape_path_name("%zz%41"), "%zzA");
    }
}
