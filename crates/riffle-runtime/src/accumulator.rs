//! Aggregate accumulators with Flink's semantics and retraction.
//!
//! `SUM` of integers wraps at the result width as Java does, `SUM` of `DECIMAL(p, s)` is
//! `DECIMAL(38, s)` (NULL on overflow), `AVG` of integers is an integer (truncating division), of
//! decimals `DECIMAL(38, max(6, s))` rounded half-up. `MIN`/`MAX` keep a count per value so that
//! any value can be retracted. `DISTINCT` counts each value once. The variance family keeps
//! Welford's running mean and sum of squared deviations in `DOUBLE` (as Flink does, which
//! decides the last digits), cast to the result type at the end. `LISTAGG`, `FIRST_VALUE` and
//! `LAST_VALUE` keep the non-null values in arrival order, `ARRAY_AGG` every value; a
//! retraction removes one equal value.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion::common::ScalarValue;
use std::sync::Arc;

use riffle_jvm::{JavaAccumulator, JavaAggregateFunction};
use riffle_plan::AggregateFunction;
use riffle_udf::host::{column_of, row_of, NativeAggregate};
use riffle_udf::Value;

use riffle_connectors::snapshot::{StateReader, StateWriter};

use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// A numeric input value.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Decimal(i128),
    Float(f64),
}

fn num_at(array: &dyn Array, row: usize) -> Option<Num> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Int8 => Num::Int(i64::from(array.as_primitive::<Int8Type>().value(row))),
        DataType::Int16 => Num::Int(i64::from(array.as_primitive::<Int16Type>().value(row))),
        DataType::Int32 => Num::Int(i64::from(array.as_primitive::<Int32Type>().value(row))),
        DataType::Int64 => Num::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::Decimal128(..) => Num::Decimal(array.as_primitive::<Decimal128Type>().value(row)),
        DataType::Float32 => Num::Float(f64::from(array.as_primitive::<Float32Type>().value(row))),
        DataType::Float64 => Num::Float(array.as_primitive::<Float64Type>().value(row)),
        _ => return None,
    })
}

/// A scalar ordered totally (for MIN/MAX bookkeeping).
#[derive(Debug, Clone, PartialEq, Eq)]
struct OrdScalar(ScalarValue);

impl PartialOrd for OrdScalar {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdScalar {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// The running state of one aggregate call for one group.
#[derive(Debug, Clone)]
pub struct Accumulator {
    function: AggregateFunction,
    state: State,
    /// Counts of distinct values seen, for `DISTINCT` calls.
    distinct: Option<HashMap<ScalarValue, i64>>,
    /// Scale of a decimal argument (the unit of the running decimal sum).
    input_scale: i8,
    /// Precision of a decimal argument.
    input_precision: u8,
    /// `LISTAGG`'s separator (borrowed for the default: accumulators are created per group).
    separator: Cow<'static, str>,
}

#[derive(Debug, Clone)]
enum State {
    Count(i64),
    Sum {
        int: i64,
        decimal: i128,
        float: f64,
        count: i64,
    },
    MinMax(BTreeMap<OrdScalar, i64>),
    /// `MIN`/`MAX` of an append-only input (see [`Accumulator::append_only`]): the extreme
    /// value so far and how many values were added (the state of a one-entry `MinMax`).
    Extreme {
        best: Option<OrdScalar>,
        count: i64,
    },
    /// A Java `AggregateFunction`'s accumulator object (a clone shares the object).
    Java {
        function: Arc<JavaAggregateFunction>,
        acc: JavaAccumulator,
    },
    /// A Rust aggregate function's accumulator: values of its declared accumulator fields.
    Rust {
        function: Arc<NativeAggregate>,
        acc: Vec<Value>,
    },
    /// Count, mean and sum of squared deviations from the mean.
    Moments {
        n: i64,
        mean: f64,
        m2: f64,
    },
    Values(Vec<ScalarValue>),
}

impl Accumulator {
    /// A fresh accumulator for an argument of type `input` (`None` for `COUNT(*)`).
    pub fn new(function: AggregateFunction, distinct: bool, input: Option<&DataType>) -> Self {
        let state = match function {
            AggregateFunction::Count | AggregateFunction::CountStar => State::Count(0),
            AggregateFunction::Sum | AggregateFunction::Avg => State::Sum {
                int: 0,
                decimal: 0,
                // Flink's SUM starts from its first value (so SUM of -0.0 is -0.0), its AVG
                // from 0.0; -0.0 is the identity of floating-point addition.
                float: if function == AggregateFunction::Sum {
                    -0.0
                } else {
                    0.0
                },
                count: 0,
            },
            AggregateFunction::Min | AggregateFunction::Max => State::MinMax(BTreeMap::new()),
            // User functions are built by `Accumulator::java`/`rust`; this is an empty count
            // that no call reads.
            AggregateFunction::User => State::Count(0),
            AggregateFunction::StddevPop
            | AggregateFunction::StddevSamp
            | AggregateFunction::VarPop
            | AggregateFunction::VarSamp => State::Moments {
                n: 0,
                mean: 0.0,
                m2: 0.0,
            },
            AggregateFunction::ListAgg
            | AggregateFunction::FirstValue
            | AggregateFunction::LastValue
            | AggregateFunction::ArrayAgg => State::Values(Vec::new()),
        };
        let (input_precision, input_scale) = match input {
            Some(DataType::Decimal128(p, s)) => (*p, *s),
            _ => (0, 0),
        };
        Self {
            function,
            state,
            distinct: distinct.then(HashMap::new),
            input_scale,
            input_precision,
            separator: Cow::Borrowed(","),
        }
    }

    /// A fresh accumulator of a Java `AggregateFunction` (`createAccumulator`).
    pub fn java(function: Arc<JavaAggregateFunction>) -> Result<Self, RuntimeError> {
        let acc = function
            .create_accumulator()
            .map_err(|e| RuntimeError::new(e.to_string()))?;
        Ok(Self {
            function: AggregateFunction::User,
            state: State::Java { function, acc },
            distinct: None,
            input_scale: 0,
            input_precision: 0,
            separator: Cow::Borrowed(""),
        })
    }

    /// A fresh accumulator of a Rust aggregate function (`create_accumulator`).
    pub fn rust(function: Arc<NativeAggregate>) -> Result<Self, RuntimeError> {
        let (_, acc) = function.apply(None, &[], &[]).map_err(RuntimeError::new)?;
        Ok(Self {
            function: AggregateFunction::User,
            state: State::Rust { function, acc },
            distinct: None,
            input_scale: 0,
            input_precision: 0,
            separator: Cow::Borrowed(""),
        })
    }

    /// Applies row `row` of the argument columns `args` of a user-defined aggregate
    /// (`accumulate`, or `retract` when `add` is false).
    pub fn update_user(
        &mut self,
        args: &[ArrayRef],
        row: usize,
        add: bool,
    ) -> Result<(), RuntimeError> {
        match &mut self.state {
            State::Java { function, acc } => function
                .update(acc, args, row, add)
                .map_err(|e| RuntimeError::new(e.to_string())),
            State::Rust { function, acc } => {
                let values =
                    row_of(args, &function.description().args, row).map_err(RuntimeError::new)?;
                let (_, next) = function
                    .apply(Some(acc), &[(add, values)], &[])
                    .map_err(RuntimeError::new)?;
                *acc = next;
                Ok(())
            }
            _ => Err(RuntimeError::new(
                "a built-in aggregate called as a user-defined one",
            )),
        }
    }

    /// The accumulator of an input that only adds rows (window aggregations): `MIN`/`MAX`
    /// keep only the extreme value instead of a count per distinct value.
    pub fn append_only(mut self) -> Self {
        if matches!(&self.state, State::MinMax(map) if map.is_empty()) {
            self.state = State::Extreme {
                best: None,
                count: 0,
            };
        }
        self
    }

    /// Sets `LISTAGG`'s separator.
    pub fn with_separator(mut self, separator: Option<&str>) -> Self {
        if let Some(s) = separator {
            self.separator = Cow::Owned(s.to_string());
        }
        self
    }

    /// Adds (`add`) or retracts row `row` of `arg` (`None` for `COUNT(*)`).
    pub fn update(
        &mut self,
        arg: Option<&ArrayRef>,
        row: usize,
        add: bool,
    ) -> Result<(), RuntimeError> {
        let Some(arg) = arg else {
            if let State::Count(c) = &mut self.state {
                *c += if add { 1 } else { -1 };
            }
            return Ok(());
        };
        // ARRAY_AGG keeps NULLs (Flink's default, RESPECT NULLS); the others skip them.
        if arg.is_null(row) && self.function != AggregateFunction::ArrayAgg {
            return Ok(());
        }
        if let Some(seen) = &mut self.distinct {
            let value = ScalarValue::try_from_array(arg.as_ref(), row)?;
            let count = seen.entry(value.clone()).or_insert(0);
            let before = *count;
            *count += if add { 1 } else { -1 };
            let after = *count;
            if after <= 0 {
                seen.remove(&value);
            }
            // Only the first occurrence adds and only the last retraction removes.
            let changes = (add && before == 0) || (!add && after == 0);
            if !changes {
                return Ok(());
            }
        }
        let sign: i64 = if add { 1 } else { -1 };
        let double = matches!(self.state, State::Moments { .. })
            .then(|| self.double_at(arg.as_ref(), row))
            .flatten();
        match &mut self.state {
            State::Java { .. } | State::Rust { .. } => {
                self.update_user(std::slice::from_ref(arg), row, add)?
            }
            State::Count(c) => *c += sign,
            State::Sum {
                int,
                decimal,
                float,
                count,
            } => {
                match num_at(arg.as_ref(), row) {
                    Some(Num::Int(v)) => *int = int.wrapping_add(v.wrapping_mul(sign)),
                    Some(Num::Decimal(v)) => *decimal = decimal.wrapping_add(v * i128::from(sign)),
                    Some(Num::Float(v)) => *float += v * sign as f64,
                    None => return Ok(()),
                }
                *count += sign;
            }
            State::MinMax(values) => {
                let key = OrdScalar(ScalarValue::try_from_array(arg.as_ref(), row)?);
                if add {
                    *values.entry(key).or_insert(0) += 1;
                } else if let Some(c) = values.get_mut(&key) {
                    *c -= 1;
                    if *c <= 0 {
                        values.remove(&key);
                    }
                }
            }
            State::Extreme { best, count } => {
                if !add {
                    return Err(RuntimeError::new(
                        "a retraction reached an append-only MIN/MAX accumulator",
                    ));
                }
                let value = OrdScalar(ScalarValue::try_from_array(arg.as_ref(), row)?);
                // Replace only a strictly worse value, as an equal one would join its entry in
                // the ordered map of `MinMax`.
                let better = best.as_ref().is_none_or(|b| {
                    let order = value.cmp(b);
                    if self.function == AggregateFunction::Min {
                        order == Ordering::Less
                    } else {
                        order == Ordering::Greater
                    }
                });
                if better {
                    *best = Some(value);
                }
                *count += 1;
            }
            State::Moments { n, mean, m2 } => {
                let Some(x) = double else {
                    return Ok(());
                };
                if add {
                    *n += 1;
                    let delta = x - *mean;
                    *mean += delta / *n as f64;
                    *m2 += delta * (x - *mean);
                } else if *n <= 1 {
                    (*n, *mean, *m2) = (0, 0.0, 0.0);
                } else {
                    *n -= 1;
                    let delta = x - *mean;
                    *mean -= delta / *n as f64;
                    *m2 -= delta * (x - *mean);
                }
            }
            State::Values(values) => {
                let value = ScalarValue::try_from_array(arg.as_ref(), row)?;
                if add {
                    values.push(value);
                } else {
                    // LAST_VALUE retracts the latest equal value, the others the earliest.
                    let found = if self.function == AggregateFunction::LastValue {
                        values.iter().rposition(|v| *v == value)
                    } else {
                        values.iter().position(|v| *v == value)
                    };
                    if let Some(i) = found {
                        values.remove(i);
                    }
                }
            }
        }
        Ok(())
    }

    /// The argument at `row` as a `DOUBLE` (decimals as Flink's `DecimalData.doubleValue`).
    fn double_at(&self, array: &dyn Array, row: usize) -> Option<f64> {
        Some(match num_at(array, row)? {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
            Num::Decimal(d) => {
                riffle_plan::double_of_decimal(d, self.input_precision, self.input_scale)
            }
        })
    }

    /// Adds the state of `other` (an accumulator of the same call) into this one, as when two
    /// session windows merge.
    pub fn merge(&mut self, other: &Accumulator) -> Result<(), RuntimeError> {
        if let (Some(mine), Some(theirs)) = (&mut self.distinct, &other.distinct) {
            // Re-add the values this side has not seen, once each.
            let new: Vec<ScalarValue> = theirs
                .keys()
                .filter(|v| !mine.contains_key(*v))
                .cloned()
                .collect();
            for (v, c) in theirs {
                *mine.entry(v.clone()).or_insert(0) += c;
            }
            let distinct = self.distinct.take();
            for v in new {
                let array = v.to_array()?;
                self.update(Some(&array), 0, true)?;
            }
            self.distinct = distinct;
            return Ok(());
        }
        match (&mut self.state, &other.state) {
            (State::Count(a), State::Count(b)) => *a += b,
            (
                State::Sum {
                    int,
                    decimal,
                    float,
                    count,
                },
                State::Sum {
                    int: i2,
                    decimal: d2,
                    float: f2,
                    count: c2,
                },
            ) => {
                *int = int.wrapping_add(*i2);
                *decimal = decimal.wrapping_add(*d2);
                *float += f2;
                *count += c2;
            }
            (State::MinMax(a), State::MinMax(b)) => {
                for (v, c) in b {
                    *a.entry(v.clone()).or_insert(0) += c;
                }
            }
            (State::Extreme { best, count }, State::Extreme { best: b, count: c }) => {
                if let Some(other) = b {
                    let better = best.as_ref().is_none_or(|mine| {
                        let order = other.cmp(mine);
                        if self.function == AggregateFunction::Min {
                            order == Ordering::Less
                        } else {
                            order == Ordering::Greater
                        }
                    });
                    if better {
                        *best = Some(other.clone());
                    }
                }
                *count += c;
            }
            (State::Java { function, acc }, State::Java { acc: other, .. }) => function
                .merge(acc, other)
                .map_err(|e| RuntimeError::new(e.to_string()))?,
            (State::Rust { function, acc }, State::Rust { acc: other, .. }) => {
                let (_, next) = function
                    .apply(Some(acc), &[], std::slice::from_ref(other))
                    .map_err(RuntimeError::new)?;
                *acc = next;
            }
            (
                State::Moments { n, mean, m2 },
                State::Moments {
                    n: n2,
                    mean: mean2,
                    m2: m22,
                },
            ) => {
                // Chan et al.'s combination of two partial results.
                let total = *n + n2;
                if total > 0 {
                    let delta = mean2 - *mean;
                    let (na, nb, nt) = (*n as f64, *n2 as f64, total as f64);
                    *mean += delta * nb / nt;
                    *m2 += m22 + delta * delta * na * nb / nt;
                    *n = total;
                }
            }
            (State::Values(a), State::Values(b)) => a.extend(b.iter().cloned()),
            _ => return Err(RuntimeError::new("merging accumulators of different calls")),
        }
        Ok(())
    }

    /// The aggregate's current value as a scalar of `out` (the call's result type).
    pub fn value(&self, out: &DataType) -> Result<ScalarValue, RuntimeError> {
        let null = || ScalarValue::try_from(out).map_err(RuntimeError::from);
        match (&self.state, self.function) {
            (State::Java { function, acc }, _) => {
                let array = function
                    .value(acc, out)
                    .map_err(|e| RuntimeError::new(e.to_string()))?;
                Ok(ScalarValue::try_from_array(array.as_ref(), 0)?)
            }
            (State::Rust { function, acc }, _) => {
                let (value, _) = function
                    .apply(Some(acc), &[], &[])
                    .map_err(RuntimeError::new)?;
                let array = column_of(&[vec![value]], 0, function.result_type())
                    .map_err(RuntimeError::new)?;
                let array = arrow::compute::cast(&array, out)?;
                Ok(ScalarValue::try_from_array(array.as_ref(), 0)?)
            }
            (State::Count(c), _) => Ok(ScalarValue::Int64(Some(*c))),
            (State::Sum { count, .. }, _) if *count <= 0 => null(),
            (
                State::Sum {
                    int,
                    decimal,
                    float,
                    count,
                },
                f,
            ) => {
                let avg = f == AggregateFunction::Avg;
                match out {
                    DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                        let v = if avg { int.wrapping_div(*count) } else { *int };
                        // Java integer arithmetic wraps at the result width.
                        Ok(match out {
                            DataType::Int8 => ScalarValue::Int8(Some(v as i8)),
                            DataType::Int16 => ScalarValue::Int16(Some(v as i16)),
                            DataType::Int32 => ScalarValue::Int32(Some(v as i32)),
                            _ => ScalarValue::Int64(Some(v)),
                        })
                    }
                    DataType::Decimal128(p, s) => {
                        let v = if avg {
                            avg_decimal(*decimal, *count, self.input_scale, *s)
                        } else {
                            *decimal
                        };
                        if v.unsigned_abs() >= 10u128.pow(u32::from(*p)) {
                            return null();
                        }
                        Ok(ScalarValue::Decimal128(Some(v), *p, *s))
                    }
                    DataType::Float32 => Ok(ScalarValue::Float32(Some(
                        (if avg { float / *count as f64 } else { *float }) as f32,
                    ))),
                    _ => Ok(ScalarValue::Float64(Some(if avg {
                        float / *count as f64
                    } else {
                        *float
                    }))),
                }
            }
            (State::MinMax(values), f) => {
                let v = if f == AggregateFunction::Min {
                    values.keys().next()
                } else {
                    values.keys().next_back()
                };
                match v {
                    Some(v) => Ok(v.0.clone()),
                    None => null(),
                }
            }
            (State::Extreme { best, .. }, _) => match best {
                Some(v) => Ok(v.0.clone()),
                None => null(),
            },
            (State::Moments { n, m2, .. }, f) => {
                let sample = matches!(
                    f,
                    AggregateFunction::StddevSamp | AggregateFunction::VarSamp
                );
                let divisor = if sample { *n - 1 } else { *n };
                if divisor <= 0 {
                    return null();
                }
                let variance = m2 / divisor as f64;
                let stddev = matches!(
                    f,
                    AggregateFunction::StddevPop | AggregateFunction::StddevSamp
                );
                double_as(if stddev { variance.sqrt() } else { variance }, out)
                    .map_or_else(null, Ok)
            }
            (State::Values(values), AggregateFunction::ListAgg) => {
                if values.is_empty() {
                    return null();
                }
                let texts: Vec<String> = values
                    .iter()
                    .map(|v| match v {
                        ScalarValue::Utf8(Some(s))
                        | ScalarValue::LargeUtf8(Some(s))
                        | ScalarValue::Utf8View(Some(s)) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                Ok(ScalarValue::Utf8(Some(texts.join(&*self.separator))))
            }
            (State::Values(values), AggregateFunction::ArrayAgg) => {
                let DataType::List(element) = out else {
                    return Err(RuntimeError::new(format!("ARRAY_AGG into {out}")));
                };
                if values.is_empty() {
                    return null();
                }
                Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    values,
                    element.data_type(),
                )))
            }
            (State::Values(values), f) => {
                let v = if f == AggregateFunction::LastValue {
                    values.last()
                } else {
                    values.first()
                };
                match v {
                    Some(v) => Ok(v.clone()),
                    None => null(),
                }
            }
        }
    }
}

impl Accumulator {
    /// Writes the running state; `arg` encodes values of the argument's type (kept by
    /// `MIN`/`MAX`, `LISTAGG`, `FIRST_VALUE`/`LAST_VALUE` and `DISTINCT`).
    pub fn write_state(
        &self,
        w: &mut StateWriter,
        arg: Option<&ScalarCodec>,
    ) -> Result<(), RuntimeError> {
        let values = |w: &mut StateWriter,
                      entries: &mut dyn Iterator<Item = (&ScalarValue, i64)>,
                      len: usize|
         -> Result<(), RuntimeError> {
            w.length(len);
            for (v, c) in entries {
                let Some(codec) = arg else {
                    return Err(RuntimeError::new(
                        "accumulator values without an argument type",
                    ));
                };
                codec.write(w, std::slice::from_ref(v))?;
                w.i64(c);
            }
            Ok(())
        };
        match &self.state {
            State::Count(c) => {
                w.u8(0);
                w.i64(*c);
            }
            State::Sum {
                int,
                decimal,
                float,
                count,
            } => {
                w.u8(1);
                w.i64(*int);
                w.i128(*decimal);
                w.f64(*float);
                w.i64(*count);
            }
            State::MinMax(map) => {
                w.u8(2);
                values(w, &mut map.iter().map(|(k, c)| (&k.0, *c)), map.len())?;
            }
            State::Extreme { best, count } => {
                // As the one-entry map of `MinMax`, so either form restores it.
                w.u8(2);
                let entry = best.as_ref().map(|b| (&b.0, *count));
                values(w, &mut entry.into_iter(), usize::from(best.is_some()))?;
            }
            State::Moments { n, mean, m2 } => {
                w.u8(3);
                w.i64(*n);
                w.f64(*mean);
                w.f64(*m2);
            }
            State::Values(list) => {
                // In arrival order, each once.
                w.u8(4);
                values(w, &mut list.iter().map(|v| (v, 1)), list.len())?;
            }
            State::Java { .. } => {
                return Err(RuntimeError::new(
                    "unsupported feature: checkpoints of jobs with Java aggregate functions \
                     (their accumulators are Java objects)",
                ))
            }
            State::Rust { acc, .. } => {
                w.u8(5);
                let mut encoded = riffle_udf::codec::Writer::default();
                encoded.batch(std::slice::from_ref(acc), acc.len());
                w.bytes(&encoded.0);
            }
        }
        w.bool(self.distinct.is_some());
        if let Some(seen) = &self.distinct {
            values(w, &mut seen.iter().map(|(k, c)| (k, *c)), seen.len())?;
        }
        Ok(())
    }

    /// Replaces the running state with one written by [`Self::write_state`].
    pub fn read_state(
        &mut self,
        r: &mut StateReader<'_>,
        arg: Option<&ScalarCodec>,
    ) -> Result<(), RuntimeError> {
        let values = |r: &mut StateReader<'_>| -> Result<Vec<(ScalarValue, i64)>, RuntimeError> {
            let n = r.length()?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let Some(codec) = arg else {
                    return Err(RuntimeError::new(
                        "accumulator values without an argument type",
                    ));
                };
                let v = codec
                    .read(r)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| RuntimeError::new("accumulator state value is missing"))?;
                out.push((v, r.i64()?));
            }
            Ok(out)
        };
        self.state = match r.u8()? {
            0 => State::Count(r.i64()?),
            1 => State::Sum {
                int: r.i64()?,
                decimal: r.i128()?,
                float: r.f64()?,
                count: r.i64()?,
            },
            2 => {
                let entries = values(r)?;
                match (&self.state, entries.as_slice()) {
                    (State::Extreme { .. }, []) => State::Extreme {
                        best: None,
                        count: 0,
                    },
                    (State::Extreme { .. }, [(v, c)]) => State::Extreme {
                        best: Some(OrdScalar(v.clone())),
                        count: *c,
                    },
                    _ => State::MinMax(
                        entries
                            .into_iter()
                            .map(|(v, c)| (OrdScalar(v), c))
                            .collect(),
                    ),
                }
            }
            3 => State::Moments {
                n: r.i64()?,
                mean: r.f64()?,
                m2: r.f64()?,
            },
            4 => State::Values(values(r)?.into_iter().map(|(v, _)| v).collect()),
            5 => {
                let State::Rust { function, .. } = &self.state else {
                    return Err(RuntimeError::new(
                        "a Rust aggregate's state restored into another aggregate call",
                    ));
                };
                let acc = riffle_udf::codec::Reader::new(r.bytes()?)
                    .batch()
                    .map_err(RuntimeError::new)?
                    .pop()
                    .ok_or_else(|| RuntimeError::new("a Rust aggregate's state is empty"))?;
                State::Rust {
                    function: function.clone(),
                    acc,
                }
            }
            other => {
                return Err(RuntimeError::new(format!(
                    "corrupted accumulator state (kind {other})"
                )))
            }
        };
        self.distinct = if r.bool()? {
            Some(values(r)?.into_iter().collect())
        } else {
            None
        };
        Ok(())
    }
}

/// A `DOUBLE` result as the aggregate's result type: integers truncate (Java's casts), decimals
/// round half-up; None when it has no such value.
fn double_as(v: f64, out: &DataType) -> Option<ScalarValue> {
    Some(match out {
        DataType::Float32 => ScalarValue::Float32(Some(v as f32)),
        DataType::Int8 => ScalarValue::Int8(Some(v as i32 as i8)),
        DataType::Int16 => ScalarValue::Int16(Some(v as i32 as i16)),
        DataType::Int32 => ScalarValue::Int32(Some(v as i32)),
        DataType::Int64 => ScalarValue::Int64(Some(v as i64)),
        DataType::Decimal128(p, s) => {
            let units = riffle_plan::decimal_of_double(v, *s)?;
            if units.unsigned_abs() >= 10u128.pow(u32::from(*p)) {
                return None;
            }
            ScalarValue::Decimal128(Some(units), *p, *s)
        }
        _ => ScalarValue::Float64(Some(v)),
    })
}

/// `sum / count` of a decimal sum in `in_scale` units, rescaled to `out_scale`, rounded half-up.
fn avg_decimal(sum: i128, count: i64, in_scale: i8, out_scale: i8) -> i128 {
    let shift = u32::try_from(i32::from(out_scale) - i32::from(in_scale)).unwrap_or(0);
    let scaled = sum.saturating_mul(10i128.saturating_pow(shift));
    let count = i128::from(count);
    let q = scaled / count;
    let r = scaled % count;
    if 2 * r.abs() >= count.abs() {
        q + scaled.signum() * count.signum()
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Decimal128Array, Int32Array};

    use super::*;

    #[test]
    fn sum_and_avg_follow_flink_types() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(i32::MAX),
            Some(1),
            None,
            Some(4),
        ]));
        let mut sum = Accumulator::new(AggregateFunction::Sum, false, Some(&DataType::Int32));
        let mut avg = Accumulator::new(AggregateFunction::Avg, false, Some(&DataType::Int32));
        for row in 0..4 {
            sum.update(Some(&ints), row, true).unwrap();
            avg.update(Some(&ints), row, true).unwrap();
        }
        assert_eq!(
            sum.value(&DataType::Int32).unwrap(),
            ScalarValue::Int32(Some(i32::MIN + 4))
        );
        assert_eq!(
            avg.value(&DataType::Int32).unwrap(),
            ScalarValue::Int32(Some(715_827_884))
        );
        let decimals: ArrayRef = Arc::new(
            Decimal128Array::from(vec![100, 200, 200])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        let mut avg = Accumulator::new(
            AggregateFunction::Avg,
            false,
            Some(&DataType::Decimal128(10, 2)),
        );
        for row in 0..3 {
            avg.update(Some(&decimals), row, true).unwrap();
        }
        assert_eq!(
            avg.value(&DataType::Decimal128(38, 6)).unwrap(),
            ScalarValue::Decimal128(Some(1_666_667), 38, 6)
        );
    }

    #[test]
    fn array_agg_keeps_nulls_in_order_and_retracts_one_equal_value() {
        let out = DataType::List(Arc::new(arrow::datatypes::Field::new(
            "item",
            DataType::Int32,
            true,
        )));
        let mut acc = Accumulator::new(AggregateFunction::ArrayAgg, false, Some(&DataType::Int32));
        assert!(acc.value(&out).unwrap().is_null());
        let v: ArrayRef = Arc::new(arrow::array::Int32Array::from(vec![
            Some(1),
            None,
            Some(1),
            Some(2),
        ]));
        for row in 0..4 {
            acc.update(Some(&v), row, true).unwrap();
        }
        acc.update(Some(&v), 0, false).unwrap();
        let list = acc.value(&out).unwrap().to_array().unwrap();
        let values = list.as_list::<i32>().value(0);
        let values: Vec<Option<i32>> = values.as_primitive::<Int32Type>().iter().collect();
        assert_eq!(values, [None, Some(1), Some(2)]);
    }

    #[test]
    fn min_max_and_distinct_retract() {
        let v: ArrayRef = Arc::new(Int32Array::from(vec![5, 9, 3, 9]));
        let mut max = Accumulator::new(AggregateFunction::Max, false, Some(&DataType::Int32));
        let mut distinct = Accumulator::new(AggregateFunction::Count, true, Some(&DataType::Int32));
        for row in 0..4 {
            max.update(Some(&v), row, true).unwrap();
            distinct.update(Some(&v), row, true).unwrap();
        }
        assert_eq!(
            distinct.value(&DataType::Int64).unwrap(),
            ScalarValue::Int64(Some(3))
        );
        max.update(Some(&v), 1, false).unwrap();
        assert_eq!(
            max.value(&DataType::Int32).unwrap(),
            ScalarValue::Int32(Some(9))
        );
        max.update(Some(&v), 3, false).unwrap();
        assert_eq!(
            max.value(&DataType::Int32).unwrap(),
            ScalarValue::Int32(Some(5))
        );
        distinct.update(Some(&v), 1, false).unwrap();
        assert_eq!(
            distinct.value(&DataType::Int64).unwrap(),
            ScalarValue::Int64(Some(3))
        );
        let mut empty = Accumulator::new(AggregateFunction::Sum, false, Some(&DataType::Int32));
        empty.update(Some(&v), 0, true).unwrap();
        empty.update(Some(&v), 0, false).unwrap();
        assert_eq!(
            empty.value(&DataType::Int32).unwrap(),
            ScalarValue::Int32(None)
        );
    }
}

#[cfg(test)]
mod append_only_tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, StringArray};

    use super::*;

    /// An append-only MIN/MAX gives what the retractable one gives, also across a checkpoint
    /// and a merge, and writes the same state.
    #[test]
    fn append_only_min_max_equal_the_retractable_ones() {
        let inputs: Vec<(DataType, ArrayRef)> = vec![
            (
                DataType::Float64,
                Arc::new(Float64Array::from(vec![
                    Some(2.5),
                    None,
                    Some(-1.0),
                    Some(f64::NAN),
                    Some(7.0),
                    Some(7.0),
                ])),
            ),
            (
                DataType::Utf8,
                Arc::new(StringArray::from(vec![
                    Some("b"),
                    None,
                    Some("a"),
                    Some("c"),
                ])),
            ),
        ];
        for (t, values) in &inputs {
            let codec = ScalarCodec::new(std::slice::from_ref(t)).unwrap();
            for f in [AggregateFunction::Min, AggregateFunction::Max] {
                let mut plain = Accumulator::new(f, false, Some(t));
                let mut fast = Accumulator::new(f, false, Some(t)).append_only();
                assert_eq!(fast.value(t).unwrap(), plain.value(t).unwrap());
                for row in 0..values.len() {
                    plain.update(Some(values), row, true).unwrap();
                    fast.update(Some(values), row, true).unwrap();
                    assert_eq!(
                        fast.value(t).unwrap(),
                        plain.value(t).unwrap(),
                        "{f:?} {row}"
                    );
                }
                let mut written = StateWriter::new();
                fast.write_state(&mut written, Some(&codec)).unwrap();
                let written = written.finish();
                let mut restored = Accumulator::new(f, false, Some(t)).append_only();
                restored
                    .read_state(&mut StateReader::new(&written, "test"), Some(&codec))
                    .unwrap();
                assert_eq!(restored.value(t).unwrap(), plain.value(t).unwrap());
                let mut merged = Accumulator::new(f, false, Some(t)).append_only();
                merged.merge(&restored).unwrap();
                assert_eq!(merged.value(t).unwrap(), plain.value(t).unwrap());
                assert!(fast.update(Some(values), 0, false).is_err());
            }
        }
    }
}
