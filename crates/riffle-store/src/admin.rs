//! The operations behind `riffle topic`: value parsers, listing, describing, producing from
//! line-oriented input and consuming to line-oriented output. The CLI only parses arguments
//! and calls these, so they are tested here. They work on any [`Topics`]: the embedded store or
//! a real RocketMQ cluster.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::time::Duration;

use serde::Serialize;

use crate::error::{IoContext, Result, StoreError};
use crate::hash::queue_for_key;
use crate::record::{Message, StoredMessage};
use crate::store::{CleanupPolicy, TopicInfo};
use crate::topics::Topics;

/// Parses a duration into milliseconds: a number with an optional unit `ms`, `s`, `m`, `h`,
/// `d` (no unit means milliseconds), e.g. `7d`, `90m`, `500`.
pub fn parse_duration_ms(text: &str) -> std::result::Result<i64, String> {
    let (number, unit) = split_unit(text);
    let factor: i64 = match unit.to_ascii_lowercase().as_str() {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => {
            return Err(format!(
                "unknown time unit '{other}' in '{text}' (use ms, s, m, h or d)"
            ))
        }
    };
    let n: i64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 500ms, 30s, 12h, 7d)"))?;
    n.checked_mul(factor)
        .filter(|ms| *ms > 0)
        .ok_or_else(|| format!("duration '{text}' must be positive and below 2^63 ms"))
}

/// Parses a size in bytes: a number with an optional unit `B`, `KB`/`KiB`, `MB`/`MiB`,
/// `GB`/`GiB`, `TB`/`TiB` (all powers of 1024), e.g. `512MiB`, `10GB`, `4096`.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let (number, unit) = split_unit(text);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit '{other}' in '{text}' (use B, KiB, MiB, GiB or TiB)"
            ))
        }
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, 512MiB, 10GiB)"))?;
    n.checked_mul(1u64 << shift)
        .filter(|b| *b > 0)
        .ok_or_else(|| format!("size '{text}' must be positive and below 2^64 bytes"))
}

fn split_unit(text: &str) -> (&str, &str) {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    (&text[..digits], text[digits..].trim())
}

/// Where consumption starts in each queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// The queue's min offset.
    Earliest,
    /// The queue's max offset: only messages appended from now on.
    Latest,
    /// A given offset (clamped to the queue's range by the read).
    Offset(u64),
    /// The first message stored at or after this time (ms since the epoch).
    Timestamp(i64),
}

/// Parses `earliest`, `latest` or an offset.
pub fn parse_start(text: &str) -> std::result::Result<StartFrom, String> {
    match text {
        "earliest" => Ok(StartFrom::Earliest),
        "latest" => Ok(StartFrom::Latest),
        other => other
            .parse()
            .map(StartFrom::Offset)
            .map_err(|_| format!("'{other}' is not 'earliest', 'latest' or an offset")),
    }
}

/// Writes one line per topic: name, queue count, cleanup policy, message count.
pub fn list(store: &dyn Topics, out: &mut dyn Write) -> Result<()> {
    let mut rows = vec![[
        "TOPIC".to_string(),
        "QUEUES".to_string(),
        "POLICY".to_string(),
        "MESSAGES".to_string(),
    ]];
    for name in store.topics()? {
        let info = store.describe(&name)?;
        let messages: u64 = info.queues.iter().map(|q| q.messages).sum();
        rows.push([
            name,
            info.queues.len().to_string(),
            policy_name(info.config.cleanup_policy).to_string(),
            messages.to_string(),
        ]);
    }
    write_table(out, &rows)
}

fn policy_name(policy: CleanupPolicy) -> &'static str {
    match policy {
        CleanupPolicy::Delete => "DELETE",
        CleanupPolicy::Compaction => "COMPACTION",
    }
}

/// Writes a topic's settings, queues and consumer groups, as text or as JSON.
pub fn describe(store: &dyn Topics, topic: &str, json: bool, out: &mut dyn Write) -> Result<()> {
    let info = store.describe(topic)?;
    if json {
        let text = serde_json::to_string_pretty(&info)
            .map_err(|e| StoreError::Invalid(format!("encoding topic description: {e}")))?;
        return writeln!(out, "{text}").ctx(|| "writing output".into());
    }
    write_description(&info, out)
}

fn write_description(info: &TopicInfo, out: &mut dyn Write) -> Result<()> {
    let c = &info.config;
    let retention = match (c.retention_ms, c.retention_bytes) {
        (None, None) => "none".to_string(),
        (ms, bytes) => [
            ms.map(|ms| format!("{ms} ms")),
            bytes.map(|b| format!("{b} bytes per queue")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", "),
    };
    let header = format!(
        "topic: {}\ncleanup.policy: {}\nretention: {retention}\nqueues: {}\n",
        info.name,
        policy_name(c.cleanup_policy),
        info.queues.len()
    );
    out.write_all(header.as_bytes())
        .ctx(|| "writing output".into())?;
    let mut rows = vec![[
        "QUEUE",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "MESSAGES",
        "BYTES",
        "SEGMENTS",
    ]
    .map(String::from)];
    for q in &info.queues {
        rows.push([
            q.id.to_string(),
            q.min_offset.to_string(),
            q.max_offset.to_string(),
            q.messages.to_string(),
            q.bytes.to_string(),
            q.segments.to_string(),
        ]);
    }
    write_table(out, &rows)?;
    if info.groups.is_empty() {
        return writeln!(out, "groups: none").ctx(|| "writing output".into());
    }
    writeln!(out, "groups:").ctx(|| "writing output".into())?;
    let mut rows = vec![["GROUP", "QUEUE", "COMMITTED", "MAX_OFFSET", "LAG"].map(String::from)];
    for g in &info.groups {
        for q in &g.queues {
            rows.push([
                g.group.clone(),
                q.queue.to_string(),
                q.committed.to_string(),
                q.max_offset.to_string(),
                q.lag.to_string(),
            ]);
        }
        rows.push([
            g.group.clone(),
            "total".into(),
            String::new(),
            String::new(),
            g.lag.to_string(),
        ]);
    }
    write_table(out, &rows)
}

/// Writes rows as left-aligned columns separated by two spaces.
fn write_table<const N: usize>(out: &mut dyn Write, rows: &[[String; N]]) -> Result<()> {
    let mut widths = [0usize; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == N {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    out.write_all(text.as_bytes())
        .ctx(|| "writing output".into())
}

/// How `produce` turns lines into messages.
#[derive(Debug, Clone, Default)]
pub struct ProduceOptions {
    /// Each line is the body as is; without it each line must be a JSON value.
    pub raw: bool,
    /// A key for every message.
    pub key: Option<String>,
    /// JSON mode: take the key from this top-level field of each object.
    pub key_field: Option<String>,
    /// A tag for every message.
    pub tag: Option<String>,
    /// Put every message in this queue; otherwise by key hash ([`queue_for_key`]), or
    /// round-robin for messages without a key.
    pub queue: Option<u32>,
}

/// What `produce` stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProduceSummary {
    /// Messages per queue.
    pub per_queue: BTreeMap<u32, u64>,
}

impl ProduceSummary {
    /// Total messages.
    pub fn total(&self) -> u64 {
        self.per_queue.values().sum()
    }
}

/// Messages buffered per queue before a batched append.
const PRODUCE_BATCH: usize = 512;

/// Produces one message per input line (`\n` or `\r\n` ended). In JSON mode blank lines are
/// skipped and every other line must be valid JSON; in raw mode every line, even an empty one,
/// is a message. Messages are appended in batches, which are also written whenever the input
/// has no more data ready, so interactive input is stored line by line. On a bad line the
/// messages before it are stored and the error names the line. Everything is flushed to disk
/// before returning.
pub fn produce(
    store: &dyn Topics,
    topic: &str,
    options: &ProduceOptions,
    input: impl Read,
) -> Result<ProduceSummary> {
    if options.raw && options.key_field.is_some() {
        return Err(StoreError::Invalid(
            "--key-field needs JSON input; it cannot be used with --raw".into(),
        ));
    }
    let queues = store.topic_config(topic)?.queues;
    if let Some(q) = options.queue {
        if q >= queues {
            return Err(StoreError::QueueNotFound {
                topic: topic.to_owned(),
                queue: q,
                queues,
            });
        }
    }
    // Round-robin starts at the queue holding the fewest messages, so that repeated small
    // produces spread out.
    let mut next_rr = (0..queues)
        .map(|q| store.queue_info(topic, q).map(|i| (i.messages, q)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .min()
        .map_or(0, |(_, q)| q);
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut pending: BTreeMap<u32, Vec<Message>> = BTreeMap::new();
    let mut summary = ProduceSummary::default();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let result = loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(e) => break Err(e).ctx(|| format!("reading input line {}", line_no + 1)),
        }
        line_no += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        let message = match line_to_message(&line, options) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => break Err(StoreError::Invalid(format!("input line {line_no}: {e}"))),
        };
        let queue = match (options.queue, message.keys.first()) {
            (Some(q), _) => q,
            (None, Some(key)) => queue_for_key(key, queues),
            (None, None) => {
                let q = next_rr;
                next_rr = (next_rr + 1) % queues;
                q
            }
        };
        let batch = pending.entry(queue).or_default();
        batch.push(message);
        if batch.len() >= PRODUCE_BATCH {
            append_pending(store, topic, queue, batch, &mut summary)?;
        }
        if reader.buffer().is_empty() {
            // The next read may block (interactive input): store what we have first.
            flush_pending(store, topic, &mut pending, &mut summary)?;
        }
    };
    flush_pending(store, topic, &mut pending, &mut summary)?;
    store.flush()?;
    result.map(|()| summary)
}

fn append_pending(
    store: &dyn Topics,
    topic: &str,
    queue: u32,
    batch: &mut Vec<Message>,
    summary: &mut ProduceSummary,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    store.append_batch(topic, queue, batch)?;
    *summary.per_queue.entry(queue).or_default() += batch.len() as u64;
    batch.clear();
    Ok(())
}

fn flush_pending(
    store: &dyn Topics,
    topic: &str,
    pending: &mut BTreeMap<u32, Vec<Message>>,
    summary: &mut ProduceSummary,
) -> Result<()> {
    for (&queue, batch) in pending.iter_mut() {
        append_pending(store, topic, queue, batch, summary)?;
    }
    Ok(())
}

/// One input line as a message, or `None` for a blank line in JSON mode.
fn line_to_message(
    line: &[u8],
    options: &ProduceOptions,
) -> std::result::Result<Option<Message>, String> {
    let mut message = Message::new(line.to_vec());
    if !options.raw {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let value: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| format!("not valid JSON: {e}"))?;
        if let Some(field) = &options.key_field {
            let key = match value.get(field) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                    v.to_string()
                }
                Some(serde_json::Value::Null) | None => {
                    return Err(format!("key field '{field}' is missing or null"));
                }
                Some(_) => {
                    return Err(format!(
                        "key field '{field}' is not a string, number or boolean"
                    ))
                }
            };
            message.keys.push(key);
        }
    }
    if let Some(key) = &options.key {
        message.keys.push(key.clone());
    }
    message.tag = options.tag.clone();
    Ok(Some(message))
}

/// How `consume` prints messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The body as is, one message per line.
    #[default]
    Body,
    /// One JSON envelope per line: queue, offset, keys, tag, properties, timestamps and the
    /// body (`body` when it is UTF-8, else `body_hex`).
    Json,
}

/// How `consume` reads.
#[derive(Debug, Clone)]
pub struct ConsumeOptions {
    /// Start position; `None` means the group's committed offset, or earliest without one.
    pub start: Option<StartFrom>,
    /// Only this queue; otherwise all, queue by queue.
    pub queue: Option<u32>,
    /// Consumer group whose offsets are used and committed.
    pub group: Option<String>,
    /// Keep polling for new messages instead of stopping at the end.
    pub follow: bool,
    /// Stop after this many messages.
    pub max: Option<u64>,
    /// Output format.
    pub format: OutputFormat,
    /// Pause between polls in follow mode.
    pub poll_interval: Duration,
}

impl Default for ConsumeOptions {
    fn default() -> Self {
        ConsumeOptions {
            start: None,
            queue: None,
            group: None,
            follow: false,
            max: None,
            format: OutputFormat::Body,
            poll_interval: Duration::from_millis(200),
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    queue: u32,
    offset: u64,
    keys: &'a [String],
    tag: Option<&'a str>,
    properties: &'a BTreeMap<String, String>,
    born_timestamp: i64,
    store_timestamp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_hex: Option<String>,
}

/// Messages read per queue per poll.
const CONSUME_BATCH: usize = 256;

/// Reads messages and writes one line per message. Without `follow` it stops at the end of the
/// queues (as they were when each was read); with a group it commits, after each batch, the
/// next offset to consume. A closed output (broken pipe) ends consumption normally. Returns
/// the number of messages written.
pub fn consume(
    store: &dyn Topics,
    topic: &str,
    options: &ConsumeOptions,
    out: &mut dyn Write,
) -> Result<u64> {
    let queues: Vec<u32> = match options.queue {
        Some(q) => {
            store.queue_info(topic, q)?;
            vec![q]
        }
        None => (0..store.topic_config(topic)?.queues).collect(),
    };
    if let Some(group) = &options.group {
        crate::store::validate_name("group", group)?;
    }
    // (queue, next offset, end offset when consumption started).
    let mut positions = Vec::with_capacity(queues.len());
    for &q in &queues {
        let end = store.queue_info(topic, q)?.max_offset;
        positions.push((q, start_offset(store, topic, q, options)?, end));
    }
    let limit = options.max.unwrap_or(u64::MAX);
    let mut written = 0u64;
    loop {
        let mut progressed = false;
        for (queue, next, end) in positions.iter_mut() {
            loop {
                let want = usize::try_from(limit - written)
                    .unwrap_or(usize::MAX)
                    .min(CONSUME_BATCH);
                if want == 0 {
                    break;
                }
                let batch = store.read(topic, *queue, *next, want)?;
                let Some(last) = batch.last() else { break };
                let new_next = last.offset + 1;
                for m in &batch {
                    if !write_message(out, m, options.format)? {
                        return Ok(written);
                    }
                    written += 1;
                }
                *next = new_next;
                progressed = true;
                if let Some(group) = &options.group {
                    store.commit_offsets(group, topic, &[(*queue, *next)])?;
                }
                // A short read is not the end: a broker caps what one pull returns.
                if !options.follow && *next >= *end {
                    break;
                }
            }
        }
        if written >= limit || !options.follow {
            break;
        }
        if !progressed {
            if !flush_out(out)? {
                return Ok(written);
            }
            std::thread::sleep(options.poll_interval);
        }
    }
    flush_out(out)?;
    Ok(written)
}

fn start_offset(
    store: &dyn Topics,
    topic: &str,
    queue: u32,
    options: &ConsumeOptions,
) -> Result<u64> {
    let info = store.queue_info(topic, queue)?;
    let start = match (options.start, &options.group) {
        (Some(start), _) => start,
        (None, Some(group)) => match store.committed_offset(group, topic, queue)? {
            Some(offset) => StartFrom::Offset(offset),
            None => StartFrom::Earliest,
        },
        (None, None) => StartFrom::Earliest,
    };
    Ok(match start {
        StartFrom::Earliest => info.min_offset,
        StartFrom::Latest => info.max_offset,
        StartFrom::Offset(o) => o,
        StartFrom::Timestamp(ts) => store.offset_for_timestamp(topic, queue, ts)?,
    })
}

/// Writes one message line; `false` if the output is closed.
fn write_message(out: &mut dyn Write, m: &StoredMessage, format: OutputFormat) -> Result<bool> {
    let mut line = match format {
        OutputFormat::Body => m.message.body.clone(),
        OutputFormat::Json => {
            let text = std::str::from_utf8(&m.message.body).ok();
            let envelope = Envelope {
                queue: m.queue,
                offset: m.offset,
                keys: &m.message.keys,
                tag: m.message.tag.as_deref(),
                properties: &m.message.properties,
                born_timestamp: m.message.born_timestamp,
                store_timestamp: m.store_timestamp,
                body: text,
                body_hex: match text {
                    Some(_) => None,
                    None => Some(m.message.body.iter().map(|b| format!("{b:02x}")).collect()),
                },
            };
            serde_json::to_vec(&envelope)
                .map_err(|e| StoreError::Invalid(format!("encoding message envelope: {e}")))?
        }
    };
    line.push(b'\n');
    match out.write_all(&line) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        other => other.ctx(|| "writing output".into()).map(|()| true),
    }
}

/// Flushes the output; `false` if it is closed.
fn flush_out(out: &mut dyn Write) -> Result<bool> {
    match out.flush() {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        other => other.ctx(|| "writing output".into()).map(|()| true),
    }
}
