//! The `nexmark` connector: the Nexmark benchmark's event stream as a source, with the options
//! of Flink's Nexmark connector (`first-event.rate`, `events.num`, proportions, hot ratios,
//! average sizes, ...). Riffle adds `seed` and `base-time` (epoch milliseconds of the first
//! event), which Flink leaves to chance and to the wall clock.

use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use riffle_nexmark::{NexmarkConfig, NexmarkGenerator};
use riffle_plan::ConnectorSpec;

use crate::options::Options;
use crate::{ConnectorError, Result, SourceReader, SubtaskInfo, BATCH_SIZE};

/// Opens a nexmark source subtask.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let config = config_from_options(&mut options)?;
    options.finish()?;
    let generator =
        NexmarkGenerator::with_schema(config.clone(), subtask.index, subtask.parallelism, schema)
            .map_err(|e| ConnectorError::new(format!("table '{}': {e}", spec.table)))?;
    // Held to wall-clock time, a batch spans at most ~10 ms of events so the pace stays smooth.
    let batch_rows = if config.max_emit_speed {
        BATCH_SIZE
    } else {
        ((config.first_event_rate / 100) as usize).clamp(1, BATCH_SIZE)
    };
    Ok(Box::new(NexmarkSource {
        generator,
        paced: !config.max_emit_speed,
        batch_rows,
        started: Instant::now(),
    }))
}

/// Reads the generator configuration from Flink's nexmark options.
pub fn config_from_options(options: &mut Options) -> Result<NexmarkConfig> {
    let d = NexmarkConfig::default();
    let positive = |options: &mut Options, key: &str, default: u64| -> Result<u64> {
        match options.i64(key, Some(default as i64))? {
            Some(v) if v >= 0 => Ok(v as u64),
            _ => Err(ConnectorError::new(format!(
                "Invalid value for option '{key}': must not be negative"
            ))),
        }
    };
    let int = |options: &mut Options, key: &str, default: u32| -> Result<u32> {
        let v = positive(options, key, u64::from(default))?;
        u32::try_from(v).map_err(|_| {
            ConnectorError::new(format!(
                "Invalid value for option '{key}': {v} is too large"
            ))
        })
    };
    if options.bool("keep-alive", false)? {
        return Err(ConnectorError::new(
            "unsupported feature: nexmark option 'keep-alive' = 'true' (a source idling forever after its last event)",
        ));
    }
    // Flink's generator spaces events by `first-event.rate` alone; the rate-shape options are
    // accepted and, as there, have no effect.
    for key in ["rate.shape", "rate.period", "rate.limited"] {
        options.accept(key);
    }
    let stop_at = options.i64("stop-at", Some(-1))?.unwrap_or(-1);
    let config = NexmarkConfig {
        first_event_rate: positive(options, "first-event.rate", d.first_event_rate)?,
        next_event_rate: positive(options, "next-event.rate", d.next_event_rate)?,
        person_proportion: int(options, "person.proportion", d.person_proportion)?,
        auction_proportion: int(options, "auction.proportion", d.auction_proportion)?,
        bid_proportion: int(options, "bid.proportion", d.bid_proportion)?,
        avg_person_size: memory_size(options, "person.avg-size", d.avg_person_size)?,
        avg_auction_size: memory_size(options, "auction.avg-size", d.avg_auction_size)?,
        avg_bid_size: memory_size(options, "bid.avg-size", d.avg_bid_size)?,
        hot_auction_ratio: int(options, "bid.hot-ratio.auctions", d.hot_auction_ratio)?,
        hot_bidders_ratio: int(options, "bid.hot-ratio.bidders", d.hot_bidders_ratio)?,
        hot_sellers_ratio: int(options, "auction.hot-ratio.sellers", d.hot_sellers_ratio)?,
        events_num: positive(options, "events.num", d.events_num)?,
        stop_at: u64::try_from(stop_at).ok(),
        max_emit_speed: options.bool("max-emit-speed", d.max_emit_speed)?,
        base_time_ms: options
            .i64("base-time", Some(d.base_time_ms))?
            .unwrap_or(d.base_time_ms),
        seed: positive(options, "seed", d.seed)?,
        ..d
    };
    config
        .validate()
        .map_err(|e| ConnectorError::new(e.to_string()))?;
    Ok(config)
}

/// A Flink memory size (`200b`, `1 kb`, `2m`, ...) in bytes.
fn memory_size(options: &mut Options, key: &str, default: u32) -> Result<u32> {
    let Some(text) = options.get(key) else {
        return Ok(default);
    };
    let invalid = || ConnectorError::new(format!("Invalid value for option '{key}': '{text}'"));
    let t = text.trim().to_ascii_lowercase();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let number: u64 = t[..digits].parse().map_err(|_| invalid())?;
    let unit: u64 = match t[digits..].trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        _ => return Err(invalid()),
    };
    number
        .checked_mul(unit)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(invalid)
}

struct NexmarkSource {
    generator: NexmarkGenerator,
    paced: bool,
    batch_rows: usize,
    started: Instant,
}

impl SourceReader for NexmarkSource {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.paced && self.generator.remaining() > 0 {
            let due = Duration::from_millis(self.generator.next_event_offset_ms().max(0) as u64);
            if let Some(wait) = due.checked_sub(self.started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        let batch = self.generator.next_batch(self.batch_rows)?;
        crate::probe::source_emitted();
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(options: &[(&str, &str)]) -> ConnectorSpec {
        let mut map = BTreeMap::new();
        map.insert("connector".to_string(), "nexmark".to_string());
        for (k, v) in options {
            map.insert(k.to_string(), v.to_string());
        }
        ConnectorSpec {
            table: "datagen".to_string(),
            connector: "nexmark".to_string(),
            options: map,
            ..ConnectorSpec::default()
        }
    }

    fn read_all(options: &[(&str, &str)], parallelism: usize) -> Result<usize> {
        let mut rows = 0;
        for index in 0..parallelism {
            let mut source = open_source(
                &spec(options),
                riffle_nexmark::nexmark_schema(),
                SubtaskInfo {
                    index,
                    parallelism,
                    earlier_reads: 0,
                },
            )?;
            while let Some(b) = source.next_batch()? {
                rows += b.num_rows();
            }
        }
        Ok(rows)
    }

    #[test]
    fn bounded_by_events_num_over_all_subtasks() {
        assert_eq!(read_all(&[("events.num", "20000")], 1).unwrap(), 20_000);
        assert_eq!(read_all(&[("events.num", "1001")], 2).unwrap(), 1001);
        assert_eq!(
            read_all(&[("events.num", "100"), ("stop-at", "10")], 1).unwrap(),
            10
        );
    }

    #[test]
    fn flink_options_are_read_and_checked() {
        let options = [
            ("first-event.rate", "1000"),
            ("next-event.rate", "1000"),
            ("events.num", "10"),
            ("person.proportion", "1"),
            ("auction.proportion", "3"),
            ("bid.proportion", "46"),
            ("person.avg-size", "1kb"),
            ("rate.shape", "SINE"),
        ];
        assert_eq!(read_all(&options, 1).unwrap(), 10);
        let err = read_all(&[("bid.avg-size", "lots")], 1).unwrap_err();
        assert!(err.message.contains("bid.avg-size"), "{err}");
        let err = read_all(&[("events.nums", "1")], 1).unwrap_err();
        assert!(err.message.contains("events.nums"), "{err}");
        let err = read_all(&[("keep-alive", "true")], 1).unwrap_err();
        assert!(err.message.contains("keep-alive"), "{err}");
        let err = read_all(&[("first-event.rate", "0")], 1).unwrap_err();
        assert!(err.message.contains("first-event.rate"), "{err}");
    }

    #[test]
    fn paced_sources_hold_events_to_their_time() {
        // 100 events at 1000/s span ~0.1 s of event time; a paced source takes at least that.
        let started = Instant::now();
        let rows = read_all(
            &[
                ("events.num", "100"),
                ("first-event.rate", "1000"),
                ("max-emit-speed", "false"),
            ],
            1,
        )
        .unwrap();
        assert_eq!(rows, 100);
        assert!(started.elapsed() >= Duration::from_millis(90));
    }
}
