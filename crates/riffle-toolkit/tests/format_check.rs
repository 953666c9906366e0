//! `riffle check` knows formats Riffle runs with some connectors only: Avro message bodies of a
//! `rocketmq` table are supported, Avro files of a `filesystem` table are not.

use riffle_toolkit::{check_job, JobSource, Status};

/// `(status, code)` of every finding about formats in `sql`.
fn format_findings(sql: &str) -> Vec<(Status, String)> {
    let report = check_job(&JobSource {
        path: "job.sql".into(),
        text: sql.to_string(),
    });
    report
        .findings
        .iter()
        .filter(|f| f.code.starts_with("format.") || f.code.starts_with("connector-format."))
        .map(|f| (f.status, f.code.clone()))
        .collect()
}

#[test]
fn avro_files_are_unsupported_where_avro_messages_are_supported() {
    let files = format_findings(
        "CREATE TABLE t (id INT) WITH ('connector' = 'filesystem', 'path' = '/data', 'format' = 'avro');",
    );
    assert!(
        files.contains(&(
            Status::Unsupported,
            "connector-format.filesystem.avro".to_string()
        )),
        "{files:?}"
    );
    let messages = format_findings(
        "CREATE TABLE t (id INT) WITH ('connector' = 'rocketmq', 'topic' = 't', 'format' = 'avro');",
    );
    assert!(
        messages
            .iter()
            .all(|(status, code)| *status == Status::Supported
                && !code.starts_with("connector-format.")),
        "{messages:?}"
    );
}
