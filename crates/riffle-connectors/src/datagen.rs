//! The `datagen` connector: random or sequential rows, bounded by `number-of-rows` or by its
//! sequences, throttled to `rows-per-second`.
//!
//! Options (Flink's): `rows-per-second` (default 10000), `number-of-rows`, and per field
//! `fields.<name>.kind` (`random` | `sequence`), `.min`, `.max`, `.max-past`, `.length`,
//! `.start`, `.end`, `.null-rate`. Random values come from a generator seeded per subtask (and per
//! repeated read of the table, when sub-plan reuse is off), so a job produces the same rows on
//! every run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array,
    Int32Array, Int64Array, Int8Array, StringArray, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use riffle_plan::ConnectorSpec;

use crate::options::Options;
use crate::snapshot::{StateReader, StateWriter};
use crate::{ConnectorError, Result, SourceReader, SubtaskInfo, BATCH_SIZE};

/// Opens a datagen source subtask.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let rows_per_second = options
        .i64("rows-per-second", Some(10_000))?
        .unwrap_or(10_000)
        .max(1);
    let total = options.i64("number-of-rows", None)?;
    options.accept("scan.parallelism");
    let parallelism = subtask.parallelism.max(1) as i64;
    let index = subtask.index as i64;
    let mut fields = Vec::new();
    for f in schema.fields() {
        let key = |k: &str| format!("fields.{}.{k}", f.name());
        let kind = options
            .get(&key("kind"))
            .unwrap_or("random")
            .to_ascii_lowercase();
        let null_rate = match options.get(&key("null-rate")) {
            None => 0.0,
            Some(v) => v.trim().parse::<f64>().map_err(|_| {
                ConnectorError::new(format!(
                    "Invalid value for option '{}': '{v}'",
                    key("null-rate")
                ))
            })?,
        };
        let generator = match kind.as_str() {
            "sequence" => {
                let start = options.i64(&key("start"), None)?;
                let end = options.i64(&key("end"), None)?;
                let (Some(start), Some(end)) = (start, end) else {
                    return Err(ConnectorError::new(format!(
                        "Could not find required property '{}' for sequence generator.",
                        if start.is_none() {
                            key("start")
                        } else {
                            key("end")
                        }
                    )));
                };
                if !matches!(
                    f.data_type(),
                    DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::Utf8
                        | DataType::Decimal128(..)
                        | DataType::Float32
                        | DataType::Float64
                ) {
                    return Err(ConnectorError::new(format!(
                        "unsupported feature: datagen sequence for column '{}' of type {}",
                        f.name(),
                        f.data_type()
                    )));
                }
                // The range is split into contiguous parts, one per subtask.
                let count = end - start + 1;
                let per = count / parallelism;
                let extra = count % parallelism;
                let my_start = start + index * per + index.min(extra);
                let my_count = per + i64::from(index < extra);
                Generator::Sequence {
                    next: my_start,
                    end: my_start + my_count - 1,
                }
            }
            "random" => {
                let min = options.get(&key("min")).map(str::to_string);
                let max = options.get(&key("max")).map(str::to_string);
                let length = options
                    .i64(&key("length"), Some(100))?
                    .unwrap_or(100)
                    .max(0) as usize;
                let max_past = options.i64(&key("max-past"), Some(0))?.unwrap_or(0).max(0);
                options.accept(&key("var-len"));
                Generator::Random {
                    min,
                    max,
                    length,
                    max_past,
                }
            }
            other => {
                return Err(ConnectorError::new(format!(
                    "Unsupported generator kind '{other}' for field '{}'",
                    f.name()
                )))
            }
        };
        fields.push(FieldGen {
            data_type: f.data_type().clone(),
            generator,
            null_rate,
        });
    }
    options.finish()?;
    let remaining = total.map(|t| t / parallelism + i64::from(index < t % parallelism));
    let rate = (rows_per_second as f64 / parallelism as f64).max(1.0);
    Ok(Box::new(Datagen {
        schema,
        fields,
        remaining,
        rate,
        started: Instant::now(),
        emitted: 0,
        rng: SplitMix(
            0x5EED_0000
                ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ (subtask.earlier_reads as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
        ),
    }))
}

#[derive(Debug, Clone)]
enum Generator {
    Sequence {
        next: i64,
        end: i64,
    },
    Random {
        min: Option<String>,
        max: Option<String>,
        length: usize,
        max_past: i64,
    },
}

struct FieldGen {
    data_type: DataType,
    generator: Generator,
    null_rate: f64,
}

/// A small deterministic generator (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range_i64(&mut self, min: i64, max: i64) -> i64 {
        if max <= min {
            return min;
        }
        let span = (max as i128 - min as i128 + 1) as u128;
        (min as i128 + (u128::from(self.next()) % span) as i128) as i64
    }
}

struct Datagen {
    schema: SchemaRef,
    fields: Vec<FieldGen>,
    remaining: Option<i64>,
    rate: f64,
    started: Instant,
    emitted: u64,
    rng: SplitMix,
}

impl Datagen {
    fn column(&mut self, i: usize, n: usize) -> Result<ArrayRef> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let rng = &mut self.rng;
        let field = &mut self.fields[i];
        let nulls: Vec<bool> = (0..n)
            .map(|_| field.null_rate > 0.0 && rng.unit() < field.null_rate)
            .collect();
        let parse = |v: &Option<String>, default: f64| -> Result<f64> {
            match v {
                None => Ok(default),
                Some(s) => s
                    .trim()
                    .parse()
                    .map_err(|_| ConnectorError::new(format!("Invalid datagen bound '{s}'"))),
            }
        };
        let ints: Vec<Option<i64>> = match &mut field.generator {
            Generator::Sequence { next, end } => (0..n)
                .map(|k| {
                    let v = *next;
                    *next += 1;
                    (v <= *end && !nulls[k]).then_some(v)
                })
                .collect(),
            Generator::Random { min, max, .. } if is_integer(&field.data_type) => {
                let (lo, hi) = integer_bounds(&field.data_type);
                let lo = parse(min, lo as f64)? as i64;
                let hi = parse(max, hi as f64)? as i64;
                (0..n)
                    .map(|k| (!nulls[k]).then(|| rng.range_i64(lo, hi)))
                    .collect()
            }
            _ => Vec::new(),
        };
        let is_float = matches!(
            field.data_type,
            DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
        );
        let floats: Vec<Option<f64>> = match &mut field.generator {
            _ if !is_float => Vec::new(),
            Generator::Sequence { next, end } => (0..n)
                .map(|k| {
                    let v = *next;
                    *next += 1;
                    (v <= *end && !nulls[k]).then_some(v as f64)
                })
                .collect(),
            Generator::Random { min, max, .. } => {
                let lo = parse(min, 0.0)?;
                let hi = parse(max, 1_000_000.0)?;
                (0..n)
                    .map(|k| (!nulls[k]).then(|| lo + rng.unit() * (hi - lo)))
                    .collect()
            }
        };
        let array: ArrayRef = match (&field.data_type, &field.generator) {
            (DataType::Int8, _) => Arc::new(
                ints.iter()
                    .map(|v| v.map(|v| v as i8))
                    .collect::<Int8Array>(),
            ),
            (DataType::Int16, _) => Arc::new(
                ints.iter()
                    .map(|v| v.map(|v| v as i16))
                    .collect::<Int16Array>(),
            ),
            (DataType::Int32, _) => Arc::new(
                ints.iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect::<Int32Array>(),
            ),
            (DataType::Int64, _) => Arc::new(ints.into_iter().collect::<Int64Array>()),
            (DataType::Utf8, Generator::Sequence { .. }) => Arc::new(
                ints.iter()
                    .map(|v| v.map(|v| v.to_string()))
                    .collect::<StringArray>(),
            ),
            (DataType::Utf8, Generator::Random { length, .. }) => {
                let len = *length;
                Arc::new(
                    (0..n)
                        .map(|k| {
                            (!nulls[k]).then(|| {
                                (0..len)
                                    .map(|_| {
                                        char::from(b"0123456789abcdef"[(rng.next() % 16) as usize])
                                    })
                                    .collect::<String>()
                            })
                        })
                        .collect::<StringArray>(),
                )
            }
            (DataType::Boolean, _) => Arc::new(
                (0..n)
                    .map(|k| (!nulls[k]).then(|| rng.next() & 1 == 1))
                    .collect::<BooleanArray>(),
            ),
            (DataType::Float32 | DataType::Float64 | DataType::Decimal128(..), _) => {
                match &field.data_type {
                    DataType::Float32 => Arc::new(
                        floats
                            .iter()
                            .map(|v| v.map(|v| v as f32))
                            .collect::<Float32Array>(),
                    ),
                    DataType::Decimal128(p, s) => {
                        let factor = 10f64.powi(i32::from(*s));
                        let array: Decimal128Array = floats
                            .iter()
                            .map(|v| v.map(|v| (v * factor).round() as i128))
                            .collect();
                        Arc::new(array.with_precision_and_scale(*p, *s)?)
                    }
                    _ => Arc::new(floats.into_iter().collect::<Float64Array>()),
                }
            }
            (
                DataType::Timestamp(TimeUnit::Millisecond, tz),
                Generator::Random { max_past, .. },
            ) => {
                let past = *max_past;
                let array: TimestampMillisecondArray = (0..n)
                    .map(|k| (!nulls[k]).then(|| now_ms - rng.range_i64(0, past)))
                    .collect();
                Arc::new(array.with_timezone_opt(tz.clone()))
            }
            (DataType::Date32, Generator::Random { max_past, .. }) => {
                let past = *max_past;
                Arc::new(
                    (0..n)
                        .map(|k| {
                            (!nulls[k])
                                .then(|| ((now_ms - rng.range_i64(0, past)) / 86_400_000) as i32)
                        })
                        .collect::<Date32Array>(),
                )
            }
            (other, _) => {
                return Err(ConnectorError::new(format!(
                    "unsupported feature: datagen for column '{}' of type {other}",
                    self.schema.field(i).name()
                )))
            }
        };
        Ok(array)
    }

    /// True when every sequence field is exhausted (a bounded datagen source).
    fn sequences_exhausted(&self) -> bool {
        let mut any = false;
        for f in &self.fields {
            if let Generator::Sequence { next, end } = f.generator {
                any = true;
                if next <= end {
                    return false;
                }
            }
        }
        any
    }
}

fn is_integer(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

fn integer_bounds(t: &DataType) -> (i64, i64) {
    match t {
        DataType::Int8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
        DataType::Int16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        DataType::Int32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    }
}

impl SourceReader for Datagen {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.sequences_exhausted() {
            return Ok(None);
        }
        let mut n = BATCH_SIZE.min((self.rate as usize).max(1));
        if let Some(remaining) = self.remaining {
            if remaining <= 0 {
                return Ok(None);
            }
            n = n.min(remaining as usize);
        }
        // Sequences end the source when exhausted: never emit past their end.
        for f in &self.fields {
            if let Generator::Sequence { next, end } = f.generator {
                n = n.min((end - next + 1).max(0) as usize);
            }
        }
        // Throttle to rows-per-second.
        let due = Duration::from_secs_f64(self.emitted as f64 / self.rate);
        let elapsed = self.started.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
        let mut columns = Vec::with_capacity(self.fields.len());
        for i in 0..self.fields.len() {
            columns.push(self.column(i, n)?);
        }
        if let Some(r) = self.remaining.as_mut() {
            *r -= n as i64;
        }
        self.emitted += n as u64;
        let options = arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(n));
        Ok(Some(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?))
    }

    fn enable_checkpointing(&mut self) -> bool {
        true
    }

    /// The position: rows left, the random generator's state and each sequence's next value.
    fn snapshot_position(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        let mut w = StateWriter::new();
        w.bool(self.remaining.is_some());
        w.i64(self.remaining.unwrap_or(0));
        w.u64(self.rng.0);
        w.length(self.fields.len());
        for f in &self.fields {
            match f.generator {
                Generator::Sequence { next, .. } => {
                    w.bool(true);
                    w.i64(next);
                }
                Generator::Random { .. } => w.bool(false),
            }
        }
        Ok(w.finish())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let mut r = StateReader::new(position, "a datagen table");
        let bounded = r.bool()?;
        let remaining = r.i64()?;
        self.remaining = bounded.then_some(remaining);
        self.rng.0 = r.u64()?;
        if r.length()? != self.fields.len() {
            return Err(ConnectorError::new(
                "the datagen table's columns changed since the checkpoint",
            ));
        }
        for f in &mut self.fields {
            let sequence = r.bool()?;
            let value = if sequence { Some(r.i64()?) } else { None };
            match (&mut f.generator, value) {
                (Generator::Sequence { next, .. }, Some(v)) => *next = v,
                (Generator::Random { .. }, None) => {}
                _ => {
                    return Err(ConnectorError::new(
                        "the datagen table's generators changed since the checkpoint",
                    ))
                }
            }
        }
        // Throttling restarts from the restored position.
        self.started = Instant::now();
        self.emitted = 0;
        r.finish()
    }
}
