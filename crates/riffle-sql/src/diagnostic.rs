//! Diagnostics shared by every Riffle front-end stage (parse, analysis, check, migrate, export).

use serde::{Deserialize, Serialize};

use crate::span::Span;

/// How serious a diagnostic is. Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational; never fails a check.
    Note,
    /// Something that works but deserves attention (e.g. needs migration).
    Warning,
    /// Something Riffle or Flink rejects.
    Error,
}

/// One finding about a source text, always located by a span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Severity of the finding.
    pub severity: Severity,
    /// Stable machine-readable code, e.g. `parse-error`, `unknown-option`.
    pub code: String,
    /// One-line human message.
    pub message: String,
    /// Where in the source the finding is.
    pub span: Span,
    /// Optional label printed under the caret.
    pub label: Option<String>,
    /// Optional help line (a suggestion, e.g. "did you mean `scan.startup.mode`?").
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with the given code and message at `span`.
    pub fn error(code: impl Into<String>, message: impl Into<String>, span: Span) -> Self {
        Self::new(Severity::Error, code, message, span)
    }

    /// A warning with the given code and message at `span`.
    pub fn warning(code: impl Into<String>, message: impl Into<String>, span: Span) -> Self {
        Self::new(Severity::Warning, code, message, span)
    }

    /// A diagnostic of any severity.
    pub fn new(
        severity: Severity,
        code: impl Into<String>,
        message: impl Into<String>,
        span: Span,
    ) -> Self {
        Self {
            severity,
            code: code.into(),
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    /// Adds a label shown under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}",
            self.span.start.line, self.span.start.column, self.message
        )
    }
}

impl std::error::Error for Diagnostic {}
