//! Native Rust user-defined functions (scalar, table and aggregate) for Riffle.
//!
//! A function library is a Rust crate built as a `cdylib` that depends on this crate, registers
//! its functions in a [`Library`] and exports it with [`export!`]:
//!
//! ```
//! use riffle_udf::{Library, ScalarFunction, Signature, SqlType, Value};
//!
//! /// `plus_one(x BIGINT) -> BIGINT`: NULL stays NULL.
//! struct PlusOne;
//!
//! impl ScalarFunction for PlusOne {
//!     fn signature(&self) -> Signature {
//!         Signature::new(vec![SqlType::BigInt], SqlType::BigInt)
//!     }
//!
//!     fn eval(&self, args: &[Value]) -> Result<Value, String> {
//!         Ok(match args {
//!             [Value::BigInt(x)] => Value::BigInt(x + 1),
//!             _ => Value::Null,
//!         })
//!     }
//! }
//!
//! fn library() -> Library {
//!     Library::new().scalar("plus_one", PlusOne)
//! }
//!
//! riffle_udf::export!(library);
//! # fn main() {}
//! ```
//!
//! A job then declares each function with the library's path:
//!
//! ```sql
//! CREATE FUNCTION plus_one AS 'plus_one' LANGUAGE RUST USING JAR '/path/libmy_udfs.so';
//! ```
//!
//! Scalar functions run in any expression; table functions in `LATERAL TABLE(f(x))`;
//! aggregate functions ([`AggregateFunction`]) in group and window aggregations, with an
//! accumulator of SQL values that Riffle keeps (and checkpoints) for each group. Values
//! have the SQL types of [`SqlType`]; arguments are cast to the declared types as for a
//! built-in function. Calls cross the library boundary once per batch of rows through a small
//! C ABI ([`abi`]) with a byte encoding of the values ([`codec`]), so the library and Riffle
//! need not be built by the same compiler.

#![warn(missing_docs)]

pub mod abi;
pub mod codec;
#[cfg(feature = "host")]
pub mod host;

use std::collections::BTreeMap;

/// The SQL types a native function's arguments and results can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlType {
    /// `BOOLEAN`
    Boolean,
    /// `INT`
    Int,
    /// `BIGINT`
    BigInt,
    /// `DOUBLE`
    Double,
    /// `STRING`
    String,
    /// `BYTES`
    Bytes,
}

impl SqlType {
    /// The type as Flink SQL writes it.
    pub fn sql_name(self) -> &'static str {
        match self {
            SqlType::Boolean => "BOOLEAN",
            SqlType::Int => "INT",
            SqlType::BigInt => "BIGINT",
            SqlType::Double => "DOUBLE",
            SqlType::String => "STRING",
            SqlType::Bytes => "BYTES",
        }
    }
}

/// A SQL value (any type may be NULL).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A `BOOLEAN`.
    Boolean(bool),
    /// An `INT`.
    Int(i32),
    /// A `BIGINT`.
    BigInt(i64),
    /// A `DOUBLE`.
    Double(f64),
    /// A `STRING`.
    String(String),
    /// A `BYTES` value.
    Bytes(Vec<u8>),
}

impl Value {
    /// Whether the value is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value's type (`None` for NULL).
    pub fn sql_type(&self) -> Option<SqlType> {
        Some(match self {
            Value::Null => return None,
            Value::Boolean(_) => SqlType::Boolean,
            Value::Int(_) => SqlType::Int,
            Value::BigInt(_) => SqlType::BigInt,
            Value::Double(_) => SqlType::Double,
            Value::String(_) => SqlType::String,
            Value::Bytes(_) => SqlType::Bytes,
        })
    }
}

/// The argument and result types of a scalar function (results are nullable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Argument types, in order.
    pub args: Vec<SqlType>,
    /// Result type.
    pub result: SqlType,
}

impl Signature {
    /// A signature of `args` returning `result`.
    pub fn new(args: Vec<SqlType>, result: SqlType) -> Self {
        Self { args, result }
    }
}

/// The argument types and output columns of a table function (columns are nullable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSignature {
    /// Argument types, in order.
    pub args: Vec<SqlType>,
    /// Output columns: name and type.
    pub columns: Vec<(String, SqlType)>,
}

impl TableSignature {
    /// A table function of `args` producing `columns`.
    pub fn new(args: Vec<SqlType>, columns: Vec<(&str, SqlType)>) -> Self {
        Self {
            args,
            columns: columns
                .into_iter()
                .map(|(n, t)| (n.to_string(), t))
                .collect(),
        }
    }
}

/// A function of one row of arguments to one value.
pub trait ScalarFunction: Send + Sync + 'static {
    /// Argument and result types.
    fn signature(&self) -> Signature;

    /// The result for one row; `args` have the declared types or are NULL. An error fails the
    /// job with the message.
    fn eval(&self, args: &[Value]) -> Result<Value, String>;
}

/// A function of one row of arguments to zero or more rows.
pub trait TableFunction: Send + Sync + 'static {
    /// Argument types and output columns.
    fn signature(&self) -> TableSignature;

    /// Appends the rows for one row of arguments to `out` (each with one value per output
    /// column). An error fails the job with the message.
    fn eval(&self, args: &[Value], out: &mut Vec<Vec<Value>>) -> Result<(), String>;
}

/// The argument, result and accumulator types of an aggregate function (the result is
/// nullable; so is every accumulator field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateSignature {
    /// Argument types, in order.
    pub args: Vec<SqlType>,
    /// Result type.
    pub result: SqlType,
    /// The types of the accumulator's fields. Riffle keeps the accumulator as these values
    /// (so it is part of checkpoints) and hands it to the function with each call.
    pub accumulator: Vec<SqlType>,
}

impl AggregateSignature {
    /// An aggregate of `args` returning `result`, accumulating into fields of `accumulator`.
    pub fn new(args: Vec<SqlType>, result: SqlType, accumulator: Vec<SqlType>) -> Self {
        Self {
            args,
            result,
            accumulator,
        }
    }
}

/// A function of the rows of a group to one value, as Flink's `AggregateFunction`: an
/// accumulator starts empty, rows are accumulated (and retracted, on an updating input), and
/// the value is read from it whenever the group's result is emitted.
pub trait AggregateFunction: Send + Sync + 'static {
    /// Argument, result and accumulator types.
    fn signature(&self) -> AggregateSignature;

    /// The accumulator of an empty group: one value per accumulator field.
    fn create_accumulator(&self) -> Vec<Value>;

    /// Adds one row of arguments to `acc`.
    fn accumulate(&self, acc: &mut [Value], args: &[Value]) -> Result<(), String>;

    /// Removes one row of arguments accumulated before (needed on updating inputs and for
    /// bounded OVER windows). The default fails the job, naming the missing method.
    fn retract(&self, _acc: &mut [Value], _args: &[Value]) -> Result<(), String> {
        Err("the function does not implement retract (needed for an updating input)".into())
    }

    /// Adds the rows of accumulator `other` to `acc` (needed when session windows merge).
    /// The default fails the job, naming the missing method.
    fn merge(&self, _acc: &mut [Value], _other: &[Value]) -> Result<(), String> {
        Err("the function does not implement merge (needed to merge session windows)".into())
    }

    /// The result for accumulator `acc`.
    fn get_value(&self, acc: &[Value]) -> Result<Value, String>;
}

/// One registered function.
pub(crate) enum Function {
    Scalar(Box<dyn ScalarFunction>),
    Table(Box<dyn TableFunction>),
    Aggregate(Box<dyn AggregateFunction>),
}

/// The functions a dynamic library exports, by name.
#[derive(Default)]
pub struct Library {
    pub(crate) functions: BTreeMap<String, Function>,
}

impl Library {
    /// An empty library.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a scalar function under `name` (the name `CREATE FUNCTION ... AS 'name'` uses).
    pub fn scalar(mut self, name: &str, function: impl ScalarFunction) -> Self {
        self.functions
            .insert(name.to_string(), Function::Scalar(Box::new(function)));
        self
    }

    /// Adds a table function under `name`.
    pub fn table(mut self, name: &str, function: impl TableFunction) -> Self {
        self.functions
            .insert(name.to_string(), Function::Table(Box::new(function)));
        self
    }

    /// Adds an aggregate function under `name`.
    pub fn aggregate(mut self, name: &str, function: impl AggregateFunction) -> Self {
        self.functions
            .insert(name.to_string(), Function::Aggregate(Box::new(function)));
        self
    }
}

/// Exports the [`Library`] a function returns as this `cdylib`'s functions (the C entry
/// points of [`abi`]). Use it once per library crate.
#[macro_export]
macro_rules! export {
    ($library:path) => {
        fn __riffle_udf_library() -> &'static $crate::Library {
            static LIBRARY: ::std::sync::OnceLock<$crate::Library> = ::std::sync::OnceLock::new();
            LIBRARY.get_or_init($library)
        }

        /// ABI version of the library (see `riffle_udf::abi`).
        #[unsafe(no_mangle)]
        pub extern "C" fn riffle_udf_abi_version() -> u32 {
            $crate::abi::ABI_VERSION
        }

        /// Writes the description of every function into `out`.
        ///
        /// # Safety
        /// `out` must point to a writable buffer struct.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn riffle_udf_describe(out: *mut $crate::abi::Buffer) {
            // SAFETY: forwarded from the caller's contract.
            unsafe { $crate::abi::describe(__riffle_udf_library(), out) }
        }

        /// Calls a function on an encoded batch (0: `out` holds the result; else an error).
        ///
        /// # Safety
        /// The pointers must be valid for the given lengths; `out` writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn riffle_udf_call(
            name: *const u8,
            name_len: usize,
            input: *const u8,
            input_len: usize,
            out: *mut $crate::abi::Buffer,
        ) -> i32 {
            // SAFETY: forwarded from the caller's contract.
            unsafe {
                $crate::abi::call(
                    __riffle_udf_library(),
                    name,
                    name_len,
                    input,
                    input_len,
                    out,
                )
            }
        }

        /// Frees a buffer this library returned.
        ///
        /// # Safety
        /// `buffer` must come from this library and be freed once.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn riffle_udf_free(buffer: $crate::abi::Buffer) {
            // SAFETY: forwarded from the caller's contract.
            unsafe { $crate::abi::free(buffer) }
        }
    };
}
