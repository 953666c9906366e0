//! The migration and export mappings (`dialects/mappings/*.toml`): the one model both directions
//! of `riffle migrate` / `riffle export` read, so they cannot disagree.
//!
//! - [`KafkaMapping`]: Kafka / upsert-kafka options and metadata <-> rocketmq meanings;
//! - [`RocketmqKeys`]: legacy rocketmq-flink and rsqlDB keys -> current keys, and the
//!   rocketmq-flink releases export can target;
//! - [`RsqldbMapping`]: the rest of the rsqlDB dialect (connector key, formats, watermarks,
//!   header columns);
//! - [`LegacyOptions`]: Flink's pre-1.11 `connector.type` property style -> current keys;
//! - [`GroupWindows`]: legacy group windows <-> window table-valued functions;
//! - [`FlinkReleases`]: the Flink releases export targets and the syntax newer than 1.15.
//!
//! Every file is checked against the connector and function schemas when loaded (a key that no
//! connector knows, or a legacy key that maps to no current key, is a load error).
//!
//! ```
//! let m = riffle_dialects::mappings();
//! let rule = m.kafka.rule("properties.group.id").expect("a rule");
//! assert_eq!(rule.canonical.as_deref(), Some("consumer-group"));
//! assert!(m.windows.window("SESSION").is_some_and(|w| w.partition_by_group_keys));
//! ```

mod kafka;
mod legacy;
mod releases;
mod rocketmq;
mod rsqldb;
mod windows;

use std::fmt;
use std::sync::OnceLock;

pub use kafka::{
    Condition, DelimitedText, KafkaMapping, KafkaOptionRule, MessageKeyLayout, MetadataRule,
    RuleAction, ToKafkaRule, ToKafkaValue, UpsertLayout, ValueSource,
};
pub use legacy::{LegacyKey, LegacyOptions};
pub use releases::{FlinkRelease, FlinkReleases, JarRules, SyntaxRewrite, SyntaxSince};
pub use rocketmq::{
    KeyColumns, KeyOverride, KeyRewrite, OverrideAction, RocketmqFlinkRelease, RocketmqKeys,
    RoleCanonical, RoleLists,
};
pub use rsqldb::RsqldbMapping;
pub use windows::{GroupWindows, WindowSpec};

use crate::registry::LoadError;
use crate::Dialects;

/// Every mapping file, loaded and checked.
#[derive(Debug)]
pub struct Mappings {
    /// `kafka-rocketmq.toml`.
    pub kafka: KafkaMapping,
    /// `rocketmq-keys.toml`.
    pub rocketmq: RocketmqKeys,
    /// `rsqldb.toml`.
    pub rsqldb: RsqldbMapping,
    /// `legacy-options.toml`.
    pub legacy: LegacyOptions,
    /// `group-windows.toml`.
    pub windows: GroupWindows,
    /// `flink-releases.toml`.
    pub flink: FlinkReleases,
}

/// A data file embedded at build time: its path under `dialects/` and its text.
type Source = (&'static str, &'static str);

/// Embeds `dialects/mappings/<name>`.
macro_rules! mapping_file {
    ($name:literal) => {
        (
            concat!("mappings/", $name),
            include_str!(concat!("../../../../dialects/mappings/", $name)),
        )
    };
}

/// The embedded mapping files; a test checks the list against the directory.
const FILES: [Source; 6] = [
    mapping_file!("kafka-rocketmq.toml"),
    mapping_file!("rocketmq-keys.toml"),
    mapping_file!("rsqldb.toml"),
    mapping_file!("legacy-options.toml"),
    mapping_file!("group-windows.toml"),
    mapping_file!("flink-releases.toml"),
];

static MAPPINGS: OnceLock<Result<Mappings, LoadError>> = OnceLock::new();

/// Parses and checks the embedded mapping files once (after the connector and function data,
/// which they are checked against); later calls return the same result.
pub fn init_mappings() -> Result<&'static Mappings, &'static LoadError> {
    MAPPINGS
        .get_or_init(|| match crate::init() {
            Ok(dialects) => Mappings::load(&FILES, dialects),
            Err(e) => Err(e.clone()),
        })
        .as_ref()
}

fn parse<T: serde::de::DeserializeOwned>((file, text): Source) -> Result<T, LoadError> {
    toml::from_str(text).map_err(|e| err(file, e.to_string()))
}

fn err(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_string(),
        message: message.into(),
    }
}

impl Mappings {
    /// Parses the six files (in [`FILES`] order) and checks them against `dialects`.
    fn load(files: &[Source; 6], dialects: &Dialects) -> Result<Mappings, LoadError> {
        let [kafka, rocketmq, rsqldb, legacy, windows, flink] = *files;
        let m = Mappings {
            kafka: parse(kafka)?,
            rocketmq: parse(rocketmq)?,
            rsqldb: parse(rsqldb)?,
            legacy: parse(legacy)?,
            windows: parse(windows)?,
            flink: parse(flink)?,
        };
        m.kafka.check(dialects).map_err(|e| err(kafka.0, e))?;
        m.rocketmq.check(dialects).map_err(|e| err(rocketmq.0, e))?;
        m.rsqldb.check(dialects).map_err(|e| err(rsqldb.0, e))?;
        m.legacy.check(dialects).map_err(|e| err(legacy.0, e))?;
        m.windows.check(dialects).map_err(|e| err(windows.0, e))?;
        m.flink.check(dialects).map_err(|e| err(flink.0, e))?;
        Ok(m)
    }
}

/// A Flink release number, `MAJOR.MINOR` (patch releases do not change SQL features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlinkVersion {
    /// Major version (1, 2).
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl FlinkVersion {
    /// Parses `1.19` (and `1.19.1`, ignoring the patch number).
    pub fn parse(text: &str) -> Result<FlinkVersion, String> {
        let mut parts = text.trim().split('.');
        let number = |p: Option<&str>| p.and_then(|p| p.parse::<u16>().ok());
        match (number(parts.next()), number(parts.next())) {
            (Some(major), Some(minor)) if parts.all(|p| p.parse::<u16>().is_ok()) => {
                Ok(FlinkVersion { major, minor })
            }
            _ => Err(format!(
                "`{text}` is not a Flink version such as 1.19 or 2.3"
            )),
        }
    }
}

impl fmt::Display for FlinkVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl<'de> serde::Deserialize<'de> for FlinkVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        FlinkVersion::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Checks that the option `key` exists in the connector `connector`.
fn require_option(dialects: &Dialects, connector: &str, key: &str) -> Result<(), String> {
    let schema = dialects
        .connector(connector)
        .ok_or_else(|| format!("no connector `{connector}`"))?;
    schema
        .option(key)
        .map(|_| ())
        .ok_or_else(|| format!("`{key}` is not an option of connector `{connector}`"))
}

/// Checks that some rocketmq option carries the meaning `canonical`.
fn require_canonical(dialects: &Dialects, canonical: &str) -> Result<(), String> {
    let schema = dialects
        .connector("rocketmq")
        .ok_or_else(|| "no connector `rocketmq`".to_string())?;
    if schema
        .options
        .iter()
        .any(|o| o.canonical.as_deref() == Some(canonical))
    {
        Ok(())
    } else {
        Err(format!("no rocketmq option has the meaning `{canonical}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn mappings_load_and_check() {
        if let Err(e) = init_mappings() {
            panic!("{e}");
        }
    }

    #[test]
    fn every_mapping_file_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dialects/mappings");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| format!("mappings/{}", e.file_name().to_string_lossy()))
                    .filter(|name| name.ends_with(".toml"))
                    .collect()
            })
            .unwrap_or_default();
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(f, _)| f.to_string()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn versions_parse_and_order() {
        let v = |s: &str| FlinkVersion::parse(s).unwrap_or_else(|e| panic!("{e}"));
        assert!(v("1.9") < v("1.15"));
        assert!(v("1.20") < v("2.0"));
        assert_eq!(v("1.19.2"), v("1.19"));
        assert_eq!(v("2.3").to_string(), "2.3");
        assert!(FlinkVersion::parse("2").is_err());
        assert!(FlinkVersion::parse("v1.15").is_err());
        assert!(FlinkVersion::parse("1.x").is_err());
    }

    /// Replaces one file and returns the load error.
    fn load_with(file: &str, text: &'static str) -> LoadError {
        let files = FILES.map(|(f, t)| if f == file { (f, text) } else { (f, t) });
        let dialects = crate::init().unwrap_or_else(|e| panic!("{e}"));
        match Mappings::load(&files, dialects) {
            Ok(_) => panic!("{file} should have been rejected"),
            Err(e) => e,
        }
    }

    #[test]
    fn bad_mappings_are_rejected_with_the_file_named() {
        let kafka = FILES[0].1;
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "mappings/kafka-rocketmq.toml",
                kafka.replace("kafka = \"topic-pattern\"", "kafka = \"topic-patern\""),
                "topic-patern",
            ),
            (
                "mappings/kafka-rocketmq.toml",
                kafka.replace("canonical = \"consumer-group\"", "canonical = \"group\""),
                "`group`",
            ),
            (
                "mappings/group-windows.toml",
                "window_columns = []\n[tvf_params]\n[auxiliary]\n[[window]]\nname = \"SLIDE\"\nargs = []\ntvf_since = \"1.13\"\n".to_string(),
                "SLIDE",
            ),
            (
                "mappings/flink-releases.toml",
                FILES[5].1.replace("version = \"1.16\"", "version = \"1.14\""),
                "oldest first",
            ),
            (
                "mappings/rocketmq-keys.toml",
                FILES[1].1.replace("key = \"maxThread\"", "key = \"maxThreads\""),
                "maxThreads",
            ),
        ];
        for (file, text, expected) in cases {
            let e = load_with(file, Box::leak(text.into_boxed_str()));
            assert_eq!(e.file, file);
            assert!(
                e.message.contains(expected),
                "{file}: `{}` lacks `{expected}`",
                e.message
            );
        }
    }
}
