//! Checks the committed conformance cases in `compat-tests/cases` against the library.

use std::collections::BTreeMap;
use std::path::PathBuf;

use riffle_compat::{compare, load_cases, ActualOutput, Case, Expected};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../compat-tests/cases")
}

fn all_cases() -> Vec<Case> {
    let loaded = load_cases(&cases_dir(), None);
    let errors: Vec<String> = loaded
        .iter()
        .filter_map(|r| r.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(errors.is_empty(), "malformed cases:\n{}", errors.join("\n"));
    loaded.into_iter().flatten().collect()
}

#[test]
fn every_case_parses_and_has_a_flink_expectation() {
    let cases = all_cases();
    assert!(!cases.is_empty());
    for case in &cases {
        let mut paths: BTreeMap<String, String> = case
            .inputs
            .iter()
            .map(|i| (i.name.clone(), format!("/data/{}", i.name)))
            .collect();
        // The fixture functions' jar every case may name.
        paths.insert("udf_jar".into(), "/data/udf.jar".into());
        let statements = case
            .statements_with_paths(&paths)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            statements.iter().all(|s| !s.contains("${")),
            "{case}: unresolved placeholder"
        );
        assert!(
            case.flink_version.is_some(),
            "{case}: no generated sections; run compat-tests/oracle/regenerate"
        );
        assert!(case.expected.is_some(), "{case}: no expected section");
        let is_error = matches!(case.expected, Some(Expected::Error(_)));
        assert_eq!(
            is_error,
            case.area() == "errors",
            "{case}: a case expects an error exactly when it is in errors/"
        );
    }
}

#[test]
fn flink_output_conforms_to_itself() {
    for case in all_cases() {
        let Some(expected) = &case.expected else {
            continue;
        };
        let actual = match expected {
            Expected::Rows(rows) => ActualOutput::Rows(rows.rows.clone()),
            Expected::Error(e) => ActualOutput::Error(format!("{}: {}", e.class, e.message)),
        };
        let result = compare(expected, &actual);
        assert!(
            result.passed() && result.notes.is_empty(),
            "{case}:\n{result}"
        );
    }
}

#[test]
fn filter_selects_by_id() {
    let all = load_cases(&cases_dir(), None).len();
    let errors = load_cases(&cases_dir(), Some("errors/"));
    assert!(!errors.is_empty() && errors.len() < all);
    assert!(errors.iter().flatten().all(|c| c.id.starts_with("errors/")));
}
