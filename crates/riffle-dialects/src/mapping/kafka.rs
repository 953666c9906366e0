//! `kafka-rocketmq.toml`: Kafka / upsert-kafka options and metadata <-> rocketmq meanings.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{require_canonical, require_option};
use crate::{Dialects, Role};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaMapping {
    /// How an upsert-kafka table is laid out as a rocketmq table.
    pub upsert: UpsertLayout,
    /// How Kafka's record key becomes RocketMQ message keys.
    pub message_key: MessageKeyLayout,
    /// How delimited-text bodies are written as a Kafka format.
    pub delimited_text: DelimitedText,
    /// Rules for Kafka options, by key (a key ending in `*` covers a family).
    #[serde(rename = "option")]
    pub options: Vec<KafkaOptionRule>,
    /// Rules for writing rocketmq meanings as Kafka options (export).
    #[serde(rename = "to_kafka")]
    pub to_kafka: Vec<ToKafkaRule>,
    /// Metadata keys.
    pub metadata: Vec<MetadataRule>,
}

/// The rocketmq options that make a table an upsert changelog.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpsertLayout {
    /// The option naming the changelog mode (`riffle.changelog-mode`).
    pub changelog_option: String,
    /// Its upsert value.
    pub changelog_value: String,
    /// What the report says of the option on a table the job writes.
    pub sink_note: String,
    /// What the report says of it on a table the job reads.
    pub source_note: String,
    /// The start position of a source (upsert-kafka always reads its topic from the start).
    pub source_startup: String,
    /// Why the start position is added.
    pub source_startup_note: String,
}

/// How Kafka's record key options (rules with [`RuleAction::MessageKey`]) become RocketMQ
/// message keys, with the reasons the report gives.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageKeyLayout {
    /// The rocketmq meaning listing a sink's key columns (`rocketmq.sink.key.columns`).
    pub key_columns: String,
    /// The separator of that list.
    pub key_columns_separator: String,
    /// The rocketmq meaning that also writes the key columns into the body.
    pub keys_in_body: String,
    /// Why `key.format` is removed (`{format}` stands for its value).
    pub key_format_reason: String,
    /// Why a sink also writes its key columns into the body.
    pub keys_in_body_reason: String,
    /// Why `value.fields-include` = `EXCEPT_KEY` on a sink becomes keys in the body.
    pub except_key_reason: String,
    /// Why `key.fields-prefix` is removed.
    pub prefix_reason: String,
    /// Why a source's key options are removed when the value holds every column.
    pub source_key_reason: String,
    /// Why a source whose value leaves the key columns out is left for a human.
    pub source_except_key_reason: String,
}

/// The Kafka format that reads rocketmq-flink's delimited-text bodies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelimitedText {
    /// The format (`csv`).
    pub format: String,
    /// Its option holding the field delimiter.
    pub delimiter_option: String,
    /// The rocketmq meaning of the field delimiter.
    pub delimiter_canonical: String,
    /// Further options of the format.
    pub options: BTreeMap<String, String>,
}

/// What migrate does with a Kafka option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleAction {
    /// Rewritten to the rocketmq option with the rule's meaning.
    Map,
    /// Same key and value on both connectors.
    Keep,
    /// Removed (no effect on RocketMQ).
    Drop,
    /// Left in place and reported for a human.
    Manual,
    /// Part of Kafka's record key, rewritten as [`MessageKeyLayout`] says.
    MessageKey,
}

/// Where a mapped option's value comes from, when it is not copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueSource {
    /// The cluster map (`--namesrv`, or a mapping file from Kafka bootstrap servers).
    Cluster,
    /// A Flink duration converted to milliseconds.
    DurationMs,
    /// Milliseconds written as a Flink duration (`60000 ms`).
    MsDuration,
    /// A comma-separated list written as Flink's `;`-separated list.
    CommaList,
    /// Kafka topic names (`;`-separated) made valid RocketMQ topic names.
    RocketmqTopic,
}

/// A condition on another option of the same table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The other option (its schema default counts when it is absent).
    pub key: String,
    /// The values for which the rule applies.
    pub values: Vec<String>,
}

/// One Kafka option and what migrate does with it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaOptionRule {
    /// The Kafka key, or a family ending in `*`.
    pub kafka: String,
    /// What to do.
    pub action: RuleAction,
    /// For `map`: the rocketmq meaning.
    pub canonical: Option<String>,
    /// Where the value comes from, when it is not copied.
    pub value: Option<ValueSource>,
    /// Value translations (`""` removes the option).
    #[serde(default)]
    pub values: BTreeMap<String, String>,
    /// Notes shown in the report for some values.
    #[serde(default)]
    pub value_notes: BTreeMap<String, String>,
    /// Values left for a human, with the reason.
    #[serde(default)]
    pub manual_values: BTreeMap<String, String>,
    /// For `drop`: only these values are removed; others are left for a human.
    #[serde(default)]
    pub drop_values: Vec<String>,
    /// For `drop`: value -> option; the value is removed (with its `value_notes` entry as the
    /// reason) while the table does not set that option, and left for a human otherwise.
    #[serde(default)]
    pub drop_values_unless_set: BTreeMap<String, String>,
    /// The roles the rule applies to; empty means every role.
    #[serde(default)]
    pub roles: Vec<Role>,
    /// Why the option is removed on tables without those roles.
    pub other_role_reason: Option<String>,
    /// The rule applies only while another option has some values.
    pub when: Option<Condition>,
    /// Why the option is removed when `when` does not hold.
    pub when_reason: Option<String>,
    /// Why the option is dropped or left for a human.
    pub reason: Option<String>,
    /// A note shown in the report whenever the rule applies.
    pub note: Option<String>,
    /// The connectors the rule is for; empty means kafka and upsert-kafka.
    #[serde(default)]
    pub connectors: Vec<String>,
}

impl KafkaOptionRule {
    /// Whether the rule's key (or family) covers `key`.
    pub fn covers(&self, key: &str) -> bool {
        match self.kafka.strip_suffix('*') {
            Some(prefix) => key.len() > prefix.len() && key.starts_with(prefix),
            None => self.kafka == key,
        }
    }

    /// Whether the rule is for `connector`.
    pub fn is_for(&self, connector: &str) -> bool {
        self.connectors.is_empty() || self.connectors.iter().any(|c| c == connector)
    }
}

/// How export writes one rocketmq meaning as a Kafka option.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToKafkaRule {
    /// The rocketmq meaning.
    pub canonical: String,
    /// The Kafka key (absent with `drop_reason`).
    pub kafka: Option<String>,
    /// Where the value comes from, when it is not copied.
    pub value: Option<ValueSource>,
    /// Value translations; a value not listed is left for a human (when the list is not empty).
    #[serde(default)]
    pub values: Vec<ToKafkaValue>,
    /// The meaning has no Kafka equivalent and is removed for this reason.
    pub drop_reason: Option<String>,
    /// With `drop_reason`: only these values are removed; others are left for a human.
    #[serde(default)]
    pub drop_values: Vec<String>,
    /// Kafka options written alongside.
    #[serde(default)]
    pub with: BTreeMap<String, String>,
    /// A note for the report.
    pub note: Option<String>,
}

/// One value translation of a [`ToKafkaRule`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToKafkaValue {
    /// The rocketmq value.
    pub rocketmq: String,
    /// The Kafka value.
    pub kafka: String,
    /// Another Kafka key to write the value under.
    pub key: Option<String>,
    /// Extra Kafka options written alongside.
    #[serde(default)]
    pub with: BTreeMap<String, String>,
}

/// A Kafka metadata key and the rocketmq one Riffle uses instead.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataRule {
    /// Kafka's key.
    pub kafka: String,
    /// The rocketmq key; empty when there is none.
    pub rocketmq: String,
    /// A note for the report.
    pub note: Option<String>,
    /// Why there is no rocketmq key.
    pub reason: Option<String>,
}

impl KafkaMapping {
    /// The rule for a Kafka key of `connector`: an exact key first, then the longest family.
    pub fn rule_for(&self, connector: &str, key: &str) -> Option<&KafkaOptionRule> {
        let candidates = self.options.iter().filter(|r| r.is_for(connector));
        candidates
            .filter(|r| r.covers(key))
            .max_by_key(|r| (!r.kafka.ends_with('*'), r.kafka.len()))
    }

    /// [`KafkaMapping::rule_for`] the `kafka` connector.
    pub fn rule(&self, key: &str) -> Option<&KafkaOptionRule> {
        self.rule_for("kafka", key)
    }

    /// The export rule for a rocketmq meaning.
    pub fn to_kafka(&self, canonical: &str) -> Option<&ToKafkaRule> {
        self.to_kafka.iter().find(|r| r.canonical == canonical)
    }

    /// The metadata rule for a Kafka metadata key.
    pub fn metadata_for_kafka(&self, key: &str) -> Option<&MetadataRule> {
        self.metadata.iter().find(|m| m.kafka == key)
    }

    /// The metadata rule whose rocketmq key is `key`.
    pub fn metadata_for_rocketmq(&self, key: &str) -> Option<&MetadataRule> {
        self.metadata
            .iter()
            .find(|m| !m.rocketmq.is_empty() && m.rocketmq == key)
    }

    /// Checks the rules against the connector schemas; also that every Kafka option is covered.
    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        let kafka_connectors = ["kafka", "upsert-kafka"];
        for rule in &self.options {
            let ctx = |e: String| format!("option `{}`: {e}", rule.kafka);
            let connectors: Vec<&str> = if rule.connectors.is_empty() {
                kafka_connectors.to_vec()
            } else {
                rule.connectors.iter().map(String::as_str).collect()
            };
            if !rule.kafka.ends_with('*')
                && !connectors
                    .iter()
                    .any(|c| require_option(dialects, c, &rule.kafka).is_ok())
            {
                return Err(ctx("not an option of kafka or upsert-kafka".to_string()));
            }
            match rule.action {
                RuleAction::Map => {
                    let canonical = rule
                        .canonical
                        .as_deref()
                        .ok_or_else(|| ctx("`map` needs a `canonical`".to_string()))?;
                    require_canonical(dialects, canonical).map_err(ctx)?;
                }
                RuleAction::Keep => {
                    require_option(dialects, "rocketmq", &rule.kafka).map_err(ctx)?;
                }
                RuleAction::MessageKey => {}
                RuleAction::Drop | RuleAction::Manual => {
                    if rule.reason.is_none() {
                        return Err(ctx("`drop` and `manual` need a `reason`".to_string()));
                    }
                }
            }
            if !rule.roles.is_empty() && rule.other_role_reason.is_none() {
                return Err(ctx("`roles` needs an `other_role_reason`".to_string()));
            }
            if let Some(when) = &rule.when {
                if rule.when_reason.is_none() {
                    return Err(ctx("`when` needs a `when_reason`".to_string()));
                }
                require_option(dialects, "kafka", &when.key).map_err(ctx)?;
            }
        }
        for name in kafka_connectors {
            let schema = dialects
                .connector(name)
                .ok_or_else(|| format!("no connector `{name}`"))?;
            for option in schema.options.iter().chain(&schema.prefixes) {
                let key = option.key.as_str();
                if self.rule_for(name, key).is_none() {
                    return Err(format!("{name} option `{key}` has no rule"));
                }
            }
        }
        for rule in &self.to_kafka {
            let ctx = |e: String| format!("to_kafka `{}`: {e}", rule.canonical);
            require_canonical(dialects, &rule.canonical).map_err(ctx)?;
            match (&rule.kafka, &rule.drop_reason) {
                (Some(key), None) => require_option(dialects, "kafka", key).map_err(ctx)?,
                (None, Some(_)) => {}
                _ => return Err(ctx("needs exactly one of `kafka` and `drop_reason`".into())),
            }
            for value in &rule.values {
                for key in value.key.iter().chain(value.with.keys()) {
                    require_option(dialects, "kafka", key).map_err(ctx)?;
                }
            }
            for key in rule.with.keys() {
                require_option(dialects, "kafka", key).map_err(ctx)?;
            }
        }
        let rocketmq = dialects
            .connector("rocketmq")
            .ok_or_else(|| "no connector `rocketmq`".to_string())?;
        let changelog = rocketmq
            .option(&self.upsert.changelog_option)
            .ok_or_else(|| {
                format!(
                    "`{}` is not a rocketmq option",
                    self.upsert.changelog_option
                )
            })?;
        changelog
            .ty
            .validate(&self.upsert.changelog_value)
            .map_err(|e| format!("upsert changelog value: {e}"))?;
        let key = &self.message_key;
        for canonical in [&key.key_columns, &key.keys_in_body] {
            require_canonical(dialects, canonical)?;
        }
        let text = &self.delimited_text;
        require_canonical(dialects, &text.delimiter_canonical)?;
        let format = dialects
            .format(&text.format)
            .ok_or_else(|| format!("no format `{}`", text.format))?;
        for key in std::iter::once(&text.delimiter_option).chain(text.options.keys()) {
            if !format.options.iter().any(|o| &o.key == key) {
                return Err(format!(
                    "`{key}` is not an option of format `{}`",
                    text.format
                ));
            }
        }
        for m in &self.metadata {
            if m.rocketmq.is_empty() && m.reason.is_none() {
                return Err(format!(
                    "metadata `{}` has no rocketmq key and no reason",
                    m.kafka
                ));
            }
        }
        Ok(())
    }
}
