//! Rows in Flink's `csv` and `json` text formats: decoding records into Arrow columns and
//! encoding rows as records. Shared by every connector that carries text records (files, topic
//! messages).

use arrow::array::Array;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::csv::{plain_fields, split_record, CsvOptions, CSV_TIMESTAMP_STYLE};
use crate::json::JsonOptions;
use crate::json_scan::{scan_record, SlotTree, Span};
use crate::options::Options;
use crate::text::{ColumnBuilder, Read, ScannedRecord, TimestampStyle};
use crate::{ConnectorError, Result};

/// A text record format with its options.
#[derive(Debug, Clone)]
pub enum TextFormat {
    /// `csv`
    Csv(CsvOptions),
    /// `json` (one object per record)
    Json(JsonOptions),
}

impl TextFormat {
    /// Reads the options of format `name` (`csv` or `json`); `None` for other formats.
    pub fn from_options(name: &str, options: &mut Options) -> Result<Option<Self>> {
        Ok(match name {
            "csv" => Some(TextFormat::Csv(CsvOptions::from_options(options)?)),
            "json" => Some(TextFormat::Json(JsonOptions::from_options(options)?)),
            _ => None,
        })
    }

    /// The format's name, which is also its option prefix without the dot.
    pub fn name(&self) -> &'static str {
        match self {
            TextFormat::Csv(_) => "csv",
            TextFormat::Json(_) => "json",
        }
    }
}

/// Whether [`RowEncoder`] can write a column of this type.
pub fn is_writable_text_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
            | DataType::Date32
            | DataType::Time32(_)
            | DataType::Timestamp(..)
    )
}

/// Which columns a decoder must convert: what the job reads of them, and how Flink's source
/// treats the rest.
#[derive(Debug, Clone, Copy, Default)]
pub struct Projection<'a> {
    /// The paths the job reads (`riffle_plan::ConnectorSpec::read_columns`); `None`: all.
    pub read_columns: Option<&'a [Vec<String>]>,
    /// Columns the job does not read are not converted at all, nor checked by
    /// `fail-on-missing-field`, as Flink's filesystem source does (it pushes the projection
    /// into its format). Otherwise only the string fields not read are skipped.
    pub skip_unread_columns: bool,
}

impl Projection<'_> {
    /// Every column is read.
    pub const ALL: Projection<'static> = Projection {
        read_columns: None,
        skip_unread_columns: false,
    };
}

/// Decodes records into batches of `schema`'s columns.
pub struct RowDecoder {
    table: String,
    schema: SchemaRef,
    /// Per column: `fail-on-missing-field` applies to it (it is converted).
    checked: Vec<bool>,
    /// The record format (moved out while a record is decoded, see [`RowDecoder::decode`]).
    format: TextFormat,
    builders: Vec<ColumnBuilder>,
    rows: usize,
    skipped_rows: u64,
    null_fields: u64,
    /// The JSON scanner's tree of the schema and its span buffer (JSON only).
    json_scan: Option<JsonScan>,
}

/// What [`RowDecoder`] scans JSON records with, kept across records.
struct JsonScan {
    tree: SlotTree,
    spans: Vec<Span>,
}

impl RowDecoder {
    /// A decoder for `schema` of table `table` converting what `projection` asks for, failing
    /// on types text cannot hold.
    pub fn new(
        table: &str,
        schema: SchemaRef,
        format: TextFormat,
        projection: Projection<'_>,
    ) -> Result<Self> {
        let mut checked = Vec::with_capacity(schema.fields().len());
        let builders = schema
            .fields()
            .iter()
            .map(|f| {
                let row_in_csv = matches!(format, TextFormat::Csv(_))
                    && matches!(f.data_type(), DataType::Struct(_) | DataType::Map(..));
                let read = Read::of_column(f.name(), projection.read_columns);
                let skipped =
                    read == Read::Nothing && projection.skip_unread_columns && f.is_nullable();
                checked.push(!skipped);
                let builder = if row_in_csv {
                    Err(f.data_type().to_string())
                } else if skipped {
                    // Still refuses a type the format cannot hold.
                    ColumnBuilder::new(f.data_type()).map(|_| ColumnBuilder::unread(f.data_type()))
                } else {
                    ColumnBuilder::for_read(f.data_type(), f.is_nullable(), &read)
                };
                builder.map_err(|t| {
                    ConnectorError::new(format!(
                        "unsupported feature: column '{}' of type {t} in the {} format (table '{table}')",
                        f.name(),
                        format.name(),
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let json_scan = matches!(format, TextFormat::Json(_)).then(|| JsonScan {
            tree: SlotTree::new(schema.fields()),
            spans: Vec::new(),
        });
        Ok(Self {
            table: table.to_string(),
            schema,
            checked,
            json_scan,
            format,
            builders,
            rows: 0,
            skipped_rows: 0,
            null_fields: 0,
        })
    }

    /// The format.
    pub fn format(&self) -> &TextFormat {
        &self.format
    }

    /// Rows decoded since the last [`RowDecoder::flush`].
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes one record (without its line terminator); `Ok(false)` when it was skipped
    /// (`ignore-parse-errors`). `location` names where the record came from, for errors.
    pub fn decode(&mut self, record: &str, location: &dyn Fn() -> String) -> Result<bool> {
        // The format is moved out for the record and back (no allocation: it is only moved),
        // so that the builders can be appended to while its options are read. Sharing it in
        // an `Arc` cloned per record cost two atomic operations per record: q0 took 3-4%
        // less user time without them.
        let placeholder = TextFormat::Json(JsonOptions {
            fail_on_missing_field: false,
            ignore_parse_errors: false,
            timestamp_style: TimestampStyle::Sql,
        });
        let format = std::mem::replace(&mut self.format, placeholder);
        let decoded = match &format {
            TextFormat::Csv(options) => self.csv_record(record, options, location),
            TextFormat::Json(options) => self.json_record(record, options, location),
        };
        self.format = format;
        let decoded = decoded?;
        if decoded {
            self.rows += 1;
        }
        Ok(decoded)
    }

    /// Appends a row holding only key columns: `keys[i]` is the text of column `i` (`None`:
    /// not a key column, or a NULL key value), every other column is NULL. An upsert tombstone
    /// carries its key this way (the text as a key's value is written, e.g. `42`).
    pub fn append_key_row(
        &mut self,
        keys: &[Option<&str>],
        location: &dyn Fn() -> String,
    ) -> Result<()> {
        for (i, builder) in self.builders.iter_mut().enumerate() {
            let Some(text) = keys.get(i).copied().flatten() else {
                builder.append_null();
                continue;
            };
            builder
                .append_text(text, CSV_TIMESTAMP_STYLE)
                .map_err(|e| {
                    ConnectorError::new(format!(
                        "message key '{text}' of table '{}' at {}: field '{}': {e}",
                        self.table,
                        location(),
                        self.schema.field(i).name()
                    ))
                })?;
        }
        self.rows += 1;
        Ok(())
    }

    fn csv_record(
        &mut self,
        record: &str,
        options: &CsvOptions,
        location: &dyn Fn() -> String,
    ) -> Result<bool> {
        // Most records have no quotes or escapes: their fields are borrowed as they are.
        if let Some((delimiters, mut fields)) = plain_fields(record, options) {
            if delimiters < self.builders.len() {
                for i in 0..self.builders.len() {
                    self.csv_field(i, fields.next(), record, options, location)?;
                }
                return Ok(true);
            }
        }
        let fields = split_record(record, options);
        let row_error = match &fields {
            None => Some("unclosed quote".to_string()),
            Some(f) if f.len() > self.builders.len() => Some(format!(
                "Too many entries: expected at most {} (value #{})",
                self.builders.len(),
                self.builders.len()
            )),
            Some(_) => None,
        };
        if let Some(message) = row_error {
            return self.row_error(&message, record, options.ignore_parse_errors, location);
        }
        let fields = fields.unwrap_or_default();
        for i in 0..self.builders.len() {
            let text = fields.get(i).map(|f| f.text.as_str());
            self.csv_field(i, text, record, options, location)?;
        }
        Ok(true)
    }

    /// Appends CSV field `text` (`None`: the record has fewer fields) to column `column`.
    fn csv_field(
        &mut self,
        column: usize,
        text: Option<&str>,
        record: &str,
        options: &CsvOptions,
        location: &dyn Fn() -> String,
    ) -> Result<()> {
        let builder = &mut self.builders[column];
        let Some(text) = text else {
            builder.append_null();
            return Ok(());
        };
        if options.null_literal.as_deref() == Some(text) {
            builder.append_null();
            return Ok(());
        }
        if let Err(e) =
            builder.append_csv_text(text, &options.array_element_delimiter, CSV_TIMESTAMP_STYLE)
        {
            if !options.ignore_parse_errors {
                return Err(ConnectorError::new(format!(
                    "Failed to deserialize CSV row '{record}' of table '{}' at {}: field '{}': {e}",
                    self.table,
                    location(),
                    self.schema.field(column).name()
                )));
            }
            self.null_fields += 1;
        }
        Ok(())
    }

    fn json_record(
        &mut self,
        record: &str,
        options: &JsonOptions,
        location: &dyn Fn() -> String,
    ) -> Result<bool> {
        // Taken for the record, so that the builders can be appended to while it is read.
        let Some(mut scan) = self.json_scan.take() else {
            return self.json_record_parsed(record, options, location);
        };
        let decoded = if scan_record(record, &scan.tree, &mut scan.spans) {
            let scanned = ScannedRecord {
                record,
                tree: &scan.tree,
                spans: &scan.spans,
            };
            self.append_scanned(&scanned, options, location)
        } else {
            self.json_record_parsed(record, options, location)
        };
        self.json_scan = Some(scan);
        decoded
    }

    /// Appends the fields of a record the scanner vouched for.
    fn append_scanned(
        &mut self,
        scanned: &ScannedRecord<'_>,
        options: &JsonOptions,
        location: &dyn Fn() -> String,
    ) -> Result<bool> {
        if options.fail_on_missing_field {
            if let Some(i) = scanned.spans[..self.builders.len()]
                .iter()
                .zip(&self.checked)
                .position(|(s, checked)| *checked && *s == Span::ABSENT)
            {
                let message = format!(
                    "Could not find field with name '{}'.",
                    self.schema.field(i).name()
                );
                return self.row_error(
                    &message,
                    scanned.record,
                    options.ignore_parse_errors,
                    location,
                );
            }
        }
        for i in 0..self.builders.len() {
            let appended =
                self.builders[i].append_json_scanned(scanned, 0, i, options.timestamp_style);
            self.json_field_outcome(i, appended, scanned.record, options, location)?;
        }
        Ok(true)
    }

    /// The general path of [`RowDecoder::json_record`], for records the scanner does not
    /// vouch for: parse the whole record, then take the fields from the parsed object.
    fn json_record_parsed(
        &mut self,
        record: &str,
        options: &JsonOptions,
        location: &dyn Fn() -> String,
    ) -> Result<bool> {
        let value: serde_json::Value = match serde_json::from_str(record) {
            Ok(v) => v,
            Err(e) => {
                return self.row_error(
                    &format!("invalid JSON: {e}"),
                    record,
                    options.ignore_parse_errors,
                    location,
                )
            }
        };
        let Some(object) = value.as_object() else {
            return self.row_error(
                "not a JSON object",
                record,
                options.ignore_parse_errors,
                location,
            );
        };
        if options.fail_on_missing_field {
            if let Some(missing) = self
                .schema
                .fields()
                .iter()
                .zip(&self.checked)
                .find(|(f, checked)| **checked && !object.contains_key(f.name()))
                .map(|(f, _)| f)
            {
                let message = format!("Could not find field with name '{}'.", missing.name());
                return self.row_error(&message, record, options.ignore_parse_errors, location);
            }
        }
        for i in 0..self.builders.len() {
            let name = self.schema.field(i).name();
            let value = object.get(name).unwrap_or(&serde_json::Value::Null);
            let appended = self.builders[i].append_json(value, options.timestamp_style);
            self.json_field_outcome(i, appended, record, options, location)?;
        }
        Ok(true)
    }

    /// Turns a failed JSON field into the record's error, or counts it when errors are ignored
    /// (the builder already holds NULL for it).
    #[inline(always)]
    fn json_field_outcome(
        &mut self,
        column: usize,
        appended: std::result::Result<(), String>,
        record: &str,
        options: &JsonOptions,
        location: &dyn Fn() -> String,
    ) -> Result<()> {
        match appended {
            Ok(()) => Ok(()),
            Err(e) => self.json_field_failed(column, e, record, options, location),
        }
    }

    /// The failing case of [`RowDecoder::json_field_outcome`], kept out of the per-field path.
    #[cold]
    fn json_field_failed(
        &mut self,
        column: usize,
        e: String,
        record: &str,
        options: &JsonOptions,
        location: &dyn Fn() -> String,
    ) -> Result<()> {
        if !options.ignore_parse_errors {
            return Err(ConnectorError::new(format!(
                "Failed to deserialize JSON '{record}' of table '{}' at {}: field '{}': {e}",
                self.table,
                location(),
                self.schema.field(column).name()
            )));
        }
        self.null_fields += 1;
        Ok(())
    }

    fn row_error(
        &mut self,
        message: &str,
        record: &str,
        ignore: bool,
        location: &dyn Fn() -> String,
    ) -> Result<bool> {
        if ignore {
            self.skipped_rows += 1;
            return Ok(false);
        }
        Err(ConnectorError::new(format!(
            "Failed to deserialize row '{record}' of table '{}' at {}: {message}",
            self.table,
            location()
        )))
    }

    /// The rows decoded so far as one batch (possibly empty); starts a new batch.
    pub fn flush(&mut self) -> Result<RecordBatch> {
        let mut columns = Vec::with_capacity(self.builders.len());
        for b in &mut self.builders {
            columns.push(b.finish().map_err(ConnectorError::new)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        self.rows = 0;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?)
    }

    /// Reports (once, on stderr) how many rows `ignore-parse-errors` skipped or nulled.
    pub fn report_ignored(&mut self) {
        if self.skipped_rows > 0 || self.null_fields > 0 {
            eprintln!(
                "riffle: table '{}': {} malformed row(s) skipped, {} field(s) set to NULL (ignore-parse-errors)",
                self.table, self.skipped_rows, self.null_fields
            );
            self.skipped_rows = 0;
            self.null_fields = 0;
        }
    }
}

/// Encodes rows as records in Flink's CSV or JSON text form.
pub struct RowEncoder {
    names: Vec<String>,
    format: TextFormat,
}

impl RowEncoder {
    /// An encoder for columns named `names`.
    pub fn new(names: Vec<String>, format: TextFormat) -> Self {
        Self { names, format }
    }

    /// Appends row `row` of `columns` (without a line terminator) to `out`.
    pub fn encode(&self, columns: &[&dyn Array], row: usize, out: &mut String) {
        match &self.format {
            TextFormat::Json(_) => {
                out.push('{');
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let name = self.names.get(i).cloned().unwrap_or_default();
                    out.push_str(&serde_json::Value::String(name).to_string());
                    out.push(':');
                    if column.is_null(row) {
                        out.push_str("null");
                    } else {
                        self.value(*column, row, out);
                    }
                }
                out.push('}');
            }
            TextFormat::Csv(o) => {
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        out.push(o.field_delimiter);
                    }
                    if column.is_null(row) {
                        out.push_str(o.null_literal.as_deref().unwrap_or_default());
                    } else {
                        self.value(*column, row, out);
                    }
                }
            }
        }
    }

    /// Appends one non-null value in the text form of Flink's CSV / JSON formats.
    fn value(&self, array: &dyn Array, row: usize, out: &mut String) {
        let iso =
            matches!(&self.format, TextFormat::Json(o) if o.timestamp_style == TimestampStyle::Iso);
        let mut text = String::new();
        let quoted = match array.data_type() {
            DataType::Utf8 | DataType::Date32 | DataType::Time32(_) | DataType::Timestamp(..) => {
                if !crate::format::write_sql_temporal(&mut text, array, row, iso) {
                    crate::format::write_value(&mut text, array, row);
                }
                true
            }
            _ => {
                crate::format::write_value(&mut text, array, row);
                false
            }
        };
        match &self.format {
            TextFormat::Json(_) if quoted => {
                out.push_str(&serde_json::Value::String(text).to_string())
            }
            TextFormat::Json(_) => out.push_str(&text),
            TextFormat::Csv(o) => {
                let needs_quotes = o.quote.is_some()
                    && (text.contains(o.field_delimiter)
                        || o.quote.is_some_and(|q| text.contains(q))
                        || text.contains(['\n', '\r']));
                match o.quote {
                    Some(q) if needs_quotes => {
                        out.push(q);
                        out.push_str(&text.replace(q, &format!("{q}{q}")));
                        out.push(q);
                    }
                    _ => out.push_str(&text),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow::array::{AsArray, StructArray};
    use arrow::datatypes::{Field, Fields, Int64Type, Schema};

    fn nested_schema() -> SchemaRef {
        let inner = Fields::from(vec![
            Field::new("z", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let row = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Struct(inner), true),
            Field::new(
                "t",
                DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
                true,
            ),
        ]);
        Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("r", DataType::Struct(row), true),
            Field::new("s", DataType::Utf8, true),
        ]))
    }

    fn decoder(fail_on_missing_field: bool) -> RowDecoder {
        let options = JsonOptions {
            fail_on_missing_field,
            ignore_parse_errors: !fail_on_missing_field,
            timestamp_style: TimestampStyle::Sql,
        };
        RowDecoder::new(
            "t",
            nested_schema(),
            TextFormat::Json(options),
            Projection::ALL,
        )
        .unwrap()
    }

    /// The scanned path (one pass, ROW members from the same pass) gives exactly what parsing
    /// the record with `serde_json` gives, NULLs and field errors included.
    #[test]
    fn scanned_records_decode_like_parsed_records() {
        let records = [
            r#"{"a": 1, "r": {"x": 2, "y": {"z": "q\"\\/\n\t\b\f\r", "n": 3}, "t": "2024-01-01 00:00:00"}, "s": "plain"}"#,
            r#"{"s": "order", "r": {"t": null, "y": {"n": -4, "z": "w"}, "x": 5}, "a": 6}"#,
            r#"{"a": 7, "r": null, "s": null}"#,
            r#"{"a": 8}"#,
            r#"{"a": 9, "r": {"y": {"z": "first", "n": 1}, "y": {"n": 2}}}"#,
            r#"{"a": 10, "r": {"y": {"z": "kept"}, "y": null}}"#,
            r#"{"a": 11, "r": {"x": "not a number", "y": {"n": "12"}}}"#,
            r#"{"a": 12, "r": [1, 2], "skip": {"deep": [{"r": 1}]}}"#,
            r#"{"a": 13, "r": {"x": 1, "y": 5}, "s": "\u0041"}"#,
            r#"{"a": 14, "r": {"x": 1, "extra": {"y": 1}}, "a": 15}"#,
            r#"{"a": "16", "r": {"x": 17, "t": "2024-01-01T00:00:00"}, "s": 18}"#,
            r#"{"a": 19, "r": "not an object", "s": {"k": "v"}}"#,
            r#"{"a": 20, "r": {"x": 3000000000, "t": " 2024-01-01 00:00:00.5 "}}"#,
            r#"{"a": 21, "r": {"x": -7, "t": "2024-02-30 00:00:00"}}"#,
            r#"{"a": 22, "r": {"x": 1.5, "t": "2024-01-01 23:59:59.123456"}}"#,
            r#"{"a": 23, "s": "\\starts, \"quotes\" in the middle, ends\\"}"#,
            r#"{"a": 24, "s": "\n\n", "r": {"y": {"z": "é \\ ü"}}}"#,
            r#"{"a": 25, "s": "ünïcödé\tand an escape"}"#,
        ];
        let mut scanned = decoder(false);
        let mut parsed = decoder(false);
        let TextFormat::Json(options) = parsed.format().clone() else {
            unreachable!("a JSON decoder")
        };
        let here = || "here".to_string();
        // Each record also without whitespace after its commas and colons, as most producers
        // write JSON: the scanner then matches `,"name":` in one comparison.
        let compact: Vec<String> = records
            .iter()
            .map(|r| r.replace(", ", ",").replace(": ", ":"))
            .collect();
        for record in records
            .into_iter()
            .chain(compact.iter().map(String::as_str))
        {
            let fast = scanned.decode(record, &here).unwrap();
            let slow = parsed.json_record_parsed(record, &options, &here).unwrap();
            assert_eq!(fast, slow, "{record}");
            if slow {
                parsed.rows += 1;
            }
        }
        assert_eq!(scanned.flush().unwrap(), parsed.flush().unwrap());
        assert_eq!(
            (scanned.skipped_rows, scanned.null_fields),
            (parsed.skipped_rows, parsed.null_fields)
        );
        assert!(scanned.null_fields > 0, "some field errors were exercised");
    }

    #[test]
    fn missing_top_level_fields_fail_when_asked_to() {
        let mut d = decoder(true);
        let here = || "here".to_string();
        let err = d.decode(r#"{"a": 1, "r": {}}"#, &here).unwrap_err();
        assert!(
            err.to_string()
                .contains("Could not find field with name 's'"),
            "{err}"
        );
        assert!(d.decode(r#"{"a": 1, "r": {}, "s": null}"#, &here).unwrap());
    }

    /// A decoder reading `paths` only, failing on bad values and missing fields.
    fn reading(paths: &[&[&str]], skip_unread_columns: bool) -> RowDecoder {
        let options = JsonOptions {
            fail_on_missing_field: true,
            ignore_parse_errors: false,
            timestamp_style: TimestampStyle::Sql,
        };
        let read: Vec<Vec<String>> = paths
            .iter()
            .map(|p| p.iter().map(|n| n.to_string()).collect())
            .collect();
        let projection = Projection {
            read_columns: Some(&read),
            skip_unread_columns,
        };
        RowDecoder::new("t", nested_schema(), TextFormat::Json(options), projection).unwrap()
    }

    #[test]
    fn unread_strings_are_left_null_and_what_is_read_is_decoded_as_before() {
        let here = || "here".to_string();
        for skip_unread_columns in [false, true] {
            let mut d = reading(&[&["a"], &["r", "x"]], skip_unread_columns);
            let record =
                r#"{"a": 1, "r": {"x": 2, "y": {"z": "zz", "n": 3}, "t": null}, "s": "ss"}"#;
            assert!(d.decode(record, &here).unwrap());
            let batch = d.flush().unwrap();
            let mut all = decoder(true);
            all.decode(record, &here).unwrap();
            let expected = all.flush().unwrap();
            assert_eq!(batch.column(0), expected.column(0));
            let row = batch
                .column(1)
                .as_any()
                .downcast_ref::<StructArray>()
                .unwrap();
            let expected_row = expected
                .column(1)
                .as_any()
                .downcast_ref::<StructArray>()
                .unwrap();
            assert_eq!(row.column(0), expected_row.column(0), "r.x is read");
            let y = row
                .column(1)
                .as_any()
                .downcast_ref::<StructArray>()
                .unwrap();
            assert!(y.is_valid(0), "an unread ROW field is still converted");
            assert!(y.column(0).is_null(0), "its unread string is not");
            assert_eq!(y.column(1).as_primitive::<Int64Type>().value(0), 3);
            assert!(
                batch.column(2).is_null(0),
                "the unread string column is not converted"
            );
        }
    }

    #[test]
    fn unread_columns_are_not_converted_or_checked_only_where_asked() {
        let here = || "here".to_string();
        let decode = |paths: &[&[&str]], skip: bool, record: &str| {
            reading(paths, skip)
                .decode(record, &here)
                .map_err(|e| e.to_string())
        };
        // `a` is not read: not converted only where unread columns are skipped.
        let bad_a = r#"{"a": "x", "r": null, "s": "v"}"#;
        assert!(decode(&[&["s"]], false, bad_a).is_err());
        assert_eq!(decode(&[&["s"]], true, bad_a), Ok(true));
        // `s` is not read: missing, it fails only where unread columns are checked.
        let no_s = r#"{"a": 1, "r": {"x": 1, "y": null, "t": null}}"#;
        let read = [&["a"][..], &["r", "x"]];
        let err = decode(&read, false, no_s).unwrap_err();
        assert!(err.contains("Could not find field with name 's'"), "{err}");
        assert_eq!(decode(&read, true, no_s), Ok(true));
        // `r` is read (one field of it): all of it is converted either way.
        let bad_r_y = r#"{"a": 1, "r": {"x": 2, "y": {"n": "x"}, "t": null}, "s": null}"#;
        assert!(decode(&read, false, bad_r_y).is_err());
        assert!(decode(&read, true, bad_r_y).is_err());
    }
}
