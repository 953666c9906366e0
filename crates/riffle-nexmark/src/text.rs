//! The generator's text: random words, names, e-mail addresses, credit cards, channel URLs and
//! the `extra` padding that brings each event to its configured average size.

use crate::random::Random;

/// Random words are at least this long (before trimming).
const MIN_STRING_LENGTH: u32 = 3;
/// Length of the pool `extra` texts are cut from.
const EXTRA_POOL_LENGTH: usize = 1 << 20;
/// Number of distinct non-hot channels.
pub(crate) const CHANNELS: u32 = 10_000;
/// The hot channels; bids name one of them half of the time.
pub(crate) const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];

pub(crate) const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
pub(crate) const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
pub(crate) const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
pub(crate) const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];

/// Picks one entry of a non-empty table.
pub(crate) fn pick<'a>(random: &mut Random, table: &[&'a str]) -> &'a str {
    table
        .get(random.next_int(table.len() as u32) as usize)
        .copied()
        .unwrap_or_default()
}

/// Appends a random lowercase word of 3 to `max_length - 1` characters, where each character is
/// `special` with probability 1/13, then trims leading and trailing spaces (Java's `trim`).
pub(crate) fn push_word(out: &mut String, random: &mut Random, max_length: u32, special: char) {
    let len = MIN_STRING_LENGTH + random.next_int(max_length.saturating_sub(MIN_STRING_LENGTH));
    let start = out.len();
    for _ in 0..len {
        if random.next_int(13) == 0 {
            out.push(special);
        } else {
            out.push(char::from(b'a' + random.next_int(26) as u8));
        }
    }
    let word = &out[start..];
    let trimmed = word.trim_matches(' ');
    if trimmed.len() != word.len() {
        let (lead, keep) = (
            word.len() - word.trim_start_matches(' ').len(),
            trimmed.len(),
        );
        out.replace_range(start..start + lead, "");
        out.truncate(start + keep);
    }
}

/// Appends four groups of four digits separated by spaces.
pub(crate) fn push_credit_card(out: &mut String, random: &mut Random) {
    for i in 0..4 {
        if i > 0 {
            out.push(' ');
        }
        let n = random.next_int(10_000);
        for d in [n / 1000, n / 100 % 10, n / 10 % 10, n % 10] {
            out.push(char::from(b'0' + d as u8));
        }
    }
}

/// Text derived once from the seed: the hot and per-channel URLs and the `extra` pool.
#[derive(Debug)]
pub(crate) struct Tables {
    hot_urls: [String; 4],
    channels: Vec<(String, String)>,
    extra_pool: String,
}

impl Tables {
    pub(crate) fn new(seed: u64) -> Self {
        let mut random = Random::for_table(seed, 1);
        let hot_urls = std::array::from_fn(|_| base_url(&mut random));
        let channels = (0..CHANNELS)
            .map(|i| {
                let mut url = base_url(&mut random);
                if random.next_int(10) > 0 {
                    // Java's Math.abs(Integer.reverse(i)); abs(MIN) stays MIN there too.
                    let id = (i as i32).reverse_bits().wrapping_abs();
                    url.push_str("&channel_id=");
                    url.push_str(&id.to_string());
                }
                (format!("channel-{i}"), url)
            })
            .collect();
        Self {
            hot_urls,
            channels,
            extra_pool: extra_pool(&mut Random::for_table(seed, 2)),
        }
    }

    /// The channel name and URL of a bid: hot with probability 1/2.
    pub(crate) fn channel(&self, random: &mut Random) -> (&str, &str) {
        if random.next_int(2) > 0 {
            let i = random.next_int(HOT_CHANNELS.len() as u32) as usize;
            let url = self.hot_urls.get(i).map(String::as_str).unwrap_or_default();
            (HOT_CHANNELS.get(i).copied().unwrap_or_default(), url)
        } else {
            match self.channels.get(random.next_int(CHANNELS) as usize) {
                Some((name, url)) => (name, url),
                None => ("", ""),
            }
        }
    }

    /// Padding so that an event of `current_size` bytes reaches `average_size` on average: a
    /// length uniform within ±20% of the missing bytes, cut from the pool at a random offset.
    pub(crate) fn extra(
        &self,
        random: &mut Random,
        current_size: usize,
        average_size: u32,
    ) -> &str {
        let average = average_size as usize;
        if current_size > average {
            return "";
        }
        let missing = (average - current_size) as f64;
        let delta = crate::ids::java_round(missing * 0.2) as usize;
        let min = (average - current_size) - delta;
        let size = if delta == 0 {
            min
        } else {
            min + random.next_int((2 * delta) as u32) as usize
        };
        if size >= self.extra_pool.len() {
            return &self.extra_pool;
        }
        let offset = random.next_int((self.extra_pool.len() - size) as u32) as usize;
        self.extra_pool
            .get(offset..offset + size)
            .unwrap_or_default()
    }
}

/// `https://www.nexmark.com/<w>/<w>/<w>/item.htm?query=1` with random words (`_` as special).
fn base_url(random: &mut Random) -> String {
    let mut url = String::from("https://www.nexmark.com/");
    for _ in 0..3 {
        push_word(&mut url, random, 5, '_');
        url.push('/');
    }
    url.push_str("item.htm?query=1");
    url
}

/// The pool `extra` texts are cut from: characters `'a' + (r % 26)` for signed random ints `r`,
/// consumed six base-26 digits per draw (so `'H'..='z'`, as Flink's generator produces).
fn extra_pool(random: &mut Random) -> String {
    let mut pool = String::with_capacity(EXTRA_POOL_LENGTH);
    let mut r = 0i32;
    let mut left = 0;
    for _ in 0..EXTRA_POOL_LENGTH {
        if left == 0 {
            r = random.next_i32();
            left = 6;
        }
        pool.push(char::from((i32::from(b'a') + r % 26) as u8));
        r /= 26;
        left -= 1;
    }
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_trimmed_and_bounded() {
        let mut random = Random::for_event(5, 5);
        for _ in 0..5_000 {
            let mut s = String::from("x");
            push_word(&mut s, &mut random, 20, ' ');
            let word = &s[1..];
            assert!(word.len() <= 19, "{word:?}");
            assert_eq!(word, word.trim());
            assert!(word.chars().all(|c| c == ' ' || c.is_ascii_lowercase()));
        }
    }

    #[test]
    fn credit_cards_have_four_groups() {
        let mut random = Random::for_event(5, 6);
        let mut s = String::new();
        push_credit_card(&mut s, &mut random);
        assert_eq!(s.len(), 19);
        assert!(s
            .split(' ')
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_digit())));
    }

    #[test]
    fn channels_and_urls() {
        let tables = Tables::new(0);
        let mut random = Random::for_event(0, 7);
        let mut hot = 0;
        for _ in 0..2_000 {
            let (channel, url) = tables.channel(&mut random);
            assert!(url.starts_with("https://www.nexmark.com/"), "{url}");
            assert!(url.contains("/item.htm?query=1"));
            if HOT_CHANNELS.contains(&channel) {
                hot += 1;
            } else {
                assert!(channel.starts_with("channel-"));
            }
        }
        assert!((850..1150).contains(&hot), "{hot}");
        assert!(
            tables.channels[1].1.ends_with("&channel_id=-2147483648")
                || !tables.channels[1].1.contains("channel_id")
        );
    }

    #[test]
    fn extra_reaches_the_average_size() {
        let tables = Tables::new(0);
        let mut random = Random::for_event(0, 8);
        let n = 10_000;
        let total: usize = (0..n)
            .map(|_| tables.extra(&mut random, 32, 100).len())
            .sum();
        let mean = total as f64 / n as f64;
        assert!((66.0..69.0).contains(&mean), "{mean}");
        assert_eq!(tables.extra(&mut random, 300, 100), "");
        assert!(tables
            .extra_pool
            .bytes()
            .all(|b| (b'H'..=b'z').contains(&b)));
    }
}
