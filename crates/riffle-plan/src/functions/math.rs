//! Flink's numeric functions where DataFusion has none or differs (result types, rounding
//! mode, integer overflow, signed zeros).

use arrow::array::{ArrayRef, AsArray};
use arrow::compute::kernels::arity::unary;
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::ColumnarValue;

use super::row::{double, int, Arg, RowFunction};

/// The numeric functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Double, Exact, Int};
    let unary = |name, f: fn(f64) -> f64| {
        RowFunction::new(name, &[&[Double]], DataType::Float64, move |v| {
            Ok(ScalarValue::Float64(double(&v[0]).map(f)))
        })
    };
    vec![
        unary("exp", f64::exp),
        unary("ln", f64::ln),
        unary("log10", f64::log10),
        // Flink computes LOG2 as ln(x) / ln(2) (not a dedicated log2).
        unary("log2", |x| x.ln() / 2f64.ln()),
        unary("sqrt", f64::sqrt),
        unary("sinh", super::fdlibm::sinh),
        unary("cosh", super::fdlibm::cosh),
        unary("tanh", super::fdlibm::tanh),
        // Flink computes COT as 1 / tan(x).
        unary("cot", |x| 1.0 / x.tan()),
        unary("asin", super::fdlibm::asin),
        unary("acos", super::fdlibm::acos),
        unary("atan", super::fdlibm::atan),
        RowFunction::new(
            "log",
            &[&[Double], &[Double, Double]],
            DataType::Float64,
            |v| {
                Ok(ScalarValue::Float64(match v {
                    [x] => double(x).map(f64::ln),
                    [base, x] => double(x).zip(double(base)).map(|(x, b)| x.ln() / b.ln()),
                    _ => None,
                }))
            },
        ),
        RowFunction::new("power", &[&[Double, Double]], DataType::Float64, |v| {
            Ok(ScalarValue::Float64(
                double(&v[0]).zip(double(&v[1])).map(|(b, e)| b.powf(e)),
            ))
        })
        .alias("pow"),
        RowFunction::new("e", &[&[]], DataType::Float64, |_| {
            Ok(ScalarValue::Float64(Some(std::f64::consts::E)))
        }),
        RowFunction::new("abs", &[&[Any]], DataType::Null, |v| abs(&v[0]))
            .returning(numeric_same_type),
        // BIN(n): Long.toBinaryString (two's complement for negatives).
        RowFunction::new("bin", &[&[Int]], DataType::Utf8, |v| {
            Ok(ScalarValue::Utf8(
                int(&v[0]).map(|x| format!("{:b}", x as u64)),
            ))
        }),
        // HEX(n): Long.toHexString upper-cased; HEX(s): the UTF-8 bytes in upper-case hex.
        RowFunction::new("hex", &[&[Int], &[Arg::Str]], DataType::Utf8, |v| {
            Ok(ScalarValue::Utf8(match (int(&v[0]), &v[0]) {
                (Some(x), _) => Some(format!("{:X}", x as u64)),
                (None, ScalarValue::Utf8(Some(s))) => {
                    Some(s.bytes().map(|b| format!("{b:02X}")).collect())
                }
                _ => None,
            }))
        }),
        RowFunction::new("sign", &[&[Any]], DataType::Null, |v| sign(&v[0]))
            .returning(numeric_same_type),
        RowFunction::new("ceil", &[&[Any]], DataType::Null, |v| {
            ceil_floor(&v[0], true)
        })
        .returning(ceil_floor_type)
        .alias("ceiling"),
        RowFunction::new("floor", &[&[Any]], DataType::Null, |v| {
            ceil_floor(&v[0], false)
        })
        .returning(ceil_floor_type),
        RowFunction::new(
            "mod",
            &[&[Int, Int], &[Exact, Exact]],
            DataType::Null,
            |v| {
                if super::decimal::remainder_type(&v[0].data_type(), &v[1].data_type()).is_some() {
                    return super::decimal::remainder(&v[0], &v[1]);
                }
                let (a, b) = (int(&v[0]).unwrap_or(0), int(&v[1]).unwrap_or(0));
                match a.checked_rem(b) {
                    Some(r) => Ok(ScalarValue::Int64(Some(r))),
                    None if b == 0 => exec_err!("/ by zero"),
                    None => Ok(ScalarValue::Int64(Some(0))),
                }
            },
        )
        .returning(|t| {
            if let [l, r] = t {
                if let Some(decimal) = super::decimal::remainder_type(l, r) {
                    return decimal;
                }
            }
            if t.contains(&DataType::Int64) {
                DataType::Int64
            } else {
                DataType::Int32
            }
        })
        .with_kernel(integer_remainders),
        RowFunction::new("round", &[&[Any], &[Any, Int]], DataType::Null, |v| {
            round(&v[0], v.get(1).and_then(int).unwrap_or(0), Rounding::HalfUp)
        })
        .returning_with_constants(|t, c| rounded_type(t, c, Rounding::HalfUp)),
        RowFunction::new("truncate", &[&[Any], &[Any, Int]], DataType::Null, |v| {
            round(&v[0], v.get(1).and_then(int).unwrap_or(0), Rounding::Down)
        })
        .returning_with_constants(|t, c| rounded_type(t, c, Rounding::Down)),
    ]
}

/// `MOD(a, n)` over a batch of integers `a` and a constant integer `n` other than 0: Java's `%`
/// (the sign of `a`; `MIN % -1` is 0) element by element, as the rule computes it row by row.
/// `None` (use the rule) for anything else, such as a divisor that may be 0.
fn integer_remainders(args: &[ColumnarValue], result: &DataType) -> DfResult<Option<ArrayRef>> {
    let [ColumnarValue::Array(values), ColumnarValue::Scalar(divisor)] = args else {
        return Ok(None);
    };
    let integer = |t: &DataType| {
        matches!(
            t,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    };
    if !integer(values.data_type()) || !integer(result) {
        return Ok(None);
    }
    let Some(n) = int(divisor).filter(|n| *n != 0) else {
        return Ok(None);
    };
    let wide = cast(values, &DataType::Int64)?;
    let remainders =
        unary::<_, _, Int64Type>(wide.as_primitive::<Int64Type>(), |a| a.wrapping_rem(n));
    // Each remainder is smaller than the divisor, which has the arguments' type.
    Ok(Some(cast(&remainders, result)?))
}

/// The type of the first argument (numeric functions that keep it).
fn numeric_same_type(types: &[DataType]) -> DataType {
    types.first().cloned().unwrap_or(DataType::Null)
}

/// `ABS`: Java's `Math.abs` (the minimum integer stays negative).
fn abs(v: &ScalarValue) -> DfResult<ScalarValue> {
    Ok(match v {
        ScalarValue::Int8(x) => ScalarValue::Int8(x.map(i8::wrapping_abs)),
        ScalarValue::Int16(x) => ScalarValue::Int16(x.map(i16::wrapping_abs)),
        ScalarValue::Int32(x) => ScalarValue::Int32(x.map(i32::wrapping_abs)),
        ScalarValue::Int64(x) => ScalarValue::Int64(x.map(i64::wrapping_abs)),
        ScalarValue::Float32(x) => ScalarValue::Float32(x.map(f32::abs)),
        ScalarValue::Float64(x) => ScalarValue::Float64(x.map(f64::abs)),
        ScalarValue::Decimal128(x, p, s) => ScalarValue::Decimal128(x.map(i128::abs), *p, *s),
        other => return exec_err!("ABS does not accept {}", other.data_type()),
    })
}

/// `SIGN`: -1, 0 or 1 in the argument's type; `Math.signum` for floating point (keeps -0.0
/// and NaN).
fn sign(v: &ScalarValue) -> DfResult<ScalarValue> {
    Ok(match v {
        ScalarValue::Int8(x) => ScalarValue::Int8(x.map(i8::signum)),
        ScalarValue::Int16(x) => ScalarValue::Int16(x.map(i16::signum)),
        ScalarValue::Int32(x) => ScalarValue::Int32(x.map(i32::signum)),
        ScalarValue::Int64(x) => ScalarValue::Int64(x.map(i64::signum)),
        ScalarValue::Float32(x) => ScalarValue::Float32(x.map(java_signum32)),
        ScalarValue::Float64(x) => ScalarValue::Float64(x.map(java_signum)),
        ScalarValue::Decimal128(x, p, s) => ScalarValue::Decimal128(
            x.map(|x| x.signum() * 10i128.pow(u32::from(*s as u8))),
            *p,
            *s,
        ),
        other => return exec_err!("SIGN does not accept {}", other.data_type()),
    })
}

fn java_signum(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        x
    } else {
        x.signum()
    }
}

fn java_signum32(x: f32) -> f32 {
    if x == 0.0 || x.is_nan() {
        x
    } else {
        x.signum()
    }
}

/// `CEIL`/`FLOOR` of a number: DECIMAL results have scale 0.
fn ceil_floor_type(types: &[DataType]) -> DataType {
    match types.first() {
        Some(DataType::Decimal128(p, _)) => DataType::Decimal128(*p, 0),
        Some(t) => t.clone(),
        None => DataType::Null,
    }
}

fn ceil_floor(v: &ScalarValue, ceil: bool) -> DfResult<ScalarValue> {
    Ok(match v {
        ScalarValue::Float64(x) => {
            ScalarValue::Float64(x.map(|x| if ceil { x.ceil() } else { x.floor() }))
        }
        ScalarValue::Float32(x) => {
            ScalarValue::Float32(x.map(|x| if ceil { x.ceil() } else { x.floor() }))
        }
        ScalarValue::Decimal128(x, p, s) => {
            let unit = 10i128.pow(u32::from(*s as u8));
            let f = |x: i128| {
                let q = x.div_euclid(unit);
                if ceil && x.rem_euclid(unit) != 0 {
                    q + 1
                } else {
                    q
                }
            };
            ScalarValue::Decimal128(x.map(f), *p, 0)
        }
        i if i.data_type().is_integer() => i.clone(),
        other => return exec_err!("CEIL/FLOOR does not accept {}", other.data_type()),
    })
}

/// Rounding of `ROUND` (half away from zero) and `TRUNCATE` (toward zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rounding {
    HalfUp,
    Down,
}

/// Flink's result type of `ROUND`/`TRUNCATE(DECIMAL(p, s), r)` for a constant `r`: scale
/// `min(s, max(r, 0))`, and rounding may carry into one more integer digit.
fn rounded_type(
    types: &[DataType],
    constants: &[Option<&ScalarValue>],
    mode: Rounding,
) -> DataType {
    match types.first() {
        Some(DataType::Decimal128(p, s)) => {
            let digits = match constants.get(1) {
                None => Some(0),
                Some(c) => c.and_then(int),
            };
            let Some(digits) = digits else {
                return DataType::Decimal128(*p, *s);
            };
            let scale = digits.clamp(0, i64::from(*s)) as i8;
            let precision = match mode {
                Rounding::HalfUp => i16::from(*p) - i16::from(*s) + i16::from(scale) + 1,
                Rounding::Down => i16::from(*p),
            };
            DataType::Decimal128(precision.clamp(1, 38) as u8, scale)
        }
        Some(t) => t.clone(),
        None => DataType::Null,
    }
}

/// `x` (an integer in units of 10^-scale) rounded to `digits` decimal places, still in units
/// of 10^-scale.
fn round_units(x: i128, scale: i64, digits: i64, mode: Rounding) -> Option<i128> {
    if digits >= scale {
        return Some(x);
    }
    let unit = 10i128.checked_pow(u32::try_from(scale - digits).ok()?)?;
    let (q, r) = (x / unit, x % unit);
    let q = match mode {
        Rounding::Down => q,
        Rounding::HalfUp if r.abs() * 2 >= unit => q + x.signum(),
        Rounding::HalfUp => q,
    };
    q.checked_mul(unit)
}

fn round(v: &ScalarValue, digits: i64, mode: Rounding) -> DfResult<ScalarValue> {
    let int = |x: i128| round_units(x, 0, digits, mode);
    Ok(match v {
        // Java narrows the rounded BigDecimal with intValue()/longValue(): wraps around.
        ScalarValue::Int8(x) => ScalarValue::Int8(x.and_then(|x| int(x.into())).map(|x| x as i8)),
        ScalarValue::Int16(x) => {
            ScalarValue::Int16(x.and_then(|x| int(x.into())).map(|x| x as i16))
        }
        ScalarValue::Int32(x) => {
            ScalarValue::Int32(x.and_then(|x| int(x.into())).map(|x| x as i32))
        }
        ScalarValue::Int64(x) => {
            ScalarValue::Int64(x.and_then(|x| int(x.into())).map(|x| x as i64))
        }
        ScalarValue::Float64(x) => ScalarValue::Float64(x.map(|x| round_double(x, digits, mode))),
        ScalarValue::Float32(x) => {
            ScalarValue::Float32(x.map(|x| round_double(f64::from(x), digits, mode) as f32))
        }
        ScalarValue::Decimal128(x, p, s) => {
            let scale = i64::from(*s);
            let new_scale = digits.clamp(0, scale);
            let units = x.and_then(|x| round_units(x, scale, digits, mode));
            let down = 10i128.pow(u32::try_from(scale - new_scale).unwrap_or(0));
            ScalarValue::Decimal128(units.map(|u| u / down), *p, new_scale as i8)
        }
        other => return exec_err!("ROUND does not accept {}", other.data_type()),
    })
}

/// Rounds the decimal representation Java prints for `x` (`BigDecimal.valueOf(x)`).
fn round_double(x: f64, digits: i64, mode: Rounding) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Shortest round-trip digits, as Double.toString chooses them.
    let repr = format!("{x:e}");
    let Some((mantissa, exponent)) = repr.split_once('e') else {
        return x;
    };
    let Ok(exponent) = exponent.parse::<i64>() else {
        return x;
    };
    let negative = mantissa.starts_with('-');
    let digits_only: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let Ok(units) = digits_only.parse::<i128>() else {
        return x;
    };
    let scale = digits_only.len() as i64 - 1 - exponent;
    let units = if negative { -units } else { units };
    let Some(rounded) = round_units(units, scale, digits, mode) else {
        return x;
    };
    let value = format!("{rounded}e{}", -scale);
    let out = value.parse::<f64>().unwrap_or(x);
    // BigDecimal has no negative zero.
    if out == 0.0 {
        0.0
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn batch_remainders_follow_java() {
        use arrow::array::{Int32Array, Int64Array};
        let values: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(7),
            Some(-7),
            None,
            Some(i64::MIN),
            Some(0),
        ]));
        let rem = |n: i64| {
            let args = [
                ColumnarValue::Array(values.clone()),
                ColumnarValue::Scalar(ScalarValue::Int64(Some(n))),
            ];
            integer_remainders(&args, &DataType::Int64).unwrap()
        };
        let expected = |r: Vec<Option<i64>>| Some(Arc::new(Int64Array::from(r)) as ArrayRef);
        assert_eq!(
            rem(3),
            expected(vec![Some(1), Some(-1), None, Some(-2), Some(0)])
        );
        assert_eq!(
            rem(-3),
            expected(vec![Some(1), Some(-1), None, Some(-2), Some(0)])
        );
        assert_eq!(
            rem(-1),
            expected(vec![Some(0), Some(0), None, Some(0), Some(0)])
        );
        // Division by zero is the rule's to report.
        assert_eq!(rem(0), None);
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(-5), Some(123)]));
        let args = [
            ColumnarValue::Array(ints),
            ColumnarValue::Scalar(ScalarValue::Int32(Some(4))),
        ];
        let by_kernel = integer_remainders(&args, &DataType::Int32).unwrap();
        assert_eq!(
            by_kernel,
            Some(Arc::new(Int32Array::from(vec![Some(-1), Some(3)])) as ArrayRef)
        );
    }

    #[test]
    fn rounding_follows_big_decimal() {
        assert_eq!(round_double(-2.5, 0, Rounding::HalfUp), -3.0);
        assert_eq!(round_double(2.675, 2, Rounding::HalfUp), 2.68);
        assert_eq!(round_double(3.5, 0, Rounding::HalfUp), 4.0);
        assert_eq!(round_double(-0.0, 0, Rounding::HalfUp), 0.0);
        assert_eq!(
            round_units(2_147_483_647, 0, -1, Rounding::HalfUp),
            Some(2_147_483_650)
        );
        assert_eq!(round_units(12_346, 2, 1, Rounding::Down), Some(12_340));
    }
}
