//! `CAST` between non-string types, and to `STRING`, with Flink's rules (its `CastRule`s):
//!
//! * integers narrow by wrapping (Java's `(byte)`, `(short)`, `(int)`), `DOUBLE`/`FLOAT` to
//!   integers saturate at `INT`/`BIGINT` (Java's `(int)`/`(long)`, NaN is 0), `DECIMAL` to
//!   integers truncate toward zero, numbers to `BOOLEAN` are `x <> 0`;
//! * to `DECIMAL(p, s)`: rounded half-up to `s` digits (`DOUBLE` via its shortest decimal form,
//!   as `BigDecimal.valueOf`); a value that does not fit `p` digits is NULL;
//! * to `STRING`: `DOUBLE`/`FLOAT` as Java prints them, `DECIMAL` with its scale, `TRUE`/`FALSE`,
//!   `yyyy-MM-dd HH:mm:ss` with exactly the type's fraction digits for timestamps;
//! * `TIMESTAMP` ↔ `TIMESTAMP_LTZ` and `TIMESTAMP_LTZ` to `DATE`/`TIME`/`STRING` in the session
//!   time zone; lowering a timestamp's precision truncates the fraction.

use arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::ScalarValue;
use riffle_sql::ast::{DataType as FlinkType, TypeKind};

use super::temporal::{civil, nanos as nanos_of};
use super::zone::LocalZone;
use crate::java_text::{java_double, java_float};

const NANOS_PER_MS: i128 = 1_000_000;
const NANOS_PER_DAY: i128 = 86_400_000_000_000;

/// True when [`convert`] implements the cast from `source` to `target` (not a string source).
pub(super) fn handles(source: &DataType, target: &DataType) -> bool {
    use DataType::*;
    // Unsigned integers only come from DataFusion's own functions (e.g. ROW_NUMBER).
    let number = |t: &DataType| t.is_signed_integer() || t.is_floating() || is_decimal(t);
    match (source, target) {
        (s, t) if (number(s) || *s == Boolean) && (number(t) || *t == Boolean) => true,
        // Collections as Flink writes them: `[1, NULL]`, `{k=v}`, `(1, a)`.
        (List(item), Utf8) => element_to_string(item.data_type()),
        (Map(entries, _), Utf8) => match entries.data_type() {
            Struct(kv) => kv.iter().all(|f| element_to_string(f.data_type())),
            _ => false,
        },
        (Struct(fields), Utf8) => fields.iter().all(|f| element_to_string(f.data_type())),
        (s, Utf8) => {
            number(s)
                || matches!(
                    s,
                    Boolean
                        | Date32
                        | Timestamp(..)
                        | Time32(_)
                        | Time64(_)
                        | Binary
                        | LargeBinary
                        | BinaryView
                        | Interval(IntervalUnit::MonthDayNano)
                )
        }
        (Timestamp(..), Timestamp(..) | Date32 | Time32(_) | Time64(_)) => true,
        (Date32, Timestamp(..)) => true,
        (Binary | LargeBinary | BinaryView, Binary) => true,
        _ => false,
    }
}

/// Whether values of `t` inside a collection can be written as text.
fn element_to_string(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    ) || handles(t, &DataType::Utf8)
}

/// The text of a collection value (`[..]`, `{k=v, ..}`, `(..)`), its elements cast to STRING
/// and NULL written `NULL`; None for other values.
fn collection_text(v: &ScalarValue, zone: LocalZone) -> Option<String> {
    let items = |array: &dyn arrow::array::Array| -> Option<Vec<String>> {
        (0..array.len())
            .map(|i| element_text(&ScalarValue::try_from_array(array, i).ok()?, zone))
            .collect()
    };
    Some(match v {
        ScalarValue::List(list) => format!("[{}]", items(list.value(0).as_ref())?.join(", ")),
        ScalarValue::Map(map) => {
            let pairs = map.value(0);
            let keys = items(pairs.column(0).as_ref())?;
            let values = items(pairs.column(1).as_ref())?;
            let entries: Vec<String> = keys
                .iter()
                .zip(&values)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        ScalarValue::Struct(row) => {
            let fields: Option<Vec<String>> = row
                .columns()
                .iter()
                .map(|c| element_text(&ScalarValue::try_from_array(c.as_ref(), 0).ok()?, zone))
                .collect();
            format!("({})", fields?.join(", "))
        }
        _ => return None,
    })
}

/// An element of a collection cast to STRING (`NULL` for NULL).
fn element_text(v: &ScalarValue, zone: LocalZone) -> Option<String> {
    if v.is_null() {
        return Some("NULL".into());
    }
    if let ScalarValue::Utf8(Some(s))
    | ScalarValue::LargeUtf8(Some(s))
    | ScalarValue::Utf8View(Some(s)) = v
    {
        return Some(s.clone());
    }
    let string = FlinkType {
        kind: TypeKind::Varchar(i32::MAX as u32),
        nullable: true,
    };
    match convert(v, &string, &DataType::Utf8, zone)? {
        ScalarValue::Utf8(Some(s)) => Some(s),
        _ => None,
    }
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..))
}

/// `v` cast to `target` (Flink type `flink`, Arrow type `arrow`); None when the value does not
/// fit (Flink's NULL).
pub(super) fn convert(
    v: &ScalarValue,
    flink: &FlinkType,
    arrow: &DataType,
    zone: LocalZone,
) -> Option<ScalarValue> {
    if let DataType::Timestamp(..) = v.data_type() {
        return from_timestamp(v, flink, arrow, zone);
    }
    if let ScalarValue::Date32(Some(d)) = v {
        let local = i128::from(*d) * NANOS_PER_DAY;
        return match &flink.kind {
            TypeKind::Char(_) | TypeKind::Varchar(_) => Some(text(format_date(local))),
            _ => timestamp_value(local, flink, arrow, zone),
        };
    }
    match &flink.kind {
        TypeKind::Char(_) | TypeKind::Varchar(_) => {
            collection_text(v, zone).or_else(|| to_string(v)).map(text)
        }
        TypeKind::Binary(_) | TypeKind::Varbinary(_) => match v {
            ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b) => {
                Some(ScalarValue::Binary(b.clone()))
            }
            _ => None,
        },
        TypeKind::Boolean => number(v).map(|n| ScalarValue::Boolean(Some(!n.is_zero()))),
        // Java narrows a double to `byte` / `short` through `int` (saturating there first).
        TypeKind::TinyInt => int32(v).map(|i| ScalarValue::Int8(Some(i as i8))),
        TypeKind::SmallInt => int32(v).map(|i| ScalarValue::Int16(Some(i as i16))),
        TypeKind::Int => int32(v).map(|i| ScalarValue::Int32(Some(i))),
        TypeKind::BigInt => integer(v).map(|i| ScalarValue::Int64(Some(i))),
        TypeKind::Double => number(v).map(|n| ScalarValue::Float64(Some(n.to_f64()))),
        TypeKind::Float => number(v).map(|n| ScalarValue::Float32(Some(n.to_f64() as f32))),
        TypeKind::Decimal(p, s) => {
            let units = number(v)?.to_decimal(*s)?;
            (units.unsigned_abs() < 10u128.pow(u32::from(*p))).then_some(ScalarValue::Decimal128(
                Some(units),
                *p,
                *s,
            ))
        }
        _ => None,
    }
}

/// A `DOUBLE` as `DECIMAL` units of `10^-scale`, as Flink casts it (`BigDecimal.valueOf`,
/// rounded half-up); None for NaN and infinities.
pub fn decimal_of_double(d: f64, scale: i8) -> Option<i128> {
    Number::Double(d).to_decimal(scale)
}

/// A `DECIMAL(precision, scale)` value as a `DOUBLE`, as Flink's `DecimalData.doubleValue`.
pub fn double_of_decimal(unscaled: i128, precision: u8, scale: i8) -> f64 {
    Number::Decimal(unscaled, precision, scale).to_f64()
}

fn text(s: String) -> ScalarValue {
    ScalarValue::Utf8(Some(s))
}

/// A number as Flink's casts see it.
enum Number {
    Int(i64),
    Double(f64),
    /// Unscaled value, precision and scale.
    Decimal(i128, u8, i8),
}

impl Number {
    fn is_zero(&self) -> bool {
        match self {
            Number::Int(i) => *i == 0,
            Number::Double(d) => *d == 0.0,
            Number::Decimal(u, ..) => *u == 0,
        }
    }

    fn to_f64(&self) -> f64 {
        match self {
            Number::Int(i) => *i as f64,
            Number::Double(d) => *d,
            // `DecimalData.doubleValue`: a division for compact (up to 18 digits) values, else
            // `BigDecimal.doubleValue` (the correctly rounded value of the digits).
            Number::Decimal(u, p, s) if *p <= 18 && (0..=18).contains(s) => {
                *u as f64 / 10i64.pow(*s as u32) as f64
            }
            Number::Decimal(u, _, s) => decimal_text(*u, *s).parse().unwrap_or(f64::NAN),
        }
    }

    /// Units of 10^-scale, rounded half-up (away from zero on .5); None when it has no decimal
    /// form (NaN, infinities) or exceeds 38 digits.
    fn to_decimal(&self, scale: i8) -> Option<i128> {
        match self {
            Number::Int(i) => {
                i128::from(*i).checked_mul(10i128.checked_pow(scale.try_into().ok()?)?)
            }
            Number::Decimal(u, _, s) => rescale(*u, *s, scale),
            Number::Double(d) if d.is_finite() => {
                // BigDecimal.valueOf(d): the shortest decimal digits that identify d.
                let (u, s) = parse_plain_decimal(&format!("{d:e}"))?;
                rescale(u, s, scale)
            }
            Number::Double(_) => None,
        }
    }
}

/// The number in `v` (booleans are 1 and 0).
fn number(v: &ScalarValue) -> Option<Number> {
    Some(match v {
        ScalarValue::Int8(Some(i)) => Number::Int(i64::from(*i)),
        ScalarValue::Int16(Some(i)) => Number::Int(i64::from(*i)),
        ScalarValue::Int32(Some(i)) => Number::Int(i64::from(*i)),
        ScalarValue::Int64(Some(i)) => Number::Int(*i),
        ScalarValue::Float32(Some(f)) => Number::Double(f64::from(*f)),
        ScalarValue::Float64(Some(f)) => Number::Double(*f),
        ScalarValue::Decimal128(Some(u), p, s) => Number::Decimal(*u, *p, *s),
        ScalarValue::Boolean(Some(b)) => Number::Int(i64::from(*b)),
        _ => return None,
    })
}

/// A number as Java's `long` (`(long) d` saturates, NaN is 0; decimals truncate and keep the
/// low 64 bits, as `BigDecimal.longValue`).
fn integer(v: &ScalarValue) -> Option<i64> {
    Some(match number(v)? {
        Number::Int(i) => i,
        Number::Double(d) => d as i64,
        Number::Decimal(u, _, s) => (u / 10i128.pow(u32::try_from(s).ok()?)) as i64,
    })
}

/// A number as Java's `int` (doubles saturate at the `int` range, others wrap).
fn int32(v: &ScalarValue) -> Option<i32> {
    match number(v)? {
        Number::Double(d) => Some(d as i32),
        _ => integer(v).map(|i| i as i32),
    }
}

/// `unscaled × 10^-from` as units of `10^-to`, rounded half-up.
fn rescale(unscaled: i128, from: i8, to: i8) -> Option<i128> {
    let diff = i32::from(to) - i32::from(from);
    if diff >= 0 {
        unscaled.checked_mul(10i128.checked_pow(diff as u32)?)
    } else {
        let Some(divisor) = 10i128.checked_pow((-diff) as u32) else {
            return Some(0);
        };
        let (q, r) = (unscaled / divisor, unscaled % divisor);
        Some(if r.abs() * 2 >= divisor {
            q + unscaled.signum()
        } else {
            q
        })
    }
}

/// Rust's `{:e}` form (`-1.25e-3`) as (unscaled, scale).
fn parse_plain_decimal(s: &str) -> Option<(i128, i8)> {
    let (mantissa, exponent) = s.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let negative = mantissa.starts_with('-');
    let mantissa = mantissa.trim_start_matches('-');
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: i128 = format!("{int}{frac}").parse().ok()?;
    let scale = frac.len() as i32 - exponent;
    let (digits, scale) = if scale < 0 {
        (digits.checked_mul(10i128.checked_pow((-scale) as u32)?)?, 0)
    } else {
        (digits, scale)
    };
    Some((
        if negative { -digits } else { digits },
        i8::try_from(scale).ok()?,
    ))
}

/// `BigDecimal.toPlainString` of `unscaled × 10^-scale`.
fn decimal_text(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let Ok(scale) = usize::try_from(scale) else {
        return format!("{sign}{digits}");
    };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// The text of a number or boolean.
fn to_string(v: &ScalarValue) -> Option<String> {
    Some(match v {
        ScalarValue::Boolean(Some(b)) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        ScalarValue::Float64(Some(d)) => java_double(*d),
        ScalarValue::Float32(Some(f)) => java_float(*f),
        ScalarValue::Decimal128(Some(u), _, s) => decimal_text(*u, *s),
        ScalarValue::Time32Second(_)
        | ScalarValue::Time32Millisecond(_)
        | ScalarValue::Time64Microsecond(_)
        | ScalarValue::Time64Nanosecond(_) => format_time(nanos_of(v)?),
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b)) => String::from_utf8_lossy(b).into_owned(),
        ScalarValue::IntervalMonthDayNano(Some(i)) => {
            interval_text(i.months, i.days, i.nanoseconds)?
        }
        other => match number(other)? {
            Number::Int(i) => i.to_string(),
            _ => return None,
        },
    })
}

/// Flink's text of an interval: `+1-02` (years-months) for a year-month interval, else
/// `+2 03:04:05.678` (days and time, millisecond precision). A Flink interval is one or the
/// other; a zero value (which carries no kind here) is written as a day-time interval.
fn interval_text(months: i32, days: i32, nanos: i64) -> Option<String> {
    let sign = |negative: bool| if negative { '-' } else { '+' };
    if months != 0 {
        if days != 0 || nanos != 0 {
            return None;
        }
        let m = months.unsigned_abs();
        return Some(format!("{}{}-{:02}", sign(months < 0), m / 12, m % 12));
    }
    let ms = i128::from(days) * 86_400_000 + i128::from(nanos) / 1_000_000;
    let abs = ms.unsigned_abs();
    Some(format!(
        "{}{} {:02}:{:02}:{:02}.{:03}",
        sign(ms < 0),
        abs / 86_400_000,
        abs / 3_600_000 % 24,
        abs / 60_000 % 60,
        abs / 1000 % 60,
        abs % 1000
    ))
}

/// `HH:mm:ss`, with the milliseconds when there are any.
fn format_time(nanos: i128) -> String {
    let ms = nanos / NANOS_PER_MS;
    let base = format!(
        "{:02}:{:02}:{:02}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60
    );
    // Flink writes the millisecond digits up to the last non-zero one (`.5`, `.001`); a zero
    // fraction is left out, as for the usual TIME(0).
    match ms % 1000 {
        0 => base,
        frac => format!("{base}.{}", format!("{frac:03}").trim_end_matches('0')),
    }
}

fn format_date(local_nanos: i128) -> String {
    let day = i64::try_from(local_nanos.div_euclid(NANOS_PER_DAY)).unwrap_or(0);
    let (y, m, d) = civil(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `yyyy-MM-dd HH:mm:ss` and `precision` fraction digits.
fn format_timestamp(local_nanos: i128, precision: u8) -> String {
    let of_day = local_nanos.rem_euclid(NANOS_PER_DAY);
    let secs = of_day / 1_000_000_000;
    let mut out = format!(
        "{} {:02}:{:02}:{:02}",
        format_date(local_nanos),
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if precision > 0 {
        let fraction = format!("{:09}", of_day % 1_000_000_000);
        out.push('.');
        out.push_str(&fraction[..usize::from(precision.min(9))]);
    }
    out
}

/// Fraction digits of a timestamp's Arrow unit.
fn unit_precision(t: &DataType) -> u8 {
    match t {
        DataType::Timestamp(TimeUnit::Second, _) => 0,
        DataType::Timestamp(TimeUnit::Millisecond, _) => 3,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 6,
        _ => 9,
    }
}

/// Casts of `TIMESTAMP` and `TIMESTAMP_LTZ` values.
fn from_timestamp(
    v: &ScalarValue,
    flink: &FlinkType,
    arrow: &DataType,
    zone: LocalZone,
) -> Option<ScalarValue> {
    let source = v.data_type();
    let n = nanos_of(v)?;
    let ltz = matches!(source, DataType::Timestamp(_, Some(_)));
    let local = if ltz { to_local_nanos(n, zone) } else { n };
    match &flink.kind {
        TypeKind::Char(_) | TypeKind::Varchar(_) => {
            Some(text(format_timestamp(local, unit_precision(&source))))
        }
        TypeKind::Date => Some(ScalarValue::Date32(
            i32::try_from(local.div_euclid(NANOS_PER_DAY)).ok(),
        )),
        TypeKind::Time(p) => {
            // TIME holds at most milliseconds; a lower precision truncates.
            let step = 10i128.pow(9 - u32::from((*p).min(3)));
            let nanos = local.rem_euclid(NANOS_PER_DAY) / step * step;
            let ms = i32::try_from(nanos / NANOS_PER_MS).ok()?;
            Some(ScalarValue::Time32Millisecond(Some(ms)))
        }
        TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_) => {
            timestamp_value(local, flink, arrow, zone)
        }
        _ => None,
    }
}

/// A timestamp of type `flink` for the local date-time `local` (nanoseconds), truncated to
/// the type's precision; a `TIMESTAMP_LTZ` is that local time's instant in `zone`.
fn timestamp_value(
    local: i128,
    flink: &FlinkType,
    arrow: &DataType,
    zone: LocalZone,
) -> Option<ScalarValue> {
    let (precision, ltz) = match flink.kind {
        TypeKind::Timestamp(p) => (p, false),
        TypeKind::TimestampLtz(p) => (p, true),
        _ => return None,
    };
    let step = 10i128.pow(9 - u32::from(precision.min(9)));
    let truncated = local.div_euclid(step) * step;
    let n = if ltz {
        to_utc_nanos(truncated, zone)
    } else {
        truncated
    };
    let DataType::Timestamp(unit, tz) = arrow else {
        return None;
    };
    let per = match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => NANOS_PER_MS,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    };
    let value = i64::try_from(n.div_euclid(per)).ok();
    Some(match unit {
        TimeUnit::Second => ScalarValue::TimestampSecond(value, tz.clone()),
        TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(value, tz.clone()),
        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(value, tz.clone()),
        TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(value, tz.clone()),
    })
}

fn split_ms(n: i128) -> Option<(i64, i128)> {
    Some((
        i64::try_from(n.div_euclid(NANOS_PER_MS)).ok()?,
        n.rem_euclid(NANOS_PER_MS),
    ))
}

fn to_local_nanos(utc: i128, zone: LocalZone) -> i128 {
    match split_ms(utc) {
        Some((ms, sub)) => i128::from(zone.to_local(ms)) * NANOS_PER_MS + sub,
        None => utc,
    }
}

fn to_utc_nanos(local: i128, zone: LocalZone) -> i128 {
    match split_ms(local) {
        Some((ms, sub)) => i128::from(zone.to_utc(ms)) * NANOS_PER_MS + sub,
        None => local,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arrow_type;

    fn cast(v: ScalarValue, target: &str, zone: &str) -> Option<ScalarValue> {
        let flink = riffle_sql::parse_data_type(target).ok()?;
        let arrow = arrow_type(&flink).ok()?;
        convert(&v, &flink, &arrow, LocalZone::parse(zone)?)
    }

    fn s(v: &str) -> Option<ScalarValue> {
        Some(ScalarValue::Utf8(Some(v.to_string())))
    }

    #[test]
    fn intervals_cast_to_flink_text() {
        assert_eq!(interval_text(14, 0, 0).as_deref(), Some("+1-02"));
        assert_eq!(interval_text(-23, 0, 0).as_deref(), Some("-1-11"));
        assert_eq!(
            interval_text(0, 1, 7_384_500_000_000).as_deref(),
            Some("+1 02:03:04.500")
        );
        assert_eq!(
            interval_text(0, 0, -10_800_000_000_000).as_deref(),
            Some("-0 03:00:00.000")
        );
        // No Flink interval mixes months with days or time.
        assert_eq!(interval_text(1, 1, 0), None);
    }

    #[test]
    fn numbers_narrow_and_round_as_flink() {
        assert_eq!(
            cast(ScalarValue::Int32(Some(300)), "TINYINT", "UTC"),
            Some(ScalarValue::Int8(Some(44)))
        );
        assert_eq!(
            cast(ScalarValue::Float64(Some(1e10)), "INT", "UTC"),
            Some(ScalarValue::Int32(Some(i32::MAX)))
        );
        assert_eq!(
            cast(ScalarValue::Decimal128(Some(-399), 3, 2), "INT", "UTC"),
            Some(ScalarValue::Int32(Some(-3)))
        );
        assert_eq!(
            cast(
                ScalarValue::Decimal128(Some(-1235), 4, 3),
                "DECIMAL(4, 2)",
                "UTC"
            ),
            Some(ScalarValue::Decimal128(Some(-124), 4, 2))
        );
        assert_eq!(
            cast(ScalarValue::Float64(Some(0.1)), "DECIMAL(20, 18)", "UTC"),
            Some(ScalarValue::Decimal128(
                Some(100_000_000_000_000_000),
                20,
                18
            ))
        );
        assert_eq!(
            cast(
                ScalarValue::Decimal128(Some(123_456), 10, 1),
                "DECIMAL(4, 1)",
                "UTC"
            ),
            None
        );
        assert_eq!(
            cast(ScalarValue::Decimal128(Some(150), 3, 2), "STRING", "UTC"),
            s("1.50")
        );
        assert_eq!(
            cast(ScalarValue::Float64(Some(1e20)), "STRING", "UTC"),
            s("1.0E20")
        );
        assert_eq!(
            cast(ScalarValue::Boolean(Some(true)), "STRING", "UTC"),
            s("TRUE")
        );
    }

    #[test]
    fn timestamps_follow_precision_and_zone() {
        let ts = ScalarValue::TimestampMillisecond(Some(1_709_251_199_999), None);
        assert_eq!(
            cast(ts.clone(), "STRING", "UTC"),
            s("2024-02-29 23:59:59.999")
        );
        assert_eq!(
            cast(ts.clone(), "TIMESTAMP(1)", "UTC"),
            Some(ScalarValue::TimestampMillisecond(
                Some(1_709_251_199_900),
                None
            ))
        );
        let ltz = ScalarValue::TimestampMillisecond(Some(0), Some("UTC".into()));
        assert_eq!(
            cast(ltz.clone(), "STRING", "Asia/Shanghai"),
            s("1970-01-01 08:00:00.000")
        );
        assert_eq!(
            cast(ltz, "TIMESTAMP(3)", "GMT+05:30"),
            Some(ScalarValue::TimestampMillisecond(Some(19_800_000), None))
        );
        let local = ScalarValue::TimestampSecond(Some(1_709_280_000), None);
        assert_eq!(
            cast(local, "TIMESTAMP_LTZ(3)", "Asia/Shanghai"),
            Some(ScalarValue::TimestampMillisecond(
                Some(1_709_251_200_000),
                Some("UTC".into())
            ))
        );
    }
}
