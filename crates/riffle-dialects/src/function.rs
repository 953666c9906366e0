//! Flink's built-in functions and operators (`dialects/flink/functions.toml`).
//!
//! Signatures use a small vocabulary documented at the top of the data file: argument type
//! families ([`TypeFamily`]) and return rules ([`ReturnRule`]).

use serde::Deserialize;

use crate::support::{RawSupport, Support};

/// How a function is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FunctionKind {
    /// One value per row.
    Scalar,
    /// Aggregates rows of a group (also usable in `OVER` windows).
    Aggregate,
    /// Returns rows (`LATERAL TABLE`, `UNNEST`).
    Table,
    /// Windowing: a window table-valued function or a legacy `GROUP BY` window function.
    Window,
    /// Reads a property of a legacy group window (`TUMBLE_START`, `HOP_ROWTIME`, ...).
    WindowAuxiliary,
    /// Only valid with an `OVER` clause (`ROW_NUMBER`, `RANK`, `LAG`, ...).
    OverOnly,
}

/// A family of SQL types an argument may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFamily {
    /// Any type.
    Any,
    /// TINYINT, SMALLINT, INT, BIGINT, DECIMAL, FLOAT, DOUBLE.
    Numeric,
    /// TINYINT, SMALLINT, INT, BIGINT.
    IntegerNumeric,
    /// The integer types and DECIMAL.
    ExactNumeric,
    /// FLOAT and DOUBLE.
    ApproximateNumeric,
    /// CHAR, VARCHAR / STRING.
    CharacterString,
    /// BINARY, VARBINARY / BYTES.
    BinaryString,
    /// BOOLEAN.
    Boolean,
    /// DATE.
    Date,
    /// TIME.
    Time,
    /// TIMESTAMP (without time zone).
    Timestamp,
    /// TIMESTAMP_LTZ (TIMESTAMP WITH LOCAL TIME ZONE).
    TimestampLtz,
    /// DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ.
    Temporal,
    /// A day-time or year-month interval.
    Interval,
    /// ARRAY.
    Array,
    /// MAP.
    Map,
    /// MULTISET.
    Multiset,
    /// ROW.
    Row,
    /// A character string that holds JSON text.
    Json,
    /// A time interval unit keyword (`DAY`, `HOUR`, ...).
    TimeUnit,
    /// A time attribute column (rowtime or proctime).
    TimeAttribute,
    /// A `TABLE t` argument of a table-valued function.
    Table,
    /// A `DESCRIPTOR(col)` argument.
    Descriptor,
    /// A `MODEL m` argument (`ML_PREDICT`).
    Model,
    /// VARIANT (semi-structured data).
    Variant,
}

impl TypeFamily {
    /// Every family with its spelling in the data file.
    pub const ALL: &'static [(&'static str, TypeFamily)] = &[
        ("ANY", TypeFamily::Any),
        ("NUMERIC", TypeFamily::Numeric),
        ("INTEGER_NUMERIC", TypeFamily::IntegerNumeric),
        ("EXACT_NUMERIC", TypeFamily::ExactNumeric),
        ("APPROXIMATE_NUMERIC", TypeFamily::ApproximateNumeric),
        ("CHARACTER_STRING", TypeFamily::CharacterString),
        ("BINARY_STRING", TypeFamily::BinaryString),
        ("BOOLEAN", TypeFamily::Boolean),
        ("DATE", TypeFamily::Date),
        ("TIME", TypeFamily::Time),
        ("TIMESTAMP", TypeFamily::Timestamp),
        ("TIMESTAMP_LTZ", TypeFamily::TimestampLtz),
        ("TEMPORAL", TypeFamily::Temporal),
        ("INTERVAL", TypeFamily::Interval),
        ("ARRAY", TypeFamily::Array),
        ("MAP", TypeFamily::Map),
        ("MULTISET", TypeFamily::Multiset),
        ("ROW", TypeFamily::Row),
        ("JSON", TypeFamily::Json),
        ("TIME_UNIT", TypeFamily::TimeUnit),
        ("TIME_ATTRIBUTE", TypeFamily::TimeAttribute),
        ("TABLE", TypeFamily::Table),
        ("DESCRIPTOR", TypeFamily::Descriptor),
        ("MODEL", TypeFamily::Model),
        ("VARIANT", TypeFamily::Variant),
    ];

    /// The family's spelling in the data file.
    pub fn name(self) -> &'static str {
        TypeFamily::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("ANY", |(n, _)| n)
    }
}

/// One argument of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgSpec {
    /// The accepted type family.
    pub family: TypeFamily,
    /// Written `FAMILY?`: the argument may be left out.
    pub optional: bool,
    /// Written `FAMILY...`: the argument may repeat (zero or more further times after the
    /// first, which is required unless also optional).
    pub variadic: bool,
}

impl ArgSpec {
    fn parse(text: &str) -> Result<ArgSpec, String> {
        let (text, variadic) = match text.strip_suffix("...") {
            Some(t) => (t, true),
            None => (text, false),
        };
        let (text, optional) = match text.strip_suffix('?') {
            Some(t) => (t, true),
            None => (text, false),
        };
        let family = TypeFamily::ALL
            .iter()
            .find(|(n, _)| *n == text)
            .map(|(_, f)| *f)
            .ok_or_else(|| format!("unknown argument type family `{text}`"))?;
        Ok(ArgSpec {
            family,
            optional,
            variadic,
        })
    }
}

/// How a signature's result type is derived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReturnRule {
    /// A concrete Flink type such as `STRING`, `BIGINT NOT NULL`, `DECIMAL(38, 18)`,
    /// `ARRAY<STRING>`.
    Type(String),
    /// `ARGn`: the type of argument `n` (0-based).
    Arg(usize),
    /// `LEAST_RESTRICTIVE`: the common type of the value arguments (for `CASE`/`IF`, the
    /// result branches).
    LeastRestrictive,
    /// `ARITHMETIC`: Flink's rule for `+`, `-`, `*`, `%` (wider numeric type, decimal
    /// precision rules; temporal ± interval keeps the temporal type).
    Arithmetic,
    /// `DECIMAL_DIVIDE`: Flink's rule for `/` (decimal scale widening, integer division of
    /// integers).
    DecimalDivide,
    /// `SUM_OF(ARGn)`: Flink's SUM result for argument `n` (integers keep their type,
    /// `DECIMAL(p, s)` becomes `DECIMAL(38, s)`).
    SumOf(usize),
    /// `AVG_OF(ARGn)`: Flink's AVG result for argument `n` (integers keep their type,
    /// `DECIMAL(p, s)` becomes `DECIMAL(38, max(s, 6))`).
    AvgOf(usize),
    /// `VARYING_OF(ARGn)`: argument `n`'s character string type made varying (`CHAR(n)` and
    /// `VARCHAR(n)` become `VARCHAR(n)`; Calcite's `TO_VARYING`).
    VaryingOf(usize),
    /// `ELEMENT_OF(ARGn)`: the element type of the array or multiset argument `n`.
    ElementOf(usize),
    /// `ENTRY_OF(ARGn)`: a `ROW<key, value>` of the map argument `n`'s key and value types.
    EntryOf(usize),
    /// `KEY_OF(ARGn)`: the key type of the map argument `n`.
    KeyOf(usize),
    /// `VALUE_OF(ARGn)`: the value type of the map argument `n`.
    ValueOf(usize),
    /// `ARRAY_OF(rule)`: an array whose elements follow `rule`.
    ArrayOf(Box<ReturnRule>),
    /// `MULTISET_OF(rule)`: a multiset whose elements follow `rule`.
    MultisetOf(Box<ReturnRule>),
    /// `ARRAY_ADDING(ARGn, ARGm)`: the array argument `n` with argument `m` added as an element
    /// (`ARRAY_APPEND`, `ARRAY_PREPEND`): `n`'s type, its element made nullable when `m` is.
    ArrayAdding(usize, usize),
    /// `MAP_OF(rule, rule)`: a map with the given key and value rules.
    MapOf(Box<ReturnRule>, Box<ReturnRule>),
    /// `ROW_OF_ARGS`: a row whose fields have the argument types.
    RowOfArgs,
    /// `FIELD_OF(ARGn)`: the type of the field or element the access selects from argument `n`.
    FieldOf(usize),
    /// `TARGET_TYPE`: the type written in the call (`CAST(x AS t)`, `JSON_VALUE(... RETURNING
    /// t)`, default `STRING` where the call allows leaving it out).
    TargetType,
    /// `WINDOWED_TABLE`: the input table's columns plus `window_start`, `window_end` and
    /// `window_time` (window table-valued functions).
    WindowedTable,
    /// `PREDICTED_TABLE`: the input table's columns plus the model's output columns
    /// (`ML_PREDICT`).
    PredictedTable,
    /// `GROUP_WINDOW`: a legacy group window; it only appears in `GROUP BY` and has no value.
    GroupWindow,
}

impl ReturnRule {
    /// Parses a rule as written in the data file.
    pub fn parse(text: &str) -> Result<ReturnRule, String> {
        let text = text.trim();
        let simple = match text {
            "LEAST_RESTRICTIVE" => Some(ReturnRule::LeastRestrictive),
            "ARITHMETIC" => Some(ReturnRule::Arithmetic),
            "DECIMAL_DIVIDE" => Some(ReturnRule::DecimalDivide),
            "ROW_OF_ARGS" => Some(ReturnRule::RowOfArgs),
            "TARGET_TYPE" => Some(ReturnRule::TargetType),
            "WINDOWED_TABLE" => Some(ReturnRule::WindowedTable),
            "PREDICTED_TABLE" => Some(ReturnRule::PredictedTable),
            "GROUP_WINDOW" => Some(ReturnRule::GroupWindow),
            _ => None,
        };
        if let Some(rule) = simple {
            return Ok(rule);
        }
        if let Some(rest) = text.strip_prefix("ARG") {
            if rest.chars().all(|c| c.is_ascii_digit()) {
                return parse_index(rest).map(ReturnRule::Arg);
            }
        }
        if let Some((name, inner)) = call_parts(text) {
            let arg_rule = |f: fn(usize) -> ReturnRule| -> Result<ReturnRule, String> {
                inner
                    .trim()
                    .strip_prefix("ARG")
                    .ok_or_else(|| format!("`{name}` takes an ARGn argument"))
                    .and_then(parse_index)
                    .map(f)
            };
            return match name {
                "SUM_OF" => arg_rule(ReturnRule::SumOf),
                "AVG_OF" => arg_rule(ReturnRule::AvgOf),
                "VARYING_OF" => arg_rule(ReturnRule::VaryingOf),
                "ELEMENT_OF" => arg_rule(ReturnRule::ElementOf),
                "ENTRY_OF" => arg_rule(ReturnRule::EntryOf),
                "KEY_OF" => arg_rule(ReturnRule::KeyOf),
                "VALUE_OF" => arg_rule(ReturnRule::ValueOf),
                "FIELD_OF" => arg_rule(ReturnRule::FieldOf),
                "ARRAY_OF" => Ok(ReturnRule::ArrayOf(Box::new(ReturnRule::parse(inner)?))),
                "MULTISET_OF" => Ok(ReturnRule::MultisetOf(Box::new(ReturnRule::parse(inner)?))),
                "ARRAY_ADDING" => {
                    let index = |t: &str| {
                        t.trim()
                            .strip_prefix("ARG")
                            .ok_or_else(|| "`ARRAY_ADDING` takes two ARGn arguments".to_string())
                            .and_then(parse_index)
                    };
                    let (array, element) = split_top_level_comma(inner)
                        .ok_or_else(|| "`ARRAY_ADDING` takes two ARGn arguments".to_string())?;
                    Ok(ReturnRule::ArrayAdding(index(array)?, index(element)?))
                }
                "MAP_OF" => {
                    let (k, v) = split_top_level_comma(inner)
                        .ok_or_else(|| "`MAP_OF` takes two rules".to_string())?;
                    Ok(ReturnRule::MapOf(
                        Box::new(ReturnRule::parse(k)?),
                        Box::new(ReturnRule::parse(v)?),
                    ))
                }
                _ => Err(format!("unknown return rule `{text}`")),
            };
        }
        if text.ends_with(" NOT NULL") {
            // One place says whether a result may be NULL: the signature's `nullable`.
            return Err(format!(
                "`{text}`: write the type without NOT NULL and set `nullable = \"never\"`"
            ));
        }
        validate_concrete_type(text).map(|()| ReturnRule::Type(text.to_string()))
    }

    /// True for a concrete type (`STRING`, `DECIMAL(38, 18)`), false for derived rules.
    pub fn is_concrete(&self) -> bool {
        matches!(self, ReturnRule::Type(_))
    }
}

/// When a signature's result may be NULL.
///
/// Flink decides this per function: most results are NULL exactly when an argument is
/// (`nullableIfArgs`, Calcite's `*_NULLABLE` / `TO_NULLABLE`), some are always nullable because
/// they return NULL on bad input (`forceNullable`, `*_FORCE_NULLABLE`), some never are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Nullability {
    /// `args` (the default): nullable exactly when an argument is. For an aggregate, also when
    /// its group may be empty (no `GROUP BY`, or an `OVER` window), as Calcite's
    /// `*_NULLABLE_IF_EMPTY` rules say.
    #[default]
    Args,
    /// `all-args`: nullable only when every argument is (Flink's `nullableIfAllArgs`, used by
    /// `COALESCE` and `IFNULL`).
    AllArgs,
    /// `ARGn`: nullable exactly when argument `n` is, or when it is left out (`LAG(x, 1, d)` is
    /// `NOT NULL` when the default `d` is).
    Arg(usize),
    /// `always`: always nullable (Flink's `forceNullable`).
    Always,
    /// `never`: never NULL.
    Never,
    /// `rule`: whatever the return rule derives (a field's or element's own nullability, the
    /// common type of `CASE` branches).
    Rule,
}

impl Nullability {
    /// Parses the `nullable` value of a signature.
    pub fn parse(text: &str) -> Result<Nullability, String> {
        match text {
            "args" => Ok(Nullability::Args),
            "all-args" => Ok(Nullability::AllArgs),
            "always" => Ok(Nullability::Always),
            "never" => Ok(Nullability::Never),
            "rule" => Ok(Nullability::Rule),
            _ => match text.strip_prefix("ARG") {
                Some(digits) => parse_index(digits).map(Nullability::Arg),
                None => Err(format!(
                    "unknown nullability `{text}` (args, all-args, ARGn, always, never or rule)"
                )),
            },
        }
    }
}

/// Parses the digits of an `ARGn` index.
fn parse_index(digits: &str) -> Result<usize, String> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("`{digits}` is not an argument index"));
    }
    digits
        .parse()
        .map_err(|_| format!("`{digits}` is not an argument index"))
}

/// Splits `NAME(inner)` into its parts when the name is a rule word (all caps and `_`).
fn call_parts(text: &str) -> Option<(&str, &str)> {
    let open = text.find('(')?;
    let inner = text.strip_suffix(')')?.get(open + 1..)?;
    let name = text.get(..open)?;
    // Type names take parameters too (`DECIMAL(10, 2)`); rules end in `_OF` or are listed.
    (name.ends_with("_OF") || name == "ARRAY_ADDING").then_some((name, inner))
}

/// Splits `a, b` at the first comma outside brackets.
fn split_top_level_comma(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => return Some((text.get(..i)?, text.get(i + 1..)?)),
            _ => {}
        }
    }
    None
}

/// Base type names a concrete return type may use.
const BASE_TYPES: &[&str] = &[
    "CHAR",
    "VARCHAR",
    "STRING",
    "BOOLEAN",
    "BINARY",
    "VARBINARY",
    "BYTES",
    "DECIMAL",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "VARIANT",
];

/// Checks a concrete type: `NAME`, `NAME(p)`, `NAME(p, s)`, `ARRAY<T>`, `MULTISET<T>`,
/// `MAP<K, V>`, each optionally followed by `NOT NULL`.
fn validate_concrete_type(text: &str) -> Result<(), String> {
    let text = text.trim();
    let text = text.strip_suffix(" NOT NULL").unwrap_or(text).trim();
    for (container, arity) in [("ARRAY<", 1), ("MULTISET<", 1), ("MAP<", 2)] {
        if let Some(inner) = text.strip_prefix(container) {
            let inner = inner
                .strip_suffix('>')
                .ok_or_else(|| format!("unclosed `<` in type `{text}`"))?;
            return if arity == 1 {
                validate_concrete_type(inner)
            } else {
                let (k, v) = split_top_level_comma(inner)
                    .ok_or_else(|| format!("`{text}` needs a key and a value type"))?;
                validate_concrete_type(k).and_then(|()| validate_concrete_type(v))
            };
        }
    }
    let (name, params) = match text.split_once('(') {
        Some((name, rest)) => {
            let params = rest
                .strip_suffix(')')
                .ok_or_else(|| format!("unclosed `(` in type `{text}`"))?;
            (name, Some(params))
        }
        None => (text, None),
    };
    if !BASE_TYPES.contains(&name) {
        return Err(format!(
            "`{text}` is neither a return rule nor a known type"
        ));
    }
    if let Some(params) = params {
        let ok = params
            .split(',')
            .all(|p| !p.trim().is_empty() && p.trim().chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("bad type parameters in `{text}`"));
        }
    }
    Ok(())
}

/// One accepted argument list and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The arguments in order.
    pub args: Vec<ArgSpec>,
    /// How the result type is derived.
    pub returns: ReturnRule,
    /// When the result may be NULL.
    pub nullable: Nullability,
    /// How the call is written when it is not `NAME(arg, ...)` (e.g. `FLOOR(t TO unit)`).
    pub form: Option<String>,
}

/// One built-in function or operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    /// The name in upper case; operators use their symbol or keywords (`||`, `IS DISTINCT FROM`).
    pub name: String,
    /// Other names for the same function (`CEILING` for `CEIL`).
    pub aliases: Vec<String>,
    /// How the function is called.
    pub kind: FunctionKind,
    /// The section of Flink's built-in function list it belongs to.
    pub category: String,
    /// The accepted signatures.
    pub signatures: Vec<Signature>,
    /// True for operators and keyword syntax (`CAST`, `||`, `BETWEEN`) rather than plain calls.
    pub syntax: bool,
    /// The Flink version that added it, when after 1.13.
    pub since: Option<String>,
    /// Riffle's support for it.
    pub support: Support,
}

/// The functions file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFunctions {
    /// The allowed categories, in the order of Flink's documentation.
    pub(crate) categories: Vec<String>,
    /// Default status for entries that give none.
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
    #[serde(rename = "function")]
    functions: Vec<RawFunction>,
}

/// One `[[function]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFunction {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    kind: FunctionKind,
    category: String,
    signatures: Vec<RawSignature>,
    #[serde(default)]
    syntax: bool,
    since: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    migration: Option<String>,
}

/// One signature as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    args: Vec<String>,
    returns: String,
    nullable: Option<String>,
    form: Option<String>,
}

impl RawFunctions {
    /// Converts every entry, checking signatures, categories and `since` versions.
    pub(crate) fn resolve(self) -> Result<Vec<FunctionSpec>, String> {
        let default = RawSupport {
            status: self.status,
            reason: self.reason,
            migration: self.migration,
        };
        let default = default.resolve_default()?;
        let categories = self.categories;
        self.functions
            .into_iter()
            .map(|f| {
                let name = f.name.clone();
                resolve_function(f, &categories, default.as_ref())
                    .map_err(|e| format!("function `{name}`: {e}"))
            })
            .collect()
    }
}

/// Checks that a `since` value is a `MAJOR.MINOR` Flink version.
pub(crate) fn check_since(since: &str) -> Result<(), String> {
    let valid = since.split('.').count() == 2
        && since
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`since = \"{since}\"` is not a MAJOR.MINOR version"
        ))
    }
}

/// Rejects nullability values that cannot mean anything for the signature.
fn check_nullability(
    nullable: Nullability,
    returns: &ReturnRule,
    args: &[ArgSpec],
) -> Result<(), String> {
    match (nullable, returns) {
        // A concrete type derives no nullability of its own.
        (Nullability::Rule, ReturnRule::Type(t)) => Err(format!(
            "`nullable = \"rule\"` needs a derived return rule, not the type `{t}`"
        )),
        (Nullability::Arg(n), _) if n >= args.len() && !args.last().is_some_and(|a| a.variadic) => {
            Err(format!(
                "`nullable = \"ARG{n}\"` names an argument the signature does not have"
            ))
        }
        _ => Ok(()),
    }
}

fn resolve_function(
    f: RawFunction,
    categories: &[String],
    default: Option<&Support>,
) -> Result<FunctionSpec, String> {
    if !categories.contains(&f.category) {
        return Err(format!(
            "category `{}` is not listed in `categories`",
            f.category
        ));
    }
    if let Some(since) = &f.since {
        check_since(since)?;
    }
    if f.signatures.is_empty() {
        return Err("no signatures".to_string());
    }
    let signatures = f
        .signatures
        .into_iter()
        .map(|s| {
            let args = s
                .args
                .iter()
                .map(|a| ArgSpec::parse(a))
                .collect::<Result<Vec<_>, _>>()?;
            let returns = ReturnRule::parse(&s.returns)?;
            let nullable = s
                .nullable
                .as_deref()
                .map_or(Ok(Nullability::Args), Nullability::parse)?;
            check_nullability(nullable, &returns, &args)?;
            Ok(Signature {
                args,
                returns,
                nullable,
                form: s.form,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let support = RawSupport {
        status: f.status,
        reason: f.reason,
        migration: f.migration,
    }
    .resolve(default)?;
    Ok(FunctionSpec {
        name: f.name,
        aliases: f.aliases,
        kind: f.kind,
        category: f.category,
        signatures,
        syntax: f.syntax,
        since: f.since,
        support,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arguments() {
        assert_eq!(
            ArgSpec::parse("NUMERIC?"),
            Ok(ArgSpec {
                family: TypeFamily::Numeric,
                optional: true,
                variadic: false
            })
        );
        assert_eq!(
            ArgSpec::parse("ANY..."),
            Ok(ArgSpec {
                family: TypeFamily::Any,
                optional: false,
                variadic: true
            })
        );
        assert!(ArgSpec::parse("NUMBER").is_err());
    }

    #[test]
    fn parses_return_rules() {
        assert_eq!(ReturnRule::parse("ARG0"), Ok(ReturnRule::Arg(0)));
        assert_eq!(ReturnRule::parse("SUM_OF(ARG0)"), Ok(ReturnRule::SumOf(0)));
        assert_eq!(
            ReturnRule::parse("VARYING_OF(ARG0)"),
            Ok(ReturnRule::VaryingOf(0))
        );
        assert_eq!(
            ReturnRule::parse("ARRAY_OF(ELEMENT_OF(ARG0))"),
            Ok(ReturnRule::ArrayOf(Box::new(ReturnRule::ElementOf(0))))
        );
        assert_eq!(
            ReturnRule::parse("ARRAY_ADDING(ARG0, ARG1)"),
            Ok(ReturnRule::ArrayAdding(0, 1))
        );
        assert!(ReturnRule::parse("ARRAY_ADDING(ARG0)").is_err());
        assert_eq!(
            ReturnRule::parse("MAP_OF(ARG0, ARG1)"),
            Ok(ReturnRule::MapOf(
                Box::new(ReturnRule::Arg(0)),
                Box::new(ReturnRule::Arg(1))
            ))
        );
        assert_eq!(
            ReturnRule::parse("DECIMAL(38, 18)"),
            Ok(ReturnRule::Type("DECIMAL(38, 18)".into()))
        );
        assert_eq!(
            ReturnRule::parse("MAP<STRING, ARRAY<INT NOT NULL>>"),
            Ok(ReturnRule::Type("MAP<STRING, ARRAY<INT NOT NULL>>".into()))
        );
        for bad in [
            "ARG",
            "ARGx",
            "SUM_OF(0)",
            "NUMBER",
            "DECIMAL(a)",
            "ARRAY<INT",
            "FOO_OF(ARG0)",
            "MAP<INT>",
            "ARG1_NULLABLE",
            "BIGINT NOT NULL",
        ] {
            assert!(ReturnRule::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn parses_nullability() {
        assert_eq!(Nullability::parse("args"), Ok(Nullability::Args));
        assert_eq!(Nullability::parse("all-args"), Ok(Nullability::AllArgs));
        assert_eq!(Nullability::parse("always"), Ok(Nullability::Always));
        assert_eq!(Nullability::parse("never"), Ok(Nullability::Never));
        assert_eq!(Nullability::parse("rule"), Ok(Nullability::Rule));
        assert_eq!(Nullability::parse("ARG2"), Ok(Nullability::Arg(2)));
        for bad in ["", "Always", "ARG", "ARGx", "nullable"] {
            assert!(Nullability::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn checks_nullability_against_the_signature() {
        let int = ArgSpec::parse("INTEGER_NUMERIC").expect("family");
        let rest = ArgSpec::parse("ANY...").expect("family");
        let string = ReturnRule::Type("STRING".into());
        assert!(check_nullability(Nullability::Rule, &string, &[int]).is_err());
        assert!(check_nullability(Nullability::Rule, &ReturnRule::Arg(0), &[int]).is_ok());
        assert!(check_nullability(Nullability::Arg(1), &string, &[int]).is_err());
        assert!(check_nullability(Nullability::Arg(1), &string, &[int, int]).is_ok());
        assert!(check_nullability(Nullability::Arg(3), &string, &[int, rest]).is_ok());
        assert!(check_nullability(Nullability::Always, &string, &[]).is_ok());
    }
}
