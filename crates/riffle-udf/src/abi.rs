//! The C ABI between Riffle and a function library (version [`ABI_VERSION`]).
//!
//! A library built with [`export!`](crate::export) exports four C functions:
//!
//! | symbol | what |
//! |---|---|
//! | `riffle_udf_abi_version() -> u32` | [`ABI_VERSION`] |
//! | `riffle_udf_describe(out: *mut Buffer)` | the [descriptions](crate::codec::Description) of its functions |
//! | `riffle_udf_call(name, name_len, input, input_len, out: *mut Buffer) -> i32` | runs a function on a batch of argument rows: `0` and the result batch, or `1` and a UTF-8 error message |
//! | `riffle_udf_free(Buffer)` | frees a buffer the library returned |
//!
//! A scalar or table function's input is one batch of argument rows. A scalar function's result
//! batch has one column; a table function's has the index of the argument row (`BIGINT`) first,
//! then the output columns, rows grouped by argument row in order.
//!
//! An aggregate function's input is three batches: the accumulator (no row: start from
//! `create_accumulator`; or one row of its fields), the rows to apply in order (each a
//! `BOOLEAN` — true to accumulate, false to retract — then the arguments), and accumulators
//! to merge into it. Its result batch is one row: the value, then the new accumulator.
//!
//! Panics in a function are caught and returned as errors.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::codec::{Description, Kind, Reader, Writer};
use crate::{AggregateFunction, Function, Library, Value};

/// Version of this ABI (2 added aggregate functions); Riffle refuses libraries of another
/// version.
pub const ABI_VERSION: u32 = 2;

/// Bytes owned by the library that allocated them (freed with `riffle_udf_free`).
#[repr(C)]
#[derive(Debug)]
pub struct Buffer {
    /// Start of the bytes.
    pub ptr: *mut u8,
    /// Number of bytes.
    pub len: usize,
    /// Allocated capacity.
    pub cap: usize,
}

impl Buffer {
    /// An empty buffer (nothing to free).
    pub fn empty() -> Self {
        Self {
            ptr: std::ptr::null_mut(),
            len: 0,
            cap: 0,
        }
    }

    fn from_vec(v: Vec<u8>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        }
    }
}

/// The descriptions of `library`'s functions.
pub fn descriptions(library: &Library) -> Vec<Description> {
    library
        .functions
        .iter()
        .map(|(name, f)| match f {
            Function::Scalar(s) => {
                let sig = s.signature();
                Description {
                    name: name.clone(),
                    kind: Kind::Scalar,
                    args: sig.args,
                    columns: vec![(name.clone(), sig.result)],
                    accumulator: Vec::new(),
                }
            }
            Function::Table(t) => {
                let sig = t.signature();
                Description {
                    name: name.clone(),
                    kind: Kind::Table,
                    args: sig.args,
                    columns: sig.columns,
                    accumulator: Vec::new(),
                }
            }
            Function::Aggregate(a) => {
                let sig = a.signature();
                Description {
                    name: name.clone(),
                    kind: Kind::Aggregate,
                    args: sig.args,
                    columns: vec![(name.clone(), sig.result)],
                    accumulator: sig.accumulator,
                }
            }
        })
        .collect()
}

/// Implements `riffle_udf_describe`.
///
/// # Safety
/// `out` must be valid for a write.
pub unsafe fn describe(library: &Library, out: *mut Buffer) {
    let mut w = Writer::default();
    w.descriptions(&descriptions(library));
    // SAFETY: the caller passes a writable Buffer.
    unsafe { out.write(Buffer::from_vec(w.0)) };
}

/// Runs function `name` on its encoded input: the encoded result batch.
pub fn run(library: &Library, name: &str, input: &[u8]) -> Result<Vec<u8>, String> {
    let Some(function) = library.functions.get(name) else {
        return Err(format!("the library has no function '{name}'"));
    };
    let mut input = Reader::new(input);
    let mut out = Vec::new();
    let columns = match function {
        Function::Scalar(f) => {
            for row in input.batch()? {
                out.push(vec![f.eval(&row)?]);
            }
            1
        }
        Function::Table(f) => {
            let width = f.signature().columns.len();
            let mut produced = Vec::new();
            for (i, row) in input.batch()?.iter().enumerate() {
                produced.clear();
                f.eval(row, &mut produced)?;
                for mut r in produced.drain(..) {
                    if r.len() != width {
                        return Err(format!(
                            "table function '{name}' emitted a row of {} values for {width} columns",
                            r.len()
                        ));
                    }
                    r.insert(0, Value::BigInt(i as i64));
                    out.push(r);
                }
            }
            width + 1
        }
        Function::Aggregate(f) => {
            let row = aggregate(f.as_ref(), &mut input)?;
            let width = row.len();
            out.push(row);
            width
        }
    };
    let mut w = Writer::default();
    w.batch(&out, columns);
    Ok(w.0)
}

/// Applies an aggregate call's input (see the module docs): the value, then the accumulator.
fn aggregate(f: &dyn AggregateFunction, input: &mut Reader<'_>) -> Result<Vec<Value>, String> {
    let width = f.signature().accumulator.len();
    let mut acc = match input.batch()?.pop() {
        Some(acc) => acc,
        None => f.create_accumulator(),
    };
    if acc.len() != width {
        return Err(format!(
            "an accumulator of {} values for {width} accumulator fields",
            acc.len()
        ));
    }
    for row in input.batch()? {
        match row.split_first() {
            Some((Value::Boolean(true), args)) => f.accumulate(&mut acc, args)?,
            Some((Value::Boolean(false), args)) => f.retract(&mut acc, args)?,
            _ => return Err("an aggregate row without its accumulate/retract flag".into()),
        }
    }
    for other in input.batch()? {
        f.merge(&mut acc, &other)?;
    }
    let mut out = Vec::with_capacity(width + 1);
    out.push(f.get_value(&acc)?);
    out.extend(acc);
    Ok(out)
}

/// Implements `riffle_udf_call`.
///
/// # Safety
/// `name` and `input` must be valid for reads of their lengths, `out` for a write.
pub unsafe fn call(
    library: &Library,
    name: *const u8,
    name_len: usize,
    input: *const u8,
    input_len: usize,
    out: *mut Buffer,
) -> i32 {
    // SAFETY: the caller's contract.
    let (name, input) = unsafe {
        (
            std::slice::from_raw_parts(name, name_len),
            std::slice::from_raw_parts(input, input_len),
        )
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let name = std::str::from_utf8(name).map_err(|_| "function name is not UTF-8")?;
        run(library, name, input)
    }))
    .unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(format!("panicked: {message}"))
    });
    let (code, bytes) = match result {
        Ok(bytes) => (0, bytes),
        Err(message) => (1, message.into_bytes()),
    };
    // SAFETY: the caller passes a writable Buffer.
    unsafe { out.write(Buffer::from_vec(bytes)) };
    code
}

/// Implements `riffle_udf_free`.
///
/// # Safety
/// `buffer` must come from [`describe`] or [`call`] of this library, freed once.
pub unsafe fn free(buffer: Buffer) {
    if !buffer.ptr.is_null() {
        // SAFETY: the buffer was made by Buffer::from_vec in this library.
        drop(unsafe { Vec::from_raw_parts(buffer.ptr, buffer.len, buffer.cap) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScalarFunction, Signature, SqlType, TableFunction, TableSignature};

    struct Len;

    impl ScalarFunction for Len {
        fn signature(&self) -> Signature {
            Signature::new(vec![SqlType::String], SqlType::Int)
        }

        fn eval(&self, args: &[Value]) -> Result<Value, String> {
            Ok(match args {
                [Value::String(s)] => Value::Int(s.len() as i32),
                _ => Value::Null,
            })
        }
    }

    struct Chars;

    impl TableFunction for Chars {
        fn signature(&self) -> TableSignature {
            TableSignature::new(vec![SqlType::String], vec![("c", SqlType::String)])
        }

        fn eval(&self, args: &[Value], out: &mut Vec<Vec<Value>>) -> Result<(), String> {
            if let [Value::String(s)] = args {
                if s == "boom" {
                    panic!("boom");
                }
                out.extend(s.chars().map(|c| vec![Value::String(c.to_string())]));
            }
            Ok(())
        }
    }

    /// `total(x BIGINT)`: the sum of non-NULL values, kept with their count (no merge).
    struct Total;

    impl AggregateFunction for Total {
        fn signature(&self) -> crate::AggregateSignature {
            crate::AggregateSignature::new(
                vec![SqlType::BigInt],
                SqlType::BigInt,
                vec![SqlType::BigInt, SqlType::BigInt],
            )
        }

        fn create_accumulator(&self) -> Vec<Value> {
            vec![Value::BigInt(0), Value::BigInt(0)]
        }

        fn accumulate(&self, acc: &mut [Value], args: &[Value]) -> Result<(), String> {
            if let ([Value::BigInt(sum), Value::BigInt(n)], [Value::BigInt(x)]) = (acc, args) {
                *sum += x;
                *n += 1;
            }
            Ok(())
        }

        fn retract(&self, acc: &mut [Value], args: &[Value]) -> Result<(), String> {
            if let ([Value::BigInt(sum), Value::BigInt(n)], [Value::BigInt(x)]) = (acc, args) {
                *sum -= x;
                *n -= 1;
            }
            Ok(())
        }

        fn get_value(&self, acc: &[Value]) -> Result<Value, String> {
            Ok(match acc {
                [_, Value::BigInt(0)] => Value::Null,
                [sum, _] => sum.clone(),
                _ => Value::Null,
            })
        }
    }

    fn library() -> Library {
        Library::new()
            .scalar("len", Len)
            .table("chars", Chars)
            .aggregate("total", Total)
    }

    fn call_encoded(name: &str, rows: &[Vec<Value>]) -> (i32, Vec<u8>) {
        let mut w = Writer::default();
        w.batch(rows, 1);
        call_raw(name, &w.0)
    }

    fn call_raw(name: &str, input: &[u8]) -> (i32, Vec<u8>) {
        let mut out = Buffer::empty();
        // SAFETY: valid slices and a local buffer.
        let code = unsafe {
            call(
                &library(),
                name.as_ptr(),
                name.len(),
                input.as_ptr(),
                input.len(),
                &mut out,
            )
        };
        // SAFETY: the buffer came from `call`; copied before freeing.
        let bytes = unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec();
        // SAFETY: freed once.
        unsafe { free(out) };
        (code, bytes)
    }

    #[test]
    fn table_rows_carry_their_argument_row() {
        let rows = vec![
            vec![Value::String("ab".into())],
            vec![Value::Null],
            vec![Value::String("c".into())],
        ];
        let (code, bytes) = call_encoded("chars", &rows);
        assert_eq!(code, 0);
        let out = Reader::new(&bytes).batch().unwrap();
        let owners: Vec<&Value> = out.iter().map(|r| &r[0]).collect();
        assert_eq!(
            owners,
            [&Value::BigInt(0), &Value::BigInt(0), &Value::BigInt(2)]
        );
    }

    #[test]
    fn a_panic_is_an_error() {
        let (code, bytes) = call_encoded("chars", &[vec![Value::String("boom".into())]]);
        assert_eq!(code, 1);
        assert!(String::from_utf8(bytes).unwrap().contains("boom"));
    }

    #[test]
    fn scalar_results_and_descriptions() {
        let (code, bytes) = call_encoded("len", &[vec![Value::String("abc".into())]]);
        assert_eq!(code, 0);
        assert_eq!(
            Reader::new(&bytes).batch().unwrap(),
            vec![vec![Value::Int(3)]]
        );
        let d = descriptions(&library());
        assert_eq!(d.len(), 3);
        assert_eq!(d[1].kind, Kind::Scalar);
        assert_eq!(d[2].kind, Kind::Aggregate);
        assert_eq!(d[2].accumulator, [SqlType::BigInt, SqlType::BigInt]);
    }

    /// One aggregate call: `acc` (none: a new one), `(add, x)` rows; the value and accumulator.
    fn total(acc: Option<Vec<Value>>, rows: &[(bool, i64)]) -> Result<Vec<Value>, String> {
        let mut w = Writer::default();
        let acc: Vec<Vec<Value>> = acc.into_iter().collect();
        w.batch(&acc, 2);
        let rows: Vec<Vec<Value>> = rows
            .iter()
            .map(|(add, x)| vec![Value::Boolean(*add), Value::BigInt(*x)])
            .collect();
        w.batch(&rows, 2);
        w.batch(&[], 2);
        let (code, bytes) = call_raw("total", &w.0);
        if code != 0 {
            return Err(String::from_utf8_lossy(&bytes).into_owned());
        }
        let mut out = Reader::new(&bytes).batch()?;
        out.pop().ok_or_else(|| "no result row".to_string())
    }

    #[test]
    fn aggregates_accumulate_and_retract_on_the_accumulator_they_are_given() {
        let empty = total(None, &[]).unwrap();
        assert_eq!(empty, [Value::Null, Value::BigInt(0), Value::BigInt(0)]);
        let two = total(None, &[(true, 5), (true, 7)]).unwrap();
        assert_eq!(
            two,
            [Value::BigInt(12), Value::BigInt(12), Value::BigInt(2)]
        );
        let one = total(Some(two[1..].to_vec()), &[(false, 5)]).unwrap();
        assert_eq!(one, [Value::BigInt(7), Value::BigInt(7), Value::BigInt(1)]);
    }

    #[test]
    fn an_aggregate_without_merge_says_so() {
        let mut w = Writer::default();
        w.batch(&[], 2);
        w.batch(&[], 2);
        w.batch(&[vec![Value::BigInt(1), Value::BigInt(1)]], 2);
        let (code, bytes) = call_raw("total", &w.0);
        assert_eq!(code, 1);
        assert!(String::from_utf8(bytes).unwrap().contains("merge"));
    }
}
