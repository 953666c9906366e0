//! Byte encoding of checkpointed state: source positions, sink transactions, operator state.
//!
//! A plain length-prefixed little-endian format, so that a checkpoint does not depend on a
//! serialization library's wire format. Every read is checked: a truncated or corrupted state
//! file gives an error, never a panic.

use crate::{ConnectorError, Result};

/// Appends values to a byte buffer.
#[derive(Debug, Default)]
pub struct StateWriter {
    buf: Vec<u8>,
}

impl StateWriter {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes one byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Writes a boolean.
    pub fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    /// Writes a `u64`.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes an `i64`.
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes an `i128`.
    pub fn i128(&mut self, v: i128) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes an `f64`.
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes a length (as `u64`).
    pub fn length(&mut self, v: usize) {
        self.u64(v as u64);
    }

    /// Writes length-prefixed bytes.
    pub fn bytes(&mut self, v: &[u8]) {
        self.length(v.len());
        self.buf.extend_from_slice(v);
    }

    /// Writes a length-prefixed UTF-8 string.
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }

    /// The encoded bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads values written by [`StateWriter`], failing on truncated or malformed input.
#[derive(Debug)]
pub struct StateReader<'a> {
    buf: &'a [u8],
    what: &'a str,
}

impl<'a> StateReader<'a> {
    /// Reads `buf`; `what` names the state in errors (e.g. the table or operator).
    pub fn new(buf: &'a [u8], what: &'a str) -> Self {
        Self { buf, what }
    }

    fn error(&self, detail: &str) -> ConnectorError {
        ConnectorError::new(format!(
            "corrupted checkpoint state of {}: {detail}",
            self.what
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(self.error("unexpected end of data"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// Reads a boolean.
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.error(&format!("invalid boolean byte {other}"))),
        }
    }

    /// Reads a `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an `i64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// Reads an `i128`.
    pub fn i128(&mut self) -> Result<i128> {
        Ok(i128::from_le_bytes(self.array()?))
    }

    /// Reads an `f64`.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// Reads a length, checked against the bytes left (each item takes at least one byte).
    pub fn length(&mut self) -> Result<usize> {
        let n = self.u64()?;
        if n > self.buf.len() as u64 {
            return Err(self.error(&format!("length {n} exceeds the data left")));
        }
        Ok(n as usize)
    }

    /// Reads length-prefixed bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.length()?;
        self.take(n)
    }

    /// Reads a length-prefixed UTF-8 string.
    pub fn str(&mut self) -> Result<String> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.error("invalid UTF-8"))
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(self.error(&format!("{} trailing bytes", self.buf.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let mut w = StateWriter::new();
        w.u64(7);
        w.str("queue");
        w.i128(-5);
        w.f64(1.5);
        w.bool(true);
        let bytes = w.finish();
        let mut r = StateReader::new(&bytes, "test");
        assert_eq!(r.u64().unwrap(), 7);
        assert_eq!(r.str().unwrap(), "queue");
        assert_eq!(r.i128().unwrap(), -5);
        assert_eq!(r.f64().unwrap(), 1.5);
        assert!(r.bool().unwrap());
        r.finish().unwrap();
        let mut short = StateReader::new(&bytes[..10], "test");
        short.u64().unwrap();
        let err = short.str().unwrap_err();
        assert!(err.message.contains("corrupted checkpoint state of test"));
    }
}
