//! Native Rust functions (`CREATE FUNCTION f AS 'name' LANGUAGE RUST USING JAR 'lib.so'`):
//! functions of a dynamic library built with the `riffle-udf` crate. Scalar functions run as
//! DataFusion functions; table functions are planned in `FROM` (see [`crate::correlate`]);
//! aggregate functions are typed here and run by the runtime's aggregation operators.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result as DfResult};
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDFImpl, Signature, Volatility,
};
use riffle_udf::codec::{Description, Kind};
use riffle_udf::host::{arrow_type, column_of, rows_of, NativeLibrary};
use riffle_udf::SqlType;

use crate::udf::{SpecError, UserFunctionSpec};

/// [`UserFunctionSpec::language`] of a Rust function.
pub const RUST: &str = "RUST";

/// The spec of a `CREATE FUNCTION ... LANGUAGE RUST USING JAR 'lib'`: opens the library to see
/// what kind of function `identifier` is.
pub fn spec(name: &str, identifier: &str, jars: &[String]) -> Result<UserFunctionSpec, SpecError> {
    let [library] = jars else {
        return Err(SpecError::Invalid(format!(
            "Rust function '{name}' needs exactly one library: USING JAR '/path/lib<name>.so'"
        )));
    };
    let f = describe(library, identifier).map_err(SpecError::Invalid)?;
    Ok(UserFunctionSpec {
        name: name.to_lowercase(),
        language: RUST.into(),
        class: identifier.to_string(),
        jars: vec![library.clone()],
        kind: match f.kind {
            Kind::Scalar => "scalar".into(),
            Kind::Table => crate::udf::TABLE.into(),
            Kind::Aggregate => crate::udf::AGGREGATE.into(),
        },
    })
}

/// The description of function `identifier` of `library`.
pub fn describe(library: &str, identifier: &str) -> Result<Description, String> {
    let lib = NativeLibrary::open(library)?;
    match lib.function(identifier) {
        Some(f) => Ok(f.clone()),
        None => Err(format!(
            "Rust function library {library} has no function '{identifier}' (it has: {})",
            lib.names().join(", ")
        )),
    }
}

/// Whether a value of Arrow type `actual` may be passed where `declared` is expected: the same
/// type, NULL, or a widening of integers (and of any number to DOUBLE).
pub fn accepts(declared: SqlType, actual: &DataType) -> bool {
    use DataType as A;
    let declared_arrow = arrow_type(declared);
    if actual == &declared_arrow || actual == &A::Null {
        return true;
    }
    match declared {
        SqlType::Int => matches!(actual, A::Int8 | A::Int16),
        SqlType::BigInt => matches!(actual, A::Int8 | A::Int16 | A::Int32),
        SqlType::Double => actual.is_numeric(),
        SqlType::String => matches!(actual, A::Utf8View | A::LargeUtf8),
        _ => false,
    }
}

/// Checks call arguments of types `actual` against the function's declared `args`.
pub fn check_arguments(name: &str, declared: &[SqlType], actual: &[DataType]) -> DfResult<()> {
    let ok =
        declared.len() == actual.len() && declared.iter().zip(actual).all(|(d, a)| accepts(*d, a));
    if ok {
        return Ok(());
    }
    let declared: Vec<&str> = declared.iter().map(|t| t.sql_name()).collect();
    let actual: Vec<String> = actual
        .iter()
        .map(|t| crate::types::flink_type(t, true))
        .collect();
    plan_err!(
        "Rust function '{name}' takes ({}), not ({})",
        declared.join(", "),
        actual.join(", ")
    )
}

/// A Rust scalar function as a DataFusion function.
#[derive(Debug)]
pub struct RustScalarUdf {
    spec: UserFunctionSpec,
    signature: Signature,
}

impl PartialEq for RustScalarUdf {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Eq for RustScalarUdf {}

impl std::hash::Hash for RustScalarUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.spec.hash(state);
    }
}

impl RustScalarUdf {
    /// The function of `spec` (a scalar function of a Rust library).
    pub fn new(spec: UserFunctionSpec) -> Self {
        Self {
            spec,
            // Arguments are checked against the library's declaration when the call is typed.
            signature: Signature::variadic_any(Volatility::Volatile),
        }
    }

    fn description(&self) -> DfResult<Description> {
        description_of(&self.spec)
    }
}

/// The library's description of the function of `spec`.
fn description_of(spec: &UserFunctionSpec) -> DfResult<Description> {
    let library = spec.jars.first().map(String::as_str).unwrap_or_default();
    describe(library, &spec.class).map_err(datafusion::common::DataFusionError::Plan)
}

impl ScalarUDFImpl for RustScalarUdf {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        let f = self.description()?;
        match f.columns.first() {
            Some((_, t)) => Ok(arrow_type(*t)),
            None => plan_err!("Rust function '{}' declares no result", self.spec.name),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let f = self.description()?;
        let actual: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        check_arguments(&self.spec.name, &f.args, &actual)?;
        let result = self.return_type(&actual)?;
        Ok(Arc::new(Field::new(&self.spec.name, result, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let library = self
            .spec
            .jars
            .first()
            .map(String::as_str)
            .unwrap_or_default();
        let f = self.description()?;
        let Some((_, result)) = f.columns.first() else {
            return exec_err!("Rust function '{}' declares no result", self.spec.name);
        };
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(args.number_rows))
            .collect::<DfResult<Vec<_>>>()?;
        let run = || -> Result<_, String> {
            let rows = rows_of(&arrays, &f.args, args.number_rows)?;
            let lib = NativeLibrary::open(library)?;
            let out = lib.call(&self.spec.class, &rows, f.args.len())?;
            column_of(&out, 0, *result)
        };
        match run() {
            Ok(array) => Ok(ColumnarValue::Array(array)),
            Err(e) => exec_err!("{e}"),
        }
    }
}

/// A Rust aggregate function as a DataFusion aggregate (for typing only: Riffle's aggregation
/// operators run it, with the accumulator kept as values).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RustAggregateUdf {
    spec: UserFunctionSpec,
    signature: Signature,
}

impl RustAggregateUdf {
    /// The function of `spec` (an aggregate function of a Rust library).
    pub fn new(spec: UserFunctionSpec) -> Self {
        Self {
            spec,
            signature: Signature::variadic_any(Volatility::Volatile),
        }
    }

    /// The spec the function was registered from.
    pub fn spec(&self) -> &UserFunctionSpec {
        &self.spec
    }
}

impl AggregateUDFImpl for RustAggregateUdf {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        let f = description_of(&self.spec)?;
        match f.columns.first() {
            Some((_, t)) => Ok(arrow_type(*t)),
            None => plan_err!("Rust function '{}' declares no result", self.spec.name),
        }
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> DfResult<FieldRef> {
        let f = description_of(&self.spec)?;
        let actual: Vec<DataType> = arg_fields.iter().map(|f| f.data_type().clone()).collect();
        check_arguments(&self.spec.name, &f.args, &actual)?;
        let result = self.return_type(&actual)?;
        Ok(Arc::new(Field::new(&self.spec.name, result, true)))
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        datafusion::common::not_impl_err!(
            "Rust aggregate function '{}' outside a streaming aggregation",
            self.spec.name
        )
    }
}

/// The Flink type, Arrow type and nullability of a Rust aggregate call's result.
pub fn aggregate_result(
    call: &crate::graph::UserAggregate,
) -> Result<(String, DataType, bool), String> {
    let library = call.jars.first().map(String::as_str).unwrap_or_default();
    let f = describe(library, &call.class)?;
    match f.columns.first() {
        Some((_, t)) => Ok((t.sql_name().to_string(), arrow_type(*t), true)),
        None => Err(format!("Rust function '{}' declares no result", call.name)),
    }
}
