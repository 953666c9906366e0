//! Building Arrow columns from text fields the way Flink's CSV and JSON formats convert them.

use std::sync::Arc;

use std::collections::HashMap;

use arrow::array::{
    make_array, new_null_array, Array, ArrayBuilder, ArrayRef, BooleanBufferBuilder,
    BooleanBuilder, ListArray, MapArray, PrimitiveArray, StringArray, StructArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, FieldRef, Fields, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};

use crate::format::days_from_civil;
use crate::json_scan::{
    field_slots, scan_object, simple_escape, slots_for, SlotTree, Span, INLINE_SLOTS,
};

/// A record scanned by [`scan_record`]: its text, the tree of its schema and the spans found.
pub struct ScannedRecord<'a> {
    /// The record.
    pub record: &'a str,
    /// The tree the record was scanned with.
    pub tree: &'a SlotTree,
    /// The spans the scan filled.
    pub spans: &'a [Span],
}

/// A growing ROW column: the fields, their builders and which rows are non-NULL.
pub struct RowColumns {
    fields: Fields,
    children: Vec<ColumnBuilder>,
    valid: BooleanBufferBuilder,
    /// NULL rows not appended to the children yet: a run of NULL rows (say, the event kinds a
    /// record does not hold) costs one bulk append per child instead of one per row.
    lagging_nulls: usize,
}

impl RowColumns {
    /// Appends the lagging NULL rows to the children.
    fn catch_up(&mut self) {
        if self.lagging_nulls > 0 {
            for child in &mut self.children {
                child.append_nulls(self.lagging_nulls);
            }
            self.lagging_nulls = 0;
        }
    }

    /// Appends one non-NULL ROW: `append_child(field, builder)` appends each field in order.
    /// The first field error is the ROW's error; the other fields are still appended.
    fn append_members(
        &mut self,
        mut append_child: impl FnMut(&FieldRef, &mut ColumnBuilder) -> Result<(), String>,
    ) -> Result<(), String> {
        self.catch_up();
        let mut first_error = None;
        for (field, child) in self.fields.iter().zip(self.children.iter_mut()) {
            if let Err(e) = append_child(field, child) {
                first_error.get_or_insert(format!("field '{}': {e}", field.name()));
            }
        }
        self.valid.append(true);
        first_error.map_or(Ok(()), Err)
    }
}

/// The epoch nanoseconds of the timestamp a scanned plain string spells in its common shape
/// (see [`parse_timestamp_digits`]), as [`ColumnBuilder::append_text`] reads it; `None` for
/// anything else (text with whitespace around it, which `append_text` trims, other shapes, or
/// text that is no timestamp, whose error `append_text` gives).
#[inline(always)]
fn scanned_timestamp(
    record: &str,
    span: Span,
    style: TimestampStyle,
    tz: &Option<Arc<str>>,
) -> Option<i64> {
    let text = span.plain_string(record)?;
    let body = match tz {
        Some(_) => text.strip_suffix('Z')?,
        None => text,
    };
    parse_timestamp_digits(body.as_bytes(), style.separator())
}

/// Hands the text inside a JSON string to `out` piece by piece with its escapes resolved;
/// false at the first escape [`simple_escape`] does not resolve (`\u`, which `serde_json`
/// resolves instead), after `out` took the pieces before it.
#[inline(always)]
fn resolve_simple_escapes(inside: &str, mut out: impl FnMut(&str)) -> bool {
    let mut rest = inside;
    while let Some(i) = memchr::memchr(b'\\', rest.as_bytes()) {
        let escaped = rest.as_bytes().get(i + 1).copied().and_then(simple_escape);
        // Both cuts fall next to ASCII bytes, so on character boundaries.
        let (Some(before), Some(escaped), Some(after)) =
            (rest.get(..i), escaped, rest.get(i + 2..))
        else {
            return false;
        };
        out(before);
        out(escaped);
        rest = after;
    }
    out(rest);
    true
}

/// Appends the text inside a scanned JSON string with escapes to `b`, resolved as it is
/// copied. The scanner gives up on a record with an escape [`simple_escape`] does not resolve,
/// so every escape here resolves; were one not to, the value would be NULL and the field an
/// error rather than a different string.
fn append_escaped_string(b: &mut Strings, inside: &str) -> Result<(), String> {
    if resolve_simple_escapes(inside, |piece| b.append_piece(piece)) {
        b.end_value();
        Ok(())
    } else {
        b.append_null();
        Err(format!("unsupported escape in the string \"{inside}\""))
    }
}

/// How timestamps are written in the text (`csv`: SQL style; `json`: per option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampStyle {
    /// `yyyy-MM-dd HH:mm:ss[.f]`
    Sql,
    /// `yyyy-MM-ddTHH:mm:ss[.f]`
    Iso,
}

impl TimestampStyle {
    /// The byte between the date and the time.
    fn separator(self) -> u8 {
        match self {
            TimestampStyle::Sql => b' ',
            TimestampStyle::Iso => b'T',
        }
    }
}

/// A growing Arrow column of one Flink type.
pub enum ColumnBuilder {
    /// CHAR / VARCHAR / STRING
    Utf8(Strings),
    /// BOOLEAN
    Boolean(BooleanBuilder),
    /// TINYINT
    Int8(Primitives<Int8Type>),
    /// SMALLINT
    Int16(Primitives<Int16Type>),
    /// INT
    Int32(Primitives<Int32Type>),
    /// BIGINT
    Int64(Primitives<Int64Type>),
    /// FLOAT
    Float32(Primitives<Float32Type>),
    /// DOUBLE
    Float64(Primitives<Float64Type>),
    /// DECIMAL(p, s)
    Decimal(Primitives<Decimal128Type>, u8, i8),
    /// DATE
    Date(Primitives<Date32Type>),
    /// TIME
    Time(Primitives<Time32MillisecondType>),
    /// TIMESTAMP(0) / TIMESTAMP_LTZ(0) in seconds
    TimestampS(Primitives<TimestampSecondType>, Option<Arc<str>>),
    /// TIMESTAMP(p) / TIMESTAMP_LTZ(p) in milliseconds
    TimestampMs(Primitives<TimestampMillisecondType>, Option<Arc<str>>),
    /// TIMESTAMP(p) / TIMESTAMP_LTZ(p) in microseconds
    TimestampUs(Primitives<TimestampMicrosecondType>, Option<Arc<str>>),
    /// TIMESTAMP(p) / TIMESTAMP_LTZ(p) in nanoseconds
    TimestampNs(Primitives<TimestampNanosecondType>, Option<Arc<str>>),
    /// ROW (JSON objects only)
    Row(RowColumns),
    /// ARRAY (JSON arrays; CSV fields split at `csv.array-element-delimiter`)
    List(Nested),
    /// MAP (JSON objects only): `children` are the key and the value builders
    Map(Nested),
    /// A column or field the job does not read and that is not converted: every row is NULL
    /// (see [`ColumnBuilder::for_read`]).
    Unread {
        /// The column's type.
        data_type: DataType,
        /// Rows appended since the last [`ColumnBuilder::finish`].
        rows: usize,
    },
}

/// What a job reads of a column or ROW field (from the planner's `read_columns`).
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// All of it.
    Whole,
    /// Nothing.
    Nothing,
    /// Some fields of a ROW (a field not in the map is not read).
    Fields(HashMap<String, Read>),
}

impl Read {
    /// What is read of column `name` given the paths read (a path is a column name, then the
    /// fields down to one read whole); `None` for the paths means everything is read.
    pub fn of_column(name: &str, paths: Option<&[Vec<String>]>) -> Read {
        let Some(paths) = paths else {
            return Read::Whole;
        };
        let mut read = Read::Nothing;
        for path in paths
            .iter()
            .filter(|p| p.first().is_some_and(|c| c == name))
        {
            read.add(&path[1..]);
        }
        read
    }

    /// Adds the field at `path` below this one, read whole.
    fn add(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Read::Whole;
            return;
        };
        match self {
            Read::Whole => {}
            Read::Nothing => {
                *self = Read::Fields(HashMap::new());
                self.add(path);
            }
            Read::Fields(fields) => fields
                .entry(first.clone())
                .or_insert(Read::Nothing)
                .add(rest),
        }
    }
}

/// The parts of a column whose rows hold a variable number of child values (ARRAY, MAP).
pub struct Nested {
    /// The child field (an ARRAY's element; a MAP's `entries` struct).
    field: FieldRef,
    /// One builder per child column (an ARRAY's elements; a MAP's keys and values).
    children: Vec<ColumnBuilder>,
    /// Where each row's child values end (starts with 0).
    offsets: Vec<i32>,
    /// Which rows are non-NULL.
    valid: BooleanBufferBuilder,
}

impl Nested {
    fn new(field: &FieldRef, child_types: &[&DataType]) -> Result<Self, String> {
        Ok(Nested {
            field: field.clone(),
            children: child_types
                .iter()
                .map(|t| ColumnBuilder::new(t))
                .collect::<Result<_, _>>()?,
            offsets: vec![0],
            valid: BooleanBufferBuilder::new(0),
        })
    }

    /// Ends a row that holds `added` child values.
    fn end_row(&mut self, added: usize, valid: bool) -> Result<(), String> {
        let last = self.offsets.last().copied().unwrap_or(0);
        let end = i32::try_from(added)
            .ok()
            .and_then(|n| last.checked_add(n))
            .ok_or("too many collection elements in one batch")?;
        self.offsets.push(end);
        self.valid.append(valid);
        Ok(())
    }

    /// The offsets and validity of the rows so far; the builder starts over.
    fn finish_rows(&mut self) -> (OffsetBuffer<i32>, NullBuffer) {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        (
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            NullBuffer::new(self.valid.finish()),
        )
    }
}

impl ColumnBuilder {
    /// A builder for a (nullable) `data_type` of which the job reads `read`: string fields it
    /// does not read are not converted but left NULL, since converting a JSON value or a text
    /// field to a string cannot fail, so skipping it changes no result and no error. Everything
    /// else is converted (a value that does not convert fails the record as it does in Flink,
    /// which converts every field of the columns it reads).
    pub fn for_read(data_type: &DataType, nullable: bool, read: &Read) -> Result<Self, String> {
        let builder = ColumnBuilder::new(data_type)?;
        Ok(match (read, builder) {
            (Read::Nothing, ColumnBuilder::Utf8(_)) if nullable => ColumnBuilder::unread(data_type),
            (Read::Nothing | Read::Fields(_), ColumnBuilder::Row(mut row)) => {
                let none = HashMap::new();
                let fields = match read {
                    Read::Fields(fields) => fields,
                    _ => &none,
                };
                row.children = row
                    .fields
                    .iter()
                    .map(|f| {
                        let read = fields.get(f.name()).unwrap_or(&Read::Nothing);
                        ColumnBuilder::for_read(f.data_type(), f.is_nullable(), read)
                    })
                    .collect::<Result<_, _>>()?;
                ColumnBuilder::Row(row)
            }
            (_, builder) => builder,
        })
    }

    /// A builder that converts nothing: every row of `data_type` is NULL.
    pub fn unread(data_type: &DataType) -> Self {
        ColumnBuilder::Unread {
            data_type: data_type.clone(),
            rows: 0,
        }
    }

    /// Counts a row of an [`ColumnBuilder::Unread`] column; false for other builders.
    fn skipped(&mut self) -> bool {
        match self {
            ColumnBuilder::Unread { rows, .. } => {
                *rows += 1;
                true
            }
            _ => false,
        }
    }

    /// A builder for `data_type`, or the name of a type text formats cannot hold.
    pub fn new(data_type: &DataType) -> Result<Self, String> {
        Ok(match data_type {
            DataType::Utf8 => ColumnBuilder::Utf8(Strings::default()),
            DataType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::new()),
            DataType::Int8 => ColumnBuilder::Int8(Primitives::default()),
            DataType::Int16 => ColumnBuilder::Int16(Primitives::default()),
            DataType::Int32 => ColumnBuilder::Int32(Primitives::default()),
            DataType::Int64 => ColumnBuilder::Int64(Primitives::default()),
            DataType::Float32 => ColumnBuilder::Float32(Primitives::default()),
            DataType::Float64 => ColumnBuilder::Float64(Primitives::default()),
            DataType::Decimal128(p, s) => ColumnBuilder::Decimal(Primitives::default(), *p, *s),
            DataType::Date32 => ColumnBuilder::Date(Primitives::default()),
            DataType::Time32(TimeUnit::Millisecond) => ColumnBuilder::Time(Primitives::default()),
            DataType::Timestamp(TimeUnit::Second, tz) => {
                ColumnBuilder::TimestampS(Primitives::default(), tz.clone())
            }
            DataType::Timestamp(TimeUnit::Millisecond, tz) => {
                ColumnBuilder::TimestampMs(Primitives::default(), tz.clone())
            }
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                ColumnBuilder::TimestampUs(Primitives::default(), tz.clone())
            }
            DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
                ColumnBuilder::TimestampNs(Primitives::default(), tz.clone())
            }
            DataType::Struct(fields) => ColumnBuilder::Row(RowColumns {
                fields: fields.clone(),
                children: fields
                    .iter()
                    .map(|f| ColumnBuilder::new(f.data_type()))
                    .collect::<Result<_, _>>()?,
                valid: BooleanBufferBuilder::new(0),
                lagging_nulls: 0,
            }),
            DataType::List(element) => {
                ColumnBuilder::List(Nested::new(element, &[element.data_type()])?)
            }
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => ColumnBuilder::Map(Nested::new(
                    entries,
                    &[kv[0].data_type(), kv[1].data_type()],
                )?),
                _ => return Err(data_type.to_string()),
            },
            other => return Err(other.to_string()),
        })
    }

    /// Appends a JSON value: NULL for `null`, a ROW's fields by name from an object (missing
    /// fields are NULL), an ARRAY's elements from an array, a MAP's entries from an object,
    /// other values as their text. Always appends one value, and on error returns it: as in
    /// Flink, only the innermost value that does not convert becomes NULL (a ROW field, an
    /// array element), the ROW or ARRAY around it stays.
    pub fn append_json(
        &mut self,
        value: &serde_json::Value,
        style: TimestampStyle,
    ) -> Result<(), String> {
        use serde_json::Value;
        if self.skipped() {
            return Ok(());
        }
        let result = match (&mut *self, value) {
            (_, Value::Null) => {
                self.append_null();
                return Ok(());
            }
            (ColumnBuilder::Row(row), Value::Object(object)) => {
                return row.append_members(|field, child| {
                    let v = object.get(field.name()).unwrap_or(&Value::Null);
                    child.append_json(v, style)
                });
            }
            (ColumnBuilder::List(list), Value::Array(items)) => {
                let mut first_error = None;
                for item in items {
                    if let Err(e) = list.children[0].append_json(item, style) {
                        first_error.get_or_insert(format!("array element: {e}"));
                    }
                }
                list.end_row(items.len(), true)?;
                return first_error.map_or(Ok(()), Err);
            }
            (ColumnBuilder::Map(map), Value::Object(object)) => {
                let mut first_error = None;
                let mut entries = 0;
                let mut key_failed = false;
                for (key, value) in object {
                    // A key that does not convert drops its entry and makes the map NULL: a
                    // map key cannot be NULL.
                    if let Err(e) = map.children[0].append_text(key, style) {
                        first_error.get_or_insert(format!("map key '{key}': {e}"));
                        key_failed = true;
                        continue;
                    }
                    if let Err(e) = map.children[1].append_json(value, style) {
                        first_error.get_or_insert(format!("map value of '{key}': {e}"));
                    }
                    entries += 1;
                }
                map.end_row(entries, !key_failed)?;
                return first_error.map_or(Ok(()), Err);
            }
            (_, Value::String(text)) => self.append_text(text, style),
            (_, other) => self.append_text(&other.to_string(), style),
        };
        if result.is_err() {
            self.append_null();
        }
        result
    }

    /// Appends a JSON value given as its raw text (valid JSON, as [`scan_object`] found it):
    /// the same result as [`ColumnBuilder::append_json`] of the parsed value, but the common
    /// shapes — plain strings, numbers into numeric columns, objects into ROWs — are converted
    /// without building a `serde_json::Value`.
    pub fn append_json_text(&mut self, raw: &str, style: TimestampStyle) -> Result<(), String> {
        if self.skipped() {
            return Ok(());
        }
        let result = match (&mut *self, raw.as_bytes().first()) {
            (_, Some(b'n')) => {
                self.append_null();
                return Ok(());
            }
            (ColumnBuilder::Row(row), Some(b'{')) => {
                let mut inline = [None; INLINE_SLOTS];
                let mut heap = Vec::new();
                let slots = slots_for(row.fields.len(), &mut inline, &mut heap);
                if !scan_object(raw, &field_slots(&row.fields), slots) {
                    return self.append_json_parsed(raw, style);
                }
                let mut slots = slots.iter();
                return row.append_members(|_, child| match slots.next().copied().flatten() {
                    Some(text) => child.append_json_text(text, style),
                    None => {
                        child.append_null();
                        Ok(())
                    }
                });
            }
            (_, Some(b'"')) if !raw.contains('\\') => {
                self.append_text(&raw[1..raw.len() - 1], style)
            }
            (_, Some(b'"')) => {
                let mut text = String::new();
                if resolve_simple_escapes(&raw[1..raw.len() - 1], |piece| text.push_str(piece)) {
                    self.append_text(&text, style)
                } else {
                    match serde_json::from_str::<String>(raw) {
                        Ok(text) => self.append_text(&text, style),
                        Err(_) => return self.append_json_parsed(raw, style),
                    }
                }
            }
            (_, Some(b'-' | b'0'..=b'9')) => match self.append_json_number(raw) {
                Some(()) => Ok(()),
                None => return self.append_json_parsed(raw, style),
            },
            (ColumnBuilder::Boolean(b), Some(b't' | b'f')) => {
                b.append_value(raw == "true");
                Ok(())
            }
            _ => return self.append_json_parsed(raw, style),
        };
        if result.is_err() {
            self.append_null();
        }
        result
    }

    /// Appends member `index` of `level` of a record scanned by [`scan_record`]: the same
    /// result as [`ColumnBuilder::append_json_text`] of its raw text, but a ROW object takes its
    /// fields from the spans the scan found, without scanning the object again, and a string
    /// with escapes is resolved straight into a STRING column.
    pub fn append_json_scanned(
        &mut self,
        scanned: &ScannedRecord<'_>,
        level: usize,
        index: usize,
        style: TimestampStyle,
    ) -> Result<(), String> {
        let (slot, nested) = scanned.tree.member(level, index);
        let span = scanned.spans.get(slot).copied().unwrap_or(Span::ABSENT);
        let Some(raw) = span.text(scanned.record) else {
            self.append_null();
            return Ok(());
        };
        // The shapes of most values, each tried once its builder is known.
        match self {
            ColumnBuilder::Unread { rows, .. } => {
                *rows += 1;
                return Ok(());
            }
            ColumnBuilder::Utf8(b) => {
                if let Some(text) = span.plain_string(scanned.record) {
                    b.append_value(text);
                    return Ok(());
                }
                if raw.as_bytes().first() == Some(&b'"') {
                    return append_escaped_string(b, &raw[1..raw.len() - 1]);
                }
            }
            ColumnBuilder::Int32(b) => {
                if let Some(value) = json_integer(raw).and_then(|v| i32::try_from(v).ok()) {
                    b.append_value(value);
                    return Ok(());
                }
            }
            ColumnBuilder::Int64(b) => {
                if let Some(value) = json_integer(raw) {
                    b.append_value(value);
                    return Ok(());
                }
            }
            ColumnBuilder::TimestampMs(b, tz) => {
                if let Some(nanos) = scanned_timestamp(scanned.record, span, style, tz) {
                    b.append_value(nanos / 1_000_000);
                    return Ok(());
                }
            }
            ColumnBuilder::TimestampUs(b, tz) => {
                if let Some(nanos) = scanned_timestamp(scanned.record, span, style, tz) {
                    b.append_value(nanos / 1_000);
                    return Ok(());
                }
            }
            ColumnBuilder::TimestampNs(b, tz) => {
                if let Some(nanos) = scanned_timestamp(scanned.record, span, style, tz) {
                    b.append_value(nanos);
                    return Ok(());
                }
            }
            ColumnBuilder::Row(row) => {
                if let (Some(nested), Some(b'{')) = (nested, raw.as_bytes().first()) {
                    let mut index = 0;
                    return row.append_members(|_, child| {
                        index += 1;
                        child.append_json_scanned(scanned, nested, index - 1, style)
                    });
                }
            }
            _ => {}
        }
        self.append_json_scanned_value(scanned.record, span, raw, style)
    }

    /// The rest of [`ColumnBuilder::append_json_scanned`]: a value `raw` at `span` that is not
    /// of the most common shapes. Kept apart so that the common shapes stay a small function.
    #[inline(never)]
    fn append_json_scanned_value(
        &mut self,
        record: &str,
        span: Span,
        raw: &str,
        style: TimestampStyle,
    ) -> Result<(), String> {
        if let Some(text) = span.plain_string(record) {
            let appended = self.append_text(text, style);
            if appended.is_err() {
                self.append_null();
            }
            return appended;
        }
        if matches!(raw.as_bytes().first(), Some(b'-' | b'0'..=b'9'))
            && self.append_json_number(raw).is_some()
        {
            return Ok(());
        }
        self.append_json_text(raw, style)
    }

    /// Appends a JSON number straight into an integer or floating-point column; `None` (and
    /// nothing appended) for other columns or numbers the column cannot take as they are (a
    /// fraction or an exponent does not parse as an integer: the general path decides those).
    fn append_json_number(&mut self, raw: &str) -> Option<()> {
        match self {
            ColumnBuilder::Int8(b) => b.append_value(json_integer(raw)?.try_into().ok()?),
            ColumnBuilder::Int16(b) => b.append_value(json_integer(raw)?.try_into().ok()?),
            ColumnBuilder::Int32(b) => b.append_value(json_integer(raw)?.try_into().ok()?),
            ColumnBuilder::Int64(b) => b.append_value(json_integer(raw)?),
            ColumnBuilder::Float32(b) => b.append_value(raw.parse::<f64>().ok()? as f32),
            ColumnBuilder::Float64(b) => b.append_value(raw.parse().ok()?),
            _ => return None,
        }
        Some(())
    }

    /// The general path of [`ColumnBuilder::append_json_text`]: parse, then append the value.
    fn append_json_parsed(&mut self, raw: &str, style: TimestampStyle) -> Result<(), String> {
        match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(value) => self.append_json(&value, style),
            Err(e) => {
                self.append_null();
                Err(e.to_string())
            }
        }
    }

    /// Appends `n` NULLs.
    pub fn append_nulls(&mut self, n: usize) {
        match self {
            ColumnBuilder::Utf8(b) => b.append_nulls(n),
            ColumnBuilder::Boolean(b) => b.append_nulls(n),
            ColumnBuilder::Int8(b) => b.append_nulls(n),
            ColumnBuilder::Int16(b) => b.append_nulls(n),
            ColumnBuilder::Int32(b) => b.append_nulls(n),
            ColumnBuilder::Int64(b) => b.append_nulls(n),
            ColumnBuilder::Float32(b) => b.append_nulls(n),
            ColumnBuilder::Float64(b) => b.append_nulls(n),
            ColumnBuilder::Decimal(b, ..) => b.append_nulls(n),
            ColumnBuilder::Date(b) => b.append_nulls(n),
            ColumnBuilder::Time(b) => b.append_nulls(n),
            ColumnBuilder::TimestampS(b, _) => b.append_nulls(n),
            ColumnBuilder::TimestampMs(b, _) => b.append_nulls(n),
            ColumnBuilder::TimestampUs(b, _) => b.append_nulls(n),
            ColumnBuilder::TimestampNs(b, _) => b.append_nulls(n),
            ColumnBuilder::Row(row) => {
                row.valid.append_n(n, false);
                row.lagging_nulls += n;
            }
            ColumnBuilder::List(_) | ColumnBuilder::Map(_) => {
                (0..n).for_each(|_| self.append_null())
            }
            ColumnBuilder::Unread { rows, .. } => *rows += n,
        }
    }

    /// Appends NULL.
    pub fn append_null(&mut self) {
        match self {
            ColumnBuilder::Utf8(b) => b.append_null(),
            ColumnBuilder::Boolean(b) => b.append_null(),
            ColumnBuilder::Int8(b) => b.append_null(),
            ColumnBuilder::Int16(b) => b.append_null(),
            ColumnBuilder::Int32(b) => b.append_null(),
            ColumnBuilder::Int64(b) => b.append_null(),
            ColumnBuilder::Float32(b) => b.append_null(),
            ColumnBuilder::Float64(b) => b.append_null(),
            ColumnBuilder::Decimal(b, ..) => b.append_null(),
            ColumnBuilder::Date(b) => b.append_null(),
            ColumnBuilder::Time(b) => b.append_null(),
            ColumnBuilder::TimestampS(b, _) => b.append_null(),
            ColumnBuilder::TimestampMs(b, _) => b.append_null(),
            ColumnBuilder::TimestampUs(b, _) => b.append_null(),
            ColumnBuilder::TimestampNs(b, _) => b.append_null(),
            ColumnBuilder::Row(row) => {
                row.valid.append(false);
                row.lagging_nulls += 1;
            }
            ColumnBuilder::List(nested) | ColumnBuilder::Map(nested) => {
                let last = nested.offsets.last().copied().unwrap_or(0);
                nested.offsets.push(last);
                nested.valid.append(false);
            }
            ColumnBuilder::Unread { rows, .. } => *rows += 1,
        }
    }

    /// Appends a CSV field: an ARRAY's elements are the field split at `element_delimiter`
    /// (`csv.array-element-delimiter`), other types as [`ColumnBuilder::append_text`]. Always
    /// appends one value, and on error returns it: the value (or array element) that does not
    /// convert is NULL.
    pub fn append_csv_text(
        &mut self,
        text: &str,
        element_delimiter: &str,
        style: TimestampStyle,
    ) -> Result<(), String> {
        if self.skipped() {
            return Ok(());
        }
        let ColumnBuilder::List(list) = self else {
            let appended = self.append_text(text, style);
            if appended.is_err() {
                self.append_null();
            }
            return appended;
        };
        let mut first_error = None;
        let mut added = 0;
        // An empty field is an empty array.
        for element in text.split(element_delimiter).filter(|_| !text.is_empty()) {
            if let Err(e) = list.children[0].append_text(element, style) {
                list.children[0].append_null();
                first_error.get_or_insert(format!("array element: {e}"));
            }
            added += 1;
        }
        list.end_row(added, true)?;
        first_error.map_or(Ok(()), Err)
    }

    /// Parses `text` and appends it; on error nothing is appended.
    pub fn append_text(&mut self, text: &str, style: TimestampStyle) -> Result<(), String> {
        let t = text.trim();
        match self {
            ColumnBuilder::Utf8(b) => b.append_value(text),
            // Java's Boolean.parseBoolean: anything but "true" is false.
            ColumnBuilder::Boolean(b) => b.append_value(t.eq_ignore_ascii_case("true")),
            ColumnBuilder::Int8(b) => b.append_value(parse_int(t)?),
            ColumnBuilder::Int16(b) => b.append_value(parse_int(t)?),
            ColumnBuilder::Int32(b) => b.append_value(parse_int(t)?),
            ColumnBuilder::Int64(b) => b.append_value(parse_int(t)?),
            ColumnBuilder::Float32(b) => b.append_value(parse_float(t)? as f32),
            ColumnBuilder::Float64(b) => b.append_value(parse_float(t)?),
            ColumnBuilder::Decimal(b, p, s) => match parse_decimal(t, *p, *s)? {
                Some(v) => b.append_value(v),
                // Flink turns values that do not fit the precision into NULL.
                None => b.append_null(),
            },
            ColumnBuilder::Date(b) => b.append_value(parse_date(t)? as i32),
            ColumnBuilder::Time(b) => b.append_value((parse_time(t)? / 1_000_000) as i32),
            ColumnBuilder::TimestampS(b, tz) => {
                let nanos = parse_timestamp(t, style, tz.is_some())?;
                // Flink keeps a fraction it reads into a TIMESTAMP(0) (its storage is in
                // milliseconds); Riffle's is in seconds, so it refuses rather than truncate.
                if nanos.rem_euclid(1_000_000_000) != 0 {
                    return Err(format!(
                        "unsupported feature: a fraction of a second in a TIMESTAMP(0) value (\"{t}\")"
                    ));
                }
                b.append_value(nanos.div_euclid(1_000_000_000))
            }
            ColumnBuilder::TimestampMs(b, tz) => {
                b.append_value(parse_timestamp(t, style, tz.is_some())? / 1_000_000)
            }
            ColumnBuilder::TimestampUs(b, tz) => {
                b.append_value(parse_timestamp(t, style, tz.is_some())? / 1_000)
            }
            ColumnBuilder::TimestampNs(b, tz) => {
                b.append_value(parse_timestamp(t, style, tz.is_some())?)
            }
            ColumnBuilder::Row(..) => return Err("a ROW value must be a JSON object".to_string()),
            ColumnBuilder::List(_) => return Err("an ARRAY value must be a JSON array".to_string()),
            ColumnBuilder::Map(_) => return Err("a MAP value must be a JSON object".to_string()),
            ColumnBuilder::Unread { rows, .. } => *rows += 1,
        }
        Ok(())
    }

    /// The finished column.
    pub fn finish(&mut self) -> Result<ArrayRef, String> {
        Ok(match self {
            ColumnBuilder::Utf8(b) => Arc::new(b.finish()?),
            ColumnBuilder::Boolean(b) => {
                let next = BooleanBuilder::with_capacity(b.len());
                Arc::new(std::mem::replace(b, next).finish())
            }
            ColumnBuilder::Int8(b) => Arc::new(b.finish()),
            ColumnBuilder::Int16(b) => Arc::new(b.finish()),
            ColumnBuilder::Int32(b) => Arc::new(b.finish()),
            ColumnBuilder::Int64(b) => Arc::new(b.finish()),
            ColumnBuilder::Float32(b) => Arc::new(b.finish()),
            ColumnBuilder::Float64(b) => Arc::new(b.finish()),
            ColumnBuilder::Decimal(b, p, s) => Arc::new(
                b.finish()
                    .with_precision_and_scale(*p, *s)
                    .map_err(|e| e.to_string())?,
            ),
            ColumnBuilder::Date(b) => Arc::new(b.finish()),
            ColumnBuilder::Time(b) => Arc::new(b.finish()),
            ColumnBuilder::TimestampS(b, tz) => Arc::new(b.finish().with_timezone_opt(tz.clone())),
            ColumnBuilder::TimestampMs(b, tz) => Arc::new(b.finish().with_timezone_opt(tz.clone())),
            ColumnBuilder::TimestampUs(b, tz) => Arc::new(b.finish().with_timezone_opt(tz.clone())),
            ColumnBuilder::TimestampNs(b, tz) => Arc::new(b.finish().with_timezone_opt(tz.clone())),
            ColumnBuilder::Row(row) => {
                row.catch_up();
                let nulls = NullBuffer::new(row.valid.finish());
                let children = row
                    .children
                    .iter_mut()
                    .map(|c| null_where_parent_is(c.finish()?, &nulls))
                    .collect::<Result<Vec<_>, String>>()?;
                Arc::new(
                    StructArray::try_new(row.fields.clone(), children, Some(nulls))
                        .map_err(|e| e.to_string())?,
                )
            }
            ColumnBuilder::List(list) => {
                let values = list.children[0].finish()?;
                let (offsets, nulls) = list.finish_rows();
                Arc::new(
                    ListArray::try_new(list.field.clone(), offsets, values, Some(nulls))
                        .map_err(|e| e.to_string())?,
                )
            }
            ColumnBuilder::Map(map) => {
                let DataType::Struct(kv) = map.field.data_type() else {
                    return Err(format!("map entries of type {}", map.field.data_type()));
                };
                let kv = kv.clone();
                let keys = map.children[0].finish()?;
                let values = map.children[1].finish()?;
                let entries = StructArray::try_new(kv, vec![keys, values], None)
                    .map_err(|e| e.to_string())?;
                let (offsets, nulls) = map.finish_rows();
                Arc::new(
                    MapArray::try_new(map.field.clone(), offsets, entries, Some(nulls), false)
                        .map_err(|e| e.to_string())?,
                )
            }
            ColumnBuilder::Unread { data_type, rows } => {
                new_null_array(data_type, std::mem::take(rows))
            }
        })
    }
}

/// The value of a JSON integer `-?[0-9]+` of at most 18 digits (so it cannot overflow), read
/// without the general parser's checks per digit; `None` for anything else, which
/// `str::parse` then decides.
#[inline(always)]
fn json_integer(raw: &str) -> Option<i64> {
    let (negative, digits) = match raw.as_bytes() {
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 {
        return raw.parse().ok();
    }
    let mut value = 0_i64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(d - b'0');
    }
    Some(if negative { -value } else { value })
}

/// A column of fixed-width values being built. Arrow's `PrimitiveBuilder` does the same, but
/// its appends were calls of about 50 instructions each from the JSON decoder, and once a
/// batch had a NULL every later value went through its validity bitmap. Here a value is an
/// inlined push, and the NULLs are kept as runs until the batch is finished.
#[derive(Debug)]
pub struct Primitives<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullRuns,
}

impl<T: ArrowPrimitiveType> Default for Primitives<T> {
    fn default() -> Self {
        Primitives {
            values: Vec::new(),
            nulls: NullRuns::default(),
        }
    }
}

impl<T: ArrowPrimitiveType> Primitives<T> {
    /// Appends `value`.
    #[inline(always)]
    fn append_value(&mut self, value: T::Native) {
        self.values.push(value);
    }

    /// Appends NULL.
    #[inline]
    fn append_null(&mut self) {
        self.append_nulls(1);
    }

    /// Appends `n` NULLs.
    fn append_nulls(&mut self, n: usize) {
        let row = self.values.len();
        self.nulls.add(row, n);
        self.values.resize(row + n, T::Native::default());
    }

    /// The values appended so far; the builder starts over with room for as many (batches are
    /// usually alike, so this spares growing the buffers value by value).
    fn finish(&mut self) -> PrimitiveArray<T> {
        let rows = self.values.len();
        let values = ScalarBuffer::from(std::mem::replace(
            &mut self.values,
            Vec::with_capacity(rows),
        ));
        PrimitiveArray::new(values, self.nulls.finish(rows))
    }
}

/// A STRING column being built, for the reasons of [`Primitives`]: a value is an inlined
/// copy, and a string with escapes is resolved straight into the column.
#[derive(Debug)]
pub struct Strings {
    /// The values' bytes, one after the other.
    bytes: Vec<u8>,
    /// Where each value starts in `bytes`, and where the last one ends.
    offsets: Vec<i32>,
    nulls: NullRuns,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            bytes: Vec::new(),
            offsets: vec![0],
            nulls: NullRuns::default(),
        }
    }
}

impl Strings {
    /// Appends `value`.
    #[inline(always)]
    fn append_value(&mut self, value: &str) {
        self.append_piece(value);
        self.end_value();
    }

    /// Appends `piece` to the value being written (ended by [`Strings::end_value`]).
    #[inline(always)]
    fn append_piece(&mut self, piece: &str) {
        self.bytes.extend_from_slice(piece.as_bytes());
    }

    /// Ends the value being written. Offsets beyond `i32` are caught by [`Strings::finish`].
    #[inline(always)]
    fn end_value(&mut self) {
        self.offsets.push(self.bytes.len() as i32);
    }

    /// Appends NULL (dropping what was written of a value not ended).
    fn append_null(&mut self) {
        self.append_nulls(1);
    }

    /// Appends `n` NULLs.
    fn append_nulls(&mut self, n: usize) {
        let row = self.offsets.len() - 1;
        let end = self.offsets.last().copied().unwrap_or(0);
        self.bytes.truncate(end as usize);
        self.nulls.add(row, n);
        self.offsets.resize(self.offsets.len() + n, end);
    }

    /// The values appended so far; the builder starts over with room for as many.
    fn finish(&mut self) -> Result<StringArray, String> {
        let rows = self.offsets.len() - 1;
        if i32::try_from(self.bytes.len()).is_err() {
            return Err(format!(
                "{} bytes of strings in one batch of {rows} rows: more than a STRING column holds (2 GiB)",
                self.bytes.len()
            ));
        }
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        let offsets = std::mem::replace(&mut self.offsets, offsets);
        let next = Vec::with_capacity(self.bytes.len());
        let bytes = std::mem::replace(&mut self.bytes, next);
        let nulls = self.nulls.finish(rows);
        StringArray::try_new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            bytes.into(),
            nulls,
        )
        .map_err(|e| e.to_string())
    }
}

/// The NULL rows of a column being built, as runs: a run of NULLs costs one entry, and the
/// validity bitmap is written once, when the batch is finished.
#[derive(Debug, Default)]
struct NullRuns {
    /// (first row, rows), in row order; adjacent runs are merged.
    runs: Vec<(usize, usize)>,
}

impl NullRuns {
    /// Rows `row..row + n` are NULL (`row` is past every run added before).
    fn add(&mut self, row: usize, n: usize) {
        match self.runs.last_mut() {
            Some((first, rows)) if *first + *rows == row => *rows += n,
            _ => self.runs.push((row, n)),
        }
    }

    /// The validity of `rows` rows (`None` when none is NULL); the runs start over.
    fn finish(&mut self, rows: usize) -> Option<NullBuffer> {
        if self.runs.is_empty() {
            return None;
        }
        let mut valid = BooleanBufferBuilder::new(rows);
        for (first, n) in self.runs.drain(..) {
            valid.append_n(first.saturating_sub(valid.len()), true);
            valid.append_n(n, false);
        }
        valid.append_n(rows.saturating_sub(valid.len()), true);
        Some(NullBuffer::new(valid.finish()))
    }
}

/// `child` with NULL wherever its ROW is NULL: a NULL ROW's fields read as NULL, as in Flink.
/// The builders already append NULL fields for a NULL ROW, so usually `child` is returned as
/// it is (rebuilding it would validate every value again).
fn null_where_parent_is(child: ArrayRef, parent: &NullBuffer) -> Result<ArrayRef, String> {
    if parent.null_count() == 0 {
        return Ok(child);
    }
    let nulls = NullBuffer::union(Some(parent), child.nulls());
    if nulls.as_ref().map_or(0, NullBuffer::null_count) == child.null_count() {
        return Ok(child);
    }
    let data = child
        .to_data()
        .into_builder()
        .nulls(nulls)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(make_array(data))
}

fn parse_int<T: std::str::FromStr>(t: &str) -> Result<T, String> {
    // Java's parseInt accepts a leading '+'.
    let t = t.strip_prefix('+').unwrap_or(t);
    t.parse().map_err(|_| format!("For input string: \"{t}\""))
}

fn parse_float(t: &str) -> Result<f64, String> {
    // Plain decimal notation parses as it is (no suffix, NaN or Infinity to look at).
    if t.bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        if let Ok(v) = t.parse() {
            return Ok(v);
        }
    }
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_end_matches(['d', 'f']);
    match body {
        "nan" => Ok(f64::NAN),
        "infinity" | "+infinity" => Ok(f64::INFINITY),
        "-infinity" => Ok(f64::NEG_INFINITY),
        _ => body
            .parse()
            .map_err(|_| format!("For input string: \"{t}\"")),
    }
}

/// A decimal literal rounded half-up to `scale`; `None` when it does not fit `precision`.
pub fn parse_decimal(t: &str, precision: u8, scale: i8) -> Result<Option<i128>, String> {
    let err = || format!("Character array is not a valid decimal number: \"{t}\"");
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| err())?),
        None => (t, 0),
    };
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
    {
        return Err(err());
    }
    let digits: String = format!("{int}{frac}");
    // value = digits × 10^(exponent - frac.len()); rescale to `scale`.
    let shift = i64::from(scale) + i64::from(exponent) - frac.len() as i64;
    let digits = digits.trim_start_matches('0');
    let drop = if shift < 0 { (-shift) as usize } else { 0 };
    // Digits below the scale are dropped; the first of them rounds half-up. When more digits
    // are dropped than exist, the first dropped digit is a leading zero.
    let (kept, first_dropped) = if drop == 0 {
        (digits, None)
    } else if drop <= digits.len() {
        let (k, d) = digits.split_at(digits.len() - drop);
        (k, d.chars().next())
    } else {
        ("", None)
    };
    let mut value: i128 = 0;
    for c in kept.chars() {
        value = match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(c as u8 - b'0')))
        {
            Some(v) => v,
            None => return Ok(None),
        };
    }
    for _ in 0..shift.max(0) {
        value = match value.checked_mul(10) {
            Some(v) => v,
            None => return Ok(None),
        };
    }
    if first_dropped.is_some_and(|c| c >= '5') {
        value += 1;
    }
    if value >= 10_i128.pow(u32::from(precision)) {
        return Ok(None);
    }
    Ok(Some(if negative { -value } else { value }))
}

/// Days since epoch of `yyyy-[m]m-[d]d`.
fn parse_date(t: &str) -> Result<i64, String> {
    let err = || format!("Invalid date: \"{t}\"");
    let mut parts = t.splitn(3, '-');
    let y: i64 = parts.next().ok_or_else(err)?.parse().map_err(|_| err())?;
    let m: u32 = parts.next().ok_or_else(err)?.parse().map_err(|_| err())?;
    let d: u32 = parts.next().ok_or_else(err)?.parse().map_err(|_| err())?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return Err(err());
    }
    Ok(days_from_civil(y, m, d))
}

#[inline(always)]
fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Nanoseconds of day of `HH:mm:ss[.fffffffff]`.
fn parse_time(t: &str) -> Result<i64, String> {
    let err = || format!("Invalid time: \"{t}\"");
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut parts = hms.splitn(3, ':');
    let mut field = |max: i64| -> Result<i64, String> {
        let p = parts.next().ok_or_else(err)?;
        if p.len() != 2 {
            return Err(err());
        }
        let v: i64 = p.parse().map_err(|_| err())?;
        if v > max {
            return Err(err());
        }
        Ok(v)
    };
    let (h, m, s) = (field(23)?, field(59)?, field(59)?);
    if frac.len() > 9 || !frac.chars().all(|c| c.is_ascii_digit()) || t.ends_with('.') {
        return Err(err());
    }
    let mut nanos: i64 = 0;
    for (i, c) in frac.chars().enumerate() {
        nanos += i64::from(c as u8 - b'0') * 10_i64.pow(8 - i as u32);
    }
    Ok(((h * 60 + m) * 60 + s) * 1_000_000_000 + nanos)
}

/// Epoch nanoseconds of a timestamp in the given style; `ltz` expects a trailing `Z`.
fn parse_timestamp(t: &str, style: TimestampStyle, ltz: bool) -> Result<i64, String> {
    let err = || format!("Invalid timestamp: \"{t}\"");
    let body = if ltz {
        t.strip_suffix('Z').ok_or_else(err)?
    } else {
        t
    };
    let sep = style.separator();
    parse_timestamp_digits(body.as_bytes(), sep)
        .or_else(|| parse_timestamp_fields(body, char::from(sep)))
        .ok_or_else(err)
}

/// [`parse_timestamp`] of `body` (without a zone) whose date and time are parted by `sep`.
fn parse_timestamp_fields(body: &str, sep: char) -> Option<i64> {
    let (date, time) = body.split_once(sep)?;
    if date.len() != 10 {
        return None;
    }
    let days = parse_date(date).ok()?;
    let nanos = parse_time(time).ok()?;
    days.checked_mul(86_400_000_000_000)?.checked_add(nanos)
}

/// The common shape of [`parse_timestamp`]'s text, `yyyy-MM-dd<sep>HH:mm:ss[.f…]` with every
/// field in digits, read straight from the bytes; `None` for anything else (other shapes,
/// out-of-range fields), which the general parser decides — with the same result for the
/// texts this one accepts.
#[inline(always)]
fn parse_timestamp_digits(t: &[u8], sep: u8) -> Option<i64> {
    // Three overlapping words: `yyyy-MM-`, `ddTHH:mm`, `HH:mm:ss` (with `sep` for `T`).
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(t.get(at..at + 8)?.try_into().ok()?))
    };
    let (date, middle, time) = (word(0)?, word(8)?, word(11)?);
    let sep = u64::from(sep);
    let date_digits = digit_bytes(date, 0x00ff_ff00_ffff_ffff, 0x2d00_002d_0000_0000)?;
    let middle_digits = digit_bytes(
        middle,
        0xffff_00ff_ff00_ffff,
        0x0000_3a00_0000_0000 | (sep << 16),
    )?;
    let time_digits = digit_bytes(time, 0xffff_00ff_ff00_ffff, 0x0000_3a00_003a_0000)?;
    // The two-digit number at byte `i` of a word of digit values.
    let two = |w: u64, i: u32| ((w >> (8 * i)) & 0xff) * 10 + ((w >> (8 * (i + 1))) & 0xff);
    let y = (two(date_digits, 0) * 100 + two(date_digits, 2)) as i64;
    let (month, day) = (two(date_digits, 5) as u32, two(middle_digits, 0) as u32);
    let (h, min, sec) = (
        two(time_digits, 0) as i64,
        two(time_digits, 3) as i64,
        two(time_digits, 6) as i64,
    );
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(y, month)
        || h > 23
        || min > 59
        || sec > 59
    {
        return None;
    }
    let nanos = match &t[19..] {
        [] => 0,
        [b'.', fraction @ ..] if (1..=9).contains(&fraction.len()) => {
            let mut value = 0_i64;
            for &b in fraction {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                value = value * 10 + i64::from(d);
            }
            value * NANOS_PER_FRACTION_DIGITS[fraction.len()]
        }
        _ => return None,
    };
    let seconds = days_from_civil(y, month, day) * 86_400 + (h * 60 + min) * 60 + sec;
    seconds.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// The 8 bytes of `word` (little-endian text) as digit values where `digits` has `0xff`, when
/// those bytes are all ASCII digits and the others spell `separators`; else `None`.
#[inline(always)]
fn digit_bytes(word: u64, digits: u64, separators: u64) -> Option<u64> {
    const HIGH_NIBBLES: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    let zeros = 0x3030_3030_3030_3030 & digits;
    let value = word & digits;
    // A digit is 0x30..=0x39: high nibble 3, and adding 6 keeps it 3 (0x3a..=0x3f would not).
    // Adding 6 cannot carry out of a byte whose high nibble is 3, and any other byte already
    // fails the first test.
    let digits_ok = value & HIGH_NIBBLES == zeros
        && (value + (0x0606_0606_0606_0606 & digits)) & HIGH_NIBBLES & digits == zeros;
    (digits_ok && word & !digits == separators).then(|| value - zeros)
}

/// What a fraction of a second of `n` digits counts in nanoseconds, by `n` (1 to 9).
const NANOS_PER_FRACTION_DIGITS: [i64; 10] = [
    0,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Values and NULLs in any mix, NULL runs next to each other included, come out as
    /// Arrow's own builder builds them, batch after batch.
    #[test]
    fn primitive_columns_equal_arrows_builder() {
        let mut ours = Primitives::<arrow::datatypes::Int64Type>::default();
        let mut arrows = arrow::array::Int64Builder::new();
        let batches: [&[Option<i64>]; 4] = [
            &[Some(1), None, None, Some(2), None],
            &[None, None, Some(3)],
            &[Some(4), Some(5)],
            &[],
        ];
        for batch in batches {
            for value in batch {
                match value {
                    Some(v) => {
                        ours.append_value(*v);
                        arrows.append_value(*v);
                    }
                    None => {
                        ours.append_null();
                        arrows.append_null();
                    }
                }
            }
            // A run appended at once joins the single NULL before it.
            ours.append_null();
            ours.append_nulls(2);
            arrows.append_nulls(3);
            assert_eq!(ours.finish(), arrows.finish());
        }
    }

    /// The same for strings; a value left unfinished when a NULL comes is dropped.
    #[test]
    fn string_columns_equal_arrows_builder() {
        let mut ours = Strings::default();
        let mut arrows = arrow::array::StringBuilder::new();
        let batches: [&[Option<&str>]; 4] = [
            &[Some("a"), None, None, Some(""), Some("ünï"), None],
            &[None, Some("b")],
            &[Some("c"), Some("dd")],
            &[],
        ];
        for batch in batches {
            for value in batch {
                match value {
                    Some(v) => {
                        ours.append_value(v);
                        arrows.append_value(v);
                    }
                    None => {
                        ours.append_piece("dropped");
                        ours.append_null();
                        arrows.append_null();
                    }
                }
            }
            ours.append_nulls(2);
            arrows.append_nulls(2);
            assert_eq!(ours.finish().unwrap(), arrows.finish());
        }
    }

    #[test]
    fn decimals_round_half_up_and_overflow_to_null() {
        assert_eq!(parse_decimal("4.00", 10, 2), Ok(Some(400)));
        assert_eq!(parse_decimal("4", 10, 2), Ok(Some(400)));
        assert_eq!(parse_decimal("1.005", 10, 2), Ok(Some(101)));
        assert_eq!(parse_decimal("-1.004", 10, 2), Ok(Some(-100)));
        assert_eq!(parse_decimal("1e2", 10, 0), Ok(Some(100)));
        assert_eq!(parse_decimal("123456", 5, 2), Ok(None));
        assert_eq!(parse_decimal("0.004", 10, 2), Ok(Some(0)));
        assert_eq!(parse_decimal("0.005", 10, 2), Ok(Some(1)));
        assert!(parse_decimal("x", 10, 2).is_err());
    }

    #[test]
    fn timestamps_parse_in_sql_and_iso_style() {
        let ms = |s, style| parse_timestamp(s, style, false).map(|n| n / 1_000_000);
        assert_eq!(
            ms("2020-04-15 08:05:00", TimestampStyle::Sql),
            Ok(1_586_937_900_000)
        );
        assert_eq!(
            ms("2020-04-15 08:05:00.5", TimestampStyle::Sql),
            Ok(1_586_937_900_500)
        );
        assert_eq!(
            ms("2020-04-15T08:05:00", TimestampStyle::Iso),
            Ok(1_586_937_900_000)
        );
        assert!(ms("2020-04-15T08:05:00", TimestampStyle::Sql).is_err());
        assert!(ms("2020-04-15 08:05", TimestampStyle::Sql).is_err());
        assert!(ms("2020-02-30 08:05:00", TimestampStyle::Sql).is_err());
    }

    /// The digits-only shortcut gives what the general parser gives, and leaves every other
    /// text to it.
    #[test]
    fn the_timestamp_shortcut_agrees_with_the_general_parser() {
        let general = parse_timestamp_fields;
        for t in [
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.218",
            "2024-02-29T23:59:59.999999999",
            "1969-12-31T23:59:59.5",
            "0001-01-01T00:00:00.000000001",
            "9999-12-31T23:59:59",
            "2023-02-29T00:00:00",
            "2024-13-01T00:00:00",
            "2024-00-01T00:00:00",
            "2024-01-00T00:00:00",
            "2024-01-01T24:00:00",
            "2024-01-01T00:60:00",
            "2024-01-01T00:00:60",
            "2024-01-01T00:00:00.",
            "2024-01-01T00:00:00.1234567890",
            "2024-01-01T00:00:00Z",
            "2024-01-01 00:00:00",
            "2024-1-01T00:00:00",
            "+024-01-01T00:00:00",
            "2024-01-01T0:00:00",
            "2024-01-01T+1:00:00",
            "2024-01-01T00:00:00.+1",
            "2a24-01-01T00:00:00",
            "2024-01-0:T00:00:00",
            "2024-01-01T00:00:0/",
            "2024-01-01T00:00:00.2a8",
        ] {
            let fast = parse_timestamp_digits(t.as_bytes(), b'T');
            if fast.is_some() {
                assert_eq!(fast, general(t, 'T'), "{t}");
            }
            assert_eq!(
                parse_timestamp(t, TimestampStyle::Iso, false).ok(),
                general(t, 'T'),
                "{t}"
            );
        }
        // The shortcut does take the common shapes (in either style).
        for (t, sep) in [
            ("2024-01-01T00:00:00.218", b'T'),
            ("2024-02-29T23:59:59.999999999", b'T'),
            ("1970-01-01T00:00:00.000000001", b'T'),
            ("2100-12-31 23:59:59", b' '),
        ] {
            let fast = parse_timestamp_digits(t.as_bytes(), sep);
            assert!(fast.is_some(), "{t}");
            assert_eq!(fast, general(t, char::from(sep)), "{t}");
        }
    }
}

#[cfg(test)]
mod json_row_tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::{Field, Int32Type, Int64Type};

    #[test]
    fn escaped_strings_resolve_into_the_column_and_an_unresolvable_escape_is_a_null_and_an_error() {
        let mut b = Strings::default();
        append_escaped_string(&mut b, r#"a\"b\\c\/d\n"#).unwrap();
        append_escaped_string(&mut b, r#"\t"#).unwrap();
        let e = append_escaped_string(&mut b, r#"x\u0041y"#).unwrap_err();
        assert!(e.contains("unsupported escape"), "{e}");
        append_escaped_string(&mut b, "after").unwrap();
        let column = b.finish().unwrap();
        assert_eq!(column.len(), 4);
        assert_eq!(column.value(0), "a\"b\\c/d\n");
        assert_eq!(column.value(1), "\t");
        assert!(column.is_null(2));
        assert_eq!(column.value(3), "after");
    }

    fn row_builder() -> ColumnBuilder {
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        ColumnBuilder::new(&DataType::Struct(fields)).unwrap()
    }

    #[test]
    fn json_objects_fill_rows_and_null_rows_null_their_fields() {
        let mut b = row_builder();
        let style = TimestampStyle::Sql;
        b.append_json(&serde_json::json!({"a": 1, "s": "x"}), style)
            .unwrap();
        b.append_json(&serde_json::Value::Null, style).unwrap();
        b.append_json(&serde_json::json!({"a": 3}), style).unwrap();
        let err = b.append_json(&serde_json::json!({"a": "nope", "s": "y"}), style);
        assert!(err.unwrap_err().contains("field 'a'"));
        let err = b.append_json(&serde_json::json!(5), style);
        assert!(err.is_err());
        let array = b.finish().unwrap();
        let rows = array.as_struct();
        assert_eq!(rows.len(), 5);
        let valid: Vec<bool> = (0..5).map(|i| rows.is_valid(i)).collect();
        // A bad field is NULL in a row that stays; a value that is no object is a NULL row.
        assert_eq!(valid, [true, false, true, true, false]);
        let a = rows.column(0).as_primitive::<Int32Type>();
        assert_eq!(a.value(0), 1);
        assert!(a.is_null(1) && a.is_null(3) && a.is_null(4));
        let s = rows.column(1).as_string::<i32>();
        assert!(s.is_null(2) && s.is_null(4));
        assert_eq!(s.value(3), "y");
    }

    fn list_of(element: DataType) -> DataType {
        DataType::List(Arc::new(Field::new("item", element, true)))
    }

    #[test]
    fn json_arrays_fill_lists_with_bad_elements_as_null() {
        let mut b = ColumnBuilder::new(&list_of(DataType::Int64)).unwrap();
        let style = TimestampStyle::Sql;
        b.append_json_text("[1,null,3]", style).unwrap();
        b.append_json_text("null", style).unwrap();
        b.append_json_text("[]", style).unwrap();
        let err = b.append_json_text(r#"[4,"x"]"#, style).unwrap_err();
        assert!(err.contains("array element"), "{err}");
        assert!(b.append_json_text(r#""text""#, style).is_err());
        let array = b.finish().unwrap();
        let lists = array.as_list::<i32>();
        let valid: Vec<bool> = (0..5).map(|i| lists.is_valid(i)).collect();
        assert_eq!(valid, [true, false, true, true, false]);
        assert_eq!(lists.value_offsets(), &[0, 3, 3, 3, 5, 5]);
        let values = lists.values().as_primitive::<Int64Type>();
        let values: Vec<Option<i64>> = values.iter().collect();
        assert_eq!(values, [Some(1), None, Some(3), Some(4), None]);
    }

    #[test]
    fn json_objects_fill_maps_and_a_bad_key_nulls_the_map() {
        let entries = Fields::from(vec![
            Field::new("key", DataType::Int32, false),
            Field::new("value", DataType::Utf8, true),
        ]);
        let map_type = DataType::Map(
            Arc::new(Field::new("entries", DataType::Struct(entries), false)),
            false,
        );
        let mut b = ColumnBuilder::new(&map_type).unwrap();
        let style = TimestampStyle::Sql;
        b.append_json_text(r#"{"1":"a","2":null}"#, style).unwrap();
        assert!(b.append_json_text(r#"{"x":"b","3":"c"}"#, style).is_err());
        b.append_json_text("null", style).unwrap();
        let array = b.finish().unwrap();
        let maps = array.as_map();
        let valid: Vec<bool> = (0..3).map(|i| maps.is_valid(i)).collect();
        assert_eq!(valid, [true, false, false]);
        let keys: Vec<Option<i32>> = maps.keys().as_primitive::<Int32Type>().iter().collect();
        assert_eq!(keys, [Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn csv_fields_split_into_arrays_and_empty_fields_are_empty_arrays() {
        let mut b = ColumnBuilder::new(&list_of(DataType::Int32)).unwrap();
        let style = TimestampStyle::Sql;
        b.append_csv_text("1|2|3", "|", style).unwrap();
        b.append_csv_text("", "|", style).unwrap();
        assert!(b.append_csv_text("4||x", "|", style).is_err());
        let array = b.finish().unwrap();
        let lists = array.as_list::<i32>();
        assert_eq!(lists.value_offsets(), &[0, 3, 3, 6]);
        assert!((0..3).all(|i| lists.is_valid(i)));
        let values: Vec<Option<i32>> = lists.values().as_primitive::<Int32Type>().iter().collect();
        assert_eq!(values, [Some(1), Some(2), Some(3), Some(4), None, None]);
    }
}

#[cfg(test)]
mod json_text_tests {
    use super::*;
    use arrow::datatypes::Field;

    /// Appending raw text must give exactly what appending the parsed value gives.
    #[test]
    fn raw_text_appends_like_parsed_values() {
        let row = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let types = [
            DataType::Utf8,
            DataType::Boolean,
            DataType::Int8,
            DataType::Int32,
            DataType::Int64,
            DataType::Float32,
            DataType::Float64,
            DataType::Decimal128(10, 2),
            DataType::Timestamp(TimeUnit::Millisecond, None),
            row,
        ];
        let raws = [
            "null",
            "\"text\"",
            "\"a\\\"b\\\\c\\n\"",
            "\"2024-01-01T00:00:00.5\"",
            "\"12\"",
            "12",
            "-7",
            "300",
            "99999999999999999999999",
            "1.25",
            "-0.5e3",
            "1E99",
            "true",
            "false",
            "[1, 2]",
            "{\"a\": 5, \"s\": \"x\"}",
            "{\"a\": \"nope\"}",
            "{\"s\": null, \"a\": 1, \"a\": 2}",
            "{}",
        ];
        for data_type in &types {
            for style in [TimestampStyle::Sql, TimestampStyle::Iso] {
                let mut fast = ColumnBuilder::new(data_type).unwrap();
                let mut slow = ColumnBuilder::new(data_type).unwrap();
                for raw in raws {
                    let value: serde_json::Value = serde_json::from_str(raw).unwrap();
                    assert_eq!(
                        fast.append_json_text(raw, style),
                        slow.append_json(&value, style),
                        "{data_type} {raw}"
                    );
                }
                assert_eq!(
                    fast.finish().unwrap().to_data(),
                    slow.finish().unwrap().to_data(),
                    "{data_type}"
                );
            }
        }
    }
}
