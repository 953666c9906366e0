//! The Nexmark id arithmetic: which person, auction or bid an event id stands for, which ids are
//! "hot", and the price and auction-length draws.
//!
//! Event ids cycle through `person.proportion` persons, then `auction.proportion` auctions,
//! then `bid.proportion` bids; person and auction ids are counted from those cycles, so any
//! event can be generated from its id alone.

use crate::config::NexmarkConfig;
use crate::random::Random;

/// Bids and auctions may name this many people beyond the last one created.
const PERSON_ID_LEAD: i64 = 10;
/// Bids may name this many auctions beyond the last one created.
const AUCTION_ID_LEAD: i64 = 10;
/// Hot sellers, bidders and auctions are the first of every batch of this many ids.
pub(crate) const HOT_GROUP: i64 = 100;

/// What an event id generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Person,
    Auction,
    Bid,
}

/// Id arithmetic over one configuration.
#[derive(Debug, Clone)]
pub(crate) struct Ids {
    person: i64,
    auction: i64,
    total: i64,
    active_people: i64,
    in_flight_auctions: i64,
}

impl Ids {
    pub(crate) fn new(config: &NexmarkConfig) -> Self {
        Self {
            person: i64::from(config.person_proportion),
            auction: i64::from(config.auction_proportion),
            total: config.total_proportion().max(1),
            active_people: i64::from(config.num_active_people),
            in_flight_auctions: i64::from(config.num_in_flight_auctions),
        }
    }

    pub(crate) fn kind(&self, event_id: i64) -> EventKind {
        let rem = event_id % self.total;
        if rem < self.person {
            EventKind::Person
        } else if rem < self.person + self.auction {
            EventKind::Auction
        } else {
            EventKind::Bid
        }
    }

    /// The last person id (base 0) created at or before `event_id`.
    pub(crate) fn last_person(&self, event_id: i64) -> i64 {
        let epoch = event_id / self.total;
        let offset = (event_id % self.total).min(self.person - 1);
        epoch * self.person + offset
    }

    /// The last auction id (base 0) created at or before `event_id`.
    pub(crate) fn last_auction(&self, event_id: i64) -> i64 {
        let mut epoch = event_id / self.total;
        let mut offset = event_id % self.total;
        if offset < self.person {
            // A person: the last auction is the previous cycle's last.
            epoch -= 1;
            offset = self.auction - 1;
        } else if offset >= self.person + self.auction {
            // A bid: the last auction of this cycle.
            offset = self.auction - 1;
        } else {
            offset -= self.person;
        }
        epoch * self.auction + offset
    }

    /// A random recently active person (base 0), or one of a few not yet created.
    pub(crate) fn random_person(&self, event_id: i64, random: &mut Random) -> i64 {
        let people = self.last_person(event_id) + 1;
        let active = people.min(self.active_people);
        people - active + random.next_long(active + PERSON_ID_LEAD)
    }

    /// A random auction (base 0) likely still in flight, or one of a few not yet created.
    pub(crate) fn random_auction(&self, event_id: i64, random: &mut Random) -> i64 {
        let max = self.last_auction(event_id);
        let min = (max - self.in_flight_auctions).max(0);
        min + random.next_long(max - min + 1 + AUCTION_ID_LEAD)
    }

    /// Event ids it takes to create `num_in_flight_auctions` auctions.
    pub(crate) fn events_per_in_flight_auctions(&self) -> i64 {
        if self.auction == 0 {
            0
        } else {
            self.in_flight_auctions * self.total / self.auction
        }
    }
}

/// A price in cents, log-uniform between 1.00 and 1,000,000.00.
pub(crate) fn next_price(random: &mut Random) -> i64 {
    java_round(10f64.powf(random.next_double() * 6.0) * 100.0)
}

/// Java's `Math.round(double)`: the nearest long, halves up.
pub(crate) fn java_round(x: f64) -> i64 {
    (x + 0.5).floor() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Ids {
        Ids::new(&NexmarkConfig::default())
    }

    #[test]
    fn event_ids_cycle_person_auctions_bids() {
        let ids = ids();
        assert_eq!(ids.kind(0), EventKind::Person);
        assert_eq!(ids.kind(1), EventKind::Auction);
        assert_eq!(ids.kind(3), EventKind::Auction);
        assert_eq!(ids.kind(4), EventKind::Bid);
        assert_eq!(ids.kind(49), EventKind::Bid);
        assert_eq!(ids.kind(50), EventKind::Person);
        let kinds: Vec<EventKind> = (0..50_000).map(|e| ids.kind(e)).collect();
        let count = |k| kinds.iter().filter(|&&x| x == k).count();
        assert_eq!(count(EventKind::Person), 1000);
        assert_eq!(count(EventKind::Auction), 3000);
        assert_eq!(count(EventKind::Bid), 46_000);
    }

    #[test]
    fn person_and_auction_ids_follow_the_cycle() {
        let ids = ids();
        assert_eq!(ids.last_person(0), 0);
        assert_eq!(ids.last_person(49), 0);
        assert_eq!(ids.last_person(50), 1);
        assert_eq!(ids.last_auction(1), 0);
        assert_eq!(ids.last_auction(3), 2);
        assert_eq!(ids.last_auction(10), 2);
        assert_eq!(ids.last_auction(50), 2);
        assert_eq!(ids.last_auction(51), 3);
    }

    #[test]
    fn random_ids_stay_near_the_newest() {
        let ids = ids();
        let mut random = Random::for_event(0, 1);
        for event in [10, 5_000, 1_000_000] {
            for _ in 0..1000 {
                let p = ids.random_person(event, &mut random);
                let last = ids.last_person(event);
                assert!(
                    p <= last + PERSON_ID_LEAD && p >= last + 1 - 1000,
                    "{p} {last}"
                );
                let a = ids.random_auction(event, &mut random);
                let last = ids.last_auction(event);
                assert!(a <= last + AUCTION_ID_LEAD && a >= last - 100, "{a} {last}");
            }
        }
    }

    #[test]
    fn prices_are_log_uniform_cents() {
        let mut random = Random::for_event(0, 2);
        let prices: Vec<i64> = (0..10_000).map(|_| next_price(&mut random)).collect();
        assert!(prices.iter().all(|&p| (100..=100_000_000).contains(&p)));
        // Each decade holds about a sixth of the prices.
        let below_1000 = prices.iter().filter(|&&p| p < 1000).count();
        assert!((1_400..1_950).contains(&below_1000), "{below_1000}");
        assert_eq!(java_round(2.5), 3);
        assert_eq!(java_round(-2.5), -2);
    }
}
