//! Flink's collection functions over ARRAY and MAP values: element access, `CARDINALITY`,
//! `ELEMENT`, the `ARRAY_*` functions, `MAP_*`, `STR_TO_MAP` and the `MAP[...]` constructor, with
//! Flink's NULL rules (a NULL collection gives NULL; NULL elements are values like any other).

pub(crate) mod syntax;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, MapArray, StructArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::type_coercion::binary::type_union_resolution;

use super::row::{text, Arg, RowFunction};

/// The collection functions, under Flink's names (the syntax rewrite calls `item` and `map_constructor`).
pub(super) fn row_functions() -> Vec<RowFunction> {
    use Arg::{Any, Str};
    let same = |t: &[DataType]| t.first().cloned().unwrap_or(DataType::Null);
    let elem = |t: &[DataType]| element_type(t.first().unwrap_or(&DataType::Null));
    vec![
        RowFunction::new("cardinality", &[&[Any]], DataType::Int32, |v| {
            Ok(ScalarValue::Int32(Some(len(&v[0])? as i32)))
        }),
        RowFunction::new("element", &[&[Any]], DataType::Null, |v| {
            let Some(items) = items(&v[0])? else {
                return null_of_element(&v[0]);
            };
            match items.as_slice() {
                [] => null_of_element(&v[0]),
                [one] => Ok(one.clone()),
                _ => exec_err!("Array has more than one element."),
            }
        })
        .returning(elem)
        .lenient(),
        RowFunction::new("item", &[&[Any, Any]], DataType::Null, item)
            .returning(|t| match t.first() {
                Some(DataType::Map(..)) => map_types(&t[0]).1,
                Some(t) => element_type(t),
                None => DataType::Null,
            })
            .validating(|types, constants| {
                let index = constants.get(1).copied().flatten().and_then(super::row::int);
                match (types.first(), index) {
                    (Some(DataType::Map(..)), _) | (_, None) => Ok(()),
                    (_, Some(i)) if i < 1 => Err(format!(
                        "Array element access needs an index starting at 1 but was {i}."
                    )),
                    _ => Ok(()),
                }
            })
            .lenient(),
        array_fn("array_contains", &[&[Any, Any]], |_| DataType::Boolean, |a, v| {
            let needle = cast_like(&v[1], a)?;
            Ok(ScalarValue::Boolean(Some(items_of(a)?.contains(&needle))))
        }),
        array_fn("array_position", &[&[Any, Any]], |_| DataType::Int32, |a, v| {
            let needle = cast_like(&v[1], a)?;
            let pos = items_of(a)?.iter().position(|x| *x == needle);
            Ok(ScalarValue::Int32(Some(pos.map_or(0, |p| p as i32 + 1))))
        }),
        array_fn("array_distinct", &[&[Any]], same, |a, _| {
            let mut out: Vec<ScalarValue> = Vec::new();
            for x in items_of(a)? {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            list_like(a, out)
        }),
        array_fn("array_remove", &[&[Any, Any]], same, |a, v| {
            let needle = cast_like(&v[1], a)?;
            let out = items_of(a)?.into_iter().filter(|x| *x != needle).collect();
            list_like(a, out)
        }),
        array_fn("array_reverse", &[&[Any]], same, |a, _| {
            let mut out = items_of(a)?;
            out.reverse();
            list_like(a, out)
        }),
        array_fn("array_max", &[&[Any]], elem, |a, _| extreme(a, std::cmp::Ordering::Greater)),
        array_fn("array_min", &[&[Any]], elem, |a, _| extreme(a, std::cmp::Ordering::Less)),
        array_fn("array_append", &[&[Any, Any]], same, |a, v| {
            let mut out = items_of(a)?;
            out.push(cast_like(&v[1], a)?);
            list_like(a, out)
        }),
        array_fn("array_prepend", &[&[Any, Any]], same, |a, v| {
            let mut out = vec![cast_like(&v[1], a)?];
            out.extend(items_of(a)?);
            list_like(a, out)
        }),
        array_fn("array_slice", &[&[Any, Any], &[Any, Any, Any]], same, slice),
        array_fn(
            "array_sort",
            &[&[Any], &[Any, Any], &[Any, Any, Any]],
            same,
            sort,
        ),
        array_fn("array_except", &[&[Any, Any]], same, |a, v| {
            set_operation(a, &v[1], false)
        }),
        array_fn("array_intersect", &[&[Any, Any]], same, |a, v| {
            set_operation(a, &v[1], true)
        }),
        RowFunction::new("map_union", &[&[Any]], DataType::Null, |v| {
            let mut all = Vec::new();
            for m in v {
                match map_entries(m)? {
                    Some(entries) => all.extend(entries),
                    None => return Ok(null_like(&v[0])),
                }
            }
            let (k, val) = map_types(&v[0].data_type());
            let all = all
                .into_iter()
                .map(|(key, value)| Ok((key.cast_to(&k)?, value.cast_to(&val)?)))
                .collect::<DfResult<Vec<_>>>()?;
            // Flink puts every entry into a new java.util.HashMap: its iteration order.
            let entries = hash_map_order(dedup_entries(all), crate::java_hash::DEFAULT_CAPACITY);
            map_value(entries, &k, &val)
        })
        .variadic(Any)
        .returning(same)
        .lenient(),
        RowFunction::new("array_concat", &[&[Any]], DataType::Null, |v| {
            let mut out = Vec::new();
            for a in v {
                match items(a)? {
                    Some(i) => out.extend(i),
                    None => return Ok(null_like(&v[0])),
                }
            }
            list_like(&v[0], out)
        })
        .variadic(Any)
        .returning(same)
        .lenient(),
        RowFunction::new("array_union", &[&[Any, Any]], DataType::Null, |v| {
            let (Some(a), Some(b)) = (items(&v[0])?, items(&v[1])?) else {
                return Ok(null_like(&v[0]));
            };
            let mut out: Vec<ScalarValue> = Vec::new();
            for x in a.into_iter().chain(b) {
                let x = cast_like(&x, &v[0])?;
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            list_like(&v[0], out)
        })
        .returning(same)
        .lenient(),
        RowFunction::new("array_join", &[&[Any, Str], &[Any, Str, Str]], DataType::Utf8, |v| {
            let (Some(items), Some(sep)) = (items(&v[0])?, text(&v[1])) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let replacement = v.get(2).and_then(text);
            let parts: Vec<String> = items
                .iter()
                .filter_map(|x| match (x.is_null(), replacement) {
                    (true, r) => r.map(str::to_string),
                    (false, _) => Some(display(x)),
                })
                .collect();
            Ok(ScalarValue::Utf8(Some(parts.join(sep))))
        })
        .alias("array_to_string")
        .lenient(),
        RowFunction::new("map_keys", &[&[Any]], DataType::Null, |v| {
            let (k, _) = map_types(&v[0].data_type());
            Ok(match map_entries(&v[0])? {
                Some(e) => list(e.into_iter().map(|(k, _)| k).collect(), &k),
                None => null_list(&k),
            })
        })
        .returning(|t| DataType::new_list(map_types(&t[0]).0, true)),
        RowFunction::new("map_values", &[&[Any]], DataType::Null, |v| {
            let (_, val) = map_types(&v[0].data_type());
            Ok(match map_entries(&v[0])? {
                Some(e) => list(e.into_iter().map(|(_, v)| v).collect(), &val),
                None => null_list(&val),
            })
        })
        .returning(|t| DataType::new_list(map_types(&t[0]).1, true)),
        RowFunction::new("map_entries", &[&[Any]], DataType::Null, |v| {
            let (k, val) = map_types(&v[0].data_type());
            let entry = entry_type(&k, &val);
            Ok(match map_entries(&v[0])? {
                Some(e) => {
                    let rows = e
                        .into_iter()
                        .map(|(k, v)| entry_value(&entry, k, v))
                        .collect::<DfResult<Vec<_>>>()?;
                    list(rows, &entry)
                }
                None => null_list(&entry),
            })
        })
        .returning(|t| {
            let (k, v) = map_types(&t[0]);
            DataType::new_list(entry_type(&k, &v), true)
        }),
        RowFunction::new("map_from_arrays", &[&[Any, Any]], DataType::Null, |v| {
            let (Some(keys), Some(values)) = (items(&v[0])?, items(&v[1])?) else {
                return null_map(&element_type(&v[0].data_type()), &element_type(&v[1].data_type()));
            };
            if keys.len() != values.len() {
                return exec_err!(
                    "Invalid function MAP_FROM_ARRAYS call: the key array and the value array have different lengths"
                );
            }
            map_value(
                keys.into_iter().zip(values).collect(),
                &element_type(&v[0].data_type()),
                &element_type(&v[1].data_type()),
            )
        })
        .returning(|t| map_type(&element_type(&t[0]), &element_type(&t[1]))),
        RowFunction::new(
            "str_to_map",
            &[&[Str], &[Str, Str, Str]],
            map_type(&DataType::Utf8, &DataType::Utf8),
            |v| {
                let s = text(&v[0]).unwrap_or_default();
                let (pairs, kv) = match v {
                    [_, p, k] => (text(p).unwrap_or(","), text(k).unwrap_or("=")),
                    _ => (",", "="),
                };
                if s.is_empty() {
                    return map_value(Vec::new(), &DataType::Utf8, &DataType::Utf8);
                }
                let parts = java_split(s, pairs, 0)?;
                let capacity = parts.len();
                let mut entries = Vec::new();
                for part in parts {
                    let mut kv_parts = java_split(&part, kv, 2)?.into_iter();
                    let key = kv_parts.next().unwrap_or_default();
                    let value = kv_parts.next();
                    entries.push((ScalarValue::Utf8(Some(key)), ScalarValue::Utf8(value)));
                }
                // Flink builds a java.util.HashMap sized for the pairs: its iteration order.
                let entries = hash_map_order(dedup_entries(entries), capacity);
                map_value(entries, &DataType::Utf8, &DataType::Utf8)
            },
        ),
        RowFunction::new("map_constructor", &[&[]], DataType::Null, |v| {
            let types: Vec<DataType> = v.iter().map(ScalarValue::data_type).collect();
            let (k, val) = constructor_types(&types);
            let mut entries = Vec::new();
            for pair in v.chunks(2) {
                if let [key, value] = pair {
                    entries.push((key.cast_to(&k)?, value.cast_to(&val)?));
                }
            }
            map_value(entries, &k, &val)
        })
        .variadic(Any)
        .returning(|t| {
            let (k, v) = constructor_types(t);
            map_type(&k, &v)
        })
        .lenient(),
    ]
}

/// A function over an array first argument: NULL when the array is NULL.
fn array_fn(
    name: &'static str,
    overloads: &[&[Arg]],
    returns: impl Fn(&[DataType]) -> DataType + Send + Sync + 'static,
    rule: impl Fn(&ScalarValue, &[ScalarValue]) -> DfResult<ScalarValue> + Send + Sync + 'static,
) -> RowFunction {
    let returns = Arc::new(returns);
    let result = Arc::clone(&returns);
    RowFunction::new(name, overloads, DataType::Null, move |v| {
        if v[0].is_null() {
            let types: Vec<DataType> = v.iter().map(ScalarValue::data_type).collect();
            return ScalarValue::try_from(&result(&types));
        }
        rule(&v[0], v)
    })
    .returning(move |t| returns(t))
    .lenient()
}

/// The elements of an array value (None: NULL).
fn items(v: &ScalarValue) -> DfResult<Option<Vec<ScalarValue>>> {
    let values: ArrayRef = match v {
        ScalarValue::List(a) if !a.is_null(0) => a.value(0),
        ScalarValue::LargeList(a) if !a.is_null(0) => a.value(0),
        ScalarValue::FixedSizeList(a) if !a.is_null(0) => a.value(0),
        ScalarValue::Map(_) => return exec_err!("expected an ARRAY, got a MAP"),
        _ if v.is_null() => return Ok(None),
        other => return exec_err!("expected an ARRAY, got {}", other.data_type()),
    };
    (0..values.len())
        .map(|i| ScalarValue::try_from_array(values.as_ref(), i))
        .collect::<DfResult<Vec<_>>>()
        .map(Some)
}

fn items_of(v: &ScalarValue) -> DfResult<Vec<ScalarValue>> {
    Ok(items(v)?.unwrap_or_default())
}

fn len(v: &ScalarValue) -> DfResult<usize> {
    Ok(match v {
        ScalarValue::Map(m) => m.value(0).len(),
        other => items_of(other)?.len(),
    })
}

/// The element type of an array type.
fn element_type(t: &DataType) -> DataType {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            f.data_type().clone()
        }
        _ => DataType::Null,
    }
}

fn null_of_element(array: &ScalarValue) -> DfResult<ScalarValue> {
    ScalarValue::try_from(&element_type(&array.data_type()))
}

/// `v` converted to the element type of `array` (Flink compares after implicit widening).
fn cast_like(v: &ScalarValue, array: &ScalarValue) -> DfResult<ScalarValue> {
    let t = element_type(&array.data_type());
    if v.data_type() == t || t == DataType::Null {
        Ok(v.clone())
    } else {
        v.cast_to(&t)
    }
}

fn list(items: Vec<ScalarValue>, element: &DataType) -> ScalarValue {
    ScalarValue::List(ScalarValue::new_list_nullable(&items, element))
}

fn null_list(element: &DataType) -> ScalarValue {
    ScalarValue::try_from(&DataType::new_list(element.clone(), true)).unwrap_or(ScalarValue::Null)
}

/// An array of the type of `array` holding `items`.
fn list_like(array: &ScalarValue, items: Vec<ScalarValue>) -> DfResult<ScalarValue> {
    Ok(list(items, &element_type(&array.data_type())))
}

fn null_like(array: &ScalarValue) -> ScalarValue {
    ScalarValue::try_from(&array.data_type()).unwrap_or(ScalarValue::Null)
}

/// `ARRAY_MAX` / `ARRAY_MIN`: NULL elements are skipped; NULL for an empty array.
fn extreme(array: &ScalarValue, want: std::cmp::Ordering) -> DfResult<ScalarValue> {
    let mut best: Option<ScalarValue> = None;
    for x in items_of(array)? {
        if x.is_null() {
            continue;
        }
        best = match best {
            Some(b) if b.partial_cmp(&x).map(std::cmp::Ordering::reverse) != Some(want) => Some(b),
            _ => Some(x),
        };
    }
    match best {
        Some(b) => Ok(b),
        None => null_of_element(array),
    }
}

/// `ARRAY_SLICE(array, start [, end])`: 1-based inclusive positions, negative ones counted
/// from the end, clamped to the array; empty when start is after end.
fn slice(array: &ScalarValue, v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let all = items_of(array)?;
    let n = all.len() as i64;
    let bound = |s: &ScalarValue| super::row::int(s);
    let Some(start) = bound(&v[1]) else {
        return Ok(null_like(array));
    };
    let end = match v.get(2) {
        Some(e) => match bound(e) {
            Some(e) => e,
            None => return Ok(null_like(array)),
        },
        None => n,
    };
    let position = |p: i64| if p < 0 { n + p + 1 } else { p };
    let (start, end) = (position(start).max(1), position(end).min(n));
    let out = if start > end || n == 0 {
        Vec::new()
    } else {
        all[(start - 1) as usize..end as usize].to_vec()
    };
    list_like(array, out)
}

/// `ARRAY_SORT(array [, ascending [, nulls_first]])`: ascending by default; NULLs come first
/// when ascending and last when descending unless `nulls_first` says otherwise; a NULL flag
/// gives NULL.
fn sort(array: &ScalarValue, v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let flag = |i: usize, default: bool| match v.get(i) {
        None => Some(Some(default)),
        Some(ScalarValue::Boolean(b)) => Some(*b),
        Some(ScalarValue::Null) => Some(None),
        Some(_) => None,
    };
    let Some(ascending) = flag(1, true) else {
        return exec_err!("ARRAY_SORT expects a BOOLEAN sort order");
    };
    let Some(ascending) = ascending else {
        return Ok(null_like(array));
    };
    let Some(nulls_first) = flag(2, ascending) else {
        return exec_err!("ARRAY_SORT expects a BOOLEAN nulls order");
    };
    let Some(nulls_first) = nulls_first else {
        return Ok(null_like(array));
    };
    let mut out = items_of(array)?;
    out.sort_by(|a, b| match (a.is_null(), b.is_null()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) if nulls_first => std::cmp::Ordering::Less,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) if nulls_first => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => {
            let order = a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
            if ascending {
                order
            } else {
                order.reverse()
            }
        }
    });
    list_like(array, out)
}

/// `ARRAY_INTERSECT` (`keep_common`) / `ARRAY_EXCEPT`: the distinct elements of `array`, in
/// order, that are (not) in `other`; NULL elements are equal; a NULL `other` gives NULL.
fn set_operation(
    array: &ScalarValue,
    other: &ScalarValue,
    keep_common: bool,
) -> DfResult<ScalarValue> {
    let Some(others) = items(other)? else {
        return Ok(null_like(array));
    };
    let others = others
        .iter()
        .map(|x| cast_like(x, array))
        .collect::<DfResult<Vec<_>>>()?;
    let mut out: Vec<ScalarValue> = Vec::new();
    for x in items_of(array)? {
        if others.contains(&x) == keep_common && !out.contains(&x) {
            out.push(x);
        }
    }
    list_like(array, out)
}

/// `array[index]` (1-based; NULL out of range) and `map[key]`.
fn item(v: &[ScalarValue]) -> DfResult<ScalarValue> {
    let (container, key) = (&v[0], &v[1]);
    if let ScalarValue::Map(_) = container {
        let (_, value_type) = map_types(&container.data_type());
        let Some(entries) = map_entries(container)? else {
            return ScalarValue::try_from(&value_type);
        };
        let key = if key.is_null() {
            key.clone()
        } else {
            key.cast_to(&map_types(&container.data_type()).0)?
        };
        return match entries.into_iter().find(|(k, _)| *k == key) {
            Some((_, v)) => Ok(v),
            None => ScalarValue::try_from(&value_type),
        };
    }
    let Some(items) = items(container)? else {
        return null_of_element(container);
    };
    match super::row::int(key) {
        Some(i) if i >= 1 && (i as usize) <= items.len() => Ok(items[i as usize - 1].clone()),
        _ => null_of_element(container),
    }
}

/// Key and value types of a map type.
fn map_types(t: &DataType) -> (DataType, DataType) {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                (kv[0].data_type().clone(), kv[1].data_type().clone())
            }
            _ => (DataType::Null, DataType::Null),
        },
        _ => (DataType::Null, DataType::Null),
    }
}

/// The map type Riffle uses for Flink's `MAP<k, v>` (as [`crate::types::arrow_type`]).
fn map_type(key: &DataType, value: &DataType) -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", key.clone(), false),
                Field::new("value", value.clone(), true),
            ])),
            false,
        )),
        false,
    )
}

/// `ROW<key, value>`, the element type of `MAP_ENTRIES`.
fn entry_type(key: &DataType, value: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("key", key.clone(), true),
        Field::new("value", value.clone(), true),
    ]))
}

fn entry_value(entry: &DataType, k: ScalarValue, v: ScalarValue) -> DfResult<ScalarValue> {
    let DataType::Struct(fields) = entry else {
        return exec_err!("map entry type is not a row");
    };
    let columns = vec![k.to_array()?, v.to_array()?];
    Ok(ScalarValue::Struct(Arc::new(StructArray::try_new(
        fields.clone(),
        columns,
        None,
    )?)))
}

/// The entries of a map value, in order (None: NULL).
fn map_entries(v: &ScalarValue) -> DfResult<Option<Vec<(ScalarValue, ScalarValue)>>> {
    let ScalarValue::Map(m) = v else {
        return if v.is_null() {
            Ok(None)
        } else {
            exec_err!("expected a MAP, got {}", v.data_type())
        };
    };
    if m.is_null(0) {
        return Ok(None);
    }
    let entries = m.value(0);
    (0..entries.len())
        .map(|i| {
            Ok((
                ScalarValue::try_from_array(entries.column(0).as_ref(), i)?,
                ScalarValue::try_from_array(entries.column(1).as_ref(), i)?,
            ))
        })
        .collect::<DfResult<Vec<_>>>()
        .map(Some)
}

/// A map value; a repeated key keeps the first position and takes the last value.
fn map_value(
    entries: Vec<(ScalarValue, ScalarValue)>,
    key: &DataType,
    value: &DataType,
) -> DfResult<ScalarValue> {
    if entries.iter().any(|(k, _)| k.is_null()) {
        return exec_err!("map keys must not be NULL");
    }
    let (keys, values): (Vec<ScalarValue>, Vec<ScalarValue>) =
        dedup_entries(entries).into_iter().unzip();
    let n = keys.len();
    let column = |items: Vec<ScalarValue>, t: &DataType| -> DfResult<ArrayRef> {
        if items.is_empty() {
            Ok(arrow::array::new_empty_array(t))
        } else {
            ScalarValue::iter_to_array(items)
        }
    };
    let DataType::Map(entries_field, _) = map_type(key, value) else {
        return exec_err!("map type");
    };
    let DataType::Struct(fields) = entries_field.data_type() else {
        return exec_err!("map entries type");
    };
    let entries = StructArray::try_new(
        fields.clone(),
        vec![column(keys, key)?, column(values, value)?],
        None,
    )?;
    let map = MapArray::try_new(
        entries_field,
        OffsetBuffer::new(vec![0, n as i32].into()),
        entries,
        None,
        false,
    )?;
    Ok(ScalarValue::Map(Arc::new(map)))
}

fn null_map(key: &DataType, value: &DataType) -> DfResult<ScalarValue> {
    ScalarValue::try_from(&map_type(key, value))
}

/// Key and value types of `MAP[k1, v1, ...]`: the common type of the keys and of the values.
fn constructor_types(types: &[DataType]) -> (DataType, DataType) {
    let pick = |start: usize| -> DataType {
        let ts: Vec<DataType> = types.iter().skip(start).step_by(2).cloned().collect();
        type_union_resolution(&ts).unwrap_or(DataType::Utf8)
    };
    (pick(0), pick(1))
}

/// Java's `String.split(regex, limit)` (limit 0: trailing empty parts dropped; a zero-width
/// match at the start splits nothing off).
fn java_split(s: &str, delimiter: &str, limit: usize) -> DfResult<Vec<String>> {
    let re = regex::Regex::new(delimiter)
        .or_else(|e| exec_err!("invalid delimiter '{delimiter}': {e}"))?;
    let mut parts: Vec<String> = Vec::new();
    let mut last = 0;
    for m in re.find_iter(s) {
        if limit > 0 && parts.len() + 1 >= limit {
            break;
        }
        if m.end() == 0 {
            continue;
        }
        parts.push(s[last..m.start()].to_string());
        last = m.end();
    }
    if parts.is_empty() {
        return Ok(vec![s.to_string()]);
    }
    parts.push(s[last..].to_string());
    if limit == 0 {
        while parts.last().is_some_and(String::is_empty) {
            parts.pop();
        }
    }
    Ok(parts)
}

/// Java's `hashCode` of a map key, for the types whose hash Riffle reproduces.
fn java_hash(v: &ScalarValue) -> Option<i32> {
    use crate::java_hash::{boolean_hash, long_hash, string_hash};
    Some(match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => string_hash(s),
        ScalarValue::Int8(Some(i)) => i32::from(*i),
        ScalarValue::Int16(Some(i)) => i32::from(*i),
        ScalarValue::Int32(Some(i)) => *i,
        ScalarValue::Int64(Some(i)) => long_hash(*i),
        ScalarValue::Boolean(Some(b)) => boolean_hash(*b),
        _ => return None,
    })
}

/// `entries` (no key repeated) in the iteration order of a `java.util.HashMap` created with
/// `capacity`; unchanged when a key's hash is not reproduced.
fn hash_map_order(
    entries: Vec<(ScalarValue, ScalarValue)>,
    capacity: usize,
) -> Vec<(ScalarValue, ScalarValue)> {
    let hashes: Vec<Option<i32>> = entries.iter().map(|(k, _)| java_hash(k)).collect();
    match crate::java_hash::hash_map_order(&hashes, capacity) {
        Some(order) => order.into_iter().map(|i| entries[i].clone()).collect(),
        None => entries,
    }
}

/// Entries with repeated keys merged: the first position, the last value.
fn dedup_entries(entries: Vec<(ScalarValue, ScalarValue)>) -> Vec<(ScalarValue, ScalarValue)> {
    let mut unique: Vec<(ScalarValue, ScalarValue)> = Vec::new();
    for (k, v) in entries {
        match unique.iter_mut().find(|(uk, _)| *uk == k) {
            Some(slot) => slot.1 = v,
            None => unique.push((k, v)),
        }
    }
    unique
}

/// An element as `ARRAY_JOIN` writes it.
fn display(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.clone(),
        other => other.to_string(),
    }
}
