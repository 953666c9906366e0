//! Binary operations Flink accepts and DataFusion does not plan: equality between a `STRING`
//! and a `BOOLEAN` (without a common type), and an integer times an interval.
//!
//! Flink never finds such values equal: `s = b` is FALSE (`s <> b` TRUE) whatever the string
//! holds, even `'TRUE' = TRUE`, and NULL when either side is NULL. DataFusion has no common type
//! for the two and rejects the comparison, so these comparisons are planned as what they
//! evaluate to. Other comparisons of the two (`<`, `IS DISTINCT FROM`, ...) are left to
//! DataFusion, which rejects them as an unsupported implicit conversion (Flink casts the string
//! to BOOLEAN for `<`, failing on text that is not a boolean).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{lit, when, ExprSchemable};
use datafusion::sql::sqlparser::ast::BinaryOperator;

/// Plans `=` and `<>` between a string and a boolean (see the module documentation); DataFusion
/// plans every other binary operation.
#[derive(Debug)]
struct StringBooleanEquality;

impl ExprPlanner for StringBooleanEquality {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        let equal = match expr.op {
            BinaryOperator::Eq => false,
            BinaryOperator::NotEq => true,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let (Ok(l), Ok(r)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let mixed =
            (is_string(&l) && r == DataType::Boolean) || (l == DataType::Boolean && is_string(&r));
        if !mixed {
            return Ok(PlannerResult::Original(expr));
        }
        let either_null = expr.left.is_null().or(expr.right.is_null());
        let planned = when(either_null, lit(ScalarValue::Boolean(None))).otherwise(lit(equal))?;
        Ok(PlannerResult::Planned(planned))
    }
}

/// Plans `n * INTERVAL ..` and `INTERVAL .. * n` (an integer times an interval), which Flink
/// computes and DataFusion rejects, as a call of Riffle's interval multiplication.
#[derive(Debug)]
struct IntervalTimesInteger;

impl ExprPlanner for IntervalTimesInteger {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        if expr.op != BinaryOperator::Multiply {
            return Ok(PlannerResult::Original(expr));
        }
        let (Ok(l), Ok(r)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let interval = |t: &DataType| matches!(t, DataType::Interval(_));
        if !(interval(&l) && r.is_integer() || l.is_integer() && interval(&r)) {
            return Ok(PlannerResult::Original(expr));
        }
        let Some(f) = super::riffle_functions()
            .into_iter()
            .find(|f| f.name() == super::temporal::INTERVAL_MULTIPLY)
        else {
            return Ok(PlannerResult::Original(expr));
        };
        Ok(PlannerResult::Planned(
            Arc::new(f).call(vec![expr.left, expr.right]),
        ))
    }
}

/// The planner of integer-times-interval products, for the session's expression planners.
pub fn interval_times_integer() -> Arc<dyn ExprPlanner> {
    Arc::new(IntervalTimesInteger)
}

/// The planner of string/boolean (in)equalities, for the session's expression planners.
pub fn string_boolean_equality() -> Arc<dyn ExprPlanner> {
    Arc::new(StringBooleanEquality)
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}
