//! The compatibility matrix (`docs/compatibility.md`): a Markdown page generated from a run of
//! the whole suite, counting outcomes per feature area and naming what blocks the unsupported
//! cases.
//!
//! The page depends only on the outcomes (no timings, no paths), so a run over the same cases
//! with the same engine renders it byte for byte the same; that is what lets CI detect a stale
//! copy.

use std::collections::BTreeMap;

use crate::runner::{CaseResult, Outcome, Summary};

/// The one command that regenerates the matrix (from the repository root).
pub const MATRIX_COMMAND: &str =
    "cargo run -p riffle-cli -- compat run compat-tests/ --write-matrix docs/compatibility.md";

/// The matrix's path relative to the repository root.
pub const MATRIX_PATH: &str = "docs/compatibility.md";

/// Renders the matrix for the results of a full run.
pub fn render_matrix(results: &[CaseResult]) -> String {
    let mut out = String::new();
    out.push_str("# Flink compatibility matrix\n\n");
    out.push_str(&format!(
        "_Generated from a run of the conformance suite; do not edit. Regenerate with \
         `{MATRIX_COMMAND}`. CI (`cargo test -p riffle-compat --test conformance`) fails when \
         this file is stale._\n\n"
    ));
    out.push_str(
        "How Riffle's engine does on the conformance suite in `compat-tests/`: every case is a \
         Flink SQL job whose expected output was produced by real Apache Flink 2.3. A case \
         **passes** when Riffle's output matches Flink's under the suite's comparison rules \
         (`compat-tests/README.md`), **fails** when it differs, and is **unsupported** when \
         Riffle rejects the job up front, naming the feature it lacks.\n\n## By feature area\n\n",
    );
    out.push_str("| area | cases | passed | failed | unsupported |\n");
    out.push_str("|---|---:|---:|---:|---:|\n");
    let mut areas: BTreeMap<&str, Summary> = BTreeMap::new();
    for r in results {
        areas.entry(r.area.as_str()).or_default().add(&r.outcome);
    }
    for (area, s) in &areas {
        out.push_str(&row(&format!("`{area}`"), s));
    }
    out.push_str(&row("**total**", &Summary::of(results)));

    let mut blockers: BTreeMap<String, usize> = BTreeMap::new();
    for r in results {
        if let Outcome::Unsupported { feature } = &r.outcome {
            *blockers.entry(feature_title(feature)).or_default() += 1;
        }
    }
    if !blockers.is_empty() {
        out.push_str("\n## Unsupported features\n\n");
        out.push_str("What the unsupported cases stop at, most cases first.\n\n");
        out.push_str("| feature | cases blocked |\n|---|---:|\n");
        let mut sorted: Vec<(String, usize)> = blockers.into_iter().collect();
        sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (feature, count) in sorted {
            out.push_str(&format!("| {feature} | {count} |\n"));
        }
    }

    let failing: Vec<&str> = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
        .map(|r| r.id.as_str())
        .collect();
    if !failing.is_empty() {
        out.push_str("\n## Failing cases\n\n");
        out.push_str(
            "Run `riffle compat run compat-tests/ --filter <id>` to see each one's diff.\n\n",
        );
        for id in failing {
            out.push_str(&format!("* `{id}`\n"));
        }
    }
    out
}

fn row(label: &str, s: &Summary) -> String {
    format!(
        "| {label} | {} | {} | {} | {} |\n",
        s.total(),
        s.passed,
        s.failed,
        s.unsupported
    )
}

/// Longest feature name shown; longer ones (e.g. a parser's debug dump) are cut.
const MAX_FEATURE_CHARS: usize = 120;

/// A feature name fit for one table cell: first line only, pipes escaped, cut when too long.
fn feature_title(feature: &str) -> String {
    let line = feature.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(MAX_FEATURE_CHARS).collect();
    if line.chars().count() > MAX_FEATURE_CHARS {
        title.push('…');
    }
    title.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            id: id.into(),
            area: id.split('/').next().unwrap_or_default().into(),
            outcome,
        }
    }

    fn unsupported(feature: &str) -> Outcome {
        Outcome::Unsupported {
            feature: feature.into(),
        }
    }

    #[test]
    fn counts_per_area_with_blockers_and_failures() {
        let results = vec![
            result("joins/inner", Outcome::Passed { notes: vec![] }),
            result(
                "joins/temporal",
                unsupported("FOR SYSTEM_TIME AS OF (temporal joins)"),
            ),
            result("over/rows", unsupported("OVER windows")),
            result("over/range", unsupported("OVER windows")),
            result(
                "windows/tumble",
                Outcome::Failed {
                    report: "diff".into(),
                },
            ),
        ];
        insta::assert_snapshot!(render_matrix(&results));
    }

    #[test]
    fn long_or_multiline_features_fit_a_cell() {
        assert_eq!(feature_title("a | b\nmore"), "a \\| b");
        let long = "x".repeat(200);
        assert_eq!(feature_title(&long).chars().count(), MAX_FEATURE_CHARS + 1);
    }
}
