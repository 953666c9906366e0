//! Riffle's Flink conformance suite as a library.
//!
//! The cases live in `compat-tests/cases/<area>/<name>.test`; their expected sections were
//! produced by running real Apache Flink (see `compat-tests/README.md` for the file format and
//! `compat-tests/oracle/` for the program that writes them). This crate
//!
//! * parses a case file into a [`Case`] ([`Case::parse`], [`load_cases`]), with `file:line`
//!   errors for malformed files;
//! * parses Flink's printed row format (`+I[a, 1, null, [1, 2], {k=v}, +I[nested]]`) into a
//!   [`Row`] ([`Row::parse`], [`PrintedRow::parse`]);
//! * compares an engine's output with a case's expectation ([`compare`]) following the rules
//!   documented on that function, with a unified diff when they differ.
//!
//! It has no dependency on an engine: a runner materialises the inputs, runs the statements from
//! [`Case::statements`] with [`Case::effective_config`], and hands the printed rows (or the
//! error) to [`compare`].

mod case;
mod compare;
mod row;

pub use case::{
    load_cases, Case, CaseError, CaseOptions, Column, CompareMode, Expected, ExpectedError,
    ExpectedRows, Input, HARNESS_DEFAULTS,
};
pub use compare::{compare, ActualOutput, Check, Comparison, Mismatch};
pub use row::{PrintedRow, Row, RowKind, RowParseError, Value};
