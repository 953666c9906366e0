//! A job without checkpoints keeps its RocksDB state in the temporary directory and leaves
//! nothing there when it ends.

use std::process::Command;

#[test]
fn rocksdb_state_of_a_job_without_checkpoints_leaves_no_directory_behind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("create TMPDIR");
    let data: String = (0..1_000).map(|i| format!("{},{i}\n", i % 7)).collect();
    std::fs::write(dir.path().join("in.csv"), data).expect("write input");
    let sql = format!(
        "CREATE TABLE src (k BIGINT, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE dst (k BIGINT, s BIGINT) WITH ('connector' = 'print');\n\
         INSERT INTO dst SELECT k, SUM(v) FROM src GROUP BY k;\n",
        dir.path().join("in.csv").display()
    );
    std::fs::write(dir.path().join("job.sql"), sql).expect("write job");

    let output = Command::new(env!("CARGO_BIN_EXE_riffle"))
        .args(["run", "job.sql", "--set", "state.backend.type=rocksdb"])
        .args(["--set", "parallelism.default=2"])
        .env("TMPDIR", &tmp)
        .current_dir(dir.path())
        .output()
        .expect("run riffle");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The sum of key 0 (0, 7, …, 994) shows the aggregation ran on its RocksDB state.
    assert!(stdout.contains("+U[0, 71071]"), "{stdout}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("read TMPDIR")
        .map(|entry| entry.map(|e| e.file_name()))
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
