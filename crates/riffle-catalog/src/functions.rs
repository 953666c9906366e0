//! Function calls: lookup (built-ins from `dialects/flink/functions.toml`, then user functions),
//! signature matching and result types from the data file's return rules.

use riffle_dialects::{
    ArgSpec, FunctionKind, FunctionSpec, Nullability, ReturnRule, Signature, TypeFamily,
};
use riffle_sql::ast::{DataType, Expr, RowField, TypeKind};
use sqlparser::ast::{
    Function, FunctionArg, FunctionArgExpr, FunctionArgOperator, FunctionArgumentClause,
    FunctionArguments, Ident, NamedWindowDefinition, NamedWindowExpr, Value, WindowFrame,
    WindowFrameBound, WindowSpec, WindowType,
};

use crate::catalog::FunctionRef;
use crate::expr::{arithmetic, element_type, varying_string_of, Arith, ExprCx, Typed};
use crate::schema::TimeAttribute;
use crate::types::{self, unknown};
use crate::{span_of, Analyzer};

/// One argument of a call as written.
enum CallArg<'a> {
    /// An expression.
    Expr(&'a Expr),
    /// `*` (as in `COUNT(*)`).
    Star,
}

/// The arguments of a call, in order (named arguments by position).
fn call_args(f: &Function) -> Vec<CallArg<'_>> {
    let FunctionArguments::List(list) = &f.args else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in &list.args {
        match a {
            FunctionArg::Unnamed(arg) => out.push(as_call_arg(arg)),
            // riffle-sql encodes the SQL/JSON clauses of JSON_VALUE / JSON_QUERY / JSON_EXISTS
            // (`... ON EMPTY`, `... ON ERROR`, the array wrapper) as named arguments; they are
            // clauses, not values.
            FunctionArg::Named { name, .. }
                if matches!(name.value.as_str(), "ON_EMPTY" | "ON_ERROR" | "WRAPPER") => {}
            FunctionArg::Named { arg, .. } => out.push(as_call_arg(arg)),
            // `JSON_OBJECT(k VALUE v)`: the key and the value are both arguments.
            FunctionArg::ExprNamed {
                name,
                arg,
                operator: FunctionArgOperator::Value,
            } => {
                out.push(CallArg::Expr(name));
                out.push(as_call_arg(arg));
            }
            FunctionArg::ExprNamed { arg, .. } => out.push(as_call_arg(arg)),
        }
    }
    out
}

fn as_call_arg(arg: &FunctionArgExpr) -> CallArg<'_> {
    match arg {
        FunctionArgExpr::Expr(e) => CallArg::Expr(e),
        _ => CallArg::Star,
    }
}

/// The called name (last part of a possibly qualified name).
pub(crate) fn function_name(f: &Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// A built-in aggregate called without `OVER` (it makes its query an aggregation).
pub(crate) fn is_aggregate_call(f: &Function) -> bool {
    f.over.is_none()
        && riffle_dialects::function(&function_name(f))
            .is_some_and(|s| s.kind == FunctionKind::Aggregate)
}

/// A built-in that reads a legacy group window (`TUMBLE_START`, ...): valid in grouped queries.
pub(crate) fn is_window_auxiliary_call(f: &Function) -> bool {
    riffle_dialects::function(&function_name(f))
        .is_some_and(|s| s.kind == FunctionKind::WindowAuxiliary)
}

/// A `TABLE t` / `MODEL m` argument or a `DESCRIPTOR(c)` call.
pub(crate) fn names_something(e: &Expr) -> bool {
    // `MAP[k, v, ...]` parses as a prefixed expression too, but it is a value.
    (matches!(e, Expr::Prefixed { .. }) && riffle_sql::dialect::map_constructor_args(e).is_none())
        || matches!(e, Expr::Function(f) if function_name(f).eq_ignore_ascii_case("DESCRIPTOR"))
}

/// Families whose argument is a keyword or a table, not a value to resolve.
fn is_non_value_family(family: TypeFamily) -> bool {
    matches!(
        family,
        TypeFamily::TimeUnit | TypeFamily::Descriptor | TypeFamily::Table | TypeFamily::Model
    )
}

/// Time attributes produced by functions: `PROCTIME()` and the legacy window / pattern
/// time-attribute accessors.
fn time_attribute_of(name: &str) -> Option<TimeAttribute> {
    match name {
        "PROCTIME" | "TUMBLE_PROCTIME" | "HOP_PROCTIME" | "SESSION_PROCTIME" | "MATCH_PROCTIME" => {
            Some(TimeAttribute::Proctime)
        }
        "TUMBLE_ROWTIME" | "HOP_ROWTIME" | "SESSION_ROWTIME" | "MATCH_ROWTIME" => {
            Some(TimeAttribute::Rowtime)
        }
        _ => None,
    }
}

impl Analyzer {
    /// Types a function call.
    pub(crate) fn type_function(&mut self, f: &Function, cx: ExprCx<'_, '_>) -> Typed {
        let name = function_name(f);
        let upper = name.to_uppercase();
        let builtin = match self.catalog.function(&name) {
            Some(FunctionRef::Builtin(spec)) => Some(spec),
            Some(FunctionRef::User(_)) => None,
            None => None,
        };
        let user = builtin.is_none() && self.catalog.function(&name).is_some();
        let args = call_args(f);
        let mut typed = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            // `TABLE t`, `DESCRIPTOR(c)`, `MODEL m` and time-unit keywords name things; they are
            // not values to resolve.
            let names_something = matches!(arg, CallArg::Expr(e) if names_something(e));
            let keyword_only = builtin.is_some_and(|s| {
                s.signatures
                    .iter()
                    .filter_map(|sig| arg_spec_at(sig, i))
                    .all(|a| is_non_value_family(a.family))
            });
            let skip = names_something || keyword_only;
            typed.push(match arg {
                CallArg::Expr(e) if !skip => self.type_expr(e, cx),
                // Keywords and table arguments are never NULL.
                _ => Typed::of(unknown().with_nullable(false)),
            });
        }
        let types: Vec<DataType> = typed.iter().map(|t| t.ty.clone()).collect();
        if let Some(filter) = &f.filter {
            self.type_expr(filter, cx);
        }
        if let Some(WindowType::WindowSpec(spec)) = &f.over {
            for e in &spec.partition_by {
                self.type_expr(e, cx);
            }
            for o in &spec.order_by {
                self.type_expr(&o.expr, cx);
            }
        }
        if user {
            // User functions are opaque: their result type comes from code Riffle cannot see.
            return Typed::unknown();
        }
        let Some(spec) = builtin else {
            self.unknown_function(f, &name, &types);
            return Typed::unknown();
        };
        let star = args.iter().any(|a| matches!(a, CallArg::Star));
        let Some(signature) = self.match_signature(f, spec, &types, star) else {
            return Typed::unknown();
        };
        if matches!(
            spec.kind,
            FunctionKind::Window | FunctionKind::WindowAuxiliary
        ) {
            self.check_group_window_time(f, signature, &typed);
        }
        if upper == "TYPEOF" {
            self.record_type_name(f, &types);
        }
        let mut ty = self.apply_rule(&signature.returns, spec, signature, &types, f);
        if spec.kind == FunctionKind::Scalar && !types::is_unknown(&ty) {
            ty = scalar_result(spec, signature, ty, &types, f);
        }
        if !types::is_unknown(&ty) {
            // Calcite: an aggregate without GROUP BY, or over a frame that may hold no rows,
            // can see an empty group.
            let empty_group = spec.kind == FunctionKind::Aggregate
                && f.over
                    .as_ref()
                    .map_or(!cx.grouped, |w| self.window_may_be_empty(w));
            ty.nullable = result_nullable(signature.nullable, &ty, &types, empty_group);
        }
        // Calcite's MIN and MAX return their argument's type, so the extreme of a rowtime
        // attribute is still typed as one.
        let extreme_of_rowtime = matches!(upper.as_str(), "MIN" | "MAX")
            && f.over.is_none()
            && typed
                .first()
                .is_some_and(|t| t.time == Some(TimeAttribute::Rowtime));
        Typed {
            ty,
            time: time_attribute_of(&upper)
                .or(extreme_of_rowtime.then_some(TimeAttribute::Rowtime)),
        }
    }

    /// Records what `TYPEOF(x [, force_serializable])` returns, when `x`'s exact type is known
    /// and the flag is a literal.
    fn record_type_name(&mut self, f: &Function, types: &[DataType]) {
        let serializable = match call_args(f).get(1) {
            None => Some(false),
            Some(CallArg::Expr(Expr::Value(v))) => match &v.value {
                Value::Boolean(b) => Some(*b),
                _ => None,
            },
            Some(_) => None,
        };
        let name = types
            .first()
            .zip(serializable)
            .and_then(|(t, s)| types::type_name_of(t, s));
        if let Some(name) = name {
            self.type_names.insert(span_of(&f.name).start, name);
        }
    }

    /// Whether the frame of an `OVER` window may hold no rows (an aggregate over it is then
    /// nullable). A window without a frame of its own takes that of the window it names.
    fn window_may_be_empty(&self, over: &WindowType) -> bool {
        let frame = match over {
            WindowType::WindowSpec(spec) => self.frame_of(spec),
            WindowType::NamedWindow(name) => self.named_frame(name),
        };
        frame.is_some_and(frame_may_be_empty)
    }

    /// The frame of a window specification, or of the window it is based on.
    fn frame_of<'a>(&'a self, spec: &'a WindowSpec) -> Option<&'a WindowFrame> {
        spec.window_frame.as_ref().or_else(|| {
            spec.window_name
                .as_ref()
                .and_then(|name| self.named_frame(name))
        })
    }

    /// The frame of a window of the current `WINDOW` clause, following `w AS v` references (at
    /// most once per window, so a cycle ends).
    fn named_frame(&self, name: &Ident) -> Option<&WindowFrame> {
        let mut name = name;
        for _ in 0..self.windows.len() {
            let NamedWindowDefinition(_, expr) =
                self.windows.iter().find(|w| w.0.value == name.value)?;
            match expr {
                NamedWindowExpr::WindowSpec(spec) => match &spec.window_frame {
                    Some(frame) => return Some(frame),
                    None => name = spec.window_name.as_ref()?,
                },
                NamedWindowExpr::NamedWindow(next) => name = next,
            }
        }
        None
    }

    /// Legacy group windows (`GROUP BY TUMBLE(ts, ...)`) and their auxiliaries need a time
    /// attribute as their time argument.
    fn check_group_window_time(&mut self, f: &Function, signature: &Signature, typed: &[Typed]) {
        let time_arg = signature
            .args
            .first()
            .is_some_and(|a| a.family == TypeFamily::TimeAttribute);
        let Some(first) = typed.first() else { return };
        if !time_arg || first.time.is_some() || types::is_unknown(&first.ty) {
            return;
        }
        let span = match call_args(f).first() {
            Some(CallArg::Expr(e)) => span_of(*e),
            _ => span_of(&f.name),
        };
        self.error(
            "invalid-time-attribute",
            format!(
                "Window aggregate can only be defined over a time attribute column, but {} encountered.",
                first.ty
            ),
            span,
        );
    }

    fn unknown_function(&mut self, f: &Function, name: &str, types: &[DataType]) {
        let families: Vec<String> = types
            .iter()
            .map(|t| format!("<{}>", types::family_name(t)))
            .collect();
        let mut candidates: Vec<&str> = riffle_dialects::functions()
            .iter()
            .filter(|s| !s.syntax)
            .flat_map(|s| {
                std::iter::once(s.name.as_str()).chain(s.aliases.iter().map(String::as_str))
            })
            .collect();
        let user: Vec<String> = self
            .catalog
            .user_functions()
            .map(|u| u.name.clone())
            .collect();
        candidates.extend(user.iter().map(String::as_str));
        let suggestion = riffle_dialects::did_you_mean(name, candidates).map(str::to_string);
        let diag = self.error(
            "unknown-function",
            format!(
                "No match found for function signature {name}({})",
                families.join(", ")
            ),
            span_of(&f.name),
        );
        diag.help = Some(match suggestion {
            Some(s) => format!("did you mean '{s}'?"),
            None => "register it with CREATE FUNCTION, or check the name against Flink's built-in functions"
                .to_string(),
        });
    }

    /// The first signature accepting the argument types, or a diagnostic.
    fn match_signature(
        &mut self,
        f: &Function,
        spec: &'static FunctionSpec,
        types: &[DataType],
        star: bool,
    ) -> Option<&'static Signature> {
        let by_arity: Vec<(&Signature, Vec<usize>)> = spec
            .signatures
            .iter()
            .filter_map(|s| assign_args(&s.args, types.len()).map(|a| (s, a)))
            .collect();
        if by_arity.is_empty() {
            // `COUNT(*)` is written with one argument but counts rows.
            if star {
                return spec.signatures.first();
            }
            let expected = spec
                .signatures
                .iter()
                .map(|s| s.args.iter().filter(|a| !a.optional).count())
                .min();
            self.error(
                "wrong-argument-count",
                format!(
                    "Invalid number of arguments to function '{}'. Was expecting {} arguments",
                    spec.name,
                    expected.unwrap_or(0)
                ),
                span_of(&f.name),
            );
            return None;
        }
        // Flink's IF infers no type for an untyped NULL branch.
        if spec.name == "IF" && types.iter().skip(1).any(types::is_null_type) {
            self.error(
                "type-mismatch",
                "Illegal use of 'NULL'".to_string(),
                span_of(&f.name),
            );
            return None;
        }
        let found = by_arity.iter().find(|(sig, assignment)| {
            types
                .iter()
                .zip(assignment)
                .all(|(t, &i)| sig.args.get(i).is_none_or(|a| accepts(a.family, t)))
        });
        if let Some((sig, _)) = found {
            return Some(sig);
        }
        let actual: Vec<String> = types
            .iter()
            .map(|t| format!("<{}>", types::calcite_name(t)))
            .collect();
        let forms: Vec<String> = spec
            .signatures
            .iter()
            .map(|s| {
                let args: Vec<String> = s
                    .args
                    .iter()
                    .map(|a| format!("<{}>", calcite_family(a.family)))
                    .collect();
                format!("'{}({})'", spec.name, args.join(", "))
            })
            .collect();
        self.error(
            "type-mismatch",
            format!(
                "Cannot apply '{}' to arguments of type '{}({})'. Supported form(s): {}",
                spec.name,
                spec.name,
                actual.join(", "),
                forms.join("\n")
            ),
            span_of(&f.name),
        );
        None
    }

    /// Derives a result type from a return rule.
    fn apply_rule(
        &mut self,
        rule: &ReturnRule,
        spec: &FunctionSpec,
        signature: &Signature,
        args: &[DataType],
        f: &Function,
    ) -> DataType {
        let arg = |n: usize| args.get(n).cloned().unwrap_or_else(unknown);
        match rule {
            ReturnRule::Type(text) => {
                riffle_sql::parse_data_type(text).unwrap_or_else(|_| unknown())
            }
            ReturnRule::Arg(n) => arg(*n),
            ReturnRule::LeastRestrictive => {
                // The value arguments are those of the last argument's family: IF(cond, a, b)
                // and ELT(n, a, b, ...) leave out their leading condition / index.
                let values: Vec<DataType> = match (
                    assign_args(&signature.args, args.len()),
                    signature.args.last(),
                ) {
                    (Some(assignment), Some(last)) => args
                        .iter()
                        .zip(assignment)
                        .filter(|(_, i)| {
                            signature
                                .args
                                .get(*i)
                                .is_some_and(|a| a.family == last.family)
                        })
                        .map(|(t, _)| t.clone())
                        .collect(),
                    _ => args.to_vec(),
                };
                let values = values.as_slice();
                match types::common_type(values) {
                    Some(t) => t,
                    None => {
                        if !values.iter().any(types::is_unknown) && !values.is_empty() {
                            let shown: Vec<String> = values.iter().map(|t| t.to_string()).collect();
                            self.error(
                                "type-mismatch",
                                format!(
                                    "Cannot infer return type for {}; operand types: [{}]",
                                    spec.name,
                                    shown.join(", ")
                                ),
                                span_of(&f.name),
                            );
                        }
                        unknown()
                    }
                }
            }
            ReturnRule::Arithmetic => {
                let op = match spec.name.as_str() {
                    "MOD" | "%" => Arith::Modulo,
                    "-" => Arith::Minus,
                    "*" => Arith::Times,
                    _ => Arith::Plus,
                };
                arithmetic(op, &arg(0), &arg(1)).unwrap_or_else(unknown)
            }
            ReturnRule::DecimalDivide => {
                arithmetic(Arith::Divide, &arg(0), &arg(1)).unwrap_or_else(unknown)
            }
            ReturnRule::SumOf(n) => unknown_or(&arg(*n), types::sum_type),
            ReturnRule::VaryingOf(n) => varying_string_of(&arg(*n)),
            ReturnRule::AvgOf(n) => unknown_or(&arg(*n), types::avg_type),
            // Unlike `arr[i]`, rules keep the element's own nullability (MAP_FROM_ARRAYS keys).
            ReturnRule::ElementOf(n) => match arg(*n).kind {
                TypeKind::Array(e) | TypeKind::Multiset(e) => *e,
                _ => unknown(),
            },
            ReturnRule::EntryOf(n) => match arg(*n).kind {
                TypeKind::Map(k, v) => DataType::nullable(TypeKind::Row(vec![
                    RowField {
                        name: "key".into(),
                        data_type: *k,
                        description: None,
                    },
                    RowField {
                        name: "value".into(),
                        data_type: *v,
                        description: None,
                    },
                ])),
                _ => unknown(),
            },
            ReturnRule::KeyOf(n) => match arg(*n).kind {
                TypeKind::Map(k, _) => *k,
                _ => unknown(),
            },
            ReturnRule::ValueOf(n) => match arg(*n).kind {
                TypeKind::Map(_, v) => *v,
                _ => unknown(),
            },
            ReturnRule::ArrayOf(inner) => {
                let e = self.apply_rule(inner, spec, signature, args, f);
                wrap_known(e, |e| TypeKind::Array(Box::new(e)))
            }
            ReturnRule::ArrayAdding(array, element) => match arg(*array) {
                DataType {
                    kind: TypeKind::Array(e),
                    nullable,
                } => DataType {
                    kind: TypeKind::Array(Box::new(DataType {
                        nullable: e.nullable || arg(*element).nullable,
                        ..*e
                    })),
                    nullable,
                },
                _ => unknown(),
            },
            ReturnRule::MultisetOf(inner) => {
                let e = self.apply_rule(inner, spec, signature, args, f);
                wrap_known(e, |e| TypeKind::Multiset(Box::new(e)))
            }
            ReturnRule::MapOf(k, v) => {
                let k = self.apply_rule(k, spec, signature, args, f);
                let v = self.apply_rule(v, spec, signature, args, f);
                if types::is_unknown(&k) || types::is_unknown(&v) {
                    unknown()
                } else {
                    DataType::nullable(TypeKind::Map(Box::new(k), Box::new(v)))
                }
            }
            ReturnRule::RowOfArgs => DataType::not_null(TypeKind::Row(
                args.iter()
                    .enumerate()
                    .map(|(i, t)| RowField {
                        name: format!("EXPR${i}"),
                        data_type: t.clone(),
                        description: None,
                    })
                    .collect(),
            )),
            ReturnRule::FieldOf(n) => element_type(&arg(*n)),
            ReturnRule::TargetType => returning_type(f).unwrap_or_else(types::string),
            ReturnRule::WindowedTable | ReturnRule::PredictedTable | ReturnRule::GroupWindow => {
                unknown()
            }
        }
    }
}

/// Applies the nullability the data file gives a built-in that has its own syntax, so the
/// expression typing derives its type (`SUBSTR(s, 2)` parses as a substring expression).
pub(crate) fn with_builtin_nullability(
    name: &str,
    derived: DataType,
    args: &[DataType],
) -> DataType {
    if types::is_unknown(&derived) {
        return derived;
    }
    let nullable = riffle_dialects::function(name)
        .and_then(|f| f.signatures.first())
        .map_or(derived.nullable, |s| {
            result_nullable(s.nullable, &derived, args, false)
        });
    DataType {
        nullable,
        ..derived
    }
}

/// Whether a call's result may be NULL, as its signature's nullability says. `derived` is the
/// type the return rule gave; `empty_group` is set for an aggregate that may see an empty group.
fn result_nullable(
    nullable: Nullability,
    derived: &DataType,
    args: &[DataType],
    empty_group: bool,
) -> bool {
    match nullable {
        Nullability::Args => empty_group || args.iter().any(|t| t.nullable),
        Nullability::AllArgs => !args.is_empty() && args.iter().all(|t| t.nullable),
        // An argument left out (LAG without a default) gives NULL.
        Nullability::Arg(n) => args.get(n).is_none_or(|t| t.nullable),
        Nullability::Always => true,
        Nullability::Never => false,
        Nullability::Rule => derived.nullable,
    }
}

/// Whether a window frame may hold no rows, as Calcite's `SqlWindow.isAlwaysNonEmpty` judges
/// it: a frame left out, or given only by its lower bound, ends at the current row; a bound with
/// an offset (`1 PRECEDING`) is an expression Calcite does not look into, so such a frame may be
/// empty; otherwise the lower bound must not come after the upper one.
fn frame_may_be_empty(frame: &WindowFrame) -> bool {
    let end = frame
        .end_bound
        .as_ref()
        .unwrap_or(&WindowFrameBound::CurrentRow);
    match (bound_order(&frame.start_bound), bound_order(end)) {
        (Some(lower), Some(upper)) => lower > upper,
        _ => true,
    }
}

/// The order of a frame bound without an offset (Calcite's `RexWindowBound.getOrderKey`).
fn bound_order(bound: &WindowFrameBound) -> Option<u8> {
    match bound {
        WindowFrameBound::Preceding(None) => Some(0),
        WindowFrameBound::CurrentRow => Some(2),
        WindowFrameBound::Following(None) => Some(4),
        WindowFrameBound::Preceding(Some(_)) | WindowFrameBound::Following(Some(_)) => None,
    }
}

/// Decimal results the data file's `ARG0` cannot express: `ROUND` / `TRUNCATE` narrow the
/// scale to their second argument (`LogicalTypeMerging.findRoundDecimalType`), `CEIL` / `FLOOR`
/// drop it.
fn scalar_result(
    spec: &FunctionSpec,
    signature: &Signature,
    ty: DataType,
    args: &[DataType],
    f: &Function,
) -> DataType {
    if spec.name == "TIMESTAMPADD" && args.get(2).is_some_and(|a| a.kind == TypeKind::Date) {
        // Calcite: a DATE shifted by a unit below a day becomes a TIMESTAMP(6).
        let unit = match call_args(f).first() {
            Some(CallArg::Expr(Expr::Identifier(id))) => id.value.to_ascii_uppercase(),
            _ => String::new(),
        };
        if matches!(
            unit.as_str(),
            "HOUR" | "MINUTE" | "SECOND" | "MILLISECOND" | "MICROSECOND" | "NANOSECOND"
        ) {
            return DataType {
                kind: TypeKind::Timestamp(6),
                nullable: ty.nullable,
            };
        }
    }
    let round = matches!(spec.name.as_str(), "ROUND" | "TRUNCATE");
    if let (true, Some(TypeKind::Decimal(p, _))) = (
        matches!(spec.name.as_str(), "CEIL" | "FLOOR"),
        args.first().map(|a| &a.kind),
    ) {
        // Calcite's ARG0_OR_EXACT_NO_SCALE: DECIMAL(p, s) -> DECIMAL(p, 0).
        return DataType {
            kind: TypeKind::Decimal(*p, 0),
            nullable: ty.nullable,
        };
    }
    match (round, args.first()) {
        (true, Some(arg))
            if types::is_decimal(arg) && matches!(signature.returns, ReturnRule::Arg(0)) =>
        {
            let digits = match call_args(f).get(1) {
                Some(CallArg::Expr(e)) => integer_literal(e),
                _ => Some(0),
            };
            match digits {
                Some(r) => DataType {
                    kind: types::decimal_round(arg, r),
                    nullable: ty.nullable,
                },
                // A non-literal scale: Flink's result depends on the value; leave it unknown.
                None => unknown(),
            }
        }
        _ => ty,
    }
}

/// The value of an integer literal (possibly negated).
pub(crate) fn integer_literal(e: &Expr) -> Option<i32> {
    match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => integer_literal(expr).map(|n| -n),
        Expr::Nested(inner) => integer_literal(inner),
        _ => None,
    }
}

/// The `RETURNING <type>` of a call such as `JSON_VALUE`, if written.
fn returning_type(f: &Function) -> Option<DataType> {
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    list.clauses.iter().find_map(|c| match c {
        FunctionArgumentClause::JsonReturningClause(r) => {
            riffle_sql::cast_data_type(&r.data_type).ok()
        }
        _ => None,
    })
}

fn unknown_or(t: &DataType, f: fn(&DataType) -> DataType) -> DataType {
    if types::is_unknown(t) {
        unknown()
    } else {
        f(t)
    }
}

fn wrap_known(e: DataType, f: impl FnOnce(DataType) -> TypeKind) -> DataType {
    if types::is_unknown(&e) {
        unknown()
    } else {
        DataType::nullable(f(e))
    }
}

/// The spec an argument at `index` falls under if the call had many arguments (for deciding
/// which arguments are keywords rather than values).
fn arg_spec_at(sig: &Signature, index: usize) -> Option<&ArgSpec> {
    sig.args
        .get(index)
        .or_else(|| sig.args.last().filter(|a| a.variadic))
}

/// Assigns `n` actual arguments to the signature's specs (optional specs take zero or one,
/// variadic specs take the rest), returning the spec index of each argument.
fn assign_args(specs: &[ArgSpec], n: usize) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(n);
    let mut used = 0usize;
    for (i, spec) in specs.iter().enumerate() {
        let reserved = specs
            .get(i + 1..)
            .unwrap_or_default()
            .iter()
            .filter(|s| !s.optional)
            .count();
        let available = n.saturating_sub(used + reserved);
        let take = if spec.variadic {
            available
        } else if spec.optional {
            available.min(1)
        } else {
            1
        };
        if !spec.optional && take == 0 {
            return None;
        }
        out.extend(std::iter::repeat_n(i, take));
        used += take;
    }
    (used == n).then_some(out)
}

/// A type family as Calcite's "Supported form(s)" lists spell it.
pub(crate) fn calcite_family(family: TypeFamily) -> &'static str {
    match family {
        TypeFamily::CharacterString | TypeFamily::Json => "CHARACTER",
        TypeFamily::BinaryString => "BINARY",
        TypeFamily::IntegerNumeric => "INTEGER",
        TypeFamily::TimestampLtz => "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
        TypeFamily::Temporal => "DATETIME",
        TypeFamily::TimeAttribute => "TIMESTAMP",
        other => other.name(),
    }
}

/// Whether an argument type belongs to a family. Unknown and `NULL` arguments fit everything.
fn accepts(family: TypeFamily, t: &DataType) -> bool {
    if types::is_unknown(t) || types::is_null_type(t) {
        return true;
    }
    match family {
        TypeFamily::Any
        | TypeFamily::TimeUnit
        | TypeFamily::Table
        | TypeFamily::Descriptor
        | TypeFamily::Model
        // Riffle has no VARIANT type; such arguments are accepted unchecked.
        | TypeFamily::Variant => true,
        TypeFamily::Numeric => types::is_numeric(t),
        TypeFamily::IntegerNumeric => types::is_integer(t),
        TypeFamily::ExactNumeric => types::is_exact_numeric(t),
        TypeFamily::ApproximateNumeric => types::is_approximate_numeric(t),
        TypeFamily::CharacterString | TypeFamily::Json => types::is_character_string(t),
        TypeFamily::BinaryString => types::is_binary_string(t),
        TypeFamily::Boolean => matches!(t.kind, TypeKind::Boolean),
        TypeFamily::Date => matches!(t.kind, TypeKind::Date),
        TypeFamily::Time => matches!(t.kind, TypeKind::Time(_)),
        // Flink converts between the two timestamp kinds implicitly.
        TypeFamily::Timestamp | TypeFamily::TimestampLtz | TypeFamily::TimeAttribute => types::is_timestamp(t),
        TypeFamily::Temporal => types::is_datetime(t),
        TypeFamily::Interval => types::is_interval(t),
        TypeFamily::Array => matches!(t.kind, TypeKind::Array(_)),
        TypeFamily::Map => matches!(t.kind, TypeKind::Map(..)),
        TypeFamily::Multiset => matches!(t.kind, TypeKind::Multiset(_)),
        TypeFamily::Row => matches!(t.kind, TypeKind::Row(_)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(family: TypeFamily, optional: bool, variadic: bool) -> ArgSpec {
        ArgSpec {
            family,
            optional,
            variadic,
        }
    }

    #[test]
    fn assigns_optional_and_variadic_arguments() {
        let any = spec(TypeFamily::Any, false, false);
        let opt = spec(TypeFamily::Any, true, false);
        let var = spec(TypeFamily::Any, false, true);
        assert_eq!(assign_args(&[any, opt], 1), Some(vec![0]));
        assert_eq!(assign_args(&[any, opt], 2), Some(vec![0, 1]));
        assert_eq!(assign_args(&[any, opt], 3), None);
        assert_eq!(assign_args(&[var], 3), Some(vec![0, 0, 0]));
        assert_eq!(assign_args(&[var], 0), None);
        assert_eq!(assign_args(&[var, any], 3), Some(vec![0, 0, 1]));
        assert_eq!(assign_args(&[], 0), Some(vec![]));
    }
}
