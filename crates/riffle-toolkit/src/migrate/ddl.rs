//! `CREATE TABLE` rewrites: option styles and connectors (`connector.type` -> current keys,
//! rsqlDB -> Flink SQL, legacy rocketmq-flink keys -> current keys, Kafka -> RocketMQ), metadata
//! and header columns, and rsqlDB watermarks.

use riffle_dialects::{
    mappings, parse_duration_nanos, KafkaOptionRule, KeyRewrite, Role, RuleAction, ValueSource,
};
use riffle_sql::ast::{ColumnKind, CreateTable, TypeKind};
use riffle_sql::Span;
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned, Value};
use sqlparser::tokenizer::Token;

use super::message_key::message_key_options;
use super::options::{option_span, quote, Log, OptionEdit};
use super::patch::Patch;
use super::source::SourceText;
use super::tables::{Style, TableInfo};
use super::MigrateOptions;

/// Everything migrate needs to rewrite one `CREATE TABLE`.
pub(crate) struct TableJob<'a> {
    pub table: &'a CreateTable,
    pub info: &'a TableInfo,
    pub src: &'a SourceText<'a>,
    pub options: &'a MigrateOptions,
}

/// A table rewritten into Riffle's form: the edited `WITH` clause (not yet turned into patches,
/// so export can go on editing it) and the patches of its columns and constraints.
pub(crate) struct TableRewrite<'a> {
    /// The `WITH` clause.
    pub edit: OptionEdit<'a>,
    /// Patches outside the `WITH` clause.
    pub patches: Vec<Patch>,
    /// The roles options were written for.
    pub roles: Vec<Role>,
    /// The connector after the rewrite.
    pub connector: String,
}

impl TableRewrite<'_> {
    /// Every patch of the table.
    pub fn into_patches(self, src: &SourceText) -> Vec<Patch> {
        let mut patches = self.patches;
        patches.extend(self.edit.patches(src));
        patches
    }
}

/// Rewrites one table for Riffle. Returns the patches.
pub(crate) fn migrate_table(job: &TableJob, log: &mut Log) -> Vec<Patch> {
    normalize_table(job, log, true).into_patches(job.src)
}

/// Rewrites one table's option style, legacy keys and rsqlDB syntax into current Flink SQL, and,
/// with `kafka_to_rocketmq`, its Kafka connector into rocketmq.
pub(crate) fn normalize_table<'a>(
    job: &TableJob<'a>,
    log: &mut Log,
    kafka_to_rocketmq: bool,
) -> TableRewrite<'a> {
    let TableJob { table, info, .. } = job;
    let mut edit = OptionEdit::new(&table.options);
    let mut connector = info.connector.clone().unwrap_or_default();
    match info.style {
        Style::ConnectorType => connector_type_style(&mut edit, &connector, log),
        Style::Rsqldb => rsqldb_type(&mut edit, log),
        Style::Current => {}
    }
    let roles = table_roles(info, &connector);
    let mut patches = Vec::new();
    match connector.as_str() {
        "rocketmq" => {
            rocketmq_keys(job, &mut edit, &roles, log);
        }
        "kafka" | "upsert-kafka" if kafka_to_rocketmq => {
            kafka_to_rocketmq_options(job, &mut edit, &connector, &roles, log);
            patches.extend(kafka_metadata_columns(job, log));
            connector = "rocketmq".to_string();
        }
        _ => {}
    }
    if info.style == Style::Rsqldb {
        patches.extend(rsqldb_columns(job, log));
    }
    TableRewrite {
        edit,
        patches,
        roles,
        connector,
    }
}

/// The roles to write options for (see [`TableInfo::effective_roles`]).
fn table_roles(info: &TableInfo, connector: &str) -> Vec<Role> {
    let schema = riffle_dialects::connector(connector);
    info.effective_roles(|key| {
        let option = schema?.option(key)?;
        match option.roles.as_slice() {
            [role] => Some(*role),
            _ => None,
        }
    })
}

/// `'connector.type' = 'kafka'`, `'connector.topic'`, `'format.type'`, ... -> current keys.
fn connector_type_style(edit: &mut OptionEdit, connector: &str, log: &mut Log) {
    const CODE: &str = "ddl.legacy-option-style";
    let m = &mappings().legacy;
    let format = edit.get(&m.format_type_key).map(str::to_string);
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        let key = edit.key(i).to_string();
        let value = edit.value(i).to_string();
        let span = edit.span(i);
        let renamed = |to: &str| format!("'{key}' -> '{to}'");
        let target = if key == m.connector_type_key {
            Some(m.connector_key.clone())
        } else if let Some(entry) = m.key(connector, &key) {
            let translated = entry.values.as_ref().map(|values| values.get(&value));
            match translated {
                Some(None) => {
                    let reason = entry.manual_reason.clone().unwrap_or_default();
                    log.manual(CODE, span, format!("'{key}' = '{value}'"), reason);
                    edit.leave(i);
                    continue;
                }
                Some(Some(v)) if !v.is_empty() => {
                    edit.set_value(i, v.clone());
                    Some(entry.current.clone())
                }
                _ if entry.current.is_empty() || translated.is_some() => {
                    edit.delete(i);
                    log.change(CODE, span, format!("removed '{key}'"), entry.reason.clone());
                    continue;
                }
                _ => Some(entry.current.clone()),
            }
        } else if key == m.format_type_key {
            Some(m.format_key.clone())
        } else if let Some(rest) = key.strip_prefix(&m.properties_prefix) {
            Some(format!("{}{rest}", m.properties_target))
        } else if let Some(rest) = key.strip_prefix(&m.format_prefix) {
            match &format {
                Some(f) => Some(format!("{f}.{rest}")),
                None => {
                    log.manual(
                        CODE,
                        span,
                        format!("'{key}'"),
                        "the table names no 'format.type'",
                    );
                    edit.leave(i);
                    continue;
                }
            }
        } else if key.starts_with(&m.connector_prefix) {
            log.manual(
                CODE,
                span,
                format!("'{key}'"),
                "no current option is known for this pre-1.11 key",
            );
            edit.leave(i);
            continue;
        } else {
            None
        };
        if let Some(to) = target {
            log.change(CODE, span, renamed(&to), None);
            edit.rename(i, to);
        }
    }
}

/// rsqlDB's `type = '<connector>'` -> `'connector' = '<connector>'`.
fn rsqldb_type(edit: &mut OptionEdit, log: &mut Log) {
    let type_key = &mappings().rsqldb.type_key;
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        let Some(option) = edit.written_option(i) else {
            continue;
        };
        if option.key_unquoted && option.key.eq_ignore_ascii_case(type_key) {
            let message = format!(
                "{} = '{}' -> 'connector' = '{}'",
                option.key, option.value, option.value
            );
            log.change("ddl.rsqldb-options", option_span(option), message, None);
            edit.rename(i, "connector");
            edit.settle(i);
        }
    }
}

/// Legacy rocketmq-flink and rsqlDB keys of a rocketmq table -> current keys.
fn rocketmq_keys(job: &TableJob, edit: &mut OptionEdit, roles: &[Role], log: &mut Log) {
    let Some(schema) = riffle_dialects::connector("rocketmq") else {
        return;
    };
    let m = mappings();
    let mut has_format = edit.has("format") || edit.has("value.format");
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        if !edit.is_open(i) {
            continue;
        }
        let key = edit.key(i).to_string();
        let value = edit.value(i).to_string();
        let Some(spec) = schema.option(&key) else {
            continue;
        };
        if !matches!(spec.generation.as_deref(), Some("legacy" | "rsqldb")) {
            continue;
        }
        let code = format!("option.rocketmq.{key}");
        let span = edit.span(i);
        if let Some(over) = m.rocketmq.override_for(&key) {
            if over.drop_values.contains(&value) {
                edit.delete(i);
                let note = format!("'{value}' is the default");
                log.change(code, span, format!("removed '{key}'"), Some(note));
                continue;
            }
        }
        let rewrites: Vec<KeyRewrite> = roles
            .iter()
            .filter_map(|&role| m.rocketmq.rewrite(schema, spec, role))
            .collect();
        if rewrites.is_empty() {
            if matches!(
                spec.support,
                riffle_dialects::Support::NeedsMigration { .. }
            ) {
                // The key means something only for roles the table does not have.
                edit.delete(i);
                let only: Vec<&str> = spec.roles.iter().map(|r| role_word(*r)).collect();
                let note = format!("it only applies to {} tables", only.join(" and "));
                log.change(code, span, format!("removed '{key}'"), Some(note));
            }
            continue;
        }
        let mut targets: Vec<&str> = Vec::new();
        for rewrite in &rewrites {
            match rewrite {
                KeyRewrite::Rename(to) => {
                    if !targets.contains(&to.key.as_str()) {
                        targets.push(&to.key);
                    }
                }
                KeyRewrite::Drop(reason) => {
                    edit.delete(i);
                    log.change(
                        &code,
                        span,
                        format!("removed '{key}'"),
                        Some(reason.to_string()),
                    );
                }
                KeyRewrite::Manual(reason) => {
                    edit.leave(i);
                    log.manual(&code, span, format!("'{key}' = '{value}'"), *reason);
                }
                KeyRewrite::Format => {
                    json_format(job, edit, i, log);
                    has_format = true;
                }
                KeyRewrite::Connector => {}
            }
            if !edit.is_open(i) {
                break;
            }
        }
        let Some(first) = targets.first().copied().filter(|_| edit.is_open(i)) else {
            continue;
        };
        if let Some(existing) = targets.iter().find(|t| edit.find(t).is_some()) {
            edit.leave(i);
            let reason = format!("the table also sets '{existing}'; keep one of them");
            log.manual(code, span, format!("'{key}' = '{value}'"), reason);
            continue;
        }
        let message = format!("'{key}' -> {}", quoted_list(&targets));
        edit.rename(i, first);
        for extra in targets.iter().skip(1) {
            edit.insert_after(i, *extra, value.clone());
        }
        edit.settle(i);
        log.change(code, span, message, None);
    }
    if job.info.style == Style::Rsqldb && !has_format {
        let json = &m.rsqldb;
        if json.json_default == "true" {
            edit.append("format", json.json_format.clone());
            log.change(
                "option.rocketmq.isJsonData",
                job.table.name_span,
                format!("added 'format' = '{}'", json.json_format),
                Some(format!(
                    "rsqlDB bodies are JSON unless '{}' = 'false'",
                    json.json_key
                )),
            );
        }
    }
}

/// `source` / `sink` / `lookup`.
pub(crate) fn role_word(role: Role) -> &'static str {
    match role {
        Role::Source => "source",
        Role::Sink => "sink",
        Role::Lookup => "lookup",
    }
}

/// `'k1' / 'k2'`.
pub(crate) fn quoted_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// rsqlDB's `isJsonData` -> the table's `format`.
fn json_format(job: &TableJob, edit: &mut OptionEdit, i: usize, log: &mut Log) {
    let r = &mappings().rsqldb;
    let span = edit.span(i);
    let code = format!("option.rocketmq.{}", r.json_key);
    let json = edit.value(i).eq_ignore_ascii_case("true");
    let physical = job
        .table
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::Physical { .. }))
        .count();
    let format = if json {
        &r.json_format
    } else if physical == 1 {
        &r.single_column_format
    } else {
        &r.delimited_format
    };
    let message = format!(
        "'{}' = '{}' -> 'format' = '{format}'",
        r.json_key,
        edit.value(i)
    );
    edit.rename(i, "format");
    edit.set_value(i, format.clone());
    edit.settle(i);
    if !json && physical != 1 {
        let delimiter = job
            .info
            .options
            .get(&r.field_delimiter_key)
            .cloned()
            .or_else(|| {
                riffle_dialects::connector("rocketmq")
                    .and_then(|s| s.option(&r.field_delimiter_key))
                    .and_then(|o| o.default.clone())
            })
            .unwrap_or_default();
        edit.insert_after(i, r.delimited_format_delimiter_option.clone(), delimiter);
    }
    log.change(code, span, message, None);
}

/// A Kafka / upsert-kafka table -> a rocketmq table.
fn kafka_to_rocketmq_options(
    job: &TableJob,
    edit: &mut OptionEdit,
    connector: &str,
    roles: &[Role],
    log: &mut Log,
) {
    let m = mappings();
    let formats = table_formats(edit, job.info);
    if let Some(i) = edit.find("connector") {
        let span = edit.span(i);
        let note = (connector == "upsert-kafka").then(|| {
            "an upsert changelog keyed by the primary key; the embedded store keeps the topic compacted".to_string()
        });
        log.change(
            format!("connector.{connector}"),
            span,
            format!("'connector' = '{connector}' -> 'connector' = 'rocketmq'"),
            note,
        );
        edit.set_value(i, "rocketmq");
        edit.settle(i);
    }
    message_key_options(job, edit, connector, roles, log);
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        if !edit.is_open(i) {
            continue;
        }
        let key = edit.key(i).to_string();
        if is_format_option(&key, &formats) {
            continue;
        }
        let code = format!("option.{connector}.{key}");
        let span = edit.span(i);
        match m.kafka.rule_for(connector, &key) {
            None => {
                edit.leave(i);
                log.manual(
                    code,
                    span,
                    format!("'{key}'"),
                    "no RocketMQ equivalent is known",
                );
            }
            Some(rule) => apply_kafka_rule(job, edit, i, rule, roles, log),
        }
    }
    if connector == "upsert-kafka" {
        let upsert = &m.kafka.upsert;
        edit.append(
            upsert.changelog_option.clone(),
            upsert.changelog_value.clone(),
        );
        let note = if roles.contains(&Role::Source) {
            &upsert.source_note
        } else {
            &upsert.sink_note
        };
        log.change(
            "connector.upsert-kafka",
            job.table.name_span,
            format!(
                "added '{}' = '{}'",
                upsert.changelog_option, upsert.changelog_value
            ),
            Some(note.clone()),
        );
        let startup = riffle_dialects::connector("rocketmq").and_then(|schema| {
            m.rocketmq
                .current_option(schema, "startup-mode", Role::Source)
        });
        if let Some(startup) =
            startup.filter(|o| roles.contains(&Role::Source) && !edit.has(&o.key))
        {
            edit.append(startup.key.clone(), upsert.source_startup.clone());
            log.change(
                "connector.upsert-kafka",
                job.table.name_span,
                format!("added '{}' = '{}'", startup.key, upsert.source_startup),
                Some(upsert.source_startup_note.clone()),
            );
        }
    }
    let group = riffle_dialects::connector("rocketmq")
        .and_then(|schema| {
            m.rocketmq
                .current_option(schema, "consumer-group", Role::Source)
        })
        .map(|o| o.key.clone());
    if let Some(group) = group {
        if roles.contains(&Role::Source) && !edit.has(&group) {
            let name = super::tables::simple_name(&job.table.name);
            let value = format!("riffle-{name}");
            edit.append(group.clone(), value.clone());
            log.change(
                format!("option.{connector}.properties.group.id"),
                job.table.name_span,
                format!("added '{group}' = '{value}'"),
                Some("a RocketMQ source needs a consumer group; Kafka made one up".to_string()),
            );
        }
    }
}

/// The formats a table names.
fn table_formats(edit: &OptionEdit, info: &TableInfo) -> Vec<String> {
    ["format", "value.format", "key.format"]
        .iter()
        .filter_map(|k| {
            edit.get(k)
                .map(str::to_string)
                .or_else(|| info.options.get(*k).cloned())
        })
        .collect()
}

/// Options of a format (`json.ignore-parse-errors`, `value.json.x`, `key.raw.x`) stay as they are.
fn is_format_option(key: &str, formats: &[String]) -> bool {
    let rest = key
        .strip_prefix("value.")
        .or_else(|| key.strip_prefix("key."))
        .unwrap_or(key);
    formats.iter().any(|f| rest.starts_with(&format!("{f}.")))
}

/// Applies one rule of `kafka-rocketmq.toml` to option `i`.
fn apply_kafka_rule(
    job: &TableJob,
    edit: &mut OptionEdit,
    i: usize,
    rule: &KafkaOptionRule,
    roles: &[Role],
    log: &mut Log,
) {
    let key = edit.key(i).to_string();
    let code = &format!(
        "option.{}.{key}",
        job.info.connector.as_deref().unwrap_or_default()
    );
    let span = edit.span(i);
    let value = edit.value(i).to_string();
    let manual_value = |log: &mut Log, edit: &mut OptionEdit, fallback: &str| {
        let reason = rule
            .manual_values
            .get(&value)
            .cloned()
            .or_else(|| rule.reason.clone())
            .unwrap_or_else(|| fallback.to_string());
        log.manual(code, span, format!("'{key}' = '{value}'"), reason);
        edit.leave(i);
    };
    let remove = |log: &mut Log, edit: &mut OptionEdit, why: Option<String>| {
        edit.delete(i);
        log.change(code, span, format!("removed '{key}'"), why);
    };
    match rule.action {
        // Record-key options are rewritten together first (`message_key_options`).
        RuleAction::Keep | RuleAction::MessageKey => {}
        RuleAction::Manual => manual_value(log, edit, "no RocketMQ equivalent"),
        RuleAction::Drop => {
            let unless_set = rule.drop_values_unless_set.get(&value);
            // The other option as written: an earlier rule may have renamed it.
            let unset = |other: &String| {
                edit.get(other).is_none() && !job.table.options.iter().any(|o| &o.key == other)
            };
            if unless_set.is_some_and(unset) {
                let why = rule.value_notes.get(&value).or(rule.reason.as_ref());
                remove(log, edit, why.cloned());
            } else if unless_set.is_none()
                && (rule.drop_values.is_empty() || rule.drop_values.contains(&value))
            {
                remove(log, edit, rule.reason.clone());
            } else {
                manual_value(log, edit, "no RocketMQ equivalent for this value");
            }
        }
        RuleAction::Map => {
            let applicable: Vec<Role> = roles
                .iter()
                .copied()
                .filter(|r| rule.roles.is_empty() || rule.roles.contains(r))
                .collect();
            if applicable.is_empty() {
                return remove(log, edit, rule.other_role_reason.clone());
            }
            if let Some(when) = &rule.when {
                let current = edit
                    .get(&when.key)
                    .map(str::to_string)
                    .or_else(|| job.info.options.get(&when.key).cloned())
                    .or_else(|| {
                        riffle_dialects::connector("kafka")
                            .and_then(|s| s.option(&when.key))
                            .and_then(|o| o.default.clone())
                    })
                    .unwrap_or_default();
                if !when.values.contains(&current) {
                    return remove(log, edit, rule.when_reason.clone());
                }
            }
            let new_value = match rule.value {
                Some(ValueSource::Cluster) => {
                    let ns = job
                        .options
                        .clusters
                        .get(&value)
                        .or(job.options.namesrv.as_ref());
                    match ns {
                        Some(ns) => ns.clone(),
                        None => {
                            let why = "no name server given (--namesrv or a cluster map): the table uses Riffle's embedded store";
                            return remove(log, edit, Some(why.to_string()));
                        }
                    }
                }
                Some(ValueSource::DurationMs) => match parse_duration_nanos(&value) {
                    Ok(nanos) => (nanos / 1_000_000).to_string(),
                    Err(e) => return manual_value(log, edit, &e),
                },
                Some(ValueSource::RocketmqTopic) => match rocketmq_topics(&value) {
                    Ok(topics) => topics,
                    Err(e) => return manual_value(log, edit, &e),
                },
                Some(ValueSource::MsDuration | ValueSource::CommaList) => value.clone(),
                None if rule.values.is_empty() => value.clone(),
                None => match rule.values.get(&value) {
                    Some(v) if v.is_empty() => {
                        return remove(log, edit, rule.value_notes.get(&value).cloned());
                    }
                    Some(v) => v.clone(),
                    None => {
                        return manual_value(log, edit, "no RocketMQ equivalent for this value")
                    }
                },
            };
            let Some(schema) = riffle_dialects::connector("rocketmq") else {
                return;
            };
            let canonical = rule.canonical.as_deref().unwrap_or_default();
            let mut targets: Vec<String> = Vec::new();
            for role in applicable {
                if let Some(o) = mappings().rocketmq.current_option(schema, canonical, role) {
                    if !targets.contains(&o.key) {
                        targets.push(o.key.clone());
                    }
                }
            }
            let Some(first) = targets.first().cloned() else {
                return manual_value(
                    log,
                    edit,
                    "no RocketMQ option has this meaning for the table's role",
                );
            };
            if let Some(existing) = targets.iter().find(|t| edit.has(t)) {
                let reason =
                    format!("'{existing}' is already set from another option; keep one of them");
                log.manual(code, span, format!("'{key}' = '{value}'"), reason);
                edit.leave(i);
                return;
            }
            let target_text: Vec<&str> = targets.iter().map(String::as_str).collect();
            let message = if new_value == value {
                format!("'{key}' -> {}", quoted_list(&target_text))
            } else {
                format!(
                    "'{key}' = '{value}' -> {} = '{new_value}'",
                    quoted_list(&target_text)
                )
            };
            edit.rename(i, first);
            edit.set_value(i, new_value.clone());
            for extra in targets.iter().skip(1) {
                edit.insert_after(i, extra.clone(), new_value.clone());
            }
            edit.settle(i);
            let renamed_topic =
                rule.value == Some(ValueSource::RocketmqTopic) && new_value != value;
            let note = if renamed_topic {
                Some(TOPIC_RENAME_NOTE.to_string())
            } else {
                rule.value_notes
                    .get(&value)
                    .cloned()
                    .or_else(|| rule.note.clone())
            };
            log.change(code, span, message, note);
        }
    }
}

/// Why a Kafka topic name was changed.
const TOPIC_RENAME_NOTE: &str = "RocketMQ topic names allow only A-Z a-z 0-9 _ - %: every other character becomes '_' (producers and other jobs of the topic must use the new name)";

/// The longest RocketMQ topic name.
const MAX_ROCKETMQ_TOPIC: usize = 127;

/// Kafka topic names (`;`-separated) as RocketMQ topic names: Kafka's `.` (the one character
/// Kafka allows and RocketMQ does not) becomes `_`, a name Kafka itself treats as colliding with it.
fn rocketmq_topics(kafka: &str) -> Result<String, String> {
    let names: Result<Vec<String>, String> = kafka
        .split(';')
        .map(|name| {
            let name = name.trim();
            let valid: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '%') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if valid.is_empty() || valid.len() > MAX_ROCKETMQ_TOPIC {
                return Err(format!(
                    "RocketMQ topic names have 1 to {MAX_ROCKETMQ_TOPIC} characters; choose a name for '{name}'"
                ));
            }
            Ok(valid)
        })
        .collect();
    Ok(names?.join(";"))
}

/// Metadata columns of a Kafka table -> the rocketmq metadata keys.
fn kafka_metadata_columns(job: &TableJob, log: &mut Log) -> Vec<Patch> {
    let src = job.src;
    let mut patches = Vec::new();
    for column in &job.table.columns {
        let ColumnKind::Metadata { key, .. } = &column.kind else {
            continue;
        };
        let name = &column.name.value;
        let kafka_key = key.clone().unwrap_or_else(|| name.clone());
        if kafka_key.starts_with("value.") || kafka_key.starts_with("key.") {
            continue; // format metadata (e.g. value.source.timestamp) keeps its key
        }
        let code = format!("metadata.kafka.{kafka_key}");
        let Some(rule) = mappings().kafka.metadata_for_kafka(&kafka_key) else {
            log.manual(
                code,
                column.span,
                format!("metadata column `{name}` ('{kafka_key}')"),
                "no RocketMQ metadata key is known for it",
            );
            continue;
        };
        if rule.rocketmq.is_empty() {
            let reason = rule.reason.clone().unwrap_or_default();
            log.manual(
                code,
                column.span,
                format!("metadata column `{name}` ('{kafka_key}')"),
                reason,
            );
            continue;
        }
        if rule.rocketmq == kafka_key {
            continue;
        }
        let range = src.range(column.span);
        let Some(metadata) = src.find_word(range.clone(), "METADATA") else {
            continue;
        };
        let new_key = quote(&rule.rocketmq);
        let patch = match key {
            Some(_) => src
                .find_word(metadata.range.end..range.end, "FROM")
                .and_then(|from| src.next_significant(from.range.end))
                .filter(|t| matches!(t.token, Token::SingleQuotedString(_)))
                .map(|t| Patch::replace(t.range.clone(), new_key)),
            None => Some(Patch::insert(
                metadata.range.end,
                format!(" FROM {new_key}"),
            )),
        };
        if let Some(patch) = patch {
            patches.push(patch);
            log.change(
                code,
                column.span,
                format!(
                    "metadata '{kafka_key}' -> '{}' (column `{name}`)",
                    rule.rocketmq
                ),
                rule.note.clone(),
            );
        }
    }
    patches
}

/// rsqlDB columns: `col TYPE header` -> metadata columns, the named `withOffset` watermark ->
/// a Flink watermark, and a bare-TIMESTAMP rowtime column -> TIMESTAMP(3).
fn rsqldb_columns(job: &TableJob, log: &mut Log) -> Vec<Patch> {
    let src = job.src;
    let r = &mappings().rsqldb;
    let mut patches = Vec::new();
    for column in &job.table.columns {
        if !matches!(column.kind, ColumnKind::Header { .. }) {
            continue;
        }
        let range = src.range(column.span);
        let last = src.prev_significant(range.end);
        let Some(header) = last.filter(
            |t| matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case("header")),
        ) else {
            log.manual(
                "ddl.header-column",
                column.span,
                format!("header column `{}`", column.name.value),
                "its `header` keyword was not found",
            );
            continue;
        };
        let key = r.header_key(&column.name.value);
        patches.push(Patch::replace(
            header.range.clone(),
            format!("METADATA FROM {}", quote(&key)),
        ));
        log.change(
            "ddl.header-column",
            column.span,
            format!(
                "header column `{}` -> METADATA FROM '{key}'",
                column.name.value
            ),
            None,
        );
    }
    if let Some(key) = job.table.primary_key.as_ref().filter(|k| !k.not_enforced) {
        let end = src.range(key.span).end;
        patches.push(Patch::insert(end, " NOT ENFORCED"));
        log.change(
            "invalid-primary-key",
            key.span,
            "PRIMARY KEY (...) -> PRIMARY KEY (...) NOT ENFORCED",
            Some("Flink only takes primary keys it does not enforce".to_string()),
        );
    }
    let Some(wm) = &job.table.watermark else {
        return patches;
    };
    let column_name = wm
        .column
        .last()
        .map(|c| c.value.clone())
        .unwrap_or_default();
    if let Some(name) = &wm.name {
        let start = src.range(Span::from(name.span)).start;
        if let Some(next) = src.next_significant(src.range(Span::from(name.span)).end) {
            patches.push(Patch::delete(start..next.range.start));
        }
    }
    let legacy_call = matches!(&wm.expr, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case(&r.watermark_function));
    if legacy_call {
        match with_offset(&wm.expr) {
            Some((time, millis)) => {
                let time_text = src.span_text(Span::from(time.span()));
                if let Some(call) = src.call_range(Span::from(wm.expr.span())) {
                    let text = format!("{time_text} - INTERVAL '{}' SECOND", seconds(millis));
                    patches.push(Patch::replace(call, text.clone()));
                    log.change(
                        "ddl.legacy-watermark",
                        wm.span,
                        format!("{}(..) -> {text}", r.watermark_function),
                        None,
                    );
                }
            }
            None => log.manual(
                "ddl.legacy-watermark",
                wm.span,
                format!("watermark on `{column_name}`"),
                "the offset is not a whole number of milliseconds",
            ),
        }
    } else if wm.name.is_some() {
        log.change(
            "ddl.legacy-watermark",
            wm.span,
            "removed the watermark's name",
            None,
        );
    }
    // Flink's bare TIMESTAMP is TIMESTAMP(6), which cannot be a rowtime attribute.
    let rowtime = job
        .table
        .columns
        .iter()
        .find(|c| c.name.value == column_name);
    if let Some(column) = rowtime {
        let bare = matches!(&column.kind, ColumnKind::Physical { data_type, .. } if data_type.kind == TypeKind::Timestamp(6));
        let range = src.range(column.span);
        let word = src.find_word(range, "TIMESTAMP");
        let next_is_paren = word
            .and_then(|w| src.next_significant(w.range.end))
            .is_some_and(|t| t.token == Token::LParen);
        if let (true, Some(word), false) = (bare, word, next_is_paren) {
            let suffix = r.rowtime_type.strip_prefix("TIMESTAMP").unwrap_or_default();
            patches.push(Patch::insert(word.range.end, suffix.to_string()));
            log.change(
                "invalid-watermark",
                column.span,
                format!("rowtime column `{column_name}` TIMESTAMP -> {}", r.rowtime_type),
                Some("rsqlDB timestamps are milliseconds; Flink's bare TIMESTAMP has microseconds and cannot be a rowtime".to_string()),
            );
        }
    }
    patches
}

/// `withOffset(ts, 2000)` -> (`ts`, 2000).
fn with_offset(expr: &Expr) -> Option<(&Expr, u64)> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect();
    let [time, offset] = args.as_slice() else {
        return None;
    };
    let Expr::Value(v) = offset else {
        return None;
    };
    let Value::Number(n, _) = &v.value else {
        return None;
    };
    Some((time, n.parse().ok()?))
}

/// Milliseconds as a seconds literal: `2000` -> `2`, `1500` -> `1.5`.
fn seconds(millis: u64) -> String {
    let whole = millis / 1000;
    let frac = millis % 1000;
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{}", format!("{frac:03}").trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_second_literals() {
        assert_eq!(seconds(2000), "2");
        assert_eq!(seconds(1500), "1.5");
        assert_eq!(seconds(5), "0.005");
        assert_eq!(seconds(0), "0");
    }

    #[test]
    fn format_options_are_recognised() {
        let formats = vec!["json".to_string(), "raw".to_string()];
        assert!(is_format_option("json.ignore-parse-errors", &formats));
        assert!(is_format_option(
            "value.json.fail-on-missing-field",
            &formats
        ));
        assert!(is_format_option("key.raw.charset", &formats));
        assert!(!is_format_option("csv.field-delimiter", &formats));
        assert!(!is_format_option("topic", &formats));
    }
}
