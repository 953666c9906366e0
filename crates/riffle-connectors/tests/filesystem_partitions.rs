//! Partitioned filesystem tables through the connector API: what the sink writes at least once
//! and exactly once (staged per checkpoint, published by the committer), the success files of
//! the commit policy, and the source reading the partitions back. (What Flink writes and reads is
//! checked by the conformance cases `formats/filesystem_partition*`.)

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, Int32Array, StringArray};
use arrow::datatypes::{DataType, Field as ArrowField, Schema};
use arrow::record_batch::RecordBatch;
use riffle_connectors::print::PrintTarget;
use riffle_connectors::{open_sink, open_source, ChangeBatch, SubtaskInfo};
use riffle_plan::{ConnectorSpec, Field};

fn spec(dir: &Path, connector: &str, extra: &[(&str, &str)]) -> ConnectorSpec {
    let mut options = BTreeMap::from([
        ("connector".to_string(), connector.to_string()),
        ("path".to_string(), dir.display().to_string()),
        ("format".to_string(), "csv".to_string()),
    ]);
    options.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    ConnectorSpec {
        table: "t".into(),
        connector: connector.into(),
        options,
        partition_keys: vec!["dt".into(), "hr".into()],
        ..ConnectorSpec::default()
    }
}

fn fields() -> Vec<Field> {
    let field = |name: &str, flink: &str, arrow: &str| Field {
        name: name.into(),
        data_type: flink.into(),
        arrow_type: arrow.into(),
        nullable: true,
        rowtime: false,
    };
    vec![
        field("id", "INT", "Int32"),
        field("dt", "STRING", "Utf8"),
        field("hr", "INT", "Int32"),
    ]
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        ArrowField::new("id", DataType::Int32, true),
        ArrowField::new("dt", DataType::Utf8, true),
        ArrowField::new("hr", DataType::Int32, true),
    ]))
}

fn rows(ids: &[i32], dts: &[Option<&str>], hrs: &[Option<i32>]) -> ChangeBatch {
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int32Array::from(ids.to_vec())),
            Arc::new(StringArray::from(dts.to_vec())),
            Arc::new(Int32Array::from(hrs.to_vec())),
        ],
    )
    .unwrap();
    ChangeBatch::inserts(batch)
}

const SUBTASK: SubtaskInfo = SubtaskInfo {
    index: 0,
    parallelism: 1,
    earlier_reads: 0,
};

/// Every visible file below `dir` (relative path) with its text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if !path.file_name().unwrap().to_string_lossy().starts_with('.') {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

/// The rows the source reads back, as `id,dt,hr` lines, sorted.
fn read_back(spec: &ConnectorSpec) -> Vec<String> {
    let mut reader = open_source(spec, schema(), SUBTASK).unwrap();
    let mut out = Vec::new();
    while let Some(batch) = reader.next_batch().unwrap() {
        let id = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let dt = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let hr = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        for i in 0..batch.num_rows() {
            out.push(format!("{},{},{}", id.value(i), dt.value(i), hr.value(i)));
        }
    }
    out.sort();
    out
}

#[test]
fn at_least_once_writes_partition_directories_and_success_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spec = spec(
        &out,
        "filesystem",
        &[("sink.partition-commit.policy.kind", "success-file")],
    );
    let mut sink = open_sink(&spec, &fields(), SUBTASK, &PrintTarget::default()).unwrap();
    sink.write(&rows(
        &[1, 2, 3, 4],
        &[Some("a/b"), Some("a/b"), None, Some("")],
        &[Some(1), Some(2), Some(1), None],
    ))
    .unwrap();
    sink.finish().unwrap();
    let written = files(&out);
    assert_eq!(
        written.into_iter().collect::<Vec<_>>(),
        [
            ("dt=__DEFAULT_PARTITION__/hr=1/_SUCCESS", ""),
            ("dt=__DEFAULT_PARTITION__/hr=1/part-0-0.csv", "3\n"),
            (
                "dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__/_SUCCESS",
                ""
            ),
            (
                "dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__/part-0-0.csv",
                "4\n"
            ),
            ("dt=a%2Fb/hr=1/_SUCCESS", ""),
            ("dt=a%2Fb/hr=1/part-0-0.csv", "1\n"),
            ("dt=a%2Fb/hr=2/_SUCCESS", ""),
            ("dt=a%2Fb/hr=2/part-0-0.csv", "2\n"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // Reading the table back fails on the default partitions, as in Flink.
    let err = open_source(&spec, schema(), SUBTASK).err().unwrap();
    assert!(err.message.contains("default partition"), "{}", err.message);
}

#[test]
fn exactly_once_publishes_each_partitions_rows_with_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let spec = spec(&out, "filesystem", &[]);
    let mut sink = open_sink(&spec, &fields(), SUBTASK, &PrintTarget::default()).unwrap();
    let committer = sink.enable_exactly_once("job-t").unwrap().unwrap();
    sink.write(&rows(&[1, 2], &[Some("x"), Some("y")], &[Some(1), Some(1)]))
        .unwrap();
    let first = sink.prepare_commit(1).unwrap();
    sink.write(&rows(&[3], &[Some("x")], &[Some(1)])).unwrap();
    let second = sink.prepare_commit(2).unwrap();
    assert!(files(&out).is_empty(), "nothing visible before a commit");
    committer.commit(1, &first).unwrap();
    // A transaction committed again (after a restore) changes nothing.
    committer.commit(1, &first).unwrap();
    committer.commit(2, &second).unwrap();
    sink.finish().unwrap();
    assert_eq!(
        files(&out).into_keys().collect::<Vec<_>>(),
        [
            "dt=x/hr=1/part-0-1.csv",
            "dt=x/hr=1/part-0-2.csv",
            "dt=y/hr=1/part-0-1.csv"
        ]
    );
    assert_eq!(read_back(&spec), ["1,x,1", "2,y,1", "3,x,1"]);
}

#[test]
fn a_partitioned_sink_of_a_connector_without_partitions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "rocketmq", &[]);
    let err = open_sink(&spec, &fields(), SUBTASK, &PrintTarget::default())
        .err()
        .unwrap();
    assert!(
        err.message.contains("SupportsPartitioning"),
        "{}",
        err.message
    );
}

#[test]
fn commit_policies_without_a_meaning_here_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, expected) in [
        ("metastore", "'metastore' partition commit policy"),
        ("custom", "'custom' partition commit policy"),
        ("success-file,bogus", "'bogus'"),
    ] {
        let spec = spec(
            dir.path(),
            "filesystem",
            &[("sink.partition-commit.policy.kind", kind)],
        );
        let err = open_sink(&spec, &fields(), SUBTASK, &PrintTarget::default())
            .err()
            .unwrap();
        assert!(err.message.contains(expected), "{kind}: {}", err.message);
    }
}
