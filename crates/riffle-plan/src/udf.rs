//! User-defined functions from `CREATE FUNCTION`: their specs travel in the JobGraph and are
//! registered into the DataFusion session the planner and the runtime use.
//!
//! Java `ScalarFunction`s ([`JavaScalarUdf`]) run in the embedded JVM of `riffle-jvm`; each set
//! of argument types (a call site's signature) gets its own instance and `eval` overload, chosen
//! by Flink's rules from the SQL argument types, nullability included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator as DfAccumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use riffle_jvm::{JavaAggregateFunction, JavaScalarFunction};
use serde::{Deserialize, Serialize};

use crate::types::{arrow_type, flink_type};

/// A function registered by `CREATE FUNCTION`, as the runtime needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UserFunctionSpec {
    /// SQL name (lower-cased, as Flink resolves function names case-insensitively).
    pub name: String,
    /// `LANGUAGE` (upper-cased).
    pub language: String,
    /// Class name of a Java function.
    pub class: String,
    /// Jars to load the class from: `USING JAR` resources, then `pipeline.jars`.
    pub jars: Vec<String>,
    /// What the class is: `scalar`, `aggregate` or `table`.
    pub kind: String,
}

/// Registers `functions` into `state` (no JVM is started until a function is typed or called).
pub fn register(state: &mut datafusion::execution::SessionState, functions: &[UserFunctionSpec]) {
    for f in functions {
        // Registration only fails for invalid names, which the parser rules out.
        if f.kind == TABLE {
            // Table functions are planned in `FROM` (crate::correlate), not as expressions.
            continue;
        }
        if f.language == crate::rust_udf::RUST {
            if f.kind == AGGREGATE {
                let udaf = crate::rust_udf::RustAggregateUdf::new(f.clone());
                let _ = state.register_udaf(Arc::new(AggregateUDF::from(udaf)));
            } else {
                let udf = crate::rust_udf::RustScalarUdf::new(f.clone());
                let _ = state.register_udf(Arc::new(ScalarUDF::from(udf)));
            }
            continue;
        }
        if f.kind == AGGREGATE {
            let udaf = JavaAggregateUdf {
                spec: f.clone(),
                signature: Signature::variadic_any(Volatility::Volatile),
            };
            let _ = state.register_udaf(Arc::new(AggregateUDF::from(udaf)));
        } else {
            let _ = state.register_udf(Arc::new(ScalarUDF::from(JavaScalarUdf::new(f.clone()))));
        }
    }
}

/// [`UserFunctionSpec::kind`] of a Java `ScalarFunction`.
const SCALAR: &str = "scalar";
/// [`UserFunctionSpec::kind`] of an aggregate function.
pub const AGGREGATE: &str = "aggregate";
/// [`UserFunctionSpec::kind`] of a Java `TableFunction`.
pub const TABLE: &str = "table";

/// The spec of a user-defined (Java or Rust) aggregate function call's function.
pub fn user_aggregate(udaf: &AggregateUDF) -> Option<&UserFunctionSpec> {
    let inner = udaf.inner();
    inner
        .downcast_ref::<JavaAggregateUdf>()
        .map(|u| &u.spec)
        .or_else(|| {
            inner
                .downcast_ref::<crate::rust_udf::RustAggregateUdf>()
                .map(|u| u.spec())
        })
}

/// The Flink type, Arrow type and nullability of a user-defined aggregate call's result.
pub fn aggregate_result(
    call: &crate::graph::UserAggregate,
) -> Result<(String, DataType, bool), String> {
    if call.language == crate::rust_udf::RUST {
        return crate::rust_udf::aggregate_result(call);
    }
    let f = JavaAggregateFunction::resolve(&call.name, &call.class, &call.jars, &call.arg_types)
        .map_err(|e| e.to_string())?;
    let field = result_field(&call.name, f.result_type()).map_err(|e| e.to_string())?;
    Ok((
        f.result_type().to_string(),
        field.data_type().clone(),
        field.is_nullable(),
    ))
}

/// A Java `AggregateFunction` as a DataFusion aggregate (for planning only: Riffle's runtime
/// runs the accumulators).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JavaAggregateUdf {
    spec: UserFunctionSpec,
    signature: Signature,
}

impl AggregateUDFImpl for JavaAggregateUdf {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        plan_err!(
            "the result type of Java function '{}' depends on its arguments",
            self.spec.name
        )
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> DfResult<FieldRef> {
        let types: Vec<String> = arg_fields
            .iter()
            .map(|f| flink_type(f.data_type(), f.is_nullable()))
            .collect();
        let resolved = JavaAggregateFunction::resolve(
            &self.spec.name,
            &self.spec.class,
            &self.spec.jars,
            &types,
        );
        match resolved {
            Ok(f) => Ok(Arc::new(result_field(&self.spec.name, f.result_type())?)),
            // See JavaScalarUdf::return_field_from_args: integer literals are retyped later.
            Err(_) if arg_fields.iter().any(|f| f.data_type() == &DataType::Int64) => {
                Ok(Arc::new(Field::new(&self.spec.name, DataType::Null, true)))
            }
            Err(e) => plan_err!("{e}"),
        }
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn DfAccumulator>> {
        datafusion::common::not_impl_err!(
            "Java aggregate function '{}' outside a streaming aggregation",
            self.spec.name
        )
    }
}

/// Whether `udf` is a user-defined function (which the planner accepts without Flink
/// verification: its semantics are the user's code).
pub fn is_user_function(udf: &ScalarUDF) -> bool {
    udf.inner().downcast_ref::<JavaScalarUdf>().is_some()
        || udf
            .inner()
            .downcast_ref::<crate::rust_udf::RustScalarUdf>()
            .is_some()
}

/// A Java `ScalarFunction` as a DataFusion function.
#[derive(Debug)]
pub struct JavaScalarUdf {
    spec: UserFunctionSpec,
    signature: Signature,
    /// One resolved call site per argument-type list (`INT NOT NULL, STRING`).
    sites: Mutex<HashMap<String, Arc<JavaScalarFunction>>>,
}

impl PartialEq for JavaScalarUdf {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Eq for JavaScalarUdf {}

impl std::hash::Hash for JavaScalarUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.spec.name.hash(state);
        self.spec.class.hash(state);
    }
}

impl JavaScalarUdf {
    fn new(spec: UserFunctionSpec) -> Self {
        Self {
            spec,
            // Flink's overload resolution needs the SQL types as they are: no coercion here.
            signature: Signature::variadic_any(Volatility::Volatile),
            sites: Mutex::new(HashMap::new()),
        }
    }

    /// The call site for arguments of `fields` (resolved on first use); `literals` are the
    /// arguments' values when they are literals.
    fn site(
        &self,
        fields: &[FieldRef],
        literals: &[Option<&ScalarValue>],
    ) -> DfResult<Arc<JavaScalarFunction>> {
        let types: Vec<String> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| match literals.get(i).copied().flatten() {
                // Flink types an integer literal INT when it fits; the planner retypes
                // DataFusion's BIGINT literals only after this first typing.
                Some(ScalarValue::Int64(Some(v))) if i32::try_from(*v).is_ok() => {
                    "INT NOT NULL".to_string()
                }
                _ => flink_type(f.data_type(), f.is_nullable()),
            })
            .collect();
        let key = types.join(", ");
        let mut sites = match self.sites.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(site) = sites.get(&key) {
            return Ok(site.clone());
        }
        let site =
            JavaScalarFunction::resolve(&self.spec.name, &self.spec.class, &self.spec.jars, &types)
                .map_err(|e| datafusion::common::DataFusionError::Plan(e.to_string()))?;
        let site = Arc::new(site);
        sites.insert(key, site.clone());
        Ok(site)
    }
}

/// The Arrow type and nullability of a Flink type string from the bridge.
fn result_field(name: &str, flink: &str) -> DfResult<Field> {
    let parsed = match riffle_sql::parse_data_type(flink) {
        Ok(t) => t,
        Err(_) => {
            return plan_err!(
                "Java function '{name}' returns type {flink}, which Riffle cannot parse"
            )
        }
    };
    match arrow_type(&parsed) {
        Ok(t) => Ok(Field::new(name, t, parsed.nullable)),
        Err(t) => plan_err!("unsupported feature: Java function '{name}' returns type {t}"),
    }
}

impl ScalarUDFImpl for JavaScalarUdf {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        // DataFusion calls return_field_from_args, which knows the arguments' nullability.
        plan_err!(
            "the result type of Java function '{}' depends on its arguments",
            self.spec.name
        )
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        match self.site(args.arg_fields, args.scalar_arguments) {
            Ok(site) => Ok(Arc::new(result_field(&self.spec.name, site.result_type())?)),
            // DataFusion types integer literals BIGINT, and the planner retypes them (INT when
            // they fit) only after a first typing of the whole query; a BIGINT argument may
            // still become INT, so the call is typed again then, and fails for good only if
            // it still has no overload.
            Err(_)
                if args
                    .arg_fields
                    .iter()
                    .any(|f| f.data_type() == &DataType::Int64) =>
            {
                Ok(Arc::new(Field::new(&self.spec.name, DataType::Null, true)))
            }
            Err(e) => Err(e),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let site = self.site(&args.arg_fields, &[])?;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(args.number_rows))
            .collect::<DfResult<Vec<_>>>()?;
        match site.eval(&arrays, args.number_rows, args.return_field.data_type()) {
            Ok(array) => Ok(ColumnarValue::Array(array)),
            Err(e) => exec_err!("{e}"),
        }
    }
}

/// Why a `CREATE FUNCTION` cannot be planned.
#[derive(Debug)]
pub enum SpecError {
    /// A kind of function Riffle does not run (the feature).
    Unsupported(String),
    /// The class cannot be used (not found, not a function): the message.
    Invalid(String),
}

/// The spec of a `CREATE FUNCTION` under the configuration so far (`pipeline.jars`). Starts the
/// JVM to see what kind of function the class is.
pub fn spec(
    function: &riffle_sql::ast::CreateFunction,
    config: &std::collections::BTreeMap<String, String>,
) -> Result<UserFunctionSpec, SpecError> {
    let language = function.language.clone().unwrap_or_else(|| "JAVA".into());
    if !matches!(language.as_str(), "JAVA" | "SCALA" | crate::rust_udf::RUST) {
        return Err(SpecError::Unsupported(format!(
            "user-defined functions in LANGUAGE {language} (Riffle runs Java/Scala classes and Rust libraries)"
        )));
    }
    let Some(name) = function.name.0.last().and_then(|p| p.as_ident()) else {
        return Err(SpecError::Unsupported(format!(
            "function name {}",
            function.name
        )));
    };
    if language == crate::rust_udf::RUST {
        return crate::rust_udf::spec(&name.value, &function.identifier, &function.jars);
    }
    let mut jars = function.jars.clone();
    if let Some(pipeline) = config.get("pipeline.jars") {
        jars.extend(
            pipeline
                .split(';')
                .map(str::trim)
                .filter(|j| !j.is_empty())
                .map(str::to_string),
        );
    }
    let kind = riffle_jvm::function_kind(&function.identifier, &jars)
        .map_err(|e| SpecError::Invalid(e.to_string()))?;
    match kind.as_str() {
        SCALAR | AGGREGATE | TABLE => {}
        _ => {
            return Err(SpecError::Invalid(format!(
                "class {} is no Flink ScalarFunction, TableFunction or AggregateFunction",
                function.identifier
            )))
        }
    }
    Ok(UserFunctionSpec {
        name: name.value.to_lowercase(),
        language,
        class: function.identifier.clone(),
        jars,
        kind,
    })
}
