//! A fast first pass over a JSON object record: finds the raw text of the members a schema
//! wants, without building a `serde_json::Value` per record.
//!
//! The scanner only accepts what it can validate exactly as `serde_json` would (strict JSON
//! grammar); anything unusual — `\u` escapes, escaped member names, deep nesting — makes it give
//! up, and the caller decodes the record the general (slower) way, which also produces the
//! errors. So a record takes the fast path only when the result is identical.

use std::cell::Cell;

use arrow::datatypes::{DataType, Fields};

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
    let mut s = Scanner::new(text);
    s.skip_ws();
    let members = s.object(|s, key| {
        let Some(key) = key else {
            return false;
        };
        let start = s.pos;
        if !s.value(1) {
            return false;
        }
        if let Some(slot) = slot_of(key).and_then(|i| slots.get_mut(i)) {
            *slot = Some(&text[start..s.pos]);
        }
        true
    });
    members && s.at_end()
}

/// Where a record's members land when it is scanned with [`scan_record`]: one slot per field
/// of the schema and, recursively, per field of its ROW fields. So one strict pass over a
/// record finds the raw text of every member at every depth, and a ROW's object is not
/// scanned a second time to find its own members.
#[derive(Debug, Clone)]
pub struct SlotTree {
    /// `levels[0]` is the record; the others are ROW objects, referenced by [`TreeField::nested`].
    levels: Vec<Level>,
    slots: usize,
}

#[derive(Debug, Clone)]
struct Level {
    /// The slot of `fields[i]` is `base + i`.
    base: usize,
    fields: Vec<TreeField>,
}

#[derive(Debug, Clone)]
struct TreeField {
    /// The name as a JSON member name (`"name"`), when it needs no escapes: a record that
    /// spells the member so is matched without scanning the name. A name that needs escapes
    /// never matches (the scanner gives up on escaped member names).
    quoted: Option<QuotedName>,
    /// The same name between the comma before it and the colon after it (`,"name":`): how
    /// records that list their members in the schema's order without whitespace spell it
    /// after the previous member's value, matched in one comparison.
    glue: Option<QuotedName>,
    /// The level of this field's members, when the field is a ROW.
    nested: Option<usize>,
}

/// A member name as records spell it (`"name"`), with its first and last eight bytes as
/// words, so that most names are compared with one or two word loads from the record.
#[derive(Debug, Clone)]
struct QuotedName {
    bytes: Box<[u8]>,
    /// The first eight bytes (the bytes there are, when fewer, and zeros).
    head: u64,
    /// The last eight bytes (when there are at least eight).
    tail: u64,
}

impl QuotedName {
    /// `name` quoted, between `before` and `after`.
    fn new(before: &str, name: &str, after: &str) -> Self {
        let bytes = format!("{before}\"{name}\"{after}")
            .into_bytes()
            .into_boxed_slice();
        let mut head = [0; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        QuotedName {
            head: u64::from_le_bytes(head),
            tail: word_at(&bytes, bytes.len().saturating_sub(8)),
            bytes,
        }
    }

    /// Whether `record` spells this name at `at`.
    #[inline(always)]
    fn is_at(&self, record: &[u8], at: usize) -> bool {
        let n = self.bytes.len();
        match n {
            // One word load, masked to the name's bytes, where the record has the word.
            0..=7 if at + 8 <= record.len() => {
                let mask = (1_u64 << (8 * n)) - 1;
                word_at(record, at) & mask == self.head
            }
            8..=16 if at + n <= record.len() => {
                word_at(record, at) == self.head && word_at(record, at + n - 8) == self.tail
            }
            _ => record.get(at..at + n) == Some(&self.bytes[..]),
        }
    }
}

impl SlotTree {
    /// The tree of `fields` (the record's columns). Their slots are `0..fields.len()`.
    pub fn new(fields: &Fields) -> Self {
        let mut tree = SlotTree {
            levels: Vec::new(),
            slots: 0,
        };
        tree.add_level(fields);
        tree
    }

    fn add_level(&mut self, fields: &Fields) -> usize {
        let level = self.levels.len();
        self.levels.push(Level {
            base: self.slots,
            fields: Vec::with_capacity(fields.len()),
        });
        self.slots += fields.len();
        for field in fields {
            let nested = match field.data_type() {
                DataType::Struct(members) => Some(self.add_level(members)),
                _ => None,
            };
            let name = field.name();
            let plain = !name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
            self.levels[level].fields.push(TreeField {
                quoted: plain.then(|| QuotedName::new("", name, "")),
                glue: plain.then(|| QuotedName::new(",", name, ":")),
                nested,
            });
        }
        level
    }

    /// How many slots a scan fills.
    pub fn slot_count(&self) -> usize {
        self.slots
    }

    /// The slot of field `index` of `level` (`usize::MAX` when there is no such field) and,
    /// when that field is a ROW, the level of its members.
    #[inline(always)]
    pub fn member(&self, level: usize, index: usize) -> (usize, Option<usize>) {
        match self.levels.get(level) {
            Some(l) => (l.base + index, l.fields.get(index).and_then(|f| f.nested)),
            None => (usize::MAX, None),
        }
    }

    /// Forgets what an earlier duplicate of a ROW member left in the slots of `level`.
    fn clear(&self, level: usize, spans: &mut [Span]) {
        let Some(l) = self.levels.get(level) else {
            return;
        };
        for (i, field) in l.fields.iter().enumerate() {
            if let Some(span) = spans.get_mut(l.base + i) {
                *span = Span::ABSENT;
            }
            if let Some(nested) = field.nested {
                self.clear(nested, spans);
            }
        }
    }
}

/// Where a member's raw value text lies in the record ([`Span::ABSENT`] when the record has no
/// such member). Offsets rather than `&str`s, so one buffer serves every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: u32,
    end: u32,
    /// A string without escapes: its inside is its text as it stands.
    plain_string: bool,
}

impl Span {
    /// No member (a JSON value is never empty, so `end == 0` cannot be a member).
    pub const ABSENT: Span = Span {
        start: 0,
        end: 0,
        plain_string: false,
    };

    /// The text of a string member without escapes (without its quotes).
    #[inline(always)]
    pub fn plain_string(self, record: &str) -> Option<&str> {
        if !self.plain_string {
            return None;
        }
        record.get(self.start as usize + 1..self.end as usize - 1)
    }

    /// The member's raw text in `record`, if there was one.
    #[inline(always)]
    pub fn text(self, record: &str) -> Option<&str> {
        if self == Span::ABSENT {
            return None;
        }
        record.get(self.start as usize..self.end as usize)
    }
}

/// What a JSON escape other than `\u` stands for: `\n` (given `n`) is a line feed. The scanner
/// accepts strings with these escapes only, and the decoders resolve them with this too.
#[inline(always)]
pub fn simple_escape(escaped: u8) -> Option<&'static str> {
    Some(match escaped {
        b'"' => "\"",
        b'\\' => "\\",
        b'/' => "/",
        b'b' => "\u{8}",
        b'f' => "\u{c}",
        b'n' => "\n",
        b'r' => "\r",
        b't' => "\t",
        _ => return None,
    })
}

/// Scans `record` like [`scan_object`], filling `spans` (resized to [`SlotTree::slot_count`])
/// with the members of every level of `tree`: a ROW member that is an object has its own
/// members found in the same pass. Returns false when the scanner cannot vouch for the record
/// (or it is longer than 4 GiB); `spans` is then unspecified.
pub fn scan_record(record: &str, tree: &SlotTree, spans: &mut Vec<Span>) -> bool {
    if u32::try_from(record.len()).is_err() {
        return false;
    }
    spans.clear();
    spans.resize(tree.slot_count(), Span::ABSENT);
    let mut s = Scanner::new(record);
    s.skip_ws();
    s.tree_object(tree, 0, spans, 1) && s.at_end()
}

/// A `slot_of` for [`scan_object`]: the position of the field named like the member. Tries
/// the field after the one found last first, as records usually list their members in the
/// schema's order (field names are unique, as Flink requires).
pub fn field_slots(fields: &Fields) -> impl Fn(&str) -> Option<usize> + '_ {
    let next = Cell::new(0);
    move |name| {
        let found = position_from_hint(fields.len(), |i| fields[i].name(), next.get(), name);
        if let Some(i) = found {
            next.set(i + 1);
        }
        found
    }
}

/// The position of `name` among `len` names (`name_at`), trying `hint` first.
fn position_from_hint<'n>(
    len: usize,
    name_at: impl Fn(usize) -> &'n str,
    hint: usize,
    name: &str,
) -> Option<usize> {
    if hint < len && name_at(hint) == name {
        return Some(hint);
    }
    (0..len).find(|&i| name_at(i) == name)
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

/// The 8 bytes of `bytes` at `at` as a word (0 past the end; callers stay inside).
fn word_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

struct Scanner<'b> {
    text: &'b str,
    bytes: &'b [u8],
    pos: usize,
}

impl<'b> Scanner<'b> {
    fn new(text: &'b str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// Whether only whitespace is left.
    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos == self.bytes.len()
    }
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    #[inline(always)]
    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `{ "name": value, ... }`: `member` is called with each member's name (`None` when it
    /// has escapes, so its raw text is not the name) when the scanner stands at its value,
    /// and must scan that value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, Option<&'b str>) -> bool) -> bool {
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
            let Some(escaped) = self.string() else {
                return false;
            };
            let text = self.text;
            let key = match text.get(key_start..self.pos - 1) {
                Some(key) if !escaped => Some(key),
                _ => None,
            };
            self.skip_ws();
            if !self.eat(b':') {
                return false;
            }
            self.skip_ws();
            if !member(self, key) {
                return false;
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}');
        }
    }

    /// An object whose members fill the slots of `level` of `tree` (ROW members recursively).
    /// Members are expected in the schema's order: the name of the field after the one found
    /// last is tried first, straight against the record's bytes.
    fn tree_object(
        &mut self,
        tree: &SlotTree,
        level: usize,
        spans: &mut [Span],
        depth: usize,
    ) -> bool {
        let Some(fields) = tree.levels.get(level).map(|l| l.fields.as_slice()) else {
            return false;
        };
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return false;
        }
        self.skip_ws();
        if self.eat(b'}') {
            return true;
        }
        let mut hint = 0;
        loop {
            self.skip_ws();
            // The expected field first, then the others (records may skip optional fields,
            // such as Nexmark's one ROW of three per event), then the name scanned as a string.
            let mut found = self.eat_any_name(fields, hint);
            // No field's name: an unknown member, skipped. A name with escapes is not its raw
            // text (it might still spell a field's name): give up.
            if found.is_none() && self.string() != Some(false) {
                return false;
            }
            self.skip_ws();
            if !self.eat(b':') {
                return false;
            }
            loop {
                if let Some(index) = found {
                    hint = index + 1;
                }
                self.skip_ws();
                let scanned = match found {
                    Some(index) => self.tree_member(tree, level, index, spans, depth),
                    None => self.value(depth),
                };
                if !scanned {
                    return false;
                }
                // The common case: the expected field's `,"name":` right after the value.
                match fields.get(hint).and_then(|f| f.glue.as_ref()) {
                    Some(glue) if glue.is_at(self.bytes, self.pos) => {
                        self.pos += glue.bytes.len();
                        found = Some(hint);
                    }
                    _ => break,
                }
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}');
        }
    }

    /// The field of `fields` whose name the record spells next (then skipped), trying
    /// `fields[hint]` first.
    #[inline(always)]
    fn eat_any_name(&mut self, fields: &[TreeField], hint: usize) -> Option<usize> {
        if let Some(field) = fields.get(hint) {
            if self.eat_name(field) {
                return Some(hint);
            }
        }
        for (index, field) in fields.iter().enumerate() {
            if index != hint && self.eat_name(field) {
                return Some(index);
            }
        }
        None
    }

    /// Whether the record spells `field`'s name next (then skipped).
    #[inline(always)]
    fn eat_name(&mut self, field: &TreeField) -> bool {
        match &field.quoted {
            Some(quoted) if quoted.is_at(self.bytes, self.pos) => {
                self.pos += quoted.bytes.len();
                true
            }
            _ => false,
        }
    }

    /// The value of field `index` of `level`, recorded in its slot.
    #[inline(always)]
    fn tree_member(
        &mut self,
        tree: &SlotTree,
        level: usize,
        index: usize,
        spans: &mut [Span],
        depth: usize,
    ) -> bool {
        let start = self.pos;
        let mut plain_string = false;
        let (slot, nested) = tree.member(level, index);
        let scanned = match (nested, self.peek()) {
            (Some(nested), Some(b'{')) => {
                // Only a duplicate member finds the nested slots filled.
                if spans.get(slot) != Some(&Span::ABSENT) {
                    tree.clear(nested, spans);
                }
                self.tree_object(tree, nested, spans, depth + 1)
            }
            (_, Some(b'"')) => self
                .string()
                .map(|escaped| plain_string = !escaped)
                .is_some(),
            (_, Some(b'-' | b'0'..=b'9')) => self.number(),
            _ => self.value(depth),
        };
        if let Some(span) = spans.get_mut(slot) {
            // Both fit: the record is shorter than 4 GiB.
            *span = Span {
                start: start as u32,
                end: self.pos as u32,
                plain_string,
            };
        }
        scanned
    }

    /// Any JSON value at nesting `depth`.
    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'"') => self.string().is_some(),
            Some(b'{') => self.object(|s, _| s.value(depth + 1)),
            Some(b'[') => self.array(depth),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    /// An array whose elements are skipped.
    fn array(&mut self, depth: usize) -> bool {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b']') {
            return true;
        }
        loop {
            self.skip_ws();
            if !self.value(depth + 1) {
                return false;
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']');
        }
    }

    /// A string: no control characters, only the simple escapes (`\u` gives up). `None` when
    /// it is not one, else whether it has escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        if !self.eat(b'"') {
            return None;
        }
        let mut escaped = false;
        loop {
            self.skip_plain_string_bytes();
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(escaped);
                }
                b'\\' => {
                    simple_escape(*self.bytes.get(self.pos + 1)?)?;
                    escaped = true;
                    self.pos += 2;
                }
                0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
    }

    /// Skips string bytes that need no check (not `"`, `\\` or a control character), sixteen
    /// at a time where SSE2 is there (every x86-64 processor), else eight at a time: most of a
    /// record's bytes are inside strings.
    #[inline(always)]
    fn skip_plain_string_bytes(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.skip_plain_string_bytes_sse2() {
            return;
        }
        self.skip_plain_string_bytes_swar();
    }

    /// The 16-bytes-at-a-time part of [`Scanner::skip_plain_string_bytes`]: true when it
    /// stopped at a special byte, false when fewer than 16 bytes are left to look at.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn skip_plain_string_bytes_sse2(&mut self) -> bool {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        while let Some(chunk) = self.bytes.get(self.pos..self.pos + 16) {
            // SAFETY: SSE2 is part of the x86-64 baseline, and the unaligned load reads the
            // 16 bytes of `chunk`.
            let mask = unsafe {
                let x = _mm_loadu_si128(chunk.as_ptr().cast());
                // A byte is a control character when min(x, 0x1f) == x (unsigned).
                let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
                let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
                _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash)))
            };
            if mask != 0 {
                self.pos += mask.trailing_zeros() as usize;
                return true;
            }
            self.pos += 16;
        }
        false
    }

    /// Skips plain string bytes eight at a time (the bytes left after the SSE2 loop, or all
    /// of them on other processors).
    #[inline(always)]
    fn skip_plain_string_bytes_swar(&mut self) {
        const ONES: u64 = u64::from_le_bytes([1; 8]);
        const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
        // The high bit of each byte that is zero — exact for the lowest such byte, which is
        // all that is used (the classic bit trick; bytes above it may be flagged wrongly).
        let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        while let Some(chunk) = self
            .bytes
            .get(self.pos..self.pos + 8)
            .and_then(|c| <[u8; 8]>::try_from(c).ok())
        {
            let x = u64::from_le_bytes(chunk);
            let special = (x.wrapping_sub(ONES * 0x20) & !x & HIGHS)
                | zeros(x ^ (ONES * u64::from(b'"')))
                | zeros(x ^ (ONES * u64::from(b'\\')));
            if special != 0 {
                // Little-endian: the lowest flagged bit is in the first special byte.
                self.pos += special.trailing_zeros() as usize / 8;
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
    #[inline(always)]
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

    #[inline(always)]
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
    fn a_special_byte_stops_a_string_at_any_position() {
        // Strings long enough for several 16- and 8-byte steps, with the quote, an escape or
        // a control character at every position (multi-byte UTF-8 and DEL are plain).
        let plain = "aé\u{7f}€bcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
        for cut in (0..=plain.len()).filter(|&i| plain.is_char_boundary(i)) {
            let (head, tail) = plain.split_at(cut);
            let closed = format!("\"{head}\"");
            let text = format!("{{\"a\": {closed}, \"b\": 1}}");
            assert_eq!(
                scan(&text, &["a", "b"]),
                Some(vec![Some(&*closed), Some("1")])
            );
            let escaped = format!("\"{head}\\n{tail}\"");
            let text = format!("{{\"a\": {escaped}}}");
            assert_eq!(scan(&text, &["a"]), Some(vec![Some(&*escaped)]));
            let control = format!("{{\"a\": \"{head}\u{1f}{tail}\"}}");
            assert_eq!(scan(&control, &["a"]), None, "{control:?}");
        }
    }

    #[test]
    fn quoted_names_compare_every_byte_wherever_they_stand() {
        let letters = "abcdefghijklmnopqr";
        // Names alone and between a comma and a colon, as after a member.
        for (len, (before, after)) in
            (0..=letters.len()).flat_map(|len| [(len, ("", "")), (len, (",", ":"))])
        {
            let name = QuotedName::new(before, &letters[..len], after);
            let quoted = name.bytes.to_vec();
            // Followed by nothing, by a few bytes or by many: the word loads and the plain
            // comparison near the record's end.
            for room in [0, 3, 20] {
                let mut record = b"{ ".to_vec();
                record.extend_from_slice(&quoted);
                record.extend(std::iter::repeat_n(b'x', room));
                assert!(name.is_at(&record, 2), "{len} {room}");
                assert!(!name.is_at(&record, 1), "{len} {room}");
                let cut = &record[..record.len() - room - 1];
                assert!(!name.is_at(cut, 2), "{len} {room}");
                for at in 0..quoted.len() {
                    let mut other = record.clone();
                    other[2 + at] ^= 0x20;
                    assert!(!name.is_at(&other, 2), "{len} {room} {at}");
                }
            }
        }
    }

    #[test]
    fn members_out_of_the_schema_order_are_found_by_name() {
        // The second field is skipped; names that start like a field's are other members.
        let text = r#"{"r": {"x": 2}, "aa": 5, "a": 1}"#;
        assert_eq!(
            scan_tree(text),
            Some(vec![Some("1"), Some(r#"{"x": 2}"#), Some("2"), None, None])
        );
        // An escaped member name gives up, as the name is not its raw text.
        assert_eq!(scan_tree(r#"{"\u0061": 1}"#), None);
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

    fn tree_fields() -> Fields {
        use arrow::datatypes::Field;
        let inner = Fields::from(vec![Field::new("z", DataType::Utf8, true)]);
        let row = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Struct(inner), true),
        ]);
        Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("r", DataType::Struct(row), true),
        ])
    }

    /// The texts of every slot: a, r, r.x, r.y, r.y.z.
    fn scan_tree(text: &str) -> Option<Vec<Option<&str>>> {
        let tree = SlotTree::new(&tree_fields());
        let mut spans = Vec::new();
        scan_record(text, &tree, &mut spans).then(|| spans.iter().map(|s| s.text(text)).collect())
    }

    #[test]
    fn one_pass_finds_the_members_of_nested_rows() {
        let tree = SlotTree::new(&tree_fields());
        assert_eq!(tree.slot_count(), 5);
        assert_eq!(tree.member(0, 1).1, Some(1));
        assert_eq!(tree.member(1, 1).1, Some(2));
        assert_eq!(tree.member(0, 0).1, None);
        let text = r#"{"r": {"y": {"z": "q"}, "x": 2, "o": [{"z": 1}]}, "a": 1}"#;
        assert_eq!(
            scan_tree(text),
            Some(vec![
                Some("1"),
                Some(r#"{"y": {"z": "q"}, "x": 2, "o": [{"z": 1}]}"#),
                Some("2"),
                Some(r#"{"z": "q"}"#),
                Some(r#""q""#),
            ])
        );
        // The same without whitespace, as most producers write it; a member out of order
        // after one in order, and a duplicate after its first value.
        for (text, slots) in [
            (
                r#"{"a":1,"r":{"x":2,"y":{"z":"q"}}}"#,
                [
                    Some("1"),
                    Some(r#"{"x":2,"y":{"z":"q"}}"#),
                    Some("2"),
                    Some(r#"{"z":"q"}"#),
                    Some(r#""q""#),
                ],
            ),
            (
                r#"{"r":{"y":{"z":"q"},"x":2},"a":1,"a":3}"#,
                [
                    Some("3"),
                    Some(r#"{"y":{"z":"q"},"x":2}"#),
                    Some("2"),
                    Some(r#"{"z":"q"}"#),
                    Some(r#""q""#),
                ],
            ),
        ] {
            assert_eq!(scan_tree(text), Some(slots.to_vec()), "{text}");
        }
        assert_eq!(scan_tree(r#"{"a":1,"r":}"#), None);
        assert_eq!(scan_tree(r#"{"a":1,"r":{"x":2,}}"#), None);
        // A ROW that is no object keeps its members absent.
        assert_eq!(
            scan_tree(r#"{"r": "text"}"#),
            Some(vec![None, Some(r#""text""#), None, None, None])
        );
    }

    #[test]
    fn a_later_duplicate_row_replaces_all_of_the_earlier_one() {
        assert_eq!(
            scan_tree(r#"{"r": {"x": 1, "y": {"z": "a"}}, "r": {"y": {}}}"#),
            Some(vec![None, Some(r#"{"y": {}}"#), None, Some("{}"), None])
        );
    }

    #[test]
    fn the_one_pass_gives_up_inside_nested_rows_too() {
        for text in [
            r#"{"r": {"y": {"z": "\u0041"}}}"#,
            r#"{"r": {"y": {"z\n": 1}}}"#,
            r#"{"r": {"x": 01}}"#,
            r#"{"r": {"y": {"z": tru}}}"#,
            r#"{"r": {"x": 1,}}"#,
            r#"{"r": {"x": 1}} x"#,
        ] {
            assert_eq!(scan_tree(text), None, "{text}");
        }
    }
}
