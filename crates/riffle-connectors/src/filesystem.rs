//! The `filesystem` connector: a bounded source over a file or a directory of files, in the
//! `csv` or `json` format.
//!
//! Files of a directory are read in name order (hidden files and files starting with `_` or `.`
//! are skipped, as Flink does) and spread over the source subtasks round-robin.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use riffle_plan::ConnectorSpec;

use crate::csv::{is_skipped_line, split_record, CsvOptions, CSV_TIMESTAMP_STYLE};
use crate::json::JsonOptions;
use crate::options::Options;
use crate::text::ColumnBuilder;
use crate::{ConnectorError, Result, SourceReader, SubtaskInfo, BATCH_SIZE};

/// The record format of a filesystem table.
#[derive(Debug, Clone)]
enum Format {
    Csv(CsvOptions),
    Json(JsonOptions),
}

/// Opens the filesystem source subtask `subtask`.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let path = PathBuf::from(options.required("path")?);
    let format = match options.required("format")? {
        "csv" => Format::Csv(CsvOptions::from_options(&mut options)?),
        "json" => Format::Json(JsonOptions::from_options(&mut options)?),
        other => {
            return Err(ConnectorError::new(format!(
                "unsupported feature: format '{other}' of the filesystem connector (table '{}')",
                spec.table
            )))
        }
    };
    if options.get("source.monitor-discovery-interval").is_some() {
        return Err(ConnectorError::new(format!(
            "unsupported feature: 'source.monitor-discovery-interval' (continuous file monitoring) of table '{}'",
            spec.table
        )));
    }
    // Flink's filesystem connector does not reject unknown options of the chosen format.
    let format_prefix = match &format {
        Format::Csv(_) => "csv.",
        Format::Json(_) => "json.",
    };
    options.keys_with_prefix(format_prefix);
    options.accept("partition.default-name");
    options.accept("source.path.regex-pattern");
    options.finish()?;
    let files = list_files(&path)?;
    let mine: Vec<PathBuf> = files
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % subtask.parallelism.max(1) == subtask.index)
        .map(|(_, f)| f)
        .collect();
    let builders = schema
        .fields()
        .iter()
        .map(|f| {
            ColumnBuilder::new(f.data_type()).map_err(|t| {
                ConnectorError::new(format!(
                    "unsupported feature: column '{}' of type {t} in a {} file (table '{}')",
                    f.name(),
                    match &format {
                        Format::Csv(_) => "csv",
                        Format::Json(_) => "json",
                    },
                    spec.table
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(FileSource {
        table: spec.table.clone(),
        schema,
        format,
        files: mine.into_iter().rev().collect(),
        current: None,
        builders,
        rows: 0,
        skipped_rows: 0,
        null_fields: 0,
    }))
}

/// The files under `path` (the path itself when it is a file), sorted.
fn list_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| ConnectorError::new(format!("File {} does not exist or the user running Riffle has insufficient permissions to access it ({e}).", path.display())))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| ConnectorError::new(format!("cannot list {}: {e}", dir.display())))?;
        for entry in entries {
            let entry = entry
                .map_err(|e| ConnectorError::new(format!("cannot list {}: {e}", dir.display())))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

struct FileSource {
    table: String,
    schema: SchemaRef,
    format: Format,
    /// Files still to read (next one last).
    files: Vec<PathBuf>,
    current: Option<(PathBuf, BufReader<File>, u64)>,
    builders: Vec<ColumnBuilder>,
    rows: usize,
    skipped_rows: u64,
    null_fields: u64,
}

impl FileSource {
    fn next_line(&mut self, line: &mut String) -> Result<bool> {
        loop {
            if self.current.is_none() {
                let Some(path) = self.files.pop() else {
                    return Ok(false);
                };
                let file = File::open(&path).map_err(|e| {
                    ConnectorError::new(format!("cannot open {}: {e}", path.display()))
                })?;
                self.current = Some((path, BufReader::new(file), 0));
            }
            let Some((path, reader, line_no)) = self.current.as_mut() else {
                continue;
            };
            line.clear();
            let n = reader
                .read_line(line)
                .map_err(|e| ConnectorError::new(format!("cannot read {}: {e}", path.display())))?;
            if n == 0 {
                self.current = None;
                continue;
            }
            *line_no += 1;
            return Ok(true);
        }
    }

    fn location(&self) -> String {
        match &self.current {
            Some((p, _, n)) => format!("{}:{n}", p.display()),
            None => String::new(),
        }
    }

    /// Parses one record into the builders; `Ok(false)` when it was skipped.
    fn record(&mut self, line: &str) -> Result<bool> {
        match &self.format {
            Format::Csv(options) => {
                let options = options.clone();
                self.csv_record(line, &options)
            }
            Format::Json(options) => {
                let options = options.clone();
                self.json_record(line, &options)
            }
        }
    }

    fn csv_record(&mut self, line: &str, options: &CsvOptions) -> Result<bool> {
        let record = line.trim_end_matches(['\n', '\r']);
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
            return self.row_error(&message, record, options.ignore_parse_errors);
        }
        let fields = fields.unwrap_or_default();
        for (i, builder) in self.builders.iter_mut().enumerate() {
            let Some(field) = fields.get(i) else {
                builder.append_null();
                continue;
            };
            if options.null_literal.as_deref() == Some(field.text.as_str()) {
                builder.append_null();
                continue;
            }
            if let Err(e) = builder.append_text(&field.text, CSV_TIMESTAMP_STYLE) {
                if !options.ignore_parse_errors {
                    return Err(ConnectorError::new(format!(
                        "Failed to deserialize CSV row '{record}' of table '{}' at {}: field '{}': {e}",
                        self.table,
                        self.location(),
                        self.schema.field(i).name()
                    )));
                }
                builder.append_null();
                self.null_fields += 1;
            }
        }
        Ok(true)
    }

    fn json_record(&mut self, line: &str, options: &JsonOptions) -> Result<bool> {
        let record = line.trim_end_matches(['\n', '\r']);
        let value: serde_json::Value = match serde_json::from_str(record) {
            Ok(v) => v,
            Err(e) => {
                return self.row_error(
                    &format!("invalid JSON: {e}"),
                    record,
                    options.ignore_parse_errors,
                )
            }
        };
        let Some(object) = value.as_object() else {
            return self.row_error("not a JSON object", record, options.ignore_parse_errors);
        };
        if options.fail_on_missing_field {
            if let Some(missing) = self
                .schema
                .fields()
                .iter()
                .find(|f| !object.contains_key(f.name()))
            {
                let message = format!("Could not find field with name '{}'.", missing.name());
                return self.row_error(&message, record, options.ignore_parse_errors);
            }
        }
        for (i, builder) in self.builders.iter_mut().enumerate() {
            let name = self.schema.field(i).name();
            let text = match object.get(name) {
                None | Some(serde_json::Value::Null) => {
                    builder.append_null();
                    continue;
                }
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            if let Err(e) = builder.append_text(&text, options.timestamp_style) {
                if !options.ignore_parse_errors {
                    return Err(ConnectorError::new(format!(
                        "Failed to deserialize JSON '{record}' of table '{}' at {}: field '{name}': {e}",
                        self.table,
                        self.location()
                    )));
                }
                builder.append_null();
                self.null_fields += 1;
            }
        }
        Ok(true)
    }

    fn row_error(&mut self, message: &str, record: &str, ignore: bool) -> Result<bool> {
        if ignore {
            self.skipped_rows += 1;
            return Ok(false);
        }
        Err(ConnectorError::new(format!(
            "Failed to deserialize row '{record}' of table '{}' at {}: {message}",
            self.table,
            self.location()
        )))
    }

    fn flush(&mut self) -> Result<RecordBatch> {
        let mut columns = Vec::with_capacity(self.builders.len());
        for b in &mut self.builders {
            columns.push(b.finish().map_err(ConnectorError::new)?);
        }
        let options =
            arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(self.rows));
        self.rows = 0;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?)
    }
}

impl SourceReader for FileSource {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut line = String::new();
        while self.rows < BATCH_SIZE {
            if !self.next_line(&mut line)? {
                break;
            }
            if let Format::Csv(options) = &self.format {
                if is_skipped_line(&line, options) {
                    continue;
                }
                // A quoted field may span lines: keep reading until the quotes close.
                let options = options.clone();
                while split_record(line.trim_end_matches(['\n', '\r']), &options).is_none() {
                    let mut more = String::new();
                    if !self.next_line(&mut more)? {
                        break;
                    }
                    line.push_str(&more);
                }
            } else if line.trim().is_empty() {
                continue;
            }
            if self.record(&line)? {
                self.rows += 1;
            }
        }
        if self.rows == 0 {
            if self.skipped_rows > 0 || self.null_fields > 0 {
                eprintln!(
                    "riffle: table '{}': {} malformed row(s) skipped, {} field(s) set to NULL (ignore-parse-errors)",
                    self.table, self.skipped_rows, self.null_fields
                );
                self.skipped_rows = 0;
                self.null_fields = 0;
            }
            return Ok(None);
        }
        self.flush().map(Some)
    }
}

/// Opens the filesystem sink subtask `subtask`: rows go to `<path>/part-<subtask>-0.<format>`
/// in Flink's CSV or JSON text form. Only appends (`+I`) are written; the planner rejects
/// updating input for this sink.
pub fn open_sink(
    spec: &ConnectorSpec,
    fields: &[riffle_plan::Field],
    subtask: SubtaskInfo,
) -> Result<Box<dyn crate::SinkWriter>> {
    let mut options = Options::new(spec);
    let path = PathBuf::from(options.required("path")?);
    let format = match options.required("format")? {
        "csv" => Format::Csv(CsvOptions::from_options(&mut options)?),
        "json" => Format::Json(JsonOptions::from_options(&mut options)?),
        other => {
            return Err(ConnectorError::new(format!(
                "unsupported feature: format '{other}' of the filesystem connector (table '{}')",
                spec.table
            )))
        }
    };
    let format_prefix = match &format {
        Format::Csv(_) => "csv.",
        Format::Json(_) => "json.",
    };
    options.keys_with_prefix(format_prefix);
    options.keys_with_prefix("sink.");
    options.accept("auto-compaction");
    options.accept("compaction.file-size");
    options.finish()?;
    for f in fields {
        let supported = matches!(
            f.arrow().map_err(ConnectorError::from)?,
            arrow::datatypes::DataType::Utf8
                | arrow::datatypes::DataType::Boolean
                | arrow::datatypes::DataType::Int8
                | arrow::datatypes::DataType::Int16
                | arrow::datatypes::DataType::Int32
                | arrow::datatypes::DataType::Int64
                | arrow::datatypes::DataType::Float32
                | arrow::datatypes::DataType::Float64
                | arrow::datatypes::DataType::Decimal128(..)
                | arrow::datatypes::DataType::Date32
                | arrow::datatypes::DataType::Time32(_)
                | arrow::datatypes::DataType::Timestamp(..)
        );
        if !supported {
            return Err(ConnectorError::new(format!(
                "unsupported feature: writing column '{}' of type {} to a filesystem table",
                f.name, f.data_type
            )));
        }
    }
    std::fs::create_dir_all(&path)
        .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", path.display())))?;
    let extension = match &format {
        Format::Csv(_) => "csv",
        Format::Json(_) => "json",
    };
    let file = path.join(format!("part-{}-0.{extension}", subtask.index));
    let writer = std::fs::File::create(&file)
        .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", file.display())))?;
    Ok(Box::new(FileSink {
        names: fields.iter().map(|f| f.name.clone()).collect(),
        format,
        out: std::io::BufWriter::new(writer),
        line: String::new(),
    }))
}

struct FileSink {
    names: Vec<String>,
    format: Format,
    out: std::io::BufWriter<File>,
    line: String,
}

impl FileSink {
    /// Appends one value in the text form of Flink's CSV / JSON formats.
    fn value(&mut self, array: &dyn arrow::array::Array, row: usize) {
        use arrow::datatypes::DataType;
        let iso = matches!(&self.format, Format::Json(o) if o.timestamp_style == crate::text::TimestampStyle::Iso);
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
            Format::Json(_) if quoted => self
                .line
                .push_str(&serde_json::Value::String(text).to_string()),
            Format::Json(_) => self.line.push_str(&text),
            Format::Csv(o) => {
                let needs_quotes = o.quote.is_some()
                    && (text.contains(o.field_delimiter)
                        || o.quote.is_some_and(|q| text.contains(q))
                        || text.contains(['\n', '\r']));
                match o.quote {
                    Some(q) if needs_quotes => {
                        self.line.push(q);
                        self.line.push_str(&text.replace(q, &format!("{q}{q}")));
                        self.line.push(q);
                    }
                    _ => self.line.push_str(&text),
                }
            }
        }
    }
}

impl crate::SinkWriter for FileSink {
    fn write(&mut self, batch: &crate::ChangeBatch) -> Result<()> {
        use std::io::Write;
        let columns = batch.batch.columns().to_vec();
        for row in 0..batch.num_rows() {
            self.line.clear();
            match &self.format {
                Format::Json(_) => {
                    self.line.push('{');
                    for (i, column) in columns.iter().enumerate() {
                        if i > 0 {
                            self.line.push(',');
                        }
                        let name = self.names.get(i).cloned().unwrap_or_default();
                        self.line
                            .push_str(&serde_json::Value::String(name).to_string());
                        self.line.push(':');
                        if column.is_null(row) {
                            self.line.push_str("null");
                        } else {
                            self.value(column.as_ref(), row);
                        }
                    }
                    self.line.push('}');
                }
                Format::Csv(o) => {
                    let (delimiter, null) = (
                        o.field_delimiter,
                        o.null_literal.clone().unwrap_or_default(),
                    );
                    for (i, column) in columns.iter().enumerate() {
                        if i > 0 {
                            self.line.push(delimiter);
                        }
                        if column.is_null(row) {
                            self.line.push_str(&null);
                        } else {
                            self.value(column.as_ref(), row);
                        }
                    }
                }
            }
            self.line.push('\n');
            self.out
                .write_all(self.line.as_bytes())
                .map_err(|e| ConnectorError::new(format!("filesystem sink: {e}")))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        use std::io::Write;
        self.out
            .flush()
            .map_err(|e| ConnectorError::new(format!("filesystem sink: {e}")))
    }
}
