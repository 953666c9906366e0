//! `legacy-options.toml`: Flink's pre-1.11 `connector.type` property style -> current keys.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::require_option;
use crate::Dialects;

/// The whole file (see its comments for the meaning of each field).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyOptions {
    /// `connector.type`.
    pub connector_type_key: String,
    /// `connector`.
    pub connector_key: String,
    /// `format.type`.
    pub format_type_key: String,
    /// `format`.
    pub format_key: String,
    /// `format.`: other keys with it become `<format>.<rest>`.
    pub format_prefix: String,
    /// `connector.`.
    pub connector_prefix: String,
    /// `connector.properties.`.
    pub properties_prefix: String,
    /// `properties.`.
    pub properties_target: String,
    /// Renames and removals by old key.
    #[serde(rename = "key")]
    pub keys: Vec<LegacyKey>,
}

/// One renamed or removed legacy key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyKey {
    /// The legacy key.
    pub legacy: String,
    /// The current key; empty removes the option.
    pub current: String,
    /// Why it is removed.
    pub reason: Option<String>,
    /// Value translations (`""` removes the option); a value not listed is left for a human.
    pub values: Option<BTreeMap<String, String>>,
    /// Why an unlisted value is left for a human.
    pub manual_reason: Option<String>,
    /// The connectors the entry is for; empty means any.
    #[serde(default)]
    pub connectors: Vec<String>,
}

impl LegacyOptions {
    /// The entry for `key` on a table of `connector`.
    pub fn key(&self, connector: &str, key: &str) -> Option<&LegacyKey> {
        self.keys.iter().find(|k| {
            k.legacy == key
                && (k.connectors.is_empty() || k.connectors.iter().any(|c| c == connector))
        })
    }

    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        for k in &self.keys {
            if k.current.is_empty() && k.reason.is_none() {
                return Err(format!("`{}` is removed without a `reason`", k.legacy));
            }
            if k.values.is_some() && k.manual_reason.is_none() {
                return Err(format!(
                    "`{}` has `values` but no `manual_reason`",
                    k.legacy
                ));
            }
            if !k.current.is_empty() {
                require_option(dialects, "kafka", &k.current)
                    .map_err(|e| format!("`{}`: {e}", k.legacy))?;
            }
        }
        for key in [&self.format_key, &self.connector_key] {
            if key.contains('.') {
                return Err(format!("`{key}` is not a current top-level key"));
            }
        }
        Ok(())
    }
}
