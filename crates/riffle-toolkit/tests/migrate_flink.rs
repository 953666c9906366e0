//! A helper for the Flink-backed modernize proof (`tests/flink/modernize_proof.py`), not a test of
//! its own: it migrates (`--modernize`) every `*.sql` file of `$RIFFLE_MIGRATE_IN` into
//! `$RIFFLE_MIGRATE_OUT` with the same name, plus `<name>.report.json`. Ignored unless run
//! explicitly, because its input comes from the script.

use std::path::PathBuf;

use riffle_toolkit::migrate::{migrate_job, render_json, MigrateOptions};
use riffle_toolkit::JobSource;

#[test]
#[ignore = "run by tests/flink/modernize_proof.py"]
fn migrate_directory_with_modernize() {
    let (Some(input), Some(output)) = (
        std::env::var_os("RIFFLE_MIGRATE_IN").map(PathBuf::from),
        std::env::var_os("RIFFLE_MIGRATE_OUT").map(PathBuf::from),
    ) else {
        panic!("set RIFFLE_MIGRATE_IN and RIFFLE_MIGRATE_OUT");
    };
    let options = MigrateOptions {
        modernize: true,
        ..MigrateOptions::default()
    };
    let entries = std::fs::read_dir(&input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "sql") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = entry.file_name().to_string_lossy().into_owned();
        let result = migrate_job(
            &JobSource {
                path: name.clone(),
                text,
            },
            &options,
        );
        let write = |file: String, text: &str| {
            let target = output.join(file);
            std::fs::write(&target, text).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        };
        write(name.clone(), &result.output);
        write(
            format!("{name}.report.json"),
            &render_json(std::slice::from_ref(&result)),
        );
    }
}
