//! The check report: what each job uses and how Riffle stands on it.

use riffle_sql::Span;
use serde::Serialize;

/// How Riffle stands on one finding. Ordered from best to worst, so the worst of a set is its `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Riffle runs it as Flink does.
    Supported,
    /// Riffle runs it after `riffle migrate` rewrites it (the finding says how).
    NeedsMigration,
    /// Riffle does not run it (the finding names the feature and why).
    Unsupported,
    /// The job is wrong: a parse error or something Flink itself rejects.
    Error,
}

impl Status {
    /// Lower-case, hyphenated name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Supported => "supported",
            Status::NeedsMigration => "needs-migration",
            Status::Unsupported => "unsupported",
            Status::Error => "error",
        }
    }
}

/// One thing a job uses (a feature, connector, format, function, option) or one error in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Where Riffle stands on it.
    pub status: Status,
    /// Stable identifier: a feature id (`query.window-tvf.tumble`, `connector.kafka`,
    /// `function.json_value`) or an error code (`parse-error`, `unknown-option`).
    pub code: String,
    /// One-line message naming the feature.
    pub message: String,
    /// Where in the job it is.
    pub span: Span,
    /// The rewrite `riffle migrate` applies, a suggestion, or the reason it is unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Index of the statement it belongs to (0-based), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<usize>,
}

/// A one-line description of a statement of the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatementSummary {
    /// Short description, e.g. `CREATE TABLE orders` or `INSERT INTO sink`.
    pub description: String,
    /// Where the statement is.
    pub span: Span,
    /// The worst status among its findings (`supported` when it has none).
    pub status: Status,
}

/// The report for one job file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobReport {
    /// Path as given on the command line.
    pub path: String,
    /// The worst status in the job.
    pub status: Status,
    /// Statements in order.
    pub statements: Vec<StatementSummary>,
    /// Findings in source order.
    pub findings: Vec<Finding>,
    /// The job's text, for rendering snippets.
    #[serde(skip)]
    pub source: String,
}

impl JobReport {
    /// Number of findings with the given status.
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }
}

/// Totals over many jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Jobs checked.
    pub jobs: usize,
    /// Jobs whose worst status is `supported`.
    pub supported: usize,
    /// Jobs whose worst status is `needs-migration`.
    pub needs_migration: usize,
    /// Jobs whose worst status is `unsupported`.
    pub unsupported: usize,
    /// Jobs with errors.
    pub error: usize,
}

impl Summary {
    /// Counts jobs by their worst status.
    pub fn of(jobs: &[JobReport]) -> Self {
        let mut s = Summary {
            jobs: jobs.len(),
            ..Summary::default()
        };
        for job in jobs {
            match job.status {
                Status::Supported => s.supported += 1,
                Status::NeedsMigration => s.needs_migration += 1,
                Status::Unsupported => s.unsupported += 1,
                Status::Error => s.error += 1,
            }
        }
        s
    }
}
