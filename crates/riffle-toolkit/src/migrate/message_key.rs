//! Kafka's record key -> RocketMQ message keys (`[message_key]` of `kafka-rocketmq.toml`).
//!
//! A Kafka record key is bytes in a key format; a RocketMQ message key is text. Riffle's rocketmq
//! sink writes the key columns' values as message keys (on a table with a primary key: the
//! primary key), and its source reads columns only from the message body. So on a table the job
//! writes, `key.fields` become the sink's key columns and the key columns are written into the
//! body as well; `key.format` and `key.fields-prefix` go, with the reason; a table the job only
//! reads keeps reading the body, which is exact when the Kafka value held every column and is
//! left for a human otherwise.

use riffle_dialects::{mappings, Role};

use super::ddl::TableJob;
use super::options::{Log, OptionEdit};

/// Kafka's key options of an open clause.
const KEY_FORMAT: &str = "key.format";
const KEY_FIELDS: &str = "key.fields";
const KEY_PREFIX: &str = "key.fields-prefix";
const VALUE_FIELDS_INCLUDE: &str = "value.fields-include";
/// The value of `value.fields-include` that leaves the key columns out of the record value.
const EXCEPT_KEY: &str = "EXCEPT_KEY";

/// Rewrites the record-key options of a `kafka` / `upsert-kafka` table (`connector`) with
/// `roles` into the rocketmq layout.
pub(super) fn message_key_options(
    job: &TableJob,
    edit: &mut OptionEdit,
    connector: &str,
    roles: &[Role],
    log: &mut Log,
) {
    let layout = &mappings().kafka.message_key;
    let code = |key: &str| format!("option.{connector}.{key}");
    let open = |edit: &OptionEdit, key: &str| edit.find(key).filter(|i| edit.is_open(*i));
    let except_key = edit
        .get(VALUE_FIELDS_INCLUDE)
        .or_else(|| {
            job.info
                .options
                .get(VALUE_FIELDS_INCLUDE)
                .map(String::as_str)
        })
        .is_some_and(|v| v.eq_ignore_ascii_case(EXCEPT_KEY));
    let writes = roles.contains(&Role::Sink);
    if roles.contains(&Role::Source) && except_key {
        // The key columns exist only in the Kafka key, which a rocketmq source cannot read.
        if let Some(i) = open(edit, VALUE_FIELDS_INCLUDE) {
            log.manual(
                code(VALUE_FIELDS_INCLUDE),
                edit.span(i),
                format!("'{VALUE_FIELDS_INCLUDE}' = '{}'", edit.value(i)),
                layout.source_except_key_reason.clone(),
            );
            edit.leave(i);
        }
        for key in [KEY_FORMAT, KEY_FIELDS, KEY_PREFIX] {
            if let Some(i) = open(edit, key) {
                edit.leave(i);
            }
        }
        return;
    }
    let remove = |edit: &mut OptionEdit, log: &mut Log, i: usize, why: &str| {
        let key = edit.key(i).to_string();
        log.change(
            code(&key),
            edit.span(i),
            format!("removed '{key}'"),
            Some(why.to_string()),
        );
        edit.delete(i);
    };
    if let Some(i) = open(edit, KEY_FORMAT) {
        let why = if writes {
            layout.key_format_reason.replace("{format}", edit.value(i))
        } else {
            layout.source_key_reason.clone()
        };
        remove(edit, log, i, &why);
    }
    if let Some(i) = open(edit, KEY_PREFIX) {
        remove(edit, log, i, &layout.prefix_reason);
    }
    let body_reason = if except_key {
        &layout.except_key_reason
    } else if writes {
        &layout.keys_in_body_reason
    } else {
        &layout.source_key_reason
    };
    if let Some(i) = open(edit, VALUE_FIELDS_INCLUDE) {
        remove(edit, log, i, body_reason);
    }
    let Some(i) = open(edit, KEY_FIELDS) else {
        return;
    };
    let columns_option = sink_option(&layout.key_columns);
    let body_option = sink_option(&layout.keys_in_body);
    let (true, Some(columns_option), Some(body_option)) = (writes, columns_option, body_option)
    else {
        return remove(edit, log, i, &layout.source_key_reason);
    };
    let span = edit.span(i);
    let fields = edit.value(i).to_string();
    let columns = fields
        .split(';')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(&layout.key_columns_separator);
    log.change(
        code(KEY_FIELDS),
        span,
        format!("'{KEY_FIELDS}' = '{fields}' -> '{columns_option}' = '{columns}'"),
        None,
    );
    edit.rename(i, columns_option);
    edit.set_value(i, columns);
    edit.settle(i);
    if !edit.has(&body_option) {
        edit.insert_after(i, body_option.clone(), "true");
        log.change(
            code(KEY_FIELDS),
            span,
            format!("added '{body_option}' = 'true'"),
            Some(body_reason.clone()),
        );
    }
}

/// The current sink key of a rocketmq meaning.
fn sink_option(canonical: &str) -> Option<String> {
    let schema = riffle_dialects::connector("rocketmq")?;
    mappings()
        .rocketmq
        .current_option(schema, canonical, Role::Sink)
        .map(|o| o.key.clone())
}
