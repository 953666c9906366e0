//! `CAST` and `TRY_CAST` from `STRING` with Flink's parsing rules.
//!
//! Flink trims the string; integers accept a fraction that is dropped (`'3.7'` → 3) but no
//! exponent; `DOUBLE` follows Java's `Double.parseDouble`; `DECIMAL` rounds half-up to the
//! scale and is NULL when the digits do not fit; `BOOLEAN` accepts `t/true/y/yes/1` and
//! `f/false/n/no/0`; dates are `yyyy-M-d` (a time after a space is ignored), timestamps
//! `yyyy-M-d[ H:m[:s[.fraction]]]`, times `H:m[:s[.fraction]]`. An invalid string fails the job
//! (`CAST`) or gives NULL (`TRY_CAST`).
//!
//! The planner replaces such casts by calls of `cast_string(s, 'TYPE')` /
//! `try_cast_string(s, 'TYPE')` ([`string_casts`]).

use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF};

use super::encoding::is_java_number;
use super::row::{is_text, text, Arg, RowFunction};
use crate::types::{arrow_type, flink_type};

/// True when a cast from a string to `target` is done by [`string_casts`].
pub fn is_string_cast_target(target: &DataType) -> bool {
    matches!(
        target,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
            | DataType::Boolean
            | DataType::Date32
            | DataType::Timestamp(_, None)
            | DataType::Time32(_)
            | DataType::Time64(_)
    )
}

/// Replaces casts from strings (see [`is_string_cast_target`]) in `expr` over `schema` by calls
/// of Riffle's Flink cast functions from `registry`.
pub fn string_casts(
    expr: Expr,
    schema: &DFSchema,
    registry: &std::collections::HashMap<String, Arc<ScalarUDF>>,
) -> DfResult<Transformed<Expr>> {
    expr.transform_up(|e| {
        let (inner, target, name) = match &e {
            Expr::Cast(c) => (&c.expr, c.field.data_type(), "cast_string"),
            Expr::TryCast(c) => (&c.expr, c.field.data_type(), "try_cast_string"),
            _ => return Ok(Transformed::no(e)),
        };
        let Ok(source) = inner.get_type(schema) else {
            return Ok(Transformed::no(e));
        };
        let Some(udf) = registry.get(name) else {
            return Ok(Transformed::no(e));
        };
        if !is_text(&source) || !is_string_cast_target(target) {
            return Ok(Transformed::no(e));
        }
        let type_name = Expr::Literal(ScalarValue::Utf8(Some(flink_type(target, true))), None);
        let call = ScalarFunction::new_udf(udf.clone(), vec![inner.as_ref().clone(), type_name]);
        Ok(Transformed::yes(Expr::ScalarFunction(call)))
    })
}

/// The target type named by the constant second argument.
fn target_type(constants: &[Option<&ScalarValue>]) -> DataType {
    constants
        .get(1)
        .copied()
        .flatten()
        .and_then(text)
        .and_then(|name| riffle_sql::parse_data_type(name).ok())
        .and_then(|t| arrow_type(&t).ok())
        .unwrap_or(DataType::Null)
}

/// `cast_string` (fails on invalid input) and `try_cast_string` (NULL).
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Str;
    let cast = |name, strict_errors: bool| {
        RowFunction::new(name, &[&[Str, Str]], DataType::Null, move |v| {
            let target = target_type(&[None, Some(&v[1])]);
            let s = text(&v[0]).unwrap_or_default();
            match parse(s, &target) {
                Some(value) => Ok(value),
                None if strict_errors => error(s, &target),
                None => Ok(ScalarValue::try_from(&target)?),
            }
        })
        .returning_with_constants(|_, constants| target_type(constants))
    };
    vec![cast("cast_string", true), cast("try_cast_string", false)]
}

fn error(s: &str, target: &DataType) -> DfResult<ScalarValue> {
    match target {
        DataType::Date32 | DataType::Timestamp(..) | DataType::Time32(_) | DataType::Time64(_) => {
            exec_err!("For input string: '{s}'.")
        }
        _ => exec_err!("For input string: '{s}'. Invalid character found."),
    }
}

/// Flink's value of the string `s` as `target`; None when `s` is not valid.
fn parse(s: &str, target: &DataType) -> Option<ScalarValue> {
    // Flink trims ASCII whitespace and control characters.
    let s = s.trim_matches(|c: char| c <= ' ');
    Some(match target {
        DataType::Int8 => ScalarValue::Int8(Some(i8::try_from(parse_integer(s)?).ok()?)),
        DataType::Int16 => ScalarValue::Int16(Some(i16::try_from(parse_integer(s)?).ok()?)),
        DataType::Int32 => ScalarValue::Int32(Some(i32::try_from(parse_integer(s)?).ok()?)),
        DataType::Int64 => ScalarValue::Int64(Some(parse_integer(s)?)),
        DataType::Float64 => ScalarValue::Float64(Some(parse_double(s)?)),
        DataType::Float32 => ScalarValue::Float32(Some(parse_double(s)? as f32)),
        DataType::Decimal128(p, sc) => {
            ScalarValue::Decimal128(Some(parse_decimal(s, *p, *sc)?), *p, *sc)
        }
        DataType::Boolean => ScalarValue::Boolean(Some(match s.to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "1" => true,
            "f" | "false" | "n" | "no" | "0" => false,
            _ => return None,
        })),
        DataType::Date32 => {
            let date = s.split(' ').next().unwrap_or(s);
            ScalarValue::Date32(Some(i32::try_from(parse_date(date)?).ok()?))
        }
        DataType::Timestamp(unit, None) => {
            let (date, time) = match s.split_once(' ') {
                Some((d, t)) => (d, Some(t.trim_start())),
                None => (s, None),
            };
            let day_nanos = i128::from(parse_date(date)?) * 86_400_000_000_000;
            let nanos = day_nanos + time.map_or(Some(0), parse_time_nanos)?;
            let per = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            let v = i64::try_from(nanos.div_euclid(per)).ok()?;
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(v), None),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(v), None),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(v), None),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(v), None),
            }
        }
        DataType::Time64(unit) => {
            let nanos = i64::try_from(parse_time_nanos(s)?).ok()?;
            match unit {
                TimeUnit::Microsecond => ScalarValue::Time64Microsecond(Some(nanos / 1_000)),
                _ => ScalarValue::Time64Nanosecond(Some(nanos)),
            }
        }
        DataType::Time32(unit) => {
            let ms = i32::try_from(parse_time_nanos(s)? / 1_000_000).ok()?;
            match unit {
                TimeUnit::Second => ScalarValue::Time32Second(Some(ms / 1000)),
                _ => ScalarValue::Time32Millisecond(Some(ms)),
            }
        }
        _ => return None,
    })
}

/// `[+-]digits[.digits]`: the integer part (the fraction is dropped).
fn parse_integer(s: &str) -> Option<i64> {
    let (int_part, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = int_part.strip_prefix(['+', '-']).unwrap_or(int_part);
    if digits.is_empty() && frac.is_empty()
        || !digits.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if digits.is_empty() {
        return Some(0);
    }
    int_part.parse().ok()
}

/// Java's `Double.parseDouble` (decimal forms).
fn parse_double(s: &str) -> Option<f64> {
    if !is_java_number(s) {
        return None;
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let negative = s.starts_with('-');
    let magnitude = match unsigned {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        u => u
            .strip_suffix(['d', 'D', 'f', 'F'])
            .unwrap_or(u)
            .parse()
            .ok()?,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A decimal string (with optional exponent) as units of 10^-scale, rounded half-up; None
/// when it does not fit `precision` digits.
fn parse_decimal(s: &str, precision: u8, scale: i8) -> Option<i128> {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let negative = mantissa.starts_with('-');
    let unsigned = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    let (int_part, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if int_part.is_empty() && frac.is_empty()
        || !int_part
            .chars()
            .chain(frac.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{int_part}{frac}");
    let digits = digits.trim_start_matches('0');
    // value = digits * 10^(exponent - frac.len()); wanted: value * 10^scale.
    let shift = exponent - frac.len() as i32 + i32::from(scale);
    let units: i128 = if digits.is_empty() {
        0
    } else if shift >= 0 {
        if digits.len() + shift as usize > 38 {
            return None;
        }
        digits.parse::<i128>().ok()? * 10i128.pow(shift as u32)
    } else {
        let cut = (-shift) as usize;
        if cut > digits.len() {
            // Everything is below the scale: rounds to 0 or 1 unit.
            let first = if cut == digits.len() {
                digits.as_bytes()[0]
            } else {
                b'0'
            };
            i128::from(first >= b'5')
        } else {
            let (keep, drop) = digits.split_at(digits.len() - cut);
            if keep.len() > 38 {
                return None;
            }
            let kept: i128 = if keep.is_empty() {
                0
            } else {
                keep.parse().ok()?
            };
            kept + i128::from(drop.as_bytes()[0] >= b'5')
        }
    };
    if units >= 10i128.pow(u32::from(precision)) {
        return None;
    }
    Some(if negative { -units } else { units })
}

/// Days since 1970-01-01 of `yyyy-M-d`.
fn parse_date(s: &str) -> Option<i64> {
    let mut parts = s.splitn(3, '-');
    let mut field = |max_len: usize| -> Option<i64> {
        let p = parts.next()?;
        if p.is_empty() || p.len() > max_len || !p.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    let (y, m, d) = (field(4)?, field(2)?, field(2)?);
    super::temporal::epoch_day(y, u32::try_from(m).ok()?, u32::try_from(d).ok()?)
}

/// Nanoseconds of the day of `H:m[:s[.fraction]]`.
fn parse_time_nanos(s: &str) -> Option<i128> {
    let (hms, frac) = s.split_once('.').unwrap_or((s, ""));
    let parts: Vec<&str> = hms.split(':').collect();
    if !(2..=3).contains(&parts.len())
        || frac.len() > 9
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mut values = [0i128; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 2 || !p.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        values[i] = p.parse().ok()?;
    }
    let [h, m, sec] = values;
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let fraction: i128 = format!("{frac:0<9}").parse().ok()?;
    Some(((h * 60 + m) * 60 + sec) * 1_000_000_000 + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_parse_as_flink() {
        assert_eq!(parse_integer("3.7"), Some(3));
        assert_eq!(parse_integer("-3.5"), Some(-3));
        assert_eq!(parse_integer("1e2"), None);
        assert_eq!(parse_integer("abc"), None);
        assert_eq!(parse_decimal("0.005", 5, 2), Some(1));
        assert_eq!(parse_decimal("1e2", 5, 2), Some(10_000));
        assert_eq!(parse_decimal("-3.5", 5, 2), Some(-350));
        assert_eq!(parse_decimal("12345", 5, 2), None);
        assert_eq!(parse_date("2024-02-30"), None);
        assert_eq!(parse_date("2024-02-29"), Some(19_782));
        assert_eq!(parse_time_nanos("10:11:12"), Some(36_672_000_000_000));
        assert_eq!(parse_double("1e3"), Some(1000.0));
    }
}
