//! Java's `hashCode` of map keys and `java.util.HashMap`'s iteration order, which decide the
//! order Flink prints map entries in (it converts maps to `HashMap`s) and the entry order of
//! maps Flink builds as `HashMap`s (`STR_TO_MAP`).

/// `String.hashCode()`.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `Long.hashCode(v)`.
pub fn long_hash(v: i64) -> i32 {
    (v ^ ((v as u64) >> 32) as i64) as i32
}

/// `Boolean.hashCode(b)`.
pub fn boolean_hash(b: bool) -> i32 {
    if b {
        1231
    } else {
        1237
    }
}

/// Positions of the keys with hashes `hashes`, in the order a `HashMap` created with
/// `capacity` and filled in order iterates them (no key repeated): by bucket of the spread hash
/// in the final table, insertion order within a bucket. `None` when a hash is unknown.
pub fn hash_map_order(hashes: &[Option<i32>], capacity: usize) -> Option<Vec<usize>> {
    let hashes: Vec<i32> = hashes.iter().copied().collect::<Option<Vec<i32>>>()?;
    let mut table = capacity.max(1).next_power_of_two();
    while hashes.len() * 4 > table * 3 {
        table *= 2;
    }
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    order.sort_by_key(|&i| {
        let h = hashes[i] as u32;
        ((h ^ (h >> 16)) as usize) & (table - 1)
    });
    Some(order)
}

/// The capacity of `new HashMap<>()`.
pub const DEFAULT_CAPACITY: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_java_hash_map() {
        let keys = ["zz", "a", "q"];
        let hashes: Vec<Option<i32>> = keys.iter().map(|k| Some(string_hash(k))).collect();
        assert_eq!(
            hash_map_order(&hashes, DEFAULT_CAPACITY),
            Some(vec![0, 1, 2])
        );
        let hashes: Vec<Option<i32>> = [3, 1, 17].iter().map(|k| Some(*k)).collect();
        assert_eq!(
            hash_map_order(&hashes, DEFAULT_CAPACITY),
            Some(vec![1, 2, 0])
        );
        let keys = ["zz", "a", "m", "b"];
        let hashes: Vec<Option<i32>> = keys.iter().map(|k| Some(string_hash(k))).collect();
        assert_eq!(hash_map_order(&hashes, 4), Some(vec![0, 1, 3, 2]));
        assert_eq!(
            hash_map_order(&[Some(boolean_hash(true)), Some(boolean_hash(false))], 16),
            Some(vec![1, 0])
        );
    }
}
