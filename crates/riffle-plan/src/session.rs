//! The DataFusion session Riffle plans and evaluates expressions with.
//!
//! One configuration serves the planner and the runtime, so an expression typed at planning time
//! compiles to the same types at run time: identifiers keep their case (Flink is case-sensitive),
//! literals such as `4.00` are DECIMAL (as in Flink), `TIMESTAMP_LTZ` is UTC-based, Flink's type
//! names in `CAST` are understood, and Flink's functions replace DataFusion's where they differ.
//!
//! Expressions travel through the JobGraph as SQL text: [`FlinkSession::expr_to_sql`] prints a
//! DataFusion expression and [`FlinkSession::physical_expr`] compiles such text again.

use std::sync::Arc;

use arrow::datatypes::{Field as ArrowField, FieldRef, Schema, TimeUnit};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::logical_expr::Expr;
use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionConfig;
use datafusion::sql::sqlparser::ast::{self, ExprWithAlias, TimezoneInfo};
use datafusion::sql::unparser::dialect::Dialect as UnparserDialect;
use datafusion::sql::unparser::Unparser;

use crate::functions;
use crate::types::{arrow_type, LTZ_TIME_ZONE};

/// A configured DataFusion session (cheap to clone).
#[derive(Clone)]
pub struct FlinkSession {
    state: SessionState,
}

impl std::fmt::Debug for FlinkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlinkSession")
    }
}

impl Default for FlinkSession {
    fn default() -> Self {
        Self::new()
    }
}

impl FlinkSession {
    /// A session with Riffle's settings and Flink's function library, in the UTC time zone.
    pub fn new() -> Self {
        Self::with_local_time_zone("UTC")
    }

    /// A session whose Flink functions use `zone` (a `table.local-time-zone` value, checked by
    /// the planner) as the local time zone.
    pub fn with_local_time_zone(zone: &str) -> Self {
        let mut config = SessionConfig::new();
        let options = config.options_mut();
        options.sql_parser.enable_ident_normalization = false;
        options.sql_parser.parse_float_as_decimal = true;
        options.execution.time_zone = Some(LTZ_TIME_ZONE.to_string());
        options.extensions.insert(functions::FlinkOptions {
            local_time_zone: zone.to_string(),
        });
        let mut state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_type_planner(Self::type_planner())
            .build();
        // Functions see the session's options (the local time zone) through the execution
        // properties.
        let options = Arc::new(state.config_options().as_ref().clone());
        state.execution_props_mut().mark_start_execution(options);
        functions::register(&mut state);
        Self { state }
    }

    /// The session a job graph's configuration asks for (its `table.local-time-zone`).
    pub fn for_config(config: &std::collections::BTreeMap<String, String>) -> Self {
        match config.get("table.local-time-zone") {
            Some(zone) => Self::with_local_time_zone(zone),
            None => Self::new(),
        }
    }

    /// The session time zone (`table.local-time-zone`; UTC when it is not a valid zone).
    pub fn local_zone(&self) -> functions::LocalZone {
        self.state
            .config_options()
            .extensions
            .get::<functions::FlinkOptions>()
            .and_then(|o| functions::LocalZone::parse(&o.local_time_zone))
            .unwrap_or(functions::LocalZone::UTC)
    }

    /// This session with `functions` (from `CREATE FUNCTION`) registered.
    pub fn with_user_functions(mut self, functions: &[crate::udf::UserFunctionSpec]) -> Self {
        crate::udf::register(&mut self.state, functions);
        self
    }

    /// The planner of Flink type names (`STRING`, `TIMESTAMP_LTZ(3)`, ...) in `CAST`.
    pub fn type_planner() -> Arc<dyn TypePlanner> {
        Arc::new(FlinkTypePlanner)
    }

    /// The underlying DataFusion session state.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// Plans a sqlparser expression (from the Flink AST) over `schema`.
    pub fn logical_from_ast(&self, expr: &ast::Expr, schema: &DFSchema) -> DfResult<Expr> {
        let expr = self.state.create_logical_expr_from_sql_expr(
            ExprWithAlias {
                expr: expr.clone(),
                alias: None,
            },
            schema,
        )?;
        self.flinkify(expr, schema)
    }

    /// Plans SQL text (as printed by [`Self::expr_to_sql`]) over `schema`.
    pub fn logical_from_sql(&self, sql: &str, schema: &DFSchema) -> DfResult<Expr> {
        self.flinkify(self.state.create_logical_expr(sql, schema)?, schema)
    }

    /// Flink's literal types, casts from strings and Riffle's Flink functions in a freshly
    /// planned expression over `schema`.
    fn flinkify(&self, expr: Expr, schema: &DFSchema) -> DfResult<Expr> {
        let expr = flink_int_literals(expr)?.data;
        let expr = functions::flink_casts(expr, schema, self.state.scalar_functions())?.data;
        let expr = functions::decimal_division(expr, schema, self.state.scalar_functions())?.data;
        Ok(resolve_functions(expr, self.state.scalar_functions())?.data)
    }

    /// Compiles SQL text over an Arrow schema (unqualified column names) into an evaluable
    /// expression, applying DataFusion's type coercion.
    pub fn physical_expr(&self, sql: &str, schema: &Schema) -> DfResult<Arc<dyn PhysicalExpr>> {
        let df_schema = Arc::new(DFSchema::try_from(schema.clone())?);
        let logical = self.logical_from_sql(sql, &df_schema)?;
        // Some functions (e.g. COALESCE) are only executable once simplified.
        let context = SimplifyContext::builder()
            .with_schema(df_schema.clone())
            .with_config_options(self.state.config_options().clone())
            .build();
        let simplifier = ExprSimplifier::new(context);
        let logical = simplifier.simplify(simplifier.coerce(logical, &df_schema)?)?;
        self.state.create_physical_expr(logical, &df_schema)
    }

    /// Prints an expression as SQL text that [`Self::physical_expr`] compiles back to the same
    /// types.
    pub fn expr_to_sql(&self, expr: &Expr) -> DfResult<String> {
        let dialect = RiffleUnparserDialect;
        let unparser = Unparser::new(&dialect).with_pretty(true);
        let expr = nested_casts_by_flink_type(expr.clone())?;
        let mut sql = unparser.expr_to_sql(&expr)?;
        double_quotes_in_quoted_text(&mut sql);
        Ok(sql.to_string())
    }
}

/// sqlparser prints a quote that is followed by another one inside a quoted identifier or
/// string as it stands, taking the pair for an escape: a name such as `max(f(x, Utf8("")))`
/// would parse back with one quote. Doubling every quote beforehand prints the text that parses
/// back to the original.
fn double_quotes_in_quoted_text(sql: &mut ast::Expr) {
    let double = |id: &mut ast::Ident| {
        if id.quote_style == Some('"') {
            id.value = id.value.replace('"', "\"\"");
        }
    };
    let _ = ast::visit_expressions_mut(sql, |e: &mut ast::Expr| {
        match e {
            ast::Expr::Identifier(id) => double(id),
            ast::Expr::CompoundIdentifier(ids) => ids.iter_mut().for_each(double),
            ast::Expr::Value(v) => {
                if let ast::Value::SingleQuotedString(text) = &mut v.value {
                    *text = text.replace('\'', "''");
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// Maps Flink type names in `CAST` (encoded by riffle-sql as custom types) to Arrow types.
#[derive(Debug)]
struct FlinkTypePlanner;

impl TypePlanner for FlinkTypePlanner {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> DfResult<Option<FieldRef>> {
        let text = match sql_type {
            // `CAST(x AS "ARRAY<INT>")`, as `expr_to_sql` writes casts to nested types.
            ast::DataType::Custom(name, args) if args.is_empty() && name.0.len() == 1 => {
                match name.0[0].as_ident() {
                    Some(id) if id.quote_style == Some('"') => id.value.clone(),
                    _ => name.to_string(),
                }
            }
            ast::DataType::Custom(name, args) if args.is_empty() => name.to_string(),
            ast::DataType::String(None) => "STRING".to_string(),
            ast::DataType::Bytes(None) => "BYTES".to_string(),
            _ => return Ok(None),
        };
        let Ok(flink) = riffle_sql::parse_data_type(&text) else {
            return Ok(None);
        };
        match arrow_type(&flink) {
            Ok(t) => {
                // The Arrow type holds no length (CHAR(5)) and only some precisions
                // (TIMESTAMP(1)): the field carries the Flink type for Riffle's casts.
                let declared = flink.to_string();
                let field = ArrowField::new("", t.clone(), true);
                let field = if crate::types::flink_type(&t, true) == declared {
                    field
                } else {
                    field.with_metadata(
                        [(functions::FLINK_TYPE_KEY.to_string(), declared)]
                            .into_iter()
                            .collect(),
                    )
                };
                Ok(Some(Arc::new(field)))
            }
            Err(name) => datafusion::common::not_impl_err!("unsupported feature: type {name}"),
        }
    }
}

/// Unparser dialect whose timestamp casts keep their precision (so text compiles back to the
/// same time unit).
struct RiffleUnparserDialect;

impl UnparserDialect for RiffleUnparserDialect {
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        (!is_plain_ident(identifier)).then_some('"')
    }

    fn timestamp_cast_dtype(&self, time_unit: &TimeUnit, tz: &Option<Arc<str>>) -> ast::DataType {
        let precision = match time_unit {
            TimeUnit::Second => 0,
            TimeUnit::Millisecond => 3,
            TimeUnit::Microsecond => 6,
            TimeUnit::Nanosecond => 9,
        };
        let tz_info = if tz.is_some() {
            TimezoneInfo::WithTimeZone
        } else {
            TimezoneInfo::None
        };
        ast::DataType::Timestamp(Some(precision), tz_info)
    }

    fn utf8_cast_dtype(&self) -> ast::DataType {
        ast::DataType::Varchar(None)
    }

    /// A field of a call's result (`item(a, 1).f`) is written as `get_field(item(a, 1), 'f')`:
    /// DataFusion's own text, `item(a, 1).f`, does not parse back.
    fn scalar_function_to_sql_overrides(
        &self,
        unparser: &Unparser,
        func_name: &str,
        args: &[Expr],
    ) -> DfResult<Option<ast::Expr>> {
        if func_name == CAST_BY_FLINK_TYPE {
            if let [value, Expr::Literal(ScalarValue::Utf8(Some(flink)), _)] = args {
                return Ok(Some(ast::Expr::Cast {
                    kind: ast::CastKind::Cast,
                    expr: Box::new(unparser.expr_to_sql(value)?),
                    data_type: ast::DataType::Custom(
                        ast::ObjectName::from(vec![ast::Ident::with_quote('"', flink.clone())]),
                        Vec::new(),
                    ),
                    array: false,
                    format: None,
                }));
            }
        }
        if func_name != "get_field" || matches!(args.first(), Some(Expr::Column(_))) {
            return Ok(None);
        }
        let args = args
            .iter()
            .map(|a| unparser.expr_to_sql(a))
            .collect::<DfResult<Vec<_>>>()?;
        Ok(Some(crate::legacy::call("get_field", args)))
    }
}

/// Name of the call [`nested_casts_by_flink_type`] writes a nested cast as (printing only).
const CAST_BY_FLINK_TYPE: &str = "riffle_cast_by_flink_type";

/// Marks a cast to a nested type for printing: DataFusion's unparser cannot write ARRAY, MAP
/// and ROW types, so such casts (and typed NULLs) are printed with the Flink type name, which
/// [`FlinkTypePlanner`] reads back. Never executed: it only exists inside `expr_to_sql`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CastByFlinkType {
    signature: datafusion::logical_expr::Signature,
}

impl datafusion::logical_expr::ScalarUDFImpl for CastByFlinkType {
    fn name(&self) -> &str {
        CAST_BY_FLINK_TYPE
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        _: &[arrow::datatypes::DataType],
    ) -> DfResult<arrow::datatypes::DataType> {
        datafusion::common::plan_err!("{CAST_BY_FLINK_TYPE} only marks a cast for printing")
    }

    fn invoke_with_args(
        &self,
        _: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> DfResult<datafusion::logical_expr::ColumnarValue> {
        datafusion::common::exec_err!("{CAST_BY_FLINK_TYPE} only marks a cast for printing")
    }
}

/// `expr` with casts to nested types and NULLs of nested types marked for printing (see
/// [`CastByFlinkType`]).
fn nested_casts_by_flink_type(expr: Expr) -> DfResult<Expr> {
    use arrow::datatypes::DataType;
    let nested = |t: &DataType| {
        matches!(
            t,
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(..) | DataType::Struct(_)
        )
    };
    let marker = Arc::new(datafusion::logical_expr::ScalarUDF::from(CastByFlinkType {
        signature: datafusion::logical_expr::Signature::any(
            2,
            datafusion::logical_expr::Volatility::Immutable,
        ),
    }));
    let mark = |value: Expr, t: &DataType| {
        Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            Arc::clone(&marker),
            vec![
                value,
                Expr::Literal(
                    ScalarValue::Utf8(Some(crate::types::flink_type(t, true))),
                    None,
                ),
            ],
        ))
    };
    Ok(expr
        .transform_up(|e| {
            Ok(match e {
                Expr::Cast(c) if nested(c.field.data_type()) => {
                    let t = c.field.data_type().clone();
                    Transformed::yes(mark(*c.expr, &t))
                }
                Expr::Literal(v, _) if v.is_null() && nested(&v.data_type()) => {
                    let t = v.data_type();
                    Transformed::yes(mark(Expr::Literal(ScalarValue::Null, None), &t))
                }
                other => Transformed::no(other),
            })
        })?
        .data)
}

/// True when `name` can be written unquoted and still parse back to itself.
fn is_plain_ident(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !datafusion::sql::sqlparser::keywords::ALL_KEYWORDS
            .contains(&name.to_ascii_uppercase().as_str())
}

/// A column name as SQL text that [`FlinkSession::physical_expr`] parses back to the same name.
pub fn quote_ident(name: &str) -> String {
    if is_plain_ident(name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Types integer literals as Flink does: `INT` when the value fits, `BIGINT` otherwise
/// (DataFusion makes every integer literal `BIGINT`, which changes results on overflow).
pub fn flink_int_literals(expr: Expr) -> DfResult<Transformed<Expr>> {
    expr.transform(|e| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), meta) if i32::try_from(v).is_ok() => Ok(
            Transformed::yes(Expr::Literal(ScalarValue::Int32(Some(v as i32)), meta)),
        ),
        other => Ok(Transformed::no(other)),
    })
}

/// Replaces every function call whose name Riffle registered a Flink implementation for with
/// that implementation (DataFusion's SQL planner may have built calls such as `SUBSTRING(s FROM
/// 1)` with its own functions), so planning and the SQL text the runtime compiles agree.
pub fn resolve_functions(
    expr: Expr,
    registry: &std::collections::HashMap<String, Arc<datafusion::logical_expr::ScalarUDF>>,
) -> DfResult<Transformed<Expr>> {
    use datafusion::logical_expr::expr::ScalarFunction;
    expr.transform(|e| match e {
        Expr::ScalarFunction(f) if functions::riffle_function_names().contains(f.name()) => {
            match registry.get(f.name()) {
                Some(udf) if !Arc::ptr_eq(udf, &f.func) => Ok(Transformed::yes(
                    Expr::ScalarFunction(ScalarFunction::new_udf(udf.clone(), f.args)),
                )),
                _ => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        other => Ok(Transformed::no(other)),
    })
}
