//! Flink's Java user-defined functions, run unchanged in an embedded JVM.
//!
//! Nothing here needs a JVM to build: `libjvm` is found and loaded the first time a job calls a
//! Java function ([`locate`]), and a missing JVM is an error of that job only. The JVM's class
//! path holds a small bridge (`java/bridge`) and Riffle's stand-in for the part of Flink's
//! function API a UDF uses at run time (`java/flink-api`); both are compiled from the sources
//! in this crate with the JDK's `javac` into a cache directory on first use ([`classes`]).
//!
//! Calls cross JNI once per batch and argument column ([`columns`]): the bridge decodes the
//! primitive arrays, calls the chosen `eval` overload per row in Java and returns the result
//! column encoded the same way.

#![warn(missing_docs)]

mod aggregate;
pub mod build;
mod classes;
mod columns;
pub mod locate;
mod scalar;
mod table;
mod vm;

pub use aggregate::{JavaAccumulator, JavaAggregateFunction};
pub use scalar::JavaScalarFunction;
pub use table::{JavaTableFunction, TableRows};
pub use vm::function_kind;

/// Why a Java function could not be loaded or called.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct JvmError(pub String);

impl JvmError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Result of JVM operations.
pub type Result<T> = std::result::Result<T, JvmError>;
