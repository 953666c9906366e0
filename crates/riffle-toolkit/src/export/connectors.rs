//! rocketmq tables -> what Flink runs: the option keys of a rocketmq-flink release, or Kafka
//! tables (`--sink-connector kafka`), both read from `dialects/mappings/`.

use riffle_dialects::{
    mappings, ChangelogMode, ConnectorSchema, RocketmqFlinkRelease, Role, ValueSource,
};
use riffle_sql::ast::ColumnKind;

use super::{ExportOptions, SinkConnector};
use crate::migrate::ddl::{quoted_list, role_word, TableJob, TableRewrite};
use crate::migrate::options::{Log, OptionEdit};

/// Rewrites a (normalized) rocketmq table for the export target.
pub(crate) fn export_table(
    job: &TableJob,
    table: &mut TableRewrite,
    options: &ExportOptions,
    log: &mut Log,
) {
    if table.connector != "rocketmq" {
        return;
    }
    let Some(schema) = riffle_dialects::connector("rocketmq") else {
        return;
    };
    match &options.connector {
        SinkConnector::Rocketmq { release } => match mappings().rocketmq.release(release) {
            Some(r) => to_release(job, table, schema, r, options, log),
            None => log.manual(
                "export.rocketmq-flink",
                job.table.name_span,
                format!("rocketmq-flink release '{release}'"),
                "no such release in dialects/mappings/rocketmq-keys.toml",
            ),
        },
        SinkConnector::Kafka => to_kafka(job, table, schema, options, log),
    }
}

/// The code of an export change to an option.
fn code(key: &str) -> String {
    format!("export.option.{key}")
}

/// The keys a release takes for a table: those of every role the table has.
fn release_keys<'r>(release: &'r RocketmqFlinkRelease, roles: &[Role]) -> Vec<&'r str> {
    roles
        .iter()
        .flat_map(|r| release.keys.for_role(*r))
        .map(String::as_str)
        .collect()
}

/// The default of a meaning, from any rocketmq option carrying it.
fn default_of(schema: &ConnectorSchema, canonical: &str) -> Option<String> {
    schema
        .options
        .iter()
        .filter(|o| o.canonical.as_deref() == Some(canonical))
        .find_map(|o| o.default.clone())
}

/// A rocketmq table -> the keys of a rocketmq-flink release.
fn to_release(
    job: &TableJob,
    table: &mut TableRewrite,
    schema: &ConnectorSchema,
    release: &RocketmqFlinkRelease,
    options: &ExportOptions,
    log: &mut Log,
) {
    let name_span = job.table.name_span;
    if !release.runs_on.contains(&options.flink_version) {
        let runs_on: Vec<String> = release.runs_on.iter().map(|v| v.to_string()).collect();
        log.manual(
            "export.rocketmq-flink",
            name_span,
            format!("rocketmq table on Flink {}", options.flink_version),
            format!(
                "rocketmq-flink '{}' runs on Flink {} only (its table source is a SourceFunction, which Flink 2.0 moved); export with --sink-connector kafka, or target one of those releases",
                release.name,
                runs_on.join(", ")
            ),
        );
    }
    let roles = table.roles.clone();
    let edit = &mut table.edit;
    let accepted = release_keys(release, &roles);
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        if !edit.is_live(i) {
            continue;
        }
        let key = edit.key(i).to_string();
        if key == "connector" || accepted.contains(&key.as_str()) {
            continue;
        }
        let span = edit.span(i);
        let value = edit.value(i).to_string();
        let Some(spec) = schema.option(&key) else {
            // A format's own options (`json.*`) go with the format, reported there.
            continue;
        };
        let canonical = spec.canonical.clone().unwrap_or_default();
        if spec.generation.as_deref() == Some("riffle") {
            let default = spec.default.as_deref() == Some(value.as_str());
            if default || canonical.starts_with("store-") {
                edit.delete(i);
                let why = if default {
                    "it is the default".to_string()
                } else {
                    "Riffle-only: the embedded store is replaced by the RocketMQ cluster"
                        .to_string()
                };
                log.change(code(&key), span, format!("removed '{key}'"), Some(why));
            } else {
                edit.leave(i);
                log.manual(
                    code(&key),
                    span,
                    format!("'{key}' = '{value}'"),
                    format!("rocketmq-flink '{}' has no equivalent (it writes every row as a message, and reads messages as inserts)", release.name),
                );
            }
            continue;
        }
        if spec.generation.is_none() {
            // Format keys.
            if canonical == "key-fields" && roles.contains(&Role::Sink) {
                if let Some(kc) = &release.key_columns {
                    let columns: Vec<&str> = value.split(';').map(str::trim).collect();
                    let joined = columns.join(&kc.separator);
                    edit.rename(i, kc.key.clone());
                    edit.set_value(i, joined);
                    edit.settle(i);
                    log.change(
                        code(&key),
                        span,
                        format!("'{key}' -> '{}'", kc.key),
                        Some("rocketmq-flink joins the key columns' values into the message keys; the key format is not applied".to_string()),
                    );
                    continue;
                }
            }
            if !release.formats {
                edit.leave(i);
                log.manual(
                    code(&key),
                    span,
                    format!("'{key}' = '{value}'"),
                    format!("rocketmq-flink '{}' has no formats: it reads and writes message bodies as text split by 'rocketmq.client.message.field.delimiter' / 'fieldDelimiter'; Flink's option check rejects this key (export with --sink-connector kafka to keep the format)", release.name),
                );
            }
            continue;
        }
        let targets: Vec<&str> = roles
            .iter()
            .filter_map(|r| release.key_for(schema, &canonical, *r))
            .fold(Vec::new(), |mut acc, k| {
                if !acc.contains(&k) {
                    acc.push(k);
                }
                acc
            });
        let Some(first) = targets.first().copied() else {
            let only: Vec<&str> = roles.iter().map(|r| role_word(*r)).collect();
            edit.leave(i);
            log.manual(
                code(&key),
                span,
                format!("'{key}' = '{value}'"),
                format!(
                    "rocketmq-flink '{}' declares no option meaning '{canonical}' for a {} table",
                    release.name,
                    only.join("/")
                ),
            );
            continue;
        };
        if first == key && targets.len() == 1 {
            continue;
        }
        if let Some(clash) = targets.iter().find(|t| **t != key && edit.has(t)) {
            // Both spellings were written (e.g. a source and a sink topic on a legacy release,
            // which has one `topic`): keep one when they agree.
            if edit.get(clash) == Some(value.as_str()) {
                edit.delete(i);
                log.change(
                    code(&key),
                    span,
                    format!("removed '{key}'"),
                    Some(format!("'{clash}' already says the same")),
                );
            } else {
                edit.leave(i);
                log.manual(code(&key), span, format!("'{key}' = '{value}'"), format!("'{clash}' is set to another value; rocketmq-flink '{}' has one key for both", release.name));
            }
            continue;
        }
        edit.rename(i, first);
        for extra in targets.iter().skip(1) {
            edit.insert_after(i, *extra, value.clone());
        }
        edit.settle(i);
        let written = edit.written_option(i).map(|o| o.key.clone());
        let normalized = log.has_change(span, "option.rocketmq.");
        // A legacy key normalized on the way: report one rename from the key as written.
        log.retract(span, "option.rocketmq.");
        let from = match &written {
            Some(w) if normalized => w.clone(),
            _ => key.clone(),
        };
        if !(targets.len() == 1 && written.as_deref() == Some(first)) {
            log.change(
                code(&from),
                span,
                format!("'{from}' -> {}", quoted_list(&targets)),
                None,
            );
        }
    }
    required_keys(job, edit, schema, release, &roles, options, log);
    metadata_columns(job, table, release, log);
}

/// Adds the keys a release requires and the table lacks: the name server from `--namesrv`, other
/// meanings with their schema default.
fn required_keys(
    job: &TableJob,
    edit: &mut OptionEdit,
    schema: &ConnectorSchema,
    release: &RocketmqFlinkRelease,
    roles: &[Role],
    options: &ExportOptions,
    log: &mut Log,
) {
    // A table created LIKE another one also has the other one's options.
    let inherited: Vec<String> = if job.table.like.is_some() {
        job.info
            .options
            .keys()
            .filter_map(|k| schema.option(k).and_then(|o| o.canonical.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let mut done: Vec<&str> = Vec::new();
    for role in roles {
        for key in release.required.for_role(*role) {
            let canonical = schema
                .option(key)
                .and_then(|o| o.canonical.clone())
                .unwrap_or_default();
            if edit.has(key) || done.contains(&key.as_str()) || inherited.contains(&canonical) {
                continue;
            }
            done.push(key);
            let value = if canonical == "endpoints" {
                options.namesrv.clone()
            } else {
                default_of(schema, &canonical)
            };
            match value {
                Some(value) => {
                    edit.append(key.clone(), value.clone());
                    let why = if canonical == "endpoints" {
                        "the table used Riffle's embedded store; the export names the cluster (--namesrv)"
                    } else {
                        "required by rocketmq-flink; Riffle's default"
                    };
                    log.change(code(key), job.table.name_span, format!("added '{key}' = '{value}'"), Some(why.to_string()));
                }
                None => log.manual(
                    code(key),
                    job.table.name_span,
                    format!("missing '{key}'"),
                    if canonical == "endpoints" {
                        "the table uses Riffle's embedded store; pass --namesrv with the RocketMQ name server the exported job reads and writes".to_string()
                    } else {
                        format!("rocketmq-flink '{}' requires it", release.name)
                    },
                ),
            }
        }
    }
}

/// Metadata columns the release does not read or write.
fn metadata_columns(
    job: &TableJob,
    table: &TableRewrite,
    release: &RocketmqFlinkRelease,
    log: &mut Log,
) {
    for column in &job.table.columns {
        let key = match &column.kind {
            ColumnKind::Metadata { key, .. } => {
                key.clone().unwrap_or_else(|| column.name.value.clone())
            }
            ColumnKind::Header { .. } => mappings().rsqldb.header_key(&column.name.value),
            _ => continue,
        };
        let supported = table
            .roles
            .iter()
            .all(|r| release.metadata.for_role(*r).contains(&key));
        if !supported {
            log.manual(
                format!("export.metadata.{key}"),
                column.span,
                format!("metadata column `{}` ('{key}')", column.name.value),
                format!(
                    "rocketmq-flink '{}' does not provide this metadata key here",
                    release.name
                ),
            );
        }
    }
}

/// A rocketmq table -> a Kafka (or upsert-kafka) table.
fn to_kafka(
    job: &TableJob,
    table: &mut TableRewrite,
    schema: &ConnectorSchema,
    options: &ExportOptions,
    log: &mut Log,
) {
    let m = &mappings().kafka;
    let upsert_layout = &m.upsert;
    let written_roles = table.roles.clone();
    let edit = &mut table.edit;
    // An upsert changelog, or a keyed table: rocketmq-flink writes the updates a keyed sink gets
    // as messages, which upsert-kafka keeps per key.
    let keyed = job.table.primary_key.is_some()
        || job.table.columns.iter().any(|c| {
            matches!(
                c.kind,
                ColumnKind::Physical {
                    primary_key: true,
                    ..
                }
            )
        });
    let changelog_format = ["format", "value.format"]
        .iter()
        .filter_map(|k| edit.get(k))
        .filter_map(riffle_dialects::format)
        .any(|f| f.changelog == ChangelogMode::All);
    let written = written_roles.contains(&Role::Sink);
    let upsert = (keyed && written && !changelog_format)
        || edit.get(&upsert_layout.changelog_option)
            == Some(upsert_layout.changelog_value.as_str());
    let target = if upsert { "upsert-kafka" } else { "kafka" };
    if let Some(i) = edit.find("connector") {
        edit.set_value(i, target);
        edit.settle(i);
        log.change(
            format!("export.connector.{target}"),
            edit.span(i),
            format!("'connector' = 'rocketmq' -> '{target}'"),
            None,
        );
    }
    let mut next = 0;
    while next < edit.len() {
        let i = next;
        next += 1;
        if !edit.is_live(i) {
            continue;
        }
        let key = edit.key(i).to_string();
        if key == "connector" {
            continue;
        }
        let span = edit.span(i);
        let value = edit.value(i).to_string();
        let Some(spec) = schema.option(&key) else {
            continue; // format options keep their keys
        };
        let canonical = spec.canonical.clone().unwrap_or_default();
        if spec.generation.is_none() {
            // Format keys are the same on Kafka; upsert-kafka takes the key from the primary key
            // and names the value format `value.format`.
            if upsert && canonical == "key-fields" {
                edit.delete(i);
                log.change(
                    code(&key),
                    span,
                    format!("removed '{key}'"),
                    Some("upsert-kafka keys records by the primary key".to_string()),
                );
            } else if upsert && key == "format" {
                edit.rename(i, "value.format");
                log.change(code(&key), span, "'format' -> 'value.format'", None);
            }
            continue;
        }
        if key == upsert_layout.changelog_option {
            edit.delete(i);
            log.change(
                code(&key),
                span,
                format!("removed '{key}'"),
                Some(format!("the connector is {target}")),
            );
            continue;
        }
        if upsert && canonical == "startup-mode" && value == upsert_layout.source_startup {
            edit.delete(i);
            log.change(
                code(&key),
                span,
                format!("removed '{key}'"),
                Some("upsert-kafka always reads its topic from the earliest offset".to_string()),
            );
            continue;
        }
        let Some(rule) = m.to_kafka(&canonical) else {
            edit.leave(i);
            log.manual(
                code(&key),
                span,
                format!("'{key}' = '{value}'"),
                "no Kafka equivalent",
            );
            continue;
        };
        let Some(kafka_key) = rule.kafka.clone() else {
            if rule.drop_values.is_empty() || rule.drop_values.contains(&value) {
                edit.delete(i);
                log.change(
                    code(&key),
                    span,
                    format!("removed '{key}'"),
                    rule.drop_reason.clone(),
                );
            } else {
                edit.leave(i);
                log.manual(
                    code(&key),
                    span,
                    format!("'{key}' = '{value}'"),
                    "no Kafka equivalent for this value",
                );
            }
            continue;
        };
        let (kafka_key, kafka_value, with) = if rule.values.is_empty() {
            let v = match rule.value {
                Some(ValueSource::Cluster) => match kafka_servers(&value, options) {
                    Some(s) => s,
                    None => {
                        edit.leave(i);
                        log.manual(
                            code(&key),
                            span,
                            format!("'{key}' = '{value}'"),
                            "pass --bootstrap-servers (or a cluster map) for the Kafka cluster",
                        );
                        continue;
                    }
                },
                Some(ValueSource::MsDuration) => format!("{value} ms"),
                Some(ValueSource::CommaList) => value
                    .split(',')
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(";"),
                _ => value.clone(),
            };
            let with: Vec<(String, String)> = rule
                .with
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (kafka_key, v, with)
        } else {
            match rule
                .values
                .iter()
                .find(|v| v.rocketmq.eq_ignore_ascii_case(&value))
            {
                Some(v) => (
                    v.key.clone().unwrap_or(kafka_key),
                    v.kafka.clone(),
                    v.with.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                ),
                None => {
                    edit.leave(i);
                    log.manual(
                        code(&key),
                        span,
                        format!("'{key}' = '{value}'"),
                        "no Kafka equivalent for this value",
                    );
                    continue;
                }
            }
        };
        if edit.has(&kafka_key) {
            if edit.get(&kafka_key) == Some(kafka_value.as_str()) {
                edit.delete(i);
                log.change(
                    code(&key),
                    span,
                    format!("removed '{key}'"),
                    Some(format!("'{kafka_key}' already says the same")),
                );
            } else {
                edit.leave(i);
                log.manual(
                    code(&key),
                    span,
                    format!("'{key}' = '{value}'"),
                    format!("'{kafka_key}' is set to another value; Kafka has one key for both"),
                );
            }
            continue;
        }
        edit.rename(i, kafka_key.clone());
        edit.set_value(i, kafka_value.clone());
        for (k, v) in with {
            if !edit.has(&k) {
                edit.insert_after(i, k, v);
            }
        }
        edit.settle(i);
        log.change(
            code(&key),
            span,
            format!("'{key}' = '{value}' -> '{kafka_key}' = '{kafka_value}'"),
            rule.note.clone(),
        );
    }
    if upsert && !edit.has("key.format") {
        edit.append("key.format", "json");
        log.change(
            code("key.format"),
            job.table.name_span,
            "added 'key.format' = 'json'",
            Some("upsert-kafka writes the primary key as the record key".to_string()),
        );
    }
    if !edit.has("properties.bootstrap.servers") {
        match options.bootstrap_servers.clone() {
            Some(servers) => {
                edit.append("properties.bootstrap.servers", servers.clone());
                log.change(
                    code("properties.bootstrap.servers"),
                    job.table.name_span,
                    format!("added 'properties.bootstrap.servers' = '{servers}'"),
                    Some("the table used Riffle's embedded store".to_string()),
                );
            }
            None => log.manual(
                code("properties.bootstrap.servers"),
                job.table.name_span,
                "missing 'properties.bootstrap.servers'",
                "pass --bootstrap-servers with the Kafka cluster the exported job uses",
            ),
        }
    }
    let format_key = if upsert { "value.format" } else { "format" };
    if !edit.has("format") && !edit.has("value.format") {
        // rocketmq-flink's delimited text, as CSV with the same delimiter and no quoting.
        let text = &m.delimited_text;
        let delimiter = job
            .info
            .options
            .iter()
            .find(|(k, _)| {
                schema
                    .option(k)
                    .and_then(|o| o.canonical.as_deref())
                    .is_some_and(|c| c == text.delimiter_canonical)
            })
            .map(|(_, v)| v.clone())
            .or_else(|| default_of(schema, &text.delimiter_canonical))
            .unwrap_or_default();
        // Control characters (the default delimiter is \u0001) as Java escapes, which Flink's
        // CSV format unescapes.
        let delimiter: String = delimiter
            .chars()
            .map(|c| {
                if c.is_control() {
                    format!("\\u{:04x}", u32::from(c))
                } else {
                    c.to_string()
                }
            })
            .collect();
        edit.append(format_key, text.format.clone());
        edit.append(text.delimiter_option.clone(), delimiter.clone());
        for (k, v) in &text.options {
            edit.append(k.clone(), v.clone());
        }
        log.change(
            code(format_key),
            job.table.name_span,
            format!(
                "added '{format_key}' = '{}' with '{}' = '{delimiter}'",
                text.format, text.delimiter_option
            ),
            Some(
                "the rocketmq table read and wrote delimited text (rocketmq-flink's layout)"
                    .to_string(),
            ),
        );
    }
}

/// The Kafka servers for a name server: the cluster map's reverse, else `--bootstrap-servers`.
fn kafka_servers(namesrv: &str, options: &ExportOptions) -> Option<String> {
    options
        .clusters
        .iter()
        .find(|(_, ns)| ns.as_str() == namesrv)
        .map(|(servers, _)| servers.clone())
        .or_else(|| options.bootstrap_servers.clone())
}
