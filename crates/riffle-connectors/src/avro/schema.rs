//! Avro schemas as the `avro` formats use them: the schema Flink derives from a table's row type
//! (`AvroSchemaConverter.convertToSchema`), and a parsed form of any schema (derived, given with
//! `avro-confluent.schema`, or a writer's from the registry) that datums are measured and
//! written with.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, TimeUnit};
use serde_json::Value;

/// Full name of the record Flink derives for a table (`org.apache.flink.avro.generated.record`).
pub const RECORD_NAME: &str = "record";
/// Namespace of the derived record.
pub const RECORD_NAMESPACE: &str = "org.apache.flink.avro.generated";

/// The logical type of an Avro `int` or `long`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logical {
    /// `date` (int): days since 1970-01-01.
    Date,
    /// `time-millis` (int).
    TimeMillis,
    /// `time-micros` (long).
    TimeMicros,
    /// `timestamp-millis` / `local-timestamp-millis` (long).
    TimestampMillis,
    /// `timestamp-micros` / `local-timestamp-micros` (long).
    TimestampMicros,
    /// `timestamp-nanos` / `local-timestamp-nanos` (long).
    TimestampNanos,
}

/// A named record.
#[derive(Debug, PartialEq)]
pub struct Record {
    /// The `name` attribute as written.
    pub name: String,
    /// The `namespace` attribute as written.
    pub namespace: Option<String>,
    /// Field names and schemas, in order.
    pub fields: Vec<(String, Schema)>,
}

/// A parsed Avro schema (named types are resolved; recursive types are refused).
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    /// `null`
    Null,
    /// `boolean`
    Boolean,
    /// `int`, with its logical type
    Int(Option<Logical>),
    /// `long`, with its logical type
    Long(Option<Logical>),
    /// `float`
    Float,
    /// `double`
    Double,
    /// `bytes`; `Some((precision, scale))` for the `decimal` logical type
    Bytes(Option<(u8, i8)>),
    /// `string`
    String,
    /// `record`
    Record(Arc<Record>),
    /// `enum` with its symbols
    Enum(Arc<Vec<String>>),
    /// `array` of items
    Array(Box<Schema>),
    /// `map` (string keys) of values
    Map(Box<Schema>),
    /// A union of branches
    Union(Vec<Schema>),
    /// `fixed` of a size
    Fixed(usize),
}

impl Schema {
    /// Parses an Avro schema from its JSON text.
    pub fn parse(text: &str) -> Result<Schema, String> {
        let json: Value =
            serde_json::from_str(text).map_err(|e| format!("invalid Avro schema JSON: {e}"))?;
        Parser::default().parse(&json, None)
    }

    /// The top-level record, or an error naming what the schema is instead.
    pub fn record(&self) -> Result<&Arc<Record>, String> {
        match self {
            Schema::Record(r) => Ok(r),
            other => Err(format!(
                "the Avro schema of a table must be a record, not {}",
                other.kind()
            )),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Schema::Null => "null",
            Schema::Boolean => "boolean",
            Schema::Int(_) => "int",
            Schema::Long(_) => "long",
            Schema::Float => "float",
            Schema::Double => "double",
            Schema::Bytes(_) => "bytes",
            Schema::String => "string",
            Schema::Record(_) => "a record",
            Schema::Enum(_) => "an enum",
            Schema::Array(_) => "an array",
            Schema::Map(_) => "a map",
            Schema::Union(_) => "a union",
            Schema::Fixed(_) => "fixed",
        }
    }

    /// The length of the datum at the start of `data`: where a reader of this schema stops.
    /// Fails on a truncated datum, a union branch or enum symbol out of range, a negative
    /// length.
    pub fn datum_len(&self, data: &[u8]) -> Result<usize, String> {
        let mut pos = 0;
        self.skip(data, &mut pos)?;
        Ok(pos)
    }

    fn skip(&self, data: &[u8], pos: &mut usize) -> Result<(), String> {
        match self {
            Schema::Null => {}
            Schema::Boolean => take(data, pos, 1).map(|_| ())?,
            Schema::Int(_) | Schema::Long(_) => {
                read_long(data, pos)?;
            }
            Schema::Float => take(data, pos, 4).map(|_| ())?,
            Schema::Double => take(data, pos, 8).map(|_| ())?,
            Schema::Bytes(_) => {
                let len = read_len(data, pos)?;
                take(data, pos, len)?;
            }
            Schema::String => {
                let len = read_len(data, pos)?;
                let bytes = take(data, pos, len)?;
                std::str::from_utf8(bytes).map_err(|_| "a string is not UTF-8".to_string())?;
            }
            Schema::Fixed(size) => take(data, pos, *size).map(|_| ())?,
            Schema::Enum(symbols) => {
                let i = read_long(data, pos)?;
                if i < 0 || i as usize >= symbols.len() {
                    return Err(format!("enum symbol index {i} out of range"));
                }
            }
            Schema::Record(r) => {
                for (_, field) in &r.fields {
                    field.skip(data, pos)?;
                }
            }
            Schema::Union(branches) => {
                let i = read_long(data, pos)?;
                let branch = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| format!("union branch {i} out of range"))?;
                branch.skip(data, pos)?;
            }
            Schema::Array(items) => skip_blocks(data, pos, |data, pos| items.skip(data, pos))?,
            Schema::Map(values) => skip_blocks(data, pos, |data, pos| {
                Schema::String.skip(data, pos)?;
                values.skip(data, pos)
            })?,
        }
        Ok(())
    }
}

/// Skips the blocks of an array or map: a count (negative: followed by the block's byte size),
/// that many items, until a zero count.
fn skip_blocks(
    data: &[u8],
    pos: &mut usize,
    mut item: impl FnMut(&[u8], &mut usize) -> Result<(), String>,
) -> Result<(), String> {
    loop {
        let count = read_long(data, pos)?;
        if count == 0 {
            return Ok(());
        }
        if count < 0 {
            read_long(data, pos)?;
        }
        for _ in 0..count.unsigned_abs() {
            item(data, pos)?;
        }
    }
}

fn take<'a>(data: &'a [u8], pos: &mut usize, len: usize) -> Result<&'a [u8], String> {
    let end = pos
        .checked_add(len)
        .filter(|end| *end <= data.len())
        .ok_or("the record ends early (truncated datum)")?;
    let bytes = &data[*pos..end];
    *pos = end;
    Ok(bytes)
}

/// A zig-zag varint `long`.
fn read_long(data: &[u8], pos: &mut usize) -> Result<i64, String> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *data
            .get(*pos)
            .ok_or("the record ends early (truncated datum)")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err("a varint is longer than 10 bytes".into())
}

fn read_len(data: &[u8], pos: &mut usize) -> Result<usize, String> {
    let len = read_long(data, pos)?;
    usize::try_from(len).map_err(|_| format!("negative length {len}"))
}

/// Appends `v` as a zig-zag varint.
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Parses schema JSON, resolving references to named types defined earlier.
#[derive(Default)]
struct Parser {
    named: HashMap<String, Schema>,
}

impl Parser {
    fn parse(&mut self, json: &Value, namespace: Option<&str>) -> Result<Schema, String> {
        match json {
            Value::String(name) => self.by_name(name, namespace),
            Value::Array(branches) => Ok(Schema::Union(
                branches
                    .iter()
                    .map(|b| self.parse(b, namespace))
                    .collect::<Result<_, _>>()?,
            )),
            Value::Object(object) => {
                let ty = object
                    .get("type")
                    .ok_or("an Avro schema object without 'type'")?;
                let Value::String(ty) = ty else {
                    // {"type": {...}} or {"type": [...]}: the nested schema.
                    return self.parse(ty, namespace);
                };
                let logical = object.get("logicalType").and_then(Value::as_str);
                let int_attr = |key: &str| object.get(key).and_then(Value::as_u64);
                Ok(match ty.as_str() {
                    "int" => Schema::Int(match logical {
                        Some("date") => Some(Logical::Date),
                        Some("time-millis") => Some(Logical::TimeMillis),
                        _ => None,
                    }),
                    "long" => Schema::Long(match logical {
                        Some("time-micros") => Some(Logical::TimeMicros),
                        Some("timestamp-millis" | "local-timestamp-millis") => {
                            Some(Logical::TimestampMillis)
                        }
                        Some("timestamp-micros" | "local-timestamp-micros") => {
                            Some(Logical::TimestampMicros)
                        }
                        Some("timestamp-nanos" | "local-timestamp-nanos") => {
                            Some(Logical::TimestampNanos)
                        }
                        _ => None,
                    }),
                    "bytes" if logical == Some("decimal") => {
                        let precision = int_attr("precision").unwrap_or(0);
                        let scale = int_attr("scale").unwrap_or(0);
                        match (u8::try_from(precision), i8::try_from(scale)) {
                            (Ok(p), Ok(s)) => Schema::Bytes(Some((p, s))),
                            _ => return Err(format!("decimal({precision}, {scale}) is too wide")),
                        }
                    }
                    "record" | "error" => self.record(object, namespace)?,
                    "enum" => {
                        let symbols = object
                            .get("symbols")
                            .and_then(Value::as_array)
                            .ok_or("an enum without symbols")?
                            .iter()
                            .map(|s| s.as_str().map(str::to_string))
                            .collect::<Option<Vec<_>>>()
                            .ok_or("enum symbols must be strings")?;
                        let schema = Schema::Enum(Arc::new(symbols));
                        self.define(object, namespace, schema.clone())?;
                        schema
                    }
                    "array" => Schema::Array(Box::new(self.parse(
                        object.get("items").ok_or("an array without items")?,
                        namespace,
                    )?)),
                    "map" => Schema::Map(Box::new(self.parse(
                        object.get("values").ok_or("a map without values")?,
                        namespace,
                    )?)),
                    "fixed" => {
                        let size = int_attr("size").ok_or("a fixed type without size")?;
                        let schema = Schema::Fixed(
                            usize::try_from(size).map_err(|_| "fixed size too large")?,
                        );
                        self.define(object, namespace, schema.clone())?;
                        schema
                    }
                    primitive => self.by_name(primitive, namespace)?,
                })
            }
            other => Err(format!("not an Avro schema: {other}")),
        }
    }

    fn record(
        &mut self,
        object: &serde_json::Map<String, Value>,
        namespace: Option<&str>,
    ) -> Result<Schema, String> {
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a record without a name")?;
        let own_namespace = object
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let (full, inner_namespace) = full_name(name, own_namespace.as_deref(), namespace);
        let fields = object
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("record '{full}' has no fields"))?;
        let mut parsed = Vec::with_capacity(fields.len());
        for field in fields {
            let field_name = field
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a field of record '{full}' has no name"))?;
            let ty = field
                .get("type")
                .ok_or_else(|| format!("field '{field_name}' of record '{full}' has no type"))?;
            parsed.push((
                field_name.to_string(),
                self.parse(ty, inner_namespace.as_deref())?,
            ));
        }
        let schema = Schema::Record(Arc::new(Record {
            name: name.to_string(),
            namespace: own_namespace,
            fields: parsed,
        }));
        self.named.insert(full, schema.clone());
        Ok(schema)
    }

    fn define(
        &mut self,
        object: &serde_json::Map<String, Value>,
        namespace: Option<&str>,
        schema: Schema,
    ) -> Result<(), String> {
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a named type without a name")?;
        let own = object.get("namespace").and_then(Value::as_str);
        self.named.insert(full_name(name, own, namespace).0, schema);
        Ok(())
    }

    fn by_name(&self, name: &str, namespace: Option<&str>) -> Result<Schema, String> {
        Ok(match name {
            "null" => Schema::Null,
            "boolean" => Schema::Boolean,
            "int" => Schema::Int(None),
            "long" => Schema::Long(None),
            "float" => Schema::Float,
            "double" => Schema::Double,
            "bytes" => Schema::Bytes(None),
            "string" => Schema::String,
            _ => {
                let (full, _) = full_name(name, None, namespace);
                return self
                    .named
                    .get(&full)
                    .or_else(|| self.named.get(name))
                    .cloned()
                    .ok_or_else(|| {
                        format!("unknown Avro type '{name}' (recursive types are not supported)")
                    });
            }
        })
    }
}

/// The full name of a named type and the namespace its children inherit.
fn full_name(
    name: &str,
    namespace: Option<&str>,
    enclosing: Option<&str>,
) -> (String, Option<String>) {
    if let Some((ns, _)) = name.rsplit_once('.') {
        return (name.to_string(), Some(ns.to_string()));
    }
    match namespace.or(enclosing).filter(|ns| !ns.is_empty()) {
        Some(ns) => (format!("{ns}.{name}"), Some(ns.to_string())),
        None => (name.to_string(), None),
    }
}

/// The Avro schema Flink derives for a table whose physical columns are `fields`, as the JSON
/// text Avro's `Schema.toString()` writes (the text registered in a schema registry).
/// `legacy` is `avro.timestamp_mapping.legacy`.
pub fn derive(fields: &[Arc<Field>], legacy: bool) -> Result<String, String> {
    let mut out = String::new();
    let row_name = format!("{RECORD_NAMESPACE}.{RECORD_NAME}");
    write_record(&mut out, fields, &row_name, None, legacy)?;
    Ok(out)
}

/// `{"type":"record","name":...,"namespace":...,"fields":[...]}`; the namespace is written
/// only where it differs from the enclosing one, as Avro does.
fn write_record(
    out: &mut String,
    fields: &[Arc<Field>],
    row_name: &str,
    enclosing: Option<&str>,
    legacy: bool,
) -> Result<(), String> {
    let (namespace, name) = row_name.rsplit_once('.').unwrap_or(("", row_name));
    out.push_str(r#"{"type":"record","name":"#);
    push_json_string(out, name);
    if Some(namespace) != enclosing && !namespace.is_empty() {
        out.push_str(r#","namespace":"#);
        push_json_string(out, namespace);
    }
    out.push_str(r#","fields":["#);
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{"name":"#);
        push_json_string(out, field.name());
        out.push_str(r#","type":"#);
        let nested = format!("{row_name}_{}", field.name());
        write_type(
            out,
            field.data_type(),
            field.is_nullable(),
            &nested,
            Some(namespace),
            legacy,
        )?;
        if field.is_nullable() {
            out.push_str(r#","default":null"#);
        }
        out.push('}');
    }
    out.push_str("]}");
    Ok(())
}

/// The schema of one type, `["null", T]` when nullable.
fn write_type(
    out: &mut String,
    data_type: &DataType,
    nullable: bool,
    row_name: &str,
    namespace: Option<&str>,
    legacy: bool,
) -> Result<(), String> {
    if nullable {
        out.push_str(r#"["null","#);
    }
    let timestamp = |unit: &TimeUnit, local: bool| {
        let precision = match unit {
            TimeUnit::Second | TimeUnit::Millisecond => "millis",
            TimeUnit::Microsecond => "micros",
            TimeUnit::Nanosecond => "nanos",
        };
        let prefix = if local { "local-" } else { "" };
        format!(r#"{{"type":"long","logicalType":"{prefix}timestamp-{precision}"}}"#)
    };
    let unsupported = || format!("Unsupported to derive Schema for type: {data_type}");
    match data_type {
        DataType::Null => out.push_str(r#""null""#),
        DataType::Boolean => out.push_str(r#""boolean""#),
        DataType::Int8 | DataType::Int16 | DataType::Int32 => out.push_str(r#""int""#),
        DataType::Int64 => out.push_str(r#""long""#),
        DataType::Float32 => out.push_str(r#""float""#),
        DataType::Float64 => out.push_str(r#""double""#),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => out.push_str(r#""string""#),
        DataType::Binary | DataType::LargeBinary => out.push_str(r#""bytes""#),
        DataType::Decimal128(p, s) => out.push_str(&format!(
            r#"{{"type":"bytes","logicalType":"decimal","precision":{p},"scale":{s}}}"#
        )),
        DataType::Date32 => out.push_str(r#"{"type":"int","logicalType":"date"}"#),
        DataType::Time32(TimeUnit::Millisecond | TimeUnit::Second) => {
            out.push_str(r#"{"type":"int","logicalType":"time-millis"}"#)
        }
        DataType::Timestamp(unit, None) => {
            if legacy && !matches!(unit, TimeUnit::Second | TimeUnit::Millisecond) {
                return Err(
                    "Avro does not support TIMESTAMP type with precision above 3 under the legacy timestamp mapping ('avro.timestamp_mapping.legacy' = 'false' maps it to local-timestamp-micros/nanos)"
                        .into(),
                );
            }
            out.push_str(&timestamp(unit, !legacy));
        }
        DataType::Timestamp(unit, Some(_)) => {
            if legacy {
                return Err(format!(
                    "{} (TIMESTAMP_LTZ needs 'avro.timestamp_mapping.legacy' = 'false')",
                    unsupported()
                ));
            }
            out.push_str(&timestamp(unit, false));
        }
        DataType::Struct(fields) => {
            let fields: Vec<Arc<Field>> = fields.iter().cloned().collect();
            write_record(out, &fields, row_name, namespace, legacy)?;
        }
        // Flink derives array items and map values with the legacy mapping whatever the option.
        DataType::List(item) => {
            out.push_str(r#"{"type":"array","items":"#);
            write_type(
                out,
                item.data_type(),
                item.is_nullable(),
                row_name,
                namespace,
                true,
            )?;
            out.push('}');
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unsupported());
            };
            if kv.len() != 2 || !matches!(kv[0].data_type(), DataType::Utf8 | DataType::Utf8View) {
                return Err(format!(
                    "Avro format doesn't support non-string as key type of map. The key type is: {}",
                    kv.first().map(|k| k.data_type().to_string()).unwrap_or_default()
                ));
            }
            out.push_str(r#"{"type":"map","values":"#);
            write_type(
                out,
                kv[1].data_type(),
                kv[1].is_nullable(),
                row_name,
                namespace,
                true,
            )?;
            out.push('}');
        }
        _ => return Err(unsupported()),
    }
    if nullable {
        out.push(']');
    }
    Ok(())
}

fn push_json_string(out: &mut String, s: &str) {
    out.push_str(&Value::String(s.to_string()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datums_are_measured_by_their_schema() {
        let schema = Schema::parse(
            r#"{"type":"record","name":"r","fields":[
                {"name":"a","type":["null","long"]},
                {"name":"s","type":"string"},
                {"name":"xs","type":{"type":"array","items":"int"}},
                {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
                {"name":"again","type":"E"}]}"#,
        )
        .unwrap();
        // a = 1 (branch 1, zig-zag 2), s = "hi", xs = [1, 2] in one block, e = B, again = A.
        let datum = [2, 2, 4, b'h', b'i', 4, 2, 4, 0, 2, 0];
        assert_eq!(schema.datum_len(&datum), Ok(datum.len()));
        let mut trailing = datum.to_vec();
        trailing.extend([9, 9]);
        assert_eq!(schema.datum_len(&trailing), Ok(datum.len()));
        assert!(schema
            .datum_len(&datum[..4])
            .unwrap_err()
            .contains("truncated"));
        let mut bad_branch = datum.to_vec();
        bad_branch[0] = 4;
        assert!(schema.datum_len(&bad_branch).unwrap_err().contains("union"));
        let mut bad_symbol = datum.to_vec();
        bad_symbol[9] = 6;
        assert!(schema.datum_len(&bad_symbol).unwrap_err().contains("enum"));
    }

    #[test]
    fn varints_round_trip() {
        for v in [0, -1, 1, 63, -64, 64, i64::MAX, i64::MIN, 1_586_937_600_000] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            let mut pos = 0;
            assert_eq!(read_long(&out, &mut pos), Ok(v));
            assert_eq!(pos, out.len());
        }
    }
}
