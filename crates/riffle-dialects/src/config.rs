//! Flink configuration keys a job may `SET` (`dialects/flink/config.toml`).

use serde::Deserialize;

use crate::function::check_since;
use crate::option_type::OptionType;
use crate::support::{RawSupport, Support};

/// One Flink configuration option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOptionSpec {
    /// The key (`table.exec.state.ttl`).
    pub key: String,
    /// The value type.
    pub ty: OptionType,
    /// Flink's default, as a string (absent when Flink has none or it depends on the machine).
    pub default: Option<String>,
    /// What the option does.
    pub description: String,
    /// Older keys Flink still accepts for it.
    pub fallback_keys: Vec<String>,
    /// The Flink version that added it, when after 1.13.
    pub since: Option<String>,
    /// Riffle's support for it.
    pub support: Support,
}

impl ConfigOptionSpec {
    /// True when `key` is this option's key or one of its fallback keys.
    pub fn matches(&self, key: &str) -> bool {
        self.key == key || self.fallback_keys.iter().any(|k| k == key)
    }
}

/// The config file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
    #[serde(rename = "option")]
    options: Vec<RawConfigOption>,
}

/// One `[[option]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfigOption {
    key: String,
    #[serde(rename = "type")]
    ty: String,
    values: Option<Vec<String>>,
    case_sensitive: Option<bool>,
    default: Option<String>,
    description: String,
    #[serde(default)]
    fallback_keys: Vec<String>,
    since: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

impl RawConfig {
    /// Converts every entry, checking types and defaults.
    pub(crate) fn resolve(self) -> Result<Vec<ConfigOptionSpec>, String> {
        let default = RawSupport {
            status: self.status,
            reason: self.reason,
            migration: self.migration,
        };
        let default = default.resolve_default()?;
        self.options
            .into_iter()
            .map(|o| {
                let key = o.key;
                let ctx = |e: String| format!("config option `{key}`: {e}");
                if let Some(since) = &o.since {
                    check_since(since).map_err(ctx)?;
                }
                let ty =
                    OptionType::from_spec(&o.ty, o.values, o.case_sensitive, o.default.as_deref())
                        .map_err(ctx)?;
                let support = RawSupport {
                    status: o.status,
                    reason: o.reason,
                    migration: o.migration,
                }
                .resolve(default.as_ref())
                .map_err(ctx)?;
                Ok(ConfigOptionSpec {
                    ty,
                    default: o.default,
                    description: o.description,
                    fallback_keys: o.fallback_keys,
                    since: o.since,
                    support,
                    key,
                })
            })
            .collect()
    }
}
