//! Timestamp-minus-interval expressions (`ts - INTERVAL '5' SECOND`, the usual watermark
//! strategy) evaluated as `i64` millisecond arithmetic.
//!
//! DataFusion subtracts an interval from a timestamp element by element through calendar
//! arithmetic; for a fixed number of milliseconds on a millisecond timestamp the result is the
//! same as subtracting the milliseconds, which is a plain vectorised kernel.

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, TimestampMillisecondArray};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{DataType, TimeUnit, TimestampMillisecondType};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
use datafusion::physical_expr::PhysicalExpr;

/// `column ± millis` on a `TIMESTAMP(3)` column: recognised in a compiled expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TimeShift {
    column: usize,
    /// Milliseconds added to the column (negative for a subtraction).
    millis: i64,
}

impl TimeShift {
    /// The shift `expr` computes over `batch`-shaped input with schema `input`, when it is a
    /// millisecond timestamp column plus or minus an interval literal of whole milliseconds
    /// whose length does not depend on a time zone (no months; days only without a zone).
    pub(super) fn recognize(
        expr: &Arc<dyn PhysicalExpr>,
        input: &arrow::datatypes::Schema,
    ) -> Option<Self> {
        let binary = expr.as_ref().downcast_ref::<BinaryExpr>()?;
        let sign = match *binary.op() {
            Operator::Minus => -1,
            Operator::Plus => 1,
            _ => return None,
        };
        let column = binary.left().as_ref().downcast_ref::<Column>()?;
        let literal = binary.right().as_ref().downcast_ref::<Literal>()?;
        let zoned = match input.fields().get(column.index())?.data_type() {
            DataType::Timestamp(TimeUnit::Millisecond, zone) => zone.is_some(),
            _ => return None,
        };
        let (days, millis) = match literal.value() {
            ScalarValue::IntervalMonthDayNano(Some(v)) if v.months == 0 => {
                if v.nanoseconds % 1_000_000 != 0 {
                    return None;
                }
                (v.days, v.nanoseconds / 1_000_000)
            }
            ScalarValue::IntervalDayTime(Some(v)) => (v.days, i64::from(v.milliseconds)),
            _ => return None,
        };
        // A day in a time zone can be 23 or 25 hours long.
        if days != 0 && zoned {
            return None;
        }
        let length = i64::from(days)
            .checked_mul(86_400_000)?
            .checked_add(millis)?;
        Some(Self {
            column: column.index(),
            millis: length.checked_mul(sign)?,
        })
    }

    /// The shifted column of `batch`; `None` when a value would overflow (the caller then
    /// evaluates the expression the general way, which reports the error).
    pub(super) fn evaluate(&self, batch: &RecordBatch) -> Option<TimestampMillisecondArray> {
        let column = batch.columns().get(self.column)?;
        let times = column.as_primitive_opt::<TimestampMillisecondType>()?;
        let mut overflow = false;
        let values: ScalarBuffer<i64> = times
            .values()
            .iter()
            .map(|t| {
                t.checked_add(self.millis).unwrap_or_else(|| {
                    overflow = true;
                    0
                })
            })
            .collect();
        if overflow {
            // A NULL slot may hold any value: only valid ones decide.
            let real = (0..times.len())
                .any(|i| times.is_valid(i) && times.value(i).checked_add(self.millis).is_none());
            if real {
                return None;
            }
        }
        let shifted = TimestampMillisecondArray::new(values, times.nulls().cloned());
        Some(match times.timezone() {
            Some(zone) => shifted.with_timezone(zone),
            None => shifted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::ArrayRef;
    use arrow::datatypes::{Field, Schema};
    use riffle_plan::FlinkSession;

    fn schema(zone: Option<&str>) -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Millisecond, zone.map(Arc::from)),
                true,
            ),
        ])
    }

    fn compile(sql: &str, schema: &Schema) -> Arc<dyn PhysicalExpr> {
        FlinkSession::default()
            .physical_expr(sql, schema)
            .expect("compiles")
    }

    #[test]
    fn matches_the_general_evaluation() {
        let schema = Arc::new(schema(None));
        let ts: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![
            Some(1_000),
            None,
            Some(-5),
            Some(1_700_000_000_123),
        ]));
        let ids: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![1, 2, 3, 4]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ids, ts]).expect("batch");
        for sql in [
            "ts - INTERVAL '1' SECOND",
            "ts - INTERVAL '4' SECOND",
            "ts + INTERVAL '0.25' SECOND",
            "ts - INTERVAL '2' DAY",
            "ts - INTERVAL '1' MINUTE",
        ] {
            let expr = compile(sql, &schema);
            let shift = TimeShift::recognize(&expr, &schema).expect(sql);
            let general = expr
                .evaluate(&batch)
                .and_then(|v| v.into_array(batch.num_rows()))
                .expect("evaluates");
            let fast = shift.evaluate(&batch).expect("no overflow");
            assert_eq!(general.as_ref(), &fast as &dyn Array, "{sql}");
        }
    }

    #[test]
    fn leaves_zone_dependent_and_other_expressions_alone() {
        let zoned = schema(Some("+01:00"));
        for sql in ["ts - INTERVAL '1' DAY", "ts - INTERVAL '1' MONTH"] {
            assert_eq!(
                TimeShift::recognize(&compile(sql, &zoned), &zoned),
                None,
                "{sql}"
            );
        }
        assert!(
            TimeShift::recognize(&compile("ts - INTERVAL '1' SECOND", &zoned), &zoned).is_some()
        );
        let plain = schema(None);
        assert_eq!(TimeShift::recognize(&compile("ts", &plain), &plain), None);
    }

    #[test]
    fn gives_up_on_overflow() {
        let schema = Arc::new(schema(None));
        let ts: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![i64::MIN + 1]));
        let ids: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![1]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ids, ts]).expect("batch");
        let expr = compile("ts - INTERVAL '1' SECOND", &schema);
        let shift = TimeShift::recognize(&expr, &schema).expect("recognised");
        assert_eq!(shift.evaluate(&batch), None);
    }
}
