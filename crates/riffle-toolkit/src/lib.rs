//! Riffle's job toolkit, working on the AST and catalog (never on strings).
//!
//! - [`check`]: what each job uses, classified as supported, needs migration or unsupported, with
//!   errors Flink itself would raise; rendered by [`render`] as text, JSON, SARIF or JUnit.

pub mod check;
pub mod export;
pub mod features;
pub mod migrate;
pub mod render;
pub mod report;

pub use check::{check_all, check_job, JobSource};
pub use report::{Finding, JobReport, StatementSummary, Status, Summary};
