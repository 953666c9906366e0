//! `CAST` and `TRY_CAST` with Flink's rules: from `STRING` (parsing, here) and between other
//! types ([`super::convert`]).
//!
//! Flink trims the string; integers accept a fraction that is dropped (`'3.7'` → 3) but no
//! exponent; `DOUBLE` follows Java's `Double.parseDouble`; `DECIMAL` rounds half-up to the
//! scale and is NULL when the digits do not fit; `BOOLEAN` accepts `t/true/y/yes/1` and
//! `f/false/n/no/0`; dates are `yyyy-M-d` (a time after a space is ignored), timestamps
//! `yyyy-M-d[ H:m[:s[.fraction]]]`, times `H:m[:s[.fraction]]`. An invalid string fails the job
//! (`CAST`) or gives NULL (`TRY_CAST`). `CHAR(n)`/`BINARY(n)` pad to their length,
//! `VARCHAR(n)`/`VARBINARY(n)` truncate. `ARRAY`, `ROW` and `MAP` cast element by element;
//! `TRY_CAST` of a collection with an element that does not convert is NULL as a whole.
//!
//! The planner replaces the casts DataFusion does not do as Flink does by calls of
//! `flink_cast(x, 'TYPE')` / `flink_try_cast(x, 'TYPE')` ([`flink_casts`]); `TYPE` is the
//! Flink type, which keeps lengths and precisions Arrow types do not hold.

use std::sync::Arc;

use arrow::array::{Array as _, ArrayRef, AsArray as _};
use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{ColumnarValue, Expr, ExprSchemable, ScalarUDF};
use riffle_sql::ast::{DataType as FlinkType, TypeKind};

use super::convert;
use super::encoding::is_java_number;
use super::row::{is_text, text, Arg, Context, RowFunction};
use crate::types::{arrow_type, flink_type};

/// Field metadata key of a `CAST` target: the Flink type when its Arrow type loses a length or
/// precision (`CHAR(5)`, `TIMESTAMP(1)`).
pub const FLINK_TYPE_KEY: &str = "riffle.flink_type";

/// Flink types a `CASE` (and so `IF`) whose branches mix `TIMESTAMP` and `TIMESTAMP_LTZ` as
/// the first of them (DataFusion would pick `TIMESTAMP_LTZ`): when that is a `TIMESTAMP`, the
/// `TIMESTAMP_LTZ` branches are cast to it (wall-clock time in the session zone).
pub fn case_timestamp_branches(e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    e.transform_up(|e| {
        let Expr::Case(mut case) = e else {
            return Ok(Transformed::no(e));
        };
        let type_of = |x: &Expr| x.get_type(schema).ok();
        let first = case
            .when_then_expr
            .iter()
            .map(|(_, then)| then.as_ref())
            .chain(case.else_expr.as_deref())
            .filter_map(type_of)
            .find(|t| matches!(t, DataType::Timestamp(..)));
        let Some(target @ DataType::Timestamp(_, None)) = first else {
            return Ok(Transformed::no(Expr::Case(case)));
        };
        let mut changed = false;
        let branches = case
            .when_then_expr
            .iter_mut()
            .map(|(_, then)| then)
            .chain(case.else_expr.as_mut());
        for branch in branches {
            if matches!(type_of(branch), Some(DataType::Timestamp(_, Some(_)))) {
                let value =
                    std::mem::replace(branch.as_mut(), Expr::Literal(ScalarValue::Null, None));
                **branch = Expr::Cast(datafusion::logical_expr::Cast::new(
                    Box::new(value),
                    target.clone(),
                ));
                changed = true;
            }
        }
        Ok(if changed {
            Transformed::yes(Expr::Case(case))
        } else {
            Transformed::no(Expr::Case(case))
        })
    })
}

/// True when a cast from a string to `target` is done by [`flink_casts`].
fn is_string_cast_target(target: &DataType) -> bool {
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
            | DataType::Timestamp(..)
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Binary
    )
}

/// True when the engine runs an explicit cast from `source` to `target` as Flink does, either
/// by DataFusion's cast ([`datafusion_agrees`]) or by Riffle's ([`flink_casts`]).
pub fn is_supported_cast(source: &DataType, target: &DataType) -> bool {
    datafusion_agrees(source, target) || riffle_casts(source, target)
}

/// Casts Riffle implements.
fn riffle_casts(source: &DataType, target: &DataType) -> bool {
    match (source, target) {
        (DataType::List(a), DataType::List(b)) => {
            return is_supported_cast(a.data_type(), b.data_type())
        }
        (DataType::Struct(a), DataType::Struct(b)) => {
            return a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| is_supported_cast(x.data_type(), y.data_type()))
        }
        (DataType::Map(a, _), DataType::Map(b, _)) => {
            return riffle_casts(a.data_type(), b.data_type())
        }
        _ => {}
    }
    if is_text(source) {
        is_string_cast_target(target) || is_text(target)
    } else {
        convert::handles(source, target)
    }
}

/// Casts where DataFusion's result is Flink's: identity, widening between integers and between
/// decimals, numbers to DOUBLE, integers to a DECIMAL that holds them, integers to STRING, and
/// timestamps to the same or a finer precision of the same kind.
fn datafusion_agrees(source: &DataType, target: &DataType) -> bool {
    use DataType::*;
    let int_digits = |t: &DataType| match t {
        Int8 => Some(3),
        Int16 => Some(5),
        Int32 => Some(10),
        Int64 => Some(19),
        _ => None,
    };
    let unit_rank = |u: &TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    match (source, target) {
        (s, t) if s == t => true,
        (Null, _) => true,
        (s, t) if int_digits(s).is_some() && int_digits(t).is_some() => {
            int_digits(s) <= int_digits(t)
        }
        (s, Float64) => s.is_numeric(),
        // Integers print as their decimal digits in both engines.
        (s, Utf8) => int_digits(s).is_some(),
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && i32::from(*p2) - i32::from(*s2) >= i32::from(*p1) - i32::from(*s1)
        }
        (s, Decimal128(p, sc)) => {
            int_digits(s).is_some_and(|d| i32::from(*p) - i32::from(*sc) >= d)
        }
        (Timestamp(u1, z1), Timestamp(u2, z2)) => {
            z1.is_some() == z2.is_some() && unit_rank(u2) >= unit_rank(u1)
        }
        _ => false,
    }
}

/// Replaces the casts in `expr` over `schema` that DataFusion does not do as Flink does by
/// calls of Riffle's Flink cast functions from `registry`.
pub fn flink_casts(
    expr: Expr,
    schema: &DFSchema,
    registry: &std::collections::HashMap<String, Arc<ScalarUDF>>,
) -> DfResult<Transformed<Expr>> {
    expr.transform_up(|e| {
        let (inner, field, name) = match &e {
            Expr::Cast(c) => (&c.expr, &c.field, "flink_cast"),
            Expr::TryCast(c) => (&c.expr, &c.field, "flink_try_cast"),
            _ => return Ok(Transformed::no(e)),
        };
        let Ok(source) = inner.get_type(schema) else {
            return Ok(Transformed::no(e));
        };
        let Some(udf) = registry.get(name) else {
            return Ok(Transformed::no(e));
        };
        let target = field.data_type();
        let declared = field.metadata().get(FLINK_TYPE_KEY);
        // A declared length or precision the Arrow type does not hold needs Riffle's cast.
        let exact = declared.is_none() && datafusion_agrees(&source, target);
        if exact || !riffle_casts(&source, target) {
            return Ok(Transformed::no(e));
        }
        let type_name = declared
            .cloned()
            .unwrap_or_else(|| flink_type(target, true));
        let type_name = Expr::Literal(ScalarValue::Utf8(Some(type_name)), None);
        let call = ScalarFunction::new_udf(udf.clone(), vec![inner.as_ref().clone(), type_name]);
        Ok(Transformed::yes(Expr::ScalarFunction(call)))
    })
}

/// The target type named by the constant second argument.
fn target_type(constants: &[Option<&ScalarValue>]) -> Option<(FlinkType, DataType)> {
    let name = constants.get(1).copied().flatten().and_then(text)?;
    // Rows evaluate the same few names again and again: parse each once per thread.
    thread_local! {
        static PARSED: std::cell::RefCell<std::collections::HashMap<String, Option<(FlinkType, DataType)>>> =
            Default::default();
    }
    PARSED.with(|parsed| {
        if let Some(known) = parsed.borrow().get(name) {
            return known.clone();
        }
        let target = riffle_sql::parse_data_type(name)
            .ok()
            .and_then(|flink| Some((arrow_type(&flink).ok()?, flink)))
            .map(|(arrow, flink)| (flink, arrow));
        parsed.borrow_mut().insert(name.to_string(), target.clone());
        target
    })
}

/// The decimal digits every value of an integer type fits in.
fn integer_digits(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::Int8 => 3,
        DataType::Int16 => 5,
        DataType::Int32 => 10,
        DataType::Int64 => 19,
        _ => return None,
    })
}

/// A cast between numeric types that loses nothing for the values of this batch, done with
/// Arrow's kernels: integers widened or made decimals with room for every digit, decimals
/// given more integer digits or more scale, or the same scale and a precision every value of
/// the batch fits. Anything else (rounding, overflow → NULL) is left to the row rule.
fn lossless_numeric_cast(args: &[ColumnarValue], target: &DataType) -> DfResult<Option<ArrayRef>> {
    let Some(ColumnarValue::Array(input)) = args.first() else {
        return Ok(None);
    };
    let source = input.data_type();
    let numeric =
        |t: &DataType| integer_digits(t).is_some() || matches!(t, DataType::Decimal128(..));
    // Only numbers: other Arrow types stand for several Flink types (`CHAR(5)` and `STRING`
    // are both `Utf8`), whose casts do more than Arrow's.
    if !numeric(source) || !numeric(target) {
        return Ok(None);
    }
    if source == target {
        return Ok(Some(Arc::clone(input)));
    }
    let widening = match (source, target) {
        (s, t) if integer_digits(s).is_some() && integer_digits(t).is_some() => {
            integer_digits(s) <= integer_digits(t)
        }
        (s, DataType::Decimal128(p, scale)) if integer_digits(s).is_some() => {
            let scale = u8::try_from(*scale).unwrap_or(u8::MAX);
            integer_digits(s).is_some_and(|d| u16::from(d) + u16::from(scale) <= u16::from(*p))
        }
        (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) if s2 >= s1 => {
            i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1)
        }
        _ => false,
    };
    if widening {
        return Ok(Some(arrow::compute::cast(input, target)?));
    }
    // Same scale, fewer digits: exact when every value of the batch fits.
    if let (DataType::Decimal128(_, s1), DataType::Decimal128(p2, s2)) = (source, target) {
        if s1 == s2 {
            let decimals = input.as_primitive::<arrow::datatypes::Decimal128Type>();
            let limit = 10i128.checked_pow(u32::from(*p2)).unwrap_or(i128::MAX);
            if decimals
                .iter()
                .flatten()
                .all(|v| v.unsigned_abs() < limit.unsigned_abs())
            {
                let narrowed = decimals.clone().with_precision_and_scale(*p2, *s2)?;
                return Ok(Some(Arc::new(narrowed)));
            }
        }
    }
    Ok(None)
}

/// `flink_cast` (fails on invalid input) and `flink_try_cast` (NULL).
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Str};
    let cast = |name, strict_errors: bool| {
        RowFunction::with_context(name, &[&[Any, Str]], DataType::Null, move |v, cx| {
            let Some((flink, arrow)) = target_type(&[None, Some(&v[1])]) else {
                return exec_err!("{name}: unknown target type");
            };
            match cast_or_fail(&v[0], &flink, &arrow, cx) {
                Ok(value) => Ok(value),
                Err(e) if strict_errors => Err(e),
                // TRY_CAST: any failure, also of one element of a collection, is NULL.
                Err(_) => Ok(ScalarValue::try_from(&arrow)?),
            }
        })
        .returning_with_constants(|_, constants| {
            target_type(constants).map_or(DataType::Null, |(_, arrow)| arrow)
        })
        .with_kernel(lossless_numeric_cast)
    };
    vec![
        cast("flink_cast", true).keeping_not_null(),
        cast("flink_try_cast", false),
    ]
}

/// `v` as the Flink type `flink` (Arrow `arrow`): NULL where Flink gives NULL, an error for an
/// invalid string. Collections cast element by element (a ROW's fields by position, taking the
/// target's names).
fn cast_or_fail(
    v: &ScalarValue,
    flink: &FlinkType,
    arrow: &DataType,
    cx: &Context,
) -> DfResult<ScalarValue> {
    if v.is_null() {
        return ScalarValue::try_from(arrow);
    }
    match (v, &flink.kind, arrow) {
        (ScalarValue::List(list), TypeKind::Array(element), DataType::List(field)) => {
            let values = list.value(0);
            let cast = (0..values.len())
                .map(|i| {
                    let item = ScalarValue::try_from_array(values.as_ref(), i)?;
                    cast_or_fail(&item, element, field.data_type(), cx)
                })
                .collect::<DfResult<Vec<_>>>()?;
            let array = ScalarValue::new_list(&cast, field.data_type(), field.is_nullable());
            return Ok(ScalarValue::List(array));
        }
        (ScalarValue::Struct(row), TypeKind::Row(flink_fields), DataType::Struct(fields)) => {
            let mut columns = Vec::with_capacity(fields.len());
            for ((column, flink_field), field) in
                row.columns().iter().zip(flink_fields).zip(fields.iter())
            {
                let item = ScalarValue::try_from_array(column.as_ref(), 0)?;
                let cast = cast_or_fail(&item, &flink_field.data_type, field.data_type(), cx)?;
                columns.push(cast.to_array()?);
            }
            let array = arrow::array::StructArray::try_new(fields.clone(), columns, None)?;
            return Ok(ScalarValue::Struct(Arc::new(array)));
        }
        (
            ScalarValue::Map(map),
            TypeKind::Map(key_type, value_type),
            DataType::Map(entries, sorted),
        ) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return exec_err!("map entries of type {}", entries.data_type());
            };
            let pairs = map.value(0);
            let mut keys = Vec::with_capacity(pairs.len());
            let mut values = Vec::with_capacity(pairs.len());
            for i in 0..pairs.len() {
                let key = ScalarValue::try_from_array(pairs.column(0).as_ref(), i)?;
                let value = ScalarValue::try_from_array(pairs.column(1).as_ref(), i)?;
                keys.push(cast_or_fail(&key, key_type, kv[0].data_type(), cx)?);
                values.push(cast_or_fail(&value, value_type, kv[1].data_type(), cx)?);
            }
            let columns = vec![
                array_of(keys, kv[0].data_type())?,
                array_of(values, kv[1].data_type())?,
            ];
            let pairs = arrow::array::StructArray::try_new(kv.clone(), columns, None)?;
            let offsets = arrow::buffer::OffsetBuffer::from_lengths([pairs.len()]);
            let array =
                arrow::array::MapArray::try_new(entries.clone(), offsets, pairs, None, *sorted)?;
            return Ok(ScalarValue::Map(Arc::new(array)));
        }
        _ => {}
    }
    match cast_value(v, flink, arrow, cx) {
        Some(value) => Ok(value),
        None if is_text(&v.data_type()) => error(text(v).unwrap_or_default(), arrow),
        None => Ok(ScalarValue::try_from(arrow)?),
    }
}

/// An array of `values` (all of type `data_type`; there may be none).
fn array_of(values: Vec<ScalarValue>, data_type: &DataType) -> DfResult<arrow::array::ArrayRef> {
    if values.is_empty() {
        return Ok(arrow::array::new_empty_array(data_type));
    }
    ScalarValue::iter_to_array(values)
}

/// `v` as the Flink type `flink` (Arrow `arrow`); None when Flink gives NULL or fails.
fn cast_value(
    v: &ScalarValue,
    flink: &FlinkType,
    arrow: &DataType,
    cx: &Context,
) -> Option<ScalarValue> {
    let value = match text(v) {
        Some(s) => match arrow {
            DataType::Utf8 => ScalarValue::Utf8(Some(s.to_string())),
            DataType::Binary => ScalarValue::Binary(Some(s.as_bytes().to_vec())),
            // A TIMESTAMP_LTZ string is wall-clock time in the session zone.
            DataType::Timestamp(unit, Some(_)) => {
                let local = parse(s, &DataType::Timestamp(*unit, None))?;
                convert::convert(&local, flink, arrow, cx.zone)?
            }
            _ => match (parse(s, arrow)?, &flink.kind) {
                // A TIME below millisecond precision drops the rest of the fraction.
                (ScalarValue::Time32Millisecond(Some(ms)), TypeKind::Time(p)) => {
                    let step = 10i32.pow(3 - u32::from((*p).min(3)));
                    ScalarValue::Time32Millisecond(Some(ms / step * step))
                }
                (value, _) => value,
            },
        },
        None => convert::convert(v, flink, arrow, cx.zone)?,
    };
    Some(fit_length(value, flink))
}

/// `CHAR(n)`/`BINARY(n)` pad to `n` (spaces, zero bytes); they and `VARCHAR(n)`/`VARBINARY(n)`
/// truncate to `n`.
fn fit_length(value: ScalarValue, flink: &FlinkType) -> ScalarValue {
    let (n, pad) = match flink.kind {
        TypeKind::Char(n) | TypeKind::Binary(n) => (n as usize, true),
        TypeKind::Varchar(n) | TypeKind::Varbinary(n) => (n as usize, false),
        _ => return value,
    };
    match value {
        ScalarValue::Utf8(Some(s)) => {
            let mut out: String = s.chars().take(n).collect();
            if pad {
                let len = out.chars().count();
                out.extend(std::iter::repeat_n(' ', n.saturating_sub(len)));
            }
            ScalarValue::Utf8(Some(out))
        }
        ScalarValue::Binary(Some(mut b)) => {
            b.truncate(n);
            if pad {
                b.resize(n, 0);
            }
            ScalarValue::Binary(Some(b))
        }
        other => other,
    }
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
    if precision <= 18 && s.len() <= 18 {
        return parse_short_decimal(s, precision, scale);
    }
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

/// Flink's parse of a short decimal string (precision and text of at most 18): overflow is
/// decided by the digit count (leading zeros included) before rounding, so a value rounded up
/// past the precision (`-99.995` as `DECIMAL(4, 2)`: `-100.00`) is kept; a last character that
/// ends the number is ignored.
fn parse_short_decimal(s: &str, precision: u8, scale: i8) -> Option<i128> {
    let b = s.as_bytes();
    let negative = b.first() == Some(&b'-');
    let mut i = usize::from(negative || b.first() == Some(&b'+'));
    if b.is_empty() || i == b.len() {
        return None;
    }
    let (mut significand, mut len, mut point) = (0i128, 0i32, None);
    let mut c = 0u8;
    while let Some(&next) = b.get(i) {
        c = next;
        i += 1;
        match c {
            b'0'..=b'9' => {
                significand = significand * 10 + i128::from(c - b'0');
                len += 1;
            }
            b'.' if point.is_some() => return None,
            b'.' => point = Some(len),
            _ => break,
        }
    }
    let mut exp = 0i32;
    if (c == b'e' || c == b'E') && i < b.len() {
        let exp_negative = b[i] == b'-';
        if exp_negative || b[i] == b'+' {
            i += 1;
            if i == b.len() {
                return None;
            }
        }
        while let Some(&d) = b.get(i) {
            i += 1;
            if !d.is_ascii_digit() {
                break;
            }
            if exp < 40 {
                exp = exp * 10 + i32::from(d - b'0');
            }
        }
        if exp_negative {
            exp = -exp;
        }
    }
    exp -= len - point.unwrap_or(len);
    if b[i..].iter().any(|c| !matches!(c, b' ' | b'\n' | b'\t')) {
        return None;
    }
    let change = exp + i32::from(scale);
    if len + change > i32::from(precision) {
        return None;
    }
    let units = if change >= 0 {
        significand * 10i128.checked_pow(change.unsigned_abs())?
    } else if change < -38 {
        0
    } else {
        let unit = 10i128.pow(change.unsigned_abs());
        (significand + unit / 2) / unit
    };
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

    /// The kernel's batch equals the row rule's values wherever it answers, and it leaves
    /// every lossy cast to the rule.
    #[test]
    fn lossless_numeric_casts_agree_with_the_row_rule() {
        use arrow::array::{Decimal128Array, Int64Array};
        let by_rows = |input: &ArrayRef, flink: &str, arrow: &DataType| -> Vec<ScalarValue> {
            let context = Context {
                zone: super::super::zone::LocalZone::UTC,
            };
            (0..input.len())
                .map(|i| {
                    let v = ScalarValue::try_from_array(input, i).expect("value");
                    if v.is_null() {
                        return ScalarValue::try_from(arrow).expect("null");
                    }
                    let (f, a) =
                        target_type(&[None, Some(&ScalarValue::from(flink))]).expect("type");
                    cast_or_fail(&v, &f, &a, &context).expect("cast")
                })
                .collect()
        };
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(i64::MAX),
            None,
            Some(-7),
            Some(i64::MIN),
        ]));
        let decimals: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(12_345), None, Some(-99_999)])
                .with_precision_and_scale(24, 3)
                .expect("decimal"),
        );
        for (input, flink, arrow) in [
            (&ints, "DECIMAL(20, 0)", DataType::Decimal128(20, 0)),
            (&ints, "DECIMAL(22, 2)", DataType::Decimal128(22, 2)),
            (&decimals, "DECIMAL(23, 3)", DataType::Decimal128(23, 3)),
            (&decimals, "DECIMAL(5, 3)", DataType::Decimal128(5, 3)),
            (&decimals, "DECIMAL(30, 6)", DataType::Decimal128(30, 6)),
        ] {
            let args = [
                ColumnarValue::Array(Arc::clone(input)),
                ColumnarValue::from(ScalarValue::from(flink)),
            ];
            let batch = lossless_numeric_cast(&args, &arrow).expect("kernel");
            let Some(batch) = batch else {
                panic!("{flink}: a lossless cast goes through the kernel");
            };
            let values: Vec<ScalarValue> = (0..batch.len())
                .map(|i| ScalarValue::try_from_array(&batch, i).expect("value"))
                .collect();
            assert_eq!(values, by_rows(input, flink, &arrow), "{flink}");
        }
        // Lossy: fewer integer digits than an INT64 has, or a smaller scale (rounding), or a
        // value that does not fit.
        for (input, arrow) in [
            (&ints, DataType::Decimal128(18, 0)),
            (&decimals, DataType::Decimal128(24, 2)),
            (&decimals, DataType::Decimal128(4, 3)),
        ] {
            let args = [ColumnarValue::Array(Arc::clone(input))];
            assert!(
                lossless_numeric_cast(&args, &arrow)
                    .expect("kernel")
                    .is_none(),
                "{arrow}"
            );
        }
    }
}
