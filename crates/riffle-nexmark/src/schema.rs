//! The Arrow schema of Flink's Nexmark table: `event_type INT` and one nullable ROW per event
//! kind (`person`, `auction`, `bid`); exactly one ROW is set per event.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

/// `event_type` of a person event.
pub const PERSON: i32 = 0;
/// `event_type` of an auction event.
pub const AUCTION: i32 = 1;
/// `event_type` of a bid event.
pub const BID: i32 = 2;

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, None)
}

fn fields(columns: &[(&str, DataType)]) -> Fields {
    columns
        .iter()
        .map(|(name, data_type)| Field::new(*name, data_type.clone(), true))
        .collect()
}

/// Fields of the `person` ROW.
pub fn person_fields() -> Fields {
    fields(&[
        ("id", DataType::Int64),
        ("name", DataType::Utf8),
        ("emailAddress", DataType::Utf8),
        ("creditCard", DataType::Utf8),
        ("city", DataType::Utf8),
        ("state", DataType::Utf8),
        ("dateTime", timestamp()),
        ("extra", DataType::Utf8),
    ])
}

/// Fields of the `auction` ROW.
pub fn auction_fields() -> Fields {
    fields(&[
        ("id", DataType::Int64),
        ("itemName", DataType::Utf8),
        ("description", DataType::Utf8),
        ("initialBid", DataType::Int64),
        ("reserve", DataType::Int64),
        ("dateTime", timestamp()),
        ("expires", timestamp()),
        ("seller", DataType::Int64),
        ("category", DataType::Int64),
        ("extra", DataType::Utf8),
    ])
}

/// Fields of the `bid` ROW.
pub fn bid_fields() -> Fields {
    fields(&[
        ("auction", DataType::Int64),
        ("bidder", DataType::Int64),
        ("price", DataType::Int64),
        ("channel", DataType::Utf8),
        ("url", DataType::Utf8),
        ("dateTime", timestamp()),
        ("extra", DataType::Utf8),
    ])
}

/// The table's physical columns, as Flink's Nexmark connector declares them.
pub fn nexmark_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("event_type", DataType::Int32, true),
                Field::new("person", DataType::Struct(person_fields()), true),
                Field::new("auction", DataType::Struct(auction_fields()), true),
                Field::new("bid", DataType::Struct(bid_fields()), true),
            ]))
        })
        .clone()
}

/// Why `schema` cannot hold Nexmark events (column names and types must match; names compare
/// case-insensitively as Flink resolves them), or `None` when it can.
pub fn schema_mismatch(schema: &Schema) -> Option<String> {
    let expected = nexmark_schema();
    if schema.fields().len() != expected.fields().len() {
        return Some(format!(
            "the table has {} physical columns, the Nexmark table has {} (event_type, person, auction, bid)",
            schema.fields().len(),
            expected.fields().len()
        ));
    }
    for (actual, wanted) in schema.fields().iter().zip(expected.fields().iter()) {
        if !actual.name().eq_ignore_ascii_case(wanted.name())
            || !same_type(actual.data_type(), wanted.data_type())
        {
            return Some(format!(
                "column `{}` {} where the Nexmark table has `{}` {}",
                actual.name(),
                actual.data_type(),
                wanted.name(),
                wanted.data_type()
            ));
        }
    }
    None
}

/// Type equality ignoring nullability, with ROW field names compared case-insensitively.
fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Struct(fa), DataType::Struct(fb)) => {
            fa.len() == fb.len()
                && fa.iter().zip(fb.iter()).all(|(x, y)| {
                    x.name().eq_ignore_ascii_case(y.name())
                        && same_type(x.data_type(), y.data_type())
                })
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nexmark_schema_matches_itself_and_not_others() {
        assert_eq!(schema_mismatch(&nexmark_schema()), None);
        let other = Schema::new(vec![Field::new("event_type", DataType::Int32, true)]);
        assert!(schema_mismatch(&other)
            .unwrap()
            .contains("1 physical columns"));
        let mut fields: Vec<Field> = nexmark_schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[0] = Field::new("event_type", DataType::Int64, false);
        let msg = schema_mismatch(&Schema::new(fields)).unwrap();
        assert!(msg.contains("event_type"), "{msg}");
    }
}
