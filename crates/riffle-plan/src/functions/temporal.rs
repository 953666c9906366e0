//! Flink's date and time functions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, TimestampMillisecondArray};
use arrow::datatypes::{
    DataType, Float64Type, Int64Type, IntervalDayTime, IntervalMonthDayNano, TimeUnit,
};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::row::{int, text, Arg, RowFunction};
use super::zone::LocalZone;
use crate::types::LTZ_TIME_ZONE;

fn ltz_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from(LTZ_TIME_ZONE)))
}

/// `PROCTIME()`: the current processing time as `TIMESTAMP_LTZ(3)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Proctime {
    signature: Signature,
}

impl Proctime {
    pub(super) fn new() -> Self {
        Self {
            signature: Signature::exact(vec![], Volatility::Volatile),
        }
    }
}

impl ScalarUDFImpl for Proctime {
    fn name(&self) -> &str {
        "proctime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(ltz_ms())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let array = TimestampMillisecondArray::from(vec![now; args.number_rows])
            .with_timezone(LTZ_TIME_ZONE);
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}

/// Epoch milliseconds within the years 0001 to 9999, the range `TO_TIMESTAMP_LTZ` accepts (an
/// epoch outside it is NULL in Flink).
fn ltz_in_range(ms: i64) -> Option<i64> {
    (-62_135_596_800_000..=253_402_300_799_999)
        .contains(&ms)
        .then_some(ms)
}

/// `TO_TIMESTAMP_LTZ(epoch, precision)`: epoch seconds (precision 0) or milliseconds (precision 3)
/// to `TIMESTAMP_LTZ(3)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct ToTimestampLtz {
    signature: Signature,
}

impl ToTimestampLtz {
    pub(super) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ToTimestampLtz {
    fn name(&self) -> &str {
        "to_timestamp_ltz"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match arg_types {
            [t] if t.is_integer() => Ok(vec![DataType::Int64]),
            [t, p] if t.is_integer() && p.is_integer() => {
                Ok(vec![DataType::Int64, DataType::Int32])
            }
            [t, p] if t.is_numeric() && p.is_integer() => {
                Ok(vec![DataType::Float64, DataType::Int32])
            }
            _ => plan_err!("TO_TIMESTAMP_LTZ expects (numeric epoch, precision 0 or 3)"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(ltz_ms())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let precision = match args.args.get(1) {
            None => 3,
            Some(ColumnarValue::Scalar(ScalarValue::Int32(Some(p)))) => *p,
            Some(ColumnarValue::Scalar(ScalarValue::Int32(None))) => {
                return Ok(ColumnarValue::Scalar(ScalarValue::TimestampMillisecond(
                    None,
                    Some(Arc::from(LTZ_TIME_ZONE)),
                )))
            }
            Some(_) => return exec_err!("TO_TIMESTAMP_LTZ precision must be a constant"),
        };
        let factor: i64 = match precision {
            0 => 1_000,
            3 => 1,
            p => return exec_err!("The precision value '{p}' for function TO_TIMESTAMP_LTZ(numeric, precision) is unsupported, the supported value is '0' for second or '3' for millisecond."),
        };
        let Some(epoch) = args.args.first() else {
            return exec_err!("TO_TIMESTAMP_LTZ requires an argument");
        };
        let array: ArrayRef = epoch.to_array(args.number_rows)?;
        let out: TimestampMillisecondArray = match array.data_type() {
            DataType::Int64 => array
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.and_then(|v| v.checked_mul(factor)).and_then(ltz_in_range))
                .collect(),
            DataType::Float64 => array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.and_then(|v| ltz_in_range((v * factor as f64) as i64)))
                .collect(),
            other => return exec_err!("TO_TIMESTAMP_LTZ does not accept {other}"),
        };
        Ok(ColumnarValue::Array(Arc::new(
            out.with_timezone(LTZ_TIME_ZONE),
        )))
    }
}

/// `TO_TIMESTAMP(string [, format])`: parses a local date-time (default format
/// `yyyy-MM-dd HH:mm:ss`, fractions allowed) into `TIMESTAMP(3)`; NULL when it does not parse.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct ToTimestamp {
    signature: Signature,
}

impl ToTimestamp {
    pub(super) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ToTimestamp {
    fn name(&self) -> &str {
        "to_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        let text = |t: &DataType| {
            matches!(
                t,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
            )
        };
        match arg_types {
            [t] if text(t) => Ok(vec![DataType::Utf8]),
            [t, f] if text(t) && text(f) => Ok(vec![DataType::Utf8, DataType::Utf8]),
            _ => plan_err!("TO_TIMESTAMP expects (STRING [, STRING format])"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Millisecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let n = args.number_rows;
        let Some(value) = args.args.first() else {
            return exec_err!("TO_TIMESTAMP requires an argument");
        };
        let value = value.to_array(n)?;
        let format = match args.args.get(1) {
            Some(f) => Some(f.to_array(n)?),
            None => None,
        };
        let values = value.as_string::<i32>();
        let formats = format.as_ref().map(|f| f.as_string::<i32>());
        let out: TimestampMillisecondArray = (0..n)
            .map(|i| {
                if values.is_null(i) {
                    return None;
                }
                match formats {
                    None => parse_local_datetime(values.value(i)),
                    Some(f) if f.is_null(i) => None,
                    // Java's SMART resolver: a day past the month's end is its last day.
                    // A string the pattern does not parse is read as `y-M-d[ H:m:s[.f]]`, as
                    // Flink falls back to `Timestamp.valueOf` / `Date.valueOf`.
                    Some(f) => parse_with_pattern(values.value(i), f.value(i), true)
                        .or_else(|| parse_local_datetime(values.value(i))),
                }
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// Epoch milliseconds of `yyyy-MM-dd[( |T)HH:mm[:ss[.fraction]]]`.
fn parse_local_datetime(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut d = date.splitn(3, '-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    let mut ms = epoch_day(y, m, day)? * 86_400_000;
    if let Some(time) = time {
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut t = hms.split(':');
        let h: i64 = t.next()?.parse().ok()?;
        let mi: i64 = t.next()?.parse().ok()?;
        let sec: i64 = match t.next() {
            Some(v) => v.parse().ok()?,
            None => 0,
        };
        if t.next().is_some()
            || h > 23
            || mi > 59
            || sec > 59
            || !frac.chars().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let frac_ms: i64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
        ms += ((h * 60 + mi) * 60 + sec) * 1000 + frac_ms;
    }
    Some(ms)
}

/// Parses `s` with a Java date pattern made of `yyyy`, `MM`, `dd`, `HH`, `mm`, `ss`, `SSS` and
/// literal characters; `clamp_day` moves a day 29..31 past the month's end to its last day.
fn parse_with_pattern(s: &str, pattern: &str, clamp_day: bool) -> Option<i64> {
    let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut frac) =
        (1970i64, 1u32, 1u32, 0i64, 0i64, 0i64, 0i64);
    let mut rest = s;
    let mut p = pattern;
    while let Some(c) = p.chars().next() {
        let run = p.chars().take_while(|x| *x == c).count();
        let field = |rest: &mut &str| -> Option<i64> {
            let v = rest.get(..run)?;
            if !v.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            *rest = &rest[run..];
            v.parse().ok()
        };
        match c {
            'y' => y = field(&mut rest)?,
            'M' => mo = u32::try_from(field(&mut rest)?).ok()?,
            'd' => d = u32::try_from(field(&mut rest)?).ok()?,
            'H' => h = field(&mut rest)?,
            'm' => mi = field(&mut rest)?,
            's' => sec = field(&mut rest)?,
            'S' => {
                frac = field(&mut rest)? * 10i64.pow(3u32.saturating_sub(run as u32))
                    / 10i64.pow((run as u32).saturating_sub(3))
            }
            'a'..='z' | 'A'..='Z' => return None,
            lit => {
                let mut it = rest.chars();
                if it.next()? != lit {
                    return None;
                }
                rest = it.as_str();
                p = &p[lit.len_utf8()..];
                continue;
            }
        }
        p = &p[run..];
    }
    if !rest.is_empty() || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let day = match epoch_day(y, mo, d) {
        None if clamp_day && (29..=31).contains(&d) => {
            (28..d).rev().find_map(|d| epoch_day(y, mo, d))?
        }
        day => day?,
    };
    Some(day * 86_400_000 + ((h * 60 + mi) * 60 + sec) * 1000 + frac)
}

/// Flink's `TO_DATE(s, format)` of a string its format does not parse.
const UNPARSED_DATE: i32 = 622_191_233;

/// Parses `s` as Java's lenient `SimpleDateFormat` does (Flink's `TO_DATE` with a format and
/// `UNIX_TIMESTAMP`): a number field takes every digit there is, unless the next pattern letter
/// is a number field too (then exactly its width); out-of-range values roll over (month 13 is
/// the next January, day 0 the month's eve); `S` counts milliseconds; text after the pattern is
/// ignored. Local epoch milliseconds; `None` for text fields and strings that do not match.
fn parse_lenient(s: &str, pattern: &str) -> Option<i64> {
    let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut ms) = (1970i64, 1i64, 1i64, 0, 0, 0, 0);
    let mut rest = s;
    let mut p = pattern;
    while let Some(c) = p.chars().next() {
        if !c.is_ascii_alphabetic() {
            rest = rest.strip_prefix(c)?;
            p = &p[c.len_utf8()..];
            continue;
        }
        let run = p.chars().take_while(|x| *x == c).count();
        p = &p[run..];
        let abutting = p.starts_with(|n: char| "yMdHmsS".contains(n));
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let width = if abutting { run } else { digits };
        if width == 0 || digits < width || (c == 'M' && run > 2) {
            return None;
        }
        let value: i64 = rest[..width].parse().ok()?;
        rest = &rest[width..];
        match c {
            'y' => y = value,
            'M' => mo = value,
            'd' => d = value,
            'H' => h = value,
            'm' => mi = value,
            's' => sec = value,
            'S' => ms = value,
            _ => return None,
        }
    }
    let months = y.checked_mul(12)?.checked_add(mo - 1)?;
    let first = epoch_day(
        months.div_euclid(12),
        u32::try_from(months.rem_euclid(12) + 1).ok()?,
        1,
    )?;
    let day = first.checked_add(d - 1)?;
    let time = h
        .checked_mul(3_600_000)?
        .checked_add(mi.checked_mul(60_000)?)?
        .checked_add(sec.checked_mul(1000)?)?
        .checked_add(ms)?;
    day.checked_mul(MS_PER_DAY)?.checked_add(time)
}

/// Days since 1970-01-01 of a valid civil date.
pub(super) fn epoch_day(y: i64, m: u32, d: u32) -> Option<i64> {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d == 0 || d > *days_in_month.get(m as usize - 1)? {
        return None;
    }
    let yy = if m <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy.rem_euclid(400);
    let mm = i64::from(m);
    let doy = (153 * (if mm > 2 { mm - 3 } else { mm + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn us_weeks_start_on_sunday_and_hold_january_first() {
        let day = |y, m, d| epoch_day(y, m, d).unwrap_or_default();
        // Sunday 2023-12-31 starts the week holding 2024-01-01.
        assert_eq!(us_week(day(2023, 12, 31)), (2024, 1));
        assert_eq!(us_week(day(2023, 12, 30)), (2023, 52));
        assert_eq!(us_week(day(2024, 2, 29)), (2024, 9));
        assert_eq!(us_week(day(2020, 1, 5)), (2020, 2));
    }

    #[test]
    fn to_timestamp_parses_default_and_patterns() {
        assert_eq!(
            parse_local_datetime("2020-04-15 08:05:00"),
            Some(1_586_937_900_000)
        );
        assert_eq!(
            parse_local_datetime("2020-04-15 08:05:00.5"),
            Some(1_586_937_900_500)
        );
        assert_eq!(parse_local_datetime("2020-04-15"), Some(1_586_908_800_000));
        assert_eq!(parse_local_datetime("2020-13-15 08:05:00"), None);
        assert_eq!(
            parse_with_pattern("15/04/2020 08:05", "dd/MM/yyyy HH:mm", false),
            Some(1_586_937_900_000)
        );
        assert_eq!(parse_with_pattern("2020-04-15", "yyyy/MM/dd", false), None);
    }
}

const NANOS_PER_MS: i128 = 1_000_000;
const MS_PER_DAY: i64 = 86_400_000;

/// A date or timestamp value as nanoseconds since the epoch (local wall clock for `DATE` and
/// `TIMESTAMP`, UTC for `TIMESTAMP_LTZ`).
pub(super) fn nanos(v: &ScalarValue) -> Option<i128> {
    Some(match v {
        ScalarValue::Date32(d) => i128::from(d.map(i64::from)? * MS_PER_DAY) * NANOS_PER_MS,
        ScalarValue::TimestampSecond(t, _) => i128::from((*t)?) * 1_000_000_000,
        ScalarValue::TimestampMillisecond(t, _) => i128::from((*t)?) * NANOS_PER_MS,
        ScalarValue::TimestampMicrosecond(t, _) => i128::from((*t)?) * 1_000,
        ScalarValue::TimestampNanosecond(t, _) => i128::from((*t)?),
        // A time of day counts from the epoch's midnight.
        ScalarValue::Time32Second(t) => i128::from((*t)?) * 1_000_000_000,
        ScalarValue::Time32Millisecond(t) => i128::from((*t)?) * NANOS_PER_MS,
        ScalarValue::Time64Microsecond(t) => i128::from((*t)?) * 1_000,
        ScalarValue::Time64Nanosecond(t) => i128::from((*t)?),
        _ => return None,
    })
}

/// A value of the same type as `like` holding `n` nanoseconds since the epoch.
fn with_nanos(like: &ScalarValue, n: i128) -> ScalarValue {
    let fit = |x: i128| i64::try_from(x).ok();
    match like {
        ScalarValue::Date32(_) => ScalarValue::Date32(
            fit(n.div_euclid(NANOS_PER_MS * i128::from(MS_PER_DAY)))
                .and_then(|d| i32::try_from(d).ok()),
        ),
        ScalarValue::TimestampSecond(_, tz) => {
            ScalarValue::TimestampSecond(fit(n.div_euclid(1_000_000_000)), tz.clone())
        }
        ScalarValue::TimestampMillisecond(_, tz) => {
            ScalarValue::TimestampMillisecond(fit(n.div_euclid(NANOS_PER_MS)), tz.clone())
        }
        ScalarValue::TimestampMicrosecond(_, tz) => {
            ScalarValue::TimestampMicrosecond(fit(n.div_euclid(1_000)), tz.clone())
        }
        _ => ScalarValue::TimestampNanosecond(fit(n), None),
    }
}

/// Local wall-clock milliseconds of a date, timestamp or `TIMESTAMP_LTZ` (in `zone`).
fn local_ms(v: &ScalarValue, zone: &LocalZone) -> Option<i64> {
    let ms = i64::try_from(nanos(v)?.div_euclid(NANOS_PER_MS)).ok()?;
    let ltz = matches!(v.data_type(), DataType::Timestamp(_, Some(_)));
    Some(if ltz { zone.to_local(ms) } else { ms })
}

/// An interval value as (months, milliseconds); None for other values.
fn interval_parts(v: &ScalarValue) -> Option<(i64, i64)> {
    Some(match v {
        ScalarValue::IntervalYearMonth(Some(m)) => (i64::from(*m), 0),
        ScalarValue::IntervalDayTime(Some(x)) => (
            0,
            i64::from(x.days) * MS_PER_DAY + i64::from(x.milliseconds),
        ),
        ScalarValue::IntervalMonthDayNano(Some(x)) => (
            i64::from(x.months),
            i64::from(x.days) * MS_PER_DAY + x.nanoseconds / 1_000_000,
        ),
        ScalarValue::DurationSecond(Some(s)) => (0, s.checked_mul(1000)?),
        ScalarValue::DurationMillisecond(Some(ms)) => (0, *ms),
        ScalarValue::DurationMicrosecond(Some(us)) => (0, us / 1000),
        ScalarValue::DurationNanosecond(Some(ns)) => (0, ns / 1_000_000),
        _ => return None,
    })
}

/// A time unit of `TIMESTAMPADD`/`TIMESTAMPDIFF`, `FLOOR`/`CEIL ... TO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Months(i64),
    Millis(i64),
}

fn unit(name: &str) -> DfResult<Unit> {
    Ok(match name.to_ascii_uppercase().as_str() {
        "YEAR" => Unit::Months(12),
        "QUARTER" => Unit::Months(3),
        "MONTH" => Unit::Months(1),
        "WEEK" => Unit::Millis(7 * MS_PER_DAY),
        "DAY" => Unit::Millis(MS_PER_DAY),
        "HOUR" => Unit::Millis(3_600_000),
        "MINUTE" => Unit::Millis(60_000),
        "SECOND" => Unit::Millis(1_000),
        "MILLISECOND" => Unit::Millis(1),
        other => return exec_err!("unsupported time unit {other}"),
    })
}

/// Adds `months` to a local date-time, clamping the day to the month's last day.
fn add_months(local_ms: i64, months: i64) -> Option<i64> {
    let day = local_ms.div_euclid(MS_PER_DAY);
    let time = local_ms.rem_euclid(MS_PER_DAY);
    let (y, m, d) = civil(day);
    let total = y * 12 + i64::from(m) - 1 + months;
    let (y2, m2) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let last = (28..=31).rev().find(|d| epoch_day(y2, m2, *d).is_some())?;
    Some(epoch_day(y2, m2, d.min(last))? * MS_PER_DAY + time)
}

/// Whole months from local time `t1` to `t0` (Flink's rule: whole months between the dates,
/// counting a month when adding it to `t1`'s date does not pass `t0`'s, end-of-month clamping
/// counts; then one less when that lands on `t0`'s date at a later time of day, whichever
/// comes first, so a time a minute earlier on the same day is -1 month).
fn months_between(t0: i64, t1: i64) -> Option<i64> {
    let (d0, d1) = (t0.div_euclid(MS_PER_DAY), t1.div_euclid(MS_PER_DAY));
    let (ms0, ms1) = (t0.rem_euclid(MS_PER_DAY), t1.rem_euclid(MS_PER_DAY));
    let mut m = date_months_between(d0, d1)?;
    let landed = add_months(d1 * MS_PER_DAY, m)?.div_euclid(MS_PER_DAY);
    if landed == d0 && ms0 < ms1 {
        m -= 1;
    }
    Some(m)
}

/// Whole months from day `d1` to day `d0` (negative when `d0` is earlier).
fn date_months_between(d0: i64, d1: i64) -> Option<i64> {
    if d0 < d1 {
        return date_months_between(d1, d0).map(|m| -m);
    }
    let mut m = (d0 - d1) / 31;
    loop {
        let next = add_months(d1 * MS_PER_DAY, m + 1)?.div_euclid(MS_PER_DAY);
        if next > d0 {
            return Some(m);
        }
        m += 1;
    }
}

/// Civil (year, month, day) of a day count since 1970-01-01.
pub(super) fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Formats local wall-clock milliseconds with a Java `DateTimeFormatter` pattern in the US
/// locale (letters y u Y M L d D Q q w H h k K m s S E a G, quoted literals).
fn format_java(local_ms: i64, pattern: &str) -> DfResult<String> {
    let day = local_ms.div_euclid(MS_PER_DAY);
    let time = local_ms.rem_euclid(MS_PER_DAY);
    let (y, mo, d) = civil(day);
    let (h, mi, s, ms) = (
        time / 3_600_000,
        time / 60_000 % 60,
        time / 1000 % 60,
        time % 1000,
    );
    let mut out = String::new();
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|x| **x == c).count();
        let num = |v: i64| format!("{v:0run$}");
        match c {
            '\'' => {
                let end = chars[i + 1..].iter().position(|x| *x == '\'');
                match end {
                    Some(0) => out.push('\''),
                    Some(n) => out.extend(&chars[i + 1..i + 1 + n]),
                    None => return exec_err!("unterminated quote in pattern '{pattern}'"),
                }
                i += end.map_or(chars.len(), |n| n + 2);
                continue;
            }
            'y' | 'u' if run == 2 => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            'y' | 'u' => out.push_str(&num(y)),
            'Y' if run == 2 => out.push_str(&format!("{:02}", us_week(day).0.rem_euclid(100))),
            'Y' => out.push_str(&num(us_week(day).0)),
            'w' => out.push_str(&num(us_week(day).1)),
            'Q' | 'q' => out.push_str(&num((i64::from(mo) - 1) / 3 + 1)),
            'G' => out.push_str(if y > 0 { "AD" } else { "BC" }),
            'M' | 'L' if run >= 4 => out.push_str(MONTHS[mo as usize - 1]),
            'M' | 'L' if run == 3 => out.push_str(&MONTHS[mo as usize - 1][..3]),
            'M' | 'L' => out.push_str(&num(i64::from(mo))),
            'd' => out.push_str(&num(i64::from(d))),
            'D' => out.push_str(&num(day - epoch_day(y, 1, 1).unwrap_or(day) + 1)),
            'H' => out.push_str(&num(h)),
            'h' => out.push_str(&num(if h % 12 == 0 { 12 } else { h % 12 })),
            'k' => out.push_str(&num(if h == 0 { 24 } else { h })),
            'K' => out.push_str(&num(h % 12)),
            'm' => out.push_str(&num(mi)),
            's' => out.push_str(&num(s)),
            'S' => {
                let digits = format!("{ms:03}000000");
                out.push_str(&digits[..run.min(9)]);
            }
            'E' => {
                let name = WEEKDAYS[(day + 3).rem_euclid(7) as usize];
                out.push_str(if run >= 4 { name } else { &name[..3] });
            }
            'a' => out.push_str(if h < 12 { "AM" } else { "PM" }),
            c if c.is_ascii_alphabetic() => {
                return exec_err!("date-time pattern letter '{c}' is not supported")
            }
            c => out.extend(std::iter::repeat_n(c, run)),
        }
        i += run;
    }
    Ok(out)
}

/// Flink's temporal functions written as row rules.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Int, Str};
    let ts3 = DataType::Timestamp(TimeUnit::Millisecond, None);
    vec![
        RowFunction::new("to_date", &[&[Str], &[Str, Str]], DataType::Date32, |v| {
            let s = text(&v[0]).unwrap_or_default();
            let days = |ms: i64| i32::try_from(ms.div_euclid(MS_PER_DAY)).ok();
            Ok(ScalarValue::Date32(match v.get(1).and_then(text) {
                // Flink reads `y-M-d` (single digits allowed), ignoring a time after a blank.
                None => parse_local_datetime(s.trim().split(' ').next().unwrap_or_default())
                    .and_then(days),
                // With a format Flink parses leniently, and a string it cannot parse gives the
                // date of Long.MIN_VALUE milliseconds, wrapped into an int of days.
                Some(pattern) => Some(
                    parse_lenient(s, pattern)
                        .and_then(days)
                        .unwrap_or(UNPARSED_DATE),
                ),
            }))
        }),
        RowFunction::with_context(
            "from_unixtime",
            &[&[Int], &[Int, Str]],
            DataType::Utf8,
            |v, cx| {
                let Some(secs) = int(&v[0]) else {
                    return Ok(ScalarValue::Utf8(None));
                };
                let pattern = v.get(1).and_then(text).unwrap_or("yyyy-MM-dd HH:mm:ss");
                let local = cx.zone.to_local(secs.saturating_mul(1000));
                Ok(ScalarValue::Utf8(Some(format_java(local, pattern)?)))
            },
        ),
        RowFunction::with_context(
            "unix_timestamp",
            &[&[Str], &[Str, Str]],
            DataType::Int64,
            |v, cx| {
                let s = text(&v[0]).unwrap_or_default();
                let pattern = v.get(1).and_then(text).unwrap_or("yyyy-MM-dd HH:mm:ss");
                // Flink answers a string the pattern does not parse with Long.MIN_VALUE.
                let seconds = parse_lenient(s, pattern)
                    .map_or(i64::MIN, |local| cx.zone.to_utc(local).div_euclid(1000));
                Ok(ScalarValue::Int64(Some(seconds)))
            },
        ),
        RowFunction::with_context("date_format", &[&[Any, Str]], DataType::Utf8, |v, cx| {
            let local = match text(&v[0]) {
                Some(s) => parse_local_datetime(s),
                None => local_ms(&v[0], &cx.zone),
            };
            let Some(local) = local else {
                return Ok(ScalarValue::Utf8(None));
            };
            Ok(ScalarValue::Utf8(Some(format_java(
                local,
                text(&v[1]).unwrap_or_default(),
            )?)))
        }),
        RowFunction::new("convert_tz", &[&[Str, Str, Str]], DataType::Utf8, |v| {
            let s = text(&v[0]).unwrap_or_default();
            let zone = |i: usize| {
                let id = text(&v[i]).unwrap_or_default();
                match LocalZone::parse(id) {
                    Some(z) => Ok(z),
                    None => exec_err!("unknown time zone '{id}'"),
                }
            };
            let (from, to) = (zone(1)?, zone(2)?);
            let Some(local) = parse_with_pattern(s, "yyyy-MM-dd HH:mm:ss", false) else {
                return Ok(ScalarValue::Utf8(None));
            };
            // Flink parses with Java's legacy time zones: an ambiguous time is standard time.
            let converted = to.to_local(from.to_utc_later(local));
            Ok(ScalarValue::Utf8(Some(format_java(
                converted,
                "yyyy-MM-dd HH:mm:ss",
            )?)))
        }),
        RowFunction::new("timestampadd", &[&[Str, Int, Any]], ts3.clone(), |v| {
            timestamp_add(&v[0], &v[1], &v[2])
        })
        .returning(|t| t.get(2).cloned().unwrap_or(DataType::Null)),
        // TIMESTAMPADD by a unit below a day (the planner renames those calls): a DATE becomes
        // a TIMESTAMP(6) first, as in Flink.
        RowFunction::new(CLOCK_TIMESTAMPADD, &[&[Str, Int, Any]], ts3.clone(), |v| {
            let shifted = match &v[2] {
                ScalarValue::Date32(d) => ScalarValue::TimestampMicrosecond(
                    d.map(|d| i64::from(d) * MS_PER_DAY * 1000),
                    None,
                ),
                other => other.clone(),
            };
            timestamp_add(&v[0], &v[1], &shifted)
        })
        .returning(|t| match t.get(2) {
            Some(DataType::Date32) => DataType::Timestamp(TimeUnit::Microsecond, None),
            other => other.cloned().unwrap_or(DataType::Null),
        }),
        // EXTRACT(part FROM t) as DataFusion plans it (a TIMESTAMP_LTZ in the session zone).
        RowFunction::with_context("date_part", &[&[Str, Any]], DataType::Int64, |v, cx| {
            let part = text(&v[0]).unwrap_or_default().to_ascii_lowercase();
            if let Some((months, ms)) = interval_parts(&v[1]) {
                // Java's truncating division and remainder, as Flink's interval extraction.
                return Ok(ScalarValue::Int64(Some(match part.as_str() {
                    "year" => months / 12,
                    "month" => months % 12,
                    "day" => ms / MS_PER_DAY,
                    "hour" => ms / 3_600_000 % 24,
                    "minute" => ms / 60_000 % 60,
                    "second" => ms / 1000 % 60,
                    other => {
                        return exec_err!("EXTRACT of {other} from an interval is not supported")
                    }
                })));
            }
            let Some(ms) = local_ms(&v[1], &cx.zone) else {
                return exec_err!("EXTRACT expects a DATE, TIME, TIMESTAMP or INTERVAL");
            };
            let (day, time) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
            let (y, m, d) = civil(day);
            // Nanoseconds within the second, below the millisecond too.
            let second_nanos = i128::from(time % 1000) * NANOS_PER_MS
                + nanos(&v[1]).map_or(0, |n| n.rem_euclid(NANOS_PER_MS));
            Ok(ScalarValue::Int64(Some(match part.as_str() {
                "year" => y,
                "quarter" => (i64::from(m) - 1) / 3 + 1,
                "month" => i64::from(m),
                "week" => iso_week(day),
                "day" => i64::from(d),
                "doy" => day - epoch_day(y, 1, 1).unwrap_or(day) + 1,
                "dow" => (day + 4).rem_euclid(7) + 1,
                "hour" => time / 3_600_000,
                "minute" => time / 60_000 % 60,
                "second" => time / 1000 % 60,
                "millisecond" => time % 1000,
                "microsecond" => i64::try_from(second_nanos / 1000).unwrap_or(0),
                "nanosecond" => i64::try_from(second_nanos).unwrap_or(0),
                "isodow" => (day + 3).rem_euclid(7) + 1,
                "isoyear" => civil(day - (day + 3).rem_euclid(7) + 3).0,
                "epoch" => ms.div_euclid(1000),
                // Java's integer division, as Flink's DateTimeUtils.
                "decade" => y / 10,
                "century" if y > 0 => (y + 99) / 100,
                "century" => (y - 99) / 100,
                "millennium" if y > 0 => (y + 999) / 1000,
                "millennium" => (y - 999) / 1000,
                other => return exec_err!("EXTRACT of {other} is not supported"),
            })))
        }),
        date_part("year", |y, _, _, _| y),
        date_part("month", |_, m, _, _| i64::from(m)),
        date_part("quarter", |_, m, _, _| (i64::from(m) - 1) / 3 + 1),
        date_part("dayofmonth", |_, _, d, _| i64::from(d)),
        date_part("dayofyear", |y, _, _, day| {
            day - epoch_day(y, 1, 1).unwrap_or(day) + 1
        }),
        // Sunday = 1 ... Saturday = 7 (1970-01-01 was a Thursday).
        date_part("dayofweek", |_, _, _, day| (day + 4).rem_euclid(7) + 1),
        date_part("week", |_, _, _, day| iso_week(day)),
        time_part("hour", 3_600_000, 24),
        time_part("minute", 60_000, 60),
        time_part("second", 1000, 60),
        RowFunction::with_context("floor_time", &[&[Any, Str]], DataType::Null, |v, cx| {
            round_time(&v[0], text(&v[1]).unwrap_or_default(), false, cx.zone)
        })
        .returning(|t| t.first().cloned().unwrap_or(DataType::Null)),
        RowFunction::with_context("ceil_time", &[&[Any, Str]], DataType::Null, |v, cx| {
            round_time(&v[0], text(&v[1]).unwrap_or_default(), true, cx.zone)
        })
        .returning(|t| t.first().cloned().unwrap_or(DataType::Null)),
        // `n * INTERVAL ..` (either order), which DataFusion cannot multiply (see
        // `mixed_equality`): the interval with every field multiplied, wrapping as Java does.
        RowFunction::new(
            INTERVAL_MULTIPLY,
            &[&[Int, Any], &[Any, Int]],
            DataType::Null,
            |v| {
                let (interval, factor) = match v[0].data_type() {
                    DataType::Interval(_) => (&v[0], &v[1]),
                    _ => (&v[1], &v[0]),
                };
                let Some(k) = int(factor) else {
                    return Ok(interval.to_null());
                };
                Ok(match interval {
                    ScalarValue::IntervalMonthDayNano(Some(i)) => {
                        ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                            i.months.wrapping_mul(k as i32),
                            i.days.wrapping_mul(k as i32),
                            i.nanoseconds.wrapping_mul(k),
                        )))
                    }
                    ScalarValue::IntervalDayTime(Some(i)) => {
                        ScalarValue::IntervalDayTime(Some(IntervalDayTime::new(
                            i.days.wrapping_mul(k as i32),
                            i.milliseconds.wrapping_mul(k as i32),
                        )))
                    }
                    ScalarValue::IntervalYearMonth(Some(m)) => {
                        ScalarValue::IntervalYearMonth(Some(m.wrapping_mul(k as i32)))
                    }
                    other => return exec_err!("cannot multiply {} by a number", other.data_type()),
                })
            },
        )
        .returning(|t| {
            t.iter()
                .find(|t| matches!(t, DataType::Interval(_)))
                .cloned()
                .unwrap_or(DataType::Null)
        }),
        RowFunction::new("timestampdiff", &[&[Str, Any, Any]], DataType::Int32, |v| {
            let (Some(a), Some(b)) = (nanos(&v[1]), nanos(&v[2])) else {
                return Ok(ScalarValue::Int32(None));
            };
            let to_ms = |n: i128| i64::try_from(n.div_euclid(NANOS_PER_MS)).unwrap_or(0);
            let (a, b) = (to_ms(a), to_ms(b));
            let diff = match unit(text(&v[0]).unwrap_or_default())? {
                Unit::Months(k) => months_between(b, a).map(|m| m / k),
                Unit::Millis(k) => Some((b - a) / k),
            };
            Ok(ScalarValue::Int32(diff.and_then(|d| i32::try_from(d).ok())))
        }),
    ]
}

/// The function `n * INTERVAL ..` is planned as.
pub(super) const INTERVAL_MULTIPLY: &str = "riffle_interval_multiply";

/// The name the planner gives `TIMESTAMPADD` calls by a unit below a day.
pub(super) const CLOCK_TIMESTAMPADD: &str = "timestampadd_clock";

/// `TIMESTAMPADD(unit, amount, t)`: `t` shifted by `amount` units (months clamp the day to the
/// month's end); the result has `t`'s type.
fn timestamp_add(
    unit_name: &ScalarValue,
    amount: &ScalarValue,
    t: &ScalarValue,
) -> DfResult<ScalarValue> {
    let (Some(amount), Some(n)) = (int(amount), nanos(t)) else {
        return Ok(with_nanos(t, 0).to_null());
    };
    let ms = i64::try_from(n.div_euclid(NANOS_PER_MS)).unwrap_or(0);
    let sub_ms = n.rem_euclid(NANOS_PER_MS);
    let shifted = match unit(text(unit_name).unwrap_or_default())? {
        Unit::Months(k) => add_months(ms, amount.saturating_mul(k)),
        Unit::Millis(k) => ms.checked_add(amount.saturating_mul(k)),
    };
    Ok(match shifted {
        Some(ms) => with_nanos(t, i128::from(ms) * NANOS_PER_MS + sub_ms),
        None => with_nanos(t, 0).to_null(),
    })
}

/// A BIGINT part of a date or timestamp, computed from (year, month, day, epoch day).
fn date_part(name: &'static str, part: fn(i64, u32, u32, i64) -> i64) -> RowFunction {
    RowFunction::with_context(name, &[&[Arg::Any]], DataType::Int64, move |v, cx| {
        let Some(ms) = local_ms(&v[0], &cx.zone) else {
            return exec_err!("{} expects a DATE or TIMESTAMP", name.to_ascii_uppercase());
        };
        let day = ms.div_euclid(MS_PER_DAY);
        let (y, m, d) = civil(day);
        Ok(ScalarValue::Int64(Some(part(y, m, d, day))))
    })
}

/// `HOUR`, `MINUTE`, `SECOND` of a time or timestamp: `(time of day / unit_ms) % modulus`.
fn time_part(name: &'static str, unit_ms: i64, modulus: i64) -> RowFunction {
    RowFunction::with_context(name, &[&[Arg::Any]], DataType::Int64, move |v, cx| {
        let Some(ms) = local_ms(&v[0], &cx.zone) else {
            return exec_err!("{} expects a TIME or TIMESTAMP", name.to_ascii_uppercase());
        };
        Ok(ScalarValue::Int64(Some(
            ms.rem_euclid(MS_PER_DAY) / unit_ms % modulus,
        )))
    })
}

/// The ISO-8601 week number (weeks start on Monday; week 1 holds the year's first Thursday).
fn iso_week(day: i64) -> i64 {
    // Monday = 0.
    let weekday = (day + 3).rem_euclid(7);
    let thursday = day - weekday + 3;
    let (thursday_year, _, _) = civil(thursday);
    let first = epoch_day(thursday_year, 1, 1).unwrap_or(thursday);
    (thursday - first) / 7 + 1
}

/// The US locale's (week-based year, week of that year) of a day: weeks start on Sunday and
/// week 1 is the week holding January 1st (Java's `Y` and `w` pattern letters).
fn us_week(day: i64) -> (i64, i64) {
    // Sunday = 0 (1970-01-01 was a Thursday).
    let sunday = day - (day + 4).rem_euclid(7);
    let (year, _, _) = civil(sunday + 6);
    let first = epoch_day(year, 1, 1).unwrap_or(sunday);
    let first_sunday = first - (first + 4).rem_euclid(7);
    (year, (sunday - first_sunday) / 7 + 1)
}

/// `FLOOR`/`CEIL(t TO unit)` of a date or timestamp (weeks start on Sunday); a
/// `TIMESTAMP_LTZ` is rounded in the session time zone `zone`.
fn round_time(
    v: &ScalarValue,
    unit_name: &str,
    ceil: bool,
    zone: LocalZone,
) -> DfResult<ScalarValue> {
    let (Some(n), Some(ms)) = (nanos(v), local_ms(v, &zone)) else {
        return Ok(v.to_null());
    };
    let ltz = matches!(v.data_type(), DataType::Timestamp(_, Some(_)));
    let exact = n.rem_euclid(NANOS_PER_MS) == 0;
    let floor = match unit(unit_name)? {
        Unit::Months(k) => {
            let (y, m, _) = civil(ms.div_euclid(MS_PER_DAY));
            let first = (i64::from(m) - 1) / k * k + 1;
            epoch_day(y, first as u32, 1).unwrap_or(0) * MS_PER_DAY
        }
        // 1970-01-01 was a Thursday: weeks counted from Sunday 1969-12-28.
        Unit::Millis(k) if k == 7 * MS_PER_DAY => {
            let offset = 4 * MS_PER_DAY;
            (ms + offset).div_euclid(k) * k - offset
        }
        Unit::Millis(k) => ms.div_euclid(k) * k,
    };
    // Flink ceils a timestamp to WEEK, MONTH, QUARTER or YEAR from its date: the time of day
    // is dropped first, so a time on the unit's first day ceils to that day's midnight.
    let by_date = match unit(unit_name)? {
        Unit::Months(_) => true,
        Unit::Millis(k) => k == 7 * MS_PER_DAY,
    };
    let on_boundary = if by_date {
        // Flink keeps a QUARTER ceiling only on January 1st: any other first day of a
        // quarter ceils to the next quarter (its test is the YEAR one).
        let quarter_kept =
            unit(unit_name)? != Unit::Months(3) || civil(ms.div_euclid(MS_PER_DAY)).1 == 1;
        floor == ms.div_euclid(MS_PER_DAY) * MS_PER_DAY && quarter_kept
    } else {
        floor == ms && exact
    };
    let result = if ceil && !on_boundary {
        match unit(unit_name)? {
            Unit::Months(k) => add_months(floor, k).unwrap_or(floor),
            Unit::Millis(k) => floor + k,
        }
    } else {
        floor
    };
    let result = if ltz { zone.to_utc(result) } else { result };
    Ok(with_nanos(v, i128::from(result) * NANOS_PER_MS))
}

/// A typed NULL of the same type as `v`.
trait ToNull {
    fn to_null(&self) -> ScalarValue;
}

impl ToNull for ScalarValue {
    fn to_null(&self) -> ScalarValue {
        ScalarValue::try_from(&self.data_type()).unwrap_or(ScalarValue::Null)
    }
}
