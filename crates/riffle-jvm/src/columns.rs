//! Arrow arrays ↔ the bridge's column encoding (`Object[] { boolean[] nulls, payload... }`,
//! documented in `java/bridge/riffle/jvm/Columns.java`): one JNI array per buffer.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, PrimitiveArray,
    StringArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, TimeUnit};
use jni::objects::{JBooleanArray, JByteArray, JIntArray, JLongArray, JObject, JObjectArray};
use jni::JNIEnv;

type JniResult<T> = jni::errors::Result<T>;

/// Why a column cannot cross (its type).
pub(crate) fn unsupported(t: &DataType) -> String {
    format!("values of Arrow type {t} cannot be passed to or from Java functions")
}

/// Whether [`to_java`] and [`from_java`] handle arrays of type `t`.
pub(crate) fn supported(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Decimal128(_, _)
            | DataType::Utf8
            | DataType::Binary
            | DataType::Timestamp(_, _)
    )
}

/// Encodes `array` (of a [`supported`] type) as a bridge column.
pub(crate) fn to_java<'l>(env: &mut JNIEnv<'l>, array: &dyn Array) -> JniResult<JObject<'l>> {
    let n = array.len();
    let nulls: JObject = match array.nulls().filter(|b| b.null_count() > 0) {
        Some(b) => {
            let flags: Vec<u8> = (0..n).map(|i| u8::from(b.is_null(i))).collect();
            let arr = env.new_boolean_array(n as i32)?;
            env.set_boolean_array_region(&arr, 0, &flags)?;
            arr.into()
        }
        None => JObject::null(),
    };
    let mut parts: Vec<JObject> = vec![nulls];
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            let v: Vec<u8> = (0..n).map(|i| u8::from(a.value(i))).collect();
            let arr = env.new_boolean_array(n as i32)?;
            env.set_boolean_array_region(&arr, 0, &v)?;
            parts.push(arr.into());
        }
        DataType::Int8 => {
            let arr = env.new_byte_array(n as i32)?;
            env.set_byte_array_region(
                &arr,
                0,
                array.as_primitive::<arrow::datatypes::Int8Type>().values(),
            )?;
            parts.push(arr.into());
        }
        DataType::Int16 => {
            let arr = env.new_short_array(n as i32)?;
            env.set_short_array_region(
                &arr,
                0,
                array.as_primitive::<arrow::datatypes::Int16Type>().values(),
            )?;
            parts.push(arr.into());
        }
        DataType::Int32 => parts.push(int_array(
            env,
            array.as_primitive::<arrow::datatypes::Int32Type>().values(),
        )?),
        DataType::Date32 => parts.push(int_array(
            env,
            array
                .as_primitive::<arrow::datatypes::Date32Type>()
                .values(),
        )?),
        DataType::Int64 => parts.push(long_array(
            env,
            array.as_primitive::<arrow::datatypes::Int64Type>().values(),
        )?),
        DataType::Float32 => {
            let arr = env.new_float_array(n as i32)?;
            env.set_float_array_region(
                &arr,
                0,
                array
                    .as_primitive::<arrow::datatypes::Float32Type>()
                    .values(),
            )?;
            parts.push(arr.into());
        }
        DataType::Float64 => {
            let arr = env.new_double_array(n as i32)?;
            env.set_double_array_region(
                &arr,
                0,
                array
                    .as_primitive::<arrow::datatypes::Float64Type>()
                    .values(),
            )?;
            parts.push(arr.into());
        }
        DataType::Decimal128(_, _) => {
            let values = array
                .as_primitive::<arrow::datatypes::Decimal128Type>()
                .values();
            let bytes: Vec<i8> = values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .map(|b| b as i8)
                .collect();
            parts.push(byte_array(env, &bytes)?);
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            parts.extend(bytes_and_offsets(env, a.value_offsets(), a.value_data())?);
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            parts.extend(bytes_and_offsets(env, a.value_offsets(), a.value_data())?);
        }
        DataType::Timestamp(unit, _) => {
            let (per_second, raw): (i64, &[i64]) = match unit {
                TimeUnit::Second => (
                    1,
                    array
                        .as_primitive::<arrow::datatypes::TimestampSecondType>()
                        .values(),
                ),
                TimeUnit::Millisecond => (
                    1_000,
                    array
                        .as_primitive::<arrow::datatypes::TimestampMillisecondType>()
                        .values(),
                ),
                TimeUnit::Microsecond => (
                    1_000_000,
                    array
                        .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                        .values(),
                ),
                TimeUnit::Nanosecond => (
                    1_000_000_000,
                    array
                        .as_primitive::<arrow::datatypes::TimestampNanosecondType>()
                        .values(),
                ),
            };
            let secs: Vec<i64> = raw.iter().map(|v| v.div_euclid(per_second)).collect();
            let nanos: Vec<i32> = raw
                .iter()
                .map(|v| (v.rem_euclid(per_second) * (1_000_000_000 / per_second)) as i32)
                .collect();
            parts.push(long_array(env, &secs)?);
            parts.push(int_array(env, &nanos)?);
        }
        _ => {
            return Err(jni::errors::Error::WrongJValueType(
                "supported Arrow type",
                "another Arrow type",
            ))
        }
    }
    let out = env.new_object_array(parts.len() as i32, "java/lang/Object", JObject::null())?;
    for (i, part) in parts.into_iter().enumerate() {
        env.set_object_array_element(&out, i as i32, part)?;
    }
    Ok(out.into())
}

fn int_array<'l>(env: &mut JNIEnv<'l>, values: &[i32]) -> JniResult<JObject<'l>> {
    let arr = env.new_int_array(values.len() as i32)?;
    env.set_int_array_region(&arr, 0, values)?;
    Ok(arr.into())
}

fn long_array<'l>(env: &mut JNIEnv<'l>, values: &[i64]) -> JniResult<JObject<'l>> {
    let arr = env.new_long_array(values.len() as i32)?;
    env.set_long_array_region(&arr, 0, values)?;
    Ok(arr.into())
}

fn byte_array<'l>(env: &mut JNIEnv<'l>, values: &[i8]) -> JniResult<JObject<'l>> {
    let arr = env.new_byte_array(values.len() as i32)?;
    env.set_byte_array_region(&arr, 0, values)?;
    Ok(arr.into())
}

/// The value bytes of a (possibly sliced) variable-length array and its offsets rebased to 0.
fn bytes_and_offsets<'l>(
    env: &mut JNIEnv<'l>,
    offsets: &[i32],
    data: &[u8],
) -> JniResult<[JObject<'l>; 2]> {
    let first = offsets.first().copied().unwrap_or(0);
    let last = offsets.last().copied().unwrap_or(0);
    let slice = &data[first as usize..last as usize];
    // SAFETY-free reinterpretation: u8 and i8 have the same size; copy to the signed form JNI wants.
    let signed: Vec<i8> = slice.iter().map(|&b| b as i8).collect();
    let rebased: Vec<i32> = offsets.iter().map(|o| o - first).collect();
    Ok([byte_array(env, &signed)?, int_array(env, &rebased)?])
}

/// Decodes a bridge column of `rows` values into an Arrow array of type `t`.
pub(crate) fn from_java(
    env: &mut JNIEnv<'_>,
    column: &JObject<'_>,
    t: &DataType,
    rows: usize,
) -> JniResult<ArrayRef> {
    let column: &JObjectArray = column.into();
    let nulls_obj = env.get_object_array_element(column, 0)?;
    let nulls = if nulls_obj.is_null() {
        None
    } else {
        let flags = read_booleans(env, &JBooleanArray::from(nulls_obj), rows)?;
        Some(NullBuffer::from(
            flags.iter().map(|&f| !f).collect::<Vec<bool>>(),
        ))
    };
    let parts = env.get_array_length(column)?;
    let p1 = env.get_object_array_element(column, 1)?;
    let p2 = if parts > 2 {
        env.get_object_array_element(column, 2)?
    } else {
        JObject::null()
    };
    Ok(match t {
        DataType::Boolean => {
            let values = read_booleans(env, &p1.into(), rows)?;
            Arc::new(BooleanArray::new(values.into_iter().collect(), nulls))
        }
        DataType::Int8 => {
            let mut v = vec![0i8; rows];
            env.get_byte_array_region(JByteArray::from(p1), 0, &mut v)?;
            Arc::new(Int8Array::new(v.into(), nulls))
        }
        DataType::Int16 => {
            let mut v = vec![0i16; rows];
            env.get_short_array_region(jni::objects::JShortArray::from(p1), 0, &mut v)?;
            Arc::new(Int16Array::new(v.into(), nulls))
        }
        DataType::Int32 => Arc::new(Int32Array::new(
            read_ints(env, &p1.into(), rows)?.into(),
            nulls,
        )),
        DataType::Date32 => Arc::new(Date32Array::new(
            read_ints(env, &p1.into(), rows)?.into(),
            nulls,
        )),
        DataType::Int64 => Arc::new(Int64Array::new(
            read_longs(env, &p1.into(), rows)?.into(),
            nulls,
        )),
        DataType::Float32 => {
            let mut v = vec![0f32; rows];
            env.get_float_array_region(jni::objects::JFloatArray::from(p1), 0, &mut v)?;
            Arc::new(Float32Array::new(v.into(), nulls))
        }
        DataType::Float64 => {
            let mut v = vec![0f64; rows];
            env.get_double_array_region(jni::objects::JDoubleArray::from(p1), 0, &mut v)?;
            Arc::new(Float64Array::new(v.into(), nulls))
        }
        DataType::Decimal128(p, s) => {
            let mut bytes = vec![0i8; rows * 16];
            env.get_byte_array_region(JByteArray::from(p1), 0, &mut bytes)?;
            let values: Vec<i128> = bytes
                .chunks_exact(16)
                .map(|c| {
                    let mut le = [0u8; 16];
                    for (d, s) in le.iter_mut().zip(c) {
                        *d = *s as u8;
                    }
                    i128::from_le_bytes(le)
                })
                .collect();
            Arc::new(
                Decimal128Array::new(values.into(), nulls)
                    .with_precision_and_scale(*p, *s)
                    .map_err(|_| jni::errors::Error::WrongJValueType("decimal", "precision"))?,
            )
        }
        DataType::Utf8 | DataType::Binary => {
            let data_obj = JByteArray::from(p1);
            let len = env.get_array_length(&data_obj)? as usize;
            let mut data = vec![0i8; len];
            env.get_byte_array_region(&data_obj, 0, &mut data)?;
            let data: Vec<u8> = data.into_iter().map(|b| b as u8).collect();
            let offsets = read_ints(env, &p2.into(), rows + 1)?;
            let offsets = OffsetBuffer::new(offsets.into());
            if matches!(t, DataType::Utf8) {
                Arc::new(
                    StringArray::try_new(offsets, data.into(), nulls)
                        .map_err(|_| jni::errors::Error::WrongJValueType("UTF-8", "bytes"))?,
                )
            } else {
                Arc::new(BinaryArray::new(offsets, data.into(), nulls))
            }
        }
        DataType::Timestamp(unit, tz) => {
            let secs = read_longs(env, &p1.into(), rows)?;
            let nanos = read_ints(env, &p2.into(), rows)?;
            let per_second: i64 = match unit {
                TimeUnit::Second => 1,
                TimeUnit::Millisecond => 1_000,
                TimeUnit::Microsecond => 1_000_000,
                TimeUnit::Nanosecond => 1_000_000_000,
            };
            let values: Vec<i64> = secs
                .iter()
                .zip(&nanos)
                .map(|(s, n)| {
                    s.saturating_mul(per_second)
                        .saturating_add(i64::from(*n) / (1_000_000_000 / per_second))
                })
                .collect();
            match unit {
                TimeUnit::Second => {
                    timestamp::<arrow::datatypes::TimestampSecondType>(values, nulls, tz)
                }
                TimeUnit::Millisecond => {
                    timestamp::<arrow::datatypes::TimestampMillisecondType>(values, nulls, tz)
                }
                TimeUnit::Microsecond => {
                    timestamp::<arrow::datatypes::TimestampMicrosecondType>(values, nulls, tz)
                }
                TimeUnit::Nanosecond => {
                    timestamp::<arrow::datatypes::TimestampNanosecondType>(values, nulls, tz)
                }
            }
        }
        _ => {
            return Err(jni::errors::Error::WrongJValueType(
                "supported Arrow type",
                "another Arrow type",
            ))
        }
    })
}

fn timestamp<T: arrow::datatypes::ArrowTimestampType>(
    values: Vec<i64>,
    nulls: Option<NullBuffer>,
    tz: &Option<Arc<str>>,
) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(values.into(), nulls).with_timezone_opt(tz.clone()))
}

fn read_booleans(
    env: &mut JNIEnv<'_>,
    arr: &JBooleanArray<'_>,
    rows: usize,
) -> JniResult<Vec<bool>> {
    let mut v = vec![0u8; rows];
    env.get_boolean_array_region(arr, 0, &mut v)?;
    Ok(v.into_iter().map(|b| b != 0).collect())
}

pub(crate) fn read_ints(
    env: &mut JNIEnv<'_>,
    arr: &JIntArray<'_>,
    rows: usize,
) -> JniResult<Vec<i32>> {
    let mut v = vec![0i32; rows];
    env.get_int_array_region(arr, 0, &mut v)?;
    Ok(v)
}

fn read_longs(env: &mut JNIEnv<'_>, arr: &JLongArray<'_>, rows: usize) -> JniResult<Vec<i64>> {
    let mut v = vec![0i64; rows];
    env.get_long_array_region(arr, 0, &mut v)?;
    Ok(v)
}
