//! Flink's `raw` format: a record's bytes are the value of the table's single physical column.
//!
//! STRING columns decode and encode text in `raw.charset` (default UTF-8; also US-ASCII,
//! ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE — malformed input becomes U+FFFD, as Java's decoders
//! do); BYTES columns take the bytes as they are; BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT
//! and DOUBLE columns are the value's fixed-size binary form in `raw.endianness` (default
//! big-endian). A missing record (an empty message body of a numeric column) is NULL.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Float32Builder, Float64Builder,
    Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder,
};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, SchemaRef,
};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::options::Options;
use crate::{ConnectorError, Result};

/// The format's name.
pub const NAME: &str = "raw";

/// A charset Riffle converts STRING values with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Charset {
    Utf8,
    Ascii,
    Latin1,
    /// UTF-16 with an optional byte-order mark (big-endian without one); written with a BOM.
    Utf16,
    Utf16Be,
    Utf16Le,
}

impl Charset {
    /// Java's canonical names and common aliases.
    fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_uppercase().replace('_', "-").as_str() {
            "UTF-8" | "UTF8" => Charset::Utf8,
            "US-ASCII" | "ASCII" => Charset::Ascii,
            "ISO-8859-1" | "ISO8859-1" | "LATIN1" | "ISO-LATIN-1" => Charset::Latin1,
            "UTF-16" | "UTF16" => Charset::Utf16,
            "UTF-16BE" => Charset::Utf16Be,
            "UTF-16LE" => Charset::Utf16Le,
            _ => return None,
        })
    }

    fn decode(self, bytes: &[u8]) -> String {
        match self {
            Charset::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Charset::Ascii => bytes
                .iter()
                .map(|b| {
                    if b.is_ascii() {
                        char::from(*b)
                    } else {
                        '\u{FFFD}'
                    }
                })
                .collect(),
            Charset::Latin1 => bytes.iter().map(|b| char::from(*b)).collect(),
            Charset::Utf16 => match bytes {
                [0xFE, 0xFF, rest @ ..] => utf16(rest, true),
                [0xFF, 0xFE, rest @ ..] => utf16(rest, false),
                _ => utf16(bytes, true),
            },
            Charset::Utf16Be => utf16(bytes, true),
            Charset::Utf16Le => utf16(bytes, false),
        }
    }

    fn encode(self, text: &str) -> Vec<u8> {
        let units = |big: bool| -> Vec<u8> {
            text.encode_utf16()
                .flat_map(|u| {
                    if big {
                        u.to_be_bytes()
                    } else {
                        u.to_le_bytes()
                    }
                })
                .collect()
        };
        match self {
            Charset::Utf8 => text.as_bytes().to_vec(),
            Charset::Ascii => text
                .chars()
                .map(|c| if c.is_ascii() { c as u8 } else { b'?' })
                .collect(),
            Charset::Latin1 => text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
            Charset::Utf16 => {
                let mut out = vec![0xFE, 0xFF];
                out.extend(units(true));
                out
            }
            Charset::Utf16Be => units(true),
            Charset::Utf16Le => units(false),
        }
    }
}

fn utf16(bytes: &[u8], big_endian: bool) -> String {
    let units = bytes.chunks(2).map(|c| match (c, big_endian) {
        ([a, b], true) => u16::from_be_bytes([*a, *b]),
        ([a, b], false) => u16::from_le_bytes([*a, *b]),
        // A dangling byte is malformed input.
        _ => 0xFFFD,
    });
    char::decode_utf16(units)
        .map(|c| c.unwrap_or('\u{FFFD}'))
        .collect()
}

/// The `raw.*` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawOptions {
    charset: Charset,
    big_endian: bool,
}

impl RawOptions {
    /// Reads `raw.charset` and `raw.endianness`.
    pub fn from_options(options: &mut Options) -> Result<Self> {
        let charset = match options.get("raw.charset") {
            None => Charset::Utf8,
            Some(name) => Charset::parse(name).ok_or_else(|| {
                ConnectorError::new(format!(
                    "unsupported feature: 'raw.charset' = '{name}' (supported: UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE)"
                ))
            })?,
        };
        let big_endian = match options.get("raw.endianness") {
            None | Some("big-endian") => true,
            Some("little-endian") => false,
            Some(other) => {
                return Err(ConnectorError::new(format!(
                    "Unsupported endianness name: {other}. Valid values of 'raw.endianness' option are 'big-endian' and 'little-endian'."
                )))
            }
        };
        Ok(Self {
            charset,
            big_endian,
        })
    }
}

/// The single physical column of a raw table, checked as Flink checks it.
fn single_column(table: &str, types: &[(String, DataType)]) -> Result<DataType> {
    let [(name, data_type)] = types else {
        let columns: Vec<&str> = types.iter().map(|(n, _)| n.as_str()).collect();
        return Err(ConnectorError::new(format!(
            "The 'raw' format only supports single physical column. However the defined schema of table '{table}' contains multiple physical columns: [{}]",
            columns.join(", ")
        )));
    };
    match data_type {
        DataType::Utf8
        | DataType::Binary
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64 => Ok(data_type.clone()),
        other => Err(ConnectorError::new(format!(
            "The 'raw' format doesn't supports '{other}' as column type (column '{name}' of table '{table}')."
        ))),
    }
}

/// The growing column of a raw source.
enum RawColumn {
    String(StringBuilder),
    Bytes(BinaryBuilder),
    Boolean(BooleanBuilder),
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
}

/// Decodes records into batches of a raw table's single column.
pub struct RawDecoder {
    table: String,
    schema: SchemaRef,
    options: RawOptions,
    column: RawColumn,
    rows: usize,
}

impl RawDecoder {
    /// A decoder for `schema` (one column) of table `table`.
    pub fn new(table: &str, schema: SchemaRef, options: RawOptions) -> Result<Self> {
        let types: Vec<(String, DataType)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect();
        let column = match single_column(table, &types)? {
            DataType::Utf8 => RawColumn::String(StringBuilder::new()),
            DataType::Binary => RawColumn::Bytes(BinaryBuilder::new()),
            DataType::Boolean => RawColumn::Boolean(BooleanBuilder::new()),
            DataType::Int8 => RawColumn::Int8(Int8Builder::new()),
            DataType::Int16 => RawColumn::Int16(Int16Builder::new()),
            DataType::Int32 => RawColumn::Int32(Int32Builder::new()),
            DataType::Int64 => RawColumn::Int64(Int64Builder::new()),
            DataType::Float32 => RawColumn::Float32(Float32Builder::new()),
            _ => RawColumn::Float64(Float64Builder::new()),
        };
        Ok(Self {
            table: table.to_string(),
            schema,
            options,
            column,
            rows: 0,
        })
    }

    /// Rows decoded since the last [`RawDecoder::flush`].
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes one record into one row.
    pub fn decode(&mut self, bytes: &[u8], location: &dyn Fn() -> String) -> Result<()> {
        let big = self.options.big_endian;
        let fixed = |n: usize| -> Result<Option<&[u8]>> {
            match bytes.len() {
                0 => Ok(None),
                len if len == n => Ok(Some(bytes)),
                len => Err(ConnectorError::new(format!(
                    "Failed to deserialize raw record of table '{}' at {}: {len} byte(s), a {n}-byte value expected",
                    self.table,
                    location()
                ))),
            }
        };
        macro_rules! number {
            ($builder:expr, $t:ty, $n:expr) => {
                match fixed($n)? {
                    None => $builder.append_null(),
                    Some(b) => {
                        let mut array = [0u8; $n];
                        array.copy_from_slice(b);
                        $builder.append_value(if big {
                            <$t>::from_be_bytes(array)
                        } else {
                            <$t>::from_le_bytes(array)
                        })
                    }
                }
            };
        }
        match &mut self.column {
            RawColumn::String(b) => b.append_value(self.options.charset.decode(bytes)),
            RawColumn::Bytes(b) => b.append_value(bytes),
            RawColumn::Boolean(b) => match fixed(1)? {
                None => b.append_null(),
                Some(v) => b.append_value(v[0] != 0),
            },
            RawColumn::Int8(b) => number!(b, i8, 1),
            RawColumn::Int16(b) => number!(b, i16, 2),
            RawColumn::Int32(b) => number!(b, i32, 4),
            RawColumn::Int64(b) => number!(b, i64, 8),
            RawColumn::Float32(b) => number!(b, f32, 4),
            RawColumn::Float64(b) => number!(b, f64, 8),
        }
        self.rows += 1;
        Ok(())
    }

    /// The rows decoded so far as one batch; starts a new batch.
    pub fn flush(&mut self) -> Result<RecordBatch> {
        let column: ArrayRef = match &mut self.column {
            RawColumn::String(b) => Arc::new(b.finish()),
            RawColumn::Bytes(b) => Arc::new(b.finish()),
            RawColumn::Boolean(b) => Arc::new(b.finish()),
            RawColumn::Int8(b) => Arc::new(b.finish()),
            RawColumn::Int16(b) => Arc::new(b.finish()),
            RawColumn::Int32(b) => Arc::new(b.finish()),
            RawColumn::Int64(b) => Arc::new(b.finish()),
            RawColumn::Float32(b) => Arc::new(b.finish()),
            RawColumn::Float64(b) => Arc::new(b.finish()),
        };
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        self.rows = 0;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            vec![column],
            &options,
        )?)
    }
}

/// Encodes a raw table's single column as record bytes.
#[derive(Debug, Clone, Copy)]
pub struct RawEncoder {
    options: RawOptions,
}

impl RawEncoder {
    /// An encoder for a table whose written columns are `columns` (name, type): exactly one.
    pub fn new(table: &str, columns: &[(String, DataType)], options: RawOptions) -> Result<Self> {
        single_column(table, columns)?;
        Ok(Self { options })
    }

    /// The bytes of `array[row]`; `None` for NULL.
    pub fn encode(&self, array: &dyn Array, row: usize) -> Option<Vec<u8>> {
        if array.is_null(row) {
            return None;
        }
        let big = self.options.big_endian;
        macro_rules! number {
            ($t:ty) => {{
                let v = array.as_primitive::<$t>().value(row);
                if big {
                    v.to_be_bytes().to_vec()
                } else {
                    v.to_le_bytes().to_vec()
                }
            }};
        }
        Some(match array.data_type() {
            DataType::Utf8 => self
                .options
                .charset
                .encode(array.as_string::<i32>().value(row)),
            DataType::Binary => array.as_binary::<i32>().value(row).to_vec(),
            DataType::Boolean => vec![u8::from(array.as_boolean().value(row))],
            DataType::Int8 => number!(Int8Type),
            DataType::Int16 => number!(Int16Type),
            DataType::Int32 => number!(Int32Type),
            DataType::Int64 => number!(Int64Type),
            DataType::Float32 => number!(Float32Type),
            DataType::Float64 => number!(Float64Type),
            // `new` admits no other type.
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use riffle_plan::ConnectorSpec;

    use super::*;

    fn options(pairs: &[(&str, &str)]) -> RawOptions {
        let spec = ConnectorSpec {
            table: "t".into(),
            connector: "filesystem".into(),
            options: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            metadata: Vec::new(),
            primary_key: Vec::new(),
            partition_keys: Vec::new(),
            read_columns: None,
        };
        RawOptions::from_options(&mut Options::new(&spec)).unwrap()
    }

    fn schema(t: DataType) -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("v", t, true)]))
    }

    #[test]
    fn integers_follow_the_endianness_and_empty_records_are_null() {
        let mut d = RawDecoder::new(
            "t",
            schema(DataType::Int32),
            options(&[("raw.endianness", "little-endian")]),
        )
        .unwrap();
        d.decode(&[1, 0, 0, 0], &String::new).unwrap();
        d.decode(&[], &String::new).unwrap();
        assert!(d.decode(&[1, 2], &String::new).is_err());
        let batch = d.flush().unwrap();
        let v = batch.column(0).as_primitive::<Int32Type>();
        assert_eq!((v.value(0), v.is_null(1)), (1, true));
        let big = RawEncoder::new("t", &[("v".into(), DataType::Int32)], options(&[])).unwrap();
        assert_eq!(
            big.encode(&Int32Array::from(vec![258]), 0),
            Some(vec![0, 0, 1, 2])
        );
    }

    #[test]
    fn strings_use_the_charset() {
        let latin = options(&[("raw.charset", "ISO-8859-1")]);
        let mut d = RawDecoder::new("t", schema(DataType::Utf8), latin).unwrap();
        d.decode(&[0x63, 0x61, 0x66, 0xE9], &String::new).unwrap();
        let batch = d.flush().unwrap();
        assert_eq!(batch.column(0).as_string::<i32>().value(0), "café");
        let e = RawEncoder::new(
            "t",
            &[("v".into(), DataType::Utf8)],
            options(&[("raw.charset", "UTF-16LE")]),
        )
        .unwrap();
        assert_eq!(
            e.encode(&StringArray::from(vec!["hi"]), 0),
            Some(vec![b'h', 0, b'i', 0])
        );
        assert_eq!(Charset::Utf16.decode(&[0xFF, 0xFE, b'h', 0]), "h");
    }

    #[test]
    fn only_one_supported_column() {
        let two = [
            ("a".to_string(), DataType::Utf8),
            ("b".to_string(), DataType::Utf8),
        ];
        let err = RawEncoder::new("t", &two, options(&[])).unwrap_err();
        assert!(err.message.contains("single physical column"), "{err}");
        let decimal = [("a".to_string(), DataType::Decimal128(10, 2))];
        assert!(RawEncoder::new("t", &decimal, options(&[])).is_err());
    }
}
