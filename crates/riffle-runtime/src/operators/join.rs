//! Regular streaming joins (Flink's `StreamingJoinOperator` and `StreamingSemiAntiJoinOperator`)
//! and what every join operator shares: key encoding, the residual condition, padded output.
//!
//! A regular join keeps every row of both sides, grouped by join key. A row of one side is
//! matched against the rows of the other side with the same key that pass the residual
//! condition. Outer sides remember how many matches each row has, so that the padded row
//! (`+I[row, null]`) is retracted with `-D` when the first match arrives and re-emitted when the
//! last match goes away; inner joins forward the input's change kind.

use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::hash_map::EntryRef;
use datafusion::common::{HashMap as FastMap, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::{JoinSpec, JoinType};

use super::aggregate::field_types;
use super::{evaluate, Emit, StreamOperator};
use crate::exchange::key_converter;
use crate::keyed_snapshot::{KeyedSnapshot, KeyedSnapshotWriter};
use crate::task::RuntimeError;

/// One side's view of a join: its key columns and which of them let NULL match NULL.
pub(super) struct JoinKeys {
    columns: Vec<usize>,
    null_safe: Vec<bool>,
    converter: RowConverter,
}

/// The join key of one row: its encoded bytes, and whether it can match at all (a NULL in a
/// key compared with `=` matches nothing).
pub(super) struct RowKey {
    pub(super) bytes: Box<[u8]>,
    pub(super) matchable: bool,
}

impl JoinKeys {
    /// The keys `columns` of an input with schema `input`.
    pub(super) fn new(
        columns: &[usize],
        null_safe: &[bool],
        input: &SchemaRef,
    ) -> Result<Self, RuntimeError> {
        let mut types = Vec::with_capacity(columns.len());
        for c in columns {
            match input.fields().get(*c) {
                Some(f) => types.push(f.data_type().clone()),
                None => return Err(RuntimeError::new("join key column out of range")),
            }
        }
        // No keys (a join on a condition only): every row has the same, empty key.
        if types.is_empty() {
            types.push(DataType::Int8);
        }
        Ok(Self {
            columns: columns.to_vec(),
            null_safe: null_safe.to_vec(),
            converter: key_converter(&types)?,
        })
    }

    /// The encoded keys of every row of `batch`, and which of them can match.
    pub(super) fn encode(&self, batch: &RecordBatch) -> Result<BatchKeys, RuntimeError> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            match batch.columns().get(*c) {
                Some(a) => columns.push(a.clone()),
                None => return Err(RuntimeError::new("join key column out of range")),
            }
        }
        if columns.is_empty() {
            columns.push(Arc::new(arrow::array::Int8Array::from(vec![0i8; rows])));
        }
        let encoded = self.converter.convert_columns(&columns)?;
        let mut matchable = vec![true; rows];
        for (safe, a) in self.null_safe.iter().zip(&columns).take(self.columns.len()) {
            if let Some(nulls) = a.nulls().filter(|_| !*safe) {
                for (m, valid) in matchable.iter_mut().zip(nulls.iter()) {
                    *m &= valid;
                }
            }
        }
        Ok(BatchKeys {
            rows: encoded,
            matchable,
        })
    }

    /// The keys of every row of `batch`.
    pub(super) fn keys(&self, batch: &RecordBatch) -> Result<Vec<RowKey>, RuntimeError> {
        let keys = self.encode(batch)?;
        Ok(keys
            .matchable
            .iter()
            .enumerate()
            .map(|(row, matchable)| RowKey {
                bytes: Box::from(keys.rows.row(row).data()),
                matchable: *matchable,
            })
            .collect())
    }
}

/// The join keys of the rows of a batch.
pub(super) struct BatchKeys {
    /// The encoded key of every row.
    pub(super) rows: Rows,
    /// Whether each row can match at all (a NULL in a key compared with `=` matches nothing).
    pub(super) matchable: Vec<bool>,
}

/// The values of row `row` of `batch`.
pub(super) fn row_values(
    batch: &RecordBatch,
    row: usize,
) -> Result<Vec<ScalarValue>, RuntimeError> {
    batch
        .columns()
        .iter()
        .map(|c| Ok(ScalarValue::try_from_array(c.as_ref(), row)?))
        .collect()
}

/// Typed NULLs for every column of `schema` (the padding of an outer join).
pub(super) fn nulls(schema: &SchemaRef) -> Result<Vec<ScalarValue>, RuntimeError> {
    schema
        .fields()
        .iter()
        .map(|f| Ok(ScalarValue::try_from(f.data_type())?))
        .collect()
}

/// The residual join condition, evaluated on (left row, right row) pairs.
pub(super) struct PairCondition {
    expr: Option<Arc<dyn PhysicalExpr>>,
    /// Left columns followed by right columns.
    schema: SchemaRef,
}

impl PairCondition {
    /// A condition over `schema` (the left then the right columns); `None` accepts every pair.
    pub(super) fn new(expr: Option<Arc<dyn PhysicalExpr>>, schema: SchemaRef) -> Self {
        Self { expr, schema }
    }

    /// For every candidate, whether (`row`, candidate) satisfies the condition; `row` is a row
    /// of the left side when `row_is_left`, else of the right side.
    pub(super) fn test<'a>(
        &self,
        row: &[ScalarValue],
        row_is_left: bool,
        candidates: impl ExactSizeIterator<Item = &'a [ScalarValue]> + Clone,
    ) -> Result<Vec<bool>, RuntimeError> {
        let n = candidates.len();
        let Some(expr) = &self.expr else {
            return Ok(vec![true; n]);
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        let width = candidates.clone().next().map_or(0, |c| c.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(row.len() + width);
        let repeated = |columns: &mut Vec<ArrayRef>| -> Result<(), RuntimeError> {
            for v in row {
                columns.push(v.to_array_of_size(n)?);
            }
            Ok(())
        };
        let gathered = |columns: &mut Vec<ArrayRef>| -> Result<(), RuntimeError> {
            for i in 0..width {
                let values = candidates.clone().map(|c| c[i].clone());
                columns.push(ScalarValue::iter_to_array(values)?);
            }
            Ok(())
        };
        if row_is_left {
            repeated(&mut columns)?;
            gathered(&mut columns)?;
        } else {
            gathered(&mut columns)?;
            repeated(&mut columns)?;
        }
        self.evaluate(expr, columns, n)
    }

    /// Whether every pair passes (there is no residual condition).
    pub(super) fn accepts_all(&self) -> bool {
        self.expr.is_none()
    }

    /// For each of `n` pairs given as the left then the right columns, whether it satisfies
    /// the condition.
    pub(super) fn test_columns(
        &self,
        columns: Vec<ArrayRef>,
        n: usize,
    ) -> Result<Vec<bool>, RuntimeError> {
        match &self.expr {
            Some(expr) => self.evaluate(expr, columns, n),
            None => Ok(vec![true; n]),
        }
    }

    /// Evaluates the condition over `n` pairs given as the left then the right columns.
    fn evaluate(
        &self,
        expr: &Arc<dyn PhysicalExpr>,
        mut columns: Vec<ArrayRef>,
        n: usize,
    ) -> Result<Vec<bool>, RuntimeError> {
        // Arrays built from scalars may differ in nullability or dictionary-ness: cast to the
        // declared types.
        for (column, field) in columns.iter_mut().zip(self.schema.fields()) {
            if column.data_type() != field.data_type() {
                *column = arrow::compute::cast(column, field.data_type())?;
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let mask = evaluate(expr, &batch)?;
        let Some(mask) = mask.as_boolean_opt() else {
            return Err(RuntimeError::new("join condition is not boolean"));
        };
        Ok((0..n).map(|i| mask.is_valid(i) && mask.value(i)).collect())
    }
}

/// A stored row: where its columns (in Arrow's row format) are in its side's arena, the next
/// row of its key, how many copies of it are held, and (outer and semi/anti sides) how many
/// rows of the other side it matches.
///
/// Slots are 32 bits (a side holds fewer than 2³² rows; the slab of 32-byte slots would take
/// 128 GiB before that): a smaller slot means fewer cache misses and less to copy as the
/// slab grows, which the join's cost is made of when it holds millions of rows.
struct Stored {
    at: ArenaSpan,
    /// The slot of the next row of the same key (or of the next free slot), [`NONE`] at the end.
    next: Slot,
    count: u64,
    associations: u64,
}

// The layout the comments above rely on.
const _: () = assert!(std::mem::size_of::<Stored>() == 32);
const _: () = assert!(std::mem::size_of::<(Key, KeyRows)>() == 32);

/// The index of a [`Stored`] row in its side's slab.
type Slot = u32;

/// The end of a chain of slots.
const NONE: Slot = Slot::MAX;

/// Slots per page of a [`Slab`] (512 KiB of slots).
const SLAB_PAGE: usize = 1 << 14;

/// Stored rows by slot, in pages that never move: growing the slab copies nothing (a single
/// doubling vector would copy every slot and fault fresh pages in each time it grows).
#[derive(Default)]
struct Slab {
    pages: Vec<Vec<Stored>>,
}

impl Slab {
    /// The page of `slot` and its place in the page.
    fn place(slot: Slot) -> (usize, usize) {
        let slot = slot as usize;
        (slot / SLAB_PAGE, slot % SLAB_PAGE)
    }

    fn get(&self, slot: Slot) -> Option<&Stored> {
        let (page, at) = Self::place(slot);
        self.pages.get(page)?.get(at)
    }

    fn get_mut(&mut self, slot: Slot) -> Option<&mut Stored> {
        let (page, at) = Self::place(slot);
        self.pages.get_mut(page)?.get_mut(at)
    }

    /// Slots in use or free.
    fn len(&self) -> usize {
        self.pages
            .last()
            .map_or(0, |last| (self.pages.len() - 1) * SLAB_PAGE + last.len())
    }

    /// Stores `stored` in a new slot.
    fn push(&mut self, stored: Stored) -> Result<Slot, RuntimeError> {
        let slot = Slot::try_from(self.len())
            .ok()
            .filter(|slot| *slot != NONE)
            .ok_or_else(|| {
                RuntimeError::new("a join side holds more rows than it can (2³² - 1)")
            })?;
        match self.pages.last_mut() {
            Some(page) if page.len() < SLAB_PAGE => page.push(stored),
            _ => {
                let mut page = Vec::with_capacity(SLAB_PAGE);
                page.push(stored);
                self.pages.push(page);
            }
        }
        Ok(slot)
    }
}

// Slots handed out by the slab itself, so indexing with one finds a row.
impl std::ops::Index<Slot> for Slab {
    type Output = Stored;

    fn index(&self, slot: Slot) -> &Stored {
        let (page, at) = Self::place(slot);
        &self.pages[page][at]
    }
}

impl std::ops::IndexMut<Slot> for Slab {
    fn index_mut(&mut self, slot: Slot) -> &mut Stored {
        let (page, at) = Self::place(slot);
        &mut self.pages[page][at]
    }
}

/// Where a stored row's bytes are in an [`Arena`].
#[derive(Clone, Copy)]
struct ArenaSpan {
    chunk: u32,
    offset: u32,
    len: u32,
}

/// Bytes of stored rows, appended to chunks that never move: growing the arena copies
/// nothing (a single doubling buffer would copy every row and fault its pages in twice).
#[derive(Default)]
struct Arena {
    chunks: Vec<Vec<u8>>,
    /// Bytes in all chunks.
    len: usize,
}

/// Sizes of arena chunks: they double from the first to the last size (so that small state
/// stays small), and a longer row gets a chunk of its own.
const ARENA_CHUNKS: std::ops::RangeInclusive<usize> = (1 << 12)..=(1 << 20);

impl Arena {
    /// Appends `bytes` (a row of up to 4 GiB).
    fn push(&mut self, bytes: &[u8]) -> Result<ArenaSpan, RuntimeError> {
        let len = u32::try_from(bytes.len()).map_err(|_| {
            RuntimeError::new(format!(
                "a join input row of {} bytes is longer than a join can hold (4 GiB)",
                bytes.len()
            ))
        })?;
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= bytes.len());
        if !fits {
            let size = self
                .len
                .clamp(*ARENA_CHUNKS.start(), *ARENA_CHUNKS.end())
                .max(bytes.len());
            self.chunks.push(Vec::with_capacity(size));
        }
        let chunk = self.chunks.len() - 1;
        let buffer = &mut self.chunks[chunk];
        // A chunk holds at most 1 MiB or one row, so offsets within it fit as lengths do.
        let offset = buffer.len() as u32;
        buffer.extend_from_slice(bytes);
        self.len += bytes.len();
        Ok(ArenaSpan {
            chunk: u32::try_from(chunk)
                .map_err(|_| RuntimeError::new("a join side holds more than 2³² arena chunks"))?,
            offset,
            len,
        })
    }

    fn get(&self, at: ArenaSpan) -> &[u8] {
        let start = at.offset as usize;
        &self.chunks[at.chunk as usize][start..start + at.len as usize]
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Longest join key kept inline in the key map (an encoded number takes 9 bytes, a string of
/// up to 8 bytes 10).
const INLINE_KEY: usize = 14;

/// A join key as held by the key map, in 16 bytes: short keys inline, so that finding one
/// compares bytes held in the map itself and dropping the map frees nothing per key; longer
/// ones behind a thin pointer.
enum Key {
    Inline { len: u8, bytes: [u8; INLINE_KEY] },
    Heap(Box<Box<[u8]>>),
}

impl Key {
    fn bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Key::Heap(bytes) => bytes,
        }
    }
}

impl From<&[u8]> for Key {
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_KEY => {
                let mut bytes = [0; INLINE_KEY];
                bytes[..key.len()].copy_from_slice(key);
                Key::Inline { len, bytes }
            }
            _ => Key::Heap(Box::new(Box::from(key))),
        }
    }
}

// Hashed and compared as its bytes, so that the map is searched with borrowed bytes.
impl std::borrow::Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Key {}

/// The rows of one join side by join key (in memory; the seam for a keyed state backend).
///
/// Rows are kept in Arrow's row format, encoded exactly as [`ScalarCodec`](crate::state_codec::ScalarCodec)
/// encodes a row (so checkpoints keep their format), back to back in one arena: storing a row
/// is a copy and dropping the state a few frees. Each row has a slot in one slab; the rows of a
/// key are chained through their slots in arrival order (the order joined rows are emitted in).
/// Removed rows leave their bytes in the arena until garbage makes up half of it.
struct SideRows {
    /// Encodes every column of the side.
    converter: RowConverter,
    types: Vec<DataType>,
    keys: FastMap<Key, KeyRows>,
    /// Slot of a row by the hash of its bytes, for keys with [`INDEX_FROM`] rows or more, by
    /// the first slot of the key (built when first needed, dropped when a row of the key is
    /// removed). Rows whose hash collides with an indexed one are not indexed and are found by
    /// a linear search. Kept apart from [`KeyRows`] so that the key map's entries stay small.
    indexes: FastMap<Slot, FastMap<u64, Slot>>,
    slots: Slab,
    /// The first slot of removed rows (chained through `next`), reused before the slab grows.
    free: Slot,
    arena: Arena,
    /// Bytes of the arena no row uses.
    garbage: usize,
    /// The side's input only inserts, so a row is stored without looking for a copy of it
    /// (copies are separate rows). Nothing is lost if it does retract: `retract` finds any copy.
    insert_only: bool,
}

/// A key holding at least this many distinct rows finds a row through a hash index instead of
/// comparing it with every row (keys such as q7's price hold thousands of rows).
const INDEX_FROM: u32 = 16;

/// Rows whose state entries are read ahead together by [`SideRows::warm`]: their cache lines
/// (a few per row) stay well inside a core's L2 cache until the rows are joined.
const WARM_ROWS: usize = 256;

/// Sides with fewer keys than this fit the caches, and are not read ahead.
const WARM_FROM_KEYS: usize = 1 << 15;

/// Removed rows' bytes are compacted away once there are at least this many (and they make
/// up half of the arena).
const COMPACT_FROM: usize = 1 << 16;

/// The distinct rows of one join key: the chain of their slots.
struct KeyRows {
    head: Slot,
    tail: Slot,
    len: u32,
}

impl KeyRows {
    const EMPTY: KeyRows = KeyRows {
        head: NONE,
        tail: NONE,
        len: 0,
    };
}

/// The slots of a key's rows, in arrival order.
struct Chain<'a> {
    slots: &'a Slab,
    next: Slot,
}

impl<'a> Iterator for Chain<'a> {
    type Item = (Slot, &'a Stored);

    fn next(&mut self) -> Option<Self::Item> {
        let slot = self.next;
        let stored = self.slots.get(slot)?;
        self.next = stored.next;
        Some((slot, stored))
    }
}

/// The bytes of `stored` in `arena`.
fn stored_bytes<'a>(arena: &'a Arena, stored: &Stored) -> &'a [u8] {
    arena.get(stored.at)
}

impl KeyRows {
    fn chain<'a>(&self, slots: &'a Slab) -> Chain<'a> {
        Chain {
            slots,
            next: self.head,
        }
    }

    /// The slot of `row` (of the side with slab `slots`, arena `arena` and indexes
    /// `indexes`).
    fn find(
        &self,
        indexes: &mut FastMap<Slot, FastMap<u64, Slot>>,
        slots: &Slab,
        arena: &Arena,
        row: &[u8],
    ) -> Option<Slot> {
        let search = || {
            self.chain(slots)
                .find(|(_, s)| stored_bytes(arena, s) == row)
                .map(|(slot, _)| slot)
        };
        if self.len < INDEX_FROM {
            return search();
        }
        let index = indexes.entry(self.head).or_insert_with(|| {
            let mut index = FastMap::with_capacity(self.len as usize);
            for (slot, s) in self.chain(slots) {
                let hash = index.hasher().hash_one(stored_bytes(arena, s));
                index.entry(hash).or_insert(slot);
            }
            index
        });
        match index.get(&index.hasher().hash_one(row)) {
            Some(&slot) if stored_bytes(arena, &slots[slot]) == row => Some(slot),
            // A collision: the row may be held without being indexed.
            Some(_) => search(),
            None => None,
        }
    }
}

/// The rows of an input batch in a side's row format.
struct BatchRows(Option<Rows>);

impl BatchRows {
    /// The bytes of row `row` (empty when the side has no columns).
    fn row(&self, row: usize) -> &[u8] {
        self.0.as_ref().map_or(&[], |rows| rows.row(row).data())
    }
}

impl SideRows {
    fn new(schema: &SchemaRef, insert_only: bool) -> Result<Self, RuntimeError> {
        let types = field_types(schema);
        // The same fields as `ScalarCodec::new`: stored rows are checkpointed as is.
        let converter =
            RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())?;
        Ok(Self {
            converter,
            types,
            keys: FastMap::default(),
            indexes: FastMap::default(),
            slots: Slab::default(),
            free: NONE,
            arena: Arena::default(),
            garbage: 0,
            insert_only,
        })
    }

    /// Every row of `batch` (a batch of this side) in the row format.
    fn encode(&self, batch: &RecordBatch) -> Result<BatchRows, RuntimeError> {
        if self.types.is_empty() {
            return Ok(BatchRows(None));
        }
        let mut columns = batch.columns().to_vec();
        for (column, t) in columns.iter_mut().zip(&self.types) {
            if column.data_type() != t {
                *column = arrow::compute::cast(column, t)?;
            }
        }
        Ok(BatchRows(Some(self.converter.convert_columns(&columns)?)))
    }

    /// The columns of `rows` (rows of this side), with the side's declared types.
    fn decode(&self, rows: &[&[u8]]) -> Result<Vec<ArrayRef>, RuntimeError> {
        if self.types.is_empty() {
            return Ok(Vec::new());
        }
        let parser = self.converter.parser();
        let mut columns = self
            .converter
            .convert_rows(rows.iter().map(|r| parser.parse(r)))?;
        for (column, t) in columns.iter_mut().zip(&self.types) {
            if column.data_type() != t {
                *column = arrow::compute::cast(column, t)?;
            }
        }
        Ok(columns)
    }

    /// The slots and bytes of the rows of `key`, in arrival order.
    fn rows_of<'a>(&'a self, key: &[u8]) -> impl Iterator<Item = (Slot, &'a [u8])> + 'a {
        let chain = match self.keys.get(key) {
            Some(rows) => rows.chain(&self.slots),
            None => KeyRows::EMPTY.chain(&self.slots),
        };
        chain.map(|(slot, s)| (slot, stored_bytes(&self.arena, s)))
    }

    /// Reads the key-map entries and chain tails that rows `rows` (keys `keys` of this side)
    /// will update, before they are joined one at a time. In a state larger than the caches
    /// each is a cache miss; read back to back, the misses overlap (the lookups do not depend
    /// on each other), where one row at a time they come one after another.
    fn warm(&self, keys: &Rows, rows: Range<usize>) {
        if self.keys.len() < WARM_FROM_KEYS {
            return;
        }
        let mut seen = 0u64;
        for row in rows {
            if let Some(held) = self.keys.get(keys.row(row).data()) {
                seen = seen.wrapping_add(self.slots.get(held.tail).map_or(0, |s| s.count));
            }
        }
        // Keeps the reads, which are done only for their effect on the caches.
        std::hint::black_box(seen);
    }

    /// Appends `row` (not held yet) to the rows `rows` of a key.
    #[allow(clippy::too_many_arguments)]
    fn append(
        indexes: &mut FastMap<Slot, FastMap<u64, Slot>>,
        slots: &mut Slab,
        free: &mut Slot,
        arena: &mut Arena,
        rows: &mut KeyRows,
        row: &[u8],
        count: u64,
        associations: u64,
    ) -> Result<(), RuntimeError> {
        let stored = Stored {
            at: arena.push(row)?,
            next: NONE,
            count,
            associations,
        };
        let slot = match slots.get_mut(*free) {
            Some(reused) => {
                let slot = *free;
                *free = reused.next;
                *reused = stored;
                slot
            }
            None => slots.push(stored)?,
        };
        match slots.get_mut(rows.tail) {
            Some(tail) => tail.next = slot,
            None => rows.head = slot,
        }
        rows.tail = slot;
        rows.len += 1;
        // Insert-only sides never search, so they never index: skip the lookup.
        let index = if indexes.is_empty() {
            None
        } else {
            indexes.get_mut(&rows.head)
        };
        if let Some(index) = index {
            let hash = index.hasher().hash_one(row);
            index.entry(hash).or_insert(slot);
        }
        Ok(())
    }

    /// Adds one copy of `row`; its match count becomes `associations` (as Flink's state
    /// views do).
    fn add(&mut self, key: &[u8], row: &[u8], associations: u64) -> Result<(), RuntimeError> {
        let Self {
            keys,
            indexes,
            slots,
            free,
            arena,
            insert_only,
            ..
        } = self;
        // Look up by borrowed bytes; build the key only for a new key.
        let rows = match keys.entry_ref(key) {
            EntryRef::Occupied(e) => e.into_mut(),
            EntryRef::Vacant(e) => e.insert_with_key(Key::from(key), KeyRows::EMPTY),
        };
        let held = if *insert_only {
            None
        } else {
            rows.find(indexes, slots, arena, row)
        };
        match held {
            Some(slot) => {
                let s = &mut slots[slot];
                s.count += 1;
                s.associations = associations;
                Ok(())
            }
            None => Self::append(indexes, slots, free, arena, rows, row, 1, associations),
        }
    }

    /// Removes one copy of `row` (nothing when it is not held).
    fn retract(&mut self, key: &[u8], row: &[u8]) -> Result<(), RuntimeError> {
        let Some(rows) = self.keys.get_mut(key) else {
            return Ok(());
        };
        let Some(slot) = rows.find(&mut self.indexes, &self.slots, &self.arena, row) else {
            return Ok(());
        };
        let s = &mut self.slots[slot];
        s.count -= 1;
        if s.count > 0 {
            return Ok(());
        }
        // A row colliding with the removed one's hash may not be indexed: index again.
        self.indexes.remove(&rows.head);
        // Unlink the slot from its key's chain and free it.
        let next = s.next;
        let previous = rows
            .chain(&self.slots)
            .find(|(_, s)| s.next == slot)
            .map(|(previous, _)| previous);
        match previous {
            Some(previous) => self.slots[previous].next = next,
            None => rows.head = next,
        }
        if rows.tail == slot {
            rows.tail = previous.unwrap_or(NONE);
        }
        rows.len -= 1;
        let s = &mut self.slots[slot];
        s.next = self.free;
        self.free = slot;
        self.garbage += s.at.len as usize;
        if rows.len == 0 {
            self.keys.remove(key);
        }
        if self.keys.is_empty() {
            // Nothing held: start over (and give the memory back).
            self.slots = Slab::default();
            self.free = NONE;
            self.arena = Arena::default();
            self.garbage = 0;
        } else if self.garbage >= COMPACT_FROM && self.garbage * 2 >= self.arena.len() {
            self.compact()?;
        }
        Ok(())
    }

    /// Moves the bytes of every held row to a new arena, key by key.
    fn compact(&mut self) -> Result<(), RuntimeError> {
        let mut arena = Arena::default();
        for rows in self.keys.values() {
            let mut slot = rows.head;
            while let Some(s) = self.slots.get_mut(slot) {
                s.at = arena.push(stored_bytes(&self.arena, s))?;
                slot = s.next;
            }
        }
        self.arena = arena;
        self.garbage = 0;
        Ok(())
    }
}

/// A row of the other side that matches an input row.
#[derive(Clone, Copy)]
struct Match {
    /// Its slot in the other side's rows.
    slot: Slot,
    /// Its row in [`Probe::columns`].
    candidate: u32,
}

/// Most (input row, stored row) pairs probed at once: bounds the memory of one probe.
const PROBE_PAIRS: usize = 8192;

/// The rows of the other side that match the input rows `start..end` of a batch.
struct Probe {
    end: usize,
    /// Input row `start + i` matches `matches[bounds[i]..bounds[i + 1]]`.
    bounds: Vec<usize>,
    matches: Vec<Match>,
    /// The other side's columns of every candidate row.
    columns: Vec<ArrayRef>,
}

impl Probe {
    fn of(&self, start: usize, row: usize) -> &[Match] {
        let i = row - start;
        &self.matches[self.bounds[i]..self.bounds[i + 1]]
    }
}

/// Joined rows to emit, each from an input row and a stored row of the other side, either
/// of which may be absent (NULL padding, or not part of a semi/anti join's output).
#[derive(Default)]
struct Joined {
    kinds: Vec<RowKind>,
    input: Vec<Option<u32>>,
    other: Vec<Option<u32>>,
}

impl Joined {
    fn push(&mut self, kind: RowKind, input: Option<usize>, other: Option<u32>) {
        self.kinds.push(kind);
        self.input.push(input.map(|r| r as u32));
        self.other.push(other);
    }
}

/// The rows of `columns` (of types `types`) at `indices`; a NULL index gives a NULL.
fn gather(
    columns: &[ArrayRef],
    types: &[DataType],
    indices: &UInt32Array,
) -> Result<Vec<ArrayRef>, RuntimeError> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| match columns.get(i) {
            // `take` reads a NULL index's slot too, so an empty source gives NULLs directly.
            Some(c) if !c.is_empty() => Ok(take(c.as_ref(), indices, None)?),
            _ => Ok(new_null_array(t, indices.len())),
        })
        .collect()
}

/// Regular join (inner, outer, semi, anti) over two possibly updating inputs.
pub struct Join {
    join_type: JoinType,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    sides: [SideRows; 2],
    schema: SchemaRef,
}

impl Join {
    /// Builds the operator; `combined` is the schema of the condition (left then right
    /// columns), `insert_only` tells which inputs only insert rows.
    pub fn new(
        spec: &JoinSpec,
        condition: Option<Arc<dyn PhysicalExpr>>,
        inputs: [&SchemaRef; 2],
        insert_only: [bool; 2],
        combined: SchemaRef,
        schema: SchemaRef,
    ) -> Result<Self, RuntimeError> {
        Ok(Self {
            join_type: spec.join_type,
            keys: [
                JoinKeys::new(&spec.left_keys, &spec.null_safe, inputs[0])?,
                JoinKeys::new(&spec.right_keys, &spec.null_safe, inputs[1])?,
            ],
            condition: PairCondition::new(condition, combined),
            sides: [
                SideRows::new(inputs[0], insert_only[0])?,
                SideRows::new(inputs[1], insert_only[1])?,
            ],
            schema,
        })
    }

    fn outer(&self, side: usize) -> bool {
        if side == 0 {
            self.join_type.left_outer()
        } else {
            self.join_type.right_outer()
        }
    }

    /// The side `side` itself and the other side.
    fn split(sides: &mut [SideRows; 2], side: usize) -> (&mut SideRows, &mut SideRows) {
        let [left, right] = sides;
        if side == 0 {
            (left, right)
        } else {
            (right, left)
        }
    }

    /// Finds the stored rows of the other side that match the input rows from `start` on (of
    /// side `side`), for as many rows as fit in [`PROBE_PAIRS`] pairs (at least one): one
    /// decoding of the candidates and one evaluation of the condition for all of them.
    ///
    /// The other side does not change while a batch of this side is processed (only its
    /// match counts do, which are read when the rows are joined), so the matches can be
    /// found ahead of the rows.
    fn probe(
        &self,
        side: usize,
        batch: &RecordBatch,
        keys: &BatchKeys,
        start: usize,
    ) -> Result<Probe, RuntimeError> {
        let stored = &self.sides[1 - side];
        let mut rows: Vec<u32> = Vec::new();
        let mut found: Vec<Match> = Vec::new();
        let mut candidates: Vec<&[u8]> = Vec::new();
        let mut pair_bounds = vec![0];
        let mut end = start;
        while end < batch.num_rows() && (end == start || candidates.len() < PROBE_PAIRS) {
            if keys.matchable[end] {
                for (slot, bytes) in stored.rows_of(keys.rows.row(end).data()) {
                    rows.push(end as u32);
                    found.push(Match {
                        slot,
                        candidate: candidates.len() as u32,
                    });
                    candidates.push(bytes);
                }
            }
            pair_bounds.push(candidates.len());
            end += 1;
        }
        if candidates.is_empty() {
            return Ok(Probe {
                end,
                bounds: pair_bounds,
                matches: found,
                columns: Vec::new(),
            });
        }
        let columns = stored.decode(&candidates)?;
        let passes = if self.condition.accepts_all() {
            None
        } else {
            let rows = UInt32Array::from(rows);
            let input = gather(batch.columns(), &self.sides[side].types, &rows)?;
            let pairs = if side == 0 {
                input.into_iter().chain(columns.iter().cloned()).collect()
            } else {
                columns.iter().cloned().chain(input).collect()
            };
            Some(self.condition.test_columns(pairs, candidates.len())?)
        };
        // Keep the pairs that pass, row by row.
        let mut bounds = Vec::with_capacity(pair_bounds.len());
        let mut matches = Vec::with_capacity(found.len());
        bounds.push(0);
        for w in pair_bounds.windows(2) {
            for (i, m) in found.iter().enumerate().take(w[1]).skip(w[0]) {
                if passes.as_ref().is_none_or(|p| p[i]) {
                    matches.push(*m);
                }
            }
            bounds.push(matches.len());
        }
        Ok(Probe {
            end,
            bounds,
            matches,
            columns,
        })
    }

    /// One row of an inner or outer join (Flink's `StreamingJoinOperator.processElement`):
    /// row `row` of side `side`, with key `key` and bytes `bytes`, matching `matched`.
    #[allow(clippy::too_many_arguments)]
    fn join_row(
        &mut self,
        side: usize,
        kind: RowKind,
        key: &[u8],
        row: usize,
        bytes: &[u8],
        matched: &[Match],
        out: &mut Joined,
    ) -> Result<(), RuntimeError> {
        let (input_outer, other_outer) = (self.outer(side), self.outer(1 - side));
        let (own, other) = Self::split(&mut self.sides, side);
        let copies: u64 = matched.iter().map(|m| other.slots[m.slot].count).sum();
        if kind.is_addition() {
            if other_outer {
                // The other side's rows lose their padded form on their first match.
                for m in matched {
                    let s = &mut other.slots[m.slot];
                    if s.associations == 0 {
                        for _ in 0..s.count {
                            out.push(RowKind::Delete, None, Some(m.candidate));
                        }
                    }
                    s.associations += 1;
                }
            }
            let out_kind = if input_outer || other_outer {
                RowKind::Insert
            } else {
                kind
            };
            if matched.is_empty() && input_outer {
                out.push(RowKind::Insert, Some(row), None);
            }
            for m in matched {
                for _ in 0..other.slots[m.slot].count {
                    out.push(out_kind, Some(row), Some(m.candidate));
                }
            }
            own.add(key, bytes, copies)?;
        } else {
            own.retract(key, bytes)?;
            if matched.is_empty() {
                if input_outer {
                    out.push(RowKind::Delete, Some(row), None);
                }
                return Ok(());
            }
            let out_kind = if input_outer { RowKind::Delete } else { kind };
            for m in matched {
                for _ in 0..other.slots[m.slot].count {
                    out.push(out_kind, Some(row), Some(m.candidate));
                }
            }
            if other_outer {
                // The other side's rows fall back to their padded form on their last match.
                for m in matched {
                    let s = &mut other.slots[m.slot];
                    if s.associations == 1 {
                        for _ in 0..s.count {
                            out.push(RowKind::Insert, None, Some(m.candidate));
                        }
                    }
                    s.associations = s.associations.saturating_sub(1);
                }
            }
        }
        Ok(())
    }

    /// One row of a semi or anti join (Flink's `StreamingSemiAntiJoinOperator`): left rows are
    /// emitted while they have (semi) or lack (anti) a match.
    #[allow(clippy::too_many_arguments)]
    fn semi_anti_row(
        &mut self,
        side: usize,
        kind: RowKind,
        key: &[u8],
        row: usize,
        bytes: &[u8],
        matched: &[Match],
        out: &mut Joined,
    ) -> Result<(), RuntimeError> {
        let anti = self.join_type == JoinType::Anti;
        let add = kind.is_addition();
        let (own, other) = Self::split(&mut self.sides, side);
        if side == 0 {
            if matched.is_empty() == anti {
                out.push(kind, Some(row), None);
            }
            return if add {
                let copies = matched.iter().map(|m| other.slots[m.slot].count).sum();
                own.add(key, bytes, copies)
            } else {
                own.retract(key, bytes)
            };
        }
        if add {
            own.add(key, bytes, 0)?;
        } else {
            own.retract(key, bytes)?;
        }
        for m in matched {
            let s = &mut other.slots[m.slot];
            let flips = if add {
                s.associations == 0
            } else {
                s.associations == 1
            };
            if flips {
                let out_kind = match (anti, add) {
                    (true, true) => RowKind::Delete,
                    (true, false) => RowKind::Insert,
                    (false, _) => kind,
                };
                for _ in 0..s.count {
                    out.push(out_kind, None, Some(m.candidate));
                }
            }
            s.associations = if add {
                s.associations + 1
            } else {
                s.associations.saturating_sub(1)
            };
        }
        Ok(())
    }

    /// Emits `joined`: the input side's columns taken from `batch` (of side `side`), the other
    /// side's from the probe's candidates.
    fn emit(
        &self,
        side: usize,
        batch: &RecordBatch,
        probe: &Probe,
        joined: Joined,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let n = joined.kinds.len();
        if n == 0 {
            return Ok(());
        }
        let input_types = &self.sides[side].types;
        let other_types = &self.sides[1 - side].types;
        let input = UInt32Array::from(joined.input);
        let other = UInt32Array::from(joined.other);
        let columns = if self.join_type.left_only() {
            // Only left rows are emitted: input rows of the left, stored rows of the right.
            if side == 0 {
                gather(batch.columns(), input_types, &input)?
            } else {
                gather(&probe.columns, other_types, &other)?
            }
        } else {
            let input = gather(batch.columns(), input_types, &input)?;
            let other = gather(&probe.columns, other_types, &other)?;
            if side == 0 {
                input.into_iter().chain(other).collect()
            } else {
                other.into_iter().chain(input).collect()
            }
        };
        let mut arrays = Vec::with_capacity(columns.len());
        for (array, field) in columns.into_iter().zip(self.schema.fields()) {
            arrays.push(super::of_field_type(array, field)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)?;
        let kinds = if joined.kinds.iter().all(|k| *k == RowKind::Insert) {
            None
        } else {
            Some(Arc::from(joined.kinds))
        };
        out.push(Emit::Data(ChangeBatch { batch, kinds }));
        Ok(())
    }
}

impl SideRows {
    /// Adds the rows of every key to a keyed snapshot, as entries of `table`: per key the
    /// number of rows, then per row its bytes (as [`ScalarCodec`](crate::state_codec::ScalarCodec) writes them), copies and
    /// match count.
    fn write(&self, out: &mut KeyedSnapshotWriter, table: u8) -> Result<(), RuntimeError> {
        for (key, rows) in &self.keys {
            out.entry(table, key.bytes(), |w| {
                w.u64(u64::from(rows.len));
                for (_, s) in rows.chain(&self.slots) {
                    if !self.types.is_empty() {
                        w.bytes(stored_bytes(&self.arena, s));
                    }
                    w.u64(s.count);
                    w.u64(s.associations);
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Replaces the rows with those of the entries of `table`.
    fn read(&mut self, snapshot: &KeyedSnapshot<'_>, table: u8) -> Result<(), RuntimeError> {
        let (mut keys, mut indexes, mut slots, mut free, mut arena) = (
            FastMap::default(),
            FastMap::default(),
            Slab::default(),
            NONE,
            Arena::default(),
        );
        let width = self.types.len();
        snapshot.read_table(table, "a join", |key, r| {
            let n = r.length()?;
            let mut rows = KeyRows::EMPTY;
            for _ in 0..n {
                let row = if width == 0 { &[][..] } else { r.bytes()? };
                let (count, associations) = (r.u64()?, r.u64()?);
                Self::append(
                    &mut indexes,
                    &mut slots,
                    &mut free,
                    &mut arena,
                    &mut rows,
                    row,
                    count,
                    associations,
                )?;
            }
            if rows.len > 0 {
                keys.insert(Key::from(key), rows);
            }
            Ok(())
        })?;
        (self.keys, self.indexes, self.slots, self.free, self.arena) =
            (keys, indexes, slots, free, arena);
        self.garbage = 0;
        Ok(())
    }
}

impl StreamOperator for Join {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    /// One table per side: its rows by join key.
    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        for (side, rows) in self.sides.iter().enumerate() {
            rows.write(&mut out, side as u8)?;
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let snapshot = KeyedSnapshot::parse(state, "a join")?;
        for (side, rows) in self.sides.iter_mut().enumerate() {
            rows.read(&snapshot, side as u8)?;
        }
        Ok(())
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    /// Probes a run of rows at once, then joins them one by one (a row's output and state
    /// changes depend on the rows before it) and emits their joined rows as one batch.
    fn process(
        &mut self,
        input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let side = input.min(1);
        let keys = self.keys[side].encode(&batch.batch)?;
        let rows = self.sides[side].encode(&batch.batch)?;
        let join_one = if self.join_type.left_only() {
            Self::semi_anti_row
        } else {
            Self::join_row
        };
        let mut start = 0;
        while start < batch.num_rows() {
            let probe = self.probe(side, &batch.batch, &keys, start)?;
            let mut joined = Joined::default();
            for run in (start..probe.end).step_by(WARM_ROWS) {
                let run = run..(run + WARM_ROWS).min(probe.end);
                self.sides[side].warm(&keys.rows, run.clone());
                for row in run {
                    let (kind, key, bytes) = (batch.kind(row), keys.rows.row(row), rows.row(row));
                    let matched = probe.of(start, row);
                    join_one(
                        self,
                        side,
                        kind,
                        key.data(),
                        row,
                        bytes,
                        matched,
                        &mut joined,
                    )?;
                }
            }
            self.emit(side, &batch.batch, &probe, joined, out)?;
            start = probe.end;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use arrow::array::{Int32Array, StringArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};

    use super::*;

    /// Schema `(k INT, v STRING, ts TIMESTAMP(3))` with the given column names.
    pub(crate) fn side_schema(prefix: &str) -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new(format!("{prefix}k"), DataType::Int32, true),
            Field::new(format!("{prefix}v"), DataType::Utf8, true),
            Field::new(
                format!("{prefix}ts"),
                DataType::Timestamp(TimeUnit::Millisecond, None),
                true,
            ),
        ]))
    }

    /// The left then the right columns.
    pub(crate) fn combined() -> SchemaRef {
        let mut fields: Vec<Field> = Vec::new();
        for s in [side_schema("l"), side_schema("r")] {
            fields.extend(s.fields().iter().map(|f| f.as_ref().clone()));
        }
        Arc::new(Schema::new(fields))
    }

    /// One batch of rows `(kind, k, v, ts)` of a side.
    pub(crate) fn batch(
        schema: &SchemaRef,
        rows: &[(RowKind, Option<i32>, &str, i64)],
    ) -> ChangeBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        ChangeBatch {
            batch,
            kinds: Some(rows.iter().map(|r| r.0).collect()),
        }
    }

    /// The emitted rows as `+I[1, a, ...]` lines (watermarks as `WM n`).
    pub(crate) fn lines(out: &[Emit]) -> Vec<String> {
        let mut lines = Vec::new();
        for e in out {
            match e {
                Emit::Watermark(w) => lines.push(format!("WM {w}")),
                Emit::Data(b) => {
                    for row in 0..b.num_rows() {
                        let values: Vec<String> = b
                            .batch
                            .columns()
                            .iter()
                            .map(|c| {
                                let v = ScalarValue::try_from_array(c.as_ref(), row).unwrap();
                                if v.is_null() {
                                    "null".to_string()
                                } else {
                                    v.to_string()
                                }
                            })
                            .collect();
                        lines.push(format!("{}[{}]", b.kind(row).short(), values.join(", ")));
                    }
                }
            }
        }
        lines
    }

    pub(crate) fn spec(join_type: JoinType) -> JoinSpec {
        JoinSpec {
            join_type,
            left_keys: vec![0],
            right_keys: vec![0],
            null_safe: vec![false],
            condition: None,
        }
    }

    fn join(join_type: JoinType) -> Join {
        join_of(join_type, [false, false])
    }

    fn join_of(join_type: JoinType, insert_only: [bool; 2]) -> Join {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let out = if join_type.left_only() {
            l.clone()
        } else {
            combined()
        };
        Join::new(
            &spec(join_type),
            None,
            [&l, &r],
            insert_only,
            combined(),
            out,
        )
        .unwrap()
    }

    fn feed(op: &mut Join, side: usize, rows: &[(RowKind, Option<i32>, &str, i64)]) -> Vec<String> {
        let schema = side_schema(if side == 0 { "l" } else { "r" });
        let mut out = Vec::new();
        op.process(side, batch(&schema, rows), &mut out).unwrap();
        lines(&out)
    }

    use RowKind::{Delete, Insert, UpdateAfter, UpdateBefore};

    #[test]
    fn left_join_pads_then_retracts_the_padding_and_restores_it() {
        let mut op = join(JoinType::Left);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]),
            ["+I[1, a, 0, null, null, null]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Insert, Some(1), "x", 0)]),
            ["-D[1, a, 0, null, null, null]", "+I[1, a, 0, 1, x, 0]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]),
            ["-D[1, a, 0, 1, x, 0]", "+I[1, a, 0, null, null, null]"]
        );
        // A NULL key matches nothing, even another NULL key.
        feed(&mut op, 1, &[(Insert, None, "n", 0)]);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, None, "b", 0)]),
            ["+I[null, b, 0, null, null, null]"]
        );
    }

    #[test]
    fn a_side_read_ahead_joins_and_retracts_as_any_other() {
        // More keys than `WARM_FROM_KEYS`, so later batches read the state ahead; each batch
        // both adds to old keys and retracts from them.
        let keys = (WARM_FROM_KEYS + 1000) as i32;
        let mut op = join_of(JoinType::Inner, [false, false]);
        let rows: Vec<_> = (0..keys).map(|k| (Insert, Some(k), "a", 0)).collect();
        for chunk in rows.chunks(4096) {
            assert!(feed(&mut op, 0, chunk).is_empty());
        }
        assert!(op.sides[0].keys.len() >= WARM_FROM_KEYS);
        let mixed: Vec<_> = (0..keys)
            .step_by(7)
            .flat_map(|k| [(Insert, Some(k), "b", 0), (Delete, Some(k), "a", 0)])
            .collect();
        for chunk in mixed.chunks(WARM_ROWS * 3 + 5) {
            assert!(feed(&mut op, 0, chunk).is_empty());
        }
        let probe = [(Insert, Some(0), "x", 0), (Insert, Some(1), "y", 0)];
        assert_eq!(
            feed(&mut op, 1, &probe),
            ["+I[0, b, 0, 0, x, 0]", "+I[1, a, 0, 1, y, 0]"]
        );
        // Removed rows' slots were reused by the rows added after them.
        assert_eq!(op.sides[0].slots.len(), keys as usize + 1);
    }

    #[test]
    fn insert_only_sides_keep_copies_apart_and_join_as_counted_copies_do() {
        let rows = [
            (Insert, Some(1), "a", 0),
            (Insert, Some(1), "b", 0),
            (Insert, Some(1), "a", 0),
        ];
        for join_type in [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Right,
            JoinType::Full,
        ] {
            let sorted = |mut lines: Vec<String>| {
                lines.sort();
                lines
            };
            let mut counted = join(join_type);
            let mut apart = join_of(join_type, [true, true]);
            for op in [&mut counted, &mut apart] {
                feed(op, 0, &rows);
            }
            // Copies are separate rows: held twice, each once.
            assert_eq!(apart.sides[0].slots.len(), 3, "{join_type:?}");
            assert_eq!(counted.sides[0].slots.len(), 2, "{join_type:?}");
            let probe = [(Insert, Some(1), "x", 0)];
            assert_eq!(
                sorted(feed(&mut apart, 1, &probe)),
                sorted(feed(&mut counted, 1, &probe)),
                "{join_type:?}"
            );
            // A retraction all the same removes one copy (from a snapshot resumed as counted).
            let mut resumed = join(join_type);
            resumed.restore(&apart.snapshot(1).unwrap()).unwrap();
            for op in [&mut apart, &mut counted, &mut resumed] {
                feed(op, 0, &[(Delete, Some(1), "a", 0)]);
            }
            let probe = [(Insert, Some(1), "y", 0)];
            let expected = sorted(feed(&mut counted, 1, &probe));
            assert_eq!(expected.iter().filter(|l| l.contains(", a,")).count(), 1);
            assert_eq!(
                sorted(feed(&mut apart, 1, &probe)),
                expected,
                "{join_type:?}"
            );
            assert_eq!(
                sorted(feed(&mut resumed, 1, &probe)),
                expected,
                "{join_type:?}"
            );
        }
    }

    #[test]
    fn inner_join_forwards_update_kinds_and_multiplies_duplicates() {
        let mut op = join(JoinType::Inner);
        feed(
            &mut op,
            0,
            &[(Insert, Some(1), "a", 0), (Insert, Some(1), "a", 0)],
        );
        let out = feed(
            &mut op,
            1,
            &[
                (UpdateBefore, Some(1), "x", 0),
                (UpdateAfter, Some(1), "y", 0),
            ],
        );
        // Flink retracts the pairs of a retraction even if the retracted row was never held.
        assert_eq!(
            out,
            [
                "-U[1, a, 0, 1, x, 0]",
                "-U[1, a, 0, 1, x, 0]",
                "+U[1, a, 0, 1, y, 0]",
                "+U[1, a, 0, 1, y, 0]"
            ]
        );
        let out = feed(&mut op, 1, &[(UpdateBefore, Some(1), "y", 0)]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|l| l.starts_with("-U[1, a")));
    }

    /// A side whose rows are the given bytes (a side's state does not read its rows' bytes).
    fn side() -> SideRows {
        SideRows::new(&side_schema("l"), false).unwrap()
    }

    /// The rows of `key` as (bytes, copies, match count).
    fn held(side: &SideRows, key: &[u8]) -> Vec<(String, u64, u64)> {
        let rows = side.keys.get(key);
        let chain = rows.map(|r| r.chain(&side.slots)).into_iter().flatten();
        chain
            .map(|(_, s)| {
                let bytes = String::from_utf8(stored_bytes(&side.arena, s).to_vec()).unwrap();
                (bytes, s.count, s.associations)
            })
            .collect()
    }

    /// A key with many rows finds them through its index, also after rows were removed and
    /// when two rows' hashes collide (an unindexed row is still found).
    #[test]
    fn a_key_with_many_rows_finds_them_through_its_index() {
        let mut side = side();
        let row = |i: u32| format!("row{i}").into_bytes();
        for i in 0..INDEX_FROM * 2 {
            side.add(b"k", &row(i), 0).unwrap();
        }
        let find = |side: &mut SideRows, row: &[u8]| {
            let SideRows {
                keys,
                indexes,
                slots,
                arena,
                ..
            } = side;
            let rows = keys.get(&b"k"[..]).expect("key");
            rows.find(indexes, slots, arena, row)
        };
        let indexed = |side: &SideRows| side.indexes.contains_key(&side.keys[&b"k"[..]].head);
        assert_eq!(find(&mut side, b"row20"), Some(20));
        assert!(indexed(&side));
        assert_eq!(find(&mut side, b"absent"), None);
        side.add(b"k", &row(100), 0).unwrap();
        assert_eq!(find(&mut side, b"row100"), Some(INDEX_FROM * 2));
        side.retract(b"k", b"row3").unwrap();
        assert!(!indexed(&side));
        assert_eq!(find(&mut side, b"row20"), Some(20));
        assert_eq!(find(&mut side, b"row3"), None);
        // The freed slot is reused, and the new row is last in arrival order.
        side.add(b"k", b"new", 0).unwrap();
        assert_eq!(find(&mut side, b"new"), Some(3));
        let held = held(&side, b"k");
        assert_eq!(held.len(), INDEX_FROM as usize * 2 + 1);
        assert_eq!(held[3].0, "row4");
        assert_eq!(held.last().map(|h| h.0.as_str()), Some("new"));
        // Point the hash of `row5` at another row, as a collision would: found by searching.
        let head = side.keys[&b"k"[..]].head;
        let index = side.indexes.get_mut(&head).unwrap();
        let hash = index.hasher().hash_one(&b"row5"[..]);
        index.insert(hash, 0);
        assert_eq!(find(&mut side, b"row5"), Some(5));
    }

    /// Duplicates are one row with a count; the last copy's removal unlinks it, wherever it
    /// is in its key's chain, and the last row's removal drops the key.
    #[test]
    fn duplicates_are_counted_and_removed_from_any_place_in_the_chain() {
        let mut side = side();
        for _ in 0..1000 {
            side.add(b"k", b"dup", 0).unwrap();
        }
        side.add(b"k", b"a", 3).unwrap();
        side.add(b"k", b"b", 0).unwrap();
        side.add(b"k", b"a", 5).unwrap();
        assert_eq!(
            held(&side, b"k"),
            [
                ("dup".to_string(), 1000, 0),
                ("a".to_string(), 2, 5),
                ("b".to_string(), 1, 0)
            ]
        );
        for _ in 0..999 {
            side.retract(b"k", b"dup").unwrap();
        }
        side.retract(b"k", b"absent").unwrap();
        side.retract(b"other", b"a").unwrap();
        assert_eq!(held(&side, b"k")[0], ("dup".to_string(), 1, 0));
        // The middle row, then the tail, then the head: appending still works after each.
        side.retract(b"k", b"a").unwrap();
        side.retract(b"k", b"a").unwrap();
        side.retract(b"k", b"b").unwrap();
        side.add(b"k", b"c", 0).unwrap();
        assert_eq!(
            held(&side, b"k"),
            [("dup".to_string(), 1, 0), ("c".to_string(), 1, 0)]
        );
        side.retract(b"k", b"dup").unwrap();
        side.add(b"k", b"d", 0).unwrap();
        assert_eq!(
            held(&side, b"k"),
            [("c".to_string(), 1, 0), ("d".to_string(), 1, 0)]
        );
        side.retract(b"k", b"c").unwrap();
        side.retract(b"k", b"d").unwrap();
        assert!(side.keys.is_empty());
        assert!(side.slots.len() == 0 && side.arena.len() == 0);
    }

    /// Rows never move once appended: chunks fill up and new ones start (sized by what is
    /// held, or by a row longer than that).
    #[test]
    fn arena_rows_stay_where_they_were_put_across_chunks() {
        let mut arena = Arena::default();
        let rows: Vec<Vec<u8>> = (0..5000usize)
            .map(|i| vec![(i % 251) as u8; 1 + i % 700])
            .chain([vec![9; 3 << 20]])
            .collect();
        let spans: Vec<ArenaSpan> = rows.iter().map(|r| arena.push(r).unwrap()).collect();
        assert!(arena.chunks.len() > 3);
        assert_eq!(arena.len(), rows.iter().map(Vec::len).sum::<usize>());
        for (row, at) in rows.iter().zip(&spans) {
            assert_eq!(arena.get(*at), row.as_slice());
        }
        // The first chunk was filled without ever growing past its size; the long row has a
        // chunk of its own.
        assert_eq!(arena.chunks[0].capacity(), *ARENA_CHUNKS.start());
        let last = arena.chunks.last().map(|c| (c.len(), c.capacity()));
        assert_eq!(last, Some((3 << 20, 3 << 20)));
    }

    /// Slots keep their place as the slab grows page by page, and every slot finds its row.
    #[test]
    fn slab_slots_stay_in_their_pages_as_it_grows() {
        let mut slab = Slab::default();
        let stored = |i: usize| Stored {
            at: ArenaSpan {
                chunk: 0,
                offset: 0,
                len: 0,
            },
            next: NONE,
            count: i as u64,
            associations: 0,
        };
        let n = 2 * SLAB_PAGE + 5;
        for i in 0..n {
            assert_eq!(slab.push(stored(i)).unwrap() as usize, i);
        }
        assert_eq!(slab.len(), n);
        assert_eq!(slab.pages.len(), 3);
        assert!(slab.pages.iter().all(|p| p.capacity() == SLAB_PAGE));
        for i in [0, SLAB_PAGE - 1, SLAB_PAGE, n - 1] {
            assert_eq!(slab[i as Slot].count, i as u64);
        }
        slab[SLAB_PAGE as Slot].associations = 7;
        assert_eq!(slab.get(SLAB_PAGE as Slot).map(|s| s.associations), Some(7));
        assert!(slab.get(n as Slot).is_none() && slab.get(NONE).is_none());
    }

    /// Once removed rows make up half of the arena, the held rows move to a new arena and keep
    /// their bytes, counts and order; long keys (held outside the map) work as short ones.
    #[test]
    fn the_arena_is_compacted_when_removed_rows_dominate() {
        let mut side = side();
        let long_key = vec![7u8; INLINE_KEY + 10];
        let keys: [&[u8]; 3] = [b"a", b"b", &long_key];
        let row = |i: usize| format!("{i:0>100}").into_bytes();
        for i in 0..3000 {
            side.add(keys[i % 3], &row(i), (i % 5) as u64).unwrap();
        }
        side.add(keys[1], &row(1), 9).unwrap();
        let before = side.arena.len();
        // Remove most rows (but not the one held twice): the arena shrinks.
        for i in (0..3000).filter(|i| i % 10 != 1) {
            side.retract(keys[i % 3], &row(i)).unwrap();
        }
        assert_eq!(side.arena.len() - side.garbage, 300 * 100);
        assert!(
            side.arena.len() < before / 2,
            "{} of {before}",
            side.arena.len()
        );
        assert!(side.garbage < COMPACT_FROM || side.garbage * 2 < side.arena.len());
        for (k, key) in keys.iter().enumerate() {
            let want: Vec<_> = (0..3000)
                .filter(|i| i % 10 == 1 && i % 3 == k)
                .map(|i| {
                    let bytes = String::from_utf8(row(i)).unwrap();
                    if i == 1 {
                        (bytes, 2, 9)
                    } else {
                        (bytes, 1, (i % 5) as u64)
                    }
                })
                .collect();
            assert_eq!(held(&side, key), want);
        }
        // The row held twice keeps its second copy, then goes.
        side.retract(b"b", &row(1)).unwrap();
        assert_eq!(held(&side, b"b")[0].1, 1);
        side.retract(b"b", &row(1)).unwrap();
        assert_eq!(held(&side, b"b")[0].0, String::from_utf8(row(31)).unwrap());
    }

    /// Duplicate rows of an outer side count their matches as one row: their padding is
    /// retracted and restored once per copy.
    #[test]
    fn duplicates_of_an_outer_side_are_padded_per_copy() {
        let mut op = join(JoinType::Full);
        feed(
            &mut op,
            0,
            &[(Insert, Some(1), "a", 0), (Insert, Some(1), "a", 0)],
        );
        assert_eq!(
            feed(
                &mut op,
                1,
                &[(Insert, Some(1), "x", 0), (Insert, Some(1), "y", 0)]
            ),
            [
                "-D[1, a, 0, null, null, null]",
                "-D[1, a, 0, null, null, null]",
                "+I[1, a, 0, 1, x, 0]",
                "+I[1, a, 0, 1, x, 0]",
                "+I[1, a, 0, 1, y, 0]",
                "+I[1, a, 0, 1, y, 0]"
            ]
        );
        // A third copy arrives with the two matches of its key.
        assert_eq!(
            feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]),
            ["+I[1, a, 0, 1, x, 0]", "+I[1, a, 0, 1, y, 0]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]),
            [
                "-D[1, a, 0, 1, x, 0]",
                "-D[1, a, 0, 1, x, 0]",
                "-D[1, a, 0, 1, x, 0]"
            ]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "y", 0)]),
            [
                "-D[1, a, 0, 1, y, 0]",
                "-D[1, a, 0, 1, y, 0]",
                "-D[1, a, 0, 1, y, 0]",
                "+I[1, a, 0, null, null, null]",
                "+I[1, a, 0, null, null, null]",
                "+I[1, a, 0, null, null, null]"
            ]
        );
    }

    /// A join over many rows of one key gives the same changes with and without the index.
    #[test]
    fn many_rows_of_one_key_join_and_retract_as_few_do() {
        let mut op = join(JoinType::Inner);
        let values: Vec<String> = (0..40).map(|i| format!("v{i}")).collect();
        let rows: Vec<(RowKind, Option<i32>, &str, i64)> = values
            .iter()
            .map(|v| (Insert, Some(7), v.as_str(), 0))
            .collect();
        feed(&mut op, 0, &rows);
        feed(&mut op, 0, &[(Insert, Some(7), "v5", 0)]);
        feed(&mut op, 0, &[(Delete, Some(7), "v30", 0)]);
        let out = feed(&mut op, 1, &[(Insert, Some(7), "r", 0)]);
        // 39 distinct rows, v5 twice.
        assert_eq!(out.len(), 40, "{out:?}");
        assert_eq!(out.iter().filter(|l| l.contains(", v5,")).count(), 2);
        assert!(!out.iter().any(|l| l.contains(", v30,")));
        assert_eq!(
            out.first().map(String::as_str),
            Some("+I[7, v0, 0, 7, r, 0]")
        );
    }

    #[test]
    fn anti_join_retracts_left_rows_when_a_match_arrives_and_restores_them() {
        let mut op = join(JoinType::Anti);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]),
            ["+I[1, a, 0]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Insert, Some(1), "x", 0)]),
            ["-D[1, a, 0]"]
        );
        assert!(feed(&mut op, 1, &[(Insert, Some(1), "y", 0)]).is_empty());
        assert!(feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]).is_empty());
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "y", 0)]),
            ["+I[1, a, 0]"]
        );
    }

    #[test]
    fn semi_join_emits_a_left_row_once_on_its_first_match() {
        let mut op = join(JoinType::Semi);
        assert!(feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]).is_empty());
        assert_eq!(
            feed(
                &mut op,
                1,
                &[(Insert, Some(1), "x", 0), (Insert, Some(1), "y", 0)]
            ),
            ["+I[1, a, 0]"]
        );
    }

    /// A left join on `k` with the condition `l.ts < r.ts`.
    fn left_join_on_time() -> Join {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{BinaryExpr, Column};
        let (l, r) = (side_schema("l"), side_schema("r"));
        let condition = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("lts", 2)),
            Operator::Lt,
            Arc::new(Column::new("rts", 5)),
        ));
        Join::new(
            &spec(JoinType::Left),
            Some(condition),
            [&l, &r],
            [false, false],
            combined(),
            combined(),
        )
        .unwrap()
    }

    #[test]
    fn a_batch_is_probed_in_runs_of_pairs_and_the_condition_decides_the_padding() {
        let mut op = left_join_on_time();
        let names: Vec<String> = (0..3000).map(|i| format!("r{i}")).collect();
        let rights: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (Insert, Some(1), n.as_str(), i as i64))
            .collect();
        assert!(feed(&mut op, 1, &rights).is_empty());
        // 9,000 candidate pairs for the first three rows: two runs of pairs, two batches.
        let mut out = Vec::new();
        let lefts = [
            (Insert, Some(1), "a", 0),
            (Insert, Some(1), "a", 1500),
            (Insert, Some(1), "a", 5000),
            (Insert, Some(2), "b", 0),
        ];
        op.process(0, batch(&side_schema("l"), &lefts), &mut out)
            .unwrap();
        assert_eq!(out.len(), 2);
        let out = lines(&out);
        assert_eq!(out.len(), 2999 + 1499 + 2);
        assert_eq!(out[0], "+I[1, a, 0, 1, r1, 1]");
        assert_eq!(out[2999], "+I[1, a, 1500, 1, r1501, 1501]");
        assert_eq!(
            out[4498..],
            [
                "+I[1, a, 5000, null, null, null]",
                "+I[2, b, 0, null, null, null]"
            ]
        );
        // A right row matching all three: only the padded one is retracted.
        assert_eq!(
            feed(&mut op, 1, &[(Insert, Some(1), "z", 6000)]),
            [
                "-D[1, a, 5000, null, null, null]",
                "+I[1, a, 0, 1, z, 6000]",
                "+I[1, a, 1500, 1, z, 6000]",
                "+I[1, a, 5000, 1, z, 6000]"
            ]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "z", 6000)]),
            [
                "-D[1, a, 0, 1, z, 6000]",
                "-D[1, a, 1500, 1, z, 6000]",
                "-D[1, a, 5000, 1, z, 6000]",
                "+I[1, a, 5000, null, null, null]"
            ]
        );
    }

    #[test]
    fn snapshots_keep_their_format_of_scalar_rows() {
        use crate::state_codec::ScalarCodec;
        // A snapshot as the join wrote it when it stored `ScalarValue`s: per key the number of
        // rows, then per row the codec's bytes, copies and match count.
        let (l, r) = (side_schema("l"), side_schema("r"));
        let mut writer = KeyedSnapshotWriter::new();
        let row = |k: i32, v: &str, ts: i64| {
            vec![
                ScalarValue::Int32(Some(k)),
                ScalarValue::Utf8(Some(v.into())),
                ScalarValue::TimestampMillisecond(Some(ts), None),
            ]
        };
        let key = JoinKeys::new(&[0], &[false], &l)
            .unwrap()
            .keys(&batch(&l, &[(Insert, Some(1), "a", 0)]).batch)
            .unwrap()
            .remove(0)
            .bytes;
        for (table, schema, values, count) in
            [(0, &l, row(1, "a", 0), 2), (1, &r, row(1, "x", 0), 1)]
        {
            let codec = ScalarCodec::new(&field_types(schema)).unwrap();
            writer
                .entry(table, &key, |w| {
                    w.length(1);
                    codec.write(w, &values)?;
                    w.length(count);
                    w.length(1);
                    Ok(())
                })
                .unwrap();
        }
        let old = writer.finish();
        let mut op = join(JoinType::Left);
        op.restore(&old).unwrap();
        assert_eq!(op.snapshot(1).unwrap(), old);
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]),
            [
                "-D[1, a, 0, 1, x, 0]",
                "-D[1, a, 0, 1, x, 0]",
                "+I[1, a, 0, null, null, null]",
                "+I[1, a, 0, null, null, null]"
            ]
        );
    }

    #[test]
    fn joins_resume_and_rescale_from_snapshots() {
        use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};
        let (l, r) = (side_schema("l"), side_schema("r"));
        let rows = |side: usize, rows: &[(RowKind, Option<i32>, &str, i64)]| {
            Step::Rows(side, batch(if side == 0 { &l } else { &r }, rows))
        };
        let steps = vec![
            rows(0, &[(Insert, Some(1), "a", 0), (Insert, Some(2), "b", 0)]),
            rows(1, &[(Insert, Some(1), "x", 0), (Insert, Some(3), "y", 0)]),
            rows(0, &[(Insert, Some(3), "c", 0), (Insert, Some(4), "d", 0)]),
            rows(1, &[(Delete, Some(1), "x", 0), (Insert, Some(2), "z", 0)]),
            rows(
                0,
                &[
                    (UpdateBefore, Some(2), "b", 0),
                    (UpdateAfter, Some(2), "e", 0),
                ],
            ),
            rows(1, &[(Insert, Some(4), "w", 0), (Insert, Some(5), "v", 0)]),
        ];
        for join_type in [JoinType::Inner, JoinType::Full, JoinType::Anti] {
            let make = || Box::new(join(join_type)) as Box<dyn StreamOperator>;
            let out = assert_resumes_anywhere(&make, &steps);
            assert!(out.len() >= 4, "{join_type:?}: {out:?}");
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
        }
    }
}
