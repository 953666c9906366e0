//! Mapping between Flink logical types and Arrow types.
//!
//! Tables declare Flink types; the runtime computes over Arrow arrays. Every Flink type the engine
//! supports has exactly one Arrow representation ([`arrow_type`]); expression results typed by
//! DataFusion map back to the Flink type Flink would print ([`flink_type`]).

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, Fields, TimeUnit};
use riffle_sql::ast::{DataType, TypeKind};

/// Time zone used for `TIMESTAMP_LTZ` arrays: instants are stored in UTC.
pub const LTZ_TIME_ZONE: &str = "UTC";

/// The Arrow type that represents the Flink type `t`, or the name of the unsupported type.
pub fn arrow_type(t: &DataType) -> Result<ArrowType, String> {
    Ok(match &t.kind {
        TypeKind::Char(_) | TypeKind::Varchar(_) => ArrowType::Utf8,
        TypeKind::Boolean => ArrowType::Boolean,
        TypeKind::Binary(_) | TypeKind::Varbinary(_) => ArrowType::Binary,
        TypeKind::Decimal(p, s) => ArrowType::Decimal128(*p, *s),
        TypeKind::TinyInt => ArrowType::Int8,
        TypeKind::SmallInt => ArrowType::Int16,
        TypeKind::Int => ArrowType::Int32,
        TypeKind::BigInt => ArrowType::Int64,
        TypeKind::Float => ArrowType::Float32,
        TypeKind::Double => ArrowType::Float64,
        TypeKind::Date => ArrowType::Date32,
        TypeKind::Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
        TypeKind::Timestamp(p) => ArrowType::Timestamp(time_unit(*p), None),
        TypeKind::TimestampLtz(p) => {
            ArrowType::Timestamp(time_unit(*p), Some(Arc::from(LTZ_TIME_ZONE)))
        }
        TypeKind::Array(e) => ArrowType::List(Arc::new(ArrowField::new(
            "item",
            arrow_type(e)?,
            e.nullable,
        ))),
        TypeKind::Map(k, v) => {
            let entries = Fields::from(vec![
                ArrowField::new("key", arrow_type(k)?, false),
                ArrowField::new("value", arrow_type(v)?, v.nullable),
            ]);
            ArrowType::Map(
                Arc::new(ArrowField::new(
                    "entries",
                    ArrowType::Struct(entries),
                    false,
                )),
                false,
            )
        }
        TypeKind::Row(fields) => {
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                out.push(ArrowField::new(
                    f.name.clone(),
                    arrow_type(&f.data_type)?,
                    f.data_type.nullable,
                ));
            }
            ArrowType::Struct(Fields::from(out))
        }
        TypeKind::Null => ArrowType::Null,
        TypeKind::IntervalYearMonth
        | TypeKind::IntervalDayTime
        | TypeKind::Multiset(_)
        | TypeKind::Raw(_)
        | TypeKind::Unknown(_) => return Err(t.to_string()),
    })
}

fn time_unit(precision: u8) -> TimeUnit {
    match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

/// The Flink type (summary form, with ` NOT NULL` when not nullable) of an Arrow type computed by
/// DataFusion.
pub fn flink_type(t: &ArrowType, nullable: bool) -> String {
    let base = flink_base_type(t);
    if nullable {
        base
    } else {
        format!("{base} NOT NULL")
    }
}

fn flink_base_type(t: &ArrowType) -> String {
    let precision = |u: &TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    };
    match t {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => "STRING".into(),
        ArrowType::Boolean => "BOOLEAN".into(),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => "BYTES".into(),
        ArrowType::Decimal32(p, s) | ArrowType::Decimal64(p, s) | ArrowType::Decimal128(p, s) => {
            format!("DECIMAL({p}, {s})")
        }
        ArrowType::Decimal256(p, s) => format!("DECIMAL({p}, {s})"),
        ArrowType::Int8 => "TINYINT".into(),
        ArrowType::Int16 | ArrowType::UInt8 => "SMALLINT".into(),
        ArrowType::Int32 | ArrowType::UInt16 => "INT".into(),
        ArrowType::Int64 | ArrowType::UInt32 | ArrowType::UInt64 => "BIGINT".into(),
        ArrowType::Float16 | ArrowType::Float32 => "FLOAT".into(),
        ArrowType::Float64 => "DOUBLE".into(),
        ArrowType::Date32 | ArrowType::Date64 => "DATE".into(),
        ArrowType::Time32(u) | ArrowType::Time64(u) => format!("TIME({})", precision(u).min(3)),
        ArrowType::Timestamp(u, None) => format!("TIMESTAMP({})", precision(u)),
        ArrowType::Timestamp(u, Some(_)) => format!("TIMESTAMP_LTZ({})", precision(u)),
        ArrowType::List(f) | ArrowType::LargeList(f) | ArrowType::FixedSizeList(f, _) => {
            format!("ARRAY<{}>", flink_type(f.data_type(), f.is_nullable()))
        }
        ArrowType::Map(entries, _) => match entries.data_type() {
            ArrowType::Struct(kv) if kv.len() == 2 => format!(
                "MAP<{}, {}>",
                flink_type(kv[0].data_type(), kv[0].is_nullable()),
                flink_type(kv[1].data_type(), kv[1].is_nullable())
            ),
            other => other.to_string(),
        },
        ArrowType::Struct(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|f| {
                    format!(
                        "`{}` {}",
                        f.name(),
                        flink_type(f.data_type(), f.is_nullable())
                    )
                })
                .collect();
            format!("ROW<{}>", inner.join(", "))
        }
        ArrowType::Null => "NULL".into(),
        ArrowType::Interval(_) | ArrowType::Duration(_) => "INTERVAL".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> DataType {
        match riffle_sql::parse_data_type(s) {
            Ok(t) => t,
            Err(d) => panic!("{s}: {d}"),
        }
    }

    #[test]
    fn flink_types_round_trip_through_arrow() {
        for (flink, printed) in [
            ("INT", "INT"),
            ("BIGINT NOT NULL", "BIGINT NOT NULL"),
            ("STRING", "STRING"),
            ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
            ("TIMESTAMP(3)", "TIMESTAMP(3)"),
            ("TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)"),
            ("ARRAY<INT>", "ARRAY<INT>"),
            ("MAP<STRING, BIGINT>", "MAP<STRING NOT NULL, BIGINT>"),
        ] {
            let t = parse(flink);
            let arrow = arrow_type(&t).map_err(|e| e.to_string());
            let Ok(arrow) = arrow else {
                panic!("{flink} unsupported")
            };
            assert_eq!(flink_type(&arrow, t.nullable), printed, "{flink}");
        }
    }

    #[test]
    fn unsupported_types_are_named() {
        assert_eq!(
            arrow_type(&parse("MULTISET<INT>")),
            Err("MULTISET<INT>".to_string())
        );
    }
}
