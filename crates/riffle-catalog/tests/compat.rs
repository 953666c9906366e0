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
        "casts/interval_casts",
        "riffle-sql's interval types keep no resolution (INTERVAL SECOND(3), INTERVAL MONTH)",
    ),
    (
        "casts/interval_to_string_signs",
        "riffle-sql's interval types keep no resolution (INTERVAL SECOND(3), INTERVAL MONTH)",
    ),
    (
        "functions-conditional/if_typed_null_and_time_branches",
        "the common type of TIMESTAMP and TIMESTAMP_LTZ is TIMESTAMP in Flink, TIMESTAMP_LTZ in Riffle",
    ),
    (
        "functions-temporal/interval_literals_and_arithmetic",
        "riffle-sql's interval types keep no resolution (INTERVAL SECOND(3), INTERVAL MONTH)",
    ),
];

/// Rejected when the job is planned (as `riffle check` and `riffle run` do), not yet by the
/// static analysis.
const PLANNED_ONLY: &str =
    "planner: rejected when the job is planned; the analysis does not check it yet";

/// Rejected by the analysis in Riffle's own words.
const RIFFLE_WORDING: &str = "analysis: rejected, in other words than Flink's";

/// Cases Flink rejects after validation (planning, changelog checks, runtime errors on data),
/// and validation errors Riffle reports otherwise: analysis is not expected to report them as
/// Flink does.
const NOT_ANALYSIS: &[(&str, &str)] = &[
    (
        "errors/if_incompatible_branches",
        "analysis: rejected, but Calcite names IF's operand families (ANY_TYPE, NUMERIC_TYPE) otherwise",
    ),
    (
        "errors/lag_default_needs_cast",
        "planner: Flink's LAG function checks its default value's runtime class when created",
    ),
    (
        "errors/nested_aggregate",
        "planner: the nested aggregate is rejected when the query is planned",
    ),
    (
        "errors/row_number_without_order",
        "planner: Flink's over aggregation translation rejects a rank without ORDER BY",
    ),
    (
        "errors/select_star_group_by",
        "analysis: rejected, naming '*' where Calcite names the first ungrouped column",
    ),
    (
        "errors/timestampadd_string_amount",
        "analysis: rejected; Calcite types the unit operand as an interval (INTERVAL DAY)",
    ),
    (
        "errors/tumble_on_string_column",
        "analysis: rejected with Riffle's wording of the time attribute requirement",
    ),
    (
        "errors/cdc_events_duplicate_without_primary_key",
        "planner: Flink's ChangelogNormalize for duplicate CDC events needs the source's primary key",
    ),
    (
        "errors/proctime_window_dedup",
        "planner: Flink's window deduplication translation rejects processing time",
    ),
    (
        "errors/proctime_window_join",
        "planner: Flink's window join translation rejects processing time",
    ),
    (
        "errors/proctime_window_topn",
        "planner: Flink's window Top-N translation rejects processing time",
    ),
    (
        "errors/match_recognize_all_rows_per_match_rejected",
        "planner: Flink's MATCH_RECOGNIZE translation rejects all rows per match",
    ),
    (
        "errors/match_recognize_alternation_rejected",
        "planner: Flink's MATCH_RECOGNIZE translation rejects alternation",
    ),
    (
        "errors/match_recognize_greedy_last_variable_rejected",
        "planner: Flink's MATCH_RECOGNIZE translation rejects a greedy last variable",
    ),
    (
        "errors/match_recognize_group_quantifier_rejected",
        "planner: Flink's MATCH_RECOGNIZE translation rejects group patterns",
    ),
    (
        "errors/match_recognize_optional_last_reluctant",
        "planner: Flink's MATCH_RECOGNIZE translation rejects reluctant optional variables",
    ),
    (
        "errors/match_recognize_order_by_non_time_rejected",
        "planner: Flink's MATCH_RECOGNIZE translation rejects the order of a match",
    ),
    (
        "errors/match_recognize_prev_in_define",
        "planner: Flink's MATCH_RECOGNIZE translation rejects physical offsets",
    ),
    (
        "errors/filesystem_partition_commit_metastore",
        "connector: the partition commit policy is checked when the sink is created",
    ),
    (
        "errors/filesystem_partitioned_read_default_partition",
        "runtime: reading the default partition's directory fails",
    ),
    (
        "errors/debezium_json_into_append_only_sink",
        "planner: changelog mode of the sink",
    ),
    (
        "errors/raw_format_two_columns",
        "connector: the raw format's schema is checked when the format is created",
    ),
    (
        "errors/order_by_non_time_attribute",
        "planner: streaming sort",
    ),
    (
        "errors/order_by_time_attribute_descending",
        "planner: streaming sort",
    ),
    (
        "errors/metadata_filesystem_unknown_key",
        "connector: metadata keys are checked when the source opens",
    ),
    (
        "errors/outer_join_into_append_only_sink",
        "planner: changelog mode of the sink",
    ),
    ("errors/over_order_by_non_time", "planner: OVER ordering"),
    ("errors/over_order_desc", "planner: OVER ordering direction"),
    (
        "errors/over_two_windows",
        "planner: all OVER aggregates on one window",
    ),
    ("errors/over_rows_following", "planner: OVER bounds"),
    (
        "errors/proctime_temporal_join_non_lookup",
        "planner: versioned table needs a primary key",
    ),
    (
        "errors/proctime_temporal_join_with_pk",
        "planner: processing-time temporal join needs a lookup source",
    ),
    (
        "errors/set_statement_in_sql",
        "TableEnvironment: SET is a client statement",
    ),
    (
        "errors/temporal_join_condition_without_primary_key",
        "planner: the versioned table's primary key must be among the join's equalities",
    ),
    (
        "errors/temporal_join_versioned_without_watermark",
        "planner: versioned table needs a rowtime attribute",
    ),
    (
        "errors/temporal_join_without_primary_key",
        "planner: versioned table needs a primary key",
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
    ("errors/cast_bigint_to_ltz", PLANNED_ONLY),
    ("errors/cast_date_to_int", RIFFLE_WORDING),
    ("errors/cast_int_to_timestamp", PLANNED_ONLY),
    ("errors/cast_ltz_to_bigint", PLANNED_ONLY),
    ("errors/cast_ltz_to_double", PLANNED_ONLY),
    ("errors/cast_time_to_int", RIFFLE_WORDING),
    ("errors/cast_timestamp_to_bigint", PLANNED_ONLY),
    ("errors/cast_timestamp_to_decimal", PLANNED_ONLY),
    ("errors/count_distinct_two_columns", PLANNED_ONLY),
    ("errors/extract_unknown_field", PLANNED_ONLY),
    ("errors/in_subquery_two_columns", PLANNED_ONLY),
    ("errors/is_json_on_int", PLANNED_ONLY),
    ("errors/lag_negative_offset", PLANNED_ONLY),
    ("errors/match_recognize_prev_and_last_offset", PLANNED_ONLY),
    ("errors/order_by_unknown_column_in_window_tvf", RIFFLE_WORDING),
    ("errors/over_cume_dist_streaming", PLANNED_ONLY),
    ("errors/over_different_windows", PLANNED_ONLY),
    ("errors/over_lead_streaming", PLANNED_ONLY),
    ("errors/over_ntile_streaming", PLANNED_ONLY),
    ("errors/over_percent_rank_streaming", PLANNED_ONLY),
    ("errors/over_range_unbounded_following", PLANNED_ONLY),
    ("errors/scalar_subquery_two_columns", PLANNED_ONLY),
    ("errors/table_duplicate_column_names", RIFFLE_WORDING),
    ("errors/timestampadd_unknown_unit", PLANNED_ONLY),
    ("errors/tumble_month_interval", PLANNED_ONLY),
    ("errors/tumble_negative_size", PLANNED_ONLY),
    ("errors/tumble_size_not_interval", PLANNED_ONLY),
    ("errors/union_all_order_by_non_time", PLANNED_ONLY),
    ("errors/values_bare_null_in_column", PLANNED_ONLY),
    ("errors/window_function_in_where", PLANNED_ONLY),
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
    // A case with several jobs (e.g. an INSERT writing files and a query reading them back)
    // runs each as its own job, and Flink's record lists the columns of every job; the
    // conformance run compares those cases' rows, this test the single-job ones.
    let jobs = parsed
        .script
        .statements
        .iter()
        .filter(|s| {
            matches!(
                s.kind,
                StatementKind::Query(_) | StatementKind::Insert(_) | StatementKind::StatementSet(_)
            )
        })
        .count();
    if jobs > 1 {
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
