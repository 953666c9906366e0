//! The rocketmq connector's options, normalised in one place.
//!
//! A table may spell its options in any of the connector's generations (rocketmq-flink's legacy
//! camelCase keys, its `rocketmq.*` dotted keys, rsqlDB's `type`/`namesrvAddr`/`isJsonData`, or
//! Riffle's own keys). Every key is looked up in `dialects/connectors/rocketmq.toml`, which maps
//! it to its `canonical` meaning; the connector reads meanings, never keys.

use std::collections::BTreeMap;
use std::path::PathBuf;

use riffle_dialects::ConnectorSchema;
use riffle_plan::ConnectorSpec;

use crate::avro::AvroFormat;
use crate::changelog::ChangelogFormat;
use crate::csv::CsvOptions;
use crate::options::Options;
use crate::raw::RawOptions;
use crate::rows::TextFormat;
use crate::{ConnectorError, Result};

/// The connector identifier.
pub const CONNECTOR: &str = "rocketmq";

/// Data directory of the embedded store when `riffle.store.dir` is not given.
pub const DEFAULT_STORE_DIR: &str = ".riffle";

/// Queues of a topic the sink creates when `riffle.store.queues` is not given (RocketMQ's
/// `defaultTopicQueueNums`).
pub const DEFAULT_QUEUES: u32 = 4;

/// Canonical meanings that only tune a client (threads, timeouts, batching, tracing, automatic
/// offset commits); the embedded store has nothing to tune and Riffle's cluster client keeps
/// its defaults and commits offsets itself, so they are accepted and have no effect.
/// (For a cluster, `Meanings::cluster` takes the credentials first and refuses TLS.)
const CLIENT_TUNING: &[&str] = &[
    "access-channel",
    "access-key",
    "secret-key",
    "callback-threads",
    "partition-discovery-interval",
    "heartbeat-interval",
    "unit-mode",
    "unit-name",
    "vip-channel",
    "tls",
    "network-timeout",
    "client-language",
    "client-debug",
    "column-error-debug",
    "use-new-api",
    "pull-threads",
    "pull-batch-size",
    "pull-threshold-queue",
    "pull-threshold-all",
    "poll-timeout",
    "pull-error-delay",
    "pull-suspend-timeout",
    "pull-interval",
    "source-threads",
    "offset-commit-auto",
    "offset-commit-interval",
    "offset-commit-on-checkpoint",
    "trace",
    "trace-topic",
    "producer-group",
    "transaction-timeout",
    "send-retry-times",
    "send-retry-backoff",
    "send-retry-sleep",
    "send-pending-max",
    "send-timeout",
    "send-threads",
    "startup-offset-strategy",
];

/// Which side of the job a table is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read by a query.
    Source,
    /// Written by an INSERT.
    Sink,
}

/// How message bodies hold rows.
#[derive(Debug, Clone)]
pub enum BodyFormat {
    /// `json` or `csv` (the delimited text of rocketmq-flink's default is `csv` without quotes).
    Text(TextFormat),
    /// `debezium-json` or `canal-json`: a body is a change event.
    Changelog(ChangelogFormat),
    /// `raw`: the whole body is the table's single column.
    Raw(RawOptions),
    /// `avro` or `avro-confluent`: a body is one Avro datum (framed with a registry id).
    Avro(AvroFormat),
}

/// Where a source starts in each queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupMode {
    /// The oldest retained message.
    Earliest,
    /// After the newest message at start.
    Latest,
    /// The first message stored at or after this time (epoch ms).
    Timestamp(i64),
    /// This offset in every queue.
    SpecificOffset(u64),
}

/// A source's tag filter (`'*'` or `'a || b'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagFilter {
    /// Every message.
    All,
    /// Messages whose tag is one of these.
    AnyOf(Vec<String>),
}

impl TagFilter {
    fn parse(expression: &str) -> Self {
        let tags: Vec<String> = expression
            .split("||")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if tags.is_empty() || tags.iter().any(|t| t == "*") {
            TagFilter::All
        } else {
            TagFilter::AnyOf(tags)
        }
    }

    /// Whether a message with `tag` passes.
    pub fn accepts(&self, tag: Option<&str>) -> bool {
        match self {
            TagFilter::All => true,
            TagFilter::AnyOf(tags) => tag.is_some_and(|t| tags.iter().any(|x| x == t)),
        }
    }
}

/// How to reach a real RocketMQ cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterAddress {
    /// Name server address(es), `host:port[;host:port...]`.
    pub namesrv: String,
    /// ACL credentials, when the cluster checks them.
    pub credentials: Option<Credentials>,
}

/// ACL credentials of a RocketMQ client (`accessKey` / `secretKey`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// The access key.
    pub access_key: String,
    /// The secret key.
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        write!(f, "Credentials {{ access_key: {:?} }}", self.access_key)
    }
}

/// The options of a rocketmq table, by meaning.
#[derive(Debug, Clone)]
pub struct RocketMqOptions {
    /// Table name, for messages.
    pub table: String,
    /// The topic.
    pub topic: String,
    /// A real cluster; `None` means the embedded store.
    pub cluster: Option<ClusterAddress>,
    /// Data directory of the embedded store.
    pub store_dir: PathBuf,
    /// Queues of a topic the sink creates.
    pub store_queues: u32,
    /// How bodies hold rows.
    pub body: BodyFormat,
    /// The columns the job reads (the spec's `read_columns`).
    pub read_columns: Option<Vec<Vec<String>>>,
    /// Consumer group whose offsets the source starts from and commits.
    pub group: Option<String>,
    /// Where the source starts when the group has no committed offset.
    pub startup: StartupMode,
    /// Whether an explicit start (timestamp or offset) overrides committed offsets.
    pub startup_explicit: bool,
    /// `scan.bounded.mode = latest-offset`: stop at the end offsets seen at start.
    pub bounded: bool,
    /// Stop at the first message stored after this time (epoch ms).
    pub stop_timestamp: Option<i64>,
    /// The source's tag filter.
    pub tag_filter: TagFilter,
    /// The sink's static tag.
    pub sink_tag: Option<String>,
    /// The sink takes each message's tag from this column.
    pub tag_column: Option<String>,
    /// Whether the tag column is also written into the body.
    pub tag_column_in_body: bool,
    /// The sink's static message key.
    pub message_key: Option<String>,
    /// Columns whose values become message keys.
    pub key_columns: Vec<String>,
    /// Whether key columns are also written into the body.
    pub keys_in_body: bool,
    /// `riffle.changelog-mode = 'upsert'`: the topic is an upsert changelog keyed by the
    /// primary key.
    pub upsert_changelog: bool,
    /// `EXACTLY_ONCE` delivery: without checkpointing the sink publishes its rows only when its
    /// input ends (with checkpointing every rocketmq sink publishes per completed checkpoint).
    pub exactly_once: bool,
}

/// A value with the key it was written under.
#[derive(Debug, Clone)]
struct Given {
    key: String,
    value: String,
}

/// Reads and normalises the options of `spec` for `role`. Format options (`json.*`, `csv.*`,
/// `raw.*`) are read from `options`, which the caller finishes.
pub fn normalize(
    spec: &ConnectorSpec,
    role: Role,
    options: &mut Options,
) -> Result<RocketMqOptions> {
    let schema = riffle_dialects::connector(CONNECTOR).ok_or_else(|| {
        ConnectorError::new("the rocketmq connector's option data (dialects/) did not load")
    })?;
    let table = spec.table.as_str();
    let mut meanings: BTreeMap<String, Given> = BTreeMap::new();
    let mut rsqldb = false;
    for (key, value) in &spec.options {
        if key == "connector" || is_format_option(key) {
            continue;
        }
        let option = schema
            .option(key)
            .ok_or_else(|| unknown_option(schema, table, key))?;
        options.accept(key);
        rsqldb |= option.generation.as_deref() == Some("rsqldb");
        let canonical = option.canonical.clone().unwrap_or_else(|| key.clone());
        if let Some(previous) = meanings.get(&canonical) {
            if previous.value != *value {
                return Err(ConnectorError::new(format!(
                    "options '{}' = '{}' and '{key}' = '{value}' of table '{table}' set the same thing ({canonical}) differently",
                    previous.key, previous.value
                )));
            }
            continue;
        }
        meanings.insert(
            canonical,
            Given {
                key: key.clone(),
                value: value.clone(),
            },
        );
    }
    let mut reader = Meanings { table, meanings };
    let cluster = reader.cluster()?;
    let topic = reader
        .take("topic")
        .ok_or_else(|| {
            ConnectorError::new(format!(
                "Missing required option for table '{table}': the topic ('rocketmq.source.topic' / 'rocketmq.sink.topic', or 'topic')"
            ))
        })?
        .value;
    if topic.contains(';') {
        return Err(ConnectorError::new(format!(
            "unsupported feature: several topics ('{topic}') in one rocketmq table '{table}'"
        )));
    }
    let store_dir = reader.take("store-dir").map_or_else(
        || PathBuf::from(DEFAULT_STORE_DIR),
        |g| PathBuf::from(g.value),
    );
    let store_queues = match reader.take("store-queues") {
        None => DEFAULT_QUEUES,
        Some(g) => match g.value.trim().parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => return Err(reader.invalid(&g, "a positive number of queues")),
        },
    };
    let body = reader.body(options, rsqldb)?;
    let group = reader.take("consumer-group").map(|g| g.value);
    let (startup, startup_explicit) = reader.startup()?;
    let bounded = match reader.take("bounded-mode") {
        None => false,
        Some(g) if g.value.eq_ignore_ascii_case("latest-offset") => true,
        Some(g) if g.value.eq_ignore_ascii_case("unbounded") => false,
        Some(g) => return Err(reader.invalid(&g, "'unbounded' or 'latest-offset'")),
    };
    let stop_timestamp = match reader.take("stop-date") {
        None => None,
        Some(g) => Some(reader.date(&g)?),
    };
    let tag = reader.take("tag").map(|g| g.value);
    let (tag_filter, sink_tag) = match role {
        Role::Source => (TagFilter::parse(tag.as_deref().unwrap_or("*")), None),
        Role::Sink => (TagFilter::All, tag),
    };
    let dynamic_tag = reader.bool("dynamic-tag", false)?;
    let tag_column = reader.take("dynamic-tag-column").map(|g| g.value);
    let tag_column = match (dynamic_tag, tag_column) {
        (true, None) => {
            return Err(ConnectorError::new(format!(
                "table '{table}' enables dynamic tags but names no tag column ('rocketmq.sink.tag.dynamic.column' / 'dynamicTagColumn')"
            )))
        }
        (true, column) => column,
        (false, _) => None,
    };
    let tag_column_in_body = reader.bool("dynamic-tag-column-in-body", true)?;
    let message_key = reader.take("message-key").map(|g| g.value);
    let key_columns = reader
        .take("key-columns")
        .map(|g| {
            g.value
                .split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let keys_in_body = reader.bool("keys-in-body", false)?;
    let upsert_changelog = reader.upsert_changelog()?;
    let exactly_once = reader.exactly_once()?;
    reader.finish()?;
    Ok(RocketMqOptions {
        table: table.to_string(),
        topic,
        cluster,
        store_dir,
        store_queues,
        body,
        read_columns: spec.read_columns.clone(),
        group,
        startup,
        startup_explicit,
        bounded,
        stop_timestamp,
        tag_filter,
        sink_tag,
        tag_column,
        tag_column_in_body,
        message_key,
        key_columns,
        keys_in_body,
        upsert_changelog,
        exactly_once,
    })
}

fn is_format_option(key: &str) -> bool {
    ["json.", "csv.", "raw.", "debezium-json.", "canal-json."]
        .iter()
        .any(|p| key.starts_with(p))
        // The Avro formats' options, also with the `value.` prefix of Kafka-style tables.
        || ["avro.", "avro-confluent."]
            .iter()
            .any(|p| key.strip_prefix("value.").unwrap_or(key).starts_with(p))
}

fn unknown_option(schema: &ConnectorSchema, table: &str, key: &str) -> ConnectorError {
    let hint = riffle_dialects::did_you_mean(key, schema.known_keys())
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    ConnectorError::new(format!(
        "Unsupported options found for 'rocketmq' (table '{table}'): {key}{hint}"
    ))
}

/// The given options by canonical meaning, consumed as they are interpreted.
struct Meanings<'a> {
    table: &'a str,
    meanings: BTreeMap<String, Given>,
}

impl Meanings<'_> {
    fn take(&mut self, canonical: &str) -> Option<Given> {
        self.meanings.remove(canonical)
    }

    fn invalid(&self, given: &Given, expected: &str) -> ConnectorError {
        ConnectorError::new(format!(
            "Invalid value for option '{}' of table '{}': '{}' (expected {expected})",
            given.key, self.table, given.value
        ))
    }

    fn bool(&mut self, canonical: &str, default: bool) -> Result<bool> {
        match self.take(canonical) {
            None => Ok(default),
            Some(g) if g.value.eq_ignore_ascii_case("true") => Ok(true),
            Some(g) if g.value.eq_ignore_ascii_case("false") => Ok(false),
            Some(g) => Err(self.invalid(&g, "true or false")),
        }
    }

    fn i64(&mut self, canonical: &str) -> Result<Option<i64>> {
        match self.take(canonical) {
            None => Ok(None),
            Some(g) => g
                .value
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.invalid(&g, "a number")),
        }
    }

    /// The name server address of a real cluster, if one is given, with its ACL credentials;
    /// options a cluster would need but Riffle does not pass to it yet fail here rather than
    /// be ignored.
    fn cluster(&mut self) -> Result<Option<ClusterAddress>> {
        if let Some(g) = self.take("namespace") {
            return Err(ConnectorError::new(format!(
                "unsupported feature: '{}' (RocketMQ namespaces) of table '{}'",
                g.key, self.table
            )));
        }
        let Some(endpoints) = self.take("endpoints") else {
            return Ok(None);
        };
        if endpoints.value.trim().is_empty() {
            return Err(self.invalid(&endpoints, "a name server address 'host:port'"));
        }
        let credentials = match (self.take("access-key"), self.take("secret-key")) {
            (None, None) => None,
            (Some(access), Some(secret)) => Some(Credentials {
                access_key: access.value,
                secret_key: secret.value,
            }),
            (Some(g), None) | (None, Some(g)) => {
                return Err(ConnectorError::new(format!(
                    "table '{}' sets '{}' but not its pair: ACL credentials need both an access key and a secret key",
                    self.table, g.key
                )))
            }
        };
        if self.bool("tls", false)? {
            return Err(ConnectorError::new(format!(
                "unsupported feature: TLS connections to a RocketMQ cluster (table '{}')",
                self.table
            )));
        }
        Ok(Some(ClusterAddress {
            namesrv: endpoints.value.trim().to_string(),
            credentials,
        }))
    }

    /// The body format: `format`/`value.format`, else rsqlDB's `isJsonData` (JSON by default),
    /// else rocketmq-flink's delimited text (`fieldDelimiter`, default U+0001).
    fn body(&mut self, options: &mut Options, rsqldb: bool) -> Result<BodyFormat> {
        let explicit = self
            .take("value-format")
            .or_else(|| self.take("serialize-format"));
        let json_data = self.bool("format-json", rsqldb)?;
        if let Some(g) = self.take("format-json-array") {
            if g.value.eq_ignore_ascii_case("true") {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = 'true' (JSON-array bodies) of table '{}'",
                    g.key, self.table
                )));
            }
        }
        for canonical in ["key-format", "key-fields", "key-fields-prefix"] {
            if let Some(g) = self.take(canonical) {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' (a key format) of rocketmq table '{}'; use 'rocketmq.sink.key.columns' for message keys",
                    g.key, self.table
                )));
            }
        }
        if let Some(g) = self.take("value-fields-include") {
            if !g.value.eq_ignore_ascii_case("ALL") {
                return Err(self.invalid(&g, "'ALL'"));
            }
        }
        if let Some(g) = self.take("encoding") {
            if !g.value.eq_ignore_ascii_case("UTF-8") && !g.value.eq_ignore_ascii_case("UTF8") {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = '{}' of table '{}' (only UTF-8 bodies)",
                    g.key, g.value, self.table
                )));
            }
        }
        if let Some(g) = self.take("line-delimiter") {
            if unescape(&g.value) != "\n" {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' other than a newline (table '{}')",
                    g.key, self.table
                )));
            }
        }
        if let Some(g) = self.take("length-check") {
            if !g.value.eq_ignore_ascii_case("NONE") {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = '{}' of table '{}'",
                    g.key, g.value, self.table
                )));
            }
        }
        let delimiter = self.take("field-delimiter");
        let name = match &explicit {
            Some(g) => g.value.to_ascii_lowercase(),
            None if json_data => "json".to_string(),
            None => {
                // rocketmq-flink's own row format: fields split at the delimiter, no quoting.
                let mut csv = CsvOptions::from_options(options)?;
                let text = delimiter.map_or_else(|| "\u{1}".to_string(), |g| unescape(&g.value));
                let mut chars = text.chars();
                csv.field_delimiter = match (chars.next(), chars.next()) {
                    (Some(c), None) => c,
                    _ => {
                        return Err(ConnectorError::new(format!(
                            "the field delimiter of table '{}' must be a single character, got '{text}'",
                            self.table
                        )))
                    }
                };
                csv.quote = None;
                return Ok(BodyFormat::Text(TextFormat::Csv(csv)));
            }
        };
        if name == crate::raw::NAME {
            return Ok(BodyFormat::Raw(RawOptions::from_options(options)?));
        }
        if let Some(format) = AvroFormat::from_options(&name, self.table, options)? {
            return Ok(BodyFormat::Avro(format));
        }
        if let Some(format) = ChangelogFormat::from_options(&name, options)? {
            return Ok(BodyFormat::Changelog(format));
        }
        match TextFormat::from_options(&name, options)? {
            Some(format) => Ok(BodyFormat::Text(format)),
            None => Err(ConnectorError::new(format!(
                "unsupported feature: format '{name}' of the rocketmq connector (table '{}'); supported: json, csv, raw, avro, avro-confluent, debezium-json, canal-json",
                self.table
            ))),
        }
    }

    /// The startup mode and whether it was set explicitly (an offset or a time).
    fn startup(&mut self) -> Result<(StartupMode, bool)> {
        let mode = self.take("startup-mode");
        let offset = self.i64("startup-offset")?.filter(|o| *o >= 0);
        let timestamp = self.i64("startup-timestamp")?.filter(|t| *t >= 0);
        let date = match self.take("startup-date") {
            None => None,
            Some(g) => Some(self.date(&g)?),
        };
        if let Some(offset) = offset {
            return Ok((StartupMode::SpecificOffset(offset as u64), true));
        }
        if let Some(ts) = timestamp.or(date) {
            return Ok((StartupMode::Timestamp(ts), true));
        }
        let Some(g) = mode else {
            return Ok((StartupMode::Latest, false));
        };
        match g.value.to_ascii_lowercase().as_str() {
            "earliest" => Ok((StartupMode::Earliest, false)),
            "latest" => Ok((StartupMode::Latest, false)),
            "timestamp" => Err(ConnectorError::new(format!(
                "table '{}' starts from a timestamp but gives none ('rocketmq.source.startup.offset.timestamp' or '.date')",
                self.table
            ))),
            _ => Err(self.invalid(&g, "'earliest', 'latest' or 'timestamp'")),
        }
    }

    /// Epoch milliseconds of `yyyy-MM-dd HH:mm:ss` in the table's time zone (UTC only).
    fn date(&mut self, given: &Given) -> Result<i64> {
        if let Some(zone) = self.meanings.get("time-zone") {
            if !matches!(
                zone.value.as_str(),
                "UTC" | "GMT" | "Z" | "+00:00" | "Etc/UTC"
            ) {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = '{}' of table '{}' (only UTC)",
                    zone.key, zone.value, self.table
                )));
            }
        }
        parse_date_time(&given.value).ok_or_else(|| self.invalid(given, "'yyyy-MM-dd HH:mm:ss'"))
    }

    /// Whether the table declares an upsert changelog: a sink writes one (keyed by the primary
    /// key), a source reads one (a message replaces its key's row, an empty body deletes it).
    fn upsert_changelog(&mut self) -> Result<bool> {
        let Some(g) = self.take("changelog-mode") else {
            return Ok(false);
        };
        if g.value.eq_ignore_ascii_case("insert-only") {
            return Ok(false);
        }
        if !g.value.eq_ignore_ascii_case("upsert") {
            return Err(self.invalid(&g, "'insert-only' or 'upsert'"));
        }
        Ok(true)
    }

    /// Whether the sink delivers exactly once (`AT_LEAST_ONCE` and `NONE` need nothing: a sink
    /// writes each row once unless a restore replays it).
    fn exactly_once(&mut self) -> Result<bool> {
        match self.take("delivery-guarantee") {
            None => Ok(false),
            Some(g) if g.value.eq_ignore_ascii_case("EXACTLY_ONCE") => Ok(true),
            Some(g)
                if g.value.eq_ignore_ascii_case("AT_LEAST_ONCE")
                    || g.value.eq_ignore_ascii_case("NONE") =>
            {
                Ok(false)
            }
            Some(g) => Err(self.invalid(&g, "'AT_LEAST_ONCE', 'EXACTLY_ONCE' or 'NONE'")),
        }
    }

    /// Fails on meanings given but not executed; client tuning is accepted.
    fn finish(mut self) -> Result<()> {
        self.take("time-zone");
        self.take("connector");
        if let Some(g) = self.take("sql-filter") {
            return Err(ConnectorError::new(format!(
                "unsupported feature: '{}' (SQL92 message filters) of table '{}'",
                g.key, self.table
            )));
        }
        if let Some(g) = self.take("allocate-strategy") {
            if g.value.eq_ignore_ascii_case("broadcast") {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: '{}' = 'broadcast' of table '{}'",
                    g.key, self.table
                )));
            }
        }
        for canonical in CLIENT_TUNING {
            self.take(canonical);
        }
        match self.meanings.into_iter().next() {
            None => Ok(()),
            Some((canonical, g)) => Err(ConnectorError::new(format!(
                "unsupported feature: option '{}' ({canonical}) of rocketmq table '{}' is not executed by Riffle yet",
                g.key, self.table
            ))),
        }
    }
}

/// Java-style escapes in delimiter options: `\t`, `\n`, `\uXXXX`.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Epoch milliseconds of `yyyy-MM-dd HH:mm:ss` (UTC).
fn parse_date_time(text: &str) -> Option<i64> {
    let (date, time) = text.trim().split_once(' ')?;
    let mut d = date.splitn(3, '-');
    let (y, m, day): (i64, u32, u32) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let mut t = time.splitn(3, ':');
    let (h, mi, s): (i64, i64, i64) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = crate::format::days_from_civil(y, m, day);
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(options: &[(&str, &str)]) -> ConnectorSpec {
        ConnectorSpec {
            table: "t".into(),
            connector: CONNECTOR.into(),
            options: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..ConnectorSpec::default()
        }
    }

    fn read(options: &[(&str, &str)], role: Role) -> Result<RocketMqOptions> {
        let spec = spec(options);
        let mut opts = Options::new(&spec);
        let normalized = normalize(&spec, role, &mut opts)?;
        opts.finish()?;
        Ok(normalized)
    }

    #[test]
    fn all_three_generations_mean_the_same_source() {
        let legacy = read(
            &[
                ("connector", "rocketmq"),
                ("topic", "orders"),
                ("consumerGroup", "g"),
                ("tag", "a || b"),
                ("startMessageOffset", "3"),
                ("format", "json"),
            ],
            Role::Source,
        )
        .unwrap();
        let dotted = read(
            &[
                ("connector", "rocketmq"),
                ("rocketmq.source.topic", "orders"),
                ("rocketmq.source.group", "g"),
                ("rocketmq.source.filter.tag", "a || b"),
                ("rocketmq.source.startup.offset.specific", "3"),
                ("format", "json"),
            ],
            Role::Source,
        )
        .unwrap();
        let rsqldb = read(
            &[
                ("type", "rocketmq"),
                ("topic", "orders"),
                ("groupName", "g"),
                ("tags", "a || b"),
                ("startMessageOffset", "3"),
            ],
            Role::Source,
        )
        .unwrap();
        for o in [&legacy, &dotted, &rsqldb] {
            assert_eq!(o.topic, "orders");
            assert_eq!(o.group.as_deref(), Some("g"));
            assert_eq!(o.startup, StartupMode::SpecificOffset(3));
            assert_eq!(o.tag_filter, TagFilter::AnyOf(vec!["a".into(), "b".into()]));
            assert!(matches!(o.body, BodyFormat::Text(TextFormat::Json(_))));
        }
    }

    #[test]
    fn every_generation_names_the_cluster_the_same_way() {
        for key in [
            "nameServerAddress",
            "rocketmq.client.endpoints",
            "namesrvAddr",
        ] {
            let o = read(&[("topic", "t"), (key, " 127.0.0.1:9876 ")], Role::Source).unwrap();
            let cluster = o.cluster.unwrap();
            assert_eq!(cluster.namesrv, "127.0.0.1:9876");
            assert_eq!(cluster.credentials, None);
            let err = read(
                &[("topic", "t"), (key, "127.0.0.1:9876"), ("accessKey", "k")],
                Role::Source,
            )
            .unwrap_err();
            assert!(err.message.contains("ACL credentials"), "{}", err.message);
        }
        let o = read(
            &[
                ("topic", "t"),
                ("nameServerAddress", "h:1"),
                ("accessKey", "k"),
                ("secretKey", "hidden-secret"),
            ],
            Role::Sink,
        )
        .unwrap();
        let credentials = o.cluster.unwrap().credentials.unwrap();
        assert_eq!(credentials.access_key, "k");
        assert_eq!(credentials.secret_key, "hidden-secret");
        assert!(!format!("{credentials:?}").contains("hidden-secret"));
        let o = read(&[("topic", "t")], Role::Source).unwrap();
        assert_eq!(o.cluster, None);
    }

    #[test]
    fn conflicting_spellings_and_unknown_keys_fail() {
        let err = read(
            &[("topic", "a"), ("rocketmq.source.topic", "b")],
            Role::Source,
        )
        .unwrap_err();
        assert!(err.message.contains("differently"), "{}", err.message);
        let err = read(&[("topic", "a"), ("consumerGrop", "g")], Role::Source).unwrap_err();
        assert!(
            err.message.contains("did you mean 'consumerGroup'"),
            "{}",
            err.message
        );
        let err = read(
            &[("topic", "a"), ("rocketmq.source.filter.sql", "a > 1")],
            Role::Source,
        )
        .unwrap_err();
        assert!(err.message.contains("SQL92"), "{}", err.message);
    }

    #[test]
    fn defaults_and_riffle_options() {
        let o = read(
            &[
                ("rocketmq.source.topic", "t"),
                ("rocketmq.source.startup.scan.mode", "earliest"),
                ("scan.bounded.mode", "latest-offset"),
                ("riffle.store.dir", "/tmp/x"),
                ("rocketmq.source.pull.batch.size", "64"),
            ],
            Role::Source,
        )
        .unwrap();
        assert_eq!(o.startup, StartupMode::Earliest);
        assert!(o.bounded && !o.startup_explicit);
        assert_eq!(o.store_dir, PathBuf::from("/tmp/x"));
        // rocketmq-flink's own row format: U+0001-delimited text without quotes.
        match &o.body {
            BodyFormat::Text(TextFormat::Csv(csv)) => {
                assert_eq!(csv.field_delimiter, '\u{1}');
                assert_eq!(csv.quote, None);
            }
            other => panic!("{other:?}"),
        }
        let o = read(
            &[
                ("rocketmq.sink.topic", "t"),
                ("rocketmq.sink.tag", "x"),
                ("rocketmq.sink.key.columns", "a, b"),
                ("fieldDelimiter", "\\t"),
            ],
            Role::Sink,
        )
        .unwrap();
        assert_eq!(o.sink_tag.as_deref(), Some("x"));
        assert_eq!(o.key_columns, vec!["a".to_string(), "b".to_string()]);
        assert!(
            matches!(&o.body, BodyFormat::Text(TextFormat::Csv(c)) if c.field_delimiter == '\t')
        );
        let upsert = [
            ("rocketmq.sink.topic", "t"),
            ("riffle.changelog-mode", "upsert"),
        ];
        assert!(read(&upsert, Role::Sink).unwrap().upsert_changelog);
        let upsert_source = [
            ("rocketmq.source.topic", "t"),
            ("riffle.changelog-mode", "upsert"),
        ];
        assert!(read(&upsert_source, Role::Source).unwrap().upsert_changelog);
        let err = read(
            &[
                ("rocketmq.sink.topic", "t"),
                ("riffle.changelog-mode", "retract"),
            ],
            Role::Sink,
        )
        .unwrap_err();
        assert!(
            err.message.contains("'insert-only' or 'upsert'"),
            "{}",
            err.message
        );
        assert_eq!(
            parse_date_time("2020-04-15 08:00:05"),
            Some(1_586_937_605_000)
        );
    }
}
