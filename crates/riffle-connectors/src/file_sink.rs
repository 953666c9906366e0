//! The `filesystem` connector's sink: rows as lines of part files (`part-<subtask>-<n>.<ext>`)
//! under the table's path — under the row's partition directory for a partitioned table
//! (`PARTITIONED BY`, laid out by [`crate::partitions`]; the lines then hold the other columns
//! only, as Flink writes them).
//!
//! Delivery: at-least-once writes each part file directly; exactly-once stages the lines of a
//! checkpoint and publishes them as new part files when the checkpoint completes (written under
//! a hidden `.<name>.inprogress` name, then renamed, as readers skip hidden files).
//!
//! Partition commit: a partitioned table with `'sink.partition-commit.policy.kind' =
//! 'success-file'` gets an empty success file (`_SUCCESS` unless
//! `sink.partition-commit.success-file.name` says otherwise) in every partition it wrote when
//! its input ends: in a bounded job Flink commits every partition at the end, whatever the
//! trigger, delay and time extractor say (they only time the commits of a job that runs on).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::Schema;
use riffle_plan::ConnectorSpec;

use crate::changelog::ChangelogEncoder;
use crate::filesystem::{file_format, FileFormat};
use crate::options::Options;
use crate::partitions::Partitioning;
use crate::raw::RawEncoder;
use crate::rows::{is_writable_text_type, RowEncoder};
use crate::snapshot::{StateReader, StateWriter};
use crate::{ChangeBatch, Committer, ConnectorError, Result, SinkWriter, SubtaskInfo};

/// Opens the filesystem sink subtask `subtask`. Text formats (`csv`, `json`, `raw`) write
/// appends (`+I`) only, as the planner rejects updating input for them; the changelog formats
/// write every change as an event.
pub fn open_sink(
    spec: &ConnectorSpec,
    fields: &[riffle_plan::Field],
    subtask: SubtaskInfo,
) -> Result<Box<dyn SinkWriter>> {
    let mut options = Options::new(spec);
    let path = PathBuf::from(options.required("path")?);
    let format = file_format(spec, &mut options)?;
    options.keys_with_prefix(&format!("{}.", format.name()));
    let types = fields
        .iter()
        .map(|f| f.arrow().map_err(ConnectorError::from))
        .collect::<Result<Vec<_>>>()?;
    let schema = Schema::new(
        fields
            .iter()
            .zip(&types)
            .map(|(f, t)| arrow::datatypes::Field::new(&f.name, t.clone(), true))
            .collect::<Vec<_>>(),
    );
    let partitioning = Partitioning::new(spec, &schema, &mut options)?;
    let success_file = match &partitioning {
        Some(_) => success_file(spec, &mut options)?,
        None => None,
    };
    options.keys_with_prefix("sink.");
    options.keys_with_prefix("partition.time-extractor.");
    options.accept("auto-compaction");
    options.accept("compaction.file-size");
    options.finish()?;
    // The columns a file holds: a partitioned table's partition columns are in its path.
    let written: Vec<usize> = (0..fields.len())
        .filter(|i| {
            !partitioning
                .as_ref()
                .is_some_and(|p| p.is_partition_column(*i))
        })
        .collect();
    let names: Vec<String> = written.iter().map(|&i| fields[i].name.clone()).collect();
    let extension = format.extension();
    let encoder = match format {
        FileFormat::Text(text) => {
            for &i in &written {
                if !is_writable_text_type(&types[i]) {
                    return Err(ConnectorError::new(format!(
                        "unsupported feature: writing column '{}' of type {} to a filesystem table",
                        fields[i].name, fields[i].data_type
                    )));
                }
            }
            FileEncoder::Text(RowEncoder::new(names, text))
        }
        FileFormat::Changelog(changelog) => {
            let written_types: Vec<_> = written.iter().map(|&i| types[i].clone()).collect();
            FileEncoder::Changelog(ChangelogEncoder::new(
                &spec.table,
                names,
                &written_types,
                changelog,
            )?)
        }
        FileFormat::Raw(raw) => {
            let columns: Vec<(String, _)> = names
                .into_iter()
                .zip(written.iter().map(|&i| types[i].clone()))
                .collect();
            FileEncoder::Raw(RawEncoder::new(&spec.table, &columns, raw)?)
        }
    };
    create_dir(&path)?;
    let mut sink = FileSink {
        table: spec.table.clone(),
        encoder,
        written,
        partitioning,
        success_file,
        out: BTreeMap::new(),
        line: String::new(),
        staged: None,
        partitions: BTreeSet::new(),
        dir: path,
        subtask: subtask.index,
        extension: extension.to_string(),
    };
    if sink.partitioning.is_none() {
        // An unpartitioned table's part file exists from the start, even when no row comes.
        sink.open_part_file("")?;
    }
    Ok(Box::new(sink))
}

/// The success file a partitioned table's commit policy writes (`None` without one).
fn success_file(spec: &ConnectorSpec, options: &mut Options) -> Result<Option<String>> {
    let name = options
        .get("sink.partition-commit.success-file.name")
        .unwrap_or("_SUCCESS")
        .to_string();
    if let Some(trigger) = options.get("sink.partition-commit.trigger") {
        if !matches!(trigger, "process-time" | "partition-time") {
            return Err(ConnectorError::new(format!(
                "Could not parse value '{trigger}' for key 'sink.partition-commit.trigger' of table '{}' (process-time or partition-time).",
                spec.table
            )));
        }
    }
    if options.get("partition.time-extractor.kind") == Some("custom") {
        return Err(ConnectorError::new(format!(
            "unsupported feature: a 'custom' partition time extractor (table '{}')",
            spec.table
        )));
    }
    let Some(kinds) = options.get("sink.partition-commit.policy.kind") else {
        return Ok(None);
    };
    let mut success = false;
    for kind in kinds.split(',').map(str::trim) {
        match kind.to_ascii_lowercase().as_str() {
            "success-file" => success = true,
            "metastore" => {
                return Err(ConnectorError::new(
                    "Can not configure a 'metastore' partition commit policy for a file system table. You can only configure 'metastore' partition commit policy for a hive table.",
                ))
            }
            "custom" => {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: a 'custom' partition commit policy (table '{}')",
                    spec.table
                )))
            }
            _ => {
                return Err(ConnectorError::new(format!(
                    "Unsupported partition commit policy type: '{kind}' (table '{}'); 'metastore', 'success-file' and 'custom' exist.",
                    spec.table
                )))
            }
        }
    }
    Ok(success.then_some(name))
}

/// Creates `dir` and its parents.
fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", dir.display())))
}

/// Encodes rows as lines of one format.
enum FileEncoder {
    Text(RowEncoder),
    Changelog(ChangelogEncoder),
    Raw(RawEncoder),
}

struct FileSink {
    table: String,
    encoder: FileEncoder,
    /// The indexes of the columns a file holds.
    written: Vec<usize>,
    partitioning: Option<Partitioning>,
    /// The name of the success file partitions get when the input ends.
    success_file: Option<String>,
    /// At-least-once: the part file of each partition directory written (`""` unpartitioned).
    out: BTreeMap<String, (PathBuf, BufWriter<File>)>,
    line: String,
    /// Exactly-once: the lines of the open transaction, per partition directory.
    staged: Option<BTreeMap<String, String>>,
    /// The partition directories written to.
    partitions: BTreeSet<String>,
    dir: PathBuf,
    subtask: usize,
    extension: String,
}

impl FileSink {
    /// Creates the at-least-once part file of partition directory `partition`.
    fn open_part_file(&mut self, partition: &str) -> Result<()> {
        let dir = self.dir.join(partition);
        create_dir(&dir)?;
        let file = dir.join(format!("part-{}-0.{}", self.subtask, self.extension));
        let writer = File::create(&file)
            .map_err(|e| ConnectorError::new(format!("cannot create {}: {e}", file.display())))?;
        self.out
            .insert(partition.to_string(), (file, BufWriter::new(writer)));
        Ok(())
    }

    /// Encodes row `row` of `columns` (the columns a file holds) into `self.line`.
    fn encode(&mut self, batch: &ChangeBatch, columns: &[&dyn Array], row: usize) -> Result<()> {
        self.line.clear();
        match &mut self.encoder {
            FileEncoder::Text(encoder) => encoder.encode(columns, row, &mut self.line),
            FileEncoder::Changelog(encoder) => {
                encoder.encode(batch.kind(row), columns, row, &mut self.line)
            }
            FileEncoder::Raw(encoder) => {
                let bytes = columns.first().and_then(|c| encoder.encode(*c, row));
                let text = bytes.map(String::from_utf8).transpose().map_err(|_| {
                    ConnectorError::new(format!(
                        "unsupported feature: a raw record of filesystem table '{}' that is not UTF-8 text (the sink writes text lines)",
                        self.table
                    ))
                })?;
                let text = text.ok_or_else(|| {
                    ConnectorError::new(format!(
                        "filesystem table '{}' cannot write a NULL value in the raw format",
                        self.table
                    ))
                })?;
                self.line.push_str(&text);
            }
        }
        self.line.push('\n');
        Ok(())
    }
}

impl SinkWriter for FileSink {
    fn write(&mut self, batch: &ChangeBatch) -> Result<()> {
        let columns: Vec<&dyn Array> = self
            .written
            .iter()
            .map(|&i| batch.batch.column(i).as_ref())
            .collect();
        let directories = match &self.partitioning {
            Some(p) => p.directories(&batch.batch)?,
            None => Vec::new(),
        };
        for row in 0..batch.num_rows() {
            self.encode(batch, &columns, row)?;
            let partition = directories.get(row).map_or("", String::as_str);
            if !self.partitions.contains(partition) {
                self.partitions.insert(partition.to_string());
            }
            if let Some(staged) = &mut self.staged {
                staged
                    .entry(partition.to_string())
                    .or_default()
                    .push_str(&self.line);
                continue;
            }
            if !self.out.contains_key(partition) {
                self.open_part_file(partition)?;
            }
            if let Some((_, out)) = self.out.get_mut(partition) {
                out.write_all(self.line.as_bytes())
                    .map_err(|e| ConnectorError::new(format!("filesystem sink: {e}")))?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        for (file, out) in self.out.values_mut() {
            out.flush().map_err(|e| {
                ConnectorError::new(format!("filesystem sink {}: {e}", file.display()))
            })?;
        }
        // The input ended: every partition written is complete.
        if let Some(name) = &self.success_file {
            for partition in &self.partitions {
                let file = self.dir.join(partition).join(name);
                File::create(&file).map_err(|e| {
                    ConnectorError::new(format!("cannot create {}: {e}", file.display()))
                })?;
            }
        }
        Ok(())
    }

    fn enable_exactly_once(
        &mut self,
        _transactional_id: &str,
    ) -> Result<Option<Arc<dyn Committer>>> {
        // Rows now go to part files per checkpoint, published on completion; a part file opened
        // for at-least-once writing is still empty and goes away.
        for (file, _) in std::mem::take(&mut self.out).into_values() {
            std::fs::remove_file(&file).map_err(|e| {
                ConnectorError::new(format!("cannot remove {}: {e}", file.display()))
            })?;
        }
        self.staged = Some(BTreeMap::new());
        Ok(Some(Arc::new(PartFileCommitter {
            dir: self.dir.clone(),
        })))
    }

    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<u8>> {
        let Some(staged) = &mut self.staged else {
            return Ok(Vec::new());
        };
        let files = std::mem::take(staged);
        let mut w = StateWriter::new();
        w.u8(PART_FILES);
        w.length(files.len());
        let name = format!("part-{}-{checkpoint}.{}", self.subtask, self.extension);
        for (partition, text) in &files {
            let file = Path::new(partition).join(&name);
            w.str(&file.to_string_lossy());
            w.str(text);
        }
        Ok(w.finish())
    }
}

/// Tag of a transaction made of part files (path below the table's path, lines).
const PART_FILES: u8 = 1;

/// Publishes a transaction's part files: each is written under a hidden name (readers skip
/// files starting with `.`), synced, then renamed; a part file that exists is already
/// published.
struct PartFileCommitter {
    dir: PathBuf,
}

impl Committer for PartFileCommitter {
    fn commit(&self, _checkpoint: u64, transaction: &[u8]) -> Result<()> {
        if transaction.is_empty() {
            return Ok(());
        }
        let what = format!("the transaction of filesystem sink {}", self.dir.display());
        let mut r = StateReader::new(transaction, &what);
        if r.u8()? != PART_FILES {
            return Err(ConnectorError::new(format!(
                "corrupted checkpoint state of {what}: unknown transaction format"
            )));
        }
        let mut files = Vec::new();
        for _ in 0..r.length()? {
            files.push((r.str()?, r.str()?));
        }
        r.finish()?;
        for (relative, text) in files {
            self.publish(Path::new(&relative), &text)?;
        }
        Ok(())
    }
}

impl PartFileCommitter {
    /// Writes part file `relative` (below the table's path) with `text`, unless it exists.
    fn publish(&self, relative: &Path, text: &str) -> Result<()> {
        let target = self.dir.join(relative);
        if text.is_empty() || target.exists() {
            return Ok(());
        }
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Ok(());
        };
        create_dir(parent)?;
        let tmp = parent.join(format!(".{}.inprogress", name.to_string_lossy()));
        let io = |e: std::io::Error| {
            ConnectorError::new(format!("filesystem sink {}: {e}", target.display()))
        };
        let mut file = File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &target).map_err(io)
    }
}
