//! Text patches on the original job: byte ranges replaced by new text. Everything outside the
//! patched ranges (comments, formatting) is kept byte for byte.

use std::fmt;
use std::ops::Range;

/// One replacement of a byte range of the original text (an empty range inserts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The replaced bytes of the original text.
    pub range: Range<usize>,
    /// The new text.
    pub text: String,
}

impl Patch {
    /// Replaces `range` with `text`.
    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Patch {
        Patch {
            range,
            text: text.into(),
        }
    }

    /// Inserts `text` at `at`.
    pub fn insert(at: usize, text: impl Into<String>) -> Patch {
        Patch::replace(at..at, text)
    }

    /// Deletes `range`.
    pub fn delete(range: Range<usize>) -> Patch {
        Patch::replace(range, "")
    }

    fn is_insert(&self) -> bool {
        self.range.is_empty()
    }
}

/// Two patches that touch the same bytes: applying both would be ambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The earlier patch's range.
    pub first: Range<usize>,
    /// The later patch's range.
    pub second: Range<usize>,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "two rewrites overlap (bytes {}..{} and {}..{})",
            self.first.start, self.first.end, self.second.start, self.second.end
        )
    }
}

/// Applies `patches` to `text`. Patches may come in any order; insertions at the same point keep
/// their order, and an insertion may sit at either end of a replacement. Any other shared byte is
/// an [`Overlap`]. A range outside the text (or splitting a character) counts as overlapping the
/// text's end.
pub fn apply(text: &str, patches: &[Patch]) -> Result<String, Overlap> {
    let mut order: Vec<usize> = (0..patches.len()).collect();
    // Stable: insertions at one point stay in the order they were made, and come before a
    // replacement starting there.
    order.sort_by_key(|&i| {
        let p = &patches[i];
        (p.range.start, !p.is_insert())
    });
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    let mut last: Option<&Patch> = None;
    for &i in &order {
        let p = &patches[i];
        if p.range.start < at || p.range.end > text.len() || p.range.start > p.range.end {
            let first = last.map_or(0..text.len(), |l| l.range.clone());
            return Err(Overlap {
                first,
                second: p.range.clone(),
            });
        }
        let (Some(kept), Some(_)) = (text.get(at..p.range.start), text.get(p.range.clone())) else {
            return Err(Overlap {
                first: 0..text.len(),
                second: p.range.clone(),
            });
        };
        out.push_str(kept);
        out.push_str(&p.text);
        at = p.range.end;
        last = Some(p);
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_in_any_order() {
        let text = "abcdef";
        let patches = [
            Patch::replace(4..6, "EF"),
            Patch::insert(0, ">"),
            Patch::delete(1..2),
            Patch::insert(4, "+"),
            Patch::insert(4, "-"),
        ];
        assert_eq!(apply(text, &patches), Ok(">acd+-EF".to_string()));
        assert_eq!(apply(text, &[]), Ok(text.to_string()));
    }

    #[test]
    fn overlapping_patches_are_refused() {
        let err = apply("abcdef", &[Patch::replace(1..4, "x"), Patch::delete(3..5)]);
        assert_eq!(
            err,
            Err(Overlap {
                first: 1..4,
                second: 3..5
            })
        );
        // An insertion strictly inside a replaced range overlaps it.
        assert!(apply(
            "abcdef",
            &[Patch::replace(1..4, "x"), Patch::insert(2, "y")]
        )
        .is_err());
        assert!(apply("abc", &[Patch::delete(2..9)]).is_err());
        assert!(apply("é", &[Patch::delete(0..1)]).is_err());
    }
}
