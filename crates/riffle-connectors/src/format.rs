//! Flink's text rendering of rows: `Row.toString()` of the external (Java) values, as the `print`
//! connector and collected query results show them.
//!
//! `+I[2020-04-15T08:00, 11.00, null]`: timestamps as `LocalDateTime.toString()`, `TIMESTAMP_LTZ`
//! as `Instant.toString()`, DECIMAL as `BigDecimal.toString()` (keeps the scale), DOUBLE and FLOAT
//! as `Double.toString()`/`Float.toString()`, arrays `[1, 2]`, maps `{k=v}`, nested rows `+I[..]`.

use std::fmt::Write;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, IntervalMonthDayNanoType, IntervalUnit, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow::record_batch::RecordBatch;

pub use riffle_plan::java_text::{java_big_decimal, java_double, java_float};

use crate::RowKind;

/// Appends `kind[v1, v2, ...]` for row `row` of `batch`.
pub fn write_row(out: &mut String, kind: RowKind, batch: &RecordBatch, row: usize) {
    out.push_str(kind.short());
    out.push('[');
    for (i, column) in batch.columns().iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(out, column.as_ref(), row);
    }
    out.push(']');
}

/// Appends the Flink rendering of `array[row]`.
pub fn write_value(out: &mut String, array: &dyn Array, row: usize) {
    if array.is_null(row) {
        out.push_str("null");
        return;
    }
    match array.data_type() {
        DataType::Utf8 => out.push_str(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => out.push_str(array.as_string::<i64>().value(row)),
        DataType::Utf8View => out.push_str(array.as_string_view().value(row)),
        DataType::Boolean => out.push_str(if array.as_boolean().value(row) {
            "true"
        } else {
            "false"
        }),
        DataType::Int8 => push(out, array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => push(out, array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => push(out, array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => push(out, array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => push(out, array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => push(out, array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => push(out, array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => push(out, array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => {
            out.push_str(&java_float(array.as_primitive::<Float32Type>().value(row)))
        }
        DataType::Float64 => {
            out.push_str(&java_double(array.as_primitive::<Float64Type>().value(row)))
        }
        DataType::Decimal128(_, scale) => out.push_str(&java_big_decimal(
            array.as_primitive::<Decimal128Type>().value(row),
            *scale,
        )),
        DataType::Date32 => write_date(
            out,
            i64::from(array.as_primitive::<Date32Type>().value(row)),
        ),
        DataType::Time32(TimeUnit::Second) => write_time(
            out,
            i64::from(array.as_primitive::<Time32SecondType>().value(row)) * 1_000_000_000,
        ),
        DataType::Time32(_) => write_time(
            out,
            i64::from(array.as_primitive::<Time32MillisecondType>().value(row)) * 1_000_000,
        ),
        DataType::Time64(TimeUnit::Microsecond) => write_time(
            out,
            array.as_primitive::<Time64MicrosecondType>().value(row) * 1_000,
        ),
        DataType::Time64(_) => {
            write_time(out, array.as_primitive::<Time64NanosecondType>().value(row))
        }
        DataType::Timestamp(unit, tz) => {
            let (secs, nanos) = match unit {
                TimeUnit::Second => (array.as_primitive::<TimestampSecondType>().value(row), 0),
                TimeUnit::Millisecond => split(
                    array.as_primitive::<TimestampMillisecondType>().value(row),
                    1_000,
                    1_000_000,
                ),
                TimeUnit::Microsecond => split(
                    array.as_primitive::<TimestampMicrosecondType>().value(row),
                    1_000_000,
                    1_000,
                ),
                TimeUnit::Nanosecond => split(
                    array.as_primitive::<TimestampNanosecondType>().value(row),
                    1_000_000_000,
                    1,
                ),
            };
            write_timestamp(out, secs, nanos, tz.is_some());
        }
        DataType::Binary => write_bytes(out, array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => write_bytes(out, array.as_binary::<i64>().value(row)),
        DataType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            write_list(out, list.as_ref());
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>().value(row);
            write_list(out, list.as_ref());
        }
        DataType::Map(_, _) => {
            let entries = array.as_map().value(row);
            let keys = entries.column(0).as_ref();
            // Flink prints a map as the java.util.HashMap it converts it to.
            let hashes: Vec<Option<i32>> = (0..entries.len()).map(|i| key_hash(keys, i)).collect();
            let order = riffle_plan::java_hash::hash_map_order(
                &hashes,
                riffle_plan::java_hash::DEFAULT_CAPACITY,
            )
            .unwrap_or_else(|| (0..entries.len()).collect());
            out.push('{');
            for (n, i) in order.into_iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_value(out, keys, i);
                out.push('=');
                write_value(out, entries.column(1).as_ref(), i);
            }
            out.push('}');
        }
        DataType::Struct(_) => {
            let s = array.as_struct();
            out.push_str("+I[");
            for (i, column) in s.columns().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, column.as_ref(), row);
            }
            out.push(']');
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            write_interval(out, v.months, v.days, v.nanoseconds);
        }
        other => {
            let _ = write!(out, "<{other}>");
        }
    }
}

/// An interval as Flink prints it: a year-month interval as Java's `Period` (`P18M`), a
/// day-time one as Java's `Duration` (`PT1H30M`, `PT0.5S`, `PT-3H`). A zero value carries no
/// kind here and prints as a `Duration`.
fn write_interval(out: &mut String, months: i32, days: i32, nanos: i64) {
    if months != 0 {
        let _ = write!(out, "P{months}M");
        return;
    }
    let total = i128::from(days) * 86_400_000_000_000 + i128::from(nanos);
    if total == 0 {
        out.push_str("PT0S");
        return;
    }
    let sign = if total < 0 { "-" } else { "" };
    let abs = total.unsigned_abs();
    let (hours, minutes) = (abs / 3_600_000_000_000, abs / 60_000_000_000 % 60);
    let (secs, frac) = (abs / 1_000_000_000 % 60, abs % 1_000_000_000);
    out.push_str("PT");
    if hours > 0 {
        let _ = write!(out, "{sign}{hours}H");
    }
    if minutes > 0 {
        let _ = write!(out, "{sign}{minutes}M");
    }
    if secs > 0 || frac > 0 {
        let _ = write!(out, "{sign}{secs}");
        if frac > 0 {
            let digits = format!("{frac:09}");
            let _ = write!(out, ".{}", digits.trim_end_matches('0'));
        }
        out.push('S');
    }
}

/// Java's `hashCode` of map key `i` (None: NULL or a type whose hash Riffle does not reproduce).
fn key_hash(keys: &dyn Array, i: usize) -> Option<i32> {
    use riffle_plan::java_hash::{boolean_hash, long_hash, string_hash};
    if keys.is_null(i) {
        return None;
    }
    Some(match keys.data_type() {
        DataType::Utf8 => string_hash(keys.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => string_hash(keys.as_string::<i64>().value(i)),
        DataType::Utf8View => string_hash(keys.as_string_view().value(i)),
        DataType::Int8 => i32::from(keys.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => i32::from(keys.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => keys.as_primitive::<Int32Type>().value(i),
        DataType::Int64 => long_hash(keys.as_primitive::<Int64Type>().value(i)),
        DataType::Boolean => boolean_hash(keys.as_boolean().value(i)),
        _ => return None,
    })
}

fn push(out: &mut String, v: impl std::fmt::Display) {
    let _ = write!(out, "{v}");
}

/// Splits an epoch value in `per_second` units into (seconds, nanoseconds ≥ 0).
fn split(v: i64, per_second: i64, nanos_per_unit: i64) -> (i64, i64) {
    (
        v.div_euclid(per_second),
        v.rem_euclid(per_second) * nanos_per_unit,
    )
}

fn write_list(out: &mut String, values: &dyn Array) {
    out.push('[');
    for i in 0..values.len() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(out, values, i);
    }
    out.push(']');
}

/// `Arrays.toString(byte[])`: signed bytes.
fn write_bytes(out: &mut String, bytes: &[u8]) {
    out.push('[');
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push(out, *b as i8);
    }
    out.push(']');
}

/// Civil date of a day count since 1970-01-01 (proleptic Gregorian).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a civil date.
#[inline]
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `LocalDate.toString()`.
fn write_date(out: &mut String, days: i64) {
    let (y, m, d) = civil_from_days(days);
    if y > 9999 {
        let _ = write!(out, "+{y}-{m:02}-{d:02}");
    } else if y < 0 {
        let _ = write!(out, "-{:04}-{m:02}-{d:02}", -y);
    } else {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    }
}

/// `LocalTime.toString()` of nanoseconds since midnight: `HH:mm[:ss[.fff|.ffffff|.fffffffff]]`.
fn write_time(out: &mut String, nanos_of_day: i64) {
    let secs = nanos_of_day.div_euclid(1_000_000_000);
    let nanos = nanos_of_day.rem_euclid(1_000_000_000);
    let (h, mi, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let _ = write!(out, "{h:02}:{mi:02}");
    if s > 0 || nanos > 0 {
        let _ = write!(out, ":{s:02}");
        write_fraction(out, nanos);
    }
}

fn write_fraction(out: &mut String, nanos: i64) {
    if nanos == 0 {
        return;
    }
    if nanos % 1_000_000 == 0 {
        let _ = write!(out, ".{:03}", nanos / 1_000_000);
    } else if nanos % 1_000 == 0 {
        let _ = write!(out, ".{:06}", nanos / 1_000);
    } else {
        let _ = write!(out, ".{nanos:09}");
    }
}

/// `LocalDateTime.toString()` (or `Instant.toString()` when `instant`, which always shows
/// seconds and ends in `Z`).
fn write_timestamp(out: &mut String, epoch_secs: i64, nanos: i64, instant: bool) {
    let days = epoch_secs.div_euclid(86_400);
    let secs_of_day = epoch_secs.rem_euclid(86_400);
    write_date(out, days);
    out.push('T');
    if instant {
        let (h, mi, s) = (
            secs_of_day / 3600,
            (secs_of_day / 60) % 60,
            secs_of_day % 60,
        );
        let _ = write!(out, "{h:02}:{mi:02}:{s:02}");
        write_fraction(out, nanos);
        out.push('Z');
    } else {
        write_time(out, secs_of_day * 1_000_000_000 + nanos);
    }
}

/// The SQL text form Flink's CSV and JSON formats write for a timestamp or time value:
/// `yyyy-MM-dd HH:mm:ss[.fraction]` (`T` instead of the space when `iso`; a trailing `Z` for
/// `TIMESTAMP_LTZ`), `HH:mm:ss[.fraction]` for TIME; the fraction has no trailing zeros.
/// Returns false for other types.
pub fn write_sql_temporal(out: &mut String, array: &dyn Array, row: usize, iso: bool) -> bool {
    let (secs, nanos, ltz) = match array.data_type() {
        DataType::Timestamp(unit, tz) => {
            let (secs, nanos) = match unit {
                TimeUnit::Second => (array.as_primitive::<TimestampSecondType>().value(row), 0),
                TimeUnit::Millisecond => split(
                    array.as_primitive::<TimestampMillisecondType>().value(row),
                    1_000,
                    1_000_000,
                ),
                TimeUnit::Microsecond => split(
                    array.as_primitive::<TimestampMicrosecondType>().value(row),
                    1_000_000,
                    1_000,
                ),
                TimeUnit::Nanosecond => split(
                    array.as_primitive::<TimestampNanosecondType>().value(row),
                    1_000_000_000,
                    1,
                ),
            };
            (secs, nanos, tz.is_some())
        }
        DataType::Time32(TimeUnit::Millisecond) => {
            let ms = i64::from(array.as_primitive::<Time32MillisecondType>().value(row));
            let (h, m, sec) = (ms / 3_600_000, (ms / 60_000) % 60, (ms / 1000) % 60);
            let _ = write!(out, "{h:02}:{m:02}:{sec:02}");
            write_minimal_fraction(out, (ms % 1000) * 1_000_000);
            return true;
        }
        _ => return false,
    };
    write_date(out, secs.div_euclid(86_400));
    out.push(if iso { 'T' } else { ' ' });
    let sod = secs.rem_euclid(86_400);
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    );
    write_minimal_fraction(out, nanos);
    if ltz {
        out.push('Z');
    }
    true
}

/// `.fff` with trailing zeros removed (nothing for zero), as `appendFraction(NANO, 0, 9, true)`.
fn write_minimal_fraction(out: &mut String, nanos: i64) {
    if nanos == 0 {
        return;
    }
    let digits = format!("{nanos:09}");
    out.push('.');
    out.push_str(digits.trim_end_matches('0'));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Decimal128Array, Int32Array, StringArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn intervals_print_as_java_duration_and_period() {
        let text = |months, days, nanos| {
            let mut out = String::new();
            write_interval(&mut out, months, days, nanos);
            out
        };
        assert_eq!(text(18, 0, 0), "P18M");
        assert_eq!(text(-27, 0, 0), "P-27M");
        assert_eq!(text(0, 0, 5_400_000_000_000), "PT1H30M");
        assert_eq!(text(0, 0, -5_400_000_000_000), "PT-1H-30M");
        assert_eq!(text(0, 0, 500_000_000), "PT0.5S");
        assert_eq!(text(0, 1, 1_000_000), "PT24H0.001S");
        assert_eq!(text(0, 0, 0), "PT0S");
    }

    #[test]
    fn rows_print_like_flink() {
        let ts = 1_586_937_600_000_i64; // 2020-04-15T08:00
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("p", DataType::Decimal128(10, 2), true),
            Field::new("s", DataType::Utf8, true),
            Field::new("i", DataType::Int32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(TimestampMillisecondArray::from(vec![
                    ts,
                    ts + 5_000,
                    ts + 5_120,
                ])),
                Arc::new(
                    Decimal128Array::from(vec![Some(1100), None, Some(5)])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
                Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
                Arc::new(Int32Array::from(vec![1, 2, 3])),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        for (row, kind) in [RowKind::Insert, RowKind::UpdateBefore, RowKind::Delete]
            .into_iter()
            .enumerate()
        {
            let mut s = String::new();
            write_row(&mut s, kind, &batch, row);
            out.push(s);
        }
        assert_eq!(
            out,
            vec![
                "+I[2020-04-15T08:00, 11.00, a, 1]",
                "-U[2020-04-15T08:00:05, null, b, 2]",
                "-D[2020-04-15T08:00:05.120, 0.05, null, 3]",
            ]
        );
    }

    #[test]
    fn instants_always_show_seconds() {
        let mut s = String::new();
        write_timestamp(&mut s, 1_586_937_600, 0, true);
        assert_eq!(s, "2020-04-15T08:00:00Z");
        assert_eq!(days_from_civil(2020, 4, 15), 18_367);
        assert_eq!(civil_from_days(18_367), (2020, 4, 15));
    }
}
