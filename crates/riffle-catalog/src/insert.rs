//! `INSERT INTO` / statement sets: the target must be a table whose sink schema accepts the
//! query's columns under Flink's implicit cast rules (`DynamicSinkUtils`).

use riffle_sql::ast::{Insert, Query};
use riffle_sql::Span;
use sqlparser::ast::{SelectItem, SetExpr};

use crate::schema::{Field, Schema};
use crate::{ident_span, span_of, types, Analyzer};

impl Analyzer {
    /// Analyzes one `INSERT`; returns the schema of its source query.
    pub(crate) fn insert(&mut self, insert: &Insert) -> Option<Schema> {
        let query_schema = self.top_level_query(&insert.query);
        let Some(path) = self.catalog.resolve_path(&insert.table) else {
            self.unknown_object(&insert.table);
            return Some(query_schema);
        };
        let Some(table) = self.catalog.table_by_path(&path).cloned() else {
            if self.catalog.view_by_path(&path).is_some() {
                self.error(
                    "insert-into-view",
                    format!("Cannot insert into '{path}': it is a view, not a table."),
                    insert.table_span,
                );
            } else {
                self.error(
                    "unknown-table",
                    format!(
                        "Cannot find table '`{}`.`{}`.`{}`' in any of the catalogs [{}], nor as a temporary table.",
                        path.catalog,
                        path.database,
                        path.name,
                        self.catalog.current_catalog()
                    ),
                    insert.table_span,
                );
            }
            return Some(query_schema);
        };
        self.usage.entry(path.clone()).or_default().sink = true;
        let sink = table.sink_schema();

        // Static partition columns are given by the PARTITION clause, not by the query.
        let mut static_columns = Vec::new();
        for (column, value) in &insert.partition {
            if !table.partition_keys.contains(&column.value) {
                let available: Vec<String> = table
                    .partition_keys
                    .iter()
                    .map(|k| format!("'{k}'"))
                    .collect();
                self.error(
                    "unknown-column",
                    format!(
                        "Partition column '{}' not defined in the table schema. Available partition columns: [{}]",
                        column.value,
                        available.join(", ")
                    ),
                    ident_span(column),
                );
            }
            let scope = crate::scope::Scope::default();
            let ctes = crate::scope::Ctes::default();
            self.type_expr(
                value,
                crate::expr::ExprCx {
                    scope: &scope,
                    ctes: &ctes,
                    grouped: false,
                },
            );
            static_columns.push(column.value.clone());
        }
        let mut target: Vec<Field> = sink
            .columns
            .iter()
            .filter(|f| !static_columns.contains(&f.name))
            .cloned()
            .collect();
        if !insert.columns.is_empty() {
            let mut listed = Vec::new();
            for c in &insert.columns {
                match sink.field(&c.value) {
                    _ if listed.iter().any(|f: &Field| f.name == c.value) => {
                        self.error(
                            "duplicate-column",
                            format!("Target column '{}' is assigned more than once", c.value),
                            ident_span(c),
                        );
                    }
                    Some(f) => listed.push(f.clone()),
                    None => {
                        self.error(
                            "unknown-column",
                            format!("Unknown target column '{}'", c.value),
                            ident_span(c),
                        );
                        return Some(query_schema);
                    }
                }
            }
            // Columns left out are filled with NULL, which a NOT NULL column cannot take.
            for f in &target {
                if !f.data_type.nullable && !listed.iter().any(|l| l.name == f.name) {
                    self.error(
                        "missing-column",
                        format!(
                            "Column '{}' has no default value and does not allow NULLs",
                            f.name
                        ),
                        insert.table_span,
                    );
                }
            }
            target = listed;
        }
        self.check_sink_types(
            &table.path.to_string(),
            &query_schema,
            &Schema::new(target),
            insert,
        );
        Some(query_schema)
    }

    fn check_sink_types(
        &mut self,
        sink_name: &str,
        query: &Schema,
        sink: &Schema,
        insert: &Insert,
    ) {
        let mismatch = |cause: String| {
            format!(
                "Column types of query result and sink for '{sink_name}' do not match.\nCause: {cause}\n\n\
                 Query schema: {query}\nSink schema:  {sink}"
            )
        };
        if query.columns.len() != sink.columns.len() {
            self.error(
                "sink-schema-mismatch",
                mismatch("Different number of columns.".into()),
                query_span(&insert.query),
            )
            .help = Some(format!(
                "the query produces {} columns, the sink expects {}",
                query.columns.len(),
                sink.columns.len()
            ));
            return;
        }
        for (i, (q, s)) in query.columns.iter().zip(&sink.columns).enumerate() {
            // Flink ignores NOT NULL here (it is enforced at runtime by the sink's not-null
            // enforcer), so nullability does not take part in the check.
            let source = q.data_type.clone().with_nullable(true);
            let target = s.data_type.clone().with_nullable(true);
            if !types::supports_implicit_cast(&source, &target) {
                let span =
                    select_item_span(&insert.query, i).unwrap_or_else(|| query_span(&insert.query));
                self.error(
                    "sink-schema-mismatch",
                    mismatch(format!(
                        "Incompatible types for sink column '{}' at position {i}.",
                        s.name
                    )),
                    span,
                )
                .help = Some(format!(
                    "cast the value: CAST(... AS {})",
                    (s.data_type.clone().with_nullable(true))
                ));
            }
        }
    }
}

fn query_span(q: &Query) -> Span {
    span_of(q)
}

/// The span of the `i`-th output column's select item, when the query is a plain SELECT whose
/// items before it are not wildcards.
fn select_item_span(q: &Query, i: usize) -> Option<Span> {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    let before = select.projection.get(..i)?;
    if before.iter().any(|item| {
        matches!(
            item,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    }) {
        return None;
    }
    select.projection.get(i).map(span_of)
}
