//! Connector option schemas (`dialects/connectors/*.toml`).

use serde::Deserialize;

use crate::option_type::OptionType;
use crate::support::{RawSupport, Support};

/// What a connector can be used as in a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A scan source (read in `FROM`).
    Source,
    /// A sink (written by `INSERT INTO`).
    Sink,
    /// A lookup source (the right side of a lookup join).
    Lookup,
}

/// How a connector names the format(s) of its records.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatRequirement {
    /// Whether a value format must be named.
    #[serde(default)]
    pub required: bool,
    /// The option keys that name the value format, in precedence order (e.g. `format`,
    /// `value.format`). Empty when the connector takes no format.
    #[serde(default)]
    pub keys: Vec<String>,
    /// The option key that names the key format (`key.format`), if the connector has one.
    #[serde(default)]
    pub key_format_key: Option<String>,
    /// Whether the key format must be named.
    #[serde(default)]
    pub key_required: bool,
    /// Formats the connector accepts; empty means any format that has a schema in `dialects/`.
    #[serde(default)]
    pub allowed: Vec<String>,
    /// Whether the connector leaves keys starting with `<format>.` unchecked when the format does
    /// not know them (Flink's filesystem connector validates all other keys but these, as some
    /// formats such as parquet and orc cannot list every option they take).
    #[serde(default)]
    pub unchecked_format_options: bool,
    /// Formats Riffle supports elsewhere but does not run with this connector, each with the
    /// reason (e.g. Avro message bodies are read and written, Avro files are not).
    #[serde(default)]
    pub unsupported: std::collections::BTreeMap<String, String>,
}

impl FormatRequirement {
    /// True when the connector takes no format options at all.
    pub fn is_none(&self) -> bool {
        self.keys.is_empty() && self.key_format_key.is_none()
    }
}

/// One option of a connector or format, or a pattern covering a family of options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSpec {
    /// The key as written in `WITH (...)`. In a prefix entry it is a pattern: `#` stands for a
    /// column (or other) name and a trailing `*` for any non-empty remainder
    /// (`fields.#.kind`, `properties.*`).
    pub key: String,
    /// Whether the option must be given (within its role and option generation).
    pub required: bool,
    /// The value type.
    pub ty: OptionType,
    /// The default value Flink uses when the option is absent, as a string.
    pub default: Option<String>,
    /// What the option does.
    pub description: String,
    /// Older keys Flink still accepts for this option (its fallback/deprecated keys).
    pub fallback_keys: Vec<String>,
    /// The roles this option applies to; empty means every role of the connector.
    pub roles: Vec<Role>,
    /// For connectors with several option generations (rocketmq): the generation this key
    /// belongs to (`legacy`, `rocketmq-dot`, `rsqldb`, `riffle`).
    pub generation: Option<String>,
    /// The canonical Riffle meaning the option maps to, shared by its spellings across
    /// generations (e.g. `topic`, `consumer-group`, `endpoints`).
    pub canonical: Option<String>,
    /// Riffle's support for the option (inherits the connector's or format's status if the data
    /// file gives none).
    pub support: Support,
}

impl OptionSpec {
    /// True when `key` is this option's key or one of its fallback keys (exact, case-sensitive,
    /// as Flink compares keys). Pattern entries match through [`OptionSpec::matches_pattern`].
    pub fn matches_exact(&self, key: &str) -> bool {
        self.key == key || self.fallback_keys.iter().any(|k| k == key)
    }

    /// True when this entry's key is a pattern (contains `#` or ends with `*`).
    pub fn is_pattern(&self) -> bool {
        is_pattern(&self.key)
    }

    /// Matches `key` against this entry's pattern key (see [`OptionSpec::key`]).
    pub fn matches_pattern(&self, key: &str) -> bool {
        pattern_matches(&self.key, key)
    }
}

/// Whether a key is a pattern rather than a literal key.
pub(crate) fn is_pattern(key: &str) -> bool {
    key.contains('#') || key.ends_with('*')
}

/// Matches a pattern where `#` is a non-empty name and a trailing `*` a non-empty remainder.
fn pattern_matches(pattern: &str, key: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix('*') {
        // `get` keeps a multi-byte key from being split inside a character.
        return key.len() > prefix.len()
            && key
                .get(..prefix.len())
                .is_some_and(|head| pattern_matches_exactly(prefix, head));
    }
    pattern_matches_exactly(pattern, key)
}

/// Matches a pattern whose only wildcards are `#` segments against the whole of `key`.
fn pattern_matches_exactly(pattern: &str, key: &str) -> bool {
    match pattern.split_once('#') {
        None => pattern == key,
        Some((before, after)) => {
            let Some(rest) = key.strip_prefix(before) else {
                return false;
            };
            // `#` takes at least one character; try every split so names may contain dots.
            rest.char_indices()
                .skip(1)
                .map(|(i, _)| i)
                .chain(std::iter::once(rest.len()))
                .any(|i| i > 0 && pattern_matches_exactly(after, &rest[i..]))
        }
    }
}

/// The option schema of one connector, loaded from `dialects/connectors/<name>.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorSchema {
    /// The connector identifier (`'connector' = '<name>'`).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// What the connector can be used as.
    pub roles: Vec<Role>,
    /// How the connector names its formats.
    pub format: FormatRequirement,
    /// Options with literal keys.
    pub options: Vec<OptionSpec>,
    /// Option families given by a key pattern (`properties.*`, `fields.#.kind`).
    pub prefixes: Vec<OptionSpec>,
    /// Metadata keys of `METADATA FROM 'key'` columns the connector provides.
    pub metadata: Vec<MetadataSpec>,
    /// Riffle's support for the connector as a whole.
    pub support: Support,
}

/// One metadata key a connector exposes to `col TYPE METADATA FROM 'key'` columns.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataSpec {
    /// The key as written after `FROM`.
    pub key: String,
    /// The Flink type of the value (`BIGINT`, `TIMESTAMP_LTZ(3)`, `MAP<STRING, STRING>`).
    #[serde(rename = "type")]
    pub ty: String,
    /// What the value is.
    pub description: String,
    /// Whether a sink writes the column (otherwise it must be declared `VIRTUAL` on sinks).
    #[serde(default)]
    pub writable: bool,
}

impl ConnectorSchema {
    /// Finds the option for `key`: an exact key, then a fallback key, then a pattern entry.
    pub fn option(&self, key: &str) -> Option<&OptionSpec> {
        self.options
            .iter()
            .find(|o| o.key == key)
            .or_else(|| self.options.iter().find(|o| o.matches_exact(key)))
            .or_else(|| self.prefixes.iter().find(|p| p.matches_pattern(key)))
    }

    /// The options of one generation (for connectors with several, such as rocketmq).
    pub fn generation<'a>(&'a self, generation: &'a str) -> impl Iterator<Item = &'a OptionSpec> {
        self.options
            .iter()
            .chain(&self.prefixes)
            .filter(move |o| o.generation.as_deref() == Some(generation))
    }

    /// The metadata key `key`, if the connector provides it.
    pub fn metadata_key(&self, key: &str) -> Option<&MetadataSpec> {
        self.metadata.iter().find(|m| m.key == key)
    }

    /// All literal keys the connector accepts, including fallback keys (for suggestions).
    pub fn known_keys(&self) -> impl Iterator<Item = &str> {
        self.options.iter().flat_map(|o| {
            std::iter::once(o.key.as_str()).chain(o.fallback_keys.iter().map(String::as_str))
        })
    }
}

/// An option entry as written in a data file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOption {
    key: String,
    #[serde(default)]
    required: bool,
    #[serde(rename = "type")]
    ty: String,
    values: Option<Vec<String>>,
    case_sensitive: Option<bool>,
    default: Option<String>,
    description: String,
    #[serde(default)]
    fallback_keys: Vec<String>,
    #[serde(default)]
    roles: Vec<Role>,
    generation: Option<String>,
    canonical: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

impl RawOption {
    /// Converts the entry, inheriting `parent` support when the entry has no status.
    pub(crate) fn resolve(self, parent: &Support) -> Result<OptionSpec, String> {
        let key = self.key;
        let ctx = |e: String| format!("option `{key}`: {e}");
        let ty = OptionType::from_spec(
            &self.ty,
            self.values,
            self.case_sensitive,
            self.default.as_deref(),
        )
        .map_err(ctx)?;
        let support = RawSupport {
            status: self.status,
            reason: self.reason,
            migration: self.migration,
        }
        .resolve(Some(parent))
        .map_err(ctx)?;
        Ok(OptionSpec {
            required: self.required,
            ty,
            default: self.default,
            description: self.description,
            fallback_keys: self.fallback_keys,
            roles: self.roles,
            generation: self.generation,
            canonical: self.canonical,
            support,
            key,
        })
    }
}

/// A connector file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConnector {
    name: String,
    description: String,
    roles: Vec<Role>,
    #[serde(default)]
    format: FormatRequirement,
    #[serde(default)]
    options: Vec<RawOption>,
    #[serde(default)]
    prefixes: Vec<RawOption>,
    #[serde(default)]
    metadata: Vec<MetadataSpec>,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

impl RawConnector {
    /// Converts the file into a schema, checking each option on the way.
    pub(crate) fn resolve(self) -> Result<ConnectorSchema, String> {
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
        let prefixes = self
            .prefixes
            .into_iter()
            .map(|o| o.resolve(&support))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ConnectorSchema {
            name: self.name,
            description: self.description,
            roles: self.roles,
            format: self.format,
            options,
            prefixes,
            metadata: self.metadata,
            support,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_names_and_remainders() {
        assert!(pattern_matches(
            "properties.*",
            "properties.bootstrap.servers"
        ));
        assert!(!pattern_matches("properties.*", "properties."));
        assert!(!pattern_matches("properties.*", "property.x"));
        assert!(pattern_matches("fields.#.kind", "fields.id.kind"));
        assert!(pattern_matches("fields.#.kind", "fields.a.b.kind"));
        assert!(!pattern_matches("fields.#.kind", "fields..kind"));
        assert!(!pattern_matches("fields.#.kind", "fields.id.min"));
        assert!(pattern_matches(
            "sink.partition-commit.*",
            "sink.partition-commit.policy.kind"
        ));
    }
}
