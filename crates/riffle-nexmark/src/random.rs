//! Deterministic random numbers for one event.
//!
//! Flink's Nexmark generator draws from an unseeded `SplittableRandom`, so its events differ on
//! every run. Riffle seeds a SplitMix64 stream per event from `(seed, event id)` instead: an event
//! is the same whatever the parallelism, batch size or run, and the draws follow the same
//! distributions (`nextInt(bound)`, `nextDouble()`, `nextLong` for large bounds).

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 stream.
#[derive(Debug, Clone)]
pub(crate) struct Random(u64);

impl Random {
    /// The stream of event `event_id` under `seed`.
    pub(crate) fn for_event(seed: u64, event_id: i64) -> Self {
        Self(mix(seed ^ (event_id as u64).wrapping_mul(GAMMA)))
    }

    /// A stream for tables derived from the seed (URLs, the extra-text pool); `salt` keeps the
    /// tables' streams apart from each other.
    pub(crate) fn for_table(seed: u64, salt: u64) -> Self {
        Self(mix(seed.rotate_left(17)
            ^ salt.wrapping_mul(GAMMA)
            ^ 0x6E65_786D_6172_6B00))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// Uniform in `[0, bound)`; 0 when `bound` is 0 (callers guard against empty ranges).
    pub(crate) fn next_int(&mut self, bound: u32) -> u32 {
        // Lemire's multiply-shift: one multiplication, no division.
        (((self.next_u64() >> 32) * u64::from(bound)) >> 32) as u32
    }

    /// Uniform over all `i32` values (Java's `nextInt()`).
    pub(crate) fn next_i32(&mut self) -> i32 {
        (self.next_u64() >> 32) as u32 as i32
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub(crate) fn next_double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// In `[0, n)` for `n > 0` the way the Nexmark generator's `LongGenerator` draws: an int
    /// draw below `i32::MAX`, a (skewed) remainder of a long draw above; 0 for `n <= 0`.
    pub(crate) fn next_long(&mut self, n: i64) -> i64 {
        if n <= 0 {
            0
        } else if n < i64::from(i32::MAX) {
            i64::from(self.next_int(n as u32))
        } else {
            (self.next_u64() as i64 % n).abs()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_are_reproducible_and_distinct() {
        let a: Vec<u32> = (0..8)
            .map({
                let mut r = Random::for_event(7, 42);
                move |_| r.next_int(1000)
            })
            .collect();
        let b: Vec<u32> = (0..8)
            .map({
                let mut r = Random::for_event(7, 42);
                move |_| r.next_int(1000)
            })
            .collect();
        let c: Vec<u32> = (0..8)
            .map({
                let mut r = Random::for_event(7, 43);
                move |_| r.next_int(1000)
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn draws_stay_in_range() {
        let mut r = Random::for_event(1, 1);
        for _ in 0..10_000 {
            assert!(r.next_int(13) < 13);
            let d = r.next_double();
            assert!((0.0..1.0).contains(&d));
            assert!((0..5).contains(&r.next_long(5)));
            assert!((0..i64::MAX).contains(&r.next_long(i64::MAX)));
        }
        assert_eq!(r.next_long(0), 0);
    }

    #[test]
    fn int_draws_cover_the_range_evenly() {
        let mut r = Random::for_event(3, 9);
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[r.next_int(4) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }
}
