//! `GREATEST(v1, v2, ...)` / `LEAST(...)` as Flink computes them: over the arguments' common
//! type, NULL as soon as one argument is NULL (DataFusion's skip NULLs).

use std::cmp::Ordering;

use arrow::datatypes::DataType;
use datafusion::common::{plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::type_coercion::binary::type_union_resolution;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// `GREATEST` (`want == Greater`) or `LEAST`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Extreme {
    name: &'static str,
    want: Ordering,
    signature: Signature,
}

impl Extreme {
    pub(super) fn new(name: &'static str, want: Ordering) -> Self {
        Self {
            name,
            want,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Extreme {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        if arg_types.is_empty() {
            return plan_err!(
                "{} needs at least one argument",
                self.name.to_ascii_uppercase()
            );
        }
        match type_union_resolution(arg_types) {
            Some(t) => Ok(vec![t; arg_types.len()]),
            None => plan_err!(
                "Cannot find a common type for the arguments of {}",
                self.name.to_ascii_uppercase()
            ),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<DfResult<Vec<_>>>()?;
        let result_type = args.return_field.data_type().clone();
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let mut best: Option<ScalarValue> = None;
            let mut null = false;
            for a in &arrays {
                let v = ScalarValue::try_from_array(a.as_ref(), row)?;
                if v.is_null() {
                    null = true;
                    break;
                }
                best = match best {
                    Some(b) if v.partial_cmp(&b) != Some(self.want) => Some(b),
                    _ => Some(v),
                };
            }
            out.push(match (null, best) {
                (false, Some(b)) => b,
                _ => ScalarValue::try_from(&result_type)?,
            });
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(arrow::array::new_empty_array(
                &result_type,
            )));
        }
        let array = ScalarValue::iter_to_array(out)?;
        if all_scalar && rows == 1 {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?));
        }
        Ok(ColumnarValue::Array(array))
    }
}
