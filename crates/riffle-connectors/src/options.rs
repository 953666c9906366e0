//! Reading Flink connector options from a table's `WITH` clause.

use std::collections::BTreeSet;

use riffle_plan::ConnectorSpec;

use crate::{ConnectorError, Result};

/// Typed access to a connector's options; remembers which keys were read so unknown ones can be
/// rejected the way Flink's factories reject them.
pub struct Options<'a> {
    spec: &'a ConnectorSpec,
    used: BTreeSet<String>,
}

impl<'a> Options<'a> {
    /// Wraps the options of `spec`; `connector` is always considered known.
    pub fn new(spec: &'a ConnectorSpec) -> Self {
        let mut used = BTreeSet::new();
        used.insert("connector".to_string());
        Self { spec, used }
    }

    /// The raw value of `key`.
    pub fn get(&mut self, key: &str) -> Option<&'a str> {
        self.used.insert(key.to_string());
        self.spec.options.get(key).map(String::as_str)
    }

    /// A required option.
    pub fn required(&mut self, key: &str) -> Result<&'a str> {
        self.get(key).ok_or_else(|| {
            ConnectorError::new(format!(
                "Missing required option '{key}' for table '{}'",
                self.spec.table
            ))
        })
    }

    /// A boolean option (`true`/`false`, case-insensitive) with a default.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(self.invalid(key, v)),
        }
    }

    /// An integer option with a default.
    pub fn i64(&mut self, key: &str, default: Option<i64>) -> Result<Option<i64>> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map(Some).map_err(|_| self.invalid(key, v)),
        }
    }

    /// A single-character option (e.g. a delimiter), accepting Java escapes such as `\t`.
    pub fn char(&mut self, key: &str, default: char) -> Result<char> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                let unescaped = match v {
                    "\\t" => "\t".to_string(),
                    "\\n" => "\n".to_string(),
                    other => other.to_string(),
                };
                let mut chars = unescaped.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(ConnectorError::new(format!(
                        "Option '{key}' must be a string with single character, but was: {v}"
                    ))),
                }
            }
        }
    }

    /// Every option key starting with `prefix`.
    pub fn keys_with_prefix(&mut self, prefix: &str) -> Vec<&'a str> {
        let keys: Vec<&'a str> = self
            .spec
            .options
            .keys()
            .filter(|k| k.starts_with(prefix))
            .map(String::as_str)
            .collect();
        for k in &keys {
            self.used.insert((*k).to_string());
        }
        keys
    }

    /// Marks `key` as understood without reading it.
    pub fn accept(&mut self, key: &str) {
        self.used.insert(key.to_string());
    }

    /// Fails on options nobody read (Flink's "Unsupported options found for '...'").
    pub fn finish(&self) -> Result<()> {
        let unknown: Vec<&str> = self
            .spec
            .options
            .keys()
            .filter(|k| !self.used.contains(*k))
            .map(String::as_str)
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(ConnectorError::new(format!(
            "Unsupported options found for '{}' (table '{}'): {}",
            self.spec.connector,
            self.spec.table,
            unknown.join(", ")
        )))
    }

    fn invalid(&self, key: &str, value: &str) -> ConnectorError {
        ConnectorError::new(format!(
            "Invalid value for option '{key}' of table '{}': '{value}'",
            self.spec.table
        ))
    }
}
