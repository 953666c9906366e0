//! The session time zone (`table.local-time-zone`): Flink's zone ids, and conversions between
//! instants and local date-times with the zone's rules (from the IANA database, via
//! `chrono-tz`).

use chrono::{FixedOffset, LocalResult, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

/// A zone as Flink accepts it: a region id (`Asia/Shanghai`) or a fixed offset (`UTC`,
/// `GMT+05:30`, `+08:00`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LocalZone {
    /// A region with daylight-saving rules.
    Region(Tz),
    /// A fixed offset from UTC.
    Fixed(FixedOffset),
}

impl LocalZone {
    /// UTC.
    pub const UTC: LocalZone = LocalZone::Region(Tz::UTC);

    /// Parses a Java `ZoneId` string; None for unknown zones.
    pub fn parse(id: &str) -> Option<LocalZone> {
        let id = id.trim();
        if let Ok(tz) = id.parse::<Tz>() {
            return Some(LocalZone::Region(tz));
        }
        let offset = ["UTC", "GMT", "UT"]
            .iter()
            .find_map(|p| id.strip_prefix(p))
            .unwrap_or(id);
        if offset.is_empty() || offset == "Z" {
            return Some(LocalZone::UTC);
        }
        parse_offset(offset).map(LocalZone::Fixed)
    }

    /// True for UTC under any of its names (`UTC`, `Etc/UTC`, `GMT`, `+00:00`, ...).
    pub fn is_utc(self) -> bool {
        match self {
            LocalZone::Fixed(f) => f.local_minus_utc() == 0,
            LocalZone::Region(tz) => matches!(
                tz.name(),
                "UTC"
                    | "Etc/UTC"
                    | "UCT"
                    | "Etc/UCT"
                    | "GMT"
                    | "Etc/GMT"
                    | "GMT0"
                    | "Etc/GMT0"
                    | "Etc/GMT+0"
                    | "Etc/GMT-0"
                    | "Greenwich"
                    | "Etc/Greenwich"
                    | "Universal"
                    | "Etc/Universal"
                    | "Zulu"
                    | "Etc/Zulu"
            ),
        }
    }

    /// The offset from UTC (seconds) at the instant `utc_ms`.
    pub fn offset_seconds(self, utc_ms: i64) -> i64 {
        let secs = utc_ms.div_euclid(1000);
        match self {
            LocalZone::Region(tz) => match tz.timestamp_opt(secs, 0) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
                    i64::from(t.offset().fix().local_minus_utc())
                }
                LocalResult::None => 0,
            },
            LocalZone::Fixed(f) => i64::from(f.local_minus_utc()),
        }
    }

    /// The local wall-clock milliseconds of the instant `utc_ms`.
    pub fn to_local(self, utc_ms: i64) -> i64 {
        utc_ms + self.offset_seconds(utc_ms) * 1000
    }

    /// The instant of the local date-time `local_ms` as Java's `ZonedDateTime.of` resolves it:
    /// the earlier offset in an overlap, shifted forward by the gap's length in a gap.
    pub fn to_utc(self, local_ms: i64) -> i64 {
        self.resolve(local_ms, false)
    }

    /// [`Self::to_utc`] as Java's legacy `TimeZone` parsing resolves an overlap: with the later
    /// offset (standard time).
    pub fn to_utc_later(self, local_ms: i64) -> i64 {
        self.resolve(local_ms, true)
    }

    fn resolve(self, local_ms: i64, later: bool) -> i64 {
        let LocalZone::Region(tz) = self else {
            return local_ms - self.offset_seconds(0) * 1000;
        };
        let secs = local_ms.div_euclid(1000);
        let millis = local_ms.rem_euclid(1000);
        let Some(naive) = chrono::DateTime::from_timestamp(secs, 0).map(|d| d.naive_utc()) else {
            return local_ms;
        };
        let offset_ms = |n: NaiveDateTime| match tz.offset_from_local_datetime(&n) {
            LocalResult::Single(o) => Some(i64::from(o.fix().local_minus_utc()) * 1000),
            LocalResult::Ambiguous(earlier, latter) => {
                let o = if later { latter } else { earlier };
                Some(i64::from(o.fix().local_minus_utc()) * 1000)
            }
            LocalResult::None => None,
        };
        match offset_ms(naive) {
            Some(o) => local_ms - o,
            None => {
                // In a gap: use the offset before the transition (Java moves the time forward).
                let before = local_ms - 86_400_000;
                let o = self.offset_seconds(before - self.offset_seconds(before) * 1000) * 1000;
                secs * 1000 + millis - o
            }
        }
    }

    /// Whether the zone's current rules observe daylight saving time (Java's
    /// `TimeZone.useDaylightTime()`): its offsets in January and July of a year ahead differ.
    pub fn observes_daylight_saving(self) -> bool {
        // 2030-01-15 and 2030-07-15, 00:00 UTC.
        const WINTER_MS: i64 = 1_894_665_600_000;
        const SUMMER_MS: i64 = 1_910_304_000_000;
        self.offset_seconds(WINTER_MS) != self.offset_seconds(SUMMER_MS)
    }
}

/// `+08:00`, `-5`, `+0530`, `+05:30:00` offsets.
fn parse_offset(s: &str) -> Option<FixedOffset> {
    let (sign, digits) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if digits.contains(':') {
        digits.split(':').collect()
    } else if digits.len() <= 2 {
        vec![digits]
    } else {
        vec![digits.get(..2)?, digits.get(2..)?]
    };
    let mut seconds = 0i32;
    for (i, p) in parts.iter().enumerate() {
        let v: i32 = p.parse().ok()?;
        seconds += v * [3600, 60, 1].get(i)?;
    }
    FixedOffset::east_opt(sign * seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_parse_and_convert() {
        let shanghai = LocalZone::parse("Asia/Shanghai").unwrap_or(LocalZone::UTC);
        assert_eq!(shanghai.to_local(0), 8 * 3_600_000);
        assert_eq!(shanghai.to_utc(8 * 3_600_000), 0);
        let india = LocalZone::parse("GMT+05:30").unwrap_or(LocalZone::UTC);
        assert_eq!(india.to_local(0), 19_800_000);
        assert_eq!(LocalZone::parse("UTC"), Some(LocalZone::UTC));
        for utc in ["Etc/UTC", "GMT", "Z", "+00:00", "GMT+00:00"] {
            assert!(LocalZone::parse(utc).is_some_and(|z| z.is_utc()), "{utc}");
        }
        assert!(!shanghai.is_utc());
        assert_eq!(LocalZone::parse("Mars/Olympus"), None);
        // 2024-03-10 02:30 does not exist in Los Angeles: Java gives 03:30 PDT (10:30 UTC).
        let la = LocalZone::parse("America/Los_Angeles").unwrap_or(LocalZone::UTC);
        let local = 1_710_037_800_000; // 2024-03-10T02:30 as local millis
        assert_eq!(la.to_utc(local), 1_710_066_600_000);
        assert!(la.observes_daylight_saving());
        for zone in [
            "Asia/Shanghai",
            "Asia/Tokyo",
            "America/Sao_Paulo",
            "GMT+05:30",
            "UTC",
        ] {
            let zone = LocalZone::parse(zone).unwrap_or(LocalZone::UTC);
            assert!(!zone.observes_daylight_saving(), "{zone:?}");
        }
    }
}
