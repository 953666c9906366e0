//! `debezium-json`: `{"before": {...}, "after": {...}, "op": "c|r|u|d"}`, optionally inside
//! Kafka Connect's `{"schema": ..., "payload": ...}` envelope.

use serde_json::Value;

use super::{image_values, Changes, CommonOptions, EventResult};
use crate::options::Options;
use crate::{Result, RowKind};

/// The format's name.
pub(super) const NAME: &str = "debezium-json";

/// Flink's hint when an update or delete lacks its old image (Postgres without full replica
/// identity sends none).
const NO_BEFORE: &str = "The \"before\" field of {} message is null, if you are using Debezium Postgres Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level.";

/// The `debezium-json.*` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebeziumOptions {
    pub(super) common: CommonOptions,
    /// `debezium-json.schema-include`: events carry the `schema` + `payload` envelope.
    pub schema_include: bool,
}

impl DebeziumOptions {
    /// Reads the `debezium-json.*` options.
    pub fn from_options(options: &mut Options) -> Result<Self> {
        Ok(Self {
            common: CommonOptions::from_options(NAME, options)?,
            schema_include: options.bool("debezium-json.schema-include", false)?,
        })
    }
}

/// The rows of one event: `c`/`r` insert `after`, `u` retracts `before` and adds `after`, `d`
/// deletes `before`.
pub(super) fn changes<'a>(
    options: &DebeziumOptions,
    root: &'a Value,
    fields: &[String],
) -> EventResult<Changes<'a>> {
    let payload = if options.schema_include {
        root.get("payload").ok_or("the event has no 'payload'")?
    } else {
        root
    };
    if !payload.is_object() {
        return Err("the event is not a JSON object".to_string());
    }
    let image = |name: &str| -> EventResult<Option<Vec<&'a Value>>> {
        match payload.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => image_values(v, fields, name).map(Some),
        }
    };
    // Both images are converted whatever the op, as Flink converts the whole payload.
    let before = image("before")?;
    let after = image("after")?;
    let op = match payload.get("op") {
        None | Some(Value::Null) => return Err("the event has no 'op'".to_string()),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let missing = |what: &str| NO_BEFORE.replace("{}", what);
    Ok(match op.as_str() {
        "c" | "r" => vec![(RowKind::Insert, after.ok_or("the event has no 'after'")?)],
        "u" => {
            let before = before.ok_or_else(|| missing("UPDATE"))?;
            let after = after.ok_or("the event has no 'after'")?;
            vec![
                (RowKind::UpdateBefore, before),
                (RowKind::UpdateAfter, after),
            ]
        }
        "d" => vec![(RowKind::Delete, before.ok_or_else(|| missing("DELETE"))?)],
        other => return Err(format!("Unknown \"op\" value \"{other}\".")),
    })
}

/// Writes a row as Flink's Debezium serializer does: `+I`/`+U` as a create with `after`,
/// `-U`/`-D` as a delete with `before`.
pub(super) fn write_event(kind: RowKind, image: &str, out: &mut String) {
    if kind.is_addition() {
        out.push_str("{\"before\":null,\"after\":");
        out.push_str(image);
        out.push_str(",\"op\":\"c\"}");
    } else {
        out.push_str("{\"before\":");
        out.push_str(image);
        out.push_str(",\"after\":null,\"op\":\"d\"}");
    }
}
