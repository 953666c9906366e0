//! Dialect facts for Riffle: connector and format option schemas, Flink's built-in functions and
//! configuration keys, and the registry of SQL features with Riffle's support for each.
//!
//! The facts are data files under `dialects/` at the repository root, embedded at build time and
//! parsed once on first use. `riffle check`, `riffle migrate`, export and the planner all read
//! them through this crate, so they cannot disagree.
//!
//! ```
//! let kafka = riffle_dialects::connector("kafka").expect("kafka schema");
//! let startup = kafka.option("scan.startup.mode").expect("known option");
//! assert!(startup.ty.validate("earliest-offset").is_ok());
//! assert_eq!(riffle_dialects::did_you_mean("kafak", ["kafka", "rocketmq"]), Some("kafka"));
//! ```

#![warn(missing_docs)]

mod config;
mod connector;
mod feature;
mod format;
mod function;
mod mapping;
mod option_type;
mod registry;
mod support;

pub use config::ConfigOptionSpec;
pub use connector::{ConnectorSchema, FormatRequirement, OptionSpec, Role};
pub use feature::Feature;
pub use format::{ChangelogMode, FormatSchema};
pub use function::{
    ArgSpec, FunctionKind, FunctionSpec, Nullability, ReturnRule, Signature, TypeFamily,
};
pub use mapping::{
    init_mappings, Condition, DelimitedText, FlinkRelease, FlinkReleases, FlinkVersion,
    GroupWindows, JarRules, KafkaMapping, KafkaOptionRule, KeyColumns, KeyOverride, KeyRewrite,
    LegacyKey, LegacyOptions, Mappings, MessageKeyLayout, MetadataRule, OverrideAction,
    RocketmqFlinkRelease, RocketmqKeys, RoleCanonical, RoleLists, RsqldbMapping, RuleAction,
    SyntaxRewrite, SyntaxSince, ToKafkaRule, ToKafkaValue, UpsertLayout, ValueSource, WindowSpec,
};
pub use option_type::{parse_char, parse_duration_nanos, parse_memory_size, OptionType};
pub use registry::{init, Dialects, LoadError};
pub use support::Support;

/// The loaded registry. The embedded files are checked by this crate's tests, so a failure here
/// is a build defect, not something user input can cause.
fn registry() -> &'static Dialects {
    match init() {
        Ok(dialects) => dialects,
        Err(e) => {
            panic!("embedded dialect data is invalid (riffle-dialects' tests catch this): {e}")
        }
    }
}

/// The migration and export mappings (`dialects/mappings/`). Like the registry, the embedded
/// files are checked by this crate's tests, so a failure here is a build defect.
pub fn mappings() -> &'static Mappings {
    match init_mappings() {
        Ok(mappings) => mappings,
        Err(e) => {
            panic!("embedded mapping data is invalid (riffle-dialects' tests catch this): {e}")
        }
    }
}

/// The schema of a connector, by its exact identifier (`'connector' = 'kafka'`).
pub fn connector(name: &str) -> Option<&'static ConnectorSchema> {
    registry().connector(name)
}

/// Every connector schema, sorted by name.
pub fn connectors() -> &'static [ConnectorSchema] {
    registry().connectors()
}

/// The schema of a format, by its exact identifier (`'format' = 'json'`).
pub fn format(name: &str) -> Option<&'static FormatSchema> {
    registry().format(name)
}

/// Every format schema, sorted by name.
pub fn formats() -> &'static [FormatSchema] {
    registry().formats()
}

/// A built-in function or operator by name or alias, ignoring case.
pub fn function(name: &str) -> Option<&'static FunctionSpec> {
    registry().function(name)
}

/// Every built-in function, in the order of the data file.
pub fn functions() -> &'static [FunctionSpec] {
    registry().functions()
}

/// The function categories, in the order of Flink's documentation.
pub fn function_categories() -> &'static [String] {
    registry().function_categories()
}

/// A feature by id, including the derived `connector.<name>` and `format.<name>` ids.
pub fn feature(id: &str) -> Option<&'static Feature> {
    registry().feature(id)
}

/// Every feature: the hand-written ones, then one per connector and per format.
pub fn features() -> &'static [Feature] {
    registry().features()
}

/// A Flink configuration option by key or fallback key.
pub fn config_option(key: &str) -> Option<&'static ConfigOptionSpec> {
    registry().config_option(key)
}

/// Every known Flink configuration option.
pub fn config_options() -> &'static [ConfigOptionSpec] {
    registry().config_options()
}

/// The candidate closest to `name` by edit distance (ignoring case), if it is close enough to
/// be a likely typo: at most a third of the name's length in edits, and at least one.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let wanted = name.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&wanted, &c.to_lowercase()), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["kafka", "upsert-kafka", "rocketmq", "filesystem"];
        assert_eq!(did_you_mean("kafak", names), Some("kafka"));
        assert_eq!(did_you_mean("RocketMQ", names), Some("rocketmq"));
        assert_eq!(did_you_mean("rocketmqq", names), Some("rocketmq"));
        assert_eq!(did_you_mean("jdbc", names), None);
        assert_eq!(did_you_mean("x", Vec::<&str>::new()), None);
    }
}
