//! DDL: `CREATE TABLE` (with Flink's `LIKE` merging, `MergeTableLikeUtil`), `CREATE VIEW`,
//! `CREATE FUNCTION`, `DROP`, `ALTER` and `USE`.

use riffle_sql::ast::{
    ColumnKind, CreateFunction, CreateTable, CreateView, DataType, Drop, DropObject, Ident,
    LikeFeature, LikeStrategy, ObjectName, TypeKind, Unparsed, Use,
};
use riffle_sql::Span;

use crate::catalog::{
    ColumnDef, ColumnRole, ObjectPath, TableDef, UserFunction, ViewDef, WatermarkDef,
};
use crate::expr::ExprCx;
use crate::options::OptionEntry;
use crate::schema::{Field, Schema, TimeAttribute};
use crate::scope::{Ctes, Scope};
use crate::{ident_span, span_of, types, Analyzer};

/// `LIKE` merging strategy per feature (Flink's defaults: `INCLUDING ALL OVERWRITING OPTIONS`).
#[derive(Debug, Clone, Copy)]
struct Strategies {
    constraints: LikeStrategy,
    generated: LikeStrategy,
    metadata: LikeStrategy,
    options: LikeStrategy,
    partitions: LikeStrategy,
    watermarks: LikeStrategy,
}

impl Strategies {
    fn compute(options: &[riffle_sql::ast::LikeOption]) -> Self {
        let mut s = Strategies {
            constraints: LikeStrategy::Including,
            generated: LikeStrategy::Including,
            metadata: LikeStrategy::Including,
            options: LikeStrategy::Overwriting,
            partitions: LikeStrategy::Including,
            watermarks: LikeStrategy::Including,
        };
        // `ALL` sets every feature first; specific features then override it.
        for o in options.iter().filter(|o| o.feature == LikeFeature::All) {
            s = Strategies {
                constraints: o.strategy,
                generated: o.strategy,
                metadata: o.strategy,
                options: o.strategy,
                partitions: o.strategy,
                watermarks: o.strategy,
            };
        }
        for o in options {
            match o.feature {
                LikeFeature::All => {}
                LikeFeature::Constraints => s.constraints = o.strategy,
                LikeFeature::Generated => s.generated = o.strategy,
                LikeFeature::Metadata => s.metadata = o.strategy,
                LikeFeature::Options => s.options = o.strategy,
                LikeFeature::Partitions => s.partitions = o.strategy,
                LikeFeature::Watermarks => s.watermarks = o.strategy,
            }
        }
        s
    }
}

/// Flink's parser position format, used inside messages that cite a position.
fn at(span: Span) -> String {
    format!("line {}, column {}", span.start.line, span.start.column)
}

fn quoted_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Analyzer {
    /// `CREATE TABLE`.
    pub(crate) fn create_table(
        &mut self,
        create: &CreateTable,
        statement_span: Span,
    ) -> Option<Schema> {
        let name_span = if create.name_span.is_unknown() {
            statement_span
        } else {
            create.name_span
        };
        let Some(path) = self.catalog.resolve_path(&create.name) else {
            self.error(
                "invalid-identifier",
                format!("Invalid table identifier '{}'", create.name),
                name_span,
            );
            return None;
        };
        if !self.check_new_object(&path, create.temporary, create.if_not_exists, name_span) {
            return None;
        }

        let has = |key: &str| create.options.iter().any(|o| o.key == key);
        self.legacy_table = !has("connector") && (has("type") || has("connector.type"));
        let output = self.create_table_checked(create, path, name_span);
        self.legacy_table = false;
        output
    }

    fn create_table_checked(
        &mut self,
        create: &CreateTable,
        path: ObjectPath,
        name_span: Span,
    ) -> Option<Schema> {
        // Base table of a LIKE clause.
        let (base, strategies, like_span) = match &create.like {
            Some(like) => {
                let base = self.catalog.resolve_path(&like.source).and_then(|p| {
                    if self.catalog.view_by_path(&p).is_some() {
                        self.error(
                            "invalid-like",
                            format!("Source table '{p}' of the LIKE clause can not be a VIEW, at {}", at(like.span)),
                            like.span,
                        );
                        return None;
                    }
                    let table = self.catalog.table_by_path(&p).cloned();
                    if table.is_none() {
                        self.error(
                            "unknown-table",
                            format!("Source table '{p}' of the LIKE clause not found in the catalog, at {}", at(like.span)),
                            span_of(&like.source),
                        );
                    }
                    table
                });
                (base, Strategies::compute(&like.options), like.span)
            }
            None => (None, Strategies::compute(&[]), Span::default()),
        };

        let mut columns: Vec<ColumnDef> = Vec::new();
        if let Some(base) = &base {
            for c in &base.columns {
                let keep = match c.kind {
                    ColumnRole::Physical | ColumnRole::Header => true,
                    ColumnRole::Computed { .. } => strategies.generated != LikeStrategy::Excluding,
                    ColumnRole::Metadata { .. } => strategies.metadata != LikeStrategy::Excluding,
                };
                if keep {
                    // Time attributes are derived again below from the merged watermark.
                    let mut c = c.clone();
                    c.time_attribute = None;
                    c.span = like_span;
                    columns.push(c);
                }
            }
        }
        let base_count = columns.len();
        let query_schema = create.as_query.as_ref().map(|q| self.top_level_query(q));
        match &query_schema {
            Some(schema) => self.merge_query_columns(create, schema, &mut columns, name_span),
            None => self.merge_columns(create, &mut columns, base_count, strategies),
        }

        let watermark = self.merge_watermark(create, base.as_ref(), &mut columns, strategies);
        let primary_key = self.merge_primary_key(create, base.as_ref(), &mut columns, strategies);
        let partition_keys = self.merge_partitions(create, base.as_ref(), &columns, strategies);

        // Options: LIKE merging, then validation against the connector schema.
        let mut options: Vec<OptionEntry> = Vec::new();
        if let Some(base) = &base {
            if strategies.options != LikeStrategy::Excluding {
                options.extend(base.options.iter().map(|(k, v)| OptionEntry {
                    key: k.clone(),
                    value: v.clone(),
                    key_span: like_span,
                    value_span: like_span,
                }));
            }
        }
        for o in &create.options {
            if let Some(existing) = options.iter_mut().find(|e| e.key == o.key) {
                if strategies.options != LikeStrategy::Overwriting && existing.key_span == like_span
                {
                    self.error(
                        "duplicate-option",
                        format!(
                            "There already exists an option ['{}' -> '{}']  in the base table. You might want \
                             to specify EXCLUDING OPTIONS or OVERWRITING OPTIONS.",
                            existing.key, existing.value
                        ),
                        o.key_span,
                    );
                }
                existing.value = o.value.clone();
                existing.key_span = o.key_span;
                existing.value_span = o.value_span;
            } else {
                options.push(OptionEntry {
                    key: o.key.clone(),
                    value: o.value.clone(),
                    key_span: o.key_span,
                    value_span: o.value_span,
                });
            }
        }
        if query_schema.is_some() {
            // CTAS writes the query into the new table.
            self.usage.entry(path.clone()).or_default().sink = true;
        }
        let connector = self.validate_options(&path, &options, name_span);

        self.catalog.insert_table(TableDef {
            name: create.name.clone(),
            path,
            temporary: create.temporary,
            columns,
            connector,
            primary_key,
            watermark,
            partition_keys,
            options: options.into_iter().map(|o| (o.key, o.value)).collect(),
            span: name_span,
        });
        query_schema
    }

    /// CTAS columns (Flink's `AsQuerySchemaMerger`): the query's columns; a declared physical
    /// column of the same name may change the type to one the query's type casts to implicitly;
    /// other declared columns come first.
    fn merge_query_columns(
        &mut self,
        create: &CreateTable,
        query: &Schema,
        columns: &mut Vec<ColumnDef>,
        span: Span,
    ) {
        let mut from_query: Vec<ColumnDef> = query
            .columns
            .iter()
            .map(|f| ColumnDef {
                name: f.name.clone(),
                data_type: f.data_type.clone(),
                kind: ColumnRole::Physical,
                time_attribute: None,
                span,
            })
            .collect();
        let mut declared = Vec::new();
        for column in &create.columns {
            let name = &column.name.value;
            let position = from_query.iter().position(|c| &c.name == name);
            match (&column.kind, position) {
                (ColumnKind::Physical { data_type, .. }, Some(i)) => {
                    let Some(slot) = from_query.get_mut(i) else {
                        continue;
                    };
                    if !types::supports_implicit_cast(&slot.data_type, data_type) {
                        self.error(
                            "sink-schema-mismatch",
                            format!(
                                "Incompatible types for sink column '{name}' at position {i}. The source column has \
                                 type '{}', while the target column has type '{data_type}'.",
                                slot.data_type
                            ),
                            ident_span(&column.name),
                        );
                    }
                    slot.data_type = data_type.clone();
                    slot.span = column.span;
                }
                (ColumnKind::Computed { .. }, Some(_)) => {
                    self.error(
                        "duplicate-column",
                        format!(
                            "A column named '{name}' already exists in the source schema. Computed columns cannot \
                             overwrite columns from source."
                        ),
                        ident_span(&column.name),
                    );
                }
                (
                    ColumnKind::Physical { data_type, .. } | ColumnKind::Header { data_type },
                    None,
                ) => {
                    declared.push(ColumnDef {
                        name: name.clone(),
                        data_type: data_type.clone(),
                        kind: ColumnRole::Physical,
                        time_attribute: None,
                        span: column.span,
                    });
                }
                (
                    ColumnKind::Metadata {
                        data_type,
                        key,
                        is_virtual,
                    },
                    _,
                ) => {
                    if let Some(i) = position {
                        from_query.remove(i);
                    }
                    declared.push(ColumnDef {
                        name: name.clone(),
                        data_type: data_type.clone(),
                        kind: ColumnRole::Metadata {
                            key: key.clone().unwrap_or_else(|| name.clone()),
                            is_virtual: *is_virtual,
                        },
                        time_attribute: None,
                        span: column.span,
                    });
                }
                (ColumnKind::Computed { expr }, None) => {
                    let scope = Scope::of_fields(query.columns.clone());
                    let ctes = Ctes::default();
                    let typed = self.type_expr(
                        expr,
                        ExprCx {
                            scope: &scope,
                            ctes: &ctes,
                            grouped: false,
                        },
                    );
                    declared.push(ColumnDef {
                        name: name.clone(),
                        data_type: typed.ty,
                        kind: ColumnRole::Computed {
                            expr: Box::new(expr.clone()),
                        },
                        time_attribute: typed.time.filter(|t| *t == TimeAttribute::Proctime),
                        span: column.span,
                    });
                }
                (ColumnKind::Header { .. }, Some(_)) => {}
            }
        }
        columns.extend(declared);
        columns.extend(from_query);
    }

    /// Reports an existing object of the same name; returns whether the new one is registered.
    fn check_new_object(
        &mut self,
        path: &ObjectPath,
        temporary: bool,
        if_not_exists: bool,
        span: Span,
    ) -> bool {
        let existing_temporary = self
            .catalog
            .table_by_path(path)
            .map(|t| t.temporary)
            .or_else(|| self.catalog.view_by_path(path).map(|v| v.temporary));
        let Some(existing_temporary) = existing_temporary else {
            return true;
        };
        if if_not_exists {
            return false;
        }
        // A temporary object may shadow a permanent one (and the other way round).
        if existing_temporary != temporary {
            return true;
        }
        let message = if temporary {
            format!(
                "Temporary table with identifier '`{}`.`{}`.`{}`' already exists",
                path.catalog, path.database, path.name
            )
        } else {
            format!(
                "Table (or view) {}.{} already exists in Catalog {}.",
                path.database, path.name, path.catalog
            )
        };
        self.error("duplicate-table", message, span).help =
            Some("use CREATE TABLE IF NOT EXISTS, or DROP the earlier definition first".into());
        false
    }

    /// Appends the statement's own columns to the inherited ones.
    fn merge_columns(
        &mut self,
        create: &CreateTable,
        columns: &mut Vec<ColumnDef>,
        base_count: usize,
        strategies: Strategies,
    ) {
        let mut seen: Vec<&str> = Vec::new();
        for column in &create.columns {
            let name = column.name.value.as_str();
            let span = ident_span(&column.name);
            if seen.contains(&name) {
                self.error(
                    "duplicate-column",
                    format!("Duplicate column name [{name}]"),
                    span,
                );
                continue;
            }
            seen.push(name);
            let existing = columns.iter().take(base_count).position(|c| c.name == name);
            let (kind, data_type, time) = match &column.kind {
                ColumnKind::Physical { data_type, .. } => {
                    (ColumnRole::Physical, data_type.clone(), None)
                }
                ColumnKind::Header { data_type } => (ColumnRole::Header, data_type.clone(), None),
                ColumnKind::Metadata {
                    data_type,
                    key,
                    is_virtual,
                } => (
                    ColumnRole::Metadata {
                        key: key.clone().unwrap_or_else(|| name.to_string()),
                        is_virtual: *is_virtual,
                    },
                    data_type.clone(),
                    None,
                ),
                ColumnKind::Computed { expr } => {
                    // Computed columns see the physical and metadata columns only.
                    let visible: Vec<Field> = columns
                        .iter()
                        .filter(|c| !matches!(c.kind, ColumnRole::Computed { .. }))
                        .map(plain_field)
                        .chain(create.columns.iter().filter_map(|c| match &c.kind {
                            ColumnKind::Physical { data_type, .. }
                            | ColumnKind::Header { data_type }
                            | ColumnKind::Metadata { data_type, .. } => {
                                Some(Field::new(c.name.value.clone(), data_type.clone()))
                            }
                            ColumnKind::Computed { .. } => None,
                        }))
                        .collect();
                    let scope = Scope::of_fields(visible);
                    let ctes = Ctes::default();
                    let typed = self.type_expr(
                        expr,
                        ExprCx {
                            scope: &scope,
                            ctes: &ctes,
                            grouped: false,
                        },
                    );
                    // Only PROCTIME() makes a computed column a time attribute here; rowtime
                    // comes from the watermark.
                    let time = typed.time.filter(|t| *t == TimeAttribute::Proctime);
                    (
                        ColumnRole::Computed {
                            expr: Box::new(expr.clone()),
                        },
                        typed.ty,
                        time,
                    )
                }
            };
            let def = ColumnDef {
                name: name.to_string(),
                data_type,
                kind,
                time_attribute: time,
                span: column.span,
            };
            let Some(i) = existing else {
                columns.push(def);
                continue;
            };
            // A column with this name came from the LIKE base table.
            let Some(base) = columns.get(i) else { continue };
            let message = match (&def.kind, &base.kind) {
                (ColumnRole::Physical | ColumnRole::Header, _) => {
                    Some(format!("A column named '{name}' already exists in the base table."))
                }
                (ColumnRole::Computed { .. }, ColumnRole::Computed { .. }) => (strategies.generated
                    != LikeStrategy::Overwriting)
                    .then(|| {
                        format!(
                            "A generated column named '{name}' already exists in the base table. You might want \
                             to specify EXCLUDING GENERATED or OVERWRITING GENERATED."
                        )
                    }),
                (ColumnRole::Computed { .. }, _) => Some(format!(
                    "A column named '{name}' already exists in the base table. Computed columns can only \
                     overwrite other computed columns."
                )),
                (ColumnRole::Metadata { .. }, ColumnRole::Metadata { .. }) => (strategies.metadata
                    != LikeStrategy::Overwriting)
                    .then(|| {
                        format!(
                            "A metadata column named '{name}' already exists in the base table. You might want \
                             to specify EXCLUDING METADATA or OVERWRITING METADATA."
                        )
                    }),
                (ColumnRole::Metadata { .. }, _) => Some(format!(
                    "A column named '{name}' already exists in the base table. Metadata columns can only \
                     overwrite other metadata columns."
                )),
            };
            match message {
                Some(m) => {
                    self.error("duplicate-column", m, span);
                }
                None => {
                    if let Some(slot) = columns.get_mut(i) {
                        *slot = def;
                    }
                }
            }
        }
    }

    /// The merged watermark; marks its column as the rowtime attribute.
    fn merge_watermark(
        &mut self,
        create: &CreateTable,
        base: Option<&TableDef>,
        columns: &mut [ColumnDef],
        strategies: Strategies,
    ) -> Option<WatermarkDef> {
        let inherited = base
            .and_then(|b| b.watermark.clone())
            .filter(|_| strategies.watermarks != LikeStrategy::Excluding);
        let mut result = inherited.clone();
        if let Some(wm) = &create.watermark {
            let path: Vec<&str> = wm.column.iter().map(|i| i.value.as_str()).collect();
            let column_name = path.join(".");
            let column_span = wm
                .column
                .iter()
                .map(ident_span)
                .reduce(|a, b| a.union(&b))
                .unwrap_or(wm.span);
            if inherited.as_ref().is_some_and(|w| w.column == column_name)
                && strategies.watermarks != LikeStrategy::Overwriting
            {
                self.error(
                    "invalid-watermark",
                    format!(
                        "There already exists a watermark spec for column '{column_name}' in the base table. You \
                         might want to specify EXCLUDING WATERMARKS or OVERWRITING WATERMARKS."
                    ),
                    wm.span,
                );
                return inherited;
            }
            let root = wm
                .column
                .first()
                .map(|i| i.value.as_str())
                .unwrap_or_default();
            let Some(root_column) = columns.iter().find(|c| c.name == root) else {
                self.error(
                    "unknown-column",
                    format!(
                        "The rowtime attribute field '{column_name}' is not defined in the table schema, at {}\n\
                         Available fields: [{}]",
                        at(column_span),
                        quoted_list(columns.iter().map(|c| c.name.as_str()))
                    ),
                    column_span,
                );
                return inherited;
            };
            // Nested rowtime fields (`WATERMARK FOR r.ts`) follow ROW types.
            let mut time_type = root_column.data_type.clone();
            for field in wm.column.iter().skip(1) {
                let next = crate::expr::field_type(&time_type, &field.value);
                if types::is_unknown(&next) && !types::is_unknown(&time_type) {
                    self.error(
                        "unknown-column",
                        format!(
                            "The rowtime attribute field '{column_name}' is not defined in the table schema, at {}\n\
                             Nested field '{}' was not found in a composite type: {}.",
                            at(ident_span(field)),
                            field.value,
                            time_type
                        ),
                        ident_span(field),
                    );
                    return inherited;
                }
                time_type = next;
            }
            if !is_valid_rowtime_type(&time_type) {
                self.error(
                    "invalid-watermark",
                    format!(
                        "Invalid data type of time field for watermark definition. The field must be of type \
                         TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the time \
                         field type is {}",
                        time_type
                    ),
                    column_span,
                )
                .help = Some("declare the column as TIMESTAMP(3), or compute one, e.g. `ts AS TO_TIMESTAMP_LTZ(epoch_millis, 3)`".into());
            }
            // The legacy rsqlDB form (`WATERMARK wk FOR ts AS withOffset(ts, 2000)`) uses functions
            // Flink never had; `riffle check` reports it as needing migration, so its strategy is
            // not typed here.
            // Flink stops at the time field; the strategy is checked only for a valid field.
            let expr_type = if wm.name.is_some() || !is_valid_rowtime_type(&time_type) {
                types::unknown()
            } else {
                let fields: Vec<Field> = columns.iter().map(plain_field).collect();
                let scope = Scope::of_fields(fields);
                let ctes = Ctes::default();
                let t = self
                    .type_expr(
                        &wm.expr,
                        ExprCx {
                            scope: &scope,
                            ctes: &ctes,
                            grouped: false,
                        },
                    )
                    .ty;
                if !is_valid_rowtime_type(&t) {
                    self.error(
                        "invalid-watermark",
                        format!(
                            "Invalid data type of expression for watermark definition. The field must be of type \
                             TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the \
                             watermark expression type is {}",
                            t
                        ),
                        span_of(&wm.expr),
                    );
                }
                t
            };
            result = Some(WatermarkDef {
                column: column_name,
                expr: wm.expr.clone(),
                expr_type,
                span: wm.span,
            });
        }
        if let Some(wm) = &result {
            for c in columns.iter_mut().filter(|c| c.name == wm.column) {
                c.time_attribute = Some(TimeAttribute::Rowtime);
                // A rowtime attribute is TIMESTAMP(3) whatever precision up to 3 it declares.
                match &mut c.data_type.kind {
                    TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) if *p < 3 => *p = 3,
                    _ => {}
                }
            }
        }
        result
    }

    /// The merged primary key; its columns become `NOT NULL`.
    fn merge_primary_key(
        &mut self,
        create: &CreateTable,
        base: Option<&TableDef>,
        columns: &mut [ColumnDef],
        strategies: Strategies,
    ) -> Vec<String> {
        let inherited: Vec<String> = base
            .filter(|_| strategies.constraints == LikeStrategy::Including)
            .map(|b| b.primary_key.clone())
            .unwrap_or_default();
        // The parser lifts an inline `col TYPE PRIMARY KEY NOT ENFORCED` into the table-level
        // constraint (and rejects a second definition).
        let (declared, span): (Vec<&Ident>, Span) = match &create.primary_key {
            Some(pk) => {
                if !pk.not_enforced {
                    self.error(
                        "invalid-primary-key",
                        "Flink doesn't support ENFORCED mode for PRIMARY KEY constraint. ENFORCED/NOT ENFORCED \
                         controls if the constraint checks are performed on the incoming/outgoing data. Flink does \
                         not own the data therefore the only supported mode is the NOT ENFORCED mode",
                        pk.span,
                    );
                }
                (pk.columns.iter().collect(), pk.span)
            }
            None => (Vec::new(), Span::default()),
        };
        let mut key = inherited;
        if !declared.is_empty() {
            if !key.is_empty() {
                self.error(
                    "invalid-primary-key",
                    "The base table already has a primary key. You might want to specify EXCLUDING CONSTRAINTS.",
                    span,
                );
            }
            key = Vec::new();
            for ident in declared {
                let id_span = ident_span(ident);
                match columns.iter().find(|c| c.name == ident.value) {
                    None => {
                        self.error(
                            "unknown-column",
                            format!(
                                "Primary key column '{}' is not defined in the schema at {}",
                                ident.value,
                                at(id_span)
                            ),
                            id_span,
                        );
                    }
                    Some(c) if !matches!(c.kind, ColumnRole::Physical | ColumnRole::Header) => {
                        self.error(
                            "invalid-primary-key",
                            format!(
                                "Could not create a PRIMARY KEY with column '{}' at {}.\nA PRIMARY KEY constraint \
                                 must be declared on physical columns.",
                                ident.value,
                                at(id_span)
                            ),
                            id_span,
                        );
                    }
                    Some(_) => key.push(ident.value.clone()),
                }
            }
        }
        for c in columns.iter_mut().filter(|c| key.contains(&c.name)) {
            c.data_type.nullable = false;
        }
        key
    }

    fn merge_partitions(
        &mut self,
        create: &CreateTable,
        base: Option<&TableDef>,
        columns: &[ColumnDef],
        strategies: Strategies,
    ) -> Vec<String> {
        let inherited = base.map(|b| b.partition_keys.clone()).unwrap_or_default();
        if create.partitioned_by.is_empty() {
            return if strategies.partitions == LikeStrategy::Excluding {
                Vec::new()
            } else {
                inherited
            };
        }
        if !inherited.is_empty() && strategies.partitions != LikeStrategy::Excluding {
            let span = create
                .partitioned_by
                .iter()
                .map(ident_span)
                .reduce(|a, b| a.union(&b))
                .unwrap_or_default();
            self.error(
                "invalid-partition",
                "The base table already has partitions defined. You might want to specify EXCLUDING PARTITIONS.",
                span,
            );
        }
        let mut keys = Vec::new();
        for p in &create.partitioned_by {
            if columns.iter().any(|c| c.name == p.value) {
                keys.push(p.value.clone());
            } else {
                self.error(
                    "unknown-column",
                    format!(
                        "Partition column '{}' not defined in the table schema. Available columns: [{}]",
                        p.value,
                        quoted_list(columns.iter().map(|c| c.name.as_str()))
                    ),
                    ident_span(p),
                );
            }
        }
        keys
    }

    /// `CREATE VIEW`: the view's schema is its query's, renamed by the column list.
    pub(crate) fn create_view(&mut self, view: &CreateView) -> Option<Schema> {
        let mut schema = self.top_level_query(&view.query);
        let Some(path) = self.catalog.resolve_path(&view.name) else {
            self.error(
                "invalid-identifier",
                format!("Invalid view identifier '{}'", view.name),
                view.name_span,
            );
            return Some(schema);
        };
        if !view.columns.is_empty() {
            if view.columns.len() == schema.columns.len() {
                for (f, c) in schema.columns.iter_mut().zip(&view.columns) {
                    f.name = c.value.clone();
                }
            } else {
                let def: Vec<&str> = view.columns.iter().map(|c| c.value.as_str()).collect();
                let input: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
                self.error(
                    "column-count-mismatch",
                    format!(
                        "VIEW definition and input fields not match:\n\tDef fields: [{}].\n\tInput fields: [{}].",
                        def.join(", "),
                        input.join(", ")
                    ),
                    view.name_span,
                );
            }
        }
        if self.check_new_object(&path, view.temporary, view.if_not_exists, view.name_span) {
            self.catalog.insert_view(ViewDef {
                name: view.name.clone(),
                path,
                temporary: view.temporary,
                schema: schema.clone(),
                query: view.query.clone(),
                span: view.name_span,
            });
        }
        Some(schema)
    }

    /// `CREATE FUNCTION`.
    pub(crate) fn create_function(&mut self, function: &CreateFunction) {
        let Some(name) = function
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_lowercase())
        else {
            return;
        };
        if self.catalog.has_user_function(&name) {
            if !function.if_not_exists {
                self.error(
                    "duplicate-function",
                    format!(
                        "Could not register {} function. A function named '{name}' does already exist.",
                        if function.system { "temporary system" } else { "catalog" }
                    ),
                    function.name_span,
                );
            }
            return;
        }
        self.catalog.insert_function(UserFunction {
            name,
            identifier: function.identifier.clone(),
            language: function.language.clone().unwrap_or_else(|| "JAVA".into()),
            jars: function.jars.clone(),
            system: function.system,
            span: function.name_span,
        });
    }

    /// `DROP TABLE | VIEW | FUNCTION`.
    pub(crate) fn drop(&mut self, drop: &Drop, statement_span: Span) {
        let span = {
            let s = span_of(&drop.name);
            if s.is_unknown() {
                statement_span
            } else {
                s
            }
        };
        match drop.object {
            DropObject::Table | DropObject::View => {
                let path = self.catalog.resolve_path(&drop.name);
                let removed = path.as_ref().is_some_and(|p| match drop.object {
                    DropObject::Table => self.catalog.remove_table(p),
                    _ => self.catalog.remove_view(p),
                });
                if !removed && !drop.if_exists {
                    let kind = if drop.object == DropObject::Table {
                        "Table"
                    } else {
                        "View"
                    };
                    let shown = path.map_or_else(|| drop.name.to_string(), |p| p.to_string());
                    let code = if drop.object == DropObject::Table {
                        "unknown-table"
                    } else {
                        "unknown-view"
                    };
                    self.error(
                        code,
                        format!("{kind} with identifier '{shown}' does not exist."),
                        span,
                    );
                }
            }
            DropObject::Function => {
                let name = drop
                    .name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
                    .unwrap_or_default();
                if !self.catalog.remove_function(&name) && !drop.if_exists {
                    self.error(
                        "unknown-function",
                        format!("Function {name} does not exist."),
                        span,
                    );
                }
            }
            DropObject::Catalog | DropObject::Database => {}
        }
    }

    /// `ALTER TABLE name ...`: Riffle keeps ALTER statements as text, so the table is only marked
    /// as altered; references to columns it does not know are then accepted with unknown types.
    /// An `ALTER` statement; for an `ALTER TABLE ... ADD` of one column that Riffle models,
    /// the table after it.
    pub(crate) fn alter(&mut self, alter: &Unparsed) -> Option<TableDef> {
        if !alter.keywords.starts_with("ALTER TABLE") {
            return None;
        }
        let mut words = alter.text.split_whitespace().skip(2).peekable();
        if words.peek().is_some_and(|w| w.eq_ignore_ascii_case("IF")) {
            words.next();
            words.next();
        }
        let name = words.next()?;
        let parts: Vec<Ident> = name
            .split('.')
            .map(|p| Ident::new(p.trim_matches('`').to_string()))
            .collect();
        let path = self.catalog.resolve_path(&ObjectName::from(parts))?;
        self.catalog.mark_altered(path.clone());
        // `ADD name AS expr` and `ADD name TYPE` are common enough to model: the new column is
        // added to the recorded schema.
        let rest: Vec<&str> = words.collect();
        let [add, column, definition @ ..] = rest.as_slice() else {
            return None;
        };
        if !add.eq_ignore_ascii_case("ADD") || column.starts_with('(') {
            return None;
        }
        let definition = definition.join(" ");
        let definition = definition.trim_end_matches(';').trim();
        if self.alter_add_column(&path, column.trim_matches('`'), definition) {
            self.catalog.table_by_path(&path).cloned()
        } else {
            None
        }
    }

    /// Adds the column of a simple `ALTER TABLE ... ADD`; false when Riffle cannot read it (it
    /// is then left to the "altered" marker).
    fn alter_add_column(&mut self, path: &ObjectPath, name: &str, definition: &str) -> bool {
        let Some(table) = self.catalog.table_by_path(path) else {
            return false;
        };
        if table.column(name).is_some() {
            return false;
        }
        let (kind, data_type, time_attribute) = if let Some(text) = definition
            .get(..3)
            .filter(|w| w.eq_ignore_ascii_case("AS "))
            .and_then(|_| definition.get(3..))
        {
            let Ok(expr) = riffle_sql::parse_expr(text) else {
                return false;
            };
            let visible: Vec<Field> = table
                .columns
                .iter()
                .filter(|c| !matches!(c.kind, ColumnRole::Computed { .. }))
                .map(plain_field)
                .collect();
            let scope = Scope::of_fields(visible);
            let ctes = Ctes::default();
            // Positions inside the ALTER text are not known, so findings are not reported.
            let before = self.diags.len();
            let typed = self.type_expr(
                &expr,
                ExprCx {
                    scope: &scope,
                    ctes: &ctes,
                    grouped: false,
                },
            );
            self.diags.truncate(before);
            let time = typed.time.filter(|t| *t == TimeAttribute::Proctime);
            (
                ColumnRole::Computed {
                    expr: Box::new(expr),
                },
                typed.ty,
                time,
            )
        } else {
            let Ok(data_type) = riffle_sql::parse_data_type(definition) else {
                return false;
            };
            (ColumnRole::Physical, data_type, None)
        };
        let Some(table) = self.catalog.table_by_path_mut(path) else {
            return false;
        };
        let span = table.span;
        table.columns.push(ColumnDef {
            name: name.to_string(),
            data_type,
            kind,
            time_attribute,
            span,
        });
        true
    }

    /// `USE CATALOG c` / `USE db` / `USE c.db`.
    pub(crate) fn use_statement(&mut self, u: &Use) {
        let parts: Vec<String> = u
            .name
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
            .collect();
        match (u.catalog, parts.as_slice()) {
            (true, [c]) => self.catalog.use_catalog(c.clone()),
            (false, [d]) => self.catalog.use_database(d.clone()),
            (false, [c, d]) => {
                self.catalog.use_catalog(c.clone());
                self.catalog.use_database(d.clone());
            }
            _ => {}
        }
    }
}

/// A column as seen by expressions inside the DDL (no time attribute yet).
fn plain_field(c: &ColumnDef) -> Field {
    Field::new(c.name.clone(), c.data_type.clone())
}

/// `TIMESTAMP(p)` or `TIMESTAMP_LTZ(p)` with `p <= 3` (unknown types pass).
fn is_valid_rowtime_type(t: &DataType) -> bool {
    match t.kind {
        TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => p <= 3,
        TypeKind::Unknown(_) => true,
        _ => false,
    }
}
