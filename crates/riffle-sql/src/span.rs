//! Source positions. Lines and columns are 1-based and count characters, as sqlparser's do,
//! so spans taken from sqlparser nodes and from Riffle's own nodes compare directly.

use serde::{Deserialize, Serialize};

/// A position in a source text (1-based line and column; column counts characters).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Location {
    /// 1-based line number.
    pub line: u64,
    /// 1-based column, in characters.
    pub column: u64,
}

/// A half-open region `[start, end)` of a source text. `Span::default()` (line 0) means "unknown".
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Span {
    /// First character of the region.
    pub start: Location,
    /// Position just after the last character of the region.
    pub end: Location,
}

impl Location {
    /// Builds a location from 1-based line and column.
    pub fn new(line: u64, column: u64) -> Self {
        Self { line, column }
    }
}

impl Span {
    /// Builds a span from its two ends.
    pub fn new(start: Location, end: Location) -> Self {
        Self { start, end }
    }

    /// True when the span carries no position.
    pub fn is_unknown(&self) -> bool {
        self.start.line == 0
    }

    /// The smallest span covering both `self` and `other` (unknown spans are ignored).
    pub fn union(&self, other: &Span) -> Span {
        if self.is_unknown() {
            return *other;
        }
        if other.is_unknown() {
            return *self;
        }
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// Byte range of this span inside `source`, clamped to the text.
    pub fn byte_range(&self, source: &str) -> std::ops::Range<usize> {
        let start = byte_offset(source, self.start);
        let end = byte_offset(source, self.end).max(start);
        start..end
    }
}

impl From<sqlparser::tokenizer::Span> for Span {
    fn from(s: sqlparser::tokenizer::Span) -> Self {
        Span::new(
            Location::new(s.start.line, s.start.column),
            Location::new(s.end.line, s.end.column),
        )
    }
}

/// Byte offset of a 1-based (line, column) location in `source`, clamped to the text.
pub fn byte_offset(source: &str, loc: Location) -> usize {
    if loc.line == 0 {
        return 0;
    }
    let mut line = 1u64;
    let mut line_start = 0usize;
    if loc.line > 1 {
        let mut found = false;
        for (i, b) in source.bytes().enumerate() {
            if b == b'\n' {
                line += 1;
                if line == loc.line {
                    line_start = i + 1;
                    found = true;
                    break;
                }
            }
        }
        if !found {
            return source.len();
        }
    }
    let rest = &source[line_start..];
    for (col, (i, ch)) in (1u64..).zip(rest.char_indices()) {
        if col == loc.column || ch == '\n' {
            return line_start + i;
        }
    }
    source.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_offsets_follow_lines_and_chars() {
        let src = "ab\nçd\nef";
        assert_eq!(byte_offset(src, Location::new(1, 1)), 0);
        assert_eq!(byte_offset(src, Location::new(2, 2)), 5);
        assert_eq!(byte_offset(src, Location::new(3, 2)), 8);
        assert_eq!(byte_offset(src, Location::new(9, 1)), src.len());
    }

    #[test]
    fn union_ignores_unknown() {
        let a = Span::new(Location::new(1, 3), Location::new(1, 5));
        let b = Span::new(Location::new(2, 1), Location::new(2, 4));
        assert_eq!(a.union(&b), Span::new(a.start, b.end));
        assert_eq!(Span::default().union(&a), a);
    }
}
