//! `riffle run` on a terminal draws a progress line on stderr — a bar with the share of a
//! file input read, rows read and written — unless the job prints rows to the same terminal.

use std::path::Path;
use std::process::Command;

use rexpect::session::PtySession;

/// `riffle run job.sql` in `dir`, on a pty (stdout and stderr both the terminal).
fn spawn_run(dir: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_riffle"));
    command.arg("run").arg("job.sql").current_dir(dir);
    rexpect::session::spawn_with_options(
        command,
        rexpect::reader::Options {
            timeout_ms: Some(120_000),
            strip_ansi_escape_codes: true,
        },
    )
    .expect("spawn riffle run")
}

/// A directory with a CSV file of `rows` rows and `job.sql` copying it into `sink`.
fn job(rows: usize, sink: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let data: String = (0..rows).map(|i| format!("{i},name-{i}\n")).collect();
    std::fs::write(dir.path().join("in.csv"), data).expect("write input");
    let sql = format!(
        "CREATE TABLE src (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE dst (id BIGINT, name STRING) WITH ('connector' = '{sink}');\n\
         INSERT INTO dst SELECT id, UPPER(name) FROM src WHERE id % 2 = 0;\n",
        dir.path().join("in.csv").display()
    );
    std::fs::write(dir.path().join("job.sql"), sql).expect("write job");
    dir
}

#[test]
fn a_bounded_job_shows_a_progress_bar_on_a_terminal() {
    let dir = job(400_000, "blackhole");
    let mut p = spawn_run(dir.path());
    let (_, line) = p
        .exp_regex(
            r"\[[#-]{24}\] +\d+%  [\d,]+ rows read \([\d,]+ rows/s\), [\d,]+ written  \d\d:\d\d",
        )
        .expect("a progress line");
    assert!(line.contains("rows read"), "{line}");
    p.exp_eof().expect("riffle run ends");
    let status = p.process.wait().expect("exit status");
    assert!(
        matches!(status, rexpect::process::wait::WaitStatus::Exited(_, 0)),
        "{status:?}"
    );
}

#[test]
fn no_progress_line_when_printed_rows_share_the_terminal() {
    let dir = job(2_000, "print");
    let mut p = spawn_run(dir.path());
    let output = p.exp_eof().expect("riffle run ends");
    assert!(output.contains("+I[1998, NAME-1998]"), "{output}");
    assert!(!output.contains("rows read"), "{output}");
}
