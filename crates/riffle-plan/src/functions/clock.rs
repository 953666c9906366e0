//! The current-time functions (`CURRENT_TIMESTAMP`, `NOW()`, `CURRENT_ROW_TIMESTAMP()`,
//! `LOCALTIMESTAMP`, `CURRENT_DATE`, `CURRENT_TIME`, `LOCALTIME`). A streaming Flink job
//! evaluates them for every record, so they are volatile functions of the wall clock; the local
//! ones read it in the session time zone (`table.local-time-zone`).

use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;

use super::row::RowFunction;
use crate::types::LTZ_TIME_ZONE;

const MS_PER_DAY: i64 = 86_400_000;

/// Milliseconds since the epoch, now (the wall clock of processing time).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The clock functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    let ltz = || Some(Arc::<str>::from(LTZ_TIME_ZONE));
    vec![
        // TIMESTAMP_LTZ(3).
        RowFunction::new(
            "current_timestamp",
            &[&[]],
            DataType::Timestamp(TimeUnit::Millisecond, ltz()),
            move |_| Ok(ScalarValue::TimestampMillisecond(Some(now_ms()), ltz())),
        )
        .alias("now")
        .alias("current_row_timestamp")
        .volatile(),
        // TIMESTAMP(3): the wall-clock time in the session zone.
        RowFunction::with_context(
            "localtimestamp",
            &[&[]],
            DataType::Timestamp(TimeUnit::Millisecond, None),
            |_, cx| {
                Ok(ScalarValue::TimestampMillisecond(
                    Some(cx.zone.to_local(now_ms())),
                    None,
                ))
            },
        )
        .volatile(),
        RowFunction::with_context("current_date", &[&[]], DataType::Date32, |_, cx| {
            let day = cx.zone.to_local(now_ms()).div_euclid(MS_PER_DAY);
            Ok(ScalarValue::Date32(i32::try_from(day).ok()))
        })
        .volatile(),
        // TIME(0): the local time of day.
        RowFunction::with_context(
            "localtime",
            &[&[]],
            DataType::Time32(TimeUnit::Millisecond),
            |_, cx| {
                let ms = cx.zone.to_local(now_ms()).rem_euclid(MS_PER_DAY);
                Ok(ScalarValue::Time32Millisecond(Some(
                    (ms / 1000 * 1000) as i32,
                )))
            },
        )
        .alias("current_time")
        .volatile(),
    ]
}
