//! Table functions joined to the rows on their left (Flink's *correlate*): `UNNEST` of arrays
//! and maps, and user table functions called with `LATERAL TABLE(f(x))`.
//!
//! In `FROM`, a table function call is planned as a [`TableFunctionNode`] whose arguments refer
//! to the columns on its left as outer references; DataFusion joins it to the left side (cross,
//! inner or `LEFT ... ON TRUE`). The graph translation turns that join into one
//! [`OperatorKind::Correlate`](crate::OperatorKind) that calls the function once per input row
//! and emits the input row joined with each row the function produced, with the input row's
//! change kind (`+I`, `-U`, `+U`, `-D`), as Flink's correlate does.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField};
use datafusion::common::{DFSchema, DFSchemaRef, Result as DfResult};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, UserDefinedLogicalNodeCore};
use serde::{Deserialize, Serialize};

use crate::types::{arrow_type, flink_type};
use crate::udf::UserFunctionSpec;

/// Name of the ordinal column `UNNEST ... WITH ORDINALITY` appends.
pub const ORDINALITY: &str = "ORDINALITY";

/// The table function a correlate calls per input row.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableFunction {
    /// `UNNEST(collection)`: one row per array element (a ROW element's fields as columns) or
    /// map entry (`KEY`, `VALUE`); `WITH ORDINALITY` numbers them from 1.
    Unnest {
        /// An `ORDINALITY` column follows the element columns.
        with_ordinality: bool,
    },
    /// Flink's internal `REPLICATE_ROWS(n)`: `n` empty rows, so the correlate emits its input
    /// row `n` times (how `INTERSECT ALL` and `EXCEPT ALL` restore multiplicities).
    Replicate,
    /// A Java `TableFunction` (see `riffle-jvm`).
    Java {
        /// SQL name of the function (for errors).
        name: String,
        /// Class name.
        class: String,
        /// Jars the class is loaded from.
        jars: Vec<String>,
        /// Flink types of the arguments (they select the `eval` overload).
        arg_types: Vec<String>,
    },
    /// A table function of a Rust library (see `riffle-udf`).
    Rust {
        /// SQL name of the function (for errors).
        name: String,
        /// Path of the library.
        library: String,
        /// Name of the function in the library.
        function: String,
    },
}

/// What a correlate operator does: call `function` on `args` per input row and join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrelateSpec {
    /// The table function.
    pub function: TableFunction,
    /// SQL text of the arguments, over the input columns.
    pub args: Vec<String>,
    /// `LEFT JOIN LATERAL ... ON TRUE`: an input row the function produced no row for is
    /// emitted once with NULL function columns.
    pub left_outer: bool,
    /// SQL text of the join condition over the output columns (input columns, then the
    /// function's); rows for which it is not true are not joined.
    pub condition: Option<String>,
}

/// A table function call in `FROM`: no input; its arguments are outer references to the
/// relation on its left (or constants).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableFunctionNode {
    /// The function.
    pub function: TableFunction,
    /// Argument expressions.
    pub args: Vec<Expr>,
    schema: DFSchemaRef,
}

impl PartialOrd for TableFunctionNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        // Plans are only compared for deduplication.
        format!("{:?}", self.function).partial_cmp(&format!("{:?}", other.function))
    }
}

/// Integer literals DataFusion typed BIGINT are `INT`s in Flink when they fit; the argument
/// types select a Java overload, so they are Flink's from the start.
fn flink_literal(e: Expr) -> DfResult<Expr> {
    Ok(crate::session::flink_int_literals(e)?.data)
}

impl TableFunctionNode {
    /// `UNNEST(arg)`. Its columns are named as Flink names them; `names` (the alias column
    /// list, if any) renames them.
    pub fn unnest(arg: Expr, with_ordinality: bool, names: &[String]) -> DfResult<Self> {
        let function = TableFunction::Unnest { with_ordinality };
        Self::try_new(function, vec![arg], names)
    }

    /// `REPLICATE_ROWS(count)`: no columns, `count` rows (none for NULL or less than 1).
    pub fn replicate(count: Expr) -> DfResult<Self> {
        Self::try_new(TableFunction::Replicate, vec![count], &[])
    }

    /// A call of the table function `spec` (Java or Rust).
    pub fn user(spec: &UserFunctionSpec, args: Vec<Expr>, names: &[String]) -> DfResult<Self> {
        if spec.language != crate::rust_udf::RUST {
            return Self::java(spec, args, names);
        }
        let args = args
            .into_iter()
            .map(flink_literal)
            .collect::<DfResult<Vec<_>>>()?;
        let function = TableFunction::Rust {
            name: spec.name.clone(),
            library: spec.jars.first().cloned().unwrap_or_default(),
            function: spec.class.clone(),
        };
        Self::try_new(function, args, names)
    }

    /// A call of the Java table function `spec`.
    fn java(spec: &UserFunctionSpec, args: Vec<Expr>, names: &[String]) -> DfResult<Self> {
        let args = args
            .into_iter()
            .map(flink_literal)
            .collect::<DfResult<Vec<_>>>()?;
        let empty = DFSchema::empty();
        let arg_types = args
            .iter()
            .map(|a| {
                let (_, f) = a.to_field(&empty)?;
                Ok(flink_type(f.data_type(), f.is_nullable()))
            })
            .collect::<DfResult<Vec<_>>>()?;
        let function = TableFunction::Java {
            name: spec.name.clone(),
            class: spec.class.clone(),
            jars: spec.jars.clone(),
            arg_types,
        };
        Self::try_new(function, args, names)
    }

    fn try_new(function: TableFunction, args: Vec<Expr>, names: &[String]) -> DfResult<Self> {
        let mut fields = output_fields(&function, &args)?;
        if !names.is_empty() {
            if names.len() != fields.len() {
                return datafusion::common::plan_err!(
                    "List of column aliases must have same degree as table; table has {} columns {}, whereas alias list has {} columns",
                    fields.len(),
                    format_names(fields.iter().map(|f| f.name().as_str())),
                    names.len()
                );
            }
            fields = fields
                .into_iter()
                .zip(names)
                .map(|(f, n)| f.with_name(n.clone()))
                .collect();
        }
        let schema = DFSchema::from_unqualified_fields(fields.into(), Default::default())?;
        Ok(Self {
            function,
            args,
            schema: Arc::new(schema),
        })
    }
}

fn format_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    format!("['{}']", names.collect::<Vec<_>>().join("', '"))
}

/// The columns `function` produces for arguments `args`.
fn output_fields(function: &TableFunction, args: &[Expr]) -> DfResult<Vec<ArrowField>> {
    let empty = DFSchema::empty();
    match function {
        TableFunction::Unnest { with_ordinality } => {
            let [arg] = args else {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: UNNEST of several collections"
                );
            };
            let (_, field) = arg.to_field(&empty)?;
            let mut fields = unnest_fields(field.data_type())?;
            if *with_ordinality {
                fields.push(ArrowField::new(ORDINALITY, ArrowType::Int32, false));
            }
            Ok(fields)
        }
        TableFunction::Replicate => match args {
            [count] if count.to_field(&empty)?.1.data_type().is_integer() => Ok(Vec::new()),
            _ => datafusion::common::internal_err!("REPLICATE_ROWS takes one integer count"),
        },
        TableFunction::Java {
            name,
            class,
            jars,
            arg_types,
        } => {
            let f = riffle_jvm::JavaTableFunction::resolve(name, class, jars, arg_types)
                .map_err(|e| datafusion::common::DataFusionError::Plan(e.to_string()))?;
            row_fields(name, f.result_type())
        }
        TableFunction::Rust {
            name,
            library,
            function,
        } => {
            let d = crate::rust_udf::describe(library, function)
                .map_err(datafusion::common::DataFusionError::Plan)?;
            let actual = args
                .iter()
                .map(|a| Ok(a.to_field(&empty)?.1.data_type().clone()))
                .collect::<DfResult<Vec<_>>>()?;
            crate::rust_udf::check_arguments(name, &d.args, &actual)?;
            Ok(d.columns
                .iter()
                .map(|(n, t)| ArrowField::new(n.clone(), riffle_udf::host::arrow_type(*t), true))
                .collect())
        }
    }
}

/// The columns of `UNNEST` of a value of type `t`.
fn unnest_fields(t: &ArrowType) -> DfResult<Vec<ArrowField>> {
    match t {
        ArrowType::List(element) | ArrowType::LargeList(element) => match element.data_type() {
            ArrowType::Struct(fields) => Ok(fields
                .iter()
                .map(|f| {
                    let nullable = f.is_nullable() || element.is_nullable();
                    f.as_ref().clone().with_nullable(nullable)
                })
                .collect()),
            other => Ok(vec![ArrowField::new(
                "EXPR$0",
                other.clone(),
                element.is_nullable(),
            )]),
        },
        ArrowType::Map(entries, _) => match entries.data_type() {
            ArrowType::Struct(kv) if kv.len() == 2 => Ok(vec![
                ArrowField::new("KEY", kv[0].data_type().clone(), kv[0].is_nullable()),
                ArrowField::new("VALUE", kv[1].data_type().clone(), kv[1].is_nullable()),
            ]),
            other => datafusion::common::plan_err!("unexpected map entries type {other}"),
        },
        other => datafusion::common::plan_err!(
            "Cannot apply 'UNNEST' to arguments of type 'UNNEST(<{}>)'. Supported form(s): 'UNNEST(<MULTISET>)'\n'UNNEST(<ARRAY>)'\n'UNNEST(<MAP>)'",
            flink_type(other, true)
        ),
    }
}

/// The Arrow fields of a `ROW<...>` type string from a function's output type.
fn row_fields(name: &str, row: &str) -> DfResult<Vec<ArrowField>> {
    let parsed = riffle_sql::parse_data_type(row).map_err(|_| {
        datafusion::common::DataFusionError::Plan(format!(
            "table function '{name}' returns type {row}, which Riffle cannot parse"
        ))
    })?;
    let riffle_sql::ast::TypeKind::Row(fields) = &parsed.kind else {
        return datafusion::common::plan_err!("table function '{name}' returns {row}, not a ROW");
    };
    fields
        .iter()
        .map(|f| match arrow_type(&f.data_type) {
            Ok(t) => Ok(ArrowField::new(f.name.clone(), t, f.data_type.nullable)),
            Err(t) => datafusion::common::not_impl_err!(
                "unsupported feature: table function '{name}' returns a column of type {t}"
            ),
        })
        .collect()
}

impl UserDefinedLogicalNodeCore for TableFunctionNode {
    fn name(&self) -> &str {
        "TableFunction"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        Vec::new()
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        self.args.clone()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let args: Vec<String> = self.args.iter().map(|a| a.to_string()).collect();
        write!(f, "TableFunction: {:?}({})", self.function, args.join(", "))
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> DfResult<Self> {
        if !inputs.is_empty() {
            return datafusion::common::internal_err!("a table function call has no input");
        }
        let names: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        // Expression rewrites may name the arguments; a call's arguments need no names.
        let exprs: Vec<Expr> = exprs.into_iter().map(Expr::unalias).collect();
        match &self.function {
            TableFunction::Unnest { .. }
            | TableFunction::Rust { .. }
            | TableFunction::Replicate => Self::try_new(self.function.clone(), exprs, &names),
            TableFunction::Java {
                name, class, jars, ..
            } => {
                let spec = UserFunctionSpec {
                    name: name.clone(),
                    language: "JAVA".into(),
                    class: class.clone(),
                    jars: jars.clone(),
                    kind: crate::udf::TABLE.into(),
                };
                Self::java(&spec, exprs, &names)
            }
        }
    }
}

/// Describes a correlate for `explain`.
pub fn describe(spec: &CorrelateSpec) -> String {
    let function = match &spec.function {
        TableFunction::Unnest {
            with_ordinality: true,
        } => "UNNEST WITH ORDINALITY".to_string(),
        TableFunction::Unnest { .. } => "UNNEST".to_string(),
        TableFunction::Replicate => "REPLICATE_ROWS".to_string(),
        TableFunction::Java { name, .. } | TableFunction::Rust { name, .. } => name.clone(),
    };
    let mut out = format!(
        "Correlate(invocation=[{function}({})], joinType=[{}]",
        spec.args.join(", "),
        if spec.left_outer { "LEFT" } else { "INNER" }
    );
    if let Some(c) = &spec.condition {
        out.push_str(&format!(", condition=[{c}]"));
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Fields;

    #[test]
    fn unnest_of_rows_has_the_row_fields() {
        let row = ArrowType::Struct(Fields::from(vec![
            ArrowField::new("name", ArrowType::Utf8, false),
            ArrowField::new("qty", ArrowType::Int32, true),
        ]));
        let list = ArrowType::List(Arc::new(ArrowField::new("item", row, false)));
        let fields = unnest_fields(&list).unwrap();
        assert_eq!(fields[0].name(), "name");
        assert!(!fields[0].is_nullable());
        assert!(fields[1].is_nullable());
    }

    #[test]
    fn unnest_of_a_scalar_is_refused_as_flink_does() {
        let e = unnest_fields(&ArrowType::Utf8).unwrap_err().to_string();
        assert!(e.contains("Cannot apply 'UNNEST'"), "{e}");
    }

    #[test]
    fn alias_lists_must_match_the_columns() {
        let arg = Expr::Literal(datafusion::common::ScalarValue::Int32(Some(1)), None);
        let e = TableFunctionNode::unnest(arg, false, &["a".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("Cannot apply"), "{e}");
    }
}
