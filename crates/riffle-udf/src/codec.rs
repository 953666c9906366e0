//! The byte encoding of values, batches and function descriptions that crosses the library
//! boundary. Little-endian; strings and bytes are length-prefixed (`u32`).
//!
//! * value: a tag byte (0 NULL, then the [`SqlType`] tags) and its payload;
//! * batch: `u32` rows, `u32` columns, then the values row by row;
//! * description: `u32` functions, each: name, kind byte (0 scalar, 1 table, 2 aggregate), `u32`
//!   argument count and a type tag per argument, `u32` output columns, each a name and a type
//!   tag; an aggregate then has `u32` accumulator fields, each a type tag.

use crate::{SqlType, Value};

const NULL: u8 = 0;

/// The tag of a type (and of its non-NULL values).
pub fn type_tag(t: SqlType) -> u8 {
    match t {
        SqlType::Boolean => 1,
        SqlType::Int => 2,
        SqlType::BigInt => 3,
        SqlType::Double => 4,
        SqlType::String => 5,
        SqlType::Bytes => 6,
    }
}

/// The type of a tag.
pub fn tag_type(tag: u8) -> Result<SqlType, String> {
    Ok(match tag {
        1 => SqlType::Boolean,
        2 => SqlType::Int,
        3 => SqlType::BigInt,
        4 => SqlType::Double,
        5 => SqlType::String,
        6 => SqlType::Bytes,
        other => return Err(format!("unknown type tag {other}")),
    })
}

/// What kind of function a description is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scalar function (one output column, named after the function).
    Scalar,
    /// A table function.
    Table,
    /// An aggregate function (one output column, named after the function).
    Aggregate,
}

/// A function as a library describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// Name.
    pub name: String,
    /// Scalar, table or aggregate function.
    pub kind: Kind,
    /// Argument types.
    pub args: Vec<SqlType>,
    /// Output columns (a scalar or aggregate function has one).
    pub columns: Vec<(String, SqlType)>,
    /// The types of an aggregate function's accumulator fields (empty for other kinds).
    pub accumulator: Vec<SqlType>,
}

/// Appends encodings to a byte vector.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }

    /// Appends one value.
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.0.push(NULL),
            Value::Boolean(b) => {
                self.0.push(type_tag(SqlType::Boolean));
                self.0.push(u8::from(*b));
            }
            Value::Int(i) => {
                self.0.push(type_tag(SqlType::Int));
                self.0.extend_from_slice(&i.to_le_bytes());
            }
            Value::BigInt(i) => {
                self.0.push(type_tag(SqlType::BigInt));
                self.0.extend_from_slice(&i.to_le_bytes());
            }
            Value::Double(d) => {
                self.0.push(type_tag(SqlType::Double));
                self.0.extend_from_slice(&d.to_le_bytes());
            }
            Value::String(s) => {
                self.0.push(type_tag(SqlType::String));
                self.bytes(s.as_bytes());
            }
            Value::Bytes(b) => {
                self.0.push(type_tag(SqlType::Bytes));
                self.bytes(b);
            }
        }
    }

    /// Appends a batch of rows, each of `columns` values.
    pub fn batch(&mut self, rows: &[Vec<Value>], columns: usize) {
        self.u32(rows.len() as u32);
        self.u32(columns as u32);
        for row in rows {
            for v in row {
                self.value(v);
            }
        }
    }

    /// Appends the descriptions of a library's functions.
    pub fn descriptions(&mut self, functions: &[Description]) {
        self.u32(functions.len() as u32);
        for f in functions {
            self.bytes(f.name.as_bytes());
            self.0.push(match f.kind {
                Kind::Scalar => 0,
                Kind::Table => 1,
                Kind::Aggregate => 2,
            });
            self.types(&f.args);
            self.u32(f.columns.len() as u32);
            for (name, t) in &f.columns {
                self.bytes(name.as_bytes());
                self.0.push(type_tag(*t));
            }
            if f.kind == Kind::Aggregate {
                self.types(&f.accumulator);
            }
        }
    }

    fn types(&mut self, types: &[SqlType]) {
        self.u32(types.len() as u32);
        for t in types {
            self.0.push(type_tag(*t));
        }
    }
}

/// Reads encodings from a byte slice.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or("truncated function data")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
    }

    /// Reads one value.
    pub fn value(&mut self) -> Result<Value, String> {
        let tag = self.u8()?;
        if tag == NULL {
            return Ok(Value::Null);
        }
        Ok(match tag_type(tag)? {
            SqlType::Boolean => Value::Boolean(self.u8()? != 0),
            SqlType::Int => Value::Int(i32::from_le_bytes(self.array()?)),
            SqlType::BigInt => Value::BigInt(i64::from_le_bytes(self.array()?)),
            SqlType::Double => Value::Double(f64::from_le_bytes(self.array()?)),
            SqlType::String => Value::String(self.string()?),
            SqlType::Bytes => Value::Bytes(self.bytes()?.to_vec()),
        })
    }

    /// Reads a batch: its rows.
    pub fn batch(&mut self) -> Result<Vec<Vec<Value>>, String> {
        let rows = self.u32()? as usize;
        let columns = self.u32()? as usize;
        let mut out = Vec::with_capacity(rows.min(1 << 16));
        for _ in 0..rows {
            let mut row = Vec::with_capacity(columns.min(1 << 10));
            for _ in 0..columns {
                row.push(self.value()?);
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Reads the descriptions of a library's functions.
    pub fn descriptions(&mut self) -> Result<Vec<Description>, String> {
        let n = self.u32()?;
        let mut out = Vec::new();
        for _ in 0..n {
            let name = self.string()?;
            let kind = match self.u8()? {
                0 => Kind::Scalar,
                1 => Kind::Table,
                2 => Kind::Aggregate,
                other => return Err(format!("unknown function kind {other}")),
            };
            let args = self.types()?;
            let mut columns = Vec::new();
            for _ in 0..self.u32()? {
                let name = self.string()?;
                columns.push((name, tag_type(self.u8()?)?));
            }
            let accumulator = match kind {
                Kind::Aggregate => self.types()?,
                _ => Vec::new(),
            };
            out.push(Description {
                name,
                kind,
                args,
                columns,
                accumulator,
            });
        }
        Ok(out)
    }

    fn types(&mut self) -> Result<Vec<SqlType>, String> {
        let n = self.u32()?;
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(tag_type(self.u8()?)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip() {
        let rows = vec![
            vec![Value::Int(-3), Value::String("héllo".into()), Value::Null],
            vec![
                Value::Boolean(true),
                Value::Bytes(vec![0, 255]),
                Value::Double(1.5),
            ],
            vec![Value::BigInt(i64::MIN), Value::Null, Value::Null],
        ];
        let mut w = Writer::default();
        w.batch(&rows, 3);
        assert_eq!(Reader::new(&w.0).batch().unwrap(), rows);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut w = Writer::default();
        w.batch(&[vec![Value::String("abc".into())]], 1);
        for cut in 0..w.0.len() {
            assert!(Reader::new(&w.0[..cut]).batch().is_err());
        }
    }

    #[test]
    fn descriptions_round_trip() {
        let d = vec![
            Description {
                name: "split".into(),
                kind: Kind::Table,
                args: vec![SqlType::String, SqlType::Int],
                columns: vec![("word".into(), SqlType::String)],
                accumulator: Vec::new(),
            },
            Description {
                name: "wavg".into(),
                kind: Kind::Aggregate,
                args: vec![SqlType::BigInt, SqlType::Int],
                columns: vec![("wavg".into(), SqlType::Double)],
                accumulator: vec![SqlType::BigInt, SqlType::BigInt],
            },
        ];
        let mut w = Writer::default();
        w.descriptions(&d);
        assert_eq!(Reader::new(&w.0).descriptions().unwrap(), d);
    }
}
