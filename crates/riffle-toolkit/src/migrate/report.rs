//! What a migration (or export) did: every change, every item left for a human, and renderings
//! of it (text, JSON, unified diff).

use std::fmt::Write as _;

use riffle_sql::Span;
use serde::Serialize;
use similar::TextDiff;

/// One rewrite applied to the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// What was rewritten: the `riffle check` code of the feature when it has one
    /// (`connector.kafka`, `option.rocketmq.topic`, `ddl.legacy-watermark`,
    /// `query.group-window.tumble`), else a code of its own (`option.kafka.topic`).
    pub code: String,
    /// One line saying what changed.
    pub message: String,
    /// Where, in the original job.
    pub span: Span,
    /// Why, or what to know about the result (semantic notes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Something the tool could not rewrite exactly; the job keeps it as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManualItem {
    /// What it is about (same codes as [`Change::code`]).
    pub code: String,
    /// One line naming the item.
    pub message: String,
    /// Where, in the original job.
    pub span: Span,
    /// Why it was not rewritten, and what to do.
    pub reason: String,
}

/// The outcome for one job file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobChanges {
    /// Path as given.
    pub path: String,
    /// Rewrites, in source order.
    pub changes: Vec<Change>,
    /// Items left for a human, in source order.
    pub manual: Vec<ManualItem>,
    /// Why the job could not be rewritten at all (its text is left unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The original text.
    #[serde(skip)]
    pub original: String,
    /// The rewritten text (the original when nothing changed or on error).
    #[serde(skip)]
    pub output: String,
}

impl JobChanges {
    /// Whether the output differs from the original.
    pub fn is_changed(&self) -> bool {
        self.original != self.output
    }

    /// A unified diff of original and output, with `a/<path>` and `b/<path>` headers; empty when
    /// nothing changed.
    pub fn unified_diff(&self) -> String {
        if !self.is_changed() {
            return String::new();
        }
        TextDiff::from_lines(&self.original, &self.output)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{}", self.path), &format!("b/{}", self.path))
            .to_string()
    }

    pub(crate) fn sort(&mut self) {
        self.changes.sort_by_key(|c| (c.span.start, c.span.end));
        self.manual.sort_by_key(|m| (m.span.start, m.span.end));
    }
}

/// Renders reports as text: per job, its changes and its items for a human, with line numbers.
pub fn render_text(jobs: &[JobChanges], verb: &str) -> String {
    let mut out = String::new();
    for job in jobs {
        let _ = writeln!(
            out,
            "{}: {} change(s), {} item(s) left for a human{}",
            job.path,
            job.changes.len(),
            job.manual.len(),
            if job.error.is_some() {
                ", not rewritten"
            } else {
                ""
            }
        );
        if let Some(error) = &job.error {
            let _ = writeln!(out, "  error: {error}");
        }
        for c in &job.changes {
            let _ = writeln!(
                out,
                "  {:>4}:{:<3} {verb} {}",
                c.span.start.line, c.span.start.column, c.message
            );
            if let Some(note) = &c.note {
                let _ = writeln!(out, "           note: {note}");
            }
        }
        for m in &job.manual {
            let _ = writeln!(
                out,
                "  {:>4}:{:<3} MANUAL {}",
                m.span.start.line, m.span.start.column, m.message
            );
            let _ = writeln!(out, "           why: {}", m.reason);
        }
    }
    let changed = jobs.iter().filter(|j| j.is_changed()).count();
    let manual: usize = jobs.iter().map(|j| j.manual.len()).sum();
    let failed = jobs.iter().filter(|j| j.error.is_some()).count();
    let _ = writeln!(
        out,
        "{} job(s): {changed} rewritten, {manual} item(s) left for a human, {failed} not rewritten",
        jobs.len()
    );
    out
}

/// Renders reports as pretty JSON: `{"jobs": [...], "summary": {...}}`.
pub fn render_json(jobs: &[JobChanges]) -> String {
    #[derive(Serialize)]
    struct Summary {
        jobs: usize,
        rewritten: usize,
        changes: usize,
        manual: usize,
        failed: usize,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        jobs: &'a [JobChanges],
        summary: Summary,
    }
    let summary = Summary {
        jobs: jobs.len(),
        rewritten: jobs.iter().filter(|j| j.is_changed()).count(),
        changes: jobs.iter().map(|j| j.changes.len()).sum(),
        manual: jobs.iter().map(|j| j.manual.len()).sum(),
        failed: jobs.iter().filter(|j| j.error.is_some()).count(),
    };
    serde_json::to_string_pretty(&Doc { jobs, summary }).unwrap_or_else(|e| {
        // Serializing plain strings and numbers cannot fail; say so if it ever does.
        format!("{{\"error\": \"{e}\"}}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(original: &str, output: &str) -> JobChanges {
        JobChanges {
            path: "j.sql".into(),
            changes: vec![],
            manual: vec![],
            error: None,
            original: original.into(),
            output: output.into(),
        }
    }

    #[test]
    fn diffs_name_both_sides_and_are_empty_without_changes() {
        let j = job("a\nb\n", "a\nc\n");
        let diff = j.unified_diff();
        assert!(diff.starts_with("--- a/j.sql\n+++ b/j.sql\n"), "{diff}");
        assert!(diff.contains("-b\n+c\n"), "{diff}");
        assert_eq!(job("x", "x").unified_diff(), "");
    }

    #[test]
    fn json_has_a_summary() {
        let text = render_json(&[job("a", "b"), job("a", "a")]);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(value["summary"]["rewritten"], 1);
        assert_eq!(value["jobs"][0]["path"], "j.sql");
    }
}
