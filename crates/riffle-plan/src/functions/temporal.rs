//! Flink's date and time functions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

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
                .map(|v| v.and_then(|v| v.checked_mul(factor)))
                .collect(),
            DataType::Float64 => array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| (v * factor as f64) as i64))
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
                    Some(f) => parse_with_pattern(values.value(i), f.value(i)),
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
/// literal characters.
fn parse_with_pattern(s: &str, pattern: &str) -> Option<i64> {
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
    Some(epoch_day(y, mo, d)? * 86_400_000 + ((h * 60 + mi) * 60 + sec) * 1000 + frac)
}

/// Days since 1970-01-01 of a valid civil date.
fn epoch_day(y: i64, m: u32, d: u32) -> Option<i64> {
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
            parse_with_pattern("15/04/2020 08:05", "dd/MM/yyyy HH:mm"),
            Some(1_586_937_900_000)
        );
        assert_eq!(parse_with_pattern("2020-04-15", "yyyy/MM/dd"), None);
    }
}
