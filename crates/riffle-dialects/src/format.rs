//! Format option schemas (`dialects/formats/*.toml`).

use serde::Deserialize;

use crate::connector::{OptionSpec, RawOption};
use crate::support::{RawSupport, Support};

/// The kinds of rows a format produces when reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangelogMode {
    /// Only inserts (plain records: json, csv, raw, avro).
    InsertOnly,
    /// Every row kind: insert, update-before, update-after and delete (CDC formats).
    All,
}

/// The option schema of one format, loaded from `dialects/formats/<name>.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatSchema {
    /// The format identifier (`'format' = '<name>'`).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The row kinds the format produces when deserializing.
    pub changelog: ChangelogMode,
    /// Options, keyed by their full DDL spelling (`json.ignore-parse-errors`). In a connector
    /// with key and value formats they may also be written with a `key.` / `value.` prefix.
    pub options: Vec<OptionSpec>,
    /// Riffle's support for the format as a whole.
    pub support: Support,
}

impl FormatSchema {
    /// Finds an option by its key or one of its fallback keys.
    pub fn option(&self, key: &str) -> Option<&OptionSpec> {
        self.options
            .iter()
            .find(|o| o.key == key)
            .or_else(|| self.options.iter().find(|o| o.matches_exact(key)))
    }
}

/// A format file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFormat {
    name: String,
    description: String,
    changelog: ChangelogMode,
    #[serde(default)]
    options: Vec<RawOption>,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

impl RawFormat {
    /// Converts the file into a schema, checking each option on the way.
    pub(crate) fn resolve(self) -> Result<FormatSchema, String> {
        let support = RawSupport {
            status: self.status,
            reason: self.reason,
            migration: self.migration,
        }
        .resolve(None)?;
        let options = self
            .options
            .into_iter()
            .map(|o| o.resolve(&support))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FormatSchema {
            name: self.name,
            description: self.description,
            changelog: self.changelog,
            options,
            support,
        })
    }
}
