//! Encoding operator state values (DataFusion scalars) for checkpoints.
//!
//! Scalars of known types are encoded with Arrow's row format, which covers every type the
//! engine runs (nested ones included) and round-trips exactly. Checkpoint files are
//! checksummed before they are decoded (see `checkpoint::storage`), so the decoder only sees
//! bytes this encoder wrote.

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use datafusion::common::ScalarValue;
use riffle_connectors::snapshot::{StateReader, StateWriter};

use crate::task::RuntimeError;

/// Encodes rows of scalars of fixed types.
pub struct ScalarCodec {
    converter: RowConverter,
    width: usize,
}

impl ScalarCodec {
    /// A codec for rows of `types`.
    pub fn new(types: &[DataType]) -> Result<Self, RuntimeError> {
        Ok(Self {
            converter: RowConverter::new(
                types.iter().map(|t| SortField::new(t.clone())).collect(),
            )?,
            width: types.len(),
        })
    }

    /// Writes one row of scalars.
    pub fn write(&self, w: &mut StateWriter, values: &[ScalarValue]) -> Result<(), RuntimeError> {
        if values.len() != self.width {
            return Err(RuntimeError::new(format!(
                "state row has {} values, expected {}",
                values.len(),
                self.width
            )));
        }
        if self.width == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = values
            .iter()
            .map(|v| v.to_array())
            .collect::<Result<_, _>>()?;
        let rows = self.converter.convert_columns(&columns)?;
        w.bytes(rows.row(0).data());
        Ok(())
    }

    /// Reads one row of scalars.
    pub fn read(&self, r: &mut StateReader<'_>) -> Result<Vec<ScalarValue>, RuntimeError> {
        if self.width == 0 {
            return Ok(Vec::new());
        }
        let bytes = r.bytes()?;
        let parser = self.converter.parser();
        let row = parser.parse(bytes);
        let columns = self.converter.convert_rows([row])?;
        columns
            .iter()
            .map(|c| ScalarValue::try_from_array(c.as_ref(), 0).map_err(RuntimeError::from))
            .collect()
    }

    /// Writes one value of a one-type codec that may be absent (`None`, or an untyped NULL).
    pub fn write_optional(
        &self,
        w: &mut StateWriter,
        value: Option<&ScalarValue>,
    ) -> Result<(), RuntimeError> {
        match value.filter(|v| !matches!(v, ScalarValue::Null)) {
            Some(v) => {
                w.bool(true);
                self.write(w, std::slice::from_ref(v))
            }
            None => {
                w.bool(false);
                Ok(())
            }
        }
    }

    /// Reads a value written by [`Self::write_optional`].
    pub fn read_optional(
        &self,
        r: &mut StateReader<'_>,
    ) -> Result<Option<ScalarValue>, RuntimeError> {
        if !r.bool()? {
            return Ok(None);
        }
        Ok(self.read(r)?.into_iter().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_scalars() {
        let codec =
            ScalarCodec::new(&[DataType::Utf8, DataType::Int64, DataType::Float64]).unwrap();
        let row = vec![
            ScalarValue::Utf8(Some("k".into())),
            ScalarValue::Int64(None),
            ScalarValue::Float64(Some(-0.5)),
        ];
        let mut w = StateWriter::new();
        codec.write(&mut w, &row).unwrap();
        let bytes = w.finish();
        let mut r = StateReader::new(&bytes, "test");
        assert_eq!(codec.read(&mut r).unwrap(), row);
        r.finish().unwrap();
    }
}
