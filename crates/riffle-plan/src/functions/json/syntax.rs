//! The SQL/JSON syntax of Flink's JSON functions (as `riffle_sql` encodes it) rewritten into
//! plain calls of Riffle's JSON functions, their clauses as constant string arguments:
//!
//! * `x IS [NOT] JSON kind` → `[NOT] is_json(x, 'kind')`;
//! * `JSON_VALUE(s, p [RETURNING t] [b ON EMPTY] [b ON ERROR])` →
//!   `json_value(s, p, 't', 'b', default, 'b', default)`;
//! * `JSON_QUERY(s, p [RETURNING t] [wrapper] [b ON EMPTY] [b ON ERROR])` →
//!   `json_query(s, p, 'STRING' | 'ARRAY', 'wrapper', 'b', 'b')`;
//! * `JSON_EXISTS(s, p [b ON ERROR])` → `json_exists(s, p, 'b')`;
//! * `JSON_OBJECT(k VALUE v, ... [NULL | ABSENT ON NULL])` →
//!   `json_object('NULL' | 'ABSENT', raw_flags, k, v, ...)` and `JSON_ARRAY(v, ...)` likewise,
//!   where `raw_flags` has a `1` for each value that is itself a `JSON_OBJECT`/`JSON_ARRAY` call
//!   (inserted as JSON, not as a string); `JSON_STRING(v)` → `json_string('RAW' | '', v)`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, JsonNullClause, Query, UnaryOperator, Value, VisitMut, VisitorMut,
};
use riffle_sql::ast::TypeKind;

use crate::legacy::call;

/// Rewrites the JSON syntax in `query`; `Err` is Flink's error for an invalid use (or names a
/// form Riffle does not support, with "not supported" in the message).
pub fn rewrite_json(query: &mut Query) -> Result<(), String> {
    struct Rewriter;

    impl VisitorMut for Rewriter {
        type Break = String;

        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<String> {
            match rewrite(e) {
                Ok(()) => ControlFlow::Continue(()),
                Err(m) => ControlFlow::Break(m),
            }
        }
    }

    match query.visit(&mut Rewriter) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(m) => Err(m),
    }
}

fn rewrite(e: &mut Expr) -> Result<(), String> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Custom(op),
            right,
        } if op == "IS JSON" || op == "IS NOT JSON" => {
            let negated = op == "IS NOT JSON";
            let kind = match right.as_ref() {
                Expr::Identifier(i) => i.value.to_ascii_uppercase(),
                _ => "VALUE".to_string(),
            };
            let value = std::mem::replace(left.as_mut(), null());
            let test = call("is_json", vec![value, string(&kind)]);
            *e = if negated {
                Expr::UnaryOp {
                    op: UnaryOperator::Not,
                    expr: Box::new(Expr::Nested(Box::new(test))),
                }
            } else {
                test
            };
            Ok(())
        }
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_uppercase();
            let rewritten = match name.as_str() {
                "JSON_VALUE" => json_value(f)?,
                "JSON_QUERY" => json_query(f)?,
                "JSON_EXISTS" => json_exists(f)?,
                "JSON_OBJECT" => json_object(f)?,
                "JSON_ARRAY" => json_array(f)?,
                "JSON_STRING" => {
                    let mut args = Clauses::of(f)?.args;
                    if args.len() != 1 {
                        return Err("JSON_STRING takes one argument".into());
                    }
                    let value = args.remove(0);
                    let flag = if is_json_constructor(&value) {
                        "RAW"
                    } else {
                        ""
                    };
                    call("json_string", vec![string(flag), value])
                }
                _ => return Ok(()),
            };
            *e = rewritten;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn null() -> Expr {
    Expr::value(Value::Null)
}

fn string(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.to_string()))
}

/// Whether `e` is a call the rewrite made of `JSON_OBJECT` / `JSON_ARRAY`.
fn is_json_constructor(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if matches!(f.name.to_string().as_str(), "json_object" | "json_array"))
}

/// A JSON function call taken apart.
#[derive(Default)]
struct Clauses {
    args: Vec<Expr>,
    /// `k VALUE v` pairs of `JSON_OBJECT`.
    pairs: Vec<(Expr, Expr)>,
    returning: Option<riffle_sql::ast::DataType>,
    on_empty: Option<Expr>,
    on_error: Option<Expr>,
    wrapper: Option<String>,
    on_null: Option<JsonNullClause>,
}

impl Clauses {
    fn of(f: &Function) -> Result<Clauses, String> {
        let mut out = Clauses::default();
        let FunctionArguments::List(list) = &f.args else {
            return Ok(out);
        };
        for arg in &list.args {
            match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => out.args.push(e.clone()),
                FunctionArg::ExprNamed {
                    name,
                    arg: FunctionArgExpr::Expr(v),
                    ..
                } => out.pairs.push((name.clone(), v.clone())),
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(v),
                    ..
                } => match name.value.as_str() {
                    "ON_EMPTY" => out.on_empty = Some(v.clone()),
                    "ON_ERROR" => out.on_error = Some(v.clone()),
                    "WRAPPER" => out.wrapper = Some(v.to_string()),
                    other => return Err(format!("unexpected argument {other} of {}", f.name)),
                },
                other => return Err(format!("unexpected argument {other} of {}", f.name)),
            }
        }
        for clause in &list.clauses {
            match clause {
                FunctionArgumentClause::JsonReturningClause(r) => {
                    let t = riffle_sql::cast_data_type(&r.data_type).map_err(|d| d.message)?;
                    out.returning = Some(t);
                }
                FunctionArgumentClause::JsonNullClause(n) => out.on_null = Some(n.clone()),
                other => {
                    return Err(format!("{other} in {} is not supported", f.name));
                }
            }
        }
        Ok(out)
    }

    /// The document and path arguments.
    fn doc_and_path(&self, name: &str) -> Result<(Expr, Expr), String> {
        match self.args.as_slice() {
            [doc, path] => Ok((doc.clone(), path.clone())),
            _ => Err(format!("{name} takes a JSON document and a path")),
        }
    }
}

/// A behaviour before `ON EMPTY` / `ON ERROR` as (keyword, default value).
fn behavior(b: Option<&Expr>, absent: &str) -> (String, Expr) {
    match b {
        None => (absent.to_string(), string("")),
        Some(Expr::Value(v)) if v.value == Value::Null => ("NULL".into(), string("")),
        Some(Expr::Prefixed { prefix, value }) if prefix.value.eq_ignore_ascii_case("DEFAULT") => {
            ("DEFAULT".into(), value.as_ref().clone())
        }
        Some(other) => (other.to_string().to_ascii_uppercase(), string("")),
    }
}

fn json_value(f: &Function) -> Result<Expr, String> {
    let c = Clauses::of(f)?;
    let (doc, path) = c.doc_and_path("JSON_VALUE")?;
    let returning = match &c.returning {
        None => "STRING",
        Some(t) => match &t.kind {
            TypeKind::Varchar(_) => "STRING",
            TypeKind::Boolean => "BOOLEAN",
            TypeKind::Int => "INT",
            TypeKind::Double => "DOUBLE",
            _ => {
                let summary = t.to_string();
                return Err(format!(
                    "Unsupported type '{summary}' for RETURNING in JSON_VALUE()."
                ));
            }
        },
    };
    let (empty, empty_default) = behavior(c.on_empty.as_ref(), "NULL");
    let (error, error_default) = behavior(c.on_error.as_ref(), "NULL");
    for mode in [&empty, &error] {
        if !matches!(mode.as_str(), "NULL" | "ERROR" | "DEFAULT") {
            return Err(format!("Illegal behavior '{mode}' in JSON_VALUE"));
        }
    }
    Ok(call(
        "json_value",
        vec![
            doc,
            path,
            string(returning),
            string(&empty),
            empty_default,
            string(&error),
            error_default,
        ],
    ))
}

fn json_query(f: &Function) -> Result<Expr, String> {
    let c = Clauses::of(f)?;
    let (doc, path) = c.doc_and_path("JSON_QUERY")?;
    let returning = match &c.returning {
        None => "STRING",
        Some(t) => match &t.kind {
            TypeKind::Varchar(_) => "STRING",
            TypeKind::Array(e) if matches!(e.kind, TypeKind::Varchar(_)) => "ARRAY",
            _ => {
                return Err(format!(
                    "JSON_QUERY ... RETURNING {t} is not supported (only STRING and ARRAY<STRING>)"
                ))
            }
        },
    };
    let wrapper = c.wrapper.clone().unwrap_or_else(|| "WITHOUT".into());
    let (empty, _) = behavior(c.on_empty.as_ref(), "NULL");
    let (error, _) = behavior(c.on_error.as_ref(), "NULL");
    for mode in [&empty, &error] {
        if !matches!(
            mode.as_str(),
            "NULL" | "ERROR" | "EMPTY ARRAY" | "EMPTY OBJECT"
        ) {
            return Err(format!("Illegal behavior '{mode}' in JSON_QUERY"));
        }
    }
    Ok(call(
        "json_query",
        vec![
            doc,
            path,
            string(returning),
            string(&wrapper),
            string(&empty),
            string(&error),
        ],
    ))
}

fn json_exists(f: &Function) -> Result<Expr, String> {
    let c = Clauses::of(f)?;
    let (doc, path) = c.doc_and_path("JSON_EXISTS")?;
    let (error, _) = behavior(c.on_error.as_ref(), "FALSE");
    if !matches!(error.as_str(), "TRUE" | "FALSE" | "UNKNOWN" | "ERROR") {
        return Err(format!("Illegal behavior '{error}' in JSON_EXISTS"));
    }
    Ok(call("json_exists", vec![doc, path, string(&error)]))
}

fn on_null(c: &Clauses, default: &str) -> Expr {
    string(match &c.on_null {
        Some(JsonNullClause::NullOnNull) => "NULL",
        Some(JsonNullClause::AbsentOnNull) => "ABSENT",
        None => default,
    })
}

fn raw_flags<'a>(values: impl Iterator<Item = &'a Expr>) -> Expr {
    let flags: String = values
        .map(|v| if is_json_constructor(v) { '1' } else { '0' })
        .collect();
    string(&flags)
}

fn json_object(f: &Function) -> Result<Expr, String> {
    let c = Clauses::of(f)?;
    if !c.args.is_empty() {
        return Err("JSON_OBJECT takes KEY k VALUE v pairs".into());
    }
    let mut args = vec![
        on_null(&c, "NULL"),
        raw_flags(c.pairs.iter().map(|(_, v)| v)),
    ];
    for (k, v) in c.pairs {
        args.push(k);
        args.push(v);
    }
    Ok(call("json_object", args))
}

fn json_array(f: &Function) -> Result<Expr, String> {
    let c = Clauses::of(f)?;
    let mut args = vec![on_null(&c, "ABSENT"), raw_flags(c.args.iter())];
    args.extend(c.args);
    Ok(call("json_array", args))
}
