//! The stable key → queue mapping.

/// The queue a key goes to among `queues` queues.
///
/// The hash is Java's `String.hashCode()` over the key's UTF-16 code units (`h = 31 * h + c`,
/// wrapping 32-bit arithmetic), and the queue is `|h % queues|` with Java's remainder semantics.
/// That is exactly what RocketMQ's `SelectMessageQueueByHash` does for a string argument, so a
/// Java producer using that selector and Riffle put the same key in the same queue. It never
/// changes between releases: data already stored depends on it. Every part of Riffle that picks
/// a queue from a key must call this function. With `queues == 0` it returns 0.
pub fn queue_for_key(key: &str, queues: u32) -> u32 {
    let h = java_string_hash(key);
    let Ok(n) = i32::try_from(queues) else {
        // More queues than i32 can count: Java could not express it; use the unsigned hash.
        return (h as u32).checked_rem(queues).unwrap_or(0);
    };
    h.checked_rem(n).map_or(0, |r| r.unsigned_abs())
}

/// Java's `String.hashCode()`.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_string_hash_code() {
        // Known Java values: "".hashCode() = 0, "a" = 97, "hello" = 99162322, "polygenelubricants"
        // = Integer.MIN_VALUE; "😀" is 0xD83D * 31 + 0xDE00 (a surrogate pair).
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("😀"), 1_772_899);
    }

    #[test]
    fn queue_selection_follows_java_remainder() {
        assert_eq!(queue_for_key("hello", 4), 2); // 99162322 % 4
                                                  // Negative hash: Java's % keeps the sign, then Math.abs.
        let h = java_string_hash("negative-key-77");
        assert!(h < 0, "pick a key with a negative hash: {h}");
        assert_eq!(queue_for_key("negative-key-77", 7), (h % 7).unsigned_abs());
        assert_eq!(
            queue_for_key("polygenelubricants", 3),
            (i32::MIN % 3).unsigned_abs()
        );
        assert_eq!(queue_for_key("x", 0), 0);
        assert!(queue_for_key("x", u32::MAX) < u32::MAX);
    }
}
