//! `SHOW TABLES`, `SHOW VIEWS`, `SHOW CATALOGS`, `SHOW DATABASES` and `SHOW CURRENT
//! CATALOG|DATABASE`: one-column results as Flink's SQL client prints them, planned as a bounded
//! query over their rows.

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{EmptyRelation, Expr, LogicalPlan, LogicalPlanBuilder};

use super::Catalog;

/// Riffle has one catalog and one database, named as Flink names its defaults.
const CATALOG: &str = "default_catalog";
const DATABASE: &str = "default_database";

/// The result column and rows of a `SHOW` statement (`text`), or the feature Riffle lacks.
pub(super) fn listing(
    text: &str,
    catalog: &Catalog,
) -> Result<(&'static str, Vec<String>), String> {
    let words: Vec<String> = text
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let bare = |name: &String| {
        name.rsplit('.')
            .next()
            .unwrap_or(name)
            .trim_matches('`')
            .to_string()
    };
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    match words.as_slice() {
        ["SHOW", "TABLES"] => Ok((
            "table name",
            sorted(
                catalog
                    .tables
                    .keys()
                    .chain(catalog.views.keys())
                    .map(bare)
                    .collect(),
            ),
        )),
        ["SHOW", "VIEWS"] => Ok((
            "view name",
            sorted(catalog.views.keys().map(bare).collect()),
        )),
        ["SHOW", "CATALOGS"] => Ok(("catalog name", vec![CATALOG.into()])),
        ["SHOW", "DATABASES"] => Ok(("database name", vec![DATABASE.into()])),
        ["SHOW", "CURRENT", "CATALOG"] => Ok(("current catalog name", vec![CATALOG.into()])),
        ["SHOW", "CURRENT", "DATABASE"] => Ok(("current database name", vec![DATABASE.into()])),
        _ => Err(words.iter().take(3).copied().collect::<Vec<_>>().join(" ")),
    }
}

/// A bounded plan of one nullable `STRING` column `column` holding `rows`.
pub(super) fn rows_plan(column: &str, rows: &[String]) -> DfResult<LogicalPlan> {
    if rows.is_empty() {
        let schema = ArrowSchema::new(vec![ArrowField::new(column, ArrowType::Utf8, true)]);
        return Ok(LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: false,
            schema: Arc::new(DFSchema::try_from(schema)?),
        }));
    }
    let values = rows
        .iter()
        .map(|r| vec![Expr::Literal(ScalarValue::Utf8(Some(r.clone())), None)])
        .collect();
    let plan = LogicalPlanBuilder::values(values)?.build()?;
    let first = plan.schema().field(0).name().clone();
    LogicalPlanBuilder::from(plan)
        .project(vec![Expr::Column(first.into()).alias(column)])?
        .build()
}
