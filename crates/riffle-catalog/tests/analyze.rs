//! Snapshots of the analysis of realistic jobs (`fixtures/jobs`): every diagnostic with the text
//! it points at, and every inferred result schema.

mod common;

use std::path::{Path, PathBuf};

use common::render;

/// Fixtures whose analysis reports errors, and why. Every other fixture must analyze cleanly.
const EXPECTED_ERRORS: &[(&str, &str)] = &[];

fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("fixtures directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "sql") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jobs");
    let mut out = Vec::new();
    walk(&root, &mut out);
    out.sort();
    out
}

fn name_of(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jobs");
    path.strip_prefix(&root)
        .unwrap_or(path)
        .with_extension("")
        .to_string_lossy()
        .replace(['/', '\\'], "__")
}

#[test]
fn fixture_jobs() {
    let paths = fixtures();
    assert!(paths.len() > 40, "fixtures not found");
    let mut unexpected = Vec::new();
    for path in paths {
        let sql = std::fs::read_to_string(&path).expect("fixture text");
        let parsed = riffle_sql::parse_script(&sql);
        let analysis = riffle_catalog::analyze(&parsed.script);
        let name = name_of(&path);
        let rendered = render(&sql, &analysis);
        let expected = EXPECTED_ERRORS.iter().any(|(n, _)| *n == name);
        if analysis.has_errors() != expected {
            unexpected.push(format!("{name}:\n{rendered}"));
        }
        insta::assert_snapshot!(name, rendered);
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
