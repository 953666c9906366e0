//! Riffle's Flink SQL front-end.
//!
//! `riffle-sql` turns Flink/Blink SQL scripts into a typed AST ([`ast::Script`]) whose every statement,
//! column, option and watermark keeps its source [`Span`]. DDL, statement sets and Flink data types use
//! Riffle's own nodes; queries and expressions reuse sqlparser's AST (parsed with the
//! [`dialect::FlinkDialect`]), so the engine can hand them to DataFusion unchanged.
//!
//! Errors never panic: every failure is a [`Diagnostic`] with a span.
//!
//! ```
//! let parsed = riffle_sql::parse_script(
//!     "CREATE TABLE t (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECONDS)
//!      WITH ('connector' = 'datagen');
//!      SELECT id FROM t;",
//! );
//! assert!(parsed.diagnostics.is_empty());
//! assert_eq!(parsed.script.statements.len(), 2);
//! ```

// The public API returns `Diagnostic` (a few strings and a span) by value on purpose: callers
// collect and render them; errors are rare, so boxing would buy nothing.
#![allow(clippy::result_large_err)]

pub mod ast;
pub mod diagnostic;
pub mod dialect;
mod hints;
mod match_within;
mod parser;
pub mod span;
mod types;

pub use diagnostic::{Diagnostic, Severity};
pub use dialect::{cast_data_type, parse_expr};
pub use hints::INVALID_HINT;
pub use parser::{ParsedScript, PARSE_ERROR};
pub use span::{Location, Span};

/// Parses a Flink SQL script (statements separated by `;`).
///
/// A statement that fails to parse is reported as a `parse-error` diagnostic located at the
/// offending token, and parsing resumes after the next `;`, so one script can report several
/// errors. Never panics, whatever the input.
pub fn parse_script(sql: &str) -> ParsedScript {
    parser::parse_script(sql)
}

/// Parses one Flink data type, e.g. `ROW<a INT, b ARRAY<STRING>> NOT NULL`.
pub fn parse_data_type(text: &str) -> Result<ast::DataType, Diagnostic> {
    let mut p = parser::FlinkParser::new(text).map_err(|d| *d)?;
    p.parse_standalone(types::parse_type)
}
