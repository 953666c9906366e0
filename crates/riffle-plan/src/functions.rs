//! Flink's built-in functions where DataFusion has none or behaves differently.
//!
//! They are registered into the session under Flink's names, replacing DataFusion's functions of
//! the same name, so planner and runtime both see Flink's behaviour.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

use crate::types::LTZ_TIME_ZONE;

/// Registers Riffle's Flink functions into `state`.
pub fn register(state: &mut SessionState) {
    for f in [
        ScalarUDF::from(Proctime::new()),
        ScalarUDF::from(ToTimestampLtz::new()),
    ] {
        // Registration only fails for invalid names; these are constants.
        let _ = state.register_udf(Arc::new(f));
    }
}

fn ltz_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from(LTZ_TIME_ZONE)))
}

/// `PROCTIME()`: the current processing time as `TIMESTAMP_LTZ(3)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Proctime {
    signature: Signature,
}

impl Proctime {
    fn new() -> Self {
        Self {
            signature: Signature::exact(vec![], Volatility::Volatile),
        }
    }
}

impl ScalarUDFImpl for Proctime {
    fn name(&self) -> &str {
        "proctime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(ltz_ms())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let array = TimestampMillisecondArray::from(vec![now; args.number_rows])
            .with_timezone(LTZ_TIME_ZONE);
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}

/// `TO_TIMESTAMP_LTZ(epoch, precision)`: epoch seconds (precision 0) or milliseconds (precision 3)
/// to `TIMESTAMP_LTZ(3)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToTimestampLtz {
    signature: Signature,
}

impl ToTimestampLtz {
    fn new() -> Self {
        Self {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Int64]),
                    TypeSignature::Exact(vec![DataType::Int64, DataType::Int32]),
                    TypeSignature::Exact(vec![DataType::Float64, DataType::Int32]),
                    TypeSignature::Coercible(vec![]),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for ToTimestampLtz {
    fn name(&self) -> &str {
        "to_timestamp_ltz"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match arg_types {
            [t] if t.is_integer() => Ok(vec![DataType::Int64]),
            [t, p] if t.is_integer() && p.is_integer() => {
                Ok(vec![DataType::Int64, DataType::Int32])
            }
            [t, p] if t.is_numeric() && p.is_integer() => {
                Ok(vec![DataType::Float64, DataType::Int32])
            }
            _ => plan_err!("TO_TIMESTAMP_LTZ expects (numeric epoch, precision 0 or 3)"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(ltz_ms())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let precision = match args.args.get(1) {
            None => 3,
            Some(ColumnarValue::Scalar(ScalarValue::Int32(Some(p)))) => *p,
            Some(_) => return exec_err!("TO_TIMESTAMP_LTZ precision must be a constant"),
        };
        let factor: i64 = match precision {
            0 => 1_000,
            3 => 1,
            p => return exec_err!("The precision value '{p}' for function TO_TIMESTAMP_LTZ(numeric, precision) is unsupported, the supported value is '0' for second or '3' for millisecond."),
        };
        let Some(epoch) = args.args.first() else {
            return exec_err!("TO_TIMESTAMP_LTZ requires an argument");
        };
        let array: ArrayRef = epoch.to_array(args.number_rows)?;
        let out: TimestampMillisecondArray = match array.data_type() {
            DataType::Int64 => array
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.and_then(|v| v.checked_mul(factor)))
                .collect(),
            DataType::Float64 => array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| (v * factor as f64) as i64))
                .collect(),
            other => return exec_err!("TO_TIMESTAMP_LTZ does not accept {other}"),
        };
        Ok(ColumnarValue::Array(Arc::new(
            out.with_timezone(LTZ_TIME_ZONE),
        )))
    }
}
