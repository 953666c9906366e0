//! `RAND` and `RAND_INTEGER`. Flink gives every call site its own `java.util.Random` (seeded
//! with the call's seed, when it has one), so a seeded call yields the same sequence over the
//! rows as Flink's. The SQL rewrite ([`super::syntax`]) names each seeded call site with a
//! unique number, its last argument, which keys the site's generator here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock};

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};

use super::row::{int, Arg, RowFunction};

/// Names of the seeded variants the rewrite calls (they take the call-site number last).
pub(super) const SEEDED_RAND: &str = "rand_seeded";
/// See [`SEEDED_RAND`].
pub(super) const SEEDED_RAND_INTEGER: &str = "rand_integer_seeded";

/// A new call-site number (unique in the process).
pub(super) fn next_site() -> i64 {
    static NEXT: AtomicI64 = AtomicI64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `java.util.Random`: a 48-bit linear congruential generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    const MULTIPLIER: i64 = 0x5_DEEC_E66D;
    const MASK: i64 = (1 << 48) - 1;

    fn new(seed: i64) -> Self {
        Self {
            seed: (seed ^ Self::MULTIPLIER) & Self::MASK,
        }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.seed >> (48 - bits)) as i32
    }

    fn next_double(&mut self) -> f64 {
        let high = i64::from(self.next(26)) << 27;
        (high + i64::from(self.next(27))) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `nextInt(bound)` for `bound > 0`.
    fn next_int(&mut self, bound: i32) -> i32 {
        let m = bound - 1;
        let mut r = self.next(31);
        if bound & m == 0 {
            return ((i64::from(bound) * i64::from(r)) >> 31) as i32;
        }
        let mut u = r;
        loop {
            r = u % bound;
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }
}

/// Runs `f` on the generator of `site` (created from `seed` on first use).
fn with_site<T>(site: i64, seed: i64, f: impl FnOnce(&mut JavaRandom) -> T) -> T {
    static SITES: OnceLock<Mutex<HashMap<i64, JavaRandom>>> = OnceLock::new();
    let mut sites = SITES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(sites.entry(site).or_insert_with(|| JavaRandom::new(seed)))
}

/// A generator for an unseeded call (a fresh seed per call, as `new Random()` draws).
fn unseeded() -> JavaRandom {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    JavaRandom::new(nanos ^ next_site().wrapping_mul(0x2545_F491_4F6C_DD1D))
}

fn bound_of(v: &ScalarValue) -> DfResult<i32> {
    match int(v).and_then(|b| i32::try_from(b).ok()) {
        Some(b) if b > 0 => Ok(b),
        _ => exec_err!("bound must be positive"),
    }
}

/// The random functions.
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::Int;
    vec![
        RowFunction::new("rand", &[&[]], DataType::Float64, |_| {
            Ok(ScalarValue::Float64(Some(unseeded().next_double())))
        })
        .volatile(),
        RowFunction::new(SEEDED_RAND, &[&[Int, Int]], DataType::Float64, |v| {
            let (Some(seed), Some(site)) = (int(&v[0]), int(&v[1])) else {
                return Ok(ScalarValue::Float64(None));
            };
            Ok(ScalarValue::Float64(Some(with_site(
                site,
                seed,
                JavaRandom::next_double,
            ))))
        })
        .volatile(),
        RowFunction::new("rand_integer", &[&[Int]], DataType::Int32, |v| {
            let bound = bound_of(&v[0])?;
            Ok(ScalarValue::Int32(Some(unseeded().next_int(bound))))
        })
        .volatile(),
        RowFunction::new(
            SEEDED_RAND_INTEGER,
            &[&[Int, Int, Int]],
            DataType::Int32,
            |v| {
                let (Some(seed), Some(site)) = (int(&v[0]), int(&v[2])) else {
                    return Ok(ScalarValue::Int32(None));
                };
                let bound = bound_of(&v[1])?;
                Ok(ScalarValue::Int32(Some(with_site(site, seed, |r| {
                    r.next_int(bound)
                }))))
            },
        )
        .volatile(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_java_util_random() {
        // Flink's RAND_INTEGER(42, 100) and RAND(7) over the first rows.
        let mut r = JavaRandom::new(42);
        assert_eq!(
            [r.next_int(100), r.next_int(100), r.next_int(100)],
            [30, 63, 48]
        );
        assert_eq!(JavaRandom::new(7).next_double(), 0.730_699_042_060_042_1);
        let mut r = JavaRandom::new(7);
        assert_eq!([r.next_int(10), r.next_int(1)], [6, 0]);
    }
}
