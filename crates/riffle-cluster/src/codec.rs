//! The body of a shuffle message: rows with their change kinds in Arrow's row format, which
//! encodes every Arrow type losslessly (no text round trip), so the consuming stage gets
//! exactly the values the producing stage had.
//!
//! Layout: row count (u32 LE); then per row its kind (one byte) and its encoded row (u32 LE
//! length + bytes). A schema without columns carries only the count.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::{RowConverter, SortField};
use riffle_connectors::{ChangeBatch, ConnectorError, Result, RowKind};

/// Encodes and decodes the rows of one schema.
pub struct RowCodec {
    schema: SchemaRef,
    converter: RowConverter,
}

impl RowCodec {
    /// A codec for rows of `schema`; fails naming a column whose type the row format lacks.
    pub fn new(schema: SchemaRef) -> Result<Self> {
        for field in schema.fields() {
            if !RowConverter::supports_fields(&[SortField::new(field.data_type().clone())]) {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: column '{}' of type {} in a shuffle topic",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        let fields = schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        Ok(Self { schema, converter })
    }

    /// Encodes rows `rows` of `batch`.
    pub fn encode(&self, batch: &ChangeBatch, rows: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        out.extend_from_slice(&len32(rows.len())?.to_le_bytes());
        if self.schema.fields().is_empty() {
            return Ok(out);
        }
        let encoded = self.converter.convert_columns(batch.batch.columns())?;
        for row in rows {
            let i = *row as usize;
            out.push(kind_byte(batch.kind(i)));
            let bytes = encoded.row(i);
            let bytes = bytes.as_ref();
            out.extend_from_slice(&len32(bytes.len())?.to_le_bytes());
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }

    /// Appends the rows of one message body to `into`.
    pub fn decode(&self, body: &[u8], into: &mut DecodedRows) -> Result<()> {
        let mut reader = Reader { buf: body };
        let count = reader.u32()? as usize;
        if self.schema.fields().is_empty() {
            into.empty_rows += count;
            return Ok(());
        }
        for _ in 0..count {
            let kind = kind_of(reader.u8()?)?;
            let len = reader.u32()? as usize;
            into.rows.push(reader.take(len)?.to_vec());
            into.kinds.push(kind);
        }
        if !reader.buf.is_empty() {
            return Err(corrupted());
        }
        Ok(())
    }

    /// The decoded rows as one batch (and empties `rows`).
    pub fn finish(&self, rows: &mut DecodedRows) -> Result<ChangeBatch> {
        let taken = std::mem::take(rows);
        if self.schema.fields().is_empty() {
            let options = RecordBatchOptions::new().with_row_count(Some(taken.empty_rows));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), vec![], &options)?;
            return Ok(ChangeBatch::inserts(batch));
        }
        let parser = self.converter.parser();
        let columns = self
            .converter
            .convert_rows(taken.rows.iter().map(|r| parser.parse(r)))?;
        let options = RecordBatchOptions::new().with_row_count(Some(taken.rows.len()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let kinds = if taken.kinds.iter().all(|k| *k == RowKind::Insert) {
            None
        } else {
            Some(Arc::from(taken.kinds))
        };
        Ok(ChangeBatch { batch, kinds })
    }
}

/// Rows decoded from messages, waiting to become a batch.
#[derive(Debug, Default)]
pub struct DecodedRows {
    rows: Vec<Vec<u8>>,
    kinds: Vec<RowKind>,
    /// Rows of a schema without columns.
    empty_rows: usize,
}

impl DecodedRows {
    /// Number of rows held.
    pub fn len(&self) -> usize {
        self.rows.len() + self.empty_rows
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn len32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| ConnectorError::new("a shuffle message part exceeds 4 GiB"))
}

fn kind_byte(kind: RowKind) -> u8 {
    match kind {
        RowKind::Insert => 0,
        RowKind::UpdateBefore => 1,
        RowKind::UpdateAfter => 2,
        RowKind::Delete => 3,
    }
}

fn kind_of(byte: u8) -> Result<RowKind> {
    Ok(match byte {
        0 => RowKind::Insert,
        1 => RowKind::UpdateBefore,
        2 => RowKind::UpdateAfter,
        3 => RowKind::Delete,
        _ => return Err(corrupted()),
    })
}

fn corrupted() -> ConnectorError {
    ConnectorError::new("corrupted shuffle message")
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(corrupted());
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    #[test]
    fn rows_and_kinds_round_trip() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
                Arc::new(Int64Array::from(vec![1, 2, 3])),
            ],
        )
        .unwrap();
        let kinds: Arc<[RowKind]> = Arc::from(vec![
            RowKind::Insert,
            RowKind::UpdateBefore,
            RowKind::Delete,
        ]);
        let changes = ChangeBatch {
            batch,
            kinds: Some(kinds),
        };
        let codec = RowCodec::new(schema).unwrap();
        let body = codec.encode(&changes, &[2, 1]).unwrap();
        let mut rows = DecodedRows::default();
        codec.decode(&body, &mut rows).unwrap();
        assert_eq!(rows.len(), 2);
        let out = codec.finish(&mut rows).unwrap();
        assert!(rows.is_empty());
        let k = out.batch.column(0).as_any().downcast_ref::<StringArray>();
        assert_eq!(k.map(|a| a.value(0)), Some("c"));
        assert!(out.batch.column(0).is_null(1));
        assert_eq!(out.kind(0), RowKind::Delete);
        assert_eq!(out.kind(1), RowKind::UpdateBefore);
        assert!(codec.decode(&body[..body.len() - 1], &mut rows).is_err());
    }

    #[test]
    fn rows_without_columns_keep_their_count() {
        let schema = Arc::new(Schema::empty());
        let options = RecordBatchOptions::new().with_row_count(Some(3));
        let batch = RecordBatch::try_new_with_options(schema.clone(), vec![], &options).unwrap();
        let codec = RowCodec::new(schema).unwrap();
        let body = codec.encode(&ChangeBatch::inserts(batch), &[0, 2]).unwrap();
        let mut rows = DecodedRows::default();
        codec.decode(&body, &mut rows).unwrap();
        assert_eq!(codec.finish(&mut rows).unwrap().num_rows(), 2);
    }
}
