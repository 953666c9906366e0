//! JSON: the report as data, one object per job plus a summary.

use serde::Serialize;

use crate::report::{JobReport, Summary};

#[derive(Serialize)]
struct JsonReport<'a> {
    tool: &'static str,
    version: &'static str,
    summary: Summary,
    jobs: &'a [JobReport],
}

/// Renders the report as pretty-printed JSON.
pub fn render_json(jobs: &[JobReport]) -> String {
    let report = JsonReport {
        tool: "riffle",
        version: env!("CARGO_PKG_VERSION"),
        summary: Summary::of(jobs),
        jobs,
    };
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
}
