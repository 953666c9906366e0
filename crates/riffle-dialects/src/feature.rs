//! The registry of SQL features that `riffle check` reports (`dialects/riffle/features.toml`).

use serde::Deserialize;

use crate::support::{RawSupport, Support};

/// One SQL feature with Riffle's support for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    /// Stable kebab-case id with dotted groups (`query.window-tvf.tumble`). Ids of the form
    /// `connector.<name>` and `format.<name>` are derived from the connector and format files.
    pub id: String,
    /// Short human name (`window TVF TUMBLE`).
    pub title: String,
    /// One-line explanation.
    pub docs: String,
    /// Riffle's support for the feature.
    pub support: Support,
}

/// The features file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFeatures {
    #[serde(rename = "feature")]
    features: Vec<RawFeature>,
}

/// One `[[feature]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeature {
    id: String,
    title: String,
    docs: String,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

impl RawFeatures {
    /// Converts every entry; each must carry its own status.
    pub(crate) fn resolve(self) -> Result<Vec<Feature>, String> {
        self.features
            .into_iter()
            .map(|f| {
                let support = RawSupport {
                    status: f.status,
                    reason: f.reason,
                    migration: f.migration,
                }
                .resolve(None)
                .map_err(|e| format!("feature `{}`: {e}", f.id))?;
                Ok(Feature {
                    id: f.id,
                    title: f.title,
                    docs: f.docs,
                    support,
                })
            })
            .collect()
    }
}
