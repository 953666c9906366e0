//! Conformance with real Flink: every case of `compat-tests/` whose expectation was produced by
//! Flink is analyzed. Jobs Flink ran must analyze without errors, and where Flink recorded the
//! result schema of a final query, the inferred schema must print the same (`name: TYPE`, with
//! `NOT NULL` and `*ROWTIME*` / `*PROCTIME*`).
//!
//! Where Flink rejected a case during validation, Riffle must report an error whose first line
//! is Flink's message; cases Flink rejects later (in the planner or at runtime) are listed in
//! [`NOT_ANALYSIS`]; parse errors and errors on the data at runtime are not considered.
//!
//! Known divergences are listed in [`KNOWN`] with their cause; the tests also fail when a listed
//! case starts to pass, so the lists cannot go stale.

use std::collections::BTreeMap;
use std::path::Path;

use riffle_compat::{load_cases, Case, Expected};
use riffle_sql::ast::StatementKind;
use riffle_sql::Severity;

/// Cases where Riffle's analysis differs from Flink, and why.
const KNOWN: &[(&str, &str)] = &[
    (
        "aggregation/collect_multiset",
        "functions.toml types COLLECT as MULTISET_OF(ARG0), nullable; Flink's COLLECT is NOT NULL",
    ),
    (
        "over/lag_lead",
        "functions.toml types LAG as ARG0_NULLABLE; with a NOT NULL default Flink's LAG is NOT NULL",
    ),
    (
        "window-agg/cube",
        "functions.toml gives GROUPING the arguments (ANY, ANY...), which needs two; GROUPING(a) is valid",
    ),
    (
        "functions-json/json_object_array",
        "functions.toml gives JSON_OBJECT the arguments (ANY...), which needs one; JSON_OBJECT() is valid",
    ),
    ("functions-misc/hash_code", "functions.toml has no HASH_CODE"),
    (
        "functions-json/json_aggregates",
        "functions.toml types JSON_OBJECTAGG / JSON_ARRAYAGG as STRING; Flink says VARCHAR(2000)",
    ),
    ("functions-string/hashes", "functions.toml types MD5 / SHA1 / SHA256 as STRING; Flink says CHAR(n)"),
    (
        "casts/interval_casts",
        "riffle-sql's interval types keep no resolution (INTERVAL SECOND(3), INTERVAL MONTH)",
    ),
    // Flink declares some functions' results always nullable (they return NULL on bad input);
    // functions.toml cannot say so yet, and Riffle applies the usual rule (NULL only when an
    // argument may be).
    ("casts/temporal_casts", "TO_TIMESTAMP_LTZ is always nullable in Flink"),
    ("functions-misc/printf_format", "PRINTF is always nullable in Flink"),
    ("functions-misc/url_encode_decode", "URL_ENCODE / URL_DECODE are always nullable in Flink"),
    ("functions-string/ascii_chr", "CHR is always nullable in Flink"),
    ("functions-string/parse_url", "PARSE_URL is always nullable in Flink"),
    ("functions-string/str_to_map", "STR_TO_MAP is always nullable in Flink"),
    ("functions-temporal/convert_tz", "CONVERT_TZ is always nullable in Flink"),
    ("functions-temporal/date_format", "DATE_FORMAT(STRING, STRING) is always nullable in Flink"),
    ("functions-temporal/to_date_to_timestamp", "TO_DATE / TO_TIMESTAMP are always nullable in Flink"),
    ("time-zones/from_unixtime_zones", "FROM_UNIXTIME is always nullable in Flink"),
    ("time-zones/ltz_display_shanghai", "TO_TIMESTAMP_LTZ is always nullable in Flink"),
    ("time-zones/offset_zone_id", "CONVERT_TZ / TO_TIMESTAMP are always nullable in Flink"),
    ("time-zones/timestamp_not_affected", "DATE_FORMAT(STRING, STRING) is always nullable in Flink"),
    ("time-zones/to_timestamp_ltz_string_ms", "TO_TIMESTAMP_LTZ is always nullable in Flink"),
];

/// Cases Flink rejects after validation (planning, changelog checks, runtime errors on data):
/// analysis is not expected to report them.
const NOT_ANALYSIS: &[(&str, &str)] = &[
    (
        "errors/order_by_non_time_attribute",
        "planner: streaming sort",
    ),
    (
        "errors/outer_join_into_append_only_sink",
        "planner: changelog mode of the sink",
    ),
    ("errors/over_order_by_non_time", "planner: OVER ordering"),
    ("errors/over_rows_following", "planner: OVER bounds"),
    (
        "errors/proctime_temporal_join_non_lookup",
        "planner: versioned table needs a primary key",
    ),
    (
        "errors/set_statement_in_sql",
        "TableEnvironment: SET is a client statement",
    ),
    ("errors/topn_dense_rank", "planner: streaming Top-N"),
    ("errors/topn_rank", "planner: streaming Top-N"),
    (
        "errors/updating_into_append_only_sink",
        "planner: changelog mode of the sink",
    ),
    ("errors/window_topn_dense_rank", "planner: window Top-N"),
    ("errors/window_topn_rank", "planner: window Top-N"),
    (
        "functions-conditional/nested_conditionals",
        "Calcite rejects a NULL operand Riffle cannot pinpoint",
    ),
];

/// Exception classes Flink raises while validating and planning a statement; other classes
/// (parse errors, errors on the data at runtime) are not analysis findings.
const VALIDATION_CLASSES: &[&str] = &[
    "SqlValidatorException",
    "ValidationException",
    "TableAlreadyExistException",
    "TableException",
];

fn script(case: &Case) -> Option<String> {
    let paths: BTreeMap<String, String> = case
        .inputs
        .iter()
        .map(|i| (i.name.clone(), format!("/tmp/{}", i.name)))
        .collect();
    let statements = case.statements_with_paths(&paths).ok()?;
    Some(statements.join(";\n") + ";")
}

/// What differs between Riffle's analysis and Flink's outcome for one case, if anything.
fn divergence(case: &Case) -> Option<String> {
    let Some(Expected::Rows(rows)) = &case.expected else {
        return None;
    };
    let sql = script(case)?;
    let parsed = riffle_sql::parse_script(&sql);
    if !parsed.diagnostics.is_empty() {
        // Parsing is riffle-sql's concern and is checked by its own tests.
        return None;
    }
    let analysis = riffle_catalog::analyze(&parsed.script);
    let errors: Vec<String> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            format!(
                "{} `{}`: {}",
                d.code,
                &sql[d.span.byte_range(&sql)],
                d.message
            )
        })
        .collect();
    if !errors.is_empty() {
        return Some(format!("errors on a job Flink ran: {errors:#?}"));
    }
    let columns = rows.columns.as_ref()?;
    let last = parsed.script.statements.len().checked_sub(1)?;
    if !matches!(
        parsed.script.statements.get(last)?.kind,
        StatementKind::Query(_)
    ) {
        return None;
    }
    let schema = analysis.statements.get(last)?.output.as_ref()?;
    let ours: Vec<String> = schema.columns.iter().map(ToString::to_string).collect();
    let flink: Vec<String> = columns
        .iter()
        .map(|c| format!("{}: {}", c.name, c.data_type))
        .collect();
    (ours != flink).then(|| format!("schema\n  riffle: {ours:?}\n  flink:  {flink:?}"))
}

#[test]
fn analysis_agrees_with_flink() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../compat-tests/cases");
    let mut unexpected = Vec::new();
    let mut known_seen = Vec::new();
    let mut checked = 0;
    for case in load_cases(&root, None) {
        let case = case.expect("case files parse");
        checked += 1;
        let known = KNOWN.iter().any(|(id, _)| *id == case.id);
        match (divergence(&case), known) {
            (Some(d), false) => unexpected.push(format!("{}: {d}", case.id)),
            (Some(_), true) => known_seen.push(case.id.clone()),
            (None, true) => unexpected.push(format!(
                "{}: listed in KNOWN but agrees with Flink now",
                case.id
            )),
            (None, false) => {}
        }
    }
    assert!(
        checked > 100,
        "only {checked} cases found under {}",
        root.display()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    assert_eq!(known_seen.len(), KNOWN.len());
}

/// Riffle's first error for a case Flink rejected, compared with Flink's message.
fn error_divergence(case: &Case) -> Option<String> {
    let Some(Expected::Error(flink)) = &case.expected else {
        return None;
    };
    let sql = script(case)?;
    let parsed = riffle_sql::parse_script(&sql);
    let analysis = riffle_catalog::analyze(&parsed.script);
    let first = parsed
        .diagnostics
        .iter()
        .chain(&analysis.diagnostics)
        .find(|d| d.severity == Severity::Error)
        .map(|d| d.message.lines().next().unwrap_or_default().to_string());
    let expected = flink.message.lines().next().unwrap_or_default();
    match first {
        Some(ours) if ours == expected => None,
        Some(ours) => Some(format!("riffle: {ours}\n  flink:  {expected}")),
        None => Some(format!("no error; Flink: {expected}")),
    }
}

#[test]
fn errors_agree_with_flink() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../compat-tests/cases");
    let mut unexpected = Vec::new();
    let mut error_cases = 0;
    for case in load_cases(&root, None) {
        let case = case.expect("case files parse");
        let Some(Expected::Error(flink)) = &case.expected else {
            continue;
        };
        let class = flink.class.rsplit('.').next().unwrap_or_default();
        if !VALIDATION_CLASSES.contains(&class) {
            continue;
        }
        error_cases += 1;
        let skipped = NOT_ANALYSIS.iter().any(|(id, _)| *id == case.id);
        match (error_divergence(&case), skipped) {
            (Some(d), false) => unexpected.push(format!("{}: {d}", case.id)),
            (None, true) => {
                unexpected.push(format!("{}: listed in NOT_ANALYSIS but agrees", case.id))
            }
            _ => {}
        }
    }
    assert!(error_cases > 20, "only {error_cases} error cases found");
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
