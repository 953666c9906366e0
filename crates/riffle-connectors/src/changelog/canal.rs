//! `canal-json`: `{"data": [...], "old": [...], "type": "INSERT|UPDATE|DELETE", "database": ...,
//! "table": ...}`; one event may hold several rows.

use regex::Regex;
use serde_json::Value;

use super::{image_values, Changes, CommonOptions, EventResult};
use crate::options::Options;
use crate::{ConnectorError, Result, RowKind};

/// The format's name.
pub(super) const NAME: &str = "canal-json";

/// The `canal-json.*` options.
#[derive(Debug, Clone)]
pub struct CanalOptions {
    pub(super) common: CommonOptions,
    /// `canal-json.database.include`, matched against the whole database name.
    database: Option<Regex>,
    /// `canal-json.table.include`, matched against the whole table name.
    table: Option<Regex>,
}

impl CanalOptions {
    /// Reads the `canal-json.*` options.
    pub fn from_options(options: &mut Options) -> Result<Self> {
        let mut pattern = |key: &str| -> Result<Option<Regex>> {
            options
                .get(key)
                .map(|p| {
                    // Java's Matcher.matches(): the whole name must match.
                    Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                        ConnectorError::new(format!(
                            "Invalid regular expression '{p}' of '{key}': {e}"
                        ))
                    })
                })
                .transpose()
        };
        Ok(Self {
            database: pattern("canal-json.database.include")?,
            table: pattern("canal-json.table.include")?,
            common: CommonOptions::from_options(NAME, options)?,
        })
    }
}

/// Jackson's `asText()` of a scalar: strings as they are, `null` as "null".
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => String::new(),
        other => other.to_string(),
    }
}

/// Whether an event of database/table `field` passes `filter`.
fn included(root: &Value, field: &str, filter: Option<&Regex>) -> EventResult<bool> {
    let Some(filter) = filter else {
        return Ok(true);
    };
    let value = root
        .get(field)
        .ok_or_else(|| format!("the event has no '{field}'"))?;
    Ok(filter.is_match(&as_text(value)))
}

/// Jackson's `findValue`: whether `name` is a field anywhere inside `node`.
fn has_field(node: &Value, name: &str) -> bool {
    match node {
        Value::Object(m) => m.contains_key(name) || m.values().any(|v| has_field(v, name)),
        Value::Array(a) => a.iter().any(|v| has_field(v, name)),
        _ => false,
    }
}

/// The images of an array field (`data` or `old`); `None` when it is missing or null.
fn images<'a>(
    root: &'a Value,
    name: &str,
    fields: &[String],
) -> EventResult<Option<Vec<Option<Vec<&'a Value>>>>> {
    match root.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => Ok(None),
                v => image_values(v, fields, name).map(Some),
            })
            .collect::<EventResult<Vec<_>>>()
            .map(Some),
        Some(_) => Err(format!("'{name}' is not a JSON array")),
    }
}

/// The rows of one event, as Flink's Canal format reads them: events of databases and tables
/// the filters exclude and DDL events (`CREATE`) hold none; `INSERT` / `DELETE` insert / delete
/// every `data` row; `UPDATE` retracts the old image of each `data` row (its `old` entry, where
/// a field absent from `old` did not change) and adds the new one.
pub(super) fn changes<'a>(
    options: &CanalOptions,
    root: &'a Value,
    fields: &[String],
) -> EventResult<Changes<'a>> {
    if !root.is_object() {
        return Err("the event is not a JSON object".to_string());
    }
    if !included(root, "database", options.database.as_ref())?
        || !included(root, "table", options.table.as_ref())?
    {
        return Ok(Vec::new());
    }
    let data = images(root, "data", fields)?;
    let old = images(root, "old", fields)?;
    let kind = match root.get("type") {
        None | Some(Value::Null) => return Err("the event has no 'type'".to_string()),
        Some(v) => as_text(v),
    };
    let rows = |data: Option<Vec<Option<Vec<&'a Value>>>>| -> EventResult<Vec<Vec<&'a Value>>> {
        data.ok_or("the event has no 'data'")?
            .into_iter()
            .map(|row| row.ok_or_else(|| "a 'data' row is null".to_string()))
            .collect()
    };
    let every =
        |rows: Vec<Vec<&'a Value>>, kind: RowKind| rows.into_iter().map(|r| (kind, r)).collect();
    Ok(match kind.as_str() {
        "INSERT" => every(rows(data)?, RowKind::Insert),
        "DELETE" => every(rows(data)?, RowKind::Delete),
        "UPDATE" => {
            let after = rows(data)?;
            let old_root = root.get("old").unwrap_or(&Value::Null);
            let old = old.ok_or("the UPDATE event has no 'old'")?;
            let mut out = Vec::with_capacity(after.len() * 2);
            for (i, after) in after.into_iter().enumerate() {
                let before = old
                    .get(i)
                    .ok_or_else(|| format!("the UPDATE event has no 'old' entry {i}"))?
                    .clone()
                    .ok_or_else(|| format!("'old' entry {i} is null"))?;
                let before = before
                    .into_iter()
                    .zip(&after)
                    .zip(fields)
                    .map(|((b, a), name)| {
                        if b.is_null() && !has_field(old_root, name) {
                            *a
                        } else {
                            b
                        }
                    })
                    .collect();
                out.push((RowKind::UpdateBefore, before));
                out.push((RowKind::UpdateAfter, after));
            }
            out
        }
        // A DDL change: no rows.
        "CREATE" => Vec::new(),
        other => return Err(format!("Unknown \"type\" value \"{other}\".")),
    })
}

/// Writes a row as Flink's Canal serializer does: `+I`/`+U` as an `INSERT`, `-U`/`-D` as a
/// `DELETE`, each of one `data` row.
pub(super) fn write_event(kind: RowKind, image: &str, out: &mut String) {
    out.push_str("{\"data\":[");
    out.push_str(image);
    out.push_str("],\"type\":\"");
    out.push_str(if kind.is_addition() {
        "INSERT"
    } else {
        "DELETE"
    });
    out.push_str("\"}");
}
