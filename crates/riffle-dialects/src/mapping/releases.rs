//! `flink-releases.toml`: the Flink releases export targets and the syntax newer than 1.15.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::FlinkVersion;
use crate::Dialects;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlinkReleases {
    /// Targets, oldest first.
    #[serde(rename = "release")]
    pub releases: Vec<FlinkRelease>,
    /// Syntax newer than the oldest target.
    pub syntax: Vec<SyntaxSince>,
    /// Connector and format jars.
    pub jars: JarRules,
}

/// One Flink release export can target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlinkRelease {
    /// `1.19`.
    pub version: FlinkVersion,
    /// The Kubernetes operator's `flinkVersion` value.
    pub operator: String,
    /// Maven coordinates of the SQL Kafka connector jar for it.
    pub kafka_jar: String,
}

/// What export does with syntax an older target lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyntaxRewrite {
    /// SESSION TVF aggregation -> legacy `GROUP BY SESSION(...)`.
    LegacyGroupWindow,
    /// Named arguments -> positional ones.
    PositionalArguments,
    /// The hint is removed and reported.
    RemoveHint,
}

/// A syntax feature and the release that added it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntaxSince {
    /// A feature id of `riffle check`, or `syntax.*`.
    pub id: String,
    /// Human name.
    pub title: String,
    /// The release that added it.
    pub since: FlinkVersion,
    /// What export does on older targets (absent: reported for a human).
    pub rewrite: Option<SyntaxRewrite>,
    /// Advice for the report.
    pub note: Option<String>,
}

/// Which connectors and formats need which jars.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JarRules {
    /// Connectors in every Flink distribution.
    pub builtin: Vec<String>,
    /// Connectors served by the release's Kafka jar.
    pub kafka: Vec<String>,
    /// Formats needing a jar (Maven group and artifact; the version is the release's `.0`).
    pub formats: BTreeMap<String, String>,
}

impl FlinkReleases {
    /// The target for a version (patch numbers ignored).
    pub fn release(&self, version: FlinkVersion) -> Option<&FlinkRelease> {
        self.releases.iter().find(|r| r.version == version)
    }

    /// The syntax entry with `id`.
    pub fn syntax(&self, id: &str) -> Option<&SyntaxSince> {
        self.syntax.iter().find(|s| s.id == id)
    }

    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        if !self
            .releases
            .windows(2)
            .all(|w| w[0].version < w[1].version)
        {
            return Err("releases must be listed oldest first, each once".to_string());
        }
        for s in &self.syntax {
            if !s.id.starts_with("syntax.") && dialects.feature(&s.id).is_none() {
                return Err(format!("`{}` is not a feature id", s.id));
            }
        }
        for name in self.jars.builtin.iter().chain(&self.jars.kafka) {
            if dialects.connector(name).is_none() {
                return Err(format!("no connector `{name}`"));
            }
        }
        for name in self.jars.formats.keys() {
            if dialects.format(name).is_none() {
                return Err(format!("no format `{name}`"));
            }
        }
        Ok(())
    }
}
