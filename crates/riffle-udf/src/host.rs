//! The loading side, used by Riffle: opens a function library, checks its ABI version, reads
//! its descriptions and calls its functions on Arrow columns.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type};

use crate::abi::{Buffer, ABI_VERSION};
use crate::codec::{Description, Reader, Writer};
use crate::{SqlType, Value};

type Describe = unsafe extern "C" fn(*mut Buffer);
type Call = unsafe extern "C" fn(*const u8, usize, *const u8, usize, *mut Buffer) -> i32;
type Free = unsafe extern "C" fn(Buffer);

/// An opened function library.
pub struct NativeLibrary {
    path: String,
    call: Call,
    free: Free,
    functions: Vec<Description>,
    // Keeps the code the function pointers point into loaded; dropped last.
    _library: libloading::Library,
}

impl std::fmt::Debug for NativeLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeLibrary")
            .field("path", &self.path)
            .field("functions", &self.functions)
            .finish()
    }
}

impl NativeLibrary {
    /// Opens the library at `path` (once per process; later calls share it).
    pub fn open(path: &str) -> Result<Arc<Self>, String> {
        static OPEN: OnceLock<Mutex<HashMap<String, Arc<NativeLibrary>>>> = OnceLock::new();
        let mut open = match OPEN.get_or_init(Default::default).lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(l) = open.get(path) {
            return Ok(l.clone());
        }
        let library = Arc::new(Self::load(path)?);
        open.insert(path.to_string(), library.clone());
        Ok(library)
    }

    fn load(path: &str) -> Result<Self, String> {
        let file = path.strip_prefix("file://").unwrap_or(path);
        if !Path::new(file).is_file() {
            return Err(format!("Rust function library {path} not found"));
        }
        let error = |e: libloading::Error| format!("cannot load Rust function library {path}: {e}");
        // SAFETY: loading runs the library's initializers; a Riffle function library is code
        // the job's author chose to run, as a Java jar is.
        let library = unsafe { libloading::Library::new(file) }.map_err(error)?;
        // SAFETY: the symbols have the types of `riffle_udf::export!`; the version is checked
        // before any other symbol is used.
        unsafe {
            let version: libloading::Symbol<unsafe extern "C" fn() -> u32> = library
                .get(b"riffle_udf_abi_version")
                .map_err(|_| format!("{path} is no Riffle function library (no riffle_udf_abi_version; built with riffle_udf::export!?)"))?;
            let v = version();
            if v != ABI_VERSION {
                return Err(format!(
                    "{path} uses Riffle function ABI {v}; this Riffle loads ABI {ABI_VERSION}"
                ));
            }
            let describe: Describe = *library
                .get::<Describe>(b"riffle_udf_describe")
                .map_err(error)?;
            let call: Call = *library.get::<Call>(b"riffle_udf_call").map_err(error)?;
            let free: Free = *library.get::<Free>(b"riffle_udf_free").map_err(error)?;
            let mut out = Buffer::empty();
            describe(&mut out);
            let bytes = std::slice::from_raw_parts(out.ptr, out.len).to_vec();
            free(out);
            let functions = Reader::new(&bytes)
                .descriptions()
                .map_err(|e| format!("{path}: bad function descriptions: {e}"))?;
            Ok(Self {
                path: path.to_string(),
                call,
                free,
                functions,
                _library: library,
            })
        }
    }

    /// The function named `name` (exactly as registered in the library).
    pub fn function(&self, name: &str) -> Option<&Description> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Names of the library's functions.
    pub fn names(&self) -> Vec<&str> {
        self.functions.iter().map(|f| f.name.as_str()).collect()
    }

    /// Runs function `name` on argument rows: its result rows (see [`crate::abi`]).
    pub fn call(
        &self,
        name: &str,
        rows: &[Vec<Value>],
        columns: usize,
    ) -> Result<Vec<Vec<Value>>, String> {
        let mut w = Writer::default();
        w.batch(rows, columns);
        self.invoke(name, &w.0)
    }

    /// Calls function `name` on an encoded input: its decoded result batch.
    fn invoke(&self, name: &str, input: &[u8]) -> Result<Vec<Vec<Value>>, String> {
        let mut out = Buffer::empty();
        // SAFETY: valid slices and a local buffer; the buffer is copied, then freed once by
        // the library that allocated it.
        let (code, bytes) = unsafe {
            let code = (self.call)(
                name.as_ptr(),
                name.len(),
                input.as_ptr(),
                input.len(),
                &mut out,
            );
            let bytes = if out.ptr.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(out.ptr, out.len).to_vec()
            };
            (self.free)(out);
            (code, bytes)
        };
        if code != 0 {
            return Err(format!(
                "Rust function '{name}' ({}) failed: {}",
                self.path,
                String::from_utf8_lossy(&bytes)
            ));
        }
        Reader::new(&bytes)
            .batch()
            .map_err(|e| format!("Rust function '{name}' ({}): {e}", self.path))
    }
}

/// An aggregate function of a library, with its accumulator kept on Riffle's side as values.
#[derive(Debug)]
pub struct NativeAggregate {
    library: Arc<NativeLibrary>,
    description: Description,
}

impl NativeAggregate {
    /// Aggregate function `name` of the library at `path`.
    pub fn open(path: &str, name: &str) -> Result<Self, String> {
        let library = NativeLibrary::open(path)?;
        let description = match library.function(name) {
            Some(d) if d.kind == crate::codec::Kind::Aggregate => d.clone(),
            Some(_) => {
                return Err(format!(
                    "function '{name}' of {path} is not an aggregate function"
                ))
            }
            None => {
                return Err(format!(
                    "Rust function library {path} has no function '{name}'"
                ))
            }
        };
        Ok(Self {
            library,
            description,
        })
    }

    /// The function's description.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The result type.
    pub fn result_type(&self) -> SqlType {
        self.description
            .columns
            .first()
            .map_or(SqlType::String, |(_, t)| *t)
    }

    /// One crossing: starts from `acc` (a new accumulator when `None`), applies `rows` in order
    /// (accumulate when the flag is true, else retract; arguments of the declared types) and
    /// merges `others`; returns the value and the new accumulator.
    pub fn apply(
        &self,
        acc: Option<&[Value]>,
        rows: &[(bool, Vec<Value>)],
        others: &[Vec<Value>],
    ) -> Result<(Value, Vec<Value>), String> {
        let width = self.description.accumulator.len();
        let mut w = Writer::default();
        w.batch(acc.map(<[Value]>::to_vec).as_slice(), width);
        let flagged: Vec<Vec<Value>> = rows
            .iter()
            .map(|(add, args)| {
                let mut row = Vec::with_capacity(args.len() + 1);
                row.push(Value::Boolean(*add));
                row.extend(args.iter().cloned());
                row
            })
            .collect();
        w.batch(&flagged, self.description.args.len() + 1);
        w.batch(others, width);
        let mut out = self.library.invoke(&self.description.name, &w.0)?;
        let row = out.pop().filter(|r| r.len() == width + 1).ok_or_else(|| {
            format!(
                "Rust aggregate function '{}' returned a malformed result",
                self.description.name
            )
        })?;
        let mut row = row.into_iter();
        let value = row.next().unwrap_or(Value::Null);
        Ok((value, row.collect()))
    }
}

/// The Arrow type of a SQL type.
pub fn arrow_type(t: SqlType) -> DataType {
    match t {
        SqlType::Boolean => DataType::Boolean,
        SqlType::Int => DataType::Int32,
        SqlType::BigInt => DataType::Int64,
        SqlType::Double => DataType::Float64,
        SqlType::String => DataType::Utf8,
        SqlType::Bytes => DataType::Binary,
    }
}

/// The rows of argument columns, each column cast to its declared type first.
pub fn rows_of(
    columns: &[ArrayRef],
    types: &[SqlType],
    rows: usize,
) -> Result<Vec<Vec<Value>>, String> {
    if columns.len() != types.len() {
        return Err(format!(
            "expected {} arguments, got {}",
            types.len(),
            columns.len()
        ));
    }
    let mut out = vec![Vec::with_capacity(columns.len()); rows];
    for (column, t) in columns.iter().zip(types) {
        let column = cast(column, &arrow_type(*t)).map_err(|e| e.to_string())?;
        for (i, row) in out.iter_mut().enumerate() {
            row.push(value_at(&column, *t, i));
        }
    }
    Ok(out)
}

/// Row `row` of argument columns, each value cast to its declared type.
pub fn row_of(columns: &[ArrayRef], types: &[SqlType], row: usize) -> Result<Vec<Value>, String> {
    if columns.len() != types.len() {
        return Err(format!(
            "expected {} arguments, got {}",
            types.len(),
            columns.len()
        ));
    }
    columns
        .iter()
        .zip(types)
        .map(|(column, t)| {
            let cell = cast(&column.slice(row, 1), &arrow_type(*t)).map_err(|e| e.to_string())?;
            Ok(value_at(&cell, *t, 0))
        })
        .collect()
}

fn value_at(column: &ArrayRef, t: SqlType, i: usize) -> Value {
    if column.is_null(i) {
        return Value::Null;
    }
    match t {
        SqlType::Boolean => Value::Boolean(column.as_boolean().value(i)),
        SqlType::Int => Value::Int(column.as_primitive::<Int32Type>().value(i)),
        SqlType::BigInt => Value::BigInt(column.as_primitive::<Int64Type>().value(i)),
        SqlType::Double => Value::Double(column.as_primitive::<Float64Type>().value(i)),
        SqlType::String => Value::String(column.as_string::<i32>().value(i).to_string()),
        SqlType::Bytes => Value::Bytes(column.as_binary::<i32>().value(i).to_vec()),
    }
}

/// The column `index` of `rows` as an array of type `t`; a value of another type is an error.
pub fn column_of(rows: &[Vec<Value>], index: usize, t: SqlType) -> Result<ArrayRef, String> {
    let values = rows.iter().map(|r| r.get(index).unwrap_or(&Value::Null));
    let wrong = |v: &Value| {
        format!(
            "a function returned {v:?} where its signature declares {}",
            t.sql_name()
        )
    };
    Ok(match t {
        SqlType::Boolean => {
            let mut b = BooleanBuilder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Boolean(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        SqlType::Int => {
            let mut b = Int32Builder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Int(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        SqlType::BigInt => {
            let mut b = Int64Builder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::BigInt(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        SqlType::Double => {
            let mut b = Float64Builder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Double(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        SqlType::String => {
            let mut b = StringBuilder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::String(x) => b.append_value(x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        SqlType::Bytes => {
            let mut b = BinaryBuilder::new();
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    Value::Bytes(x) => b.append_value(x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int32Array;

    #[test]
    fn arguments_are_cast_to_the_declared_types() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let rows = rows_of(&[ints], &[SqlType::BigInt], 2).unwrap();
        assert_eq!(rows, vec![vec![Value::BigInt(1)], vec![Value::Null]]);
    }

    #[test]
    fn results_of_the_wrong_type_are_errors() {
        let rows = vec![vec![Value::String("x".into())]];
        assert!(column_of(&rows, 0, SqlType::Int).is_err());
        assert_eq!(column_of(&rows, 0, SqlType::String).unwrap().len(), 1);
    }

    #[test]
    fn a_missing_library_is_named() {
        let e = NativeLibrary::open("/no/such/libudfs.so").unwrap_err();
        assert!(e.contains("/no/such/libudfs.so"), "{e}");
    }
}
