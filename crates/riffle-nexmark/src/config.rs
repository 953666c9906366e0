//! The generator's configuration: the options of Flink's `nexmark` connector, plus the two
//! things Flink leaves to chance (the random seed and the event-time origin).

use std::fmt;

/// Person ids start here, so small inputs still find matches.
pub const FIRST_PERSON_ID: i64 = 1000;
/// Auction ids start here.
pub const FIRST_AUCTION_ID: i64 = 1000;
/// Category ids start here.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// Default event-time origin: 2024-01-01T00:00:00Z in epoch milliseconds. Flink's generator takes
/// the wall clock at job start; a fixed origin makes runs (and window results) reproducible.
pub const DEFAULT_BASE_TIME_MS: i64 = 1_704_067_200_000;

/// What to generate and how fast. Field defaults are those of Flink's Nexmark connector.
#[derive(Debug, Clone, PartialEq)]
pub struct NexmarkConfig {
    /// `first-event.rate`: events per second of event time. As in Flink's generator it alone sets
    /// the event-time spacing (`next-event.rate`, `rate.shape` and `rate.period` do not).
    pub first_event_rate: u64,
    /// `next-event.rate` (kept for completeness; unused, as in Flink's generator).
    pub next_event_rate: u64,
    /// `person.proportion`.
    pub person_proportion: u32,
    /// `auction.proportion`.
    pub auction_proportion: u32,
    /// `bid.proportion`.
    pub bid_proportion: u32,
    /// `person.avg-size` in bytes.
    pub avg_person_size: u32,
    /// `auction.avg-size` in bytes.
    pub avg_auction_size: u32,
    /// `bid.avg-size` in bytes.
    pub avg_bid_size: u32,
    /// `bid.hot-ratio.auctions`: a bid goes to a hot auction with probability `1 - 1/ratio`.
    pub hot_auction_ratio: u32,
    /// `bid.hot-ratio.bidders`: a bid comes from a hot bidder with probability `1 - 1/ratio`.
    pub hot_bidders_ratio: u32,
    /// `auction.hot-ratio.sellers`: an auction has a hot seller with probability `1 - 1/ratio`.
    pub hot_sellers_ratio: u32,
    /// People who may bid or sell (the most recent ones).
    pub num_active_people: u32,
    /// Auctions that may still receive bids (the most recent ones).
    pub num_in_flight_auctions: u32,
    /// `events.num`: events over all subtasks; 0 means unbounded.
    pub events_num: u64,
    /// `stop-at`: stop after this many events over all subtasks; `None` means never.
    pub stop_at: Option<u64>,
    /// `max-emit-speed`: emit as fast as possible (true) or hold events to their wall-clock time.
    pub max_emit_speed: bool,
    /// Event time of the first event, epoch milliseconds.
    pub base_time_ms: i64,
    /// Seed of every random draw.
    pub seed: u64,
}

impl Default for NexmarkConfig {
    fn default() -> Self {
        Self {
            first_event_rate: 10_000,
            next_event_rate: 10_000,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            avg_person_size: 200,
            avg_auction_size: 500,
            avg_bid_size: 100,
            hot_auction_ratio: 2,
            hot_bidders_ratio: 4,
            hot_sellers_ratio: 4,
            num_active_people: 1000,
            num_in_flight_auctions: 100,
            events_num: 0,
            stop_at: None,
            max_emit_speed: true,
            base_time_ms: DEFAULT_BASE_TIME_MS,
            seed: 0,
        }
    }
}

/// A configuration the generator cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The events one subtask generates: a contiguous range of event ids on its own timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Id of the subtask's first event.
    pub first_event_id: i64,
    /// How many events the subtask generates.
    pub events: u64,
}

impl NexmarkConfig {
    /// Checks the values the generator divides by or draws below.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("first-event.rate", self.first_event_rate),
            ("bid.hot-ratio.auctions", u64::from(self.hot_auction_ratio)),
            ("bid.hot-ratio.bidders", u64::from(self.hot_bidders_ratio)),
            (
                "auction.hot-ratio.sellers",
                u64::from(self.hot_sellers_ratio),
            ),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!(
                    "nexmark option '{name}' must be positive"
                )));
            }
        }
        if self.total_proportion() == 0 {
            return Err(ConfigError(
                "nexmark proportions (person, auction, bid) must not all be 0".to_string(),
            ));
        }
        Ok(())
    }

    /// Sum of the three proportions: the length of one person/auction/bid cycle of event ids.
    pub fn total_proportion(&self) -> i64 {
        i64::from(self.person_proportion)
            + i64::from(self.auction_proportion)
            + i64::from(self.bid_proportion)
    }

    /// Microseconds of event time between consecutive events of one subtask.
    pub fn inter_event_delay_us(&self) -> f64 {
        1_000_000.0 / self.first_event_rate.max(1) as f64
    }

    /// The share of subtask `index` of `parallelism`: as in Flink, the id range is cut into equal
    /// parts (the last takes the remainder) and every part starts at the same event time.
    pub fn split(&self, index: usize, parallelism: usize) -> Split {
        let n = parallelism.max(1) as u64;
        let index = (index as u64).min(n - 1);
        let total = if self.events_num == 0 {
            // Unbounded: far more than any run generates, without overflowing event ids.
            (i64::MAX / 1024) as u64
        } else {
            self.events_num
        };
        let per = total / n;
        let mut events = if index == n - 1 {
            total - per * (n - 1)
        } else {
            per
        };
        if let Some(stop) = self.stop_at {
            let per_stop = stop / n;
            let stop_here = if index == n - 1 {
                stop - per_stop * (n - 1)
            } else {
                per_stop
            };
            events = events.min(stop_here);
        }
        Split {
            first_event_id: (per * index) as i64,
            events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_the_ids_once() {
        let config = NexmarkConfig {
            events_num: 1003,
            ..NexmarkConfig::default()
        };
        let splits: Vec<Split> = (0..3).map(|i| config.split(i, 3)).collect();
        assert_eq!(
            splits[0],
            Split {
                first_event_id: 0,
                events: 334
            }
        );
        assert_eq!(
            splits[1],
            Split {
                first_event_id: 334,
                events: 334
            }
        );
        assert_eq!(
            splits[2],
            Split {
                first_event_id: 668,
                events: 335
            }
        );
    }

    #[test]
    fn stop_at_caps_each_split() {
        let config = NexmarkConfig {
            events_num: 1000,
            stop_at: Some(10),
            ..NexmarkConfig::default()
        };
        assert_eq!(config.split(0, 2).events, 5);
        assert_eq!(config.split(1, 2).events, 5);
    }

    #[test]
    fn invalid_values_are_named() {
        let config = NexmarkConfig {
            hot_bidders_ratio: 0,
            ..NexmarkConfig::default()
        };
        let err = config.validate().unwrap_err();
        assert!(err.0.contains("bid.hot-ratio.bidders"), "{err}");
        let config = NexmarkConfig {
            person_proportion: 0,
            auction_proportion: 0,
            bid_proportion: 0,
            ..NexmarkConfig::default()
        };
        assert!(config.validate().is_err());
    }
}
