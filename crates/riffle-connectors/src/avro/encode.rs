//! Writing rows as Avro binary datums, as Flink's `RowDataToAvroConverters` and Avro's
//! `GenericDatumWriter` write them: record fields by position, a NULL as the `null` branch of
//! a nullable union, DECIMAL as the unscaled value's minimal two's-complement bytes
//! (`BigInteger.toByteArray`), TIMESTAMP in the unit of the schema's logical type, MAP entries
//! in the order of the `HashMap` Flink builds.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Time32MillisecondType, Time32SecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};

use super::schema::{write_long, Logical, Record, Schema};

/// Appends row `row` of `columns` as a datum of `record` (fields by position).
pub fn encode_row(
    record: &Record,
    columns: &[&dyn Array],
    row: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if record.fields.len() != columns.len() {
        return Err(format!(
            "the Avro record '{}' has {} fields but the table writes {} columns",
            record.name,
            record.fields.len(),
            columns.len()
        ));
    }
    for ((name, schema), column) in record.fields.iter().zip(columns) {
        encode(schema, *column, row, out)
            .map_err(|e| format!("Fail to serialize at field: {name}: {e}"))?;
    }
    Ok(())
}

/// Appends value `row` of `array` as a datum of `schema`.
pub fn encode(
    schema: &Schema,
    array: &dyn Array,
    row: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if let Schema::Union(branches) = schema {
        let null_branch = branches.iter().position(|b| *b == Schema::Null);
        let value_branch = branches.iter().position(|b| *b != Schema::Null);
        if branches.len() > 2 || (branches.len() == 2 && null_branch.is_none()) {
            return Err(format!(
                "the Avro schema is not a nullable type: a union of {} branches",
                branches.len()
            ));
        }
        let branch = if array.is_null(row) {
            null_branch.ok_or("NULL value for a union without a null branch")?
        } else {
            value_branch.ok_or("a value for the union ['null']")?
        };
        write_long(out, branch as i64);
        return encode(&branches[branch], array, row, out);
    }
    if array.is_null(row) {
        return match schema {
            Schema::Null => Ok(()),
            _ => Err("NULL value for a non-nullable Avro type".into()),
        };
    }
    let mismatch = || {
        format!(
            "a value of Arrow type {} cannot be written as {schema:?}",
            array.data_type()
        )
    };
    match (schema, array.data_type()) {
        (Schema::Null, _) => {}
        (Schema::Boolean, DataType::Boolean) => out.push(u8::from(array.as_boolean().value(row))),
        (Schema::Int(_), DataType::Int8) => {
            write_long(out, array.as_primitive::<Int8Type>().value(row).into())
        }
        (Schema::Int(_), DataType::Int16) => {
            write_long(out, array.as_primitive::<Int16Type>().value(row).into())
        }
        (Schema::Int(_), DataType::Int32) => {
            write_long(out, array.as_primitive::<Int32Type>().value(row).into())
        }
        (Schema::Int(_), DataType::Date32) => {
            write_long(out, array.as_primitive::<Date32Type>().value(row).into())
        }
        (Schema::Int(_), DataType::Time32(TimeUnit::Millisecond)) => write_long(
            out,
            array
                .as_primitive::<Time32MillisecondType>()
                .value(row)
                .into(),
        ),
        (Schema::Int(_), DataType::Time32(TimeUnit::Second)) => write_long(
            out,
            i64::from(array.as_primitive::<Time32SecondType>().value(row)) * 1000,
        ),
        (Schema::Long(_), DataType::Int64) => {
            write_long(out, array.as_primitive::<Int64Type>().value(row))
        }
        (Schema::Long(logical), DataType::Timestamp(unit, _)) => {
            let nanos = timestamp_nanos(array, *unit, row);
            let value = match logical {
                Some(Logical::TimestampMicros) => nanos.div_euclid(1_000),
                Some(Logical::TimestampNanos) => nanos,
                // `timestamp-millis`, or a plain long: epoch milliseconds as Flink writes them.
                _ => nanos.div_euclid(1_000_000),
            };
            write_long(out, value as i64);
        }
        (Schema::Float, DataType::Float32) => {
            out.extend_from_slice(&array.as_primitive::<Float32Type>().value(row).to_le_bytes())
        }
        (Schema::Double, DataType::Float64) => {
            out.extend_from_slice(&array.as_primitive::<Float64Type>().value(row).to_le_bytes())
        }
        (Schema::Double, DataType::Float32) => out.extend_from_slice(
            &f64::from(array.as_primitive::<Float32Type>().value(row)).to_le_bytes(),
        ),
        (Schema::Bytes(_), DataType::Decimal128(..)) => {
            let bytes = unscaled_bytes(array.as_primitive::<Decimal128Type>().value(row));
            write_bytes(out, &bytes);
        }
        (Schema::Bytes(_), DataType::Binary) => {
            write_bytes(out, array.as_binary::<i32>().value(row))
        }
        (Schema::Bytes(_), DataType::LargeBinary) => {
            write_bytes(out, array.as_binary::<i64>().value(row))
        }
        (Schema::String | Schema::Enum(_), _) => {
            let text = string_value(array, row).ok_or_else(mismatch)?;
            match schema {
                Schema::Enum(symbols) => {
                    let i = symbols.iter().position(|s| s == text).ok_or_else(|| {
                        format!("'{text}' is not a symbol of the enum {symbols:?}")
                    })?;
                    write_long(out, i as i64);
                }
                _ => write_bytes(out, text.as_bytes()),
            }
        }
        (Schema::Record(record), DataType::Struct(_)) => {
            let row_array = array.as_struct();
            let columns: Vec<&dyn Array> = row_array.columns().iter().map(|c| c.as_ref()).collect();
            encode_row(record, &columns, row, out)?;
        }
        (Schema::Array(items), DataType::List(_)) => {
            let values = array.as_list::<i32>().value(row);
            write_long(out, values.len() as i64);
            for i in 0..values.len() {
                encode(items, values.as_ref(), i, out)?;
            }
            if !values.is_empty() {
                write_long(out, 0);
            }
        }
        (Schema::Map(values_schema), DataType::Map(..)) => {
            let entries = array.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let mut texts = Vec::with_capacity(entries.len());
            for i in 0..entries.len() {
                texts.push(string_value(keys.as_ref(), i).ok_or("a NULL or non-string map key")?);
            }
            let order = java_map_order(&texts);
            write_long(out, order.len() as i64);
            for &i in &order {
                write_bytes(out, texts[i].as_bytes());
                encode(values_schema, values.as_ref(), i, out)?;
            }
            if !order.is_empty() {
                write_long(out, 0);
            }
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// The order Flink's `HashMap` (sized for the entries) iterates `keys` in; later duplicates of
/// a key replace the earlier value at its place.
fn java_map_order(keys: &[&str]) -> Vec<usize> {
    use riffle_plan::java_hash::{hash_map_order, string_hash};
    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut firsts = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if last.insert(k, i).is_none() {
            firsts.push(i);
        }
    }
    let hashes: Vec<Option<i32>> = firsts.iter().map(|i| Some(string_hash(keys[*i]))).collect();
    // CollectionUtil.newHashMapWithExpectedSize: capacity ceil(n / 0.75).
    let capacity = (keys.len() * 4).div_ceil(3);
    hash_map_order(&hashes, capacity)
        .unwrap_or_else(|| (0..firsts.len()).collect())
        .into_iter()
        .map(|i| last[&keys[firsts[i]]])
        .collect()
}

fn string_value(array: &dyn Array, row: usize) -> Option<&str> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(row),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row),
        DataType::Utf8View => array.as_string_view().value(row),
        _ => return None,
    })
}

fn timestamp_nanos(array: &dyn Array, unit: TimeUnit, row: usize) -> i128 {
    let (v, per): (i64, i128) = match unit {
        TimeUnit::Second => (
            array.as_primitive::<TimestampSecondType>().value(row),
            1_000_000_000,
        ),
        TimeUnit::Millisecond => (
            array.as_primitive::<TimestampMillisecondType>().value(row),
            1_000_000,
        ),
        TimeUnit::Microsecond => (
            array.as_primitive::<TimestampMicrosecondType>().value(row),
            1_000,
        ),
        TimeUnit::Nanosecond => (
            array.as_primitive::<TimestampNanosecondType>().value(row),
            1,
        ),
    };
    i128::from(v) * per
}

fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_long(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

/// `BigInteger.toByteArray()`: the shortest big-endian two's-complement form (one byte for 0).
pub fn unscaled_bytes(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_use_the_shortest_twos_complement() {
        assert_eq!(unscaled_bytes(0), vec![0]);
        assert_eq!(unscaled_bytes(127), vec![0x7f]);
        assert_eq!(unscaled_bytes(128), vec![0x00, 0x80]);
        assert_eq!(unscaled_bytes(-1), vec![0xff]);
        assert_eq!(unscaled_bytes(-128), vec![0x80]);
        assert_eq!(unscaled_bytes(-129), vec![0xff, 0x7f]);
        assert_eq!(unscaled_bytes(1234), vec![0x04, 0xd2]);
    }

    #[test]
    fn map_entries_follow_java_hash_map_order() {
        // "b" (98) and "a" (97) land in buckets 2 and 1 of a 4-slot table.
        assert_eq!(java_map_order(&["b", "a"]), vec![1, 0]);
        // A repeated key keeps its first place and its last value.
        assert_eq!(java_map_order(&["a", "a"]), vec![1]);
    }
}
