//! Flink's logical type rules: type families, implicit and explicit casts, the common
//! ("least restrictive") type of several types, and decimal precision/scale derivation.
//!
//! The rules follow Flink's `LogicalTypeCasts`, `LogicalTypeMerging` and the planner's
//! `FlinkTypeSystem`; each function names the Flink rule it mirrors.
//!
//! An expression whose type cannot be derived has the *unknown* type ([`unknown`]); every rule
//! accepts it silently so that an unknown type never produces a false error.

use riffle_sql::ast::{DataType, RowField, TypeKind, MAX_LENGTH};

/// Flink's `DecimalType.MAX_PRECISION`.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// Flink's `LogicalTypeMerging.MINIMUM_ADJUSTED_SCALE`.
const MINIMUM_ADJUSTED_SCALE: i32 = 6;

/// The name carried by the unknown type (a type Riffle could not derive).
const UNKNOWN_NAME: &str = "UNKNOWN";

/// The type of an expression Riffle cannot type. Rules treat it as compatible with everything.
pub fn unknown() -> DataType {
    DataType::nullable(TypeKind::Unknown(UNKNOWN_NAME.to_string()))
}

/// True for the unknown type (and for legacy type names the parser could not map).
pub fn is_unknown(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Unknown(_))
}

/// `STRING` (`VARCHAR(2147483647)`).
pub fn string() -> DataType {
    DataType::nullable(TypeKind::Varchar(MAX_LENGTH))
}

/// A nullable type of the given kind.
pub fn nullable(kind: TypeKind) -> DataType {
    DataType::nullable(kind)
}

/// A `NOT NULL` type of the given kind.
pub fn not_null(kind: TypeKind) -> DataType {
    DataType::not_null(kind)
}

/// `CHARACTER_STRING` family: `CHAR`, `VARCHAR`.
pub fn is_character_string(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Char(_) | TypeKind::Varchar(_))
}

/// `BINARY_STRING` family: `BINARY`, `VARBINARY`.
pub fn is_binary_string(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Binary(_) | TypeKind::Varbinary(_))
}

/// `INTEGER_NUMERIC` family: `TINYINT`, `SMALLINT`, `INT`, `BIGINT`.
pub fn is_integer(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int | TypeKind::BigInt
    )
}

/// `EXACT_NUMERIC` family: the integers and `DECIMAL`.
pub fn is_exact_numeric(t: &DataType) -> bool {
    is_integer(t) || matches!(t.kind, TypeKind::Decimal(..))
}

/// `DECIMAL`.
pub fn is_decimal(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Decimal(..))
}

/// `APPROXIMATE_NUMERIC` family: `FLOAT`, `DOUBLE`.
pub fn is_approximate_numeric(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Float | TypeKind::Double)
}

/// `NUMERIC` family.
pub fn is_numeric(t: &DataType) -> bool {
    is_exact_numeric(t) || is_approximate_numeric(t)
}

/// `TIMESTAMP` family: `TIMESTAMP`, `TIMESTAMP_LTZ`.
pub fn is_timestamp(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_))
}

/// `DATETIME` family: `DATE`, `TIME`, the timestamps.
pub fn is_datetime(t: &DataType) -> bool {
    is_timestamp(t) || matches!(t.kind, TypeKind::Date | TypeKind::Time(_))
}

/// `INTERVAL` family.
pub fn is_interval(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::IntervalYearMonth | TypeKind::IntervalDayTime
    )
}

/// `CONSTRUCTED` family: `ARRAY`, `MULTISET`, `MAP`, `ROW`.
pub fn is_constructed(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::Array(_) | TypeKind::Multiset(_) | TypeKind::Map(..) | TypeKind::Row(_)
    )
}

/// The untyped `NULL` literal's type.
pub fn is_null_type(t: &DataType) -> bool {
    matches!(t.kind, TypeKind::Null)
}

/// Flink's `LogicalTypeChecks.getPrecision`: digits of numeric types, fractional seconds of
/// time types; `None` for types without a precision.
pub fn precision(t: &DataType) -> Option<u8> {
    match t.kind {
        TypeKind::TinyInt => Some(3),
        TypeKind::SmallInt => Some(5),
        TypeKind::Int => Some(10),
        TypeKind::BigInt => Some(19),
        TypeKind::Decimal(p, _) => Some(p),
        TypeKind::Float => Some(7),
        TypeKind::Double => Some(15),
        TypeKind::Time(p) | TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) => Some(p),
        _ => None,
    }
}

/// Scale of an exact numeric type (0 for integers).
pub fn scale(t: &DataType) -> Option<i8> {
    match t.kind {
        TypeKind::Decimal(_, s) => Some(s),
        _ if is_integer(t) => Some(0),
        _ => None,
    }
}

/// Length of a character or binary string type.
pub fn length(t: &DataType) -> Option<u32> {
    match t.kind {
        TypeKind::Char(n) | TypeKind::Varchar(n) | TypeKind::Binary(n) | TypeKind::Varbinary(n) => {
            Some(n)
        }
        _ => None,
    }
}

/// Same type root (ignoring parameters such as length or precision, and nullability).
fn same_root(a: &DataType, b: &DataType) -> bool {
    std::mem::discriminant(&a.kind) == std::mem::discriminant(&b.kind)
}

/// Equality ignoring nullability (Flink's `a.copy(true).equals(b.copy(true))`), applied deeply
/// only at the top level as Flink does.
fn equal_ignoring_nullability(a: &DataType, b: &DataType) -> bool {
    a.kind == b.kind
}

/// Flink's `LogicalTypeCasts.supportsImplicitCast`: whether `source` widens safely to `target`.
/// A nullable source does not fit a `NOT NULL` target.
pub fn supports_implicit_cast(source: &DataType, target: &DataType) -> bool {
    supports_casting(source, target, false)
}

/// Flink's `LogicalTypeCasts.supportsExplicitCast`: whether `CAST(source AS target)` is valid.
pub fn supports_explicit_cast(source: &DataType, target: &DataType) -> bool {
    supports_casting(source, target, true)
}

fn supports_casting(source: &DataType, target: &DataType, explicit: bool) -> bool {
    if is_unknown(source) || is_unknown(target) {
        return true;
    }
    // A NOT NULL type cannot store a NULL type (but an explicit cast may assert it).
    if source.nullable && !target.nullable && !explicit {
        return false;
    }
    if equal_ignoring_nullability(source, target) || is_null_type(source) {
        return true;
    }
    if is_interval(source) && is_exact_numeric(target)
        || is_exact_numeric(source) && is_interval(target)
    {
        // Flink allows this only for single-field intervals (e.g. `INTERVAL DAY`). Riffle's
        // interval types do not keep their resolution, so only an explicit cast is accepted.
        return explicit;
    }
    if is_constructed(source) || is_constructed(target) {
        return supports_constructed_casting(source, target, explicit);
    }
    if matches!(source.kind, TypeKind::Raw(_)) || matches!(target.kind, TypeKind::Raw(_)) {
        return false;
    }
    implicit_rule(source, target) || explicit && explicit_rule(source, target)
}

fn supports_constructed_casting(source: &DataType, target: &DataType, explicit: bool) -> bool {
    use TypeKind::*;
    match (&source.kind, &target.kind) {
        (Array(a), Array(b)) | (Multiset(a), Multiset(b)) => supports_casting(a, b, explicit),
        (Map(k1, v1), Map(k2, v2)) => {
            supports_casting(k1, k2, explicit) && supports_casting(v1, v2, explicit)
        }
        (Row(f1), Row(f2)) => {
            f1.len() == f2.len()
                && f1
                    .iter()
                    .zip(f2)
                    .all(|(a, b)| supports_casting(&a.data_type, &b.data_type, explicit))
        }
        // Flink's cast rules print constructed values as strings (`CAST(row AS STRING)`).
        (_, Char(_) | Varchar(_)) => explicit,
        _ => false,
    }
}

/// Flink's implicit casting table (`castTo(X).implicitFrom(...)`).
fn implicit_rule(source: &DataType, target: &DataType) -> bool {
    use TypeKind::*;
    let s = &source.kind;
    match target.kind {
        Char(_) => matches!(s, Char(_)),
        Varchar(_) => is_character_string(source),
        Boolean => matches!(s, Boolean),
        Binary(_) => matches!(s, Binary(_)),
        Varbinary(_) => is_binary_string(source),
        Decimal(..) | Double => is_numeric(source),
        TinyInt => matches!(s, TinyInt),
        SmallInt => matches!(s, TinyInt | SmallInt),
        Int => matches!(s, TinyInt | SmallInt | Int),
        BigInt => matches!(s, TinyInt | SmallInt | Int | BigInt),
        Float => matches!(s, TinyInt | SmallInt | Int | BigInt | Float | Decimal(..)),
        Date => matches!(s, Date | Timestamp(_)),
        Time(_) => matches!(s, Time(_) | Timestamp(_)),
        Timestamp(_) | TimestampLtz(_) => is_timestamp(source),
        IntervalYearMonth => matches!(s, IntervalYearMonth),
        IntervalDayTime => matches!(s, IntervalDayTime),
        _ => same_root(source, target),
    }
}

/// Flink's explicit casting table (`castTo(X).explicitFrom...(...)`), beyond the implicit one.
fn explicit_rule(source: &DataType, target: &DataType) -> bool {
    use TypeKind::*;
    let s = &source.kind;
    let bool_or_ts = matches!(s, Boolean | Timestamp(_) | TimestampLtz(_));
    match target.kind {
        // CHARACTER_STRING accepts every PREDEFINED type.
        Char(_) | Varchar(_) => true,
        Boolean => is_character_string(source) || is_numeric(source),
        Binary(_) | Varbinary(_) => is_character_string(source) || is_binary_string(source),
        Decimal(..) | TinyInt | SmallInt | Int | BigInt => {
            is_numeric(source) || is_character_string(source) || is_interval(source) || bool_or_ts
        }
        Float | Double => is_numeric(source) || is_character_string(source) || bool_or_ts,
        Date => is_timestamp(source) || is_character_string(source) || is_binary_string(source),
        Time(_) => {
            matches!(s, Time(_))
                || is_timestamp(source)
                || is_character_string(source)
                || is_binary_string(source)
        }
        Timestamp(_) | TimestampLtz(_) => {
            is_datetime(source)
                || is_character_string(source)
                || is_binary_string(source)
                || is_numeric(source)
        }
        IntervalYearMonth | IntervalDayTime => {
            is_exact_numeric(source) || is_character_string(source)
        }
        _ => false,
    }
}

/// Flink's `LogicalTypeMerging.findCommonType`: the most general type all `types` cast to
/// implicitly, e.g. `[INT, BIGINT, DECIMAL(2, 2)]` → `DECIMAL(21, 2)`. `None` when there is
/// none (or when only `NULL`s are given). Unknown inputs make the result unknown.
pub fn common_type(types: &[DataType]) -> Option<DataType> {
    if types.is_empty() {
        return None;
    }
    if types.iter().any(is_unknown) {
        return Some(unknown());
    }
    let has_raw = types.iter().any(|t| matches!(t.kind, TypeKind::Raw(_)));
    let has_null = types.iter().any(is_null_type);
    let any_nullable = types.iter().any(|t| t.nullable);
    let normalized: Vec<DataType> = types
        .iter()
        .map(|t| t.clone().with_nullable(true))
        .collect();
    let found = common_nullable_type(&normalized, has_raw, has_null)
        .or_else(|| common_castable_type(&normalized))?;
    let found = found.with_nullable(any_nullable);
    // NULL is reserved for untyped literals only.
    if is_null_type(&found) {
        return None;
    }
    Some(found)
}

fn common_castable_type(types: &[DataType]) -> Option<DataType> {
    let mut result = types.first()?.clone();
    for t in types {
        if is_null_type(t) {
            continue;
        }
        if supports_implicit_cast(&result, t) {
            result = t.clone();
        } else if !supports_implicit_cast(t, &result) {
            return None;
        }
    }
    Some(result)
}

fn common_nullable_type(types: &[DataType], has_raw: bool, has_null: bool) -> Option<DataType> {
    use TypeKind::*;
    if has_raw {
        let first = types.first()?;
        return types.iter().all(|t| t == first).then(|| first.clone());
    }
    let mut result: Option<DataType> = None;
    for t in types {
        if is_null_type(t) {
            continue;
        }
        let current = result.get_or_insert_with(|| t.clone()).clone();
        if let Some(pattern) = common_type_pattern(&current, t) {
            result = Some(pattern);
            continue;
        }
        match t.kind {
            Array(_) | Multiset(_) | Map(..) | Row(_) => return common_children_type(types),
            _ => {}
        }
        if !similar_types(&current, t) {
            return None;
        }
        let next = if is_character_string(t) || is_binary_string(t) {
            let len = length(&current).unwrap_or(0).max(length(t).unwrap_or(0));
            match (&current.kind, &t.kind) {
                // Variable-length types stay variable length.
                (Varchar(_), _) => Varchar(len),
                (Varbinary(_), _) => Varbinary(len),
                // Different fixed lengths widen to variable length (Flink deviates from the
                // SQL standard here to avoid padding).
                (Char(a), _) if Some(*a) != length(t) => Varchar(len),
                (Binary(a), _) if Some(*a) != length(t) => Varbinary(len),
                _ => string_kind_like(&t.kind, len),
            }
        } else if is_exact_numeric(t) {
            if is_exact_numeric(&current) {
                common_exact_numeric(&current, t)
            } else if is_approximate_numeric(&current) {
                if matches!(t.kind, Decimal(..)) {
                    Double
                } else {
                    current.kind.clone()
                }
            } else {
                return None;
            }
        } else if is_approximate_numeric(t) {
            if is_approximate_numeric(&current) {
                if matches!(current.kind, Double) || matches!(t.kind, Double) {
                    Double
                } else {
                    current.kind.clone()
                }
            } else if is_exact_numeric(&current) {
                if matches!(current.kind, Decimal(..)) {
                    Double
                } else {
                    t.kind.clone()
                }
            } else {
                return None;
            }
        } else if matches!(t.kind, Date) {
            if matches!(current.kind, Date) {
                Date
            } else {
                return None;
            }
        } else if let Time(p) = t.kind {
            match current.kind {
                Time(q) => Time(p.max(q)),
                _ => return None,
            }
        } else if is_timestamp(t) {
            if !is_timestamp(&current) {
                return None;
            }
            let p = precision(&current)
                .unwrap_or(0)
                .max(precision(t).unwrap_or(0));
            if matches!(current.kind, TimestampLtz(_)) || matches!(t.kind, TimestampLtz(_)) {
                TimestampLtz(p)
            } else {
                Timestamp(p)
            }
        } else if is_interval(t) {
            // `similar_types` guarantees the same interval root.
            t.kind.clone()
        } else {
            return None;
        };
        result = Some(DataType::nullable(next));
    }
    match result {
        None if has_null => Some(DataType::nullable(Null)),
        other => other,
    }
}

fn string_kind_like(kind: &TypeKind, len: u32) -> TypeKind {
    match kind {
        TypeKind::Char(_) => TypeKind::Char(len),
        TypeKind::Binary(_) => TypeKind::Binary(len),
        TypeKind::Varbinary(_) => TypeKind::Varbinary(len),
        _ => TypeKind::Varchar(len),
    }
}

/// Flink's `findCommonTypePattern`: datetime ± interval and datetime ± exact numeric keep the
/// datetime type.
fn common_type_pattern(result: &DataType, t: &DataType) -> Option<DataType> {
    let date_or_ts = |x: &DataType| is_timestamp(x) || matches!(x.kind, TypeKind::Date);
    if is_datetime(result) && is_interval(t) {
        Some(result.clone())
    } else if is_interval(result) && is_datetime(t) {
        Some(t.clone())
    } else if date_or_ts(result) && is_exact_numeric(t) {
        Some(result.clone())
    } else if is_exact_numeric(result) && date_or_ts(t) {
        Some(t.clone())
    } else {
        None
    }
}

fn similar_types(a: &DataType, b: &DataType) -> bool {
    is_character_string(a) && is_character_string(b)
        || is_binary_string(a) && is_binary_string(b)
        || is_numeric(a) && is_numeric(b)
        || matches!(a.kind, TypeKind::Time(_)) && matches!(b.kind, TypeKind::Time(_))
        || is_timestamp(a) && is_timestamp(b)
        || same_root(a, b)
}

fn common_children_type(types: &[DataType]) -> Option<DataType> {
    use TypeKind::*;
    let first = types.iter().find(|t| !is_null_type(t))?;
    let children = |t: &DataType| -> Option<Vec<DataType>> {
        match &t.kind {
            Array(e) | Multiset(e) => Some(vec![(**e).clone()]),
            Map(k, v) => Some(vec![(**k).clone(), (**v).clone()]),
            Row(fields) => Some(fields.iter().map(|f| f.data_type.clone()).collect()),
            _ => None,
        }
    };
    let first_children = children(first)?;
    let mut columns: Vec<Vec<DataType>> = vec![Vec::new(); first_children.len()];
    for t in types.iter().filter(|t| !is_null_type(t)) {
        if !same_root(first, t) {
            return None;
        }
        let c = children(t)?;
        if c.len() != first_children.len() {
            return None;
        }
        for (column, child) in columns.iter_mut().zip(c) {
            column.push(child);
        }
    }
    let merged = columns
        .iter()
        .map(|c| common_type(c))
        .collect::<Option<Vec<_>>>()?;
    let kind = match &first.kind {
        Array(_) => Array(Box::new(merged.first()?.clone())),
        Multiset(_) => Multiset(Box::new(merged.first()?.clone())),
        Map(..) => Map(
            Box::new(merged.first()?.clone()),
            Box::new(merged.get(1)?.clone()),
        ),
        Row(fields) => Row(fields
            .iter()
            .zip(merged)
            .map(|(f, data_type)| RowField {
                name: f.name.clone(),
                data_type,
                description: f.description.clone(),
            })
            .collect()),
        _ => return None,
    };
    Some(DataType::nullable(kind))
}

/// Flink's `createCommonExactNumericType`: integers widen to the larger one; with a `DECIMAL`
/// the result keeps the most whole digits and the largest scale that still fits.
fn common_exact_numeric(a: &DataType, b: &DataType) -> TypeKind {
    if a.kind == b.kind {
        return a.kind.clone();
    }
    if is_integer(a) && is_integer(b) {
        return if precision(b) > precision(a) {
            b.kind.clone()
        } else {
            a.kind.clone()
        };
    }
    let (p1, s1) = decimal_parts(a);
    let (p2, s2) = decimal_parts(b);
    let max = i32::from(MAX_DECIMAL_PRECISION);
    let d = (p1 - s1).max(p2 - s2).min(max);
    let s = s1.max(s2).min(max - d);
    decimal_kind(d + s, s)
}

/// Precision and scale of an exact numeric type as Calcite sees them (`INT` is `(10, 0)`).
pub fn decimal_parts(t: &DataType) -> (i32, i32) {
    (
        i32::from(precision(t).unwrap_or(MAX_DECIMAL_PRECISION)),
        i32::from(scale(t).unwrap_or(0)),
    )
}

fn decimal_kind(precision: i32, scale: i32) -> TypeKind {
    let p = precision.clamp(1, i32::from(MAX_DECIMAL_PRECISION));
    let s = scale.clamp(0, p);
    // Both values are clamped into 0..=38, so the conversions cannot fail.
    TypeKind::Decimal(
        u8::try_from(p).unwrap_or(MAX_DECIMAL_PRECISION),
        i8::try_from(s).unwrap_or(0),
    )
}

/// Flink's `adjustPrecisionScale`: above precision 38 the scale is reduced (Hive/Spark style) to
/// keep the integral digits, but never below `min(scale, 6)`.
fn adjust_precision_scale(precision: i32, scale: i32) -> TypeKind {
    let max = i32::from(MAX_DECIMAL_PRECISION);
    if precision <= max {
        return decimal_kind(precision, scale);
    }
    let digits = precision - scale;
    let min_scale = scale.min(MINIMUM_ADJUSTED_SCALE);
    decimal_kind(max, (max - digits).max(min_scale))
}

/// `e1 + e2`, `e1 - e2` on decimals: precision `max(s1, s2) + max(p1-s1, p2-s2) + 1`, scale
/// `max(s1, s2)` (`LogicalTypeMerging.findAdditionDecimalType`).
pub fn decimal_addition(a: &DataType, b: &DataType) -> TypeKind {
    let ((p1, s1), (p2, s2)) = (decimal_parts(a), decimal_parts(b));
    let s = s1.max(s2);
    adjust_precision_scale((p1 - s1).max(p2 - s2) + s + 1, s)
}

/// `e1 * e2` on decimals: precision `p1 + p2 + 1`, scale `s1 + s2`
/// (`LogicalTypeMerging.findMultiplicationDecimalType`).
pub fn decimal_multiplication(a: &DataType, b: &DataType) -> TypeKind {
    let ((p1, s1), (p2, s2)) = (decimal_parts(a), decimal_parts(b));
    adjust_precision_scale(p1 + p2 + 1, s1 + s2)
}

/// `e1 / e2` on decimals: scale `max(6, s1 + p2 + 1)`, precision `p1 - s1 + s2 + scale`
/// (`LogicalTypeMerging.findDivisionDecimalType`).
pub fn decimal_division(a: &DataType, b: &DataType) -> TypeKind {
    let ((p1, s1), (p2, s2)) = (decimal_parts(a), decimal_parts(b));
    let s = 6.max(s1 + p2 + 1);
    adjust_precision_scale(p1 - s1 + s2 + s, s)
}

/// `e1 % e2` on decimals: scale `max(s1, s2)`, precision `min(p1-s1, p2-s2) + scale`
/// (`LogicalTypeMerging.findModuloDecimalType`).
pub fn decimal_modulo(a: &DataType, b: &DataType) -> TypeKind {
    let ((p1, s1), (p2, s2)) = (decimal_parts(a), decimal_parts(b));
    let s = s1.max(s2);
    adjust_precision_scale((p1 - s1).min(p2 - s2) + s, s)
}

/// `ROUND(decimal, r)` (`LogicalTypeMerging.findRoundDecimalType`).
pub fn decimal_round(t: &DataType, round: i32) -> TypeKind {
    let (p, s) = decimal_parts(t);
    if round >= s {
        decimal_kind(p, s)
    } else if round < 0 {
        decimal_kind((1 + p - s).min(i32::from(MAX_DECIMAL_PRECISION)), 0)
    } else {
        decimal_kind(1 + p - s + round, round)
    }
}

/// `SUM(x)`: `DECIMAL(38, s)` for decimals, the argument type otherwise
/// (`LogicalTypeMerging.findSumAggType`).
pub fn sum_type(arg: &DataType) -> DataType {
    match arg.kind {
        TypeKind::Decimal(_, s) => DataType {
            kind: decimal_kind(38, i32::from(s)),
            nullable: arg.nullable,
        },
        _ => arg.clone(),
    }
}

/// `AVG(x)` (and Calcite's other average-style aggregates such as `STDDEV_POP`): for
/// decimals `DECIMAL(38, max(6, s))`, otherwise the argument type
/// (`LogicalTypeMerging.findAvgAggType`).
pub fn avg_type(arg: &DataType) -> DataType {
    match arg.kind {
        TypeKind::Decimal(..) => {
            let big = DataType::nullable(decimal_kind(38, i32::from(scale(arg).unwrap_or(0))));
            let count = DataType::nullable(decimal_kind(20, 0));
            DataType {
                kind: decimal_division(&big, &count),
                nullable: arg.nullable,
            }
        }
        _ => arg.clone(),
    }
}

/// What Flink's `TYPEOF(x)` returns for a value of type `t`: the summary string
/// (`STRING`, `TIMESTAMP_LTZ(3)`), or with `serializable` the form `TYPEOF(x, TRUE)` gives
/// (`VARCHAR(2147483647)`, `TIMESTAMP(3) WITH LOCAL TIME ZONE`). `None` when Riffle does not
/// know the exact type (unknown parts, `RAW`).
pub fn type_name_of(t: &DataType, serializable: bool) -> Option<String> {
    use TypeKind::*;
    let root = match &t.kind {
        Unknown(_) | Raw(_) => return None,
        // Flink's planner turns every interval into these two logical types.
        IntervalYearMonth => "INTERVAL MONTH".to_string(),
        IntervalDayTime => "INTERVAL SECOND(3)".to_string(),
        Varchar(n) if serializable => format!("VARCHAR({n})"),
        Varbinary(n) if serializable => format!("VARBINARY({n})"),
        TimestampLtz(p) if serializable => format!("TIMESTAMP({p}) WITH LOCAL TIME ZONE"),
        Array(e) => format!("ARRAY<{}>", type_name_of(e, serializable)?),
        Multiset(e) => format!("MULTISET<{}>", type_name_of(e, serializable)?),
        Map(k, v) => format!(
            "MAP<{}, {}>",
            type_name_of(k, serializable)?,
            type_name_of(v, serializable)?
        ),
        Row(fields) => {
            let mut parts = Vec::with_capacity(fields.len());
            for f in fields {
                let mut part = format!(
                    "`{}` {}",
                    f.name.replace('`', "``"),
                    type_name_of(&f.data_type, serializable)?
                );
                if let Some(desc) = &f.description {
                    part.push_str(&format!(" '{}'", desc.replace('\'', "''")));
                }
                parts.push(part);
            }
            format!("ROW<{}>", parts.join(", "))
        }
        // The NULL type has no nullability suffix.
        Null => return Some("NULL".to_string()),
        other => other.to_string(),
    };
    Some(if t.nullable {
        root
    } else {
        format!("{root} NOT NULL")
    })
}

/// The type as Calcite's validator messages spell it (`VARCHAR(2147483647)` for `STRING`,
/// `INTEGER` for `INT`), used in `Cannot apply 'f' to arguments of type ...`.
pub fn calcite_name(t: &DataType) -> String {
    use TypeKind::*;
    match &t.kind {
        Varchar(n) => format!("VARCHAR({n})"),
        Varbinary(n) => format!("VARBINARY({n})"),
        Int => "INTEGER".to_string(),
        TimestampLtz(p) => format!("TIMESTAMP_WITH_LOCAL_TIME_ZONE({p})"),
        Array(e) => format!("{} ARRAY", calcite_name(e)),
        Multiset(e) => format!("{} MULTISET", calcite_name(e)),
        Map(k, v) => format!("({}, {}) MAP", calcite_name(k), calcite_name(v)),
        _ => t.clone().with_nullable(true).to_string(),
    }
}

/// The SQL type name of a type's root as Flink's implicit-conversion message spells it
/// (`CHAR`, `VARCHAR`, `INTEGER`, `DECIMAL`, ...).
pub fn sql_type_name(t: &DataType) -> String {
    let name = calcite_name(t);
    match name.split_once('(') {
        Some((root, _)) => root.to_string(),
        None => name,
    }
}

/// Flink's type-family spelling used in `No match found for function signature f(<FAMILY>)`.
pub fn family_name(t: &DataType) -> &'static str {
    use TypeKind::*;
    match t.kind {
        Char(_) | Varchar(_) => "CHARACTER",
        Boolean => "BOOLEAN",
        Binary(_) | Varbinary(_) => "BINARY",
        TinyInt | SmallInt | Int | BigInt | Decimal(..) | Float | Double => "NUMERIC",
        Date => "DATE",
        Time(_) => "TIME",
        Timestamp(_) => "TIMESTAMP",
        TimestampLtz(_) => "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
        IntervalYearMonth => "INTERVAL_YEAR_MONTH",
        IntervalDayTime => "INTERVAL_DAY_TIME",
        Array(_) => "ARRAY",
        Multiset(_) => "MULTISET",
        Map(..) => "MAP",
        Row(_) => "ROW",
        Raw(_) => "RAW",
        Null => "NULL",
        Unknown(_) => "ANY",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TypeKind::*;

    fn n(kind: TypeKind) -> DataType {
        nullable(kind)
    }

    #[test]
    fn implicit_casts_follow_flink_table() {
        // LogicalTypeCasts: BIGINT implicitFrom(TINYINT, SMALLINT, INTEGER, BIGINT).
        assert!(supports_implicit_cast(&n(Int), &n(BigInt)));
        assert!(!supports_implicit_cast(&n(BigInt), &n(Int)));
        // DECIMAL implicitFromFamily(NUMERIC), FLOAT implicitFrom(..., DECIMAL).
        assert!(supports_implicit_cast(&n(Double), &n(Decimal(10, 2))));
        assert!(supports_implicit_cast(&n(Decimal(10, 2)), &n(Float)));
        // VARCHAR implicitFromFamily(CHARACTER_STRING), but not from numbers.
        assert!(supports_implicit_cast(&n(Char(3)), &string()));
        assert!(!supports_implicit_cast(&n(Int), &string()));
        // TIMESTAMP <-> TIMESTAMP_LTZ both ways (Flink 1.15+).
        assert!(supports_implicit_cast(
            &n(TimestampLtz(3)),
            &n(Timestamp(3))
        ));
        assert!(supports_implicit_cast(
            &n(Timestamp(3)),
            &n(TimestampLtz(6))
        ));
        // A nullable type does not fit a NOT NULL one.
        assert!(!supports_implicit_cast(&n(Int), &not_null(Int)));
        assert!(supports_implicit_cast(&not_null(Int), &n(Int)));
        // NULL casts to anything.
        assert!(supports_implicit_cast(&n(Null), &n(Date)));
    }

    #[test]
    fn explicit_casts_follow_flink_table() {
        assert!(supports_explicit_cast(&string(), &n(Int)));
        assert!(supports_explicit_cast(&n(Int), &string()));
        assert!(supports_explicit_cast(&n(BigInt), &n(TimestampLtz(3))));
        assert!(!supports_explicit_cast(&n(Boolean), &n(Date)));
        assert!(!supports_explicit_cast(&n(Date), &n(Int)));
        assert!(supports_explicit_cast(
            &n(Array(Box::new(n(Int)))),
            &n(Array(Box::new(string())))
        ));
    }

    #[test]
    fn common_type_matches_logical_type_merging() {
        // Javadoc example of findCommonType: [INT, BIGINT, DECIMAL(2, 2)] -> DECIMAL(21, 2).
        let t = common_type(&[n(Int), n(BigInt), n(Decimal(2, 2))]);
        assert_eq!(t, Some(n(Decimal(21, 2))));
        // Different CHAR lengths widen to VARCHAR.
        assert_eq!(
            common_type(&[not_null(Char(3)), not_null(Char(5))]),
            Some(not_null(Varchar(5)))
        );
        assert_eq!(
            common_type(&[not_null(Char(3)), not_null(Char(3))]),
            Some(not_null(Char(3)))
        );
        // Exact + approximate -> approximate; DECIMAL + FLOAT -> DOUBLE.
        assert_eq!(common_type(&[n(Int), n(Float)]), Some(n(Float)));
        assert_eq!(common_type(&[n(Decimal(5, 2)), n(Float)]), Some(n(Double)));
        // NULL literal makes the result nullable.
        assert_eq!(common_type(&[not_null(Int), n(Null)]), Some(n(Int)));
        assert_eq!(common_type(&[n(Null)]), None);
        // TIMESTAMP + TIMESTAMP_LTZ -> TIMESTAMP_LTZ with the larger precision.
        assert_eq!(
            common_type(&[n(Timestamp(6)), n(TimestampLtz(3))]),
            Some(n(TimestampLtz(6)))
        );
        assert_eq!(common_type(&[n(Int), string()]), None);
        assert_eq!(common_type(&[n(Boolean), n(Int)]), None);
    }

    #[test]
    fn decimal_derivation_matches_flink() {
        let d = |p, s| n(Decimal(p, s));
        assert_eq!(decimal_addition(&d(5, 2), &d(10, 4)), Decimal(11, 4));
        assert_eq!(decimal_addition(&d(5, 2), &n(Int)), Decimal(13, 2));
        assert_eq!(decimal_multiplication(&d(5, 2), &d(10, 4)), Decimal(16, 6));
        assert_eq!(decimal_division(&d(5, 2), &d(10, 4)), Decimal(20, 13));
        assert_eq!(decimal_modulo(&d(5, 2), &d(10, 4)), Decimal(7, 4));
        // adjustPrecisionScale: (38, 8) + (32, 8) -> (38, 7).
        assert_eq!(decimal_addition(&d(38, 8), &d(32, 8)), Decimal(38, 7));
        // SUM(DECIMAL(p, s)) -> DECIMAL(38, s); AVG -> DECIMAL(38, max(6, s)).
        assert_eq!(sum_type(&d(10, 2)), d(38, 2));
        assert_eq!(avg_type(&d(10, 2)), d(38, 6));
        assert_eq!(avg_type(&d(10, 8)), d(38, 8));
        assert_eq!(avg_type(&n(Int)), n(Int));
        assert_eq!(decimal_round(&d(10, 4), 2), Decimal(9, 2));
    }
}
