//! Flink's aggregate functions as DataFusion sees them while planning.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result as DfResult};
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr as SqlExpr, Function, FunctionArg,
    FunctionArgExpr, FunctionArguments, Query, Value,
};

/// Flink's aggregate functions for planning (`SUM`, `AVG`, `MIN`, `MAX`, the variance family,
/// `LISTAGG`, `FIRST_VALUE`, `LAST_VALUE`, and `GROUP_ID()`, which tells apart the copies of a
/// grouping set listed more than once): no argument coercion (DataFusion would cast
/// `AVG(INT)` to `DOUBLE`) and Flink's result types. The runtime evaluates them itself.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct FlinkAggregate {
    name: &'static str,
    aliases: Vec<String>,
    signature: Signature,
}

impl FlinkAggregate {
    pub(super) fn new(name: &'static str) -> Self {
        // Flink's VARIANCE is VAR_SAMP and its STDDEV is STDDEV_SAMP.
        let aliases = match name {
            "var_samp" => vec!["variance".to_string()],
            "stddev_samp" => vec!["stddev".to_string()],
            _ => Vec::new(),
        };
        Self {
            name,
            aliases,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Flink's result type of `SUM` (`avg == false`) or `AVG` over `t`.
pub fn sum_avg_type(t: &DataType, avg: bool) -> Option<DataType> {
    match t {
        DataType::Decimal128(_, s) => {
            Some(DataType::Decimal128(38, if avg { (*s).max(6) } else { *s }))
        }
        t if t.is_numeric() => Some(t.clone()),
        DataType::Null => Some(DataType::Int32),
        _ => None,
    }
}

impl AggregateUDFImpl for FlinkAggregate {
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
        let text = |t: &DataType| matches!(t, DataType::Utf8 | DataType::Null);
        match arg_types {
            [] if self.name == "group_id" => Ok(Vec::new()),
            [t] if self.name == "listagg" && text(t) => Ok(vec![DataType::Utf8]),
            [t, s] if self.name == "listagg" && text(t) && text(s) => {
                Ok(vec![DataType::Utf8, DataType::Utf8])
            }
            [t] if self.name == "listagg" => plan_err!(
                "Cannot apply 'LISTAGG' to arguments of type 'LISTAGG(<{}>)'",
                crate::types::flink_type(t, true)
            ),
            [t] if matches!(self.name, "min" | "max" | "first_value" | "last_value")
                || sum_avg_type(t, false).is_some() =>
            {
                Ok(vec![t.clone()])
            }
            [t] => plan_err!(
                "Cannot apply '{}' to arguments of type '{}(<{t}>)'",
                self.name.to_ascii_uppercase(),
                self.name.to_ascii_uppercase()
            ),
            _ => plan_err!("{} takes one argument", self.name.to_ascii_uppercase()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        if self.name == "group_id" {
            return Ok(DataType::Int64);
        }
        let Some(t) = arg_types.first() else {
            return plan_err!("{} takes one argument", self.name);
        };
        match self.name {
            "listagg" => Ok(DataType::Utf8),
            "min" | "max" | "first_value" | "last_value" => Ok(t.clone()),
            // AVG and the variance family have AVG's result type.
            name => match sum_avg_type(t, name != "sum") {
                Some(r) => Ok(r),
                None => plan_err!("{} over {t}", self.name.to_ascii_uppercase()),
            },
        }
    }

    fn accumulator(&self, _acc_args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        exec_err!(
            "{} is evaluated by Riffle's runtime, not by DataFusion",
            self.name
        )
    }
}

/// `tagged_cast(x, 'tag')`: `x` unchanged. DataFusion names a cast after its operand, so
/// `AVG(a)` and `AVG(CAST(a AS DOUBLE))` would get the same column name; the planner wraps such
/// cast arguments in this call ([`tag_cast_arguments`]) to keep the names apart.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct TaggedCast {
    signature: Signature,
}

impl TaggedCast {
    pub(super) fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TaggedCast {
    fn name(&self) -> &str {
        "tagged_cast"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => plan_err!("tagged_cast takes two arguments"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        match args.args.into_iter().next() {
            Some(value) => Ok(value),
            None => exec_err!("tagged_cast takes two arguments"),
        }
    }
}

/// Wraps the arguments holding casts of function calls in `query` that differ from another call
/// only by casts in `tagged_cast(arg, '<arg text>')`, so DataFusion names them apart.
pub fn tag_cast_arguments(query: &mut Query) {
    // Calls (as text) by their text without casts.
    let mut calls: HashMap<String, HashSet<String>> = HashMap::new();
    let _ = visit_expressions(query, |e: &SqlExpr| {
        if let SqlExpr::Function(f) = e {
            calls
                .entry(without_casts(f))
                .or_default()
                .insert(f.to_string());
        }
        ControlFlow::<()>::Continue(())
    });
    let _ = visit_expressions_mut(query, |e: &mut SqlExpr| {
        let SqlExpr::Function(f) = e else {
            return ControlFlow::<()>::Continue(());
        };
        if calls.get(&without_casts(f)).is_none_or(|c| c.len() < 2) {
            return ControlFlow::Continue(());
        }
        if let FunctionArguments::List(list) = &mut f.args {
            for arg in &mut list.args {
                if let FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) = arg {
                    if strip_casts(value.clone()) != *value {
                        let tag = value.to_string();
                        let cast = std::mem::replace(value, SqlExpr::value(Value::Null));
                        *value = crate::legacy::call(
                            "tagged_cast",
                            vec![cast, SqlExpr::value(Value::SingleQuotedString(tag))],
                        );
                    }
                }
            }
        }
        ControlFlow::Continue(())
    });
}

/// The text of call `f` with every cast replaced by its operand.
fn without_casts(f: &Function) -> String {
    strip_casts(SqlExpr::Function(f.clone())).to_string()
}

/// `e` with every cast replaced by its operand.
fn strip_casts(mut e: SqlExpr) -> SqlExpr {
    let _ = visit_expressions_mut(&mut e, |e: &mut SqlExpr| {
        if let SqlExpr::Cast { expr, .. } = e {
            let inner = std::mem::replace(expr.as_mut(), SqlExpr::value(Value::Null));
            *e = inner;
        }
        ControlFlow::<()>::Continue(())
    });
    e
}
