//! Expression resolution and type inference with Flink's (Calcite's) rules.

use riffle_sql::ast::{DataType, Expr, Ident, TypeKind, MAX_LENGTH};
use sqlparser::ast::{AccessExpr, BinaryOperator, DateTimeField, Subscript, UnaryOperator, Value};

use crate::functions::with_builtin_nullability;
use crate::schema::TimeAttribute;
use crate::scope::{Ctes, Scope};
use crate::types::{self, nullable, unknown};
use crate::{ident_span, span_of, Analyzer};

/// The type of an expression and whether it is (still) a time attribute.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Typed {
    pub ty: DataType,
    pub time: Option<TimeAttribute>,
}

impl Typed {
    /// A plain value of the given type.
    pub fn of(ty: DataType) -> Self {
        Self { ty, time: None }
    }

    /// An expression Riffle cannot type.
    pub fn unknown() -> Self {
        Self::of(unknown())
    }
}

/// Where an expression is typed.
#[derive(Clone, Copy)]
pub(crate) struct ExprCx<'a, 's> {
    /// Columns visible to the expression.
    pub scope: &'a Scope<'s>,
    /// CTEs visible to subqueries.
    pub ctes: &'a Ctes,
    /// The enclosing `SELECT` has a `GROUP BY` (aggregates keep their argument's nullability).
    pub grouped: bool,
}

/// A type built from a kind, nullable when any of `inputs` is nullable (Calcite's
/// `*_NULLABLE` return type inference).
pub(crate) fn nullable_if_any(kind: TypeKind, inputs: &[&DataType]) -> DataType {
    DataType {
        kind,
        nullable: inputs.iter().any(|t| t.nullable),
    }
}

impl Analyzer {
    /// Resolves and types an expression, reporting unknown names and type errors.
    pub(crate) fn type_expr(&mut self, expr: &Expr, cx: ExprCx<'_, '_>) -> Typed {
        match expr {
            Expr::Identifier(ident) => self.resolve_column(std::slice::from_ref(ident), cx),
            Expr::CompoundIdentifier(parts) => self.resolve_column(parts, cx),
            Expr::Value(v) => Typed::of(literal_type(&v.value)),
            Expr::TypedString(ts) => Typed::of(typed_literal_type(&ts.data_type, &ts.value.value)),
            Expr::Interval(interval) => {
                // The interval's value is a string literal; nothing to resolve inside.
                let year_month = matches!(
                    interval.leading_field,
                    Some(
                        DateTimeField::Year
                            | DateTimeField::Years
                            | DateTimeField::Month
                            | DateTimeField::Months
                    )
                );
                let kind = if year_month {
                    TypeKind::IntervalYearMonth
                } else {
                    TypeKind::IntervalDayTime
                };
                Typed::of(DataType::not_null(kind))
            }
            Expr::Nested(inner) => {
                let t = self.type_expr(inner, cx);
                // Parentheses keep a time attribute: `(ts)` is still `ts`.
                Typed {
                    ty: t.ty,
                    time: t.time,
                }
            }
            Expr::BinaryOp { left, op, right } => self.type_binary(expr, left, op, right, cx),
            Expr::UnaryOp { op, expr: inner } => {
                let t = self.type_expr(inner, cx).ty;
                match op {
                    UnaryOperator::Not => Typed::of(nullable_if_any(TypeKind::Boolean, &[&t])),
                    UnaryOperator::Minus | UnaryOperator::Plus => Typed::of(t),
                    _ => Typed::unknown(),
                }
            }
            Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::IsTrue(e)
            | Expr::IsNotTrue(e)
            | Expr::IsFalse(e)
            | Expr::IsNotFalse(e)
            | Expr::IsUnknown(e)
            | Expr::IsNotUnknown(e) => {
                self.type_expr(e, cx);
                Typed::of(DataType::not_null(TypeKind::Boolean))
            }
            Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                self.type_expr(a, cx);
                self.type_expr(b, cx);
                Typed::of(DataType::not_null(TypeKind::Boolean))
            }
            Expr::InList { expr: e, list, .. } => {
                let mut inputs = vec![self.type_expr(e, cx).ty];
                inputs.extend(list.iter().map(|x| self.type_expr(x, cx).ty));
                let refs: Vec<&DataType> = inputs.iter().collect();
                Typed::of(nullable_if_any(TypeKind::Boolean, &refs))
            }
            Expr::InSubquery {
                expr: e, subquery, ..
            } => {
                self.type_expr(e, cx);
                self.subquery(subquery, cx);
                Typed::of(nullable(TypeKind::Boolean))
            }
            Expr::Exists { subquery, .. } => {
                self.subquery(subquery, cx);
                Typed::of(DataType::not_null(TypeKind::Boolean))
            }
            // `x op SOME|ANY|ALL (subquery)`: UNKNOWN when a compared value is NULL.
            Expr::AnyOp { left, right, .. } | Expr::AllOp { left, right, .. } => {
                self.type_expr(left, cx);
                match right.as_ref() {
                    Expr::Subquery(q) => {
                        self.subquery(q, cx);
                    }
                    other => {
                        self.type_expr(other, cx);
                    }
                }
                Typed::of(nullable(TypeKind::Boolean))
            }
            Expr::Subquery(q) => {
                let schema = self.subquery(q, cx);
                // A scalar subquery yields its single column, NULL when it returns no row.
                match schema.columns.as_slice() {
                    [only] => Typed::of(only.data_type.clone().with_nullable(true)),
                    _ => Typed::unknown(),
                }
            }
            Expr::Between {
                expr: e, low, high, ..
            } => {
                let ts = [
                    self.type_expr(e, cx).ty,
                    self.type_expr(low, cx).ty,
                    self.type_expr(high, cx).ty,
                ];
                Typed::of(nullable_if_any(
                    TypeKind::Boolean,
                    &[&ts[0], &ts[1], &ts[2]],
                ))
            }
            Expr::Like {
                expr: e, pattern, ..
            }
            | Expr::ILike {
                expr: e, pattern, ..
            }
            | Expr::SimilarTo {
                expr: e, pattern, ..
            }
            | Expr::RLike {
                expr: e, pattern, ..
            } => {
                let a = self.type_expr(e, cx).ty;
                let b = self.type_expr(pattern, cx).ty;
                Typed::of(nullable_if_any(TypeKind::Boolean, &[&a, &b]))
            }
            Expr::Cast {
                kind,
                expr: inner,
                data_type,
                ..
            } => self.type_cast(kind, inner, data_type, cx),
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.type_case(
                expr,
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                cx,
            ),
            Expr::Function(f) => self.type_function(f, cx),
            Expr::Extract { expr: inner, .. } => {
                // Flink's EXTRACT returns BIGINT.
                let t = self.type_expr(inner, cx).ty;
                Typed::of(nullable_if_any(TypeKind::BigInt, &[&t]))
            }
            Expr::Ceil { expr: inner, .. } | Expr::Floor { expr: inner, .. } => {
                // `FLOOR(ts TO HOUR)` keeps the temporal type; CEIL/FLOOR keep integer and
                // approximate types and drop a decimal's scale.
                let t = self.type_expr(inner, cx).ty;
                match t.kind {
                    // Calcite's ARG0_OR_EXACT_NO_SCALE: DECIMAL(p, s) -> DECIMAL(p, 0).
                    TypeKind::Decimal(p, _) => Typed::of(DataType {
                        kind: TypeKind::Decimal(p, 0),
                        nullable: t.nullable,
                    }),
                    _ if types::is_datetime(&t)
                        || types::is_integer(&t)
                        || types::is_approximate_numeric(&t) =>
                    {
                        Typed::of(t)
                    }
                    _ => Typed::unknown(),
                }
            }
            Expr::Position { expr: a, r#in } => {
                let a = self.type_expr(a, cx).ty;
                let b = self.type_expr(r#in, cx).ty;
                Typed::of(nullable_if_any(TypeKind::Int, &[&a, &b]))
            }
            Expr::Substring {
                expr: e,
                substring_from,
                substring_for,
                shorthand,
                ..
            } => {
                let t = self.type_expr(e, cx).ty;
                let mut positions = Vec::new();
                for x in [substring_from, substring_for].into_iter().flatten() {
                    positions.push(self.type_expr(x, cx).ty);
                }
                let bad = |p: &DataType| {
                    !types::is_unknown(p) && !types::is_null_type(p) && !types::is_integer(p)
                };
                if positions.iter().any(bad)
                    || !types::is_unknown(&t)
                        && !types::is_character_string(&t)
                        && !types::is_null_type(&t)
                {
                    let shown: Vec<String> = std::iter::once(&t)
                        .chain(&positions)
                        .map(|p| format!("<{}>", types::calcite_name(p)))
                        .collect();
                    let form = if positions.len() > 1 {
                        "<CHARACTER>, <INTEGER>, <INTEGER>"
                    } else {
                        "<CHARACTER>, <INTEGER>"
                    };
                    self.error(
                        "type-mismatch",
                        format!(
                            "Cannot apply 'SUBSTRING' to arguments of type 'SUBSTRING({})'. Supported form(s): \
                             'SUBSTRING({form})'",
                            shown.join(", ")
                        ),
                        span_of(expr),
                    );
                }
                // SUBSTR is Flink's own function (always nullable), SUBSTRING Calcite's.
                let name = if *shorthand { "SUBSTR" } else { "SUBSTRING" };
                let args: Vec<DataType> = std::iter::once(t.clone()).chain(positions).collect();
                Typed::of(with_builtin_nullability(name, varying_string_of(&t), &args))
            }
            Expr::Trim {
                expr: e,
                trim_what,
                trim_characters,
                ..
            } => {
                let t = self.type_expr(e, cx).ty;
                if let Some(w) = trim_what {
                    self.type_expr(w, cx);
                }
                for c in trim_characters.iter().flatten() {
                    self.type_expr(c, cx);
                }
                Typed::of(varying_string_of(&t))
            }
            Expr::Overlay {
                expr: e,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                let t = self.type_expr(e, cx).ty;
                self.type_expr(overlay_what, cx);
                self.type_expr(overlay_from, cx);
                if let Some(x) = overlay_for {
                    self.type_expr(x, cx);
                }
                Typed::of(varying_string_of(&t))
            }
            Expr::Array(array) => {
                let elems: Vec<DataType> = array
                    .elem
                    .iter()
                    .map(|e| self.type_expr(e, cx).ty)
                    .collect();
                match types::common_type(&elems) {
                    Some(e) => Typed::of(DataType::not_null(TypeKind::Array(Box::new(e)))),
                    None => Typed::unknown(),
                }
            }
            Expr::Map(map) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &map.entries {
                    keys.push(self.type_expr(&entry.key, cx).ty);
                    values.push(self.type_expr(&entry.value, cx).ty);
                }
                match (types::common_type(&keys), types::common_type(&values)) {
                    (Some(k), Some(v)) => {
                        Typed::of(DataType::not_null(TypeKind::Map(Box::new(k), Box::new(v))))
                    }
                    _ => Typed::unknown(),
                }
            }
            Expr::CompoundFieldAccess { root, access_chain } => {
                let mut t = self.type_expr(root, cx).ty;
                for access in access_chain {
                    t = match access {
                        AccessExpr::Subscript(Subscript::Index { index }) => {
                            self.type_expr(index, cx);
                            if matches!(t.kind, TypeKind::Array(_)) {
                                self.check_array_index(index);
                            }
                            element_type(&t)
                        }
                        AccessExpr::Dot(Expr::Identifier(field)) => field_type(&t, &field.value),
                        _ => unknown(),
                    };
                }
                Typed::of(t)
            }
            Expr::AtTimeZone {
                timestamp,
                time_zone,
            } => {
                self.type_expr(timestamp, cx);
                self.type_expr(time_zone, cx);
                Typed::unknown()
            }
            Expr::Tuple(items) => {
                for i in items {
                    self.type_expr(i, cx);
                }
                Typed::unknown()
            }
            Expr::Named { expr: inner, .. } => self.type_expr(inner, cx),
            Expr::Prefixed { .. } => match riffle_sql::dialect::map_constructor_args(expr) {
                Some(items) => self.type_map_constructor(items, cx),
                None => Typed::unknown(),
            },
            _ => Typed::unknown(),
        }
    }

    /// Analyzes a subquery in the scope of the enclosing query (for correlated references).
    fn subquery(&mut self, query: &sqlparser::ast::Query, cx: ExprCx<'_, '_>) -> crate::Schema {
        self.query(query, Some(cx.scope), cx.ctes)
    }

    /// Resolves a (possibly qualified, possibly nested) column reference, innermost scope first.
    pub(crate) fn resolve_column(&mut self, parts: &[Ident], cx: ExprCx<'_, '_>) -> Typed {
        let Some(first) = parts.first() else {
            return Typed::unknown();
        };
        let mut scope = Some(cx.scope);
        while let Some(s) = scope {
            // Qualified by a relation: the longest matching prefix wins (`db.t.c` before `t.c`).
            for k in (1..parts.len().min(4)).rev() {
                let Some(relation) = s.relations.iter().find(|r| r.matches(&parts[..k])) else {
                    continue;
                };
                let column = &parts[k];
                if relation.opaque && relation.field(&column.value).is_none() {
                    return Typed::unknown();
                }
                return match relation.field(&column.value) {
                    Some((_, field)) => {
                        let field = field.clone();
                        self.nested_fields(
                            field.data_type,
                            field.time_attribute,
                            &parts[k + 1..],
                            column,
                        )
                    }
                    None => {
                        let table = relation.qualifier.clone().unwrap_or_default();
                        let diag = self.error(
                            "unknown-column",
                            format!("Column '{}' not found in table '{}'", column.value, table),
                            ident_span(column),
                        );
                        let names: Vec<&str> =
                            relation.fields.iter().map(|f| f.name.as_str()).collect();
                        if let Some(s) = riffle_dialects::did_you_mean(&column.value, names) {
                            diag.help = Some(format!("did you mean '{s}'?"));
                        }
                        Typed::unknown()
                    }
                };
            }
            let mut matches = s
                .relations
                .iter()
                .filter(|r| !r.qualified_only)
                .filter_map(|r| r.field(&first.value));
            if let Some((_, field)) = matches.next() {
                if matches.next().is_some() {
                    self.error(
                        "ambiguous-column",
                        format!("Column '{}' is ambiguous", first.value),
                        ident_span(first),
                    );
                    return Typed::unknown();
                }
                let field = field.clone();
                return self.nested_fields(
                    field.data_type,
                    field.time_attribute,
                    &parts[1..],
                    first,
                );
            }
            if s.has_opaque() {
                // The column may belong to the relation that failed to resolve.
                return Typed::unknown();
            }
            scope = s.parent;
        }
        if parts.len() > 1 {
            self.error(
                "unknown-table",
                format!("Table '{}' not found", first.value),
                ident_span(first),
            );
        } else {
            let names: Vec<&str> = cx.scope.all_fields().map(|f| f.name.as_str()).collect();
            let suggestion = riffle_dialects::did_you_mean(&first.value, names);
            let diag = self.error(
                "unknown-column",
                format!("Column '{}' not found in any table", first.value),
                ident_span(first),
            );
            if let Some(s) = suggestion {
                diag.help = Some(format!("did you mean '{s}'?"));
            }
        }
        Typed::unknown()
    }

    /// Follows `.field` accesses into ROW-typed columns.
    fn nested_fields(
        &mut self,
        mut ty: DataType,
        time: Option<TimeAttribute>,
        rest: &[Ident],
        column: &Ident,
    ) -> Typed {
        if rest.is_empty() {
            return Typed { ty, time };
        }
        for field in rest {
            if types::is_unknown(&ty) {
                return Typed::unknown();
            }
            let next = field_type(&ty, &field.value);
            if types::is_unknown(&next) {
                self.error(
                    "unknown-column",
                    format!(
                        "Unknown field '{}' in column '{}' of type {}",
                        field.value, column.value, ty
                    ),
                    ident_span(field),
                );
                return Typed::unknown();
            }
            ty = next;
        }
        Typed::of(ty)
    }

    /// Flink rejects a literal array index below 1 while validating (`arr[0]`, `arr[-1]`).
    fn check_array_index(&mut self, index: &Expr) {
        if let Some(i) = crate::functions::integer_literal(index).filter(|i| *i < 1) {
            self.error(
                "invalid-array-index",
                format!("Array element access needs an index starting at 1 but was {i}."),
                span_of(index),
            );
        }
    }

    /// `MAP[k1, v1, k2, v2, ...]`: `MAP<common key type, common value type> NOT NULL`.
    fn type_map_constructor(&mut self, items: &[Expr], cx: ExprCx<'_, '_>) -> Typed {
        let mut keys = Vec::new();
        let mut values = Vec::new();
        for (i, e) in items.iter().enumerate() {
            let t = self.type_expr(e, cx).ty;
            if i % 2 == 0 {
                keys.push(t);
            } else {
                values.push(t);
            }
        }
        match (types::common_type(&keys), types::common_type(&values)) {
            (Some(k), Some(v)) => {
                Typed::of(DataType::not_null(TypeKind::Map(Box::new(k), Box::new(v))))
            }
            _ => Typed::unknown(),
        }
    }

    fn type_binary(
        &mut self,
        whole: &Expr,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
        cx: ExprCx<'_, '_>,
    ) -> Typed {
        // riffle-sql encodes `x IS [NOT] JSON [kind]` with the kind keyword as the right operand.
        if matches!(op, BinaryOperator::Custom(c) if c == "IS JSON" || c == "IS NOT JSON") {
            self.type_expr(left, cx);
            return Typed::of(DataType::not_null(TypeKind::Boolean));
        }
        let l = self.type_expr(left, cx).ty;
        let r = self.type_expr(right, cx).ty;
        use BinaryOperator::*;
        let arith = match op {
            Plus => Arith::Plus,
            Minus => Arith::Minus,
            Multiply => Arith::Times,
            Divide => Arith::Divide,
            Modulo => Arith::Modulo,
            Eq | NotEq | Lt | LtEq | Gt | GtEq => {
                // Flink runs Calcite without implicit coercion between strings and numbers.
                let string_number = |a: &DataType, b: &DataType| {
                    types::is_character_string(a) && types::is_numeric(b)
                };
                if string_number(&l, &r) || string_number(&r, &l) {
                    self.error(
                        "type-mismatch",
                        format!(
                            "implicit type conversion between {} and {} is not supported now",
                            types::sql_type_name(&l),
                            types::sql_type_name(&r)
                        ),
                        span_of(whole),
                    );
                }
                // Rows compare field by field, so a nullable field makes the result nullable.
                let nullable = may_be_null(&l) || may_be_null(&r);
                return Typed::of(DataType {
                    kind: TypeKind::Boolean,
                    nullable,
                });
            }
            Spaceship | Overlaps => {
                return Typed::of(nullable_if_any(TypeKind::Boolean, &[&l, &r]))
            }
            And | Or | Xor => return Typed::of(nullable_if_any(TypeKind::Boolean, &[&l, &r])),
            StringConcat => return Typed::of(concat_type(&l, &r)),
            _ => return Typed::unknown(),
        };
        match arithmetic(arith, &l, &r) {
            Some(t) => Typed::of(t),
            None => {
                if !types::is_unknown(&l) && !types::is_unknown(&r) {
                    self.error(
                        "type-mismatch",
                        format!(
                            "Cannot apply '{op}' to arguments of type '<{}> {op} <{}>'. Supported form(s): \
                             '<NUMERIC> {op} <NUMERIC>'",
                            types::calcite_name(&l),
                            types::calcite_name(&r)
                        ),
                        span_of(whole),
                    );
                }
                Typed::unknown()
            }
        }
    }

    fn type_case(
        &mut self,
        whole: &Expr,
        operand: Option<&Expr>,
        conditions: &[sqlparser::ast::CaseWhen],
        else_result: Option<&Expr>,
        cx: ExprCx<'_, '_>,
    ) -> Typed {
        if let Some(o) = operand {
            self.type_expr(o, cx);
        }
        let mut results = Vec::new();
        for when in conditions {
            self.type_expr(&when.condition, cx);
            results.push(self.type_expr(&when.result, cx).ty);
        }
        match else_result {
            Some(e) => results.push(self.type_expr(e, cx).ty),
            // Without ELSE the result may be NULL.
            None => results.push(nullable(TypeKind::Null)),
        }
        match types::common_type(&results) {
            Some(t) => Typed::of(case_timestamp_kind(t, &results)),
            None => {
                if !results.iter().any(types::is_unknown)
                    && results.iter().any(|t| !types::is_null_type(t))
                {
                    self.error(
                        "type-mismatch",
                        "Illegal mixing of types in CASE or COALESCE statement",
                        span_of(whole),
                    );
                }
                Typed::unknown()
            }
        }
    }

    fn type_cast(
        &mut self,
        kind: &sqlparser::ast::CastKind,
        inner: &Expr,
        target: &sqlparser::ast::DataType,
        cx: ExprCx<'_, '_>,
    ) -> Typed {
        let source = self.type_expr(inner, cx).ty;
        let Ok(target_type) = riffle_sql::cast_data_type(target) else {
            // The parser reports unsupported type names.
            return Typed::unknown();
        };
        if !types::supports_explicit_cast(&source, &target_type) {
            self.error(
                "type-mismatch",
                format!(
                    "Cast function cannot convert value of type {} to type {}",
                    source, target_type
                ),
                span_of(inner),
            );
        }
        // CAST keeps the operand's nullability; TRY_CAST may always yield NULL.
        let nullable = match kind {
            sqlparser::ast::CastKind::TryCast | sqlparser::ast::CastKind::SafeCast => true,
            _ => source.nullable,
        };
        Typed::of(target_type.with_nullable(nullable))
    }
}

/// Arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arith {
    Plus,
    Minus,
    Times,
    Divide,
    Modulo,
}

/// Result type of an arithmetic operation (Calcite's `NULLABLE_SUM` / `PRODUCT_NULLABLE` /
/// `QUOTIENT_NULLABLE` / `NULLABLE_MOD` with Flink's decimal rules from `FlinkTypeSystem`).
/// `None` when the operands do not support the operator; unknown operands give unknown.
pub(crate) fn arithmetic(op: Arith, l: &DataType, r: &DataType) -> Option<DataType> {
    if types::is_unknown(l) || types::is_unknown(r) {
        return Some(unknown());
    }
    let n = |kind| nullable_if_any(kind, &[l, r]);
    // NULL literal operands take the other side's type.
    if types::is_null_type(l) || types::is_null_type(r) {
        let other = if types::is_null_type(l) { r } else { l };
        return Some(other.clone().with_nullable(true));
    }
    if types::is_numeric(l) && types::is_numeric(r) {
        let decimal = types::is_decimal(l) || types::is_decimal(r);
        if types::is_exact_numeric(l) && types::is_exact_numeric(r) && decimal {
            return Some(n(match op {
                Arith::Plus | Arith::Minus => types::decimal_addition(l, r),
                Arith::Times => types::decimal_multiplication(l, r),
                Arith::Divide => types::decimal_division(l, r),
                Arith::Modulo => types::decimal_modulo(l, r),
            }));
        }
        if op == Arith::Modulo {
            // Calcite's MOD returns the second operand's type for non-decimals.
            return Some(n(r.kind.clone()));
        }
        return types::common_type(&[l.clone(), r.clone()]).map(|t| n(t.kind));
    }
    let interval = |t: &DataType| types::is_interval(t);
    match op {
        // datetime ± interval keeps the datetime type; interval ± interval stays an interval.
        Arith::Plus | Arith::Minus if types::is_datetime(l) && interval(r) => {
            Some(n(l.kind.clone()))
        }
        Arith::Plus if interval(l) && types::is_datetime(r) => Some(n(r.kind.clone())),
        Arith::Plus | Arith::Minus if interval(l) && interval(r) && l.kind == r.kind => {
            Some(n(l.kind.clone()))
        }
        Arith::Times if interval(l) && types::is_numeric(r) => Some(n(l.kind.clone())),
        Arith::Times if types::is_numeric(l) && interval(r) => Some(n(r.kind.clone())),
        Arith::Divide if interval(l) && types::is_numeric(r) => Some(n(l.kind.clone())),
        _ => None,
    }
}

/// Whether a value may be NULL, looking into ROW fields.
fn may_be_null(t: &DataType) -> bool {
    t.nullable
        || match &t.kind {
            TypeKind::Row(fields) => fields.iter().any(|f| may_be_null(&f.data_type)),
            _ => false,
        }
}

/// `a || b`: Calcite's `DYADIC_STRING_SUM_PRECISION_NULLABLE` — CHAR when both are CHAR,
/// otherwise VARCHAR, with the lengths added (capped at STRING).
fn concat_type(l: &DataType, r: &DataType) -> DataType {
    if types::is_unknown(l) || types::is_unknown(r) {
        return unknown();
    }
    let len = types::length(l)
        .unwrap_or(MAX_LENGTH)
        .saturating_add(types::length(r).unwrap_or(MAX_LENGTH));
    let len = len.min(MAX_LENGTH);
    let kind = match (&l.kind, &r.kind) {
        (TypeKind::Char(_), TypeKind::Char(_)) => TypeKind::Char(len),
        _ => TypeKind::Varchar(len),
    };
    nullable_if_any(kind, &[l, r])
}

/// String functions that keep their input's length as a VARCHAR (`SUBSTRING`, `TRIM`, ...):
/// `CHAR(n)` / `VARCHAR(n)` → `VARCHAR(n)`, anything else → `STRING`.
pub(crate) fn varying_string_of(t: &DataType) -> DataType {
    if types::is_unknown(t) {
        return unknown();
    }
    let kind = match t.kind {
        TypeKind::Char(n) | TypeKind::Varchar(n) => TypeKind::Varchar(n),
        _ => TypeKind::Varchar(MAX_LENGTH),
    };
    DataType {
        kind,
        nullable: t.nullable,
    }
}

/// Element type of an array/multiset, value type of a map (`x[i]`), unknown otherwise.
pub(crate) fn element_type(t: &DataType) -> DataType {
    match &t.kind {
        TypeKind::Array(e) | TypeKind::Multiset(e) => (**e).clone().with_nullable(true),
        TypeKind::Map(_, v) => (**v).clone().with_nullable(true),
        _ => unknown(),
    }
}

/// Type of a ROW field (nullable when the row is), unknown when absent.
pub(crate) fn field_type(t: &DataType, name: &str) -> DataType {
    match &t.kind {
        TypeKind::Row(fields) => fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| {
                let nullable = f.data_type.nullable || t.nullable;
                f.data_type.clone().with_nullable(nullable)
            })
            .unwrap_or_else(unknown),
        _ => unknown(),
    }
}

/// Calcite's literal types: integer literals are `INT` (or `BIGINT`, then `DECIMAL`, when they do
/// not fit); literals with a point are `DECIMAL(digits, fraction digits)`; with an exponent
/// `DOUBLE`; `'abc'` is `CHAR(3)`; literals are `NOT NULL` except `NULL` itself.
pub(crate) fn literal_type(value: &Value) -> DataType {
    match value {
        Value::Number(text, _) => DataType::not_null(number_literal_kind(text)),
        Value::SingleQuotedString(s)
        | Value::EscapedStringLiteral(s)
        | Value::UnicodeStringLiteral(s) => {
            let len = u32::try_from(s.chars().count()).unwrap_or(MAX_LENGTH);
            DataType::not_null(TypeKind::Char(len))
        }
        Value::SingleQuotedByteStringLiteral(s) | Value::HexStringLiteral(s) => {
            // x'0A0B' is BINARY(n) with n bytes.
            let len = u32::try_from(s.len().div_ceil(2)).unwrap_or(MAX_LENGTH);
            DataType::not_null(TypeKind::Binary(len))
        }
        Value::Boolean(_) => DataType::not_null(TypeKind::Boolean),
        Value::Null => nullable(TypeKind::Null),
        _ => unknown(),
    }
}

fn number_literal_kind(text: &str) -> TypeKind {
    if text.contains(['e', 'E']) {
        return TypeKind::Double;
    }
    if let Some(dot) = text.find('.') {
        // Calcite's SqlLiteral.createExactNumeric: precision counts every digit written,
        // scale the digits after the point.
        let scale = text.len() - dot - 1;
        let precision = text.len() - 1;
        let p = u8::try_from(precision.clamp(1, 38)).unwrap_or(38);
        let s = i8::try_from(scale.min(usize::from(p))).unwrap_or(0);
        return TypeKind::Decimal(p, s);
    }
    if text.parse::<i32>().is_ok() {
        TypeKind::Int
    } else if text.parse::<i64>().is_ok() {
        TypeKind::BigInt
    } else {
        let p = u8::try_from(text.len().clamp(1, 38)).unwrap_or(38);
        TypeKind::Decimal(p, 0)
    }
}

/// `DATE '...'`, `TIME '...'`, `TIMESTAMP '...'` literals; the precision of time literals is the
/// number of fractional-second digits written.
fn typed_literal_type(data_type: &sqlparser::ast::DataType, value: &Value) -> DataType {
    use sqlparser::ast::DataType as D;
    let text = match value {
        Value::SingleQuotedString(s) => s.as_str(),
        _ => "",
    };
    let fraction = text.rsplit_once('.').map_or(0, |(_, f)| {
        f.chars().take_while(char::is_ascii_digit).count()
    });
    let p = u8::try_from(fraction.min(9)).unwrap_or(9);
    let kind = match data_type {
        D::Date => TypeKind::Date,
        D::Time(..) => TypeKind::Time(p),
        D::Timestamp(..) | D::Datetime(_) => TypeKind::Timestamp(p),
        _ => return unknown(),
    };
    DataType::not_null(kind)
}

/// Flink types a `CASE` whose branches mix `TIMESTAMP` and `TIMESTAMP_LTZ` by the first of
/// them: `common` (their common type, a `TIMESTAMP_LTZ`) becomes a `TIMESTAMP` when the first
/// branch of either kind is a `TIMESTAMP`.
fn case_timestamp_kind(common: DataType, branches: &[DataType]) -> DataType {
    let TypeKind::TimestampLtz(p) = common.kind else {
        return common;
    };
    let first = branches
        .iter()
        .find(|t| matches!(t.kind, TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_)));
    match first.map(|t| &t.kind) {
        Some(TypeKind::Timestamp(_)) => DataType {
            kind: TypeKind::Timestamp(p),
            ..common
        },
        _ => common,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(kind: TypeKind) -> DataType {
        nullable(kind)
    }

    #[test]
    fn numeric_literals_follow_calcite() {
        assert_eq!(number_literal_kind("42"), TypeKind::Int);
        assert_eq!(number_literal_kind("2147483648"), TypeKind::BigInt);
        assert_eq!(
            number_literal_kind("99999999999999999999"),
            TypeKind::Decimal(20, 0)
        );
        assert_eq!(number_literal_kind("1.5"), TypeKind::Decimal(2, 1));
        assert_eq!(number_literal_kind("0.05"), TypeKind::Decimal(3, 2));
        assert_eq!(number_literal_kind("1e3"), TypeKind::Double);
    }

    #[test]
    fn arithmetic_follows_calcite_and_flink() {
        // INT + INT -> INT; INT / INT -> INT (no implicit DECIMAL division).
        assert_eq!(
            arithmetic(Arith::Plus, &n(TypeKind::Int), &n(TypeKind::Int)),
            Some(n(TypeKind::Int))
        );
        assert_eq!(
            arithmetic(Arith::Divide, &n(TypeKind::Int), &n(TypeKind::Int)),
            Some(n(TypeKind::Int))
        );
        // INT * BIGINT -> BIGINT (least restrictive).
        assert_eq!(
            arithmetic(Arith::Times, &n(TypeKind::Int), &n(TypeKind::BigInt)),
            Some(n(TypeKind::BigInt))
        );
        // BIGINT % INT -> INT (Calcite's NULLABLE_MOD returns the second operand's type).
        assert_eq!(
            arithmetic(Arith::Modulo, &n(TypeKind::BigInt), &n(TypeKind::Int)),
            Some(n(TypeKind::Int))
        );
        // DECIMAL(5, 2) + INT -> DECIMAL(13, 2) (INT counts as DECIMAL(10, 0)).
        assert_eq!(
            arithmetic(Arith::Plus, &n(TypeKind::Decimal(5, 2)), &n(TypeKind::Int)),
            Some(n(TypeKind::Decimal(13, 2)))
        );
        // DECIMAL + DOUBLE -> DOUBLE.
        assert_eq!(
            arithmetic(
                Arith::Times,
                &n(TypeKind::Decimal(5, 2)),
                &n(TypeKind::Double)
            ),
            Some(n(TypeKind::Double))
        );
        // TIMESTAMP(3) - INTERVAL -> TIMESTAMP(3).
        assert_eq!(
            arithmetic(
                Arith::Minus,
                &n(TypeKind::Timestamp(3)),
                &DataType::not_null(TypeKind::IntervalDayTime)
            ),
            Some(n(TypeKind::Timestamp(3)))
        );
        assert_eq!(
            arithmetic(Arith::Plus, &n(TypeKind::Boolean), &n(TypeKind::Int)),
            None
        );
        // NOT NULL operands give NOT NULL results.
        assert_eq!(
            arithmetic(
                Arith::Plus,
                &DataType::not_null(TypeKind::Int),
                &DataType::not_null(TypeKind::Int)
            ),
            Some(DataType::not_null(TypeKind::Int))
        );
    }

    #[test]
    fn concat_adds_lengths() {
        let c = |n| DataType::not_null(TypeKind::Char(n));
        assert_eq!(concat_type(&c(2), &c(3)), c(5));
        assert_eq!(concat_type(&types::string(), &c(3)), types::string());
    }
}
