//! Flink functions written as a rule for one row of (already coerced) argument values.
//!
//! Most of Flink's scalar functions are small rules over one row's values; [`RowFunction`] holds
//! such a rule with its argument signatures and result type, and does the per-row evaluation
//! over Arrow arrays, so each function is only its rule.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::zone::LocalZone;
use crate::types::flink_type;

/// An argument class of a function signature and the Arrow type its values are coerced to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// Character strings (`STRING`), as `Utf8`.
    Str,
    /// Integer numbers, unchanged (so constant arguments stay visible to result typing).
    Int,
    /// Any number, as `Float64` (Flink computes these functions on `double`).
    Double,
    /// Integers and decimals, unchanged.
    Exact,
    /// Any type, unchanged.
    Any,
}

impl Arg {
    /// The type a value of type `t` is coerced to, when this class accepts it.
    fn coerce(self, t: &DataType) -> Option<DataType> {
        let null = matches!(t, DataType::Null);
        match self {
            Arg::Str if null || is_text(t) => Some(DataType::Utf8),
            Arg::Int if t.is_integer() => Some(t.clone()),
            Arg::Int if null => Some(DataType::Int64),
            Arg::Double if null || t.is_numeric() => Some(DataType::Float64),
            Arg::Exact if t.is_integer() || matches!(t, DataType::Decimal128(..)) => {
                Some(t.clone())
            }
            Arg::Any => Some(t.clone()),
            _ => None,
        }
    }
}

/// True for Arrow's string types.
pub(super) fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// What a rule may depend on besides its arguments.
pub(super) struct Context {
    /// The session time zone (`table.local-time-zone`).
    pub zone: LocalZone,
}

/// The rule of a function: the value for one row's argument values.
type Rule = dyn Fn(&[ScalarValue], &Context) -> DfResult<ScalarValue> + Send + Sync;
/// The result type for the coerced argument types and the constant arguments' values.
type ReturnType = dyn Fn(&[DataType], &[Option<&ScalarValue>]) -> DataType + Send + Sync;
/// A whole-batch evaluation for the argument arrays and the result type: `Some` when it gives
/// exactly what the rule gives row by row, `None` to fall back to the rule.
type Kernel = dyn Fn(&[ColumnarValue], &DataType) -> DfResult<Option<ArrayRef>> + Send + Sync;
/// A check of the argument types and constant arguments while planning (`Err`: Flink's message).
type Validation = dyn Fn(&[DataType], &[Option<&ScalarValue>]) -> Result<(), String> + Send + Sync;

/// A Flink scalar function evaluated row by row.
pub(super) struct RowFunction {
    name: &'static str,
    aliases: Vec<String>,
    signature: Signature,
    overloads: Vec<Vec<Arg>>,
    /// Variadic functions: every argument after the fixed ones is of this class.
    rest: Option<Arg>,
    return_type: Box<ReturnType>,
    validation: Option<Box<Validation>>,
    /// NULL when any argument is NULL, without calling the rule (most of Flink's functions).
    strict: bool,
    /// NOT NULL when every argument is NOT NULL (as Flink types `CAST`); a NULL result for
    /// such arguments fails, as Flink's NOT NULL constraint on the value does.
    keeps_not_null: bool,
    rule: Box<Rule>,
    /// A faster path for whole batches, tried before the rule ([`RowFunction::with_kernel`]).
    kernel: Option<Box<Kernel>>,
}

impl std::fmt::Debug for RowFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for RowFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for RowFunction {}

impl std::hash::Hash for RowFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl RowFunction {
    /// A strict function `name` accepting any of `overloads`, returning `returns`.
    pub(super) fn new(
        name: &'static str,
        overloads: &[&[Arg]],
        returns: DataType,
        rule: impl Fn(&[ScalarValue]) -> DfResult<ScalarValue> + Send + Sync + 'static,
    ) -> Self {
        Self::with_context(name, overloads, returns, move |v, _| rule(v))
    }

    /// A strict function whose rule also depends on the session ([`Context`]).
    pub(super) fn with_context(
        name: &'static str,
        overloads: &[&[Arg]],
        returns: DataType,
        rule: impl Fn(&[ScalarValue], &Context) -> DfResult<ScalarValue> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            aliases: Vec::new(),
            signature: Signature::user_defined(Volatility::Immutable),
            overloads: overloads.iter().map(|o| o.to_vec()).collect(),
            rest: None,
            return_type: Box::new(move |_, _| returns.clone()),
            validation: None,
            strict: true,
            keeps_not_null: false,
            rule: Box::new(rule),
            kernel: None,
        }
    }

    /// The result is NOT NULL when every argument is (see [`RowFunction::keeps_not_null`]).
    pub(super) fn keeping_not_null(mut self) -> Self {
        self.keeps_not_null = true;
        self
    }

    /// Also callable as `alias`.
    pub(super) fn alias(mut self, alias: &str) -> Self {
        self.aliases.push(alias.to_string());
        self
    }

    /// The rule also sees NULL arguments (it decides the result for them).
    pub(super) fn lenient(mut self) -> Self {
        self.strict = false;
        self
    }

    /// The result differs between calls with the same arguments (random numbers, the clock):
    /// never folded into a constant while planning nor shared between call sites.
    pub(super) fn volatile(mut self) -> Self {
        self.signature = Signature::user_defined(Volatility::Volatile);
        self
    }

    /// Accepts any number of further arguments of class `arg`.
    pub(super) fn variadic(mut self, arg: Arg) -> Self {
        self.rest = Some(arg);
        self
    }

    /// The result type depends on the (coerced) argument types.
    pub(super) fn returning(
        mut self,
        f: impl Fn(&[DataType]) -> DataType + Send + Sync + 'static,
    ) -> Self {
        self.return_type = Box::new(move |types, _| f(types));
        self
    }

    /// The result type depends on the argument types and the values of constant arguments.
    pub(super) fn returning_with_constants(
        mut self,
        f: impl Fn(&[DataType], &[Option<&ScalarValue>]) -> DataType + Send + Sync + 'static,
    ) -> Self {
        self.return_type = Box::new(f);
        self
    }

    /// Evaluates whole batches with `kernel` where it can (see [`Kernel`]): the rule stays the
    /// definition, the kernel a shortcut for the cases it proves identical.
    pub(super) fn with_kernel(
        mut self,
        kernel: impl Fn(&[ColumnarValue], &DataType) -> DfResult<Option<ArrayRef>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.kernel = Some(Box::new(kernel));
        self
    }

    /// Rejects calls while planning (e.g. a constant argument out of range).
    pub(super) fn validating(
        mut self,
        f: impl Fn(&[DataType], &[Option<&ScalarValue>]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validation = Some(Box::new(f));
        self
    }

    fn coerce(&self, types: &[DataType]) -> Option<Vec<DataType>> {
        self.overloads.iter().find_map(|overload| {
            if types.len() < overload.len() || (types.len() > overload.len() && self.rest.is_none())
            {
                return None;
            }
            types
                .iter()
                .enumerate()
                .map(|(i, t)| overload.get(i).copied().or(self.rest)?.coerce(t))
                .collect()
        })
    }
}

impl ScalarUDFImpl for RowFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match self.coerce(arg_types) {
            Some(types) => Ok(types),
            None => {
                let types: Vec<String> = arg_types.iter().map(|t| flink_type(t, true)).collect();
                plan_err!(
                    "No match found for function signature {}({})",
                    self.name.to_ascii_uppercase(),
                    types.join(", ")
                )
            }
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok((self.return_type)(arg_types, &[]))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        if let Some(validate) = &self.validation {
            if let Err(m) = validate(&types, args.scalar_arguments) {
                return plan_err!("{m}");
            }
        }
        let t = (self.return_type)(&types, args.scalar_arguments);
        let not_null = self.keeps_not_null && args.arg_fields.iter().all(|f| !f.is_nullable());
        Ok(Arc::new(Field::new(self.name, t, !not_null)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let result_type = args.return_field.data_type().clone();
        let not_null = !args.return_field.is_nullable();
        let context = Context {
            zone: args
                .config_options
                .extensions
                .get::<super::FlinkOptions>()
                .and_then(|o| LocalZone::parse(&o.local_time_zone))
                .unwrap_or(LocalZone::UTC),
        };
        let eval = |values: &[ScalarValue]| -> DfResult<ScalarValue> {
            if self.strict && values.iter().any(ScalarValue::is_null) {
                return ScalarValue::try_from(&result_type);
            }
            let mut value = (self.rule)(values, &context)?;
            // Rules may answer in another type (e.g. BIGINT for INT, or a DECIMAL of smaller
            // scale); the rows of one array must agree.
            if value.data_type() != result_type {
                value = value.cast_to(&result_type)?;
            }
            if not_null && value.is_null() {
                return exec_err!(
                    "{}: the NOT NULL result is NULL (e.g. a value that does not fit the target type)",
                    self.name.to_ascii_uppercase()
                );
            }
            Ok(value)
        };
        let scalars: Option<Vec<ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s.clone()),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        // A volatile function gives every row its own value.
        let volatile = self.signature.volatility == Volatility::Volatile;
        if let Some(values) = scalars.filter(|_| !volatile) {
            return Ok(ColumnarValue::Scalar(eval(&values)?));
        }
        if let Some(kernel) = self.kernel.as_ref().filter(|_| !volatile) {
            if let Some(array) = kernel(&args.args, &result_type)? {
                return Ok(ColumnarValue::Array(array));
            }
        }
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(args.number_rows))
            .collect::<DfResult<Vec<_>>>()?;
        let mut out = Vec::with_capacity(args.number_rows);
        let mut row = Vec::with_capacity(arrays.len());
        for i in 0..args.number_rows {
            row.clear();
            for a in &arrays {
                row.push(ScalarValue::try_from_array(a, i)?);
            }
            out.push(eval(&row)?);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(arrow::array::new_empty_array(
                &result_type,
            )));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// Wraps a function in a DataFusion UDF.
pub(super) fn udf(f: RowFunction) -> datafusion::logical_expr::ScalarUDF {
    datafusion::logical_expr::ScalarUDF::from(f)
}

/// The string in a `Utf8` value (None for NULL or another type).
pub(super) fn text(v: &ScalarValue) -> Option<&str> {
    match v {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// The integer in an integer value.
pub(super) fn int(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int8(v) => v.map(i64::from),
        ScalarValue::Int16(v) => v.map(i64::from),
        ScalarValue::Int32(v) => v.map(i64::from),
        ScalarValue::Int64(v) => *v,
        _ => None,
    }
}

/// The number in a `Float64` value.
pub(super) fn double(v: &ScalarValue) -> Option<f64> {
    match v {
        ScalarValue::Float64(v) => *v,
        _ => None,
    }
}

/// A `STRING` value.
pub(super) fn string(s: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(s)
}

/// An `ARRAY<STRING>` value.
pub(super) fn string_array(items: Option<Vec<Option<String>>>) -> ScalarValue {
    let Some(items) = items else {
        return ScalarValue::List(Arc::new(arrow::array::ListArray::new_null(
            Arc::new(arrow::datatypes::Field::new_list_field(
                DataType::Utf8,
                true,
            )),
            1,
        )));
    };
    let values: Vec<ScalarValue> = items.into_iter().map(string).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Utf8))
}

/// The type of [`string_array`] values.
pub(super) fn string_array_type() -> DataType {
    DataType::new_list(DataType::Utf8, true)
}
