//! SQL values as JSON nodes, the way Flink's `JSON_OBJECT`, `JSON_ARRAY` and `JSON_STRING` convert
//! them: numbers keep Java's rendering (a DOUBLE goes through `BigDecimal.valueOf`), timestamps
//! become ISO strings (`TIMESTAMP_LTZ` with a `Z`), arrays become arrays, maps and rows objects.

use arrow::array::Array;
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};

use super::value::{set_member, Json};
use crate::java_text::java_double;
use crate::types::flink_type;

/// The JSON node of a SQL value (`NULL` as JSON null).
pub(crate) fn to_json(v: &ScalarValue) -> DfResult<Json> {
    if v.is_null() {
        return Ok(Json::Null);
    }
    Ok(match v {
        ScalarValue::Boolean(Some(b)) => Json::Bool(*b),
        ScalarValue::Int8(Some(i)) => Json::Int(i.to_string()),
        ScalarValue::Int16(Some(i)) => Json::Int(i.to_string()),
        ScalarValue::Int32(Some(i)) => Json::Int(i.to_string()),
        ScalarValue::Int64(Some(i)) => Json::Int(i.to_string()),
        ScalarValue::Float32(Some(f)) => double(f64::from(*f))?,
        ScalarValue::Float64(Some(f)) => double(*f)?,
        ScalarValue::Decimal128(Some(u), _, s) => Json::Decimal {
            negative: *u < 0,
            digits: u.unsigned_abs().to_string(),
            scale: i64::from(*s),
        },
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Json::Str(s.clone()),
        ScalarValue::TimestampSecond(Some(t), tz) => timestamp(*t, 1, tz.is_some()),
        ScalarValue::TimestampMillisecond(Some(t), tz) => timestamp(*t, 1_000, tz.is_some()),
        ScalarValue::TimestampMicrosecond(Some(t), tz) => timestamp(*t, 1_000_000, tz.is_some()),
        ScalarValue::TimestampNanosecond(Some(t), tz) => timestamp(*t, 1_000_000_000, tz.is_some()),
        ScalarValue::List(a) => array(a.value(0).as_ref())?,
        ScalarValue::LargeList(a) => array(a.value(0).as_ref())?,
        ScalarValue::FixedSizeList(a) => array(a.value(0).as_ref())?,
        ScalarValue::Map(m) => {
            let entries = m.value(0);
            let mut members = Vec::new();
            for i in 0..entries.len() {
                let key = ScalarValue::try_from_array(entries.column(0).as_ref(), i)?;
                let key = match key {
                    ScalarValue::Utf8(Some(k)) | ScalarValue::LargeUtf8(Some(k)) | ScalarValue::Utf8View(Some(k)) => k,
                    k if k.is_null() => {
                        return exec_err!("Key at index {i} was null. This is not supported during conversion to JSON.")
                    }
                    k => {
                        return exec_err!(
                            "Type '{}' is not supported for JSON conversion. The key type must be a character string.",
                            flink_type(&k.data_type(), true)
                        )
                    }
                };
                let value = ScalarValue::try_from_array(entries.column(1).as_ref(), i)?;
                set_member(&mut members, key, to_json(&value)?);
            }
            Json::Object(members)
        }
        ScalarValue::Struct(s) => {
            let fields = s.fields();
            // DataFusion names the fields of `ROW(a, b)` c0, c1, ...; Flink names them EXPR$0, ...
            let anonymous = fields
                .iter()
                .enumerate()
                .all(|(i, f)| *f.name() == format!("c{i}"));
            let mut members = Vec::new();
            for (i, field) in fields.iter().enumerate() {
                let name = if anonymous {
                    format!("EXPR${i}")
                } else {
                    field.name().clone()
                };
                let value = ScalarValue::try_from_array(s.column(i).as_ref(), 0)?;
                set_member(&mut members, name, to_json(&value)?);
            }
            Json::Object(members)
        }
        other => {
            return exec_err!(
                "Type '{}' is not scalar or cannot be converted into JSON.",
                flink_type(&other.data_type(), true)
            )
        }
    })
}

fn array(values: &dyn Array) -> DfResult<Json> {
    let mut items = Vec::with_capacity(values.len());
    for i in 0..values.len() {
        items.push(to_json(&ScalarValue::try_from_array(values, i)?)?);
    }
    Ok(Json::Array(items))
}

/// A DOUBLE as Jackson writes it here: `BigDecimal.valueOf(d)`.
fn double(d: f64) -> DfResult<Json> {
    if !d.is_finite() {
        return exec_err!("JSON object could not be serialized: {}", java_double(d));
    }
    match Json::decimal_from_text(&java_double(d)) {
        Some(j) => Ok(j),
        None => exec_err!("JSON object could not be serialized: {}", java_double(d)),
    }
}

/// `ISO_LOCAL_DATE_TIME` of an epoch value in `per_second` units.
fn timestamp(v: i64, per_second: i64, ltz: bool) -> Json {
    let secs = v.div_euclid(per_second);
    let nanos = (v.rem_euclid(per_second) * (1_000_000_000 / per_second)) as u32;
    let mut text = match chrono::DateTime::from_timestamp(secs, nanos) {
        Some(t) => t.naive_utc().format("%Y-%m-%dT%H:%M:%S").to_string(),
        None => v.to_string(),
    };
    if nanos > 0 {
        let digits = format!("{nanos:09}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    if ltz {
        text.push('Z');
    }
    Json::Str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_like_flink() {
        let ser = |v: ScalarValue| to_json(&v).map(|j| j.serialize()).unwrap_or_default();
        assert_eq!(ser(ScalarValue::Float64(Some(1e20))), "1.0E+20");
        assert_eq!(ser(ScalarValue::Float64(Some(0.00001))), "0.000010");
        assert_eq!(ser(ScalarValue::Float32(Some(1.1))), "1.100000023841858");
        assert_eq!(ser(ScalarValue::Decimal128(Some(100), 5, 0)), "100");
        assert_eq!(ser(ScalarValue::Decimal128(Some(-5), 3, 1)), "-0.5");
        assert_eq!(
            ser(ScalarValue::TimestampMillisecond(
                Some(1_704_164_645_120),
                None
            )),
            "\"2024-01-02T03:04:05.12\""
        );
        assert_eq!(
            ser(ScalarValue::TimestampMillisecond(
                Some(0),
                Some("UTC".into())
            )),
            "\"1970-01-01T00:00:00Z\""
        );
    }
}
