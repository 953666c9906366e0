//! A fast first pass over a JSON object record: finds the raw text of the members a schema
//! wants, without building a `serde_json::Value` per record.
//!
//! The scanner only accepts what it can validate exactly as `serde_json` would (strict JSON
//! grammar); anything unusual — `\u` escapes, escaped member names, deep nesting — makes it give
//! up, and the caller decodes the record the general (slower) way, which also produces the
//! errors. So a record takes the fast path only when the result is identical.

use std::cell::Cell;

use arrow::datatypes::Fields;

/// Nesting depth beyond which the scanner gives up (`serde_json` itself stops at 128).
const MAX_DEPTH: usize = 64;

/// Longest number mantissa (digits and point) the scanner accepts: with at most
/// [`MAX_EXPONENT_DIGITS`] exponent digits no such number overflows a double.
const MAX_MANTISSA: usize = 100;

/// Most exponent digits the scanner accepts.
const MAX_EXPONENT_DIGITS: usize = 2;

/// Scans `text`, which must be one JSON object (with optional surrounding whitespace). For
/// every member whose name `slot_of` maps to a slot, stores the member's raw value text in
/// `slots` (a later duplicate replaces an earlier one, as in `serde_json`). Returns false when
/// the text is not an object the scanner can vouch for; `slots` is then unspecified.
pub fn scan_object<'a>(
    text: &'a str,
    slot_of: &dyn Fn(&str) -> Option<usize>,
    slots: &mut [Option<&'a str>],
) -> bool {
    let mut s = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    s.skip_ws();
    if !s.object_members(text, slot_of, slots) {
        return false;
    }
    s.skip_ws();
    s.pos == s.bytes.len()
}

/// A `slot_of` for [`scan_object`]: the position of the field named like the member. Tries
/// the field after the one found last first, as records usually list their members in the
/// schema's order (field names are unique, as Flink requires).
pub fn field_slots(fields: &Fields) -> impl Fn(&str) -> Option<usize> + '_ {
    let next = Cell::new(0);
    move |name| {
        let guess = next.get();
        let found = match fields.get(guess) {
            Some(f) if f.name() == name => Some(guess),
            _ => fields.iter().position(|f| f.name() == name),
        };
        if let Some(i) = found {
            next.set(i + 1);
        }
        found
    }
}

/// Slots kept on the stack by [`slots_for`]; wider objects use the heap.
pub const INLINE_SLOTS: usize = 16;

/// `n` empty slots: in `inline` when they fit, else in `heap`.
pub fn slots_for<'s, 'a>(
    n: usize,
    inline: &'s mut [Option<&'a str>; INLINE_SLOTS],
    heap: &'s mut Vec<Option<&'a str>>,
) -> &'s mut [Option<&'a str>] {
    if n <= INLINE_SLOTS {
        &mut inline[..n]
    } else {
        heap.resize(n, None);
        heap
    }
}

struct Scanner<'b> {
    bytes: &'b [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `{ "name": value, ... }` at the top level, filling `slots`.
    fn object_members<'a>(
        &mut self,
        text: &'a str,
        slot_of: &dyn Fn(&str) -> Option<usize>,
        slots: &mut [Option<&'a str>],
    ) -> bool {
        if !self.eat(b'{') {
            return false;
        }
        self.skip_ws();
        if self.eat(b'}') {
            return true;
        }
        loop {
            self.skip_ws();
            let key_start = self.pos + 1;
            if !self.string() {
                return false;
            }
            let key = &text[key_start..self.pos - 1];
            if key.contains('\\') {
                return false;
            }
            self.skip_ws();
            if !self.eat(b':') {
                return false;
            }
            self.skip_ws();
            let value_start = self.pos;
            if !self.value(1) {
                return false;
            }
            if let Some(slot) = slot_of(key).and_then(|i| slots.get_mut(i)) {
                *slot = Some(&text[value_start..self.pos]);
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}');
        }
    }

    /// Any JSON value at nesting `depth`.
    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'{') => self.container(b'}', depth, true),
            Some(b'[') => self.container(b']', depth, false),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    /// An object (`keyed`) or array whose members are skipped.
    fn container(&mut self, close: u8, depth: usize, keyed: bool) -> bool {
        self.pos += 1;
        self.skip_ws();
        if self.eat(close) {
            return true;
        }
        loop {
            self.skip_ws();
            if keyed {
                if !self.string() {
                    return false;
                }
                self.skip_ws();
                if !self.eat(b':') {
                    return false;
                }
                self.skip_ws();
            }
            if !self.value(depth + 1) {
                return false;
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return self.eat(close);
        }
    }

    /// A string: no control characters, only the simple escapes (`\u` gives up).
    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            self.skip_plain_string_bytes();
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    self.pos += 1;
                    return true;
                }
                Some(b'\\') => {
                    match self.bytes.get(self.pos + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                        _ => return false,
                    }
                    self.pos += 2;
                }
                Some(0..=0x1f) => return false,
                Some(_) => self.pos += 1,
            }
        }
    }

    /// Skips string bytes that need no check (not `"`, `\\` or a control character), eight
    /// at a time: most of a record's bytes are inside strings.
    fn skip_plain_string_bytes(&mut self) {
        const ONES: u64 = u64::from_ne_bytes([1; 8]);
        const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
        // Whether some byte of `x` is zero (exact as a whole, the classic bit trick).
        let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS != 0;
        while let Some(chunk) = self
            .bytes
            .get(self.pos..self.pos + 8)
            .and_then(|c| <[u8; 8]>::try_from(c).ok())
        {
            let x = u64::from_ne_bytes(chunk);
            let control = x.wrapping_sub(ONES * 0x20) & !x & HIGHS != 0;
            if control
                || has_zero(x ^ (ONES * u64::from(b'"')))
                || has_zero(x ^ (ONES * u64::from(b'\\')))
            {
                return;
            }
            self.pos += 8;
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, giving up on numbers so long or with
    /// exponents so large that they might overflow a double (`serde_json` rejects those).
    fn number(&mut self) -> bool {
        self.eat(b'-');
        let mantissa_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        }
        if self.eat(b'.') {
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return false;
            }
            self.digits();
        }
        if self.pos - mantissa_start > MAX_MANTISSA {
            return false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            let exponent_start = self.pos;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return false;
            }
            self.digits();
            if self.pos - exponent_start > MAX_EXPONENT_DIGITS {
                return false;
            }
        }
        true
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan<'a>(text: &'a str, names: &[&str]) -> Option<Vec<Option<&'a str>>> {
        let mut slots = vec![None; names.len()];
        let slot_of = |k: &str| names.iter().position(|n| *n == k);
        scan_object(text, &slot_of, &mut slots).then_some(slots)
    }

    #[test]
    fn finds_the_raw_text_of_wanted_members() {
        let text =
            r#" {"a": 1, "skip": [1, {"x": "y"}], "b": {"c": "d\"e"}, "n": null, "a": -2.5e3} "#;
        assert_eq!(
            scan(text, &["a", "b", "n", "missing"]),
            Some(vec![
                Some("-2.5e3"),
                Some(r#"{"c": "d\"e"}"#),
                Some("null"),
                None
            ])
        );
        assert_eq!(scan("{}", &["a"]), Some(vec![None]));
    }

    #[test]
    fn field_slots_find_members_in_any_order() {
        use arrow::datatypes::{DataType, Field};
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
            Field::new("c", DataType::Int64, true),
        ]);
        let slot_of = field_slots(&fields);
        let found: Vec<_> = ["a", "b", "c", "c", "a", "x", "b"]
            .iter()
            .map(|n| slot_of(n))
            .collect();
        assert_eq!(
            found,
            [Some(0), Some(1), Some(2), Some(2), Some(0), None, Some(1)]
        );
    }

    #[test]
    fn gives_up_on_what_it_cannot_vouch_for() {
        for text in [
            "[1]",
            "{\"a\": 1,}",
            "{\"a\": 01}",
            "{\"a\": 1.}",
            "{\"a\": 1e400}",
            "{\"a\": 1e100}",
            "{\"a\": \"\\u0041\"}",
            "{\"a\\n\": 1}",
            "{\"a\": \"tab\there\"}",
            "{\"a\": tru}",
            "{\"a\": 1} x",
            "{\"a\" 1}",
            "",
        ] {
            assert_eq!(scan(text, &["a"]), None, "{text}");
        }
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(scan(&deep, &["a"]), None);
    }

    #[test]
    fn long_strings_end_at_their_quote_escape_or_control_character() {
        for (member, ok) in [
            ("\"0123456789abcdefghij\"", true),
            ("\"0123456789\\\"abcdefghij\"", true),
            ("\"0123456789ab\\u0041cdefghij\"", false),
            ("\"0123456789\tabcdefghij\"", false),
            ("\"0123456789\u{7f}ü€abcdefghij\"", true),
            ("\"01234567\"", true),
            ("\"0123456\"", true),
        ] {
            let text = format!("{{\"a\": {member}, \"b\": 1}}");
            let expected = ok.then(|| vec![Some(member), Some("1")]);
            assert_eq!(scan(&text, &["a", "b"]), expected, "{text}");
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                ok || member.contains("\\u")
            );
        }
    }

    #[test]
    fn accepts_exactly_what_serde_json_accepts_on_samples() {
        for text in [
            r#"{"a":1}"#,
            r#"{"a":[],"b":{},"c":"","d":-0,"e":0.5E-2,"f":true,"g":false}"#,
            "\t{ \"a\" : \"x\\\\y\\/\" }\r\n",
        ] {
            assert!(scan(text, &["a"]).is_some(), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        }
    }
}
