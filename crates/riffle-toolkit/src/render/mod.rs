//! Output formats of the check report: rustc-like text, JSON, SARIF 2.1.0 and JUnit XML.

mod json;
mod junit;
mod sarif;
mod text;

pub use json::render_json;
pub use junit::render_junit;
pub use sarif::render_sarif;
pub use text::render_text;

use riffle_sql::{Location, Span};

/// 1-based line and column of a span's start, with unknown spans reported at 1:1.
fn start_of(span: &Span) -> Location {
    if span.is_unknown() {
        Location::new(1, 1)
    } else {
        span.start
    }
}
