//! Syntax errors: every diagnostic points at the offending token, parsing resumes after the next
//! `;`, and pathological input (deep nesting, unterminated literals) yields errors, not crashes.

mod common;

use common::{render, span};
use riffle_sql::{parse_data_type, parse_expr, parse_script, Severity, PARSE_ERROR};

/// `(line, column)` of each diagnostic's start.
fn positions(sql: &str) -> Vec<(u64, u64)> {
    parse_script(sql)
        .diagnostics
        .iter()
        .map(|d| (d.span.start.line, d.span.start.column))
        .collect()
}

#[test]
fn error_points_at_offending_token() {
    let sql =
        "CREATE TABLE t (\n  a INT,\n  b STRNG NOT NULL PRIMARY\n) WITH ('connector' = 'datagen');";
    let parsed = parse_script(sql);
    assert_eq!(parsed.diagnostics.len(), 1, "{}", render(&parsed));
    let d = &parsed.diagnostics[0];
    assert_eq!(d.code, PARSE_ERROR);
    assert_eq!(d.severity, Severity::Error);
    // `STRNG` is a user-defined type name to Flink; `PRIMARY` must be followed by `KEY`, and the
    // error is at the `)` on line 4.
    assert_eq!(span(&d.span), "4:1-4:2");
    assert_eq!(d.message, "expected KEY, found `)`");
}

#[test]
fn errors_in_several_statements_are_all_reported() {
    let sql = "SELECT a FROM t WHERE;\nINSERT INTO s SELECT * FROM;\nSELECT 1;\nSET 'k' =;\nCREATE TABLE x (a INT) WITH ('k' = 1);";
    assert_eq!(positions(sql), vec![(1, 22), (2, 28), (4, 10), (5, 36)]);
    assert_eq!(parse_script(sql).script.statements.len(), 1);
}

#[test]
fn error_after_statement_end_and_at_end_of_input() {
    // Trailing garbage after a complete statement.
    assert_eq!(positions("SELECT 1 2"), vec![(1, 10)]);
    // Missing closing parenthesis at the end of the input points at the last token's end.
    let parsed = parse_script("SELECT COUNT(*\n");
    assert_eq!(parsed.diagnostics.len(), 1);
    assert!(
        parsed.diagnostics[0].message.contains("end of input"),
        "{}",
        render(&parsed)
    );
    assert_eq!(parsed.diagnostics[0].span.start.line, 1);
}

#[test]
fn unknown_statement_and_stray_end() {
    let parsed = parse_script("FROBNICATE t;\nEND;\nSELECT 1");
    insta::assert_snapshot!(render(&parsed), @r"
    @3:1-3:9 QUERY SELECT 1
    Error parse-error @1:1-1:11: expected a statement, found `FROBNICATE`
    Error parse-error @2:1-2:4: expected a statement, found `END`
    ");
}

#[test]
fn broken_insert_in_statement_set_keeps_the_others() {
    let sql =
        "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT * FROM;\nINSERT INTO b SELECT 1;\nEND;";
    let parsed = parse_script(sql);
    insta::assert_snapshot!(render(&parsed), @r"
    @1:1-4:4 STATEMENT SET ExecuteBegin
      INSERT INTO b @3:1-3:23 table@3:13-3:14
        query SELECT 1
    Error parse-error @2:28-2:29: expected identifier, found `;`
    ");
}

#[test]
fn unterminated_literals_keep_earlier_statements() {
    let parsed = parse_script("SELECT 1;\nSELECT 'abc FROM t;\nSELECT 2;");
    assert_eq!(parsed.script.statements.len(), 1);
    assert_eq!(parsed.diagnostics.len(), 1);
    assert_eq!(
        (
            parsed.diagnostics[0].span.start.line,
            parsed.diagnostics[0].span.start.column
        ),
        (2, 8)
    );
    let parsed = parse_script("SELECT 1; /* never closed");
    assert_eq!(parsed.script.statements.len(), 1);
    assert_eq!(parsed.diagnostics.len(), 1);
}

#[test]
fn unsupported_features_are_named() {
    let parsed = parse_script(
        "CREATE TABLE t (a INT) DISTRIBUTED BY (a);\nCREATE OR REPLACE TABLE u (a INT);\nCAST;",
    );
    let messages: Vec<&str> = parsed
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        vec![
            "DISTRIBUTED BY / INTO BUCKETS is not supported",
            "CREATE OR REPLACE is not supported",
            "expected a statement, found `CAST`",
        ]
    );
}

#[test]
fn malformed_hint_is_a_warning() {
    let parsed = parse_script("SELECT /*+ OPTIONS('k' = ) */ a FROM t;");
    assert_eq!(parsed.script.statements.len(), 1);
    assert_eq!(parsed.diagnostics.len(), 1);
    assert_eq!(parsed.diagnostics[0].severity, Severity::Warning);
    assert_eq!(span(&parsed.diagnostics[0].span), "1:26-1:27");
}

#[test]
fn type_errors() {
    let err = |t: &str| {
        parse_data_type(t)
            .err()
            .map(|d| (d.span.start.column, d.message))
    };
    assert_eq!(
        err("DECIMAL(40, 2)"),
        Some((
            9,
            "Decimal precision must be between 1 and 38 (both inclusive), got 40".into()
        ))
    );
    assert_eq!(err("MAP<INT>"), Some((8, "expected ,, found `>`".into())));
    assert_eq!(
        err("TIMESTAMP(3) WITH TIME ZONE"),
        Some((
            1,
            "TIMESTAMP WITH TIME ZONE is not supported by Flink; use TIMESTAMP_LTZ".into()
        ))
    );
    assert_eq!(
        err("VARCHAR(0)"),
        Some((
            9,
            "Length must be between 1 and 2147483647 (both inclusive), got 0".into()
        ))
    );
    assert_eq!(
        err("INT INT"),
        Some((5, "expected end of input, found `INT`".into()))
    );
    assert!(err("ARRAY<INT>>").is_some());
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = |open: &str, mid: &str, close: &str, n: usize| {
        format!("{}{mid}{}", open.repeat(n), close.repeat(n))
    };
    for sql in [
        "(".repeat(10_000),
        format!("SELECT {}", deep("(", "1", ")", 10_000)),
        format!("SELECT {}", "-".repeat(10_000)),
        format!("SELECT {} 1", "NOT ".repeat(10_000)),
        format!("SELECT CAST(x AS {})", deep("ARRAY<", "INT", ">", 10_000)),
        format!("SELECT * FROM {}", deep("(", "t", ")", 10_000)),
        format!("SELECT {}", deep("f(", "1", ")", 10_000)),
        format!(
            "SELECT {} FROM t",
            deep("CASE WHEN a THEN ", "1", " END", 5_000)
        ),
    ] {
        let parsed = parse_script(&sql);
        assert!(!parsed.diagnostics.is_empty(), "no error for {:.40}", sql);
        assert!(parsed.diagnostics.iter().all(|d| d.span.start.line >= 1));
    }
    assert!(parse_data_type(&deep("ROW<a ", "INT", ">", 10_000)).is_err());
    assert!(parse_expr(&deep("(", "1", ")", 10_000)).is_err());
    // Long flat inputs are fine.
    let wide = format!("SELECT {}", vec!["1"; 5_000].join(" + "));
    assert!(parse_script(&wide).diagnostics.is_empty());
}
