//! The correlate operator: a table function (`UNNEST`, a Java `TableFunction`) called per
//! input row, each row it produces joined to the input row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::ChangeBatch;
use riffle_jvm::JavaTableFunction;
use riffle_plan::correlate::{CorrelateSpec, TableFunction};
use riffle_plan::FlinkSession;
use riffle_udf::codec::Description;
use riffle_udf::host::{column_of, rows_of, NativeLibrary};
use riffle_udf::Value;

use super::{evaluate, Emit, StreamOperator};
use crate::task::RuntimeError;

/// The rows a table function produced for a batch: per row, the input row it belongs to
/// (ascending), and the function's columns.
struct Produced {
    owners: Vec<u32>,
    columns: Vec<ArrayRef>,
}

/// A table function over argument columns.
enum Expander {
    Unnest {
        with_ordinality: bool,
    },
    Replicate,
    Java(JavaTableFunction),
    Rust {
        library: Arc<NativeLibrary>,
        function: Description,
    },
}

impl Expander {
    fn expand(
        &self,
        args: &[ArrayRef],
        rows: usize,
        types: &[DataType],
    ) -> Result<Produced, RuntimeError> {
        match self {
            Expander::Unnest { with_ordinality } => match args {
                [collection] => unnest(collection, *with_ordinality),
                _ => Err(RuntimeError::new("UNNEST takes one collection")),
            },
            Expander::Replicate => match args {
                [count] => replicate(count),
                _ => Err(RuntimeError::new("REPLICATE_ROWS takes one count")),
            },
            Expander::Java(f) => {
                let out = f
                    .eval(args, rows, types)
                    .map_err(|e| RuntimeError::new(e.to_string()))?;
                Ok(Produced {
                    owners: out.owners,
                    columns: out.columns,
                })
            }
            Expander::Rust { library, function } => {
                rust_rows(library, function, args, rows).map_err(RuntimeError::new)
            }
        }
    }
}

/// Calls a Rust table function: each result row starts with its argument row's index.
fn rust_rows(
    library: &NativeLibrary,
    function: &Description,
    args: &[ArrayRef],
    rows: usize,
) -> Result<Produced, String> {
    let input = rows_of(args, &function.args, rows)?;
    let out = library.call(&function.name, &input, function.args.len())?;
    let owners = out
        .iter()
        .map(|r| match r.first() {
            Some(Value::BigInt(i)) if (0..rows as i64).contains(i) => Ok(*i as u32),
            other => Err(format!("bad argument row index {other:?}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let columns = function
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, t))| column_of(&out, i + 1, *t))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Produced { owners, columns })
}

/// Each row `count` times (a NULL or non-positive count: never), with no columns.
fn replicate(count: &ArrayRef) -> Result<Produced, RuntimeError> {
    let counts = cast(count, &DataType::Int64)?;
    let counts = counts.as_primitive::<arrow::datatypes::Int64Type>();
    let mut owners = Vec::new();
    for (row, n) in counts.iter().enumerate() {
        let n = usize::try_from(n.unwrap_or(0)).unwrap_or(0);
        owners.extend(std::iter::repeat_n(row as u32, n));
    }
    Ok(Produced {
        owners,
        columns: Vec::new(),
    })
}

/// The elements of each array (a ROW element as its fields) or the entries of each map.
fn unnest(collection: &ArrayRef, with_ordinality: bool) -> Result<Produced, RuntimeError> {
    let (offsets, values): (Vec<i64>, ArrayRef) = match collection.data_type() {
        DataType::List(_) => {
            let list = collection.as_list::<i32>();
            (
                list.offsets().iter().map(|o| i64::from(*o)).collect(),
                list.values().clone(),
            )
        }
        DataType::LargeList(_) => {
            let list = collection.as_list::<i64>();
            (list.offsets().to_vec(), list.values().clone())
        }
        DataType::Map(_, _) => {
            let map = collection.as_map();
            (
                map.offsets().iter().map(|o| i64::from(*o)).collect(),
                Arc::new(map.entries().clone()) as ArrayRef,
            )
        }
        other => {
            return Err(RuntimeError::new(format!(
                "cannot UNNEST a value of type {other}"
            )))
        }
    };
    let mut owners = Vec::new();
    let mut indices = Vec::new();
    let mut ordinals = Vec::new();
    for row in 0..collection.len() {
        if collection.is_null(row) {
            continue;
        }
        let (start, end) = (offsets[row], offsets[row + 1]);
        for (n, i) in (start..end).enumerate() {
            owners.push(row as u32);
            indices.push(i as u32);
            ordinals.push(n as i32 + 1);
        }
    }
    let taken = take(values.as_ref(), &UInt32Array::from(indices), None)?;
    let mut columns = match taken.data_type() {
        // ROW elements and map entries are several columns; a NULL ROW element gives NULLs.
        DataType::Struct(_) => {
            let s = taken.as_struct();
            s.columns()
                .iter()
                .map(|c| match s.nulls() {
                    Some(nulls) if s.null_count() > 0 => with_nulls(c, nulls),
                    _ => Ok(c.clone()),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        _ => vec![taken],
    };
    if with_ordinality {
        columns.push(Arc::new(Int32Array::from(ordinals)));
    }
    Ok(Produced { owners, columns })
}

/// `column` with the rows NULL where `nulls` marks them.
fn with_nulls(
    column: &ArrayRef,
    nulls: &arrow::buffer::NullBuffer,
) -> Result<ArrayRef, RuntimeError> {
    let indices: UInt32Array = (0..column.len() as u32)
        .map(|i| nulls.is_valid(i as usize).then_some(i))
        .collect();
    Ok(take(column.as_ref(), &indices, None)?)
}

/// Calls a table function per input row and joins its rows to the row.
pub(super) struct Correlate {
    args: Vec<Arc<dyn PhysicalExpr>>,
    expander: Expander,
    left_outer: bool,
    condition: Option<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    /// Number of input columns (the output's first columns).
    input_width: usize,
}

impl Correlate {
    pub(super) fn new(
        spec: &CorrelateSpec,
        input: &SchemaRef,
        schema: SchemaRef,
        session: &FlinkSession,
    ) -> Result<Self, RuntimeError> {
        let compile = |sql: &str, over: &SchemaRef| {
            session
                .physical_expr(sql, over)
                .map_err(|e| RuntimeError::new(format!("cannot compile `{sql}`: {e}")))
        };
        let args = spec
            .args
            .iter()
            .map(|a| compile(a, input))
            .collect::<Result<_, _>>()?;
        let condition = spec
            .condition
            .as_deref()
            .map(|c| compile(c, &schema))
            .transpose()?;
        let expander = match &spec.function {
            TableFunction::Unnest { with_ordinality } => Expander::Unnest {
                with_ordinality: *with_ordinality,
            },
            TableFunction::Replicate => Expander::Replicate,
            TableFunction::Java {
                name,
                class,
                jars,
                arg_types,
            } => Expander::Java(
                JavaTableFunction::resolve(name, class, jars, arg_types)
                    .map_err(|e| RuntimeError::new(e.to_string()))?,
            ),
            TableFunction::Rust {
                library, function, ..
            } => {
                let library = NativeLibrary::open(library).map_err(RuntimeError::new)?;
                let Some(function) = library.function(function).cloned() else {
                    return Err(RuntimeError::new(format!(
                        "Rust function library has no function '{function}'"
                    )));
                };
                Expander::Rust { library, function }
            }
        };
        Ok(Self {
            args,
            expander,
            left_outer: spec.left_outer,
            condition,
            schema,
            input_width: input.fields().len(),
        })
    }
}

impl StreamOperator for Correlate {
    // Stateless: a Java table function's fields are not state Flink checkpoints either.
    stateless!();

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let ChangeBatch { batch, kinds } = batch;
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(());
        }
        let args = self
            .args
            .iter()
            .map(|a| evaluate(a, &batch))
            .collect::<Result<Vec<_>, _>>()?;
        let types: Vec<DataType> = self.schema.fields()[self.input_width..]
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let produced = self.expander.expand(&args, rows, &types)?;
        let mut function_columns = Vec::with_capacity(types.len());
        for (column, t) in produced.columns.iter().zip(&types) {
            function_columns.push(if column.data_type() == t {
                column.clone()
            } else {
                cast(column, t)?
            });
        }
        // Rows of the function that meet the condition.
        let owners = UInt32Array::from(produced.owners.clone());
        let keep: Vec<bool> = match &self.condition {
            None => vec![true; produced.owners.len()],
            Some(condition) => {
                let mut columns = Vec::with_capacity(self.schema.fields().len());
                for c in batch.columns() {
                    columns.push(take(c.as_ref(), &owners, None)?);
                }
                columns.extend(function_columns.iter().cloned());
                let options = RecordBatchOptions::new().with_row_count(Some(owners.len()));
                let joined =
                    RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
                let mask = evaluate(condition, &joined)?;
                let Some(mask) = mask.as_boolean_opt() else {
                    return Err(RuntimeError::new("join condition is not boolean"));
                };
                (0..mask.len())
                    .map(|i| mask.is_valid(i) && mask.value(i))
                    .collect()
            }
        };
        // Output rows in input order: each input row's function rows, or (LEFT) the row once
        // padded with NULLs.
        let mut left = Vec::new();
        let mut right: Vec<Option<u32>> = Vec::new();
        let mut next = 0;
        for row in 0..rows as u32 {
            let mut joined = false;
            while next < produced.owners.len() && produced.owners[next] == row {
                if keep[next] {
                    left.push(row);
                    right.push(Some(next as u32));
                    joined = true;
                }
                next += 1;
            }
            if !joined && self.left_outer {
                left.push(row);
                right.push(None);
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        let left_indices = UInt32Array::from(left.clone());
        let right_indices = UInt32Array::from(right);
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for (c, field) in batch.columns().iter().zip(self.schema.fields()) {
            let taken = take(c.as_ref(), &left_indices, None)?;
            columns.push(if taken.data_type() == field.data_type() {
                taken
            } else {
                cast(&taken, field.data_type())?
            });
        }
        for c in &function_columns {
            columns.push(take(c.as_ref(), &right_indices, None)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(left.len()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let kinds = kinds.map(|k| left.iter().map(|&i| k[i as usize]).collect());
        out.push(Emit::Data(ChangeBatch { batch, kinds }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ListArray, StringArray};
    use arrow::datatypes::Int32Type;

    #[test]
    fn unnest_skips_null_and_empty_arrays_and_numbers_elements() {
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![]),
            Some(vec![None]),
        ]));
        let p = unnest(&list, true).unwrap();
        assert_eq!(p.owners, vec![0, 0, 3]);
        assert_eq!(p.columns[0].len(), 3);
        assert!(p.columns[0].is_null(2));
        let ordinals = p.columns[1].as_primitive::<arrow::datatypes::Int32Type>();
        assert_eq!(ordinals.values().to_vec(), vec![1, 2, 1]);
    }

    #[test]
    fn replicate_repeats_rows_by_their_count() {
        let counts: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![
            Some(2),
            None,
            Some(0),
            Some(-1),
            Some(1),
        ]));
        let produced = replicate(&counts).unwrap();
        assert_eq!(produced.owners, vec![0, 0, 4]);
        assert!(produced.columns.is_empty());
    }

    #[test]
    fn unnest_refuses_a_scalar() {
        let s: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        assert!(unnest(&s, false).is_err());
    }
}
