//! `DECIMAL` division and modulo with Flink's result types and rounding.
//!
//! Flink types `a / b` over exact numbers (integers count as `DECIMAL(3|5|10|19, 0)`) with at
//! least one `DECIMAL` as `DECIMAL(p1 - s1 + s2 + s, s)` where `s = max(6, s1 + p2 + 1)`, and
//! `a % b` as `DECIMAL(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))`; a precision above 38
//! keeps the integer digits and gives up scale down to 6. The quotient is rounded half-up to
//! the scale; a result that does not fit the precision is NULL; dividing by zero fails.
//!
//! The planner replaces such operations by calls of `decimal_divide(a, b)` / `decimal_mod(a, b)`
//! ([`decimal_division`]); DataFusion's own types and rounding differ.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator, ScalarUDF};

use super::row::{Arg, RowFunction};

const MAX_PRECISION: i32 = 38;

/// Precision and scale of an exact numeric type (None for other types).
fn exact(t: &DataType) -> Option<(i32, i32)> {
    Some(match t {
        DataType::Int8 => (3, 0),
        DataType::Int16 => (5, 0),
        DataType::Int32 => (10, 0),
        DataType::Int64 => (19, 0),
        DataType::Decimal128(p, s) => (i32::from(*p), i32::from(*s)),
        _ => return None,
    })
}

/// Flink's `adjustPrecisionScale`: over 38 digits, integer digits win and the scale shrinks to
/// no less than 6 (or the scale, when smaller).
fn adjusted(precision: i32, scale: i32) -> DataType {
    let (p, s) = if precision <= MAX_PRECISION {
        (precision, scale)
    } else {
        let integer_digits = precision - scale;
        (
            MAX_PRECISION,
            (MAX_PRECISION - integer_digits).max(scale.min(6)),
        )
    };
    DataType::Decimal128(p as u8, s as i8)
}

/// The result type of `a / b` (`divide`) or `a % b` over `left` and `right`, when Flink computes
/// it as a `DECIMAL` (both exact, at least one a `DECIMAL`).
fn result_type(left: &DataType, right: &DataType, divide: bool) -> Option<DataType> {
    if !matches!(left, DataType::Decimal128(..)) && !matches!(right, DataType::Decimal128(..)) {
        return None;
    }
    let ((p1, s1), (p2, s2)) = (exact(left)?, exact(right)?);
    Some(if divide {
        let s = 6.max(s1 + p2 + 1);
        adjusted(p1 - s1 + s2 + s, s)
    } else {
        let s = s1.max(s2);
        adjusted((p1 - s1).min(p2 - s2) + s, s)
    })
}

/// Replaces `/` and `%` over exact numbers with a `DECIMAL` operand in `expr` (over `schema`) by
/// calls of Riffle's `decimal_divide` / `decimal_mod` from `registry` (`MOD(a, b)` calls
/// [`remainder`] itself).
pub fn decimal_division(
    expr: Expr,
    schema: &DFSchema,
    registry: &std::collections::HashMap<String, Arc<ScalarUDF>>,
) -> DfResult<Transformed<Expr>> {
    expr.transform_up(|e| {
        let (left, right, name) = match &e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::Divide => (left.as_ref(), right.as_ref(), "decimal_divide"),
                Operator::Modulo => (left.as_ref(), right.as_ref(), "decimal_mod"),
                _ => return Ok(Transformed::no(e)),
            },
            _ => return Ok(Transformed::no(e)),
        };
        let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
            return Ok(Transformed::no(e));
        };
        let (Some(udf), Some(_)) = (
            registry.get(name),
            result_type(&l, &r, name == "decimal_divide"),
        ) else {
            return Ok(Transformed::no(e));
        };
        let call = ScalarFunction::new_udf(udf.clone(), vec![left.clone(), right.clone()]);
        Ok(Transformed::yes(Expr::ScalarFunction(call)))
    })
}

/// An exact number as (unscaled value, scale).
fn unscaled(v: &ScalarValue) -> Option<(i128, i32)> {
    Some(match v {
        ScalarValue::Int8(Some(i)) => (i128::from(*i), 0),
        ScalarValue::Int16(Some(i)) => (i128::from(*i), 0),
        ScalarValue::Int32(Some(i)) => (i128::from(*i), 0),
        ScalarValue::Int64(Some(i)) => (i128::from(*i), 0),
        ScalarValue::Decimal128(Some(u), _, s) => (*u, i32::from(*s)),
        _ => return None,
    })
}

/// `n × 10^shift / d` rounded half-up (away from zero at .5); None on overflow.
fn divide_half_up(n: i128, d: i128, shift: i32) -> Option<i128> {
    let (mut n, mut d) = (n, d);
    if shift >= 0 {
        n = n.checked_mul(10i128.checked_pow(shift as u32)?)?;
    } else {
        d = d.checked_mul(10i128.checked_pow((-shift) as u32)?)?;
    }
    let (q, r) = (n / d, n % d);
    let twice = r.unsigned_abs().checked_mul(2)?;
    Some(if twice >= d.unsigned_abs() {
        q + if (n < 0) == (d < 0) { 1 } else { -1 }
    } else {
        q
    })
}

/// The result type of `MOD(a, b)` over `left` and `right` when one is a `DECIMAL`.
pub(super) fn remainder_type(left: &DataType, right: &DataType) -> Option<DataType> {
    result_type(left, right, false)
}

/// `a % b` with a `DECIMAL` operand.
pub(super) fn remainder(a: &ScalarValue, b: &ScalarValue) -> DfResult<ScalarValue> {
    quotient_or_remainder(a, b, false)
}

/// `a / b` (`divide`) or `a % b` over exact numbers, one a `DECIMAL`.
fn quotient_or_remainder(a: &ScalarValue, b: &ScalarValue, divide: bool) -> DfResult<ScalarValue> {
    let (Some((a_units, sa)), Some((b_units, sb))) = (unscaled(a), unscaled(b)) else {
        return exec_err!("DECIMAL division expects exact numbers");
    };
    let Some(DataType::Decimal128(p, s)) = result_type(&a.data_type(), &b.data_type(), divide)
    else {
        return exec_err!("DECIMAL division expects a DECIMAL operand");
    };
    if b_units == 0 {
        return exec_err!("Division by zero");
    }
    let scale = i32::from(s);
    let value = if divide {
        divide_half_up(a_units, b_units, scale + sb - sa)
    } else {
        let align = |u: i128, from: i32| u.checked_mul(10i128.checked_pow((scale - from) as u32)?);
        align(a_units, sa)
            .zip(align(b_units, sb))
            .map(|(a, b)| a % b)
    };
    let fits = |u: &i128| u.unsigned_abs() < 10u128.pow(u32::from(p));
    Ok(ScalarValue::Decimal128(value.filter(fits), p, s))
}

/// `decimal_divide` and `decimal_mod`.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Any;
    let function = |name: &'static str, divide: bool| {
        RowFunction::new(name, &[&[Any, Any]], DataType::Null, move |v| {
            quotient_or_remainder(&v[0], &v[1], divide)
        })
        .returning(move |t| match t {
            [l, r] => result_type(l, r, divide).unwrap_or(DataType::Null),
            _ => DataType::Null,
        })
        // Flink types the quotient of NOT NULL operands NOT NULL.
        .keeping_not_null()
    };
    vec![
        function("decimal_divide", true),
        function("decimal_mod", false),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_flink() {
        let d = |p, s| DataType::Decimal128(p, s);
        assert_eq!(
            result_type(&d(10, 2), &DataType::Int32, true),
            Some(d(21, 13))
        );
        assert_eq!(
            result_type(&DataType::Int32, &d(2, 1), true),
            Some(d(17, 6))
        );
        assert_eq!(result_type(&d(38, 10), &d(38, 10), true), Some(d(38, 6)));
        assert_eq!(result_type(&d(10, 2), &d(5, 1), false), Some(d(6, 2)));
        assert_eq!(result_type(&DataType::Int32, &DataType::Int32, true), None);
    }

    #[test]
    fn quotients_round_half_up() {
        // 7.50 / 3 at scale 13: 750 × 10^(13 - 2) / 3.
        assert_eq!(divide_half_up(750, 3, 11), Some(25_000_000_000_000));
        // 0.05 / 3 = 0.0166666666666|67 → 0.0166666666667
        assert_eq!(divide_half_up(5, 3, 11), Some(166_666_666_667));
        assert_eq!(divide_half_up(-5, 3, 11), Some(-166_666_666_667));
        assert_eq!(divide_half_up(1, 2, 0), Some(1));
        assert_eq!(divide_half_up(-1, 2, 0), Some(-1));
    }
}
