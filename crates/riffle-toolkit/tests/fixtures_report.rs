//! Snapshots of the check report of every job in `fixtures/jobs/`. Review changes to these
//! snapshots like code: they are the user-visible verdict on each job.

use std::path::Path;

use riffle_toolkit::render::render_text;
use riffle_toolkit::{check_job, JobSource, Status};

#[test]
fn check_report_of_each_fixture_job() {
    // insta hands the closure canonical paths, so the root must be canonical too for the
    // snapshots to hold workspace-relative paths wherever the clone lives.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root exists");
    insta::glob!("../../../fixtures/jobs", "**/*.sql", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let report = check_job(&JobSource {
            path: relative,
            text,
        });
        insta::assert_snapshot!(render_text(&[report], Status::Supported));
    });
}
