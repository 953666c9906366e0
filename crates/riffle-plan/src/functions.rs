//! Flink's built-in functions where DataFusion has none or behaves differently.
//!
//! They are registered into the session under Flink's names, replacing DataFusion's functions of
//! the same name, so planner and runtime both see Flink's behaviour.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

use crate::types::LTZ_TIME_ZONE;

/// Names of the functions this module registers (they follow Flink by construction).
pub const RIFFLE_FUNCTIONS: &[&str] = &[
    "proctime",
    "to_timestamp_ltz",
    "to_timestamp",
    "concat",
    "left",
    "right",
    "substr",
];

/// Registers Riffle's Flink functions into `state`.
pub fn register(state: &mut SessionState) {
    for f in [
        ScalarUDF::from(Proctime::new()),
        ScalarUDF::from(ToTimestampLtz::new()),
        ScalarUDF::from(ToTimestamp::new()),
        ScalarUDF::from(StringFunction::new("concat", StringOp::Concat)),
        ScalarUDF::from(StringFunction::new("left", StringOp::Left)),
        ScalarUDF::from(StringFunction::new("right", StringOp::Right)),
        ScalarUDF::from(StringFunction::new("substr", StringOp::Substr)),
    ] {
        // Registration only fails for invalid names; these are constants.
        let _ = state.register_udf(Arc::new(f));
    }
    for name in ["sum", "avg", "min", "max"] {
        let _ = state.register_udaf(Arc::new(AggregateUDF::from(FlinkAggregate::new(name))));
    }
}

fn ltz_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from(LTZ_TIME_ZONE)))
}

/// `PROCTIME()`: the current processing time as `TIMESTAMP_LTZ(3)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Proctime {
    signature: Signature,
}

impl Proctime {
    fn new() -> Self {
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
struct ToTimestampLtz {
    signature: Signature,
}

impl ToTimestampLtz {
    fn new() -> Self {
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
struct ToTimestamp {
    signature: Signature,
}

impl ToTimestamp {
    fn new() -> Self {
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

/// Flink's `SUM`, `AVG`, `MIN`, `MAX` for planning: no argument coercion (DataFusion would
/// cast `AVG(INT)` to `DOUBLE`) and Flink's result types. The runtime evaluates them itself.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FlinkAggregate {
    name: &'static str,
    signature: Signature,
}

impl FlinkAggregate {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Flink's result type of `SUM` (`avg == false`) or `AVG` over `t`.
pub fn sum_avg_type(t: &DataType, avg: bool) -> Option<DataType> {
    match t {
        DataType::Decimal128(_, s) => {
            Some(DataType::Decimal128(38, if avg { (*s).max(6) } else { *s }))
        }
        t if t.is_numeric() => Some(t.clone()),
        DataType::Null => Some(DataType::Int32),
        _ => None,
    }
}

impl AggregateUDFImpl for FlinkAggregate {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match arg_types {
            [t] if matches!(self.name, "min" | "max") || sum_avg_type(t, false).is_some() => {
                Ok(vec![t.clone()])
            }
            [t] => plan_err!(
                "Cannot apply '{}' to arguments of type '{}(<{t}>)'",
                self.name.to_ascii_uppercase(),
                self.name.to_ascii_uppercase()
            ),
            _ => plan_err!("{} takes one argument", self.name.to_ascii_uppercase()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        let Some(t) = arg_types.first() else {
            return plan_err!("{} takes one argument", self.name);
        };
        match self.name {
            "sum" | "avg" => match sum_avg_type(t, self.name == "avg") {
                Some(r) => Ok(r),
                None => plan_err!("{} over {t}", self.name.to_ascii_uppercase()),
            },
            _ => Ok(t.clone()),
        }
    }

    fn accumulator(&self, _acc_args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        exec_err!(
            "{} is evaluated by Riffle's runtime, not by DataFusion",
            self.name
        )
    }
}

/// Flink's string functions whose DataFusion namesakes differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum StringOp {
    /// `CONCAT(s1, s2, ...)`: NULL when any argument is NULL.
    Concat,
    /// `LEFT(s, n)`: the first `n` characters; empty for negative `n`.
    Left,
    /// `RIGHT(s, n)`: the last `n` characters; empty for negative `n`.
    Right,
    /// `SUBSTRING(s, pos [, len])` / `SUBSTR`: 1-based `pos`, 0 read as 1, negative counts
    /// from the end; out-of-range parts are empty.
    Substr,
}

/// A Flink string function over `STRING` arguments (and `INT` counts).
#[derive(Debug, PartialEq, Eq, Hash)]
struct StringFunction {
    name: &'static str,
    op: StringOp,
    aliases: Vec<String>,
    signature: Signature,
}

impl StringFunction {
    fn new(name: &'static str, op: StringOp) -> Self {
        let aliases = if op == StringOp::Substr {
            vec!["substring".to_string()]
        } else {
            Vec::new()
        };
        Self {
            name,
            op,
            aliases,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

impl ScalarUDFImpl for StringFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        let int = |t: &DataType| t.is_integer() || matches!(t, DataType::Null);
        let ok = match self.op {
            StringOp::Concat => !arg_types.is_empty() && arg_types.iter().all(is_text),
            StringOp::Left | StringOp::Right => matches!(arg_types, [s, n] if is_text(s) && int(n)),
            StringOp::Substr => match arg_types {
                [s, p] => is_text(s) && int(p),
                [s, p, l] => is_text(s) && int(p) && int(l),
                _ => false,
            },
        };
        if !ok {
            let types: Vec<String> = arg_types
                .iter()
                .map(|t| crate::types::flink_type(t, true))
                .collect();
            return plan_err!(
                "No match found for function signature {}({})",
                self.name.to_ascii_uppercase(),
                types.join(", ")
            );
        }
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, _)| {
                if i == 0 || self.op == StringOp::Concat {
                    DataType::Utf8
                } else {
                    DataType::Int64
                }
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let n = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(n))
            .collect::<DfResult<_>>()?;
        let text: Vec<&arrow::array::StringArray> = arrays
            .iter()
            .filter_map(|a| a.as_string_opt::<i32>())
            .collect();
        let ints: Vec<&arrow::array::Int64Array> = arrays
            .iter()
            .filter_map(|a| a.as_primitive_opt::<Int64Type>())
            .collect();
        let Some(first) = text.first() else {
            return exec_err!("{} expects a string", self.name);
        };
        let out: arrow::array::StringArray = (0..n)
            .map(|row| {
                if arrays.iter().any(|a| a.is_null(row)) {
                    return None;
                }
                let s = first.value(row);
                let int = |i: usize| ints.get(i).map(|a| a.value(row));
                Some(match self.op {
                    StringOp::Concat => text.iter().map(|a| a.value(row)).collect::<String>(),
                    StringOp::Left => {
                        let k = int(0).unwrap_or(0).max(0) as usize;
                        s.chars().take(k).collect()
                    }
                    StringOp::Right => {
                        let k = int(0).unwrap_or(0).max(0) as usize;
                        let len = s.chars().count();
                        s.chars().skip(len.saturating_sub(k)).collect()
                    }
                    StringOp::Substr => {
                        let len = s.chars().count() as i64;
                        let pos = int(0).unwrap_or(1);
                        let start = if pos > 0 {
                            pos - 1
                        } else if pos < 0 {
                            len + pos
                        } else {
                            0
                        };
                        let end = match int(1) {
                            Some(l) => start.saturating_add(l),
                            None => len,
                        };
                        let (start, end) = (start.clamp(0, len), end.clamp(0, len));
                        if end <= start {
                            String::new()
                        } else {
                            s.chars()
                                .skip(start as usize)
                                .take((end - start) as usize)
                                .collect()
                        }
                    }
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}
