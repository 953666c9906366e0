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
//! * runs cases on Riffle's engine ([`run_case`], [`run_suite`]) with a pass / fail (with a
//!   diff) / unsupported (with the feature named) verdict each, used by `riffle compat run` and
//!   by this crate's `conformance` test (the regression ratchet);
//! * renders the compatibility matrix `docs/compatibility.md` from a run ([`render_matrix`]).
//!
//! Parsing and comparing do not depend on the engine: any runner materialises the inputs
//! ([`Case::write_inputs`]), runs the statements from [`Case::statements_with_paths`] with
//! [`Case::effective_config`], and hands the printed rows (or the error) to [`compare`]:
//!
//! ```
//! use riffle_compat::{compare, ActualOutput, Case};
//!
//! let text = "\
//! ## Count per item.
//! --- input t
//! a
//! a
//! --- sql
//! CREATE TABLE t (item STRING) WITH ('connector' = 'filesystem', 'path' = '${t}', 'format' = 'csv');
//! SELECT item, COUNT(*) FROM t GROUP BY item;
//! --- expected (flink 2.3.0)
//! +I[a, 1]
//! -U[a, 1]
//! +U[a, 2]
//! ";
//! let case = Case::parse("aggregation/count.test", text)?;
//! let dir = std::env::temp_dir().join("riffle-compat-doc");
//! std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
//! let statements = case.statements_with_paths(&case.write_inputs(&dir)?)?;
//! assert_eq!(statements.len(), 2);
//! // ... run `statements` with `case.effective_config()` on the engine, then:
//! let actual = ActualOutput::Rows(vec!["+I[a, 1]".into(), "-U[a, 1]".into(), "+U[a, 2]".into()]);
//! let expected = case.expected.as_ref().ok_or("not generated yet")?;
//! let result = compare(expected, &actual);
//! assert!(result.passed(), "{result}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod case;
mod compare;
mod fixtures;
mod float;
mod matrix;
mod row;
mod runner;

pub use case::{
    load_cases, Case, CaseError, CaseOptions, Column, CompareMode, Expected, ExpectedError,
    ExpectedRows, Input, HARNESS_DEFAULTS,
};
pub use compare::{compare, ActualOutput, Check, Comparison, Mismatch};
pub use matrix::{render_matrix, MATRIX_COMMAND, MATRIX_PATH};
pub use row::{PrintedRow, Row, RowKind, RowParseError, Value};
pub use runner::{run_case, run_suite, CaseResult, Outcome, Summary};
