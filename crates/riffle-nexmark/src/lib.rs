//! The Nexmark benchmark's event generator.
//!
//! Generates the person, auction and bid events of the Nexmark benchmark with the options and
//! distributions of the generator Flink's Nexmark connector uses (event-id cycle of the three
//! proportions, hot sellers/bidders/auctions, log-uniform prices, auction lengths, average event
//! sizes, evenly spaced event times at `first-event.rate`), directly into Arrow batches of the
//! Nexmark table (`event_type`, `person`, `auction`, `bid`). Unlike Flink's, the output is a
//! function of the configuration: every random draw derives from the seed and the event id.
//!
//! ```
//! use riffle_nexmark::{NexmarkConfig, NexmarkGenerator};
//!
//! let config = NexmarkConfig { events_num: 100, ..NexmarkConfig::default() };
//! let mut generator = NexmarkGenerator::new(config, 0, 1).unwrap();
//! let batch = generator.next_batch(1024).unwrap().unwrap();
//! assert_eq!(batch.num_rows(), 100);
//! assert!(generator.next_batch(1024).unwrap().is_none());
//! ```

#![warn(missing_docs)]

mod config;
mod generator;
mod ids;
mod random;
mod schema;
mod text;

pub use config::{
    ConfigError, NexmarkConfig, Split, DEFAULT_BASE_TIME_MS, FIRST_AUCTION_ID, FIRST_CATEGORY_ID,
    FIRST_PERSON_ID,
};
pub use generator::NexmarkGenerator;
pub use schema::{
    auction_fields, bid_fields, nexmark_schema, person_fields, schema_mismatch, AUCTION, BID,
    PERSON,
};
