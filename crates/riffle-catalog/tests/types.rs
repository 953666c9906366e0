//! Type inference: each expression's inferred type against Flink's rules (the rule is cited in
//! the comment of each case).

mod common;

use common::{analyze, render, TYPES_TABLE};

/// The types of `SELECT <exprs> FROM t [rest]`, as Flink prints them; the query must be valid.
fn types_of(exprs: &str, rest: &str) -> Vec<String> {
    let sql = format!("{TYPES_TABLE}SELECT {exprs} FROM t {rest};");
    let analysis = analyze(&sql);
    assert!(!analysis.has_errors(), "{}", render(&sql, &analysis));
    let schema = analysis.statements[1]
        .output
        .as_ref()
        .expect("query schema");
    schema
        .columns
        .iter()
        .map(|f| f.data_type.to_string())
        .collect()
}

fn type_of(expr: &str) -> String {
    types_of(expr, "").remove(0)
}

#[test]
fn literals() {
    // Calcite SqlNumericLiteral: integer literals are INTEGER if they fit, else BIGINT, else DECIMAL.
    assert_eq!(type_of("1"), "INT NOT NULL");
    assert_eq!(type_of("2147483648"), "BIGINT NOT NULL");
    assert_eq!(type_of("99999999999999999999"), "DECIMAL(20, 0) NOT NULL");
    // SqlLiteral.createExactNumeric: precision = digits written, scale = digits after the point.
    assert_eq!(type_of("1.5"), "DECIMAL(2, 1) NOT NULL");
    assert_eq!(type_of("0.05"), "DECIMAL(3, 2) NOT NULL");
    // Approximate literals (with an exponent) are DOUBLE.
    assert_eq!(type_of("1e2"), "DOUBLE NOT NULL");
    // Character literals are CHAR(n) NOT NULL.
    assert_eq!(type_of("'abc'"), "CHAR(3) NOT NULL");
    assert_eq!(type_of("TRUE"), "BOOLEAN NOT NULL");
    // Typed literals: precision from the fractional digits written.
    assert_eq!(type_of("DATE '2024-01-01'"), "DATE NOT NULL");
    assert_eq!(
        type_of("TIMESTAMP '2024-01-01 00:00:00'"),
        "TIMESTAMP(0) NOT NULL"
    );
    assert_eq!(
        type_of("TIMESTAMP '2024-01-01 00:00:00.123'"),
        "TIMESTAMP(3) NOT NULL"
    );
    assert_eq!(
        type_of("INTERVAL '5' SECOND"),
        "INTERVAL DAY TO SECOND NOT NULL"
    );
}

#[test]
fn arithmetic() {
    // Calcite NULLABLE_SUM / PRODUCT_NULLABLE fall back to LEAST_RESTRICTIVE for non-decimals.
    assert_eq!(type_of("i + i"), "INT");
    assert_eq!(type_of("i * b"), "BIGINT");
    assert_eq!(type_of("ti + ti"), "TINYINT");
    assert_eq!(type_of("nn + 1"), "INT NOT NULL");
    // Flink's DIVIDE keeps integer division for integers (INT / INT -> INT).
    assert_eq!(type_of("i / i"), "INT");
    assert_eq!(type_of("b / i"), "BIGINT");
    // Calcite NULLABLE_MOD: ARG1 for non-decimals.
    assert_eq!(type_of("b % i"), "INT");
    // Exact + approximate: the approximate type (LogicalTypeMerging.findCommonType).
    assert_eq!(type_of("i + f"), "FLOAT");
    assert_eq!(type_of("d + db"), "DOUBLE");
    // Decimal rules of LogicalTypeMerging (FlinkTypeSystem.deriveDecimal*Type):
    // +: p = max(s1, s2) + max(p1-s1, p2-s2) + 1, s = max(s1, s2).
    assert_eq!(type_of("d + d2"), "DECIMAL(12, 3)");
    // INT counts as DECIMAL(10, 0).
    assert_eq!(type_of("d + i"), "DECIMAL(13, 2)");
    // *: p = p1 + p2 + 1, s = s1 + s2.
    assert_eq!(type_of("d * d2"), "DECIMAL(16, 5)");
    // /: s = max(6, s1 + p2 + 1), p = p1 - s1 + s2 + s.
    assert_eq!(type_of("d / d2"), "DECIMAL(19, 8)");
    // %: s = max(s1, s2), p = min(p1-s1, p2-s2) + s.
    assert_eq!(type_of("d % d2"), "DECIMAL(5, 3)");
    // Decimal literal arithmetic: DECIMAL(2, 1) * INT.
    assert_eq!(type_of("1.5 * i"), "DECIMAL(13, 1)");
    // Unary minus keeps the type.
    assert_eq!(type_of("-d"), "DECIMAL(10, 2)");
    // Datetime +/- interval keeps the datetime type.
    assert_eq!(type_of("ts - INTERVAL '5' SECOND"), "TIMESTAMP(3)");
    assert_eq!(type_of("dt + INTERVAL '1' DAY"), "DATE");
}

#[test]
fn comparisons_and_logic() {
    // Comparisons are BOOLEAN, nullable when an operand is.
    assert_eq!(type_of("i > 1"), "BOOLEAN");
    assert_eq!(type_of("nn > 1"), "BOOLEAN NOT NULL");
    assert_eq!(type_of("bo AND i = 1"), "BOOLEAN");
    // IS NULL is never NULL.
    assert_eq!(type_of("i IS NULL"), "BOOLEAN NOT NULL");
    assert_eq!(type_of("s LIKE 'a%'"), "BOOLEAN");
    assert_eq!(type_of("i BETWEEN 1 AND 2"), "BOOLEAN");
    assert_eq!(type_of("i IN (1, 2)"), "BOOLEAN");
}

#[test]
fn strings() {
    // Calcite DYADIC_STRING_SUM_PRECISION_NULLABLE: lengths add; CHAR || CHAR stays CHAR.
    assert_eq!(type_of("'ab' || 'c'"), "CHAR(3) NOT NULL");
    assert_eq!(type_of("v || c"), "VARCHAR(13)");
    assert_eq!(type_of("s || 'x'"), "STRING");
    // UPPER returns its argument's type (functions.toml: ARG0).
    assert_eq!(type_of("UPPER(s)"), "STRING");
    assert_eq!(type_of("CHAR_LENGTH(s)"), "INT");
    assert_eq!(type_of("CONCAT(s, v)"), "STRING");
    // Scalar functions are NULL only when an argument may be (Calcite `*_NULLABLE`).
    assert_eq!(type_of("UPPER('abc')"), "CHAR(3) NOT NULL");
    assert_eq!(type_of("CHAR_LENGTH('abc')"), "INT NOT NULL");
    assert_eq!(type_of("MOD(i, 3)"), "INT");
    assert_eq!(type_of("SUBSTRING(v FROM 2)"), "VARCHAR(10)");
    assert_eq!(type_of("TRIM(s)"), "STRING");
    assert_eq!(type_of("POSITION('a' IN s)"), "INT");
}

#[test]
fn casts_and_conditionals() {
    // CAST yields the target type with the operand's nullability.
    assert_eq!(type_of("CAST(i AS BIGINT)"), "BIGINT");
    assert_eq!(type_of("CAST(nn AS STRING)"), "STRING NOT NULL");
    assert_eq!(type_of("CAST(s AS DECIMAL(10, 4))"), "DECIMAL(10, 4)");
    // ROUND / TRUNCATE narrow a decimal's scale (LogicalTypeMerging.findRoundDecimalType),
    // CEIL / FLOOR drop it (Calcite ARG0_OR_EXACT_NO_SCALE).
    assert_eq!(type_of("ROUND(d, 1)"), "DECIMAL(10, 1)");
    assert_eq!(type_of("ROUND(d)"), "DECIMAL(9, 0)");
    assert_eq!(type_of("ROUND(d, -1)"), "DECIMAL(9, 0)");
    assert_eq!(type_of("TRUNCATE(d, 1)"), "DECIMAL(10, 1)");
    assert_eq!(type_of("CEIL(d)"), "DECIMAL(10, 0)");
    assert_eq!(type_of("ROUND(db, 1)"), "DOUBLE");
    // TRY_CAST may always return NULL.
    assert_eq!(type_of("TRY_CAST(nn AS STRING)"), "STRING");
    // CASE: the common type of the branches; no ELSE makes it nullable.
    assert_eq!(type_of("CASE WHEN i > 0 THEN 1 ELSE 2 END"), "INT NOT NULL");
    assert_eq!(type_of("CASE WHEN i > 0 THEN 1 END"), "INT");
    assert_eq!(type_of("CASE WHEN i > 0 THEN i ELSE b END"), "BIGINT");
    assert_eq!(
        type_of("CASE WHEN i > 0 THEN 1 ELSE 2.5 END"),
        "DECIMAL(11, 1) NOT NULL"
    );
    // Different CHAR lengths widen to VARCHAR (FlinkTypeSystem converts ragged unions).
    assert_eq!(
        type_of("CASE WHEN i > 0 THEN 'a' ELSE 'bcd' END"),
        "VARCHAR(3) NOT NULL"
    );
    // COALESCE / IFNULL: least restrictive type (functions.toml: LEAST_RESTRICTIVE).
    assert_eq!(type_of("COALESCE(i, b)"), "BIGINT");
    assert_eq!(type_of("COALESCE(s, 'x')"), "STRING NOT NULL");
    // IF is NULL when its condition may be (compat-tests functions-conditional/coalesce_nullif_ifnull).
    assert_eq!(type_of("IF(bo, 1, 2)"), "INT");
    assert_eq!(type_of("IF(nn > 0, 'big', 'small')"), "VARCHAR(5) NOT NULL");
    assert_eq!(type_of("NULLIF(i, 0)"), "INT");
}

#[test]
fn temporal_functions() {
    assert_eq!(type_of("CURRENT_TIMESTAMP"), "TIMESTAMP_LTZ(3) NOT NULL");
    assert_eq!(type_of("LOCALTIMESTAMP"), "TIMESTAMP(3) NOT NULL");
    assert_eq!(type_of("CURRENT_DATE"), "DATE NOT NULL");
    assert_eq!(type_of("DATE_FORMAT(ts, 'yyyy-MM-dd')"), "STRING");
    assert_eq!(type_of("TO_TIMESTAMP(s)"), "TIMESTAMP(3)");
    assert_eq!(type_of("TO_TIMESTAMP_LTZ(b, 3)"), "TIMESTAMP_LTZ(3)");
    assert_eq!(type_of("UNIX_TIMESTAMP()"), "BIGINT NOT NULL");
    assert_eq!(type_of("UNIX_TIMESTAMP(s)"), "BIGINT");
    // EXTRACT returns BIGINT.
    assert_eq!(type_of("EXTRACT(HOUR FROM ts)"), "BIGINT");
    assert_eq!(type_of("FLOOR(ts TO HOUR)"), "TIMESTAMP(3)");
    assert_eq!(type_of("TIMESTAMPDIFF(DAY, ts, ts)"), "INT");
    assert_eq!(type_of("PROCTIME()"), "TIMESTAMP_LTZ(3) NOT NULL");
}

#[test]
fn collections_and_rows() {
    assert_eq!(type_of("arr[1]"), "INT");
    assert_eq!(type_of("m['k']"), "BIGINT");
    assert_eq!(type_of("r.x"), "INT");
    assert_eq!(type_of("CARDINALITY(arr)"), "INT");
    assert_eq!(type_of("ARRAY[1, 2]"), "ARRAY<INT NOT NULL> NOT NULL");
    assert_eq!(
        type_of("MAP['a', 1]"),
        "MAP<CHAR(1) NOT NULL, INT NOT NULL> NOT NULL"
    );
    assert_eq!(type_of("MAP_KEYS(m)"), "ARRAY<STRING>");
}

#[test]
fn aggregates() {
    // COUNT is BIGINT NOT NULL.
    assert_eq!(
        types_of("COUNT(*), COUNT(s)", ""),
        ["BIGINT NOT NULL", "BIGINT NOT NULL"]
    );
    // Calcite AGG_SUM: nullable without GROUP BY; LogicalTypeMerging.findSumAggType: integers keep
    // their type, DECIMAL(p, s) -> DECIMAL(38, s).
    assert_eq!(types_of("SUM(nn), SUM(d)", ""), ["INT", "DECIMAL(38, 2)"]);
    assert_eq!(types_of("SUM(nn)", "GROUP BY s"), ["INT NOT NULL"]);
    // findAvgAggType: integers keep their type; DECIMAL(p, s) -> DECIMAL(38, max(6, s)).
    assert_eq!(
        types_of("AVG(i), AVG(d), AVG(db)", ""),
        ["INT", "DECIMAL(38, 6)", "DOUBLE"]
    );
    // MIN/MAX return the argument type.
    assert_eq!(types_of("MIN(s), MAX(ts)", ""), ["STRING", "TIMESTAMP(3)"]);
    // STDDEV/VAR use Calcite's AVG-style return type (deriveAvgAggType).
    assert_eq!(
        types_of("STDDEV_POP(db), VAR_SAMP(i)", ""),
        ["DOUBLE", "INT"]
    );
    assert_eq!(types_of("LISTAGG(s)", ""), ["STRING"]);
}

#[test]
fn result_nullability_follows_each_function() {
    // nullable = "always": Flink's forceNullable / FlinkSqlOperatorTable's *_FORCE_NULLABLE
    // (these return NULL on bad input, so even literal arguments give a nullable result).
    assert_eq!(
        type_of("TO_TIMESTAMP('2024-01-01 00:00:00')"),
        "TIMESTAMP(3)"
    );
    assert_eq!(type_of("TO_DATE('2024-01-01')"), "DATE");
    assert_eq!(
        type_of("DATE_FORMAT(TIMESTAMP '2024-01-01 00:00:00', 'yyyy')"),
        "STRING"
    );
    assert_eq!(type_of("CHR(65)"), "STRING");
    // FlinkSqlOperatorTable ARG0_VARCHAR_FORCE_NULLABLE: the argument made varying and nullable.
    assert_eq!(type_of("SUBSTR('abc', 2)"), "VARCHAR(3)");
    assert_eq!(type_of("LEFT(c, 2)"), "VARCHAR(3)");
    assert_eq!(type_of("STR_TO_MAP('a=1')"), "MAP<STRING, STRING>");
    assert_eq!(type_of("PRINTF('%d', nn)"), "STRING");
    assert_eq!(type_of("TYPEOF(nn)"), "STRING");
    // nullable = "args" (the default): Calcite *_NULLABLE / Flink nullableIfArgs.
    assert_eq!(type_of("MD5('abc')"), "CHAR(32) NOT NULL");
    assert_eq!(type_of("SHA256(s)"), "CHAR(64)");
    assert_eq!(type_of("SHA2('abc', 256)"), "VARCHAR(128) NOT NULL");
    assert_eq!(type_of("HASH_CODE('abc')"), "INT NOT NULL");
    assert_eq!(type_of("HASH_CODE(s)"), "INT");
    // nullable = "ARG0": TRANSLATE depends on its first argument only.
    assert_eq!(type_of("TRANSLATE('abc', s, s)"), "STRING NOT NULL");
    assert_eq!(type_of("TRANSLATE(s, 'a', 'b')"), "STRING");
    // nullable = "never": Calcite's plain ReturnTypes.BOOLEAN, JSON constructors.
    assert_eq!(type_of("IS_DIGIT(s)"), "BOOLEAN NOT NULL");
    assert_eq!(type_of("IS_DECIMAL(i)"), "BOOLEAN NOT NULL");
    assert_eq!(type_of("JSON_OBJECT()"), "STRING NOT NULL");
    assert_eq!(type_of("JSON_ARRAY(s)"), "STRING NOT NULL");
    // nullable = "all-args": COALESCE / IFNULL (nullableIfAllArgs).
    assert_eq!(type_of("IFNULL(i, nn)"), "INT NOT NULL");
    assert_eq!(type_of("COALESCE(i, b)"), "BIGINT");
}

#[test]
fn aggregate_nullability() {
    // Calcite's TO_MULTISET: COLLECT is a NOT NULL multiset, with or without GROUP BY.
    assert_eq!(types_of("COLLECT(s)", ""), ["MULTISET<STRING> NOT NULL"]);
    // ARG0_NULLABLE_IF_EMPTY (MIN/MAX, Flink's FIRST_VALUE/LAST_VALUE): the argument's
    // nullability within groups, nullable without GROUP BY.
    assert_eq!(
        types_of("MAX(nn), FIRST_VALUE(nn), LAST_VALUE(s)", "GROUP BY s"),
        ["INT NOT NULL", "INT NOT NULL", "STRING"]
    );
    assert_eq!(types_of("MIN(nn)", ""), ["INT"]);
    // Calcite's JSON_OBJECTAGG / JSON_ARRAYAGG: ReturnTypes.VARCHAR_2000.
    assert_eq!(
        types_of("JSON_OBJECTAGG(KEY s VALUE i), JSON_ARRAYAGG(i)", ""),
        ["VARCHAR(2000) NOT NULL", "VARCHAR(2000) NOT NULL"]
    );
    // GROUPING takes one or more grouping expressions.
    assert_eq!(
        types_of("s, GROUPING(s), GROUPING_ID(s, i)", "GROUP BY CUBE (s, i)"),
        ["STRING", "BIGINT NOT NULL", "BIGINT NOT NULL"]
    );
}

#[test]
fn over_nullability() {
    // Calcite SqlLeadLagAggFunction: NOT NULL only with a NOT NULL default.
    assert_eq!(
        types_of(
            "LAG(nn) OVER (ORDER BY ts), LAG(i, 1, 0) OVER (ORDER BY ts), \
             LEAD(nn, 1, i) OVER (ORDER BY ts)",
            ""
        ),
        ["INT", "INT NOT NULL", "INT"]
    );
    // An aggregate over a window is nullable only when Calcite cannot prove the frame non-empty
    // (SqlWindow.isAlwaysNonEmpty): a bound with an offset, in the call or in the WINDOW clause.
    assert_eq!(
        types_of(
            "SUM(nn) OVER (ORDER BY ts), \
             SUM(nn) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), \
             SUM(nn) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), \
             SUM(nn) OVER w, SUM(nn) OVER v, COUNT(i) OVER w",
            "WINDOW w AS (ORDER BY ts ROWS 1 PRECEDING), v AS (ORDER BY ts)"
        ),
        [
            "INT NOT NULL",
            "INT NOT NULL",
            "INT",
            "INT",
            "INT NOT NULL",
            "BIGINT NOT NULL"
        ]
    );
}

#[test]
fn names_and_time_attributes() {
    let sql =
        format!("{TYPES_TABLE}SELECT i, t.s, i + 1, i AS i, ts, CAST(ts AS TIMESTAMP(3)) FROM t;");
    let analysis = analyze(&sql);
    let schema = analysis.statements[1].output.clone().unwrap();
    // Calcite names: identifiers keep their name, other expressions are EXPR$<ordinal>,
    // duplicates get a numeric suffix (SqlValidatorUtil.uniquify).
    let names: Vec<&str> = schema.columns.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["i", "s", "EXPR$2", "i0", "ts", "EXPR$5"]);
    // A forwarded rowtime stays a time attribute; a CAST materializes it.
    assert_eq!(schema.columns[4].to_string(), "ts: TIMESTAMP(3) *ROWTIME*");
    assert_eq!(schema.columns[5].time_attribute, None);
}

#[test]
fn window_tvf_columns() {
    let sql = format!(
        "{TYPES_TABLE}SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE));"
    );
    let analysis = analyze(&sql);
    assert!(!analysis.has_errors(), "{}", render(&sql, &analysis));
    let schema = analysis.statements[1].output.clone().unwrap();
    let tail: Vec<String> = schema
        .columns
        .iter()
        .rev()
        .take(3)
        .map(|f| f.to_string())
        .collect();
    assert_eq!(
        tail,
        [
            "window_time: TIMESTAMP(3) NOT NULL *ROWTIME*",
            "window_end: TIMESTAMP(3) NOT NULL",
            "window_start: TIMESTAMP(3) NOT NULL",
        ]
    );
    // Flink 2.3 keeps the input's time column a rowtime attribute after the window TVF
    // (compat-tests/cases/windows/tumble_tvf_rows.test).
    assert_eq!(
        schema.field("ts").unwrap().time_attribute,
        Some(riffle_catalog::TimeAttribute::Rowtime)
    );
}

#[test]
fn window_time_of_ltz_rowtime_is_ltz() {
    let sql = "CREATE TABLE e (id INT, ltz TIMESTAMP_LTZ(3), WATERMARK FOR ltz AS ltz)
        WITH ('connector' = 'datagen');
        SELECT window_start, window_time, COUNT(*) AS n
        FROM TABLE(HOP(TABLE e, DESCRIPTOR(ltz), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE))
        GROUP BY window_start, window_end, window_time;";
    let analysis = analyze(sql);
    assert!(!analysis.has_errors(), "{}", render(sql, &analysis));
    let schema = analysis.statements[1].output.clone().unwrap();
    assert_eq!(
        schema.to_string(),
        "[window_start: TIMESTAMP(3) NOT NULL, window_time: TIMESTAMP_LTZ(3) NOT NULL *ROWTIME*, \
         n: BIGINT NOT NULL]"
    );
}

#[test]
fn outer_joins_make_columns_nullable() {
    let sql = "CREATE TABLE a (id INT NOT NULL, x STRING) WITH ('connector' = 'datagen');
        CREATE TABLE b (id INT NOT NULL, y STRING) WITH ('connector' = 'datagen');
        SELECT a.id, b.id FROM a LEFT JOIN b ON a.id = b.id;";
    let analysis = analyze(sql);
    let schema = analysis.statements[2].output.clone().unwrap();
    assert_eq!(schema.to_string(), "[id: INT NOT NULL, id0: INT]");
}

#[test]
fn typeof_results_are_recorded_per_call() {
    let sql = format!(
        "{TYPES_TABLE}SELECT TYPEOF(nn), TYPEOF('ab'), TYPEOF(CAST(NULL AS STRING), TRUE), TYPEOF(INTERVAL '1' DAY) FROM t;"
    );
    let analysis = analyze(&sql);
    assert!(!analysis.has_errors(), "{}", render(&sql, &analysis));
    let names: Vec<&str> = analysis.type_names.values().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "INT NOT NULL",
            "CHAR(2) NOT NULL",
            "VARCHAR(2147483647)",
            "INTERVAL SECOND(3) NOT NULL"
        ]
    );
}
