//! Flink's `avro` and `avro-confluent` formats for message bodies.
//!
//! Both use the Avro schema Flink derives from the table's physical row type
//! ([`schema::derive`]) — or, for `avro-confluent`, the schema given with
//! `avro-confluent.schema` — to write rows and as the reader schema to read them.
//! - `avro`: a body is one Avro binary datum, nothing else.
//! - `avro-confluent`: a body is Confluent's wire format: magic byte 0, the writer schema's
//!   registry id (4 bytes, big-endian), the datum. A reader looks the writer schema up in the
//!   registry by id (once per id) and resolves it against the reader schema; a writer
//!   registers its schema under the subject and frames every datum with the id it got.
//!
//! Reading decodes datums with `arrow-avro` (Avro schema resolution straight into Arrow
//! columns), each datum measured first against its writer schema so that a body is read
//! exactly as far as its datum goes (as Avro's `DatumReader` does); the decoded columns are
//! then cast to the table's Arrow types. Writing follows Flink's converters
//! ([`encode`]). Avro has no `ignore-parse-errors`: a malformed body fails the job, naming
//! where it is.

pub mod encode;
pub mod registry;
pub mod schema;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, MapArray, StructArray};
use arrow::datatypes::{DataType, Field, FieldRef, Int32Type, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow_avro::reader::{Decoder, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};
use serde_json::Value;

use crate::options::Options;
use crate::{ConnectorError, Result};
use registry::{Auth, Registry};
use schema::{Record, Schema};

/// The `avro` format's name.
pub const NAME: &str = "avro";
/// The `avro-confluent` format's name.
pub const CONFLUENT_NAME: &str = "avro-confluent";

/// The Confluent wire format's magic byte.
const MAGIC: u8 = 0;

/// An Avro body format with its options.
#[derive(Debug, Clone)]
pub enum AvroFormat {
    /// `avro`: bare binary datums.
    Plain {
        /// `avro.timestamp_mapping.legacy` (default true).
        legacy_timestamps: bool,
    },
    /// `avro-confluent`: datums framed with registry ids.
    Confluent(ConfluentOptions),
}

/// The `avro-confluent.*` options.
#[derive(Debug, Clone)]
pub struct ConfluentOptions {
    /// The registry.
    pub registry: Arc<Registry>,
    /// `avro-confluent.subject` (a sink's default: `<topic>-value`).
    pub subject: Option<String>,
    /// `avro-confluent.schema`: the schema used instead of the derived one.
    pub schema: Option<String>,
}

/// Options of the Confluent registry client that Riffle does not implement: refused by name.
const UNSUPPORTED_CONFLUENT: &[&str] = &["ssl.", "properties."];

/// A format option, written plain (`avro.x`) or with the `value.` prefix of Flink's
/// key/value connectors (`value.avro.x`).
fn format_option<'a>(options: &mut Options<'a>, key: &str) -> Option<&'a str> {
    options
        .get(key)
        .or_else(|| options.get(&format!("value.{key}")))
}

impl AvroFormat {
    /// Reads the options of format `name` (`avro` or `avro-confluent`); `None` for others.
    pub fn from_options(name: &str, table: &str, options: &mut Options) -> Result<Option<Self>> {
        match name {
            NAME => {
                if let Some(encoding) = format_option(options, "avro.encoding") {
                    if !encoding.eq_ignore_ascii_case("binary") {
                        return Err(ConnectorError::new(format!(
                            "unsupported feature: 'avro.encoding' = '{encoding}' of table '{table}' (only Avro's binary encoding)"
                        )));
                    }
                }
                // The codec compresses Avro files; message bodies are never compressed.
                format_option(options, "avro.codec");
                let legacy_timestamps =
                    match format_option(options, "avro.timestamp_mapping.legacy") {
                        None => true,
                        Some(v) if v.eq_ignore_ascii_case("true") => true,
                        Some(v) if v.eq_ignore_ascii_case("false") => false,
                        Some(v) => {
                            return Err(ConnectorError::new(format!(
                            "Invalid value for option 'avro.timestamp_mapping.legacy' of table '{table}': '{v}'"
                        )))
                        }
                    };
                Ok(Some(AvroFormat::Plain { legacy_timestamps }))
            }
            CONFLUENT_NAME => Ok(Some(AvroFormat::Confluent(confluent_options(
                table, options,
            )?))),
            _ => Ok(None),
        }
    }

    /// The format's name.
    pub fn name(&self) -> &'static str {
        match self {
            AvroFormat::Plain { .. } => NAME,
            AvroFormat::Confluent(_) => CONFLUENT_NAME,
        }
    }

    /// The schema (JSON text) rows of `fields` are written and read with.
    pub fn table_schema(&self, fields: &[FieldRef]) -> std::result::Result<String, String> {
        match self {
            AvroFormat::Plain { legacy_timestamps } => schema::derive(fields, *legacy_timestamps),
            AvroFormat::Confluent(options) => match &options.schema {
                Some(explicit) => Ok(explicit.clone()),
                None => schema::derive(fields, true),
            },
        }
    }
}

fn confluent_options(table: &str, options: &mut Options) -> Result<ConfluentOptions> {
    let key = |k: &str| format!("{CONFLUENT_NAME}.{k}");
    for prefix in UNSUPPORTED_CONFLUENT {
        let mut given = options.keys_with_prefix(&key(prefix));
        given.extend(options.keys_with_prefix(&format!("value.{}", key(prefix))));
        if let Some(k) = given.first() {
            return Err(ConnectorError::new(format!(
                "unsupported feature: option '{k}' of table '{table}' (Riffle's schema registry client speaks plain http and takes no client properties)"
            )));
        }
    }
    let url = format_option(options, &key("url")).ok_or_else(|| {
        ConnectorError::new(format!(
            "Missing required option '{}' for table '{table}'",
            key("url")
        ))
    })?;
    let basic_source = format_option(options, &key("basic-auth.credentials-source"));
    let user_info = format_option(options, &key("basic-auth.user-info"));
    let bearer_source = format_option(options, &key("bearer-auth.credentials-source"));
    let token = format_option(options, &key("bearer-auth.token"));
    let auth = match (basic_source, user_info, bearer_source, token) {
        (_, Some(_), _, Some(_)) => {
            return Err(ConnectorError::new(format!(
                "table '{table}' gives both basic-auth and bearer-auth credentials for its schema registry"
            )))
        }
        (source, user_info, None, None) => match source.map(str::to_ascii_uppercase).as_deref() {
            None | Some("USER_INFO") => user_info.map_or(Auth::None, |u| Auth::Basic(u.into())),
            Some("URL") => Auth::None,
            Some(other) => {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = '{other}' of table '{table}' (USER_INFO and URL are supported)",
                    key("basic-auth.credentials-source")
                )))
            }
        },
        (None, None, source, Some(token)) => {
            match source.map(str::to_ascii_uppercase).as_deref() {
                None | Some("STATIC_TOKEN") => Auth::Bearer(token.into()),
                Some(other) => {
                    return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = '{other}' of table '{table}' (STATIC_TOKEN is supported)",
                    key("bearer-auth.credentials-source")
                )))
                }
            }
        }
        _ => {
            return Err(ConnectorError::new(format!(
                "table '{table}' gives incomplete schema registry credentials (a credentials source needs its user info or token)"
            )))
        }
    };
    let registry = Registry::new(url, auth)
        .map_err(|e| ConnectorError::new(format!("table '{table}': {e}")))?;
    Ok(ConfluentOptions {
        registry: Arc::new(registry),
        subject: format_option(options, &key("subject")).map(str::to_string),
        schema: format_option(options, &key("schema")).map(str::to_string),
    })
}

/// One writer schema and the decoder that resolves it against the reader schema.
struct WriterDecoder {
    schema: Schema,
    decoder: Decoder,
}

/// Decodes Avro bodies into batches of the table's physical columns.
pub struct AvroDecoder {
    table: String,
    target: SchemaRef,
    /// The reader schema's JSON.
    reader: Value,
    /// The registry of `avro-confluent`; `None` for bare datums (written with the reader
    /// schema, kept under id 0).
    registry: Option<Arc<Registry>>,
    writers: HashMap<u32, WriterDecoder>,
    /// The writer whose decoder holds rows not yet flushed.
    active: Option<u32>,
    /// Batches decoded and cast to the table's types, not yet handed out.
    done: Vec<RecordBatch>,
    /// A framed datum (Confluent prefix + datum) as the decoder takes it.
    frame: Vec<u8>,
}

impl AvroDecoder {
    /// A decoder of `format` for the physical columns `target` of table `table`.
    pub fn new(table: &str, target: SchemaRef, format: &AvroFormat) -> Result<Self> {
        let text = format
            .table_schema(target.fields())
            .map_err(|e| ConnectorError::new(format!("table '{table}': {e}")))?;
        let reader: Value = serde_json::from_str(&text).map_err(|e| {
            ConnectorError::new(format!("table '{table}': invalid Avro schema: {e}"))
        })?;
        // A given schema must hold the table's columns (its fields are read by position).
        let fields = Schema::parse(&text)
            .and_then(|s| s.record().map(|r| r.fields.len()))
            .map_err(|e| ConnectorError::new(format!("table '{table}': {e}")))?;
        if fields != target.fields().len() {
            return Err(ConnectorError::new(format!(
                "table '{table}': its Avro schema has {fields} fields but the table {} physical columns",
                target.fields().len()
            )));
        }
        let registry = match format {
            AvroFormat::Plain { .. } => None,
            AvroFormat::Confluent(options) => Some(options.registry.clone()),
        };
        let mut decoder = Self {
            table: table.to_string(),
            target,
            reader,
            registry,
            writers: HashMap::new(),
            active: None,
            done: Vec::new(),
            frame: Vec::new(),
        };
        if decoder.registry.is_none() {
            // Bare datums: the writer schema is the reader schema; fail on it at open.
            decoder.add_writer(0, &text, &|| "open".to_string())?;
        }
        Ok(decoder)
    }

    fn error(
        &self,
        location: &dyn Fn() -> String,
        message: impl std::fmt::Display,
    ) -> ConnectorError {
        ConnectorError::new(format!(
            "Failed to deserialize Avro record of table '{}' at {}: {message}",
            self.table,
            location()
        ))
    }

    /// Decodes one message body; `Ok(false)` when it holds no row (an empty body: a
    /// tombstone).
    pub fn decode(&mut self, body: &[u8], location: &dyn Fn() -> String) -> Result<bool> {
        if body.is_empty() {
            return Ok(false);
        }
        let (id, datum) = match &self.registry {
            None => (0, body),
            Some(_) => match body {
                [MAGIC, a, b, c, d, datum @ ..] => (u32::from_be_bytes([*a, *b, *c, *d]), datum),
                _ => return Err(self.error(location, "Unknown magic byte!")),
            },
        };
        if !self.writers.contains_key(&id) {
            let registry = self.registry.clone();
            let text = match registry {
                Some(registry) => registry
                    .schema_by_id(id)
                    .map_err(|e| self.error(location, e))?,
                None => return Err(self.error(location, "no writer schema")),
            };
            self.add_writer(id, &text, location)?;
        }
        if self.active != Some(id) {
            self.flush_active()?;
            self.active = Some(id);
        }
        let Some(writer) = self.writers.get(&id) else {
            return Err(self.error(location, format!("no decoder for schema id {id}")));
        };
        let len = writer
            .schema
            .datum_len(datum)
            .map_err(|e| self.error(location, e))?;
        self.frame.clear();
        self.frame.push(MAGIC);
        self.frame.extend_from_slice(&id.to_be_bytes());
        self.frame.extend_from_slice(&datum[..len]);
        if self
            .writers
            .get(&id)
            .is_some_and(|w| w.decoder.batch_is_full())
        {
            self.flush_active()?;
        }
        let frame = std::mem::take(&mut self.frame);
        let decoded = match self.writers.get_mut(&id) {
            Some(writer) => writer.decoder.decode(&frame),
            None => Ok(0),
        };
        self.frame = frame;
        match decoded {
            Ok(n) if n == self.frame.len() => Ok(true),
            Ok(n) => Err(self.error(
                location,
                format!("the decoder took {n} of {} bytes", self.frame.len()),
            )),
            Err(e) => Err(self.error(location, e)),
        }
    }

    /// Builds the decoder of writer schema `text` registered as `id`.
    fn add_writer(&mut self, id: u32, text: &str, location: &dyn Fn() -> String) -> Result<()> {
        let schema = Schema::parse(text).map_err(|e| self.error(location, e))?;
        let mut reader = self.reader.clone();
        align_names(&mut reader, &schema);
        let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
        store
            .set(Fingerprint::Id(id), AvroSchema::new(text.to_string()))
            .map_err(|e| self.error(location, e))?;
        let decoder = ReaderBuilder::new()
            .with_reader_schema(AvroSchema::new(reader.to_string()))
            .with_writer_schema_store(store)
            .with_batch_size(crate::BATCH_SIZE)
            .build_decoder()
            .map_err(|e| {
                self.error(
                    location,
                    format!("the writer schema (id {id}) does not resolve to the table's: {e}"),
                )
            })?;
        self.writers.insert(id, WriterDecoder { schema, decoder });
        Ok(())
    }

    /// Moves the active decoder's rows, cast to the table's types, to the finished batches.
    fn flush_active(&mut self) -> Result<()> {
        let Some(writer) = self.active.and_then(|id| self.writers.get_mut(&id)) else {
            return Ok(());
        };
        let flushed = writer.decoder.flush().map_err(|e| {
            ConnectorError::new(format!(
                "Failed to deserialize Avro records of table '{}': {e}",
                self.table
            ))
        })?;
        let Some(batch) = flushed else {
            return Ok(());
        };
        let columns = batch
            .columns()
            .iter()
            .zip(self.target.fields())
            .map(|(column, field)| conform(column, field.data_type()))
            .collect::<Result<Vec<_>>>()?;
        self.done
            .push(RecordBatch::try_new(self.target.clone(), columns)?);
        Ok(())
    }

    /// The rows decoded so far as one batch (possibly empty); starts a new batch.
    pub fn flush(&mut self) -> Result<RecordBatch> {
        self.flush_active()?;
        let batches = std::mem::take(&mut self.done);
        match batches.len() {
            0 => Ok(RecordBatch::new_empty(self.target.clone())),
            1 => Ok(batches
                .into_iter()
                .next()
                .unwrap_or_else(|| RecordBatch::new_empty(self.target.clone()))),
            _ => Ok(arrow::compute::concat_batches(&self.target, &batches)?),
        }
    }
}

/// Gives the reader schema's records the names of the writer's records they read: Avro (and
/// Flink) resolve a record whatever its name, `arrow-avro` only a record of the same name.
fn align_names(reader: &mut Value, writer: &Schema) {
    let writer = match writer {
        Schema::Union(branches) => {
            let mut values = branches.iter().filter(|b| **b != Schema::Null);
            match (values.next(), values.next()) {
                (Some(only), None) => only,
                _ => return,
            }
        }
        other => other,
    };
    match reader {
        Value::Array(branches) => {
            for branch in branches {
                align_names(branch, writer);
            }
        }
        Value::Object(object) => match (object.get("type").and_then(Value::as_str), writer) {
            (Some("record"), Schema::Record(record)) => {
                object.insert("name".into(), Value::String(record.name.clone()));
                match &record.namespace {
                    Some(ns) => object.insert("namespace".into(), Value::String(ns.clone())),
                    None => object.remove("namespace"),
                };
                let Some(Value::Array(fields)) = object.get_mut("fields") else {
                    return;
                };
                for field in fields {
                    let name = field
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let written = record.fields.iter().find(|(n, _)| Some(n) == name.as_ref());
                    if let (Some((_, schema)), Some(ty)) = (written, field.get_mut("type")) {
                        align_names(ty, schema);
                    }
                }
            }
            (Some("array"), Schema::Array(items)) => {
                if let Some(ty) = object.get_mut("items") {
                    align_names(ty, items);
                }
            }
            (Some("map"), Schema::Map(values)) => {
                if let Some(ty) = object.get_mut("values") {
                    align_names(ty, values);
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// `array` as an array of `target` (the table's type): nested columns are rebuilt with the
/// table's field names and types, INT narrows to TINYINT/SMALLINT as Java's `byteValue()` /
/// `shortValue()` do, anything else is cast.
fn conform(array: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    Ok(match (array.data_type(), target) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let rows = array.as_struct();
            let children = rows
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| conform(c, f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(
                fields.clone(),
                children,
                rows.nulls().cloned(),
            )?)
        }
        (DataType::List(_), DataType::List(item)) => {
            let list = array.as_list::<i32>();
            Arc::new(ListArray::try_new(
                item.clone(),
                list.offsets().clone(),
                conform(list.values(), item.data_type())?,
                list.nulls().cloned(),
            )?)
        }
        (DataType::Map(..), DataType::Map(entries, sorted)) => {
            let map = array.as_map();
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(ConnectorError::new(format!("map entries of type {target}")));
            };
            let keys = conform(map.keys(), kv[0].data_type())?;
            let values = conform(map.values(), kv[1].data_type())?;
            let entries_array = StructArray::try_new(kv.clone(), vec![keys, values], None)?;
            Arc::new(MapArray::try_new(
                entries.clone(),
                map.offsets().clone(),
                entries_array,
                map.nulls().cloned(),
                *sorted,
            )?)
        }
        (DataType::Int32, DataType::Int8) => Arc::new(
            array
                .as_primitive::<Int32Type>()
                .unary::<_, arrow::datatypes::Int8Type>(|v| v as i8),
        ) as ArrayRef,
        (DataType::Int32, DataType::Int16) => Arc::new(
            array
                .as_primitive::<Int32Type>()
                .unary::<_, arrow::datatypes::Int16Type>(|v| v as i16),
        ) as ArrayRef,
        _ => arrow::compute::cast(array, target)?,
    })
}

/// Writes rows as Avro bodies.
pub struct AvroEncoder {
    record: Arc<Record>,
    /// The Confluent prefix (magic byte and schema id) of `avro-confluent`.
    prefix: Option<[u8; 5]>,
}

impl AvroEncoder {
    /// An encoder of `format` for the columns `fields` of table `table`; `avro-confluent`
    /// registers its schema (under `avro-confluent.subject`, else `default_subject`).
    pub fn new(
        table: &str,
        fields: &[FieldRef],
        format: &AvroFormat,
        default_subject: &str,
    ) -> Result<Self> {
        let failed = |e: String| ConnectorError::new(format!("table '{table}': {e}"));
        let text = format.table_schema(fields).map_err(failed)?;
        let parsed = Schema::parse(&text).map_err(failed)?;
        let record = parsed.record().map_err(failed)?.clone();
        let prefix = match format {
            AvroFormat::Plain { .. } => None,
            AvroFormat::Confluent(options) => {
                let subject = options.subject.as_deref().unwrap_or(default_subject);
                let id = options.registry.register(subject, &text).map_err(failed)?;
                let mut prefix = [MAGIC; 5];
                prefix[1..].copy_from_slice(&id.to_be_bytes());
                Some(prefix)
            }
        };
        Ok(Self { record, prefix })
    }

    /// Appends the body of row `row` of `columns` to `out`.
    pub fn encode(&self, columns: &[&dyn Array], row: usize, out: &mut Vec<u8>) -> Result<()> {
        if let Some(prefix) = &self.prefix {
            out.extend_from_slice(prefix);
        }
        encode::encode_row(&self.record, columns, row, out)
            .map_err(|e| ConnectorError::new(format!("Failed to serialize row as Avro: {e}")))
    }
}

/// The Arrow fields of named columns (a sink's written columns).
pub fn arrow_fields(columns: &[(String, DataType, bool)]) -> Vec<FieldRef> {
    columns
        .iter()
        .map(|(name, t, nullable)| Arc::new(Field::new(name, t.clone(), *nullable)))
        .collect()
}

#[cfg(test)]
mod tests;
