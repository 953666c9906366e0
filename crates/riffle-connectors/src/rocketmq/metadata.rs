//! Metadata columns of rocketmq tables (`col TYPE METADATA FROM 'queue-offset'`).
//!
//! The keys and their types are data (`[[metadata]]` in `dialects/connectors/rocketmq.toml`);
//! this module builds their values from stored messages and casts them to the declared type.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Builder, Int64Builder, MapBuilder, MapFieldNames, StringBuilder,
    TimestampMillisecondBuilder,
};
use arrow::datatypes::{DataType, Field};
use riffle_plan::{ConnectorSpec, MetadataColumn};
use riffle_store::StoredMessage;

use super::options::CONNECTOR;
use crate::{ConnectorError, Result};

/// One metadata value of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Topic,
    QueueId,
    QueueOffset,
    Tag,
    Keys,
    BornTimestamp,
    StoreTimestamp,
    Properties,
}

impl Key {
    fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "topic" => Key::Topic,
            "queue-id" => Key::QueueId,
            "queue-offset" => Key::QueueOffset,
            "tag" => Key::Tag,
            "keys" => Key::Keys,
            "born-timestamp" => Key::BornTimestamp,
            "store-timestamp" => Key::StoreTimestamp,
            "properties" => Key::Properties,
            _ => return None,
        })
    }
}

/// Checks the metadata keys of `spec` against the connector's data; returns them in order.
pub fn check_keys(spec: &ConnectorSpec) -> Result<Vec<&MetadataColumn>> {
    crate::check_metadata_keys(spec, CONNECTOR, |key| Key::parse(key).is_some())
}

/// Builds one metadata column over a batch of messages.
pub struct MetadataBuilder {
    key: Key,
    column: String,
    target: DataType,
    values: Values,
}

enum Values {
    Text(StringBuilder),
    Int(Int32Builder),
    Long(Int64Builder),
    Time(TimestampMillisecondBuilder),
    Map(Box<MapBuilder<StringBuilder, StringBuilder>>),
}

impl MetadataBuilder {
    /// A builder for `column` (declared as `target`) reading metadata `key`.
    pub fn new(column: &MetadataColumn, target: DataType) -> Result<Self> {
        let key = Key::parse(&column.key).ok_or_else(|| {
            ConnectorError::new(format!("unknown rocketmq metadata key '{}'", column.key))
        })?;
        let values = match key {
            Key::Topic | Key::Tag | Key::Keys => Values::Text(StringBuilder::new()),
            Key::QueueId => Values::Int(Int32Builder::new()),
            Key::QueueOffset => Values::Long(Int64Builder::new()),
            Key::BornTimestamp | Key::StoreTimestamp => {
                Values::Time(TimestampMillisecondBuilder::new())
            }
            Key::Properties => {
                let names = match &target {
                    DataType::Map(entries, _) => match entries.data_type() {
                        DataType::Struct(fields) if fields.len() == 2 => Some(MapFieldNames {
                            entry: entries.name().clone(),
                            key: fields[0].name().clone(),
                            value: fields[1].name().clone(),
                        }),
                        _ => None,
                    },
                    _ => None,
                };
                let mut builder =
                    MapBuilder::new(names, StringBuilder::new(), StringBuilder::new());
                if let DataType::Map(entries, _) = &target {
                    if let DataType::Struct(fields) = entries.data_type() {
                        if let Some(value) = fields.get(1) {
                            builder = builder.with_values_field(Arc::new(Field::new(
                                value.name(),
                                DataType::Utf8,
                                value.is_nullable(),
                            )));
                        }
                    }
                }
                Values::Map(Box::new(builder))
            }
        };
        Ok(Self {
            key,
            column: column.column.clone(),
            target,
            values,
        })
    }

    /// Appends the value of `message` read from `topic`.
    pub fn append(&mut self, topic: &str, message: &StoredMessage) -> Result<()> {
        match (&mut self.values, self.key) {
            (Values::Text(b), Key::Topic) => b.append_value(topic),
            (Values::Text(b), Key::Tag) => b.append_option(message.message.tag.as_deref()),
            (Values::Text(b), Key::Keys) => {
                if message.message.keys.is_empty() {
                    b.append_null()
                } else {
                    // RocketMQ's KEYS property separates keys with a space.
                    b.append_value(message.message.keys.join(" "))
                }
            }
            (Values::Int(b), _) => b.append_value(message.queue as i32),
            (Values::Long(b), _) => b.append_value(message.offset as i64),
            (Values::Time(b), Key::BornTimestamp) => b.append_value(message.message.born_timestamp),
            (Values::Time(b), _) => b.append_value(message.store_timestamp),
            (Values::Map(b), _) => {
                for (k, v) in &message.message.properties {
                    b.keys().append_value(k);
                    b.values().append_value(v);
                }
                b.append(true)?;
            }
            (Values::Text(_), _) => {
                return Err(ConnectorError::new("metadata builder of the wrong kind"))
            }
        }
        Ok(())
    }

    /// The column built so far, cast to the declared type.
    pub fn finish(&mut self) -> Result<ArrayRef> {
        let array: ArrayRef = match &mut self.values {
            Values::Text(b) => Arc::new(b.finish()),
            Values::Int(b) => Arc::new(b.finish()),
            Values::Long(b) => Arc::new(b.finish()),
            Values::Time(b) => Arc::new(b.finish().with_timezone("UTC")),
            Values::Map(b) => Arc::new(b.finish()),
        };
        if array.data_type() == &self.target {
            return Ok(array);
        }
        arrow::compute::cast(&array, &self.target).map_err(|e| {
            ConnectorError::new(format!(
                "metadata column '{}' cannot be read as {}: {e}",
                self.column, self.target
            ))
        })
    }
}
