//! Flink's changelog formats over JSON: `debezium-json` and `canal-json`.
//!
//! A record is one change event holding row images; decoding turns it into rows with change
//! kinds (`+I`, `-U`, `+U`, `-D`) exactly as Flink's formats do, and encoding writes a row with
//! its kind as an event (Debezium: `c` / `d` with `after` / `before`; Canal: `INSERT` /
//! `DELETE`). The image fields are converted like Flink's `json` format converts object fields
//! (missing fields are NULL, `timestamp-format.standard` applies).
//!
//! A record that cannot be read — invalid JSON, an unknown operation, a missing image, a field
//! that does not convert — fails the job with Flink's "Corrupt ... message" error. With
//! `<format>.ignore-parse-errors` an unreadable event is skipped and a field that does not
//! convert is NULL, as in Flink.

mod canal;
mod debezium;

use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use serde_json::Value;

use crate::json::JsonOptions;
use crate::options::Options;
use crate::rows::{is_writable_text_type, RowEncoder, TextFormat};
use crate::text::{ColumnBuilder, TimestampStyle};
use crate::{ChangeBatch, ConnectorError, Result, RowKind};

pub use canal::CanalOptions;
pub use debezium::DebeziumOptions;

/// A changelog format with its options.
#[derive(Debug, Clone)]
pub enum ChangelogFormat {
    /// `debezium-json`
    Debezium(DebeziumOptions),
    /// `canal-json`
    Canal(CanalOptions),
}

/// Whether `name` is a changelog format Riffle reads and writes.
pub fn is_changelog_format(name: &str) -> bool {
    matches!(name, debezium::NAME | canal::NAME)
}

impl ChangelogFormat {
    /// Reads the options of format `name`; `None` when `name` is not a changelog format.
    pub fn from_options(name: &str, options: &mut Options) -> Result<Option<Self>> {
        Ok(match name {
            debezium::NAME => Some(ChangelogFormat::Debezium(DebeziumOptions::from_options(
                options,
            )?)),
            canal::NAME => Some(ChangelogFormat::Canal(CanalOptions::from_options(options)?)),
            _ => None,
        })
    }

    /// The format's name, which is also its option prefix without the dot.
    pub fn name(&self) -> &'static str {
        match self {
            ChangelogFormat::Debezium(_) => debezium::NAME,
            ChangelogFormat::Canal(_) => canal::NAME,
        }
    }

    fn common(&self) -> &CommonOptions {
        match self {
            ChangelogFormat::Debezium(o) => &o.common,
            ChangelogFormat::Canal(o) => &o.common,
        }
    }

    /// The changes one event holds, each with the values of the table's `fields` (by name).
    fn changes<'a>(&self, root: &'a Value, fields: &[String]) -> EventResult<Changes<'a>> {
        match self {
            ChangelogFormat::Debezium(o) => debezium::changes(o, root, fields),
            ChangelogFormat::Canal(o) => canal::changes(o, root, fields),
        }
    }

    /// The message of a record that cannot be read (Flink's wording).
    fn corrupt(&self, record: &str) -> String {
        match self {
            ChangelogFormat::Debezium(_) => format!("Corrupt Debezium JSON message '{record}'."),
            ChangelogFormat::Canal(_) => format!("Corrupt Canal JSON message '{record}'."),
        }
    }
}

/// The options every JSON changelog format has (`<format>.ignore-parse-errors`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommonOptions {
    ignore_parse_errors: bool,
    timestamp_style: TimestampStyle,
}

impl CommonOptions {
    fn from_options(prefix: &str, options: &mut Options) -> Result<Self> {
        let ignore_parse_errors = options.bool(&format!("{prefix}.ignore-parse-errors"), false)?;
        let key = format!("{prefix}.timestamp-format.standard");
        let timestamp_style = match options.get(&key) {
            None | Some("SQL") => TimestampStyle::Sql,
            Some("ISO-8601") => TimestampStyle::Iso,
            Some(v) => {
                return Err(ConnectorError::new(format!(
                    "Unsupported value '{v}' for timestamp-format.standard. Supported values are [SQL, ISO-8601]."
                )))
            }
        };
        for option in [
            "map-null-key.mode",
            "map-null-key.literal",
            "encode.decimal-as-plain-number",
        ] {
            options.accept(&format!("{prefix}.{option}"));
        }
        let ignore_nulls = format!("{prefix}.encode.ignore-null-fields");
        if options.bool(&ignore_nulls, false)? {
            return Err(ConnectorError::new(format!(
                "unsupported feature: '{ignore_nulls}' = 'true'"
            )));
        }
        Ok(Self {
            ignore_parse_errors,
            timestamp_style,
        })
    }
}

/// The outcome of reading an event: the error says why it cannot be read.
type EventResult<T> = std::result::Result<T, String>;

/// The rows of one event: a change kind and the value of each field (`Value::Null` when the
/// image lacks it).
type Changes<'a> = Vec<(RowKind, Vec<&'a Value>)>;

/// The value of `field` in `image` (NULL when missing; an error when `image` is not an object).
fn image_values<'a>(
    image: &'a Value,
    fields: &[String],
    what: &str,
) -> EventResult<Vec<&'a Value>> {
    static NULL: Value = Value::Null;
    let Value::Object(object) = image else {
        return Err(format!("'{what}' is not a JSON object"));
    };
    Ok(fields
        .iter()
        .map(|f| object.get(f).unwrap_or(&NULL))
        .collect())
}

/// Decodes change events into batches of `schema`'s columns with change kinds.
pub struct ChangelogDecoder {
    table: String,
    schema: SchemaRef,
    names: Vec<String>,
    format: ChangelogFormat,
    builders: Vec<ColumnBuilder>,
    kinds: Vec<RowKind>,
    skipped: u64,
    null_fields: u64,
}

impl ChangelogDecoder {
    /// A decoder for `schema` of table `table`, failing on types JSON cannot hold.
    pub fn new(table: &str, schema: SchemaRef, format: ChangelogFormat) -> Result<Self> {
        let builders = schema
            .fields()
            .iter()
            .map(|f| {
                ColumnBuilder::new(f.data_type()).map_err(|t| {
                    ConnectorError::new(format!(
                        "unsupported feature: column '{}' of type {t} in the {} format (table '{table}')",
                        f.name(),
                        format.name()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            table: table.to_string(),
            names: schema.fields().iter().map(|f| f.name().clone()).collect(),
            builders,
            schema,
            format,
            kinds: Vec::new(),
            skipped: 0,
            null_fields: 0,
        })
    }

    /// Rows decoded since the last [`ChangelogDecoder::flush`].
    pub fn rows(&self) -> usize {
        self.kinds.len()
    }

    /// Decodes one event (without its line terminator); returns the number of rows it added
    /// (0 for skipped events). `location` names where the record came from, for errors.
    pub fn decode(&mut self, record: &str, location: &dyn Fn() -> String) -> Result<usize> {
        let common = self.format.common().clone();
        let outcome = serde_json::from_str::<Value>(record)
            .map_err(|e| format!("invalid JSON: {e}"))
            .and_then(|root| {
                let changes = self.format.changes(&root, &self.names)?;
                for (kind, values) in &changes {
                    for ((value, builder), name) in
                        values.iter().zip(&mut self.builders).zip(&self.names)
                    {
                        // A field that does not convert is NULL (appended by `append_json`).
                        if let Err(e) = builder.append_json(value, common.timestamp_style) {
                            if !common.ignore_parse_errors {
                                return Err(format!("Fail to deserialize at field: {name}: {e}"));
                            }
                            self.null_fields += 1;
                        }
                    }
                    self.kinds.push(*kind);
                }
                Ok(changes.len())
            });
        match outcome {
            Ok(rows) => Ok(rows),
            Err(_) if common.ignore_parse_errors => {
                self.skipped += 1;
                Ok(0)
            }
            Err(cause) => Err(ConnectorError::new(format!(
                "{} Table '{}' at {}: {cause}",
                self.format.corrupt(record),
                self.table,
                location()
            ))),
        }
    }

    /// The rows decoded so far with their kinds (possibly none); starts a new batch.
    pub fn flush(&mut self) -> Result<ChangeBatch> {
        let mut columns = Vec::with_capacity(self.builders.len());
        for b in &mut self.builders {
            columns.push(b.finish().map_err(ConnectorError::new)?);
        }
        let kinds = std::mem::take(&mut self.kinds);
        let options = RecordBatchOptions::new().with_row_count(Some(kinds.len()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let kinds = if kinds.iter().all(|k| *k == RowKind::Insert) {
            None
        } else {
            Some(Arc::from(kinds))
        };
        Ok(ChangeBatch { batch, kinds })
    }

    /// Reports (once, on stderr) how many events `ignore-parse-errors` skipped or nulled.
    pub fn report_ignored(&mut self) {
        if self.skipped > 0 || self.null_fields > 0 {
            eprintln!(
                "riffle: table '{}': {} malformed {} event(s) skipped, {} field(s) set to NULL (ignore-parse-errors)",
                self.table,
                self.skipped,
                self.format.name(),
                self.null_fields
            );
            self.skipped = 0;
            self.null_fields = 0;
        }
    }
}

/// Encodes rows with their change kinds as change events.
pub struct ChangelogEncoder {
    format: ChangelogFormat,
    image: RowEncoder,
    text: String,
}

impl ChangelogEncoder {
    /// An encoder for columns named `names` of types `types` (table `table`).
    pub fn new(
        table: &str,
        names: Vec<String>,
        types: &[arrow::datatypes::DataType],
        format: ChangelogFormat,
    ) -> Result<Self> {
        if let ChangelogFormat::Debezium(o) = &format {
            if o.schema_include {
                return Err(ConnectorError::new(
                    "Debezium JSON serialization doesn't support 'debezium-json.schema-include' option been set to true.",
                ));
            }
        }
        if let Some((name, t)) = names
            .iter()
            .zip(types)
            .find(|(_, t)| !is_writable_text_type(t))
        {
            return Err(ConnectorError::new(format!(
                "unsupported feature: writing column '{name}' of type {t} to table '{table}' in the {} format",
                format.name()
            )));
        }
        let json = JsonOptions {
            fail_on_missing_field: false,
            ignore_parse_errors: false,
            timestamp_style: format.common().timestamp_style,
        };
        Ok(Self {
            image: RowEncoder::new(names, TextFormat::Json(json)),
            format,
            text: String::new(),
        })
    }

    /// Appends the event of row `row` of `columns` with change `kind` (no line terminator).
    pub fn encode(&mut self, kind: RowKind, columns: &[&dyn Array], row: usize, out: &mut String) {
        self.text.clear();
        self.image.encode(columns, row, &mut self.text);
        match &self.format {
            ChangelogFormat::Debezium(_) => debezium::write_event(kind, &self.text, out),
            ChangelogFormat::Canal(_) => canal::write_event(kind, &self.text, out),
        }
    }
}

#[cfg(test)]
mod tests;
