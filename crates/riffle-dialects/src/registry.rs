//! Loading and cross-checking the embedded data files.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use crate::config::{ConfigOptionSpec, RawConfig};
use crate::connector::{is_pattern, ConnectorSchema, RawConnector};
use crate::feature::{Feature, RawFeatures};
use crate::format::{FormatSchema, RawFormat};
use crate::function::{FunctionSpec, RawFunctions};
use crate::support::Support;

/// A data file embedded at build time: its path under `dialects/` and its text.
type Source = (&'static str, &'static str);

/// Embeds `dialects/<path>` from the repository root.
macro_rules! dialect_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../../dialects/", $path)))
    };
}

/// Every embedded file; the tests check this list against the `dialects/` directory.
pub(crate) struct Sources {
    connectors: &'static [Source],
    formats: &'static [Source],
    functions: Source,
    config: Source,
    features: Source,
}

/// The files compiled into the crate.
const EMBEDDED: Sources = Sources {
    connectors: &[
        dialect_file!("connectors/blackhole.toml"),
        dialect_file!("connectors/datagen.toml"),
        dialect_file!("connectors/filesystem.toml"),
        dialect_file!("connectors/kafka.toml"),
        dialect_file!("connectors/nexmark.toml"),
        dialect_file!("connectors/print.toml"),
        dialect_file!("connectors/rocketmq.toml"),
        dialect_file!("connectors/upsert-kafka.toml"),
    ],
    formats: &[
        dialect_file!("formats/avro.toml"),
        dialect_file!("formats/avro-confluent.toml"),
        dialect_file!("formats/canal-json.toml"),
        dialect_file!("formats/csv.toml"),
        dialect_file!("formats/debezium-avro-confluent.toml"),
        dialect_file!("formats/debezium-json.toml"),
        dialect_file!("formats/json.toml"),
        dialect_file!("formats/maxwell-json.toml"),
        dialect_file!("formats/ogg-json.toml"),
        dialect_file!("formats/raw.toml"),
    ],
    functions: dialect_file!("flink/functions.toml"),
    config: dialect_file!("flink/config.toml"),
    features: dialect_file!("riffle/features.toml"),
};

/// A data file that does not parse or fails a consistency check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file's path under `dialects/`.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dialects/{}: {}", self.file, self.message)
    }
}

impl std::error::Error for LoadError {}

/// All dialect facts, loaded and checked.
#[derive(Debug)]
pub struct Dialects {
    connectors: Vec<ConnectorSchema>,
    formats: Vec<FormatSchema>,
    functions: Vec<FunctionSpec>,
    function_categories: Vec<String>,
    /// Upper-cased names and aliases → index into `functions`.
    function_index: HashMap<String, usize>,
    features: Vec<Feature>,
    config: Vec<ConfigOptionSpec>,
}

static REGISTRY: OnceLock<Result<Dialects, LoadError>> = OnceLock::new();

/// Parses and checks the embedded data once; later calls return the same result.
pub fn init() -> Result<&'static Dialects, &'static LoadError> {
    REGISTRY.get_or_init(|| Dialects::load(&EMBEDDED)).as_ref()
}

/// Parses one TOML file into its raw form, naming the file on failure.
fn parse<T: serde::de::DeserializeOwned>((file, text): Source) -> Result<T, LoadError> {
    toml::from_str(text).map_err(|e| err(file, e.to_string()))
}

fn err(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_string(),
        message: message.into(),
    }
}

/// The file stem of `connectors/kafka.toml`.
fn stem(file: &str) -> &str {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.strip_suffix(".toml").unwrap_or(name)
}

/// Ids are dotted groups of kebab-case words: `query.window-tvf.tumble`.
fn is_feature_id(id: &str) -> bool {
    id.split('.').count() >= 2
        && id.split('.').all(|group| {
            !group.is_empty()
                && group.split('-').all(|w| {
                    !w.is_empty()
                        && w.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                })
        })
}

/// Kebab-case words, for generation and canonical names.
fn is_kebab(word: &str) -> bool {
    is_feature_id(&format!("x.{word}"))
}

/// Reports the first value seen twice.
fn first_duplicate<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = HashSet::new();
    values.into_iter().find(|v| !seen.insert(*v))
}

impl Dialects {
    /// Parses and cross-checks a set of sources.
    pub(crate) fn load(sources: &Sources) -> Result<Dialects, LoadError> {
        let mut formats = Vec::new();
        for &source in sources.formats {
            let raw: RawFormat = parse(source)?;
            let format = raw.resolve().map_err(|e| err(source.0, e))?;
            check_format(&format).map_err(|e| err(source.0, e))?;
            if format.name != stem(source.0) {
                return Err(err(
                    source.0,
                    format!("name `{}` does not match the file name", format.name),
                ));
            }
            formats.push(format);
        }
        formats.sort_by(|a, b| a.name.cmp(&b.name));

        let mut connectors = Vec::new();
        for &source in sources.connectors {
            let raw: RawConnector = parse(source)?;
            let connector = raw.resolve().map_err(|e| err(source.0, e))?;
            if connector.name != stem(source.0) {
                return Err(err(
                    source.0,
                    format!("name `{}` does not match the file name", connector.name),
                ));
            }
            check_connector(&connector, &formats).map_err(|e| err(source.0, e))?;
            connectors.push(connector);
        }
        connectors.sort_by(|a, b| a.name.cmp(&b.name));

        let raw: RawFunctions = parse(sources.functions)?;
        let function_categories = raw.categories.clone();
        let functions = raw.resolve().map_err(|e| err(sources.functions.0, e))?;
        let mut function_index = HashMap::new();
        for (i, f) in functions.iter().enumerate() {
            for name in std::iter::once(&f.name).chain(&f.aliases) {
                if function_index.insert(name.to_uppercase(), i).is_some() {
                    return Err(err(
                        sources.functions.0,
                        format!("function name `{name}` appears twice"),
                    ));
                }
            }
        }

        let raw: RawConfig = parse(sources.config)?;
        let config = raw.resolve().map_err(|e| err(sources.config.0, e))?;
        let keys = config
            .iter()
            .flat_map(|c| std::iter::once(&c.key).chain(&c.fallback_keys));
        if let Some(dup) = first_duplicate(keys.map(String::as_str)) {
            return Err(err(
                sources.config.0,
                format!("config key `{dup}` appears twice"),
            ));
        }

        let raw: RawFeatures = parse(sources.features)?;
        let mut features = raw.resolve().map_err(|e| err(sources.features.0, e))?;
        for f in &features {
            if !is_feature_id(&f.id) {
                return Err(err(
                    sources.features.0,
                    format!("`{}` is not a dotted kebab-case id", f.id),
                ));
            }
            if f.id.starts_with("connector.") || f.id.starts_with("format.") {
                return Err(err(
                    sources.features.0,
                    format!(
                        "`{}`: connector.* and format.* features come from their own files",
                        f.id
                    ),
                ));
            }
        }
        features.extend(connectors.iter().map(|c| Feature {
            id: format!("connector.{}", c.name),
            title: format!("{} connector", c.name),
            docs: c.description.clone(),
            support: c.support.clone(),
        }));
        features.extend(formats.iter().map(|f| Feature {
            id: format!("format.{}", f.name),
            title: format!("{} format", f.name),
            docs: f.description.clone(),
            support: f.support.clone(),
        }));
        if let Some(dup) = first_duplicate(features.iter().map(|f| f.id.as_str())) {
            return Err(err(
                sources.features.0,
                format!("feature `{dup}` appears twice"),
            ));
        }

        Ok(Dialects {
            connectors,
            formats,
            functions,
            function_categories,
            function_index,
            features,
            config,
        })
    }

    /// See [`crate::connector`].
    pub fn connector(&self, name: &str) -> Option<&ConnectorSchema> {
        self.connectors.iter().find(|c| c.name == name)
    }

    /// See [`crate::connectors`].
    pub fn connectors(&self) -> &[ConnectorSchema] {
        &self.connectors
    }

    /// See [`crate::format`].
    pub fn format(&self, name: &str) -> Option<&FormatSchema> {
        self.formats.iter().find(|f| f.name == name)
    }

    /// See [`crate::formats`].
    pub fn formats(&self) -> &[FormatSchema] {
        &self.formats
    }

    /// See [`crate::function`].
    pub fn function(&self, name: &str) -> Option<&FunctionSpec> {
        self.function_index
            .get(&name.trim().to_uppercase())
            .and_then(|&i| self.functions.get(i))
    }

    /// See [`crate::functions`].
    pub fn functions(&self) -> &[FunctionSpec] {
        &self.functions
    }

    /// See [`crate::function_categories`].
    pub fn function_categories(&self) -> &[String] {
        &self.function_categories
    }

    /// See [`crate::feature`].
    pub fn feature(&self, id: &str) -> Option<&Feature> {
        self.features.iter().find(|f| f.id == id)
    }

    /// See [`crate::features`].
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// See [`crate::config_option`].
    pub fn config_option(&self, key: &str) -> Option<&ConfigOptionSpec> {
        self.config
            .iter()
            .find(|c| c.key == key)
            .or_else(|| self.config.iter().find(|c| c.matches(key)))
    }

    /// See [`crate::config_options`].
    pub fn config_options(&self) -> &[ConfigOptionSpec] {
        &self.config
    }
}

/// Checks one connector against itself and the known formats.
fn check_connector(c: &ConnectorSchema, formats: &[FormatSchema]) -> Result<(), String> {
    if c.roles.is_empty() {
        return Err("no roles".to_string());
    }
    let keys = c
        .options
        .iter()
        .flat_map(|o| std::iter::once(&o.key).chain(&o.fallback_keys));
    if let Some(dup) = first_duplicate(keys.map(String::as_str)) {
        return Err(format!("option key `{dup}` appears twice"));
    }
    if let Some(dup) = first_duplicate(c.prefixes.iter().map(|p| p.key.as_str())) {
        return Err(format!("prefix `{dup}` appears twice"));
    }
    for o in &c.options {
        if is_pattern(&o.key) {
            return Err(format!(
                "option `{}` is a pattern; list it under `prefixes`",
                o.key
            ));
        }
    }
    for p in &c.prefixes {
        if !p.is_pattern() {
            return Err(format!("prefix `{}` has no `#` or trailing `*`", p.key));
        }
        if p.required || !p.fallback_keys.is_empty() {
            return Err(format!(
                "prefix `{}` cannot be required or have fallback keys",
                p.key
            ));
        }
    }
    for o in c.options.iter().chain(&c.prefixes) {
        if let Some(role) = o.roles.iter().find(|r| !c.roles.contains(r)) {
            return Err(format!(
                "option `{}` names role {role:?}, which the connector lacks",
                o.key
            ));
        }
        for word in o.generation.iter().chain(&o.canonical) {
            if !is_kebab(word) {
                return Err(format!("option `{}`: `{word}` is not kebab-case", o.key));
            }
        }
    }
    for key in c.format.keys.iter().chain(&c.format.key_format_key) {
        if c.option(key).is_none() {
            return Err(format!(
                "format key `{key}` is not one of the connector's options"
            ));
        }
    }
    if c.format.required && c.format.keys.is_empty() {
        return Err("a required format needs `keys`".to_string());
    }
    if c.format.key_required && c.format.key_format_key.is_none() {
        return Err("a required key format needs `key_format_key`".to_string());
    }
    for name in &c.format.allowed {
        if !formats.iter().any(|f| &f.name == name) {
            return Err(format!(
                "allowed format `{name}` has no file under dialects/formats/"
            ));
        }
    }
    for name in c.format.unsupported.keys() {
        let supported = formats
            .iter()
            .any(|f| &f.name == name && f.support == Support::Supported);
        if !supported {
            return Err(format!(
                "format `{name}` is listed as unsupported with the connector, but it is not a supported format"
            ));
        }
    }
    Ok(())
}

/// Checks one format's option keys.
fn check_format(f: &FormatSchema) -> Result<(), String> {
    let keys = f
        .options
        .iter()
        .flat_map(|o| std::iter::once(&o.key).chain(&o.fallback_keys));
    if let Some(dup) = first_duplicate(keys.map(String::as_str)) {
        return Err(format!("option key `{dup}` appears twice"));
    }
    let prefix = format!("{}.", f.name);
    for o in &f.options {
        if !o.key.starts_with(&prefix) {
            return Err(format!("option `{}` does not start with `{prefix}`", o.key));
        }
        if !o.roles.is_empty() || o.generation.is_some() || o.canonical.is_some() {
            return Err(format!(
                "option `{}`: roles/generation/canonical are for connectors",
                o.key
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn embedded_data_loads_and_checks() {
        if let Err(e) = Dialects::load(&EMBEDDED) {
            panic!("{e}");
        }
    }

    /// Every `.toml` under `dialects/` is embedded, so no file is silently left out.
    #[test]
    fn every_data_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dialects");
        let mut on_disk = Vec::new();
        for dir in ["connectors", "formats", "flink", "riffle"] {
            let entries = std::fs::read_dir(root.join(dir)).map_err(|e| e.to_string());
            for entry in entries.unwrap_or_else(|e| panic!("{dir}: {e}")).flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".toml") {
                    on_disk.push(format!("{dir}/{name}"));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = EMBEDDED
            .connectors
            .iter()
            .chain(EMBEDDED.formats)
            .chain([&EMBEDDED.functions, &EMBEDDED.config, &EMBEDDED.features])
            .map(|(file, _)| file.to_string())
            .collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
    }

    /// Replaces one file of the embedded set and returns the load error.
    fn load_with(file: &'static str, text: &'static str) -> LoadError {
        let swap = |sources: &'static [Source]| -> &'static [Source] {
            let replaced: Vec<Source> = sources
                .iter()
                .map(|s| if s.0 == file { (file, text) } else { *s })
                .collect();
            Box::leak(replaced.into_boxed_slice())
        };
        let pick = |s: Source| if s.0 == file { (file, text) } else { s };
        let sources = Sources {
            connectors: swap(EMBEDDED.connectors),
            formats: swap(EMBEDDED.formats),
            functions: pick(EMBEDDED.functions),
            config: pick(EMBEDDED.config),
            features: pick(EMBEDDED.features),
        };
        match Dialects::load(&sources) {
            Ok(_) => panic!("{file} should have been rejected"),
            Err(e) => e,
        }
    }

    #[test]
    fn bad_data_is_rejected_with_the_file_named() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "connectors/print.toml",
                "name = 'print'\ndescription = 'd'\nroles = ['sink']\nstatus = 'supported'\n\
                 [format]\nallowed = ['nope']\n",
                "allowed format `nope`",
            ),
            (
                "connectors/print.toml",
                "name = 'printer'\ndescription = 'd'\nroles = ['sink']\nstatus = 'supported'\n",
                "does not match the file name",
            ),
            (
                "connectors/print.toml",
                "name = 'print'\ndescription = 'd'\nroles = ['sink']\nstatus = 'supported'\n\
                 [[options]]\nkey = 'a'\ntype = 'int'\ndefault = 'x'\ndescription = 'd'\n",
                "default does not parse",
            ),
            (
                "connectors/print.toml",
                "name = 'print'\ndescription = 'd'\nroles = ['sink']\nstatus = 'supported'\n\
                 [[options]]\nkey = 'a'\ntype = 'int'\ndescription = 'd'\n\
                 [[options]]\nkey = 'b'\ntype = 'int'\ndescription = 'd'\nfallback_keys = ['a']\n",
                "appears twice",
            ),
            (
                "connectors/print.toml",
                "name = 'print'\ndescription = 'd'\nroles = ['sink']\nstatus = 'supported'\ntypo = 1\n",
                "typo",
            ),
            ("riffle/features.toml", "[[feature]]\nid = 'Bad_Id'\ntitle = 't'\ndocs = 'd'\nstatus = 'supported'\n", "kebab"),
            (
                "riffle/features.toml",
                "[[feature]]\nid = 'stmt.set'\ntitle = 't'\ndocs = 'd'\n",
                "missing `status`",
            ),
            (
                "formats/raw.toml",
                "name = 'raw'\ndescription = 'd'\nchangelog = 'insert-only'\nstatus = 'supported'\n\
                 [[options]]\nkey = 'json.x'\ntype = 'string'\ndescription = 'd'\n",
                "does not start with `raw.`",
            ),
            (
                "flink/functions.toml",
                "categories = ['c']\nstatus = 'supported'\n[[function]]\nname = 'F'\n\
                 kind = 'scalar'\ncategory = 'c'\n\
                 signatures = [{ args = [], returns = 'INT', nullable = 'sometimes' }]\n",
                "unknown nullability `sometimes`",
            ),
            (
                "flink/functions.toml",
                "categories = ['c']\nstatus = 'supported'\n[[function]]\nname = 'F'\n\
                 kind = 'scalar'\ncategory = 'c'\n\
                 signatures = [{ args = [], returns = 'INT NOT NULL' }]\n",
                "`nullable = \"never\"`",
            ),
        ];
        for (file, text, expected) in cases {
            let e = load_with(file, text);
            assert_eq!(e.file, *file);
            assert!(
                e.message.contains(expected),
                "{file}: `{}` lacks `{expected}`",
                e.message
            );
        }
    }

    #[test]
    fn feature_ids_are_dotted_kebab_case() {
        assert!(is_feature_id("query.window-tvf.tumble"));
        assert!(is_feature_id("stmt.set"));
        assert!(!is_feature_id("stmt"));
        assert!(!is_feature_id("stmt.Set"));
        assert!(!is_feature_id("stmt..set"));
        assert!(!is_feature_id("stmt.-set"));
    }
}
