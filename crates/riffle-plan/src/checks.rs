//! Semantic gates between DataFusion's planning and Flink's semantics.
//!
//! DataFusion plans the query; where its semantics are known to differ from Flink's and Riffle
//! has no Flink-exact implementation yet, the plan is rejected with an unsupported-feature error
//! instead of running with different results:
//!
//! * explicit `CAST`s neither DataFusion nor Riffle's casts do as Flink does (Flink truncates,
//!   rounds, formats and handles overflow its own way);
//! * implicit conversions between strings and other types (Flink rejects or converts them
//!   differently);
//! * `DECIMAL` division and modulo left to DataFusion (Riffle replaces those over exact numbers
//!   with Flink's, see `functions::decimal_division`; DataFusion's result types differ).
//!
//! It also holds checks of the SQL text Flink's validator makes and DataFusion does not.

use std::ops::ControlFlow;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{not_impl_err, DFSchema, Result as DfResult};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::sql::sqlparser::ast::{self as sql, Visit, Visitor};

use crate::types::flink_type;

/// Rejects explicit casts (in a plan before type coercion) whose Flink semantics Riffle does
/// not reproduce.
pub fn check_explicit_casts(plan: &LogicalPlan) -> DfResult<()> {
    visit(plan, &mut |expr, schema| {
        let (inner, target) = match expr {
            Expr::Cast(c) => (&c.expr, c.field.data_type()),
            Expr::TryCast(c) => (&c.expr, c.field.data_type()),
            _ => return Ok(()),
        };
        let Ok(source) = inner.get_type(schema) else {
            return Ok(());
        };
        // Unsigned types only come from DataFusion's own functions (e.g. ROW_NUMBER), whose
        // plans are rejected where they are translated.
        if source.is_unsigned_integer() {
            return Ok(());
        }
        // Casts of numeric literals (also inserted by the planner) are exact when the value fits.
        let literal = matches!(inner.as_ref(), Expr::Literal(..))
            && source.is_numeric()
            && target.is_numeric();
        if let Some(message) = forbidden_temporal_cast(&source, target) {
            return datafusion::common::plan_err!("{message}");
        }
        if !literal && !crate::functions::is_supported_cast(&source, target) {
            return not_impl_err!(
                "unsupported feature: CAST from {} to {}",
                flink_type(&source, true),
                flink_type(target, true)
            );
        }
        Ok(())
    })
}

/// Flink's validation error for an explicit cast between a timestamp and a number, which Flink
/// forbids (pointing to the functions that convert epochs).
fn forbidden_temporal_cast(source: &DataType, target: &DataType) -> Option<String> {
    let name = |t: &DataType| match t {
        DataType::Timestamp(_, None) => Some("TIMESTAMP"),
        DataType::Timestamp(_, Some(_)) => Some("TIMESTAMP_LTZ"),
        _ => None,
    };
    let numeric = |t: &DataType| t.is_numeric();
    if let (Some(from), true) = (name(source), numeric(target)) {
        let hint = if from == "TIMESTAMP" {
            " It's recommended to use UNIX_TIMESTAMP(CAST(timestamp_col AS STRING)) instead."
        } else {
            ""
        };
        return Some(format!(
            "The cast from {from} type to NUMERIC type is not allowed.{hint}"
        ));
    }
    if let (true, Some(to)) = (numeric(source), name(target)) {
        let hint = if to == "TIMESTAMP" {
            "TO_TIMESTAMP(FROM_UNIXTIME(numeric_col)) instead, note the numeric is in seconds"
        } else {
            "TO_TIMESTAMP_LTZ(numeric_col, precision) instead"
        };
        return Some(format!(
            "The cast from NUMERIC type to {to} type is not allowed. It's recommended to use {hint}."
        ));
    }
    None
}

/// Rejects implicit string conversions and decimal division in a type-coerced plan.
pub fn check_coerced(plan: &LogicalPlan) -> DfResult<()> {
    visit(plan, &mut |expr, schema| match expr {
        Expr::Cast(c) => {
            let Ok(source) = c.expr.get_type(schema) else {
                return Ok(());
            };
            let string = |t: &DataType| {
                matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
            };
            // Integer to string conversions behave alike (explicit ones are verified casts).
            let int_to_string = source.is_integer() && string(c.field.data_type());
            if string(&source) != string(c.field.data_type())
                && source != DataType::Null
                && !int_to_string
            {
                return not_impl_err!(
                    "unsupported feature: implicit type conversion between {} and {}",
                    flink_type(&source, true),
                    flink_type(c.field.data_type(), true)
                );
            }
            Ok(())
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Divide | Operator::Modulo,
            right,
        }) => {
            let decimal = |e: &Expr| {
                matches!(
                    e.get_type(schema),
                    Ok(DataType::Decimal128(..) | DataType::Decimal256(..))
                )
            };
            // With a DOUBLE or FLOAT operand both engines divide doubles.
            let floating = |e: &Expr| e.get_type(schema).is_ok_and(|t| t.is_floating());
            if (decimal(left) || decimal(right)) && !floating(left) && !floating(right) {
                return not_impl_err!(
                    "unsupported feature: DECIMAL division and modulo (Flink's result precision)"
                );
            }
            Ok(())
        }
        _ => Ok(()),
    })
}

/// Calls `f` on every expression (and sub-expression) of every node, with the schema the
/// node's expressions are evaluated against.
fn visit(plan: &LogicalPlan, f: &mut dyn FnMut(&Expr, &DFSchema) -> DfResult<()>) -> DfResult<()> {
    plan.apply_with_subqueries(|node| {
        let mut schema = DFSchema::empty();
        for input in node.inputs() {
            schema.merge(input.schema());
        }
        node.apply_expressions(|e| {
            e.apply(|sub| {
                f(sub, &schema)?;
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(TreeNodeRecursion::Continue)
    })
    .map(|_| ())
}

/// Rejects SQL text Flink's parser or validator rejects and DataFusion's accepts:
///
/// * an untyped `NULL` literal as a field of a `VALUES` row: Flink types a VALUES column from
///   its rows alone, and a bare NULL has no type. Only the `VALUES` an `INSERT` writes directly
///   (`insert_source`) may hold them: the sink types those;
/// * `COUNT(DISTINCT *)` (Flink's grammar has no `*` after DISTINCT);
/// * a window function (`... OVER (...)`) in `WHERE`.
pub fn check_query_text(query: &sql::Query, insert_source: bool) -> Result<(), String> {
    struct Checker<'q> {
        allowed: Option<&'q sql::Values>,
    }

    impl Visitor for Checker<'_> {
        type Break = String;

        fn pre_visit_query(&mut self, query: &sql::Query) -> ControlFlow<String> {
            self.check(&query.body)
        }

        fn pre_visit_expr(&mut self, expr: &sql::Expr) -> ControlFlow<String> {
            if let sql::Expr::Function(f) = expr {
                if let sql::FunctionArguments::List(list) = &f.args {
                    let distinct =
                        list.duplicate_treatment == Some(sql::DuplicateTreatment::Distinct);
                    let star = list.args.iter().any(|a| {
                        matches!(a, sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard))
                    });
                    if distinct && star {
                        return ControlFlow::Break(format!(
                            "Encountered \"*\" in {}(DISTINCT *)",
                            f.name
                        ));
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }

    impl Checker<'_> {
        /// The VALUES of a query body (nested queries are visited on their own).
        fn check(&self, body: &sql::SetExpr) -> ControlFlow<String> {
            match body {
                sql::SetExpr::Values(values)
                    if !self.allowed.is_some_and(|a| std::ptr::eq(a, values)) =>
                {
                    let bare_null =
                        values.rows.iter().flat_map(|r| &r.content).any(
                            |e| matches!(e, sql::Expr::Value(v) if v.value == sql::Value::Null),
                        );
                    if bare_null {
                        return ControlFlow::Break("Illegal use of 'NULL'".to_string());
                    }
                    ControlFlow::Continue(())
                }
                sql::SetExpr::SetOperation { left, right, .. } => {
                    self.check(left)?;
                    self.check(right)
                }
                sql::SetExpr::Select(select) => {
                    let windowed = select.selection.as_ref().is_some_and(|w| {
                        sql::visit_expressions(w, |e| match e {
                            sql::Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
                            _ => ControlFlow::Continue(()),
                        })
                        .is_break()
                    });
                    if windowed {
                        return ControlFlow::Break(
                            "Windowed aggregate expression is illegal in WHERE clause".to_string(),
                        );
                    }
                    ControlFlow::Continue(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }

    let allowed = match query.body.as_ref() {
        sql::SetExpr::Values(values) if insert_source => Some(values),
        _ => None,
    };
    match query.visit(&mut Checker { allowed }) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(message) => Err(message),
    }
}
