//! Semantic gates between DataFusion's planning and Flink's semantics.
//!
//! DataFusion plans the query; where its semantics are known to differ from Flink's and Riffle
//! has no Flink-exact implementation yet, the plan is rejected with an unsupported-feature error
//! instead of running with different results:
//!
//! * explicit `CAST`s outside a verified set (Flink truncates, rounds, formats and handles
//!   overflow differently for most conversions);
//! * implicit conversions between strings and other types (Flink rejects or converts them
//!   differently);
//! * `DECIMAL` division and modulo (Flink derives a different result precision and scale).

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{not_impl_err, DFSchema, Result as DfResult};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};

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
        if !literal && !verified_cast(&source, target) {
            return not_impl_err!(
                "unsupported feature: CAST from {} to {}",
                flink_type(&source, true),
                flink_type(target, true)
            );
        }
        Ok(())
    })
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
            if decimal(left) || decimal(right) {
                return not_impl_err!(
                    "unsupported feature: DECIMAL division and modulo (Flink's result precision)"
                );
            }
            Ok(())
        }
        _ => Ok(()),
    })
}

/// Rejects `TIMESTAMP_LTZ` values (columns, expressions) when the session time zone is not UTC:
/// converting them to and from local date-times (casts, windows, formatting) does not follow
/// the session time zone yet.
pub fn check_local_time_zone(plan: &LogicalPlan, zone: &str) -> DfResult<()> {
    if crate::functions::LocalZone::parse(zone).is_some_and(|z| z.is_utc()) {
        return Ok(());
    }
    let ltz = |t: &DataType| matches!(t, DataType::Timestamp(_, Some(_)));
    let reject = || {
        not_impl_err!(
            "unsupported feature: TIMESTAMP_LTZ with 'table.local-time-zone' = '{zone}' (only UTC)"
        )
    };
    let mut schemas_ok = true;
    plan.apply_with_subqueries(|node| {
        if node.schema().fields().iter().any(|f| ltz(f.data_type())) {
            schemas_ok = false;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if !schemas_ok {
        return reject();
    }
    visit(plan, &mut |expr, schema| match expr.get_type(schema) {
        Ok(t) if ltz(&t) => reject(),
        _ => Ok(()),
    })
}

/// Explicit casts checked against Flink: identity, integers to STRING, widening between integers and between
/// decimals, numbers to DOUBLE, integers to a DECIMAL that holds them, and timestamps (with or
/// without local time zone) to the same or a finer precision.
fn verified_cast(source: &DataType, target: &DataType) -> bool {
    use DataType::*;
    let int_digits = |t: &DataType| match t {
        Int8 => Some(3),
        Int16 => Some(5),
        Int32 => Some(10),
        Int64 => Some(19),
        _ => None,
    };
    let unit_rank = |u: &TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    match (source, target) {
        (s, t) if s == t => true,
        (Null, _) => true,
        // Replaced by Riffle's Flink casts (crate::functions::string_casts).
        (Utf8 | Utf8View | LargeUtf8, t) => crate::functions::is_string_cast_target(t),
        (s, t) if int_digits(s).is_some() && int_digits(t).is_some() => {
            int_digits(s) <= int_digits(t)
        }
        (s, Float64) => s.is_numeric(),
        // Integers print as their decimal digits in both engines.
        (s, Utf8) => int_digits(s).is_some(),
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && i32::from(*p2) - i32::from(*s2) >= i32::from(*p1) - i32::from(*s1)
        }
        (s, Decimal128(p, sc)) => {
            int_digits(s).is_some_and(|d| i32::from(*p) - i32::from(*sc) >= d)
        }
        // With the UTC session time zone, TIMESTAMP and TIMESTAMP_LTZ hold the same instants.
        (Timestamp(u1, _), Timestamp(u2, _)) => unit_rank(u2) >= unit_rank(u1),
        _ => false,
    }
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
