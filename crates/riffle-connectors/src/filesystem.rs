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

use crate::csv::{is_skipped_line, split_record};
use crate::options::Options;
use crate::rows::{is_writable_text_type, RowDecoder, RowEncoder, TextFormat};
use crate::{ConnectorError, Result, SourceReader, SubtaskInfo, BATCH_SIZE};

/// Reads the required `format` option and its format options.
fn text_format(spec: &ConnectorSpec, options: &mut Options) -> Result<TextFormat> {
    let name = options.required("format")?;
    TextFormat::from_options(name, options)?.ok_or_else(|| {
        ConnectorError::new(format!(
            "unsupported feature: format '{name}' of the filesystem connector (table '{}')",
            spec.table
        ))
    })
}

/// Opens the filesystem source subtask `subtask`.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let path = PathBuf::from(options.required("path")?);
    let format = text_format(spec, &mut options)?;
    if options.get("source.monitor-discovery-interval").is_some() {
        return Err(ConnectorError::new(format!(
            "unsupported feature: 'source.monitor-discovery-interval' (continuous file monitoring) of table '{}'",
            spec.table
        )));
    }
    // Flink's filesystem connector does not reject unknown options of the chosen format.
    options.keys_with_prefix(&format!("{}.", format.name()));
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
    let decoder = RowDecoder::new(&spec.table, schema, format)?;
    Ok(Box::new(FileSource {
        files: mine.into_iter().rev().collect(),
        current: None,
        decoder,
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
    /// Files still to read (next one last).
    files: Vec<PathBuf>,
    current: Option<(PathBuf, BufReader<File>, u64)>,
    decoder: RowDecoder,
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
}

impl SourceReader for FileSource {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut line = String::new();
        while self.decoder.rows() < BATCH_SIZE {
            if !self.next_line(&mut line)? {
                break;
            }
            if let TextFormat::Csv(options) = self.decoder.format() {
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
            let location = self.location();
            self.decoder
                .decode(line.trim_end_matches(['\n', '\r']), &|| location.clone())?;
        }
        if self.decoder.rows() == 0 {
            self.decoder.report_ignored();
            return Ok(None);
        }
        self.decoder.flush().map(Some)
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
    let format = text_format(spec, &mut options)?;
    options.keys_with_prefix(&format!("{}.", format.name()));
    options.keys_with_prefix("sink.");
    options.accept("auto-compaction");
    options.accept("compaction.file-size");
    options.finish()?;
    for f in fields {
        if !is_writable_text_type(&f.arrow().map_err(ConnectorError::from)?) {
            return Err(ConnectorError::new(format!(
                "unsupported feature: writing column '{}' of type {} to a filesystem table",
                f.name, f.data_type
            )));
        }
    }
    std::fs::create_dir_all(&path)
        .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", path.display())))?;
    let file = path.join(format!("part-{}-0.{}", subtask.index, format.name()));
    let writer = std::fs::File::create(&file)
        .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", file.display())))?;
    Ok(Box::new(FileSink {
        encoder: RowEncoder::new(fields.iter().map(|f| f.name.clone()).collect(), format),
        out: std::io::BufWriter::new(writer),
        line: String::new(),
    }))
}

struct FileSink {
    encoder: RowEncoder,
    out: std::io::BufWriter<File>,
    line: String,
}

impl crate::SinkWriter for FileSink {
    fn write(&mut self, batch: &crate::ChangeBatch) -> Result<()> {
        use std::io::Write;
        let columns: Vec<&dyn arrow::array::Array> =
            batch.batch.columns().iter().map(|c| c.as_ref()).collect();
        for row in 0..batch.num_rows() {
            self.line.clear();
            self.encoder.encode(&columns, row, &mut self.line);
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
