//! Connector and format option validation against the schemas in `dialects/`, with Flink's
//! `FactoryUtil` messages.

use riffle_dialects::{ConnectorSchema, FormatSchema, OptionSpec, Role};
use riffle_sql::ast::Hint;
use riffle_sql::Span;

use crate::catalog::{ConnectorInfo, ObjectPath, OptionStyle, TableDef};
use crate::{Analyzer, TableUsage};

/// One `WITH` option with the spans of its key and value (inherited `LIKE` options carry the
/// span of the `LIKE` clause).
#[derive(Debug, Clone)]
pub(crate) struct OptionEntry {
    pub key: String,
    pub value: String,
    pub key_span: Span,
    pub value_span: Span,
}

/// A table whose required options are checked once the script's use of it is known.
#[derive(Debug, Clone)]
pub(crate) struct PendingRequired {
    pub path: ObjectPath,
    pub connector: &'static ConnectorSchema,
    /// Option generations the table's keys belong to (for rocketmq).
    pub generations: Vec<String>,
    pub style: OptionStyle,
    pub keys: Vec<String>,
    pub span: Span,
}

/// Flink's option key naming the connector.
const CONNECTOR_KEY: &str = "connector";
/// rsqlDB's connector key.
const RSQLDB_TYPE_KEY: &str = "type";
/// The pre-1.11 connector property.
const LEGACY_TYPE_KEY: &str = "connector.type";

impl Analyzer {
    /// Resolves a table's connector and validates its options. Required options are checked later
    /// (see [`Analyzer::finish_option_checks`]) because they depend on how the table is used.
    pub(crate) fn validate_options(
        &mut self,
        path: &ObjectPath,
        options: &[OptionEntry],
        table_span: Span,
    ) -> ConnectorInfo {
        let find = |key: &str| options.iter().find(|o| o.key == key);
        let (entry, style) = if let Some(e) = find(CONNECTOR_KEY) {
            (e, OptionStyle::Current)
        } else if let Some(e) = find(RSQLDB_TYPE_KEY) {
            (e, OptionStyle::RsqldbType)
        } else if let Some(e) = find(LEGACY_TYPE_KEY) {
            (e, OptionStyle::LegacyConnectorType)
        } else {
            self.missing_connector.push((path.clone(), table_span));
            return ConnectorInfo {
                name: None,
                option_style: OptionStyle::Current,
                generation: None,
                formats: Vec::new(),
            };
        };
        let mut info = ConnectorInfo {
            name: Some(entry.value.clone()),
            option_style: style,
            generation: None,
            formats: Vec::new(),
        };
        // Pre-1.11 property tables use a key set Riffle has no schema for; `riffle check`
        // reports them as needing migration instead.
        if style == OptionStyle::LegacyConnectorType {
            return info;
        }
        let Some(schema) = riffle_dialects::connector(&entry.value) else {
            let names: Vec<&str> = riffle_dialects::connectors()
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            let help =
                suggestion_or_list(&entry.value, &names, "Available factory identifiers are");
            self.error(
                "unknown-connector",
                format!(
                    "Could not find any factory for identifier '{}' that implements \
                     'org.apache.flink.table.factories.DynamicTableFactory' in the classpath.",
                    entry.value
                ),
                entry.value_span,
            )
            .help = Some(help);
            return info;
        };
        let formats = self.resolve_formats(schema, options, style);
        info.formats = formats.iter().map(|(_, f)| f.name.clone()).collect();

        let mut generations: Vec<String> = Vec::new();
        for option in options {
            let naming_key = match style {
                OptionStyle::Current => CONNECTOR_KEY,
                OptionStyle::RsqldbType => RSQLDB_TYPE_KEY,
                OptionStyle::LegacyConnectorType => LEGACY_TYPE_KEY,
            };
            // The key naming the connector is checked only where the schema lists it (rsqlDB's
            // `type` for rocketmq).
            if option.key == naming_key && schema.option(&option.key).is_none() {
                continue;
            }
            if let Some(g) = self
                .check_option(schema, &formats, option)
                .and_then(|s| s.generation.as_ref())
            {
                if !generations.contains(g) {
                    generations.push(g.clone());
                }
            }
        }
        if !generations.is_empty() {
            info.generation = Some(generations.join(","));
        }
        self.pending_required.push(PendingRequired {
            path: path.clone(),
            connector: schema,
            generations,
            style,
            keys: options.iter().map(|o| o.key.clone()).collect(),
            span: table_span,
        });
        info
    }

    /// Checks one option against the connector and its formats: unknown keys and invalid
    /// values. Returns the option's spec when the key is known.
    fn check_option(
        &mut self,
        schema: &'static ConnectorSchema,
        formats: &[(String, &'static FormatSchema)],
        option: &OptionEntry,
    ) -> Option<&'static OptionSpec> {
        let Some(spec) = schema
            .option(&option.key)
            .or_else(|| format_option(formats, &option.key))
        else {
            // Some connectors (filesystem) leave `<format>.*` keys the format does not know
            // unchecked.
            let format_prefixed = schema.format.unchecked_format_options
                && formats
                    .iter()
                    .any(|(_, f)| option.key.starts_with(&format!("{}.", f.name)));
            if !format_prefixed {
                self.unknown_option(schema, formats, option);
            }
            return None;
        };
        if let Err(reason) = spec.ty.validate(&option.value) {
            self.error(
                "invalid-option-value",
                format!("Invalid value for option '{}'.", option.key),
                option.value_span,
            )
            .help = Some(reason);
        }
        Some(spec)
    }

    /// Validates the `/*+ OPTIONS(...) */` hint of a table reference against the table's
    /// connector (Flink merges hint options into the table's before creating the source or sink).
    pub(crate) fn validate_hint_options(&mut self, table: &TableDef, hint: &Hint) {
        if table.connector.option_style != OptionStyle::Current {
            return;
        }
        let Some(schema) = table
            .connector
            .name
            .as_deref()
            .and_then(riffle_dialects::connector)
        else {
            return;
        };
        let format_keys = schema
            .format
            .keys
            .iter()
            .chain(schema.format.key_format_key.iter());
        let formats: Vec<(String, &'static FormatSchema)> = format_keys
            .filter_map(|key| {
                let value = table.option(key)?;
                riffle_dialects::format(value).map(|f| (key.clone(), f))
            })
            .collect();
        for (key, value) in &hint.options {
            let entry = OptionEntry {
                key: key.clone(),
                value: value.clone(),
                key_span: hint.span,
                value_span: hint.span,
            };
            self.check_option(schema, &formats, &entry);
        }
    }

    /// Finds the formats a table names and reports unknown ones and a missing required one.
    fn resolve_formats(
        &mut self,
        schema: &ConnectorSchema,
        options: &[OptionEntry],
        style: OptionStyle,
    ) -> Vec<(String, &'static FormatSchema)> {
        let mut found = Vec::new();
        let value_keys = schema.format.keys.iter();
        let mut named_value_format = false;
        for key in value_keys.chain(schema.format.key_format_key.iter()) {
            let Some(option) = options.iter().find(|o| &o.key == key) else {
                continue;
            };
            if schema.format.keys.contains(key) {
                named_value_format = true;
            }
            match riffle_dialects::format(&option.value) {
                Some(format) => found.push((key.clone(), format)),
                None => {
                    let names: Vec<&str> = riffle_dialects::formats()
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect();
                    let help = suggestion_or_list(
                        &option.value,
                        &names,
                        "Available factory identifiers are",
                    );
                    self.error(
                        "unknown-format",
                        format!(
                            "Could not find any factory for identifier '{}' that implements \
                             'org.apache.flink.table.factories.DeserializationFormatFactory' in the classpath.",
                            option.value
                        ),
                        option.value_span,
                    )
                    .help = Some(help);
                }
            }
        }
        if style == OptionStyle::Current && schema.format.required && !named_value_format {
            if let Some(key) = schema.format.keys.last() {
                let span = options
                    .iter()
                    .find(|o| o.key == CONNECTOR_KEY)
                    .map_or(Span::default(), |o| o.key_span);
                self.error(
                    "missing-option",
                    format!("Could not find required scan format '{key}'."),
                    span,
                )
                .help = Some(format!("add '{key}' = '<format>' (for example 'json')"));
            }
        }
        found
    }

    fn unknown_option(
        &mut self,
        schema: &ConnectorSchema,
        formats: &[(String, &'static FormatSchema)],
        option: &OptionEntry,
    ) {
        let format_keys = formats
            .iter()
            .flat_map(|(_, f)| f.options.iter().map(|o| o.key.as_str()));
        let candidates: Vec<&str> = schema.known_keys().chain(format_keys).collect();
        let diag = self.error(
            "unknown-option",
            format!("Unsupported options found for '{}'.", schema.name),
            option.key_span,
        );
        diag.label = Some(format!("unsupported option '{}'", option.key));
        if let Some(s) = riffle_dialects::did_you_mean(&option.key, candidates) {
            diag.help = Some(format!("did you mean '{s}'?"));
        }
    }

    /// Reports missing `connector` options of used tables and missing required options, now that
    /// every table's roles (source, sink, lookup) are known.
    pub(crate) fn finish_option_checks(&mut self) {
        for (path, span) in std::mem::take(&mut self.missing_connector) {
            if self.usage.contains_key(&path) {
                self.error(
                    "missing-option",
                    "Table options do not contain an option key 'connector' for discovering a connector.",
                    span,
                )
                .help = Some("add 'connector' = '<identifier>' to the WITH clause".to_string());
            }
        }
        for pending in std::mem::take(&mut self.pending_required) {
            let usage = self.usage.get(&pending.path).copied().unwrap_or_default();
            let missing: Vec<&str> = pending
                .connector
                .options
                .iter()
                .filter(|o| o.required && applies(o, &usage, &pending))
                .filter(|o| !pending.keys.iter().any(|k| o.matches_exact(k)))
                .map(|o| o.key.as_str())
                .collect();
            if missing.is_empty() {
                continue;
            }
            self.error(
                "missing-option",
                format!(
                    "One or more required options are missing.\n\nMissing required options are:\n\n{}",
                    missing.join("\n")
                ),
                pending.span,
            )
            .label = Some(format!("missing {}", missing.join(", ")));
        }
    }
}

/// Whether a required option binds a table given its use and its option generation.
fn applies(option: &OptionSpec, usage: &TableUsage, pending: &PendingRequired) -> bool {
    let role_ok = option.roles.is_empty()
        || option.roles.iter().any(|r| match r {
            Role::Source => usage.source,
            Role::Sink => usage.sink,
            Role::Lookup => usage.lookup,
        });
    let generation_ok = match &option.generation {
        None => true,
        Some(g) => match pending.style {
            OptionStyle::RsqldbType => g == "rsqldb",
            // Only a table written in a single generation is held to that generation's keys;
            // mixed tables are a migration matter.
            _ => pending.generations.len() == 1 && pending.generations.contains(g),
        },
    };
    role_ok && generation_ok
}

/// Looks a key up in the table's formats: `json.x`, or `key.json.x` / `value.json.x` for
/// connectors with separate key and value formats.
fn format_option(
    formats: &[(String, &'static FormatSchema)],
    key: &str,
) -> Option<&'static OptionSpec> {
    formats.iter().find_map(|(format_key, format)| {
        let prefix = format_key.strip_suffix("format").unwrap_or("");
        let unprefixed = key.strip_prefix(prefix).unwrap_or(key);
        format.option(unprefixed).or_else(|| format.option(key))
    })
}

/// "did you mean 'x'?" when a close name exists, otherwise the list of known names.
fn suggestion_or_list(name: &str, names: &[&str], list_title: &str) -> String {
    match riffle_dialects::did_you_mean(name, names.iter().copied()) {
        Some(s) => format!("did you mean '{s}'?"),
        None => format!("{list_title}: {}", names.join(", ")),
    }
}
