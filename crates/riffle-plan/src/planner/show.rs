//! `SHOW TABLES`, `SHOW VIEWS`, `SHOW CATALOGS`, `SHOW DATABASES`, `SHOW CURRENT
//! CATALOG|DATABASE` (one column) and `DESCRIBE` (Flink's six columns: name, type, null, key,
//! extras, watermark) as Flink's SQL client prints them, planned as a bounded query over their
//! rows.

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{EmptyRelation, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::sql::sqlparser::ast::{self, visit_expressions_mut};

use super::time_type::{time_attributes, TimeKind};
use super::{Catalog, TableInfo};
use crate::types::flink_type;

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

/// The rows of `DESCRIBE <name>` (`DESC` too) over `catalog`, or why there are none.
pub(super) fn describe(text: &str, catalog: &Catalog) -> Result<LogicalPlan, String> {
    let name = text
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .nth(1)
        .map(|n| {
            n.rsplit('.')
                .next()
                .unwrap_or(n)
                .trim_matches('`')
                .to_string()
        })
        .ok_or("DESCRIBE without a table name")?;
    let rows = if let Some(table) = catalog.tables.get(&name) {
        table_rows(table)
    } else if let Some(view) = catalog.views.get(&name) {
        let times = time_attributes(catalog, view);
        view.schema()
            .fields()
            .iter()
            .zip(times)
            .map(|(f, time)| {
                let mut t = flink_type(f.data_type(), true);
                if let Some(time) = time {
                    t = format!("{} {}", t.trim_end_matches(" NOT NULL"), time.marker());
                }
                // Flink's processing-time type is NOT NULL whatever derived it.
                let nullable = f.is_nullable() && time != Some(TimeKind::Proctime);
                described(f.name(), &t, nullable, None, None, None)
            })
            .collect()
    } else {
        return Err(format!(
            "Tables or views with the identifier 'default_catalog.default_database.{name}' doesn't exist."
        ));
    };
    let columns = [
        ("name", ArrowType::Utf8),
        ("type", ArrowType::Utf8),
        ("null", ArrowType::Boolean),
        ("key", ArrowType::Utf8),
        ("extras", ArrowType::Utf8),
        ("watermark", ArrowType::Utf8),
    ];
    table_plan(&columns, rows).map_err(|e| e.to_string())
}

/// One `DESCRIBE` row.
fn described(
    name: &str,
    flink: &str,
    nullable: bool,
    key: Option<String>,
    extras: Option<String>,
    watermark: Option<String>,
) -> Vec<ScalarValue> {
    let text = |s: Option<String>| ScalarValue::Utf8(s);
    vec![
        text(Some(name.to_string())),
        text(Some(flink.trim_end_matches(" NOT NULL").to_string())),
        ScalarValue::Boolean(Some(nullable)),
        text(key),
        text(extras),
        text(watermark),
    ]
}

fn table_rows(table: &TableInfo) -> Vec<Vec<ScalarValue>> {
    let primary_key = &table.connector.primary_key;
    let key = (!primary_key.is_empty()).then(|| format!("PRI({})", primary_key.join(", ")));
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let metadata = table.connector.metadata.iter().find(|m| m.column == c.name);
            let extras = match (&c.computed, metadata) {
                (Some(e), _) => Some(format!("AS {}", flink_sql(e))),
                (None, Some(m)) => {
                    let from = if m.key == m.column {
                        String::new()
                    } else {
                        format!(" FROM '{}'", m.key)
                    };
                    let virtual_ = if m.is_virtual { " VIRTUAL" } else { "" };
                    Some(format!("METADATA{from}{virtual_}"))
                }
                (None, None) => None,
            };
            let watermark = match &table.watermark {
                Some((column, e)) if *column == i => Some(flink_sql(e)),
                _ => None,
            };
            let flink = if c.rowtime {
                format!("{} *ROWTIME*", c.flink.trim_end_matches(" NOT NULL"))
            } else {
                c.flink.clone()
            };
            let in_key = primary_key.contains(&c.name);
            described(
                &c.name,
                &flink,
                c.nullable && !c.flink.ends_with(" NOT NULL"),
                key.clone().filter(|_| in_key),
                extras,
                watermark,
            )
        })
        .collect()
}

/// An expression as Flink prints it back: identifiers in backquotes, function names upper case.
fn flink_sql(expr: &ast::Expr) -> String {
    let mut expr = expr.clone();
    let _ = visit_expressions_mut(&mut expr, |e: &mut ast::Expr| {
        match e {
            ast::Expr::Identifier(ident) => ident.quote_style = Some('`'),
            ast::Expr::CompoundIdentifier(parts) => {
                parts.iter_mut().for_each(|p| p.quote_style = Some('`'))
            }
            ast::Expr::Function(f) => {
                for part in &mut f.name.0 {
                    if let ast::ObjectNamePart::Identifier(ident) = part {
                        if ident.quote_style.is_none() {
                            ident.value = ident.value.to_ascii_uppercase();
                        }
                    }
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    expr.to_string()
}

/// A bounded plan of nullable `columns` holding `rows`.
fn table_plan(columns: &[(&str, ArrowType)], rows: Vec<Vec<ScalarValue>>) -> DfResult<LogicalPlan> {
    if rows.is_empty() {
        let fields: Vec<ArrowField> = columns
            .iter()
            .map(|(name, t)| ArrowField::new(*name, t.clone(), true))
            .collect();
        return Ok(LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: false,
            schema: Arc::new(DFSchema::try_from(ArrowSchema::new(fields))?),
        }));
    }
    let values = rows
        .into_iter()
        .map(|row| row.into_iter().map(|v| Expr::Literal(v, None)).collect())
        .collect();
    let plan = LogicalPlanBuilder::values(values)?.build()?;
    let projection: Vec<Expr> = plan
        .schema()
        .fields()
        .iter()
        .zip(columns)
        .map(|(f, (name, _))| Expr::Column(f.name().as_str().into()).alias(*name))
        .collect();
    LogicalPlanBuilder::from(plan).project(projection)?.build()
}
