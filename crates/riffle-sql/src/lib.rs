//! Riffle's Flink SQL front-end.
//!
//! `riffle-sql` turns Flink/Blink SQL scripts into a typed AST ([`ast::Script`]) whose every statement,
//! column, option and watermark keeps its source [`Span`]. DDL, statement sets and Flink data types use
//! Riffle's own nodes; queries and expressions reuse sqlparser's AST (parsed with the
//! [`dialect::FlinkDialect`]), so the engine can hand them to DataFusion unchanged.
//!
//! Errors never panic: every failure is a [`Diagnostic`] with a span.

pub mod ast;
pub mod diagnostic;
pub mod span;

pub use diagnostic::{Diagnostic, Severity};
pub use span::{Location, Span};
