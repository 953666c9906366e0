//! Generates one subtask's events straight into Arrow columns.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBufferBuilder, Int32Builder, Int64Builder, StringBuilder, StructArray,
    TimestampMillisecondBuilder,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Fields, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;

use crate::config::{
    ConfigError, NexmarkConfig, Split, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID,
};
use crate::ids::{next_price, EventKind, Ids, HOT_GROUP};
use crate::random::Random;
use crate::schema::{nexmark_schema, schema_mismatch, AUCTION, BID, PERSON};
use crate::text::{self, Tables};

/// Number of auction categories.
const CATEGORIES: u32 = 5;

/// The events of one split, generated in order as Arrow batches of the Nexmark table.
pub struct NexmarkGenerator {
    config: NexmarkConfig,
    split: Split,
    ids: Ids,
    tables: Arc<Tables>,
    schema: SchemaRef,
    inter_event_delay_us: f64,
    /// Events generated so far (the next event's number on this split's timeline).
    emitted: u64,
    /// Reused to assemble each text value without allocating.
    scratch: String,
}

impl NexmarkGenerator {
    /// A generator of subtask `index` of `parallelism` producing batches of the Nexmark schema.
    pub fn new(
        config: NexmarkConfig,
        index: usize,
        parallelism: usize,
    ) -> Result<Self, ConfigError> {
        Self::with_schema(config, index, parallelism, nexmark_schema())
    }

    /// Like [`NexmarkGenerator::new`], with batches typed by `schema` (a table's declared
    /// columns, which must match the Nexmark table's up to nullability and name case).
    pub fn with_schema(
        config: NexmarkConfig,
        index: usize,
        parallelism: usize,
        schema: SchemaRef,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        if let Some(why) = schema_mismatch(&schema) {
            return Err(ConfigError(format!(
                "the nexmark connector produces the Nexmark table: {why}"
            )));
        }
        Ok(Self {
            split: config.split(index, parallelism),
            ids: Ids::new(&config),
            tables: Arc::new(Tables::new(config.seed)),
            inter_event_delay_us: config.inter_event_delay_us(),
            config,
            schema,
            emitted: 0,
            scratch: String::with_capacity(256),
        })
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Events still to generate.
    pub fn remaining(&self) -> u64 {
        self.split.events - self.emitted
    }

    /// Event time of the next event minus the base time: when, relative to the start, the next
    /// event is due if events are held to their wall-clock time.
    pub fn next_event_offset_ms(&self) -> i64 {
        self.timestamp(self.emitted as i64) - self.config.base_time_ms
    }

    /// Event time of event number `number` of this split: evenly spaced at `first-event.rate`.
    fn timestamp(&self, number: i64) -> i64 {
        self.config.base_time_ms + (number as f64 * self.inter_event_delay_us) as i64 / 1000
    }

    /// The next at most `max_rows` events, or `None` when the split is exhausted.
    pub fn next_batch(&mut self, max_rows: usize) -> Result<Option<RecordBatch>, ArrowError> {
        let rows = (max_rows as u64).min(self.remaining()) as usize;
        if rows == 0 {
            return Ok(None);
        }
        let mut columns = EventColumns::with_capacity(rows);
        for _ in 0..rows {
            let number = self.emitted as i64;
            let event_id = self.split.first_event_id + number;
            let timestamp = self.timestamp(number);
            let mut random = Random::for_event(self.config.seed, event_id);
            match self.ids.kind(event_id) {
                EventKind::Person => self.person(&mut columns, event_id, timestamp, &mut random),
                EventKind::Auction => {
                    self.auction(&mut columns, number, event_id, timestamp, &mut random)
                }
                EventKind::Bid => self.bid(&mut columns, event_id, timestamp, &mut random),
            }
            self.emitted += 1;
        }
        columns.finish(&self.schema).map(Some)
    }

    fn person(&mut self, c: &mut EventColumns, event_id: i64, timestamp: i64, random: &mut Random) {
        c.event_type.append_value(PERSON);
        c.auction.append_null();
        c.bid.append_null();
        let p = &mut c.person;
        p.valid.append(true);
        p.id.append_value(self.ids.last_person(event_id) + FIRST_PERSON_ID);
        let s = &mut self.scratch;
        s.clear();
        s.push_str(text::pick(random, &text::FIRST_NAMES));
        s.push(' ');
        s.push_str(text::pick(random, &text::LAST_NAMES));
        let mut size = 8 + s.len();
        p.name.append_value(s.as_str());
        s.clear();
        text::push_word(s, random, 7, ' ');
        s.push('@');
        text::push_word(s, random, 5, ' ');
        s.push_str(".com");
        size += s.len();
        p.email.append_value(s.as_str());
        s.clear();
        text::push_credit_card(s, random);
        size += s.len();
        p.credit_card.append_value(s.as_str());
        let city = text::pick(random, &text::US_CITIES);
        let state = text::pick(random, &text::US_STATES);
        size += city.len() + state.len();
        p.city.append_value(city);
        p.state.append_value(state);
        p.date_time.append_value(timestamp);
        p.extra
            .append_value(self.tables.extra(random, size, self.config.avg_person_size));
    }

    fn auction(
        &mut self,
        c: &mut EventColumns,
        number: i64,
        event_id: i64,
        timestamp: i64,
        random: &mut Random,
    ) {
        c.event_type.append_value(AUCTION);
        c.person.append_null();
        c.bid.append_null();
        let a = &mut c.auction;
        a.valid.append(true);
        a.id.append_value(self.ids.last_auction(event_id) + FIRST_AUCTION_ID);
        let seller = if random.next_int(self.config.hot_sellers_ratio) > 0 {
            // A hot seller: the first person of the latest group.
            self.ids.last_person(event_id) / HOT_GROUP * HOT_GROUP
        } else {
            self.ids.random_person(event_id, random)
        };
        let category = FIRST_CATEGORY_ID + i64::from(random.next_int(CATEGORIES));
        let initial_bid = next_price(random);
        // Auctions last on average until `num_in_flight_auctions` more auctions are created.
        let horizon = self.timestamp(number + self.ids.events_per_in_flight_auctions()) - timestamp;
        let expires = timestamp + 1 + random.next_long((horizon * 2).max(1));
        let s = &mut self.scratch;
        s.clear();
        text::push_word(s, random, 20, ' ');
        let mut size = 8 + s.len();
        a.item_name.append_value(s.as_str());
        s.clear();
        text::push_word(s, random, 100, ' ');
        size += s.len() + 40;
        a.description.append_value(s.as_str());
        let reserve = initial_bid + next_price(random);
        a.initial_bid.append_value(initial_bid);
        a.reserve.append_value(reserve);
        a.date_time.append_value(timestamp);
        a.expires.append_value(expires);
        a.seller.append_value(seller + FIRST_PERSON_ID);
        a.category.append_value(category);
        a.extra.append_value(
            self.tables
                .extra(random, size, self.config.avg_auction_size),
        );
    }

    fn bid(&mut self, c: &mut EventColumns, event_id: i64, timestamp: i64, random: &mut Random) {
        c.event_type.append_value(BID);
        c.person.append_null();
        c.auction.append_null();
        let b = &mut c.bid;
        b.valid.append(true);
        let auction = if random.next_int(self.config.hot_auction_ratio) > 0 {
            // A hot auction: the first of the latest group.
            self.ids.last_auction(event_id) / HOT_GROUP * HOT_GROUP
        } else {
            self.ids.random_auction(event_id, random)
        };
        let bidder = if random.next_int(self.config.hot_bidders_ratio) > 0 {
            // A hot bidder: the second person of the latest group (hot sellers are the first).
            self.ids.last_person(event_id) / HOT_GROUP * HOT_GROUP + 1
        } else {
            self.ids.random_person(event_id, random)
        };
        let price = next_price(random);
        let (channel, url) = self.tables.channel(random);
        b.auction.append_value(auction + FIRST_AUCTION_ID);
        // Flink's generator adds the person-id offset to bidders twice; bidder ids keep that
        // shift so the data (and query results) have the benchmark's distribution.
        b.bidder.append_value(bidder + 2 * FIRST_PERSON_ID);
        b.price.append_value(price);
        b.channel.append_value(channel);
        b.url.append_value(url);
        b.date_time.append_value(timestamp);
        b.extra
            .append_value(self.tables.extra(random, 32, self.config.avg_bid_size));
    }
}

/// Builders of the batch being generated.
struct EventColumns {
    event_type: Int32Builder,
    person: PersonColumns,
    auction: AuctionColumns,
    bid: BidColumns,
}

impl EventColumns {
    fn with_capacity(rows: usize) -> Self {
        Self {
            event_type: Int32Builder::with_capacity(rows),
            person: PersonColumns::with_capacity(rows),
            auction: AuctionColumns::with_capacity(rows),
            bid: BidColumns::with_capacity(rows),
        }
    }

    fn finish(mut self, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
        let fields = |i: usize| match schema.fields().get(i).map(|f| f.data_type()) {
            Some(DataType::Struct(fields)) => Ok(fields.clone()),
            _ => Err(ArrowError::SchemaError(format!(
                "column {i} of the Nexmark table is not a ROW"
            ))),
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.event_type.finish()),
            self.person.finish(fields(1)?)?,
            self.auction.finish(fields(2)?)?,
            self.bid.finish(fields(3)?)?,
        ];
        RecordBatch::try_new(schema.clone(), columns)
    }
}

/// A ROW column under construction: its validity and its fields' builders.
fn finish_struct(
    fields: Fields,
    valid: &mut BooleanBufferBuilder,
    children: Vec<ArrayRef>,
) -> Result<ArrayRef, ArrowError> {
    let nulls = NullBuffer::new(valid.finish());
    Ok(Arc::new(StructArray::try_new(
        fields,
        children,
        Some(nulls),
    )?))
}

struct PersonColumns {
    valid: BooleanBufferBuilder,
    id: Int64Builder,
    name: StringBuilder,
    email: StringBuilder,
    credit_card: StringBuilder,
    city: StringBuilder,
    state: StringBuilder,
    date_time: TimestampMillisecondBuilder,
    extra: StringBuilder,
}

impl PersonColumns {
    fn with_capacity(rows: usize) -> Self {
        // Persons are 1 in 50 events by default: small initial buffers, builders grow as needed.
        let rows = rows / 16 + 1;
        Self {
            valid: BooleanBufferBuilder::new(rows),
            id: Int64Builder::with_capacity(rows),
            name: StringBuilder::with_capacity(rows, rows * 12),
            email: StringBuilder::with_capacity(rows, rows * 12),
            credit_card: StringBuilder::with_capacity(rows, rows * 19),
            city: StringBuilder::with_capacity(rows, rows * 8),
            state: StringBuilder::with_capacity(rows, rows * 2),
            date_time: TimestampMillisecondBuilder::with_capacity(rows),
            extra: StringBuilder::with_capacity(rows, rows * 140),
        }
    }

    fn append_null(&mut self) {
        self.valid.append(false);
        self.id.append_null();
        self.name.append_null();
        self.email.append_null();
        self.credit_card.append_null();
        self.city.append_null();
        self.state.append_null();
        self.date_time.append_null();
        self.extra.append_null();
    }

    fn finish(&mut self, fields: Fields) -> Result<ArrayRef, ArrowError> {
        let children: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.email.finish()),
            Arc::new(self.credit_card.finish()),
            Arc::new(self.city.finish()),
            Arc::new(self.state.finish()),
            Arc::new(self.date_time.finish()),
            Arc::new(self.extra.finish()),
        ];
        finish_struct(fields, &mut self.valid, children)
    }
}

struct AuctionColumns {
    valid: BooleanBufferBuilder,
    id: Int64Builder,
    item_name: StringBuilder,
    description: StringBuilder,
    initial_bid: Int64Builder,
    reserve: Int64Builder,
    date_time: TimestampMillisecondBuilder,
    expires: TimestampMillisecondBuilder,
    seller: Int64Builder,
    category: Int64Builder,
    extra: StringBuilder,
}

impl AuctionColumns {
    fn with_capacity(rows: usize) -> Self {
        let rows = rows / 8 + 1;
        Self {
            valid: BooleanBufferBuilder::new(rows),
            id: Int64Builder::with_capacity(rows),
            item_name: StringBuilder::with_capacity(rows, rows * 12),
            description: StringBuilder::with_capacity(rows, rows * 50),
            initial_bid: Int64Builder::with_capacity(rows),
            reserve: Int64Builder::with_capacity(rows),
            date_time: TimestampMillisecondBuilder::with_capacity(rows),
            expires: TimestampMillisecondBuilder::with_capacity(rows),
            seller: Int64Builder::with_capacity(rows),
            category: Int64Builder::with_capacity(rows),
            extra: StringBuilder::with_capacity(rows, rows * 400),
        }
    }

    fn append_null(&mut self) {
        self.valid.append(false);
        self.id.append_null();
        self.item_name.append_null();
        self.description.append_null();
        self.initial_bid.append_null();
        self.reserve.append_null();
        self.date_time.append_null();
        self.expires.append_null();
        self.seller.append_null();
        self.category.append_null();
        self.extra.append_null();
    }

    fn finish(&mut self, fields: Fields) -> Result<ArrayRef, ArrowError> {
        let children: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.item_name.finish()),
            Arc::new(self.description.finish()),
            Arc::new(self.initial_bid.finish()),
            Arc::new(self.reserve.finish()),
            Arc::new(self.date_time.finish()),
            Arc::new(self.expires.finish()),
            Arc::new(self.seller.finish()),
            Arc::new(self.category.finish()),
            Arc::new(self.extra.finish()),
        ];
        finish_struct(fields, &mut self.valid, children)
    }
}

struct BidColumns {
    valid: BooleanBufferBuilder,
    auction: Int64Builder,
    bidder: Int64Builder,
    price: Int64Builder,
    channel: StringBuilder,
    url: StringBuilder,
    date_time: TimestampMillisecondBuilder,
    extra: StringBuilder,
}

impl BidColumns {
    fn with_capacity(rows: usize) -> Self {
        Self {
            valid: BooleanBufferBuilder::new(rows),
            auction: Int64Builder::with_capacity(rows),
            bidder: Int64Builder::with_capacity(rows),
            price: Int64Builder::with_capacity(rows),
            channel: StringBuilder::with_capacity(rows, rows * 10),
            url: StringBuilder::with_capacity(rows, rows * 60),
            date_time: TimestampMillisecondBuilder::with_capacity(rows),
            extra: StringBuilder::with_capacity(rows, rows * 70),
        }
    }

    fn append_null(&mut self) {
        self.valid.append(false);
        self.auction.append_null();
        self.bidder.append_null();
        self.price.append_null();
        self.channel.append_null();
        self.url.append_null();
        self.date_time.append_null();
        self.extra.append_null();
    }

    fn finish(&mut self, fields: Fields) -> Result<ArrayRef, ArrowError> {
        let children: Vec<ArrayRef> = vec![
            Arc::new(self.auction.finish()),
            Arc::new(self.bidder.finish()),
            Arc::new(self.price.finish()),
            Arc::new(self.channel.finish()),
            Arc::new(self.url.finish()),
            Arc::new(self.date_time.finish()),
            Arc::new(self.extra.finish()),
        ];
        finish_struct(fields, &mut self.valid, children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int32Type, Int64Type, TimestampMillisecondType};

    fn config(events: u64) -> NexmarkConfig {
        NexmarkConfig {
            events_num: events,
            ..NexmarkConfig::default()
        }
    }

    fn all(mut g: NexmarkGenerator, batch: usize) -> Vec<RecordBatch> {
        let mut out = Vec::new();
        while let Some(b) = g.next_batch(batch).unwrap() {
            out.push(b);
        }
        out
    }

    #[test]
    fn same_seed_same_events_whatever_the_batch_size() {
        let a = all(NexmarkGenerator::new(config(500), 0, 1).unwrap(), 7);
        let b = all(NexmarkGenerator::new(config(500), 0, 1).unwrap(), 500);
        let concat = |v: &[RecordBatch]| arrow::compute::concat_batches(&v[0].schema(), v).unwrap();
        assert_eq!(concat(&a), concat(&b));
        let other = NexmarkConfig {
            seed: 1,
            ..config(500)
        };
        let c = all(NexmarkGenerator::new(other, 0, 1).unwrap(), 500);
        assert_ne!(concat(&b), concat(&c));
    }

    #[test]
    fn events_follow_the_proportions_and_timeline() {
        let batches = all(NexmarkGenerator::new(config(1000), 0, 1).unwrap(), 8192);
        assert_eq!(batches.len(), 1);
        let batch = &batches[0];
        assert_eq!(batch.num_rows(), 1000);
        let types = batch.column(0).as_primitive::<Int32Type>();
        let count = |t| types.iter().filter(|v| *v == Some(t)).count();
        assert_eq!((count(PERSON), count(AUCTION), count(BID)), (20, 60, 920));
        // Exactly the ROW of the event's type is set.
        for row in 0..batch.num_rows() {
            for (col, t) in [(1, PERSON), (2, AUCTION), (3, BID)] {
                assert_eq!(batch.column(col).is_valid(row), types.value(row) == t);
            }
        }
        // 10,000 events per second: event 999 is 99.9 ms after the first.
        let bid = batch.column(3).as_struct();
        let times = bid.column(5).as_primitive::<TimestampMillisecondType>();
        assert_eq!(times.value(999), crate::DEFAULT_BASE_TIME_MS + 99);
        let person = batch.column(1).as_struct();
        let ids = person.column(0).as_primitive::<Int64Type>();
        assert_eq!(ids.value(0), 1000);
        assert_eq!(ids.value(50), 1001);
        let auction = batch.column(2).as_struct();
        let auction_ids = auction.column(0).as_primitive::<Int64Type>();
        assert_eq!(auction_ids.value(1), 1000);
        assert_eq!(auction_ids.value(3), 1002);
        let expires = auction.column(6).as_primitive::<TimestampMillisecondType>();
        let starts = auction.column(5).as_primitive::<TimestampMillisecondType>();
        for row in [1, 2, 3, 51] {
            let length = expires.value(row) - starts.value(row);
            assert!((1..=400).contains(&length), "{length}");
        }
    }

    #[test]
    fn bids_name_hot_and_recent_auctions() {
        let batches = all(NexmarkGenerator::new(config(100_000), 0, 1).unwrap(), 8192);
        let mut hot = 0usize;
        let mut bids = 0usize;
        for batch in &batches {
            let bid = batch.column(3).as_struct();
            let auctions = bid.column(0).as_primitive::<Int64Type>();
            for row in 0..batch.num_rows() {
                if bid.is_valid(row) {
                    bids += 1;
                    if (auctions.value(row) - FIRST_AUCTION_ID) % HOT_GROUP == 0 {
                        hot += 1;
                    }
                }
            }
        }
        // A bid goes to a hot auction with probability 1/2 (+ the few random hits).
        let share = hot as f64 / bids as f64;
        assert!((0.48..0.53).contains(&share), "{share}");
    }

    #[test]
    fn subtasks_split_the_ids_on_parallel_timelines() {
        let first = all(NexmarkGenerator::new(config(100), 0, 2).unwrap(), 100);
        let second = all(NexmarkGenerator::new(config(100), 1, 2).unwrap(), 100);
        assert_eq!(first[0].num_rows(), 50);
        assert_eq!(second[0].num_rows(), 50);
        let whole = all(NexmarkGenerator::new(config(100), 0, 1).unwrap(), 100);
        // Event 50 is the second subtask's first: same person, generated from the same id.
        let person = |b: &RecordBatch, row| {
            b.column(1)
                .as_struct()
                .column(1)
                .as_string::<i32>()
                .value(row)
                .to_string()
        };
        assert_eq!(person(&second[0], 0), person(&whole[0], 50));
    }

    #[test]
    fn a_foreign_schema_is_rejected_with_the_reason() {
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("x", DataType::Int32, true),
        ]));
        let err = NexmarkGenerator::with_schema(config(1), 0, 1, schema)
            .err()
            .unwrap();
        assert!(err.0.contains("physical columns"), "{err}");
    }
}
