//! The `filesystem` connector: a bounded source over a file or a directory of files, in the
//! `csv`, `json`, `raw`, `debezium-json` or `canal-json` format (one record per line).
//!
//! Files of a directory are read in name order (hidden files and files starting with `_` or `.`
//! are skipped, as Flink does) and spread over the source subtasks round-robin. Each file is a
//! split: a checkpoint holds the lines read of every file started, so a job restored with
//! another parallelism hands each file's position to the subtask that now reads it. A
//! partitioned table (`PARTITIONED BY`) reads the files of its partition directories, the
//! partition columns coming from the directory names ([`crate::partitions`]). The sink is
//! [`crate::file_sink`].

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use riffle_plan::ConnectorSpec;

use crate::changelog::{ChangelogDecoder, ChangelogFormat};
use crate::csv::{has_open_quote, is_skipped_line, CsvOptions};
use crate::file_metadata::{FileColumns, FileFacts};
use crate::options::Options;
use crate::partitions::{PartitionColumns, Partitioning};
use crate::raw::{RawDecoder, RawOptions};
use crate::rows::{Projection, RowDecoder, TextFormat};
use crate::snapshot::{StateReader, StateWriter};
use crate::{ChangeBatch, ConnectorError, Result, SourceReader, SubtaskInfo, BATCH_SIZE};

/// The record format of a filesystem table's lines.
pub(crate) enum FileFormat {
    /// `csv` or `json`
    Text(TextFormat),
    /// `debezium-json` or `canal-json`
    Changelog(ChangelogFormat),
    /// `raw`
    Raw(RawOptions),
}

impl FileFormat {
    /// The format's name, which is also its option prefix without the dot.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            FileFormat::Text(f) => f.name(),
            FileFormat::Changelog(f) => f.name(),
            FileFormat::Raw(_) => crate::raw::NAME,
        }
    }

    /// The extension of part files the sink writes.
    pub(crate) fn extension(&self) -> &'static str {
        match self {
            FileFormat::Text(f) => f.name(),
            FileFormat::Changelog(_) => "json",
            FileFormat::Raw(_) => "txt",
        }
    }
}

/// Reads the required `format` option and its format options.
pub(crate) fn file_format(spec: &ConnectorSpec, options: &mut Options) -> Result<FileFormat> {
    let name = options.required("format")?;
    if let Some(text) = TextFormat::from_options(name, options)? {
        return Ok(FileFormat::Text(text));
    }
    if let Some(changelog) = ChangelogFormat::from_options(name, options)? {
        return Ok(FileFormat::Changelog(changelog));
    }
    if name == crate::raw::NAME {
        return Ok(FileFormat::Raw(RawOptions::from_options(options)?));
    }
    Err(ConnectorError::new(format!(
        "unsupported feature: format '{name}' of the filesystem connector (table '{}')",
        spec.table
    )))
}

/// Opens the filesystem source subtask `subtask`.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let path = PathBuf::from(options.required("path")?);
    let format = file_format(spec, &mut options)?;
    let (metadata, schema) = match FileColumns::new(spec, &schema)? {
        Some((columns, physical)) => (Some(columns), physical),
        None => (None, schema),
    };
    let partitioning = Partitioning::new(spec, &schema, &mut options)?;
    let (partition_columns, schema) = match &partitioning {
        Some(p) => {
            let (columns, file) = PartitionColumns::new(p, &schema);
            (Some(columns), file)
        }
        None => (None, schema),
    };
    if options.get("source.monitor-discovery-interval").is_some() {
        return Err(ConnectorError::new(format!(
            "unsupported feature: 'source.monitor-discovery-interval' (continuous file monitoring) of table '{}'",
            spec.table
        )));
    }
    // Flink's filesystem connector does not reject unknown options of the chosen format.
    options.keys_with_prefix(&format!("{}.", format.name()));
    options.accept("source.path.regex-pattern");
    // Flink validates a filesystem table's options for both roles: a table declared with its
    // sink options can be read too.
    options.keys_with_prefix("sink.");
    options.keys_with_prefix("partition.time-extractor.");
    options.accept("auto-compaction");
    options.accept("compaction.file-size");
    options.finish()?;
    let mut files = list_files(&path)?;
    let mut partition_values = HashMap::new();
    if let Some(partitioning) = &partitioning {
        // Only files in a partition directory belong to a partitioned table.
        let mut in_partitions = Vec::new();
        for file in files {
            let relative = file.strip_prefix(&path).unwrap_or(&file);
            if let Some(values) = partitioning.values_of(&spec.table, relative)? {
                partition_values.insert(file.clone(), values);
                in_partitions.push(file);
            }
        }
        files = in_partitions;
    }
    let mine: Vec<PathBuf> = files
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % subtask.parallelism.max(1) == subtask.index)
        .map(|(_, f)| f)
        .collect();
    let decoder = match format {
        FileFormat::Text(f) => {
            // As Flink's filesystem source, which pushes the projection into its format.
            let projection = Projection {
                read_columns: spec.read_columns.as_deref(),
                skip_unread_columns: true,
            };
            FileDecoder::Text(RowDecoder::new(&spec.table, schema, f, projection)?)
        }
        FileFormat::Changelog(f) => {
            FileDecoder::Changelog(ChangelogDecoder::new(&spec.table, schema, f)?)
        }
        FileFormat::Raw(o) => FileDecoder::Raw(RawDecoder::new(&spec.table, schema, o)?),
    };
    // The input's size, for progress (a file that cannot be asked counts as empty).
    let total_bytes = mine
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    Ok(Box::new(FileSource {
        total_bytes,
        bytes_read: 0,
        files: mine.into_iter().rev().collect(),
        current: None,
        decoder,
        finished: Vec::new(),
        skip: HashMap::new(),
        table: spec.table.clone(),
        metadata,
        file_facts: None,
        partition_columns,
        partition_values,
        current_partition: Vec::new(),
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

/// Bytes read from a file at a time.
const READ_BUFFER: usize = 1 << 18;

/// A file read in large blocks and cut into lines where they lie in the block: a line is not
/// copied, and its end is searched for once (with `memchr`).
struct LineReader {
    file: File,
    buffer: Vec<u8>,
    /// The bytes of `buffer` read from the file and not yet handed out as lines.
    pending: Range<usize>,
    /// The line handed out last.
    line: Range<usize>,
    /// The file has no more bytes.
    eof: bool,
    /// Every pending byte is ASCII (checked once per read, which is cheaper than checking
    /// each line's UTF-8): then every line cut from them is text as it stands.
    pending_ascii: bool,
}

impl LineReader {
    fn new(file: File) -> Self {
        LineReader {
            file,
            buffer: vec![0; READ_BUFFER],
            pending: 0..0,
            line: 0..0,
            eof: false,
            pending_ascii: true,
        }
    }

    /// Moves to the next line (with its `\n`; the file's last line may have none); false at
    /// the end of the file.
    fn advance(&mut self) -> std::io::Result<bool> {
        loop {
            let pending = &self.buffer[self.pending.clone()];
            let end = match memchr::memchr(b'\n', pending) {
                Some(i) => self.pending.start + i + 1,
                None if self.eof && pending.is_empty() => return Ok(false),
                None if self.eof => self.pending.end,
                None => {
                    self.fill()?;
                    continue;
                }
            };
            self.line = self.pending.start..end;
            self.pending.start = end;
            return Ok(true);
        }
    }

    /// The line [`LineReader::advance`] moved to.
    fn line(&self) -> &[u8] {
        &self.buffer[self.line.clone()]
    }

    /// The line [`LineReader::advance`] moved to as text; `None` when it is not UTF-8.
    fn line_text(&self) -> Option<&str> {
        let line = self.line();
        if self.pending_ascii {
            // SAFETY: the line lies within the pending bytes, which are all ASCII, and ASCII
            // is UTF-8.
            return Some(unsafe { std::str::from_utf8_unchecked(line) });
        }
        std::str::from_utf8(line).ok()
    }

    /// Reads more of the file after the pending bytes (moved to the front of the buffer; the
    /// buffer grows when a line does not fit it).
    fn fill(&mut self) -> std::io::Result<()> {
        self.buffer.copy_within(self.pending.clone(), 0);
        self.pending = 0..self.pending.len();
        if self.pending.end == self.buffer.len() {
            self.buffer.resize(self.buffer.len() * 2, 0);
        }
        loop {
            match self.file.read(&mut self.buffer[self.pending.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.pending.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.pending_ascii = self.buffer[self.pending.clone()].is_ascii();
            return Ok(());
        }
    }
}

/// The file being read.
struct OpenFile {
    path: PathBuf,
    reader: LineReader,
    /// Lines read so far (the number of the current line).
    lines: u64,
}

impl OpenFile {
    /// The current line as text; invalid UTF-8 is an error, as for any text file.
    fn text(&self) -> Result<&str> {
        self.reader.line_text().ok_or_else(|| {
            ConnectorError::new(format!(
                "cannot read {}: stream did not contain valid UTF-8",
                self.path.display()
            ))
        })
    }

    /// `path:line` of the current line, for errors.
    fn location(&self) -> String {
        format!("{}:{}", self.path.display(), self.lines)
    }
}

/// Decodes lines of one format.
enum FileDecoder {
    Text(RowDecoder),
    Changelog(ChangelogDecoder),
    Raw(RawDecoder),
}

impl FileDecoder {
    fn rows(&self) -> usize {
        match self {
            FileDecoder::Text(d) => d.rows(),
            FileDecoder::Changelog(d) => d.rows(),
            FileDecoder::Raw(d) => d.rows(),
        }
    }

    fn report_ignored(&mut self) {
        match self {
            FileDecoder::Text(d) => d.report_ignored(),
            FileDecoder::Changelog(d) => d.report_ignored(),
            FileDecoder::Raw(_) => {}
        }
    }

    fn flush(&mut self) -> Result<ChangeBatch> {
        match self {
            FileDecoder::Text(d) => d.flush().map(ChangeBatch::inserts),
            FileDecoder::Changelog(d) => d.flush(),
            FileDecoder::Raw(d) => d.flush().map(ChangeBatch::inserts),
        }
    }
}

struct FileSource {
    /// Files still to read (next one last).
    files: Vec<PathBuf>,
    current: Option<OpenFile>,
    decoder: FileDecoder,
    /// Files read to their end, with their number of lines.
    finished: Vec<(PathBuf, u64)>,
    /// Lines of a file already read before a restore, skipped when it is opened.
    skip: HashMap<PathBuf, u64>,
    table: String,
    /// The table's metadata columns, when it declares some.
    metadata: Option<FileColumns>,
    /// The facts of the file read last (with `metadata` only): a batch never spans files.
    file_facts: Option<FileFacts>,
    /// Bytes of the subtask's files.
    total_bytes: u64,
    /// Bytes read so far.
    bytes_read: u64,
    /// The partition columns, when the table is partitioned.
    partition_columns: Option<PartitionColumns>,
    /// The partition values of each file (partitioned tables only).
    partition_values: HashMap<PathBuf, Vec<String>>,
    /// The partition values of the file read last: a batch never spans files.
    current_partition: Vec<String>,
}

impl FileSource {
    /// Moves to the next line of the open file, opening the next file when none is open; false
    /// at the end of a file (a record never continues in the next file).
    fn next_line(&mut self) -> Result<bool> {
        if self.current.is_none() {
            let Some(path) = self.files.pop() else {
                return Ok(false);
            };
            let file = File::open(&path)
                .map_err(|e| ConnectorError::new(format!("cannot open {}: {e}", path.display())))?;
            if self.metadata.is_some() {
                self.file_facts = Some(FileFacts::of(&path)?);
            }
            if let Some(values) = self.partition_values.get(&path) {
                self.current_partition.clone_from(values);
            }
            let skip = self.skip.remove(&path).unwrap_or(0);
            let mut open = OpenFile {
                path,
                reader: LineReader::new(file),
                lines: 0,
            };
            for _ in 0..skip {
                if !Self::read_line(&mut open, &mut self.bytes_read)? {
                    return Err(ConnectorError::new(format!(
                        "filesystem table '{}': the checkpoint had read {skip} lines of {}, it now holds fewer",
                        self.table,
                        open.path.display()
                    )));
                }
            }
            self.current = Some(open);
        }
        let Some(open) = self.current.as_mut() else {
            return Ok(false);
        };
        if !Self::read_line(open, &mut self.bytes_read)? {
            if let Some(open) = self.current.take() {
                self.finished.push((open.path, open.lines));
            }
            return Ok(false);
        }
        Ok(true)
    }

    /// Moves `open` to its next line, counting it and its bytes; false at its end.
    fn read_line(open: &mut OpenFile, bytes_read: &mut u64) -> Result<bool> {
        let more = open.reader.advance().map_err(|e| {
            ConnectorError::new(format!("cannot read {}: {e}", open.path.display()))
        })?;
        if more {
            open.lines += 1;
            *bytes_read += open.reader.line().len() as u64;
        }
        Ok(more)
    }

    /// True when every file has been read to its end.
    fn exhausted(&self) -> bool {
        self.current.is_none() && self.files.is_empty()
    }

    /// Decodes the current line.
    fn decode_line(&mut self) -> Result<()> {
        let Some(open) = &self.current else {
            return Ok(());
        };
        let text = open.text()?;
        // Lines end at '\n' only, as Flink's line reader splits them.
        let record = text.strip_suffix('\n').unwrap_or(text);
        let location = || open.location();
        match &mut self.decoder {
            FileDecoder::Text(decoder) => {
                if let TextFormat::Csv(options) = decoder.format() {
                    if is_skipped_line(text, options) {
                        return Ok(());
                    }
                    // A quoted field may span lines: read on until the quotes close.
                    if has_open_quote(text.trim_end_matches(['\n', '\r']), options) {
                        let options = options.clone();
                        let record = text.to_string();
                        return self.decode_quoted_csv(record, &options);
                    }
                } else if text.trim().is_empty() {
                    return Ok(());
                }
                decoder.decode(text.trim_end_matches(['\n', '\r']), &location)?;
            }
            FileDecoder::Changelog(decoder) => {
                let record = record.trim_end_matches('\r');
                if !record.trim().is_empty() {
                    decoder.decode(record, &location)?;
                }
            }
            FileDecoder::Raw(decoder) => decoder.decode(record.as_bytes(), &location)?,
        }
        Ok(())
    }

    /// Decodes a CSV record that starts with `record` and continues on the next lines until
    /// its quotes close (or the file ends).
    fn decode_quoted_csv(&mut self, mut record: String, options: &CsvOptions) -> Result<()> {
        while has_open_quote(record.trim_end_matches(['\n', '\r']), options) {
            if !self.next_line()? {
                break;
            }
            if let Some(open) = &self.current {
                record.push_str(open.text()?);
            }
        }
        let current = &self.current;
        let location = || current.as_ref().map(OpenFile::location).unwrap_or_default();
        if let FileDecoder::Text(decoder) = &mut self.decoder {
            decoder.decode(record.trim_end_matches(['\n', '\r']), &location)?;
        }
        Ok(())
    }
}

impl SourceReader for FileSource {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self.next_changes()? {
            Some(changes) if changes.kinds.is_some() => Err(ConnectorError::new(format!(
                "filesystem table '{}' holds a changelog: read it with its change kinds",
                self.table
            ))),
            changes => Ok(changes.map(|c| c.batch)),
        }
    }

    fn next_changes(&mut self) -> Result<Option<ChangeBatch>> {
        while self.decoder.rows() < BATCH_SIZE {
            if !self.next_line()? {
                // Each file is a split, as in Flink: a batch ends with its file, so checkpoint
                // barriers can fall between files.
                if self.decoder.rows() > 0 || self.exhausted() {
                    break;
                }
                continue;
            }
            self.decode_line()?;
        }
        if self.decoder.rows() == 0 {
            self.decoder.report_ignored();
            return Ok(None);
        }
        let mut batch = self.decoder.flush()?;
        if let Some(columns) = &self.partition_columns {
            batch = columns.complete(batch, &self.current_partition)?;
        }
        if let (Some(columns), Some(facts)) = (&self.metadata, &self.file_facts) {
            batch = columns.complete(batch, facts)?;
        }
        crate::probe::source_emitted();
        Ok(Some(batch))
    }

    fn enable_checkpointing(&mut self) -> bool {
        true
    }

    /// Bytes read of the subtask's files.
    fn progress(&mut self) -> Option<(u64, u64)> {
        Some((self.bytes_read.min(self.total_bytes), self.total_bytes))
    }

    /// The lines read of every file started (split positions), after a format tag.
    fn snapshot_position(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        let mut w = StateWriter::new();
        w.u8(SPLIT_POSITIONS);
        let current = self.current.as_ref().map(|f| (&f.path, f.lines, false));
        let finished = self.finished.iter().map(|(p, n)| (p, *n, true));
        // Files skipped ahead of but not opened since a restore keep their position.
        let pending = self.skip.iter().map(|(p, n)| (p, *n, false));
        let all: Vec<(&PathBuf, u64, bool)> = finished.chain(current).chain(pending).collect();
        w.length(all.len());
        for (path, lines, done) in all {
            w.str(&path.to_string_lossy());
            w.u64(lines);
            w.bool(done);
        }
        Ok(w.finish())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let what = format!("filesystem table '{}'", self.table);
        let mut r = StateReader::new(position, &what);
        if r.u8()? != SPLIT_POSITIONS {
            return Err(ConnectorError::new(format!(
                "corrupted checkpoint state of {what}: unknown position format"
            )));
        }
        for _ in 0..r.length()? {
            let path = PathBuf::from(r.str()?);
            let lines = r.u64()?;
            let done = r.bool()?;
            // Only the files this subtask reads (another parallelism spreads them otherwise).
            let Some(i) = self.files.iter().position(|f| *f == path) else {
                continue;
            };
            if done {
                self.files.remove(i);
                // A file finished before the restore counts as read, for progress.
                self.bytes_read += std::fs::metadata(&path).map_or(0, |m| m.len());
                self.finished.push((path, lines));
            } else if lines > 0 {
                self.skip.insert(path, lines);
            }
        }
        r.finish()
    }

    /// Each old subtask's files are this one's if it reads them now: their positions apply.
    fn restore_rescaled(&mut self, positions: &[&[u8]]) -> Result<()> {
        for position in positions.iter().filter(|p| !p.is_empty()) {
            self.restore_position(position)?;
        }
        Ok(())
    }
}

/// Tag of a position made of the lines read per file.
const SPLIT_POSITIONS: u8 = 2;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn open(dir: &Path, index: usize, parallelism: usize) -> Box<dyn SourceReader> {
        let spec = ConnectorSpec {
            table: "t".into(),
            connector: "filesystem".into(),
            options: BTreeMap::from([
                ("connector".to_string(), "filesystem".to_string()),
                ("path".to_string(), dir.display().to_string()),
                ("format".to_string(), "csv".to_string()),
            ]),
            metadata: Vec::new(),
            primary_key: Vec::new(),
            partition_keys: Vec::new(),
            read_columns: None,
        };
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let mut reader = open_source(
            &spec,
            schema,
            SubtaskInfo {
                index,
                parallelism,
                earlier_reads: 0,
            },
        )
        .unwrap();
        assert!(reader.enable_checkpointing());
        reader
    }

    fn read(reader: &mut dyn SourceReader, batches: usize, into: &mut Vec<i64>) {
        for _ in 0..batches {
            let Some(batch) = reader.next_batch().unwrap() else {
                return;
            };
            let values = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            into.extend((0..values.len()).map(|i| values.value(i)));
        }
    }

    /// Lines come out whole and as the file spells them whether their block is all ASCII or
    /// not, across the reader's block boundaries, and a line that is not UTF-8 is refused.
    #[test]
    fn lines_are_text_in_ascii_and_other_blocks_and_invalid_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.txt");
        let ascii = "a".repeat(1000);
        let accented = format!("{}é€", "b".repeat(997));
        let mut lines: Vec<String> = Vec::new();
        // Over two blocks of ASCII lines, then lines with multi-byte characters, one of them
        // cut by a block boundary.
        for i in 0..(2 * READ_BUFFER / ascii.len() + 10) {
            lines.push(if i < READ_BUFFER / ascii.len() + 3 {
                ascii.clone()
            } else {
                accented.clone()
            });
        }
        let mut bytes = lines.join("\n").into_bytes();
        bytes.extend_from_slice(b"\nok\n\xff\xfe\n");
        std::fs::write(&path, &bytes).unwrap();

        let mut reader = LineReader::new(File::open(&path).unwrap());
        for expected in lines.iter().map(String::as_str).chain(["ok"]) {
            assert!(reader.advance().unwrap());
            let text = reader.line_text().unwrap();
            assert_eq!(text.strip_suffix('\n'), Some(expected));
        }
        assert!(reader.advance().unwrap());
        assert_eq!(reader.line_text(), None);
        assert!(!reader.advance().unwrap());
    }

    #[test]
    fn file_positions_move_to_the_subtasks_reading_those_files() {
        let dir = tempfile::tempdir().unwrap();
        // Five files; the third is longer than a batch, so a position falls inside it.
        let mut next = 0;
        for (n, lines) in [3, 4, BATCH_SIZE + 100, 5, 2].into_iter().enumerate() {
            let text: String = (next..next + lines as i64)
                .map(|v| format!("{v}\n"))
                .collect();
            next += lines as i64;
            std::fs::write(dir.path().join(format!("{n}.csv")), text).unwrap();
        }
        let mut seen = Vec::new();
        // Two subtasks read files 0, 2, 4 and 1, 3: one batch each, then a checkpoint.
        let mut positions = Vec::new();
        for index in 0..2 {
            let mut reader = open(dir.path(), index, 2);
            read(reader.as_mut(), if index == 0 { 2 } else { 1 }, &mut seen);
            positions.push(reader.snapshot_position(1).unwrap());
        }
        let positions: Vec<&[u8]> = positions.iter().map(Vec::as_slice).collect();
        for index in 0..3 {
            let mut reader = open(dir.path(), index, 3);
            reader.restore_rescaled(&positions).unwrap();
            read(reader.as_mut(), usize::MAX, &mut seen);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..next).collect::<Vec<_>>(), "every line read once");
    }
}
