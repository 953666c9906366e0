//! Helpers shared by the integration tests: parse, analyze, render findings.

#![allow(dead_code)]

use riffle_catalog::Analysis;
use riffle_sql::Diagnostic;

/// Parses `sql` (which must parse cleanly) and analyzes it.
pub fn analyze(sql: &str) -> Analysis {
    let parsed = riffle_sql::parse_script(sql);
    assert!(
        parsed.diagnostics.is_empty(),
        "parse errors: {:#?}",
        parsed.diagnostics
    );
    riffle_catalog::analyze(&parsed.script)
}

/// The source text a diagnostic points at.
pub fn spanned<'a>(sql: &'a str, d: &Diagnostic) -> &'a str {
    &sql[d.span.byte_range(sql)]
}

/// Every diagnostic as `severity code @line:col `text`: message` plus help, one per line.
pub fn render(sql: &str, analysis: &Analysis) -> String {
    let mut out = String::new();
    for d in &analysis.diagnostics {
        out.push_str(&format!(
            "{:?} {} @{}:{} `{}`: {}\n",
            d.severity,
            d.code,
            d.span.start.line,
            d.span.start.column,
            spanned(sql, d),
            d.message
        ));
        if let Some(label) = &d.label {
            out.push_str(&format!("  label: {label}\n"));
        }
        if let Some(help) = &d.help {
            out.push_str(&format!("  help: {help}\n"));
        }
    }
    for (i, s) in analysis.statements.iter().enumerate() {
        if let Some(schema) = &s.output {
            out.push_str(&format!("statement {i}: {schema}\n"));
        }
        for (j, insert) in s.inserts.iter().enumerate() {
            if let Some(schema) = insert {
                out.push_str(&format!("statement {i} insert {j}: {schema}\n"));
            }
        }
    }
    out
}

/// Asserts the script yields exactly one error with this code, pointing at this text.
pub fn assert_error(sql: &str, code: &str, text: &str) -> Diagnostic {
    let analysis = analyze(sql);
    let errors: Vec<&Diagnostic> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == riffle_sql::Severity::Error)
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "expected one error, got:\n{}",
        render(sql, &analysis)
    );
    let d = errors[0];
    assert_eq!(d.code, code, "{}", render(sql, &analysis));
    assert_eq!(spanned(sql, d), text, "{}", render(sql, &analysis));
    d.clone()
}

/// A datagen table with one column of each common type, and a rowtime attribute.
pub const TYPES_TABLE: &str = "CREATE TABLE t (
    i INT, b BIGINT, ti TINYINT, si SMALLINT, d DECIMAL(10, 2), d2 DECIMAL(5, 3), f FLOAT,
    db DOUBLE, s STRING, c CHAR(3), v VARCHAR(10), bo BOOLEAN, ts TIMESTAMP(3),
    ltz TIMESTAMP_LTZ(3), dt DATE, tm TIME, nn INT NOT NULL, arr ARRAY<INT>,
    m MAP<STRING, BIGINT>, r ROW<x INT, y STRING>,
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'datagen');
";
