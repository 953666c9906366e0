//! Flink's aggregate functions as DataFusion sees them while planning.

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result as DfResult};
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

/// Flink's `SUM`, `AVG`, `MIN`, `MAX` for planning: no argument coercion (DataFusion would
/// cast `AVG(INT)` to `DOUBLE`) and Flink's result types. The runtime evaluates them itself.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct FlinkAggregate {
    name: &'static str,
    signature: Signature,
}

impl FlinkAggregate {
    pub(super) fn new(name: &'static str) -> Self {
        Self {
            name,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Flink's result type of `SUM` (`avg == false`) or `AVG` over `t`.
pub fn sum_avg_type(t: &DataType, avg: bool) -> Option<DataType> {
    match t {
        DataType::Decimal128(_, s) => {
            Some(DataType::Decimal128(38, if avg { (*s).max(6) } else { *s }))
        }
        t if t.is_numeric() => Some(t.clone()),
        DataType::Null => Some(DataType::Int32),
        _ => None,
    }
}

impl AggregateUDFImpl for FlinkAggregate {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match arg_types {
            [t] if matches!(self.name, "min" | "max") || sum_avg_type(t, false).is_some() => {
                Ok(vec![t.clone()])
            }
            [t] => plan_err!(
                "Cannot apply '{}' to arguments of type '{}(<{t}>)'",
                self.name.to_ascii_uppercase(),
                self.name.to_ascii_uppercase()
            ),
            _ => plan_err!("{} takes one argument", self.name.to_ascii_uppercase()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        let Some(t) = arg_types.first() else {
            return plan_err!("{} takes one argument", self.name);
        };
        match self.name {
            "sum" | "avg" => match sum_avg_type(t, self.name == "avg") {
                Some(r) => Ok(r),
                None => plan_err!("{} over {t}", self.name.to_ascii_uppercase()),
            },
            _ => Ok(t.clone()),
        }
    }

    fn accumulator(&self, _acc_args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        exec_err!(
            "{} is evaluated by Riffle's runtime, not by DataFusion",
            self.name
        )
    }
}
