//! `DECIMAL` arithmetic with Flink's result types and rounding.
//!
//! Flink types `a / b` over exact numbers (integers count as `DECIMAL(3|5|10|19, 0)`) with at
//! least one `DECIMAL` as `DECIMAL(p1 - s1 + s2 + s, s)` where `s = max(6, s1 + p2 + 1)`,
//! `a % b` as `DECIMAL(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))`, `a * b` as
//! `DECIMAL(p1 + p2 + 1, s1 + s2)` and `a ± b` as
//! `DECIMAL(max(p1 - s1, p2 - s2) + max(s1, s2) + 1, max(s1, s2))`; a precision above 38 keeps
//! the integer digits and gives up scale down to 6. Results are rounded half-up to the scale; a
//! result that does not fit the precision is NULL; dividing by zero fails.
//!
//! The planner replaces `/` and `%` by calls of `decimal_divide(a, b)` / `decimal_mod(a, b)`
//! ([`decimal_division`]), whose types and rounding DataFusion does differently, and `*`, `+`,
//! `-` by `decimal_multiply` / `decimal_add` / `decimal_subtract` where Flink's type differs
//! from DataFusion's (above 38 digits, where DataFusion keeps the scale).

use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, AsArray};
use arrow::compute::kernels::arity::{binary, unary};
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::{i256, DataType, Decimal128Type};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::ColumnarValue;
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

/// An arithmetic operation on `DECIMAL`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Divide,
    Modulo,
    Multiply,
    Add,
    Subtract,
}

impl Op {
    /// Riffle's function computing the operation.
    fn function(self) -> &'static str {
        match self {
            Op::Divide => "decimal_divide",
            Op::Modulo => "decimal_mod",
            Op::Multiply => "decimal_multiply",
            Op::Add => "decimal_add",
            Op::Subtract => "decimal_subtract",
        }
    }
}

/// The result type of `left op right` when Flink computes it as a `DECIMAL` (both exact, at
/// least one a `DECIMAL`).
fn result_type(left: &DataType, right: &DataType, op: Op) -> Option<DataType> {
    if !matches!(left, DataType::Decimal128(..)) && !matches!(right, DataType::Decimal128(..)) {
        return None;
    }
    let ((p1, s1), (p2, s2)) = (exact(left)?, exact(right)?);
    Some(match op {
        Op::Divide => {
            let s = 6.max(s1 + p2 + 1);
            adjusted(p1 - s1 + s2 + s, s)
        }
        Op::Modulo => {
            let s = s1.max(s2);
            adjusted((p1 - s1).min(p2 - s2) + s, s)
        }
        Op::Multiply => adjusted(p1 + p2 + 1, s1 + s2),
        Op::Add | Op::Subtract => {
            let s = s1.max(s2);
            adjusted((p1 - s1).max(p2 - s2) + s + 1, s)
        }
    })
}

/// Replaces `/` and `%` over exact numbers with a `DECIMAL` operand in `expr` (over `schema`) by
/// calls of Riffle's `decimal_divide` / `decimal_mod` from `registry` (`MOD(a, b)` calls
/// [`remainder`] itself), and `*`, `+`, `-` by `decimal_multiply` / `decimal_add` /
/// `decimal_subtract` where DataFusion would type them differently.
pub fn decimal_division(
    expr: Expr,
    schema: &DFSchema,
    registry: &std::collections::HashMap<String, Arc<ScalarUDF>>,
) -> DfResult<Transformed<Expr>> {
    expr.transform_up(|e| {
        let (left, right, op) = match &e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::Divide => (left.as_ref(), right.as_ref(), Op::Divide),
                Operator::Modulo => (left.as_ref(), right.as_ref(), Op::Modulo),
                Operator::Multiply => (left.as_ref(), right.as_ref(), Op::Multiply),
                Operator::Plus => (left.as_ref(), right.as_ref(), Op::Add),
                Operator::Minus => (left.as_ref(), right.as_ref(), Op::Subtract),
                _ => return Ok(Transformed::no(e)),
            },
            _ => return Ok(Transformed::no(e)),
        };
        let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema)) else {
            return Ok(Transformed::no(e));
        };
        let (Some(udf), Some(flink)) = (registry.get(op.function()), result_type(&l, &r, op))
        else {
            return Ok(Transformed::no(e));
        };
        let exact_elsewhere = matches!(op, Op::Multiply | Op::Add | Op::Subtract)
            && e.get_type(schema).is_ok_and(|t| t == flink);
        if exact_elsewhere {
            // DataFusion types and computes these as Flink does.
            return Ok(Transformed::no(e));
        }
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

/// `units` at scale `from` rescaled to scale `to`, rounded half-up (away from zero at .5); None
/// on overflow.
fn rescale(units: i256, from: i32, to: i32) -> Option<i256> {
    let ten = i256::from_i128(10);
    if to >= from {
        return units.checked_mul(ten.checked_pow(u32::try_from(to - from).ok()?)?);
    }
    let divisor = ten.checked_pow(u32::try_from(from - to).ok()?)?;
    let (q, r) = (units.checked_div(divisor)?, units.checked_rem(divisor)?);
    let twice = r.checked_abs()?.checked_mul(i256::from_i128(2))?;
    Some(if twice >= divisor {
        q.checked_add(units.signum())?
    } else {
        q
    })
}

/// `a * b`, `a + b` or `a - b` over exact numbers, one a `DECIMAL`, at Flink's result type.
fn product_or_sum(a: &ScalarValue, b: &ScalarValue, op: Op) -> DfResult<ScalarValue> {
    let (Some((a_units, sa)), Some((b_units, sb))) = (unscaled(a), unscaled(b)) else {
        return exec_err!("DECIMAL arithmetic expects exact numbers");
    };
    let Some(DataType::Decimal128(p, s)) = result_type(&a.data_type(), &b.data_type(), op) else {
        return exec_err!("DECIMAL arithmetic expects a DECIMAL operand");
    };
    let (a_units, b_units) = (i256::from_i128(a_units), i256::from_i128(b_units));
    let exact = match op {
        Op::Multiply => a_units.checked_mul(b_units).map(|u| (u, sa + sb)),
        _ => {
            let common = sa.max(sb);
            let (x, y) = (rescale(a_units, sa, common), rescale(b_units, sb, common));
            x.zip(y)
                .and_then(|(x, y)| {
                    if op == Op::Add {
                        x.checked_add(y)
                    } else {
                        x.checked_sub(y)
                    }
                })
                .map(|u| (u, common))
        }
    };
    let value = exact
        .and_then(|(units, scale)| rescale(units, scale, i32::from(s)))
        .and_then(|u| u.to_i128())
        .filter(|u| u.unsigned_abs() < 10u128.pow(u32::from(p)));
    Ok(ScalarValue::Decimal128(value, p, s))
}

/// `a * b` over whole batches where no product can round or overflow: when Flink's type keeps
/// every digit (precision `p1 + p2 + 1` ≤ 38, scale `s1 + s2`), the product of the unscaled
/// values is the result's unscaled value, as [`product_or_sum`] computes it row by row. `None`
/// (use the rule) otherwise, and when no argument is an array.
fn exact_products(args: &[ColumnarValue], result: &DataType) -> DfResult<Option<ArrayRef>> {
    let [a, b] = args else {
        return Ok(None);
    };
    let (Some((p1, s1)), Some((p2, s2))) = (exact(&a.data_type()), exact(&b.data_type())) else {
        return Ok(None);
    };
    let DataType::Decimal128(p, s) = *result else {
        return Ok(None);
    };
    if i32::from(s) != s1 + s2 || i32::from(p) < p1 + p2 {
        return Ok(None);
    }
    // Unscaled values: integers become DECIMAL(38, 0), which every one of them fits.
    let units = |v: &ColumnarValue, scale: i32| -> DfResult<ColumnarValue> {
        let wide = DataType::Decimal128(MAX_PRECISION as u8, scale as i8);
        Ok(match v {
            ColumnarValue::Array(a) => ColumnarValue::Array(cast(a, &wide)?),
            ColumnarValue::Scalar(v) => ColumnarValue::Scalar(v.cast_to(&wide)?),
        })
    };
    let product = match (units(a, s1)?, units(b, s2)?) {
        (ColumnarValue::Array(x), ColumnarValue::Array(y)) => binary(
            x.as_primitive::<Decimal128Type>(),
            y.as_primitive::<Decimal128Type>(),
            |x: i128, y: i128| x * y,
        )?,
        (ColumnarValue::Array(x), ColumnarValue::Scalar(c))
        | (ColumnarValue::Scalar(c), ColumnarValue::Array(x)) => match c {
            ScalarValue::Decimal128(Some(c), ..) => {
                unary::<_, _, Decimal128Type>(x.as_primitive::<Decimal128Type>(), |x| x * c)
            }
            _ => return Ok(Some(new_null_array(result, x.len()))),
        },
        _ => return Ok(None),
    };
    Ok(Some(Arc::new(product.with_precision_and_scale(p, s)?)))
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
    result_type(left, right, Op::Modulo)
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
    let op = if divide { Op::Divide } else { Op::Modulo };
    let Some(DataType::Decimal128(p, s)) = result_type(&a.data_type(), &b.data_type(), op) else {
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

/// `decimal_divide`, `decimal_mod`, `decimal_multiply`, `decimal_add` and `decimal_subtract`.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Any;
    let function = |op: Op| {
        RowFunction::new(
            op.function(),
            &[&[Any, Any]],
            DataType::Null,
            move |v| match op {
                Op::Divide | Op::Modulo => quotient_or_remainder(&v[0], &v[1], op == Op::Divide),
                Op::Multiply | Op::Add | Op::Subtract => product_or_sum(&v[0], &v[1], op),
            },
        )
        .with_kernel(move |args, result| match op {
            Op::Multiply => exact_products(args, result),
            _ => Ok(None),
        })
        .returning(move |t| match t {
            [l, r] => result_type(l, r, op).unwrap_or(DataType::Null),
            _ => DataType::Null,
        })
        // Flink types the result of NOT NULL operands NOT NULL.
        .keeping_not_null()
    };
    [Op::Divide, Op::Modulo, Op::Multiply, Op::Add, Op::Subtract]
        .into_iter()
        .map(function)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_flink() {
        let d = |p, s| DataType::Decimal128(p, s);
        assert_eq!(
            result_type(&d(10, 2), &DataType::Int32, Op::Divide),
            Some(d(21, 13))
        );
        assert_eq!(
            result_type(&DataType::Int32, &d(2, 1), Op::Divide),
            Some(d(17, 6))
        );
        assert_eq!(
            result_type(&d(38, 10), &d(38, 10), Op::Divide),
            Some(d(38, 6))
        );
        assert_eq!(result_type(&d(10, 2), &d(5, 1), Op::Modulo), Some(d(6, 2)));
        assert_eq!(
            result_type(&DataType::Int32, &DataType::Int32, Op::Divide),
            None
        );
        assert_eq!(
            result_type(&d(38, 10), &d(38, 10), Op::Multiply),
            Some(d(38, 6))
        );
        assert_eq!(result_type(&d(38, 10), &d(38, 10), Op::Add), Some(d(38, 9)));
        assert_eq!(
            result_type(&d(10, 2), &d(10, 2), Op::Multiply),
            Some(d(21, 4))
        );
    }

    #[test]
    fn products_and_sums_round_half_up_to_flink_scale() {
        let d = |u: i128, p: u8, s: i8| ScalarValue::Decimal128(Some(u), p, s);
        // 7.2500000000 × 7.2500000000 = 52.5625 at scale 6.
        let square = product_or_sum(
            &d(72_500_000_000, 38, 10),
            &d(72_500_000_000, 38, 10),
            Op::Multiply,
        );
        assert_eq!(square.ok(), Some(d(52_562_500, 38, 6)));
        // 0.0000005 × 1 rounds half-up to 0.000001 at scale 6 (scale 20 → 6).
        let tiny = product_or_sum(&d(5_000_000_000_000, 38, 19), &d(1, 38, 0), Op::Multiply);
        assert_eq!(tiny.ok(), Some(d(1, 38, 6)));
        let sum = product_or_sum(&d(15, 38, 10), &d(-5, 38, 10), Op::Add);
        assert_eq!(sum.ok(), Some(d(1, 38, 9)));
    }

    #[test]
    fn batch_products_equal_the_rule_row_by_row() {
        use arrow::array::{Array, Decimal128Array, Int64Array};
        let prices: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(0),
            Some(-7),
            None,
            Some(i64::MAX),
            Some(i64::MIN),
            Some(123_456_789),
        ]));
        let rates: ArrayRef = Arc::new(
            Decimal128Array::from(vec![
                Some(908),
                Some(-999),
                Some(1),
                None,
                Some(-1),
                Some(5),
            ])
            .with_precision_and_scale(3, 3)
            .unwrap(),
        );
        let rate = ScalarValue::Decimal128(Some(908), 3, 3);
        let no_rate = ScalarValue::Decimal128(None, 3, 3);
        let cases = [
            [
                ColumnarValue::Scalar(rate.clone()),
                ColumnarValue::Array(prices.clone()),
            ],
            [
                ColumnarValue::Array(prices.clone()),
                ColumnarValue::Scalar(rate),
            ],
            [
                ColumnarValue::Array(rates.clone()),
                ColumnarValue::Array(prices.clone()),
            ],
            [
                ColumnarValue::Scalar(no_rate),
                ColumnarValue::Array(prices.clone()),
            ],
        ];
        for args in cases {
            let types: Vec<DataType> = args.iter().map(|a| a.data_type()).collect();
            let result = result_type(&types[0], &types[1], Op::Multiply).unwrap();
            let batch = exact_products(&args, &result)
                .unwrap()
                .expect("a batch product");
            assert_eq!(batch.data_type(), &result);
            for row in 0..prices.len() {
                let value = |a: &ColumnarValue| match a {
                    ColumnarValue::Array(a) => ScalarValue::try_from_array(a, row).unwrap(),
                    ColumnarValue::Scalar(s) => s.clone(),
                };
                let by_rule = if value(&args[0]).is_null() || value(&args[1]).is_null() {
                    ScalarValue::try_from(&result).unwrap()
                } else {
                    product_or_sum(&value(&args[0]), &value(&args[1]), Op::Multiply).unwrap()
                };
                assert_eq!(ScalarValue::try_from_array(&batch, row).unwrap(), by_rule);
            }
        }
        // Products that would round (scale over 38 digits) are left to the rule.
        let wide = ScalarValue::Decimal128(Some(1), 38, 10);
        let args = [
            ColumnarValue::Scalar(wide.clone()),
            ColumnarValue::Array(rates),
        ];
        let result = result_type(&wide.data_type(), &DataType::Decimal128(3, 3), Op::Multiply);
        assert!(exact_products(&args, &result.unwrap()).unwrap().is_none());
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
