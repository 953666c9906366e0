//! A helper for the Flink-backed validation (`tests/flink/validate_exports.py`), not a test of its
//! own: it writes every fixture job, exported for each target of `$RIFFLE_EXPORT_TARGETS`
//! (`<flink version>:<legacy|1.15.0|kafka>`, comma-separated; `migrate` stands for
//! `riffle migrate --modernize`), under `$RIFFLE_EXPORT_OUT/<target>/` with the fixture's relative
//! path, plus `report.json` per target. Ignored unless run explicitly.

use std::path::{Path, PathBuf};

use riffle_toolkit::export::{export_job, ExportOptions, SinkConnector};
use riffle_toolkit::migrate::{migrate_job, render_json, JobChanges, MigrateOptions};
use riffle_toolkit::JobSource;

fn fixtures() -> Vec<JobSource> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jobs");
    let mut jobs = Vec::new();
    for dir in [root.clone(), root.join("kafka")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for path in entries.flatten().map(|e| e.path()) {
            if path.extension().is_some_and(|e| e == "sql") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let rel = path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                jobs.push(JobSource { path: rel, text });
            }
        }
    }
    jobs.sort_by(|a, b| a.path.cmp(&b.path));
    jobs
}

#[test]
#[ignore = "run by tests/flink/validate_exports.py"]
fn write_exports_for_flink() {
    let (Some(out), Some(targets)) = (
        std::env::var_os("RIFFLE_EXPORT_OUT").map(PathBuf::from),
        std::env::var("RIFFLE_EXPORT_TARGETS").ok(),
    ) else {
        panic!("set RIFFLE_EXPORT_OUT and RIFFLE_EXPORT_TARGETS");
    };
    let jobs = fixtures();
    for target in targets.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let results: Vec<JobChanges> = if target == "migrate" {
            let options = MigrateOptions {
                namesrv: Some("rocketmq-ns:9876".into()),
                modernize: true,
                ..MigrateOptions::default()
            };
            jobs.iter().map(|j| migrate_job(j, &options)).collect()
        } else {
            let (version, connector) = target
                .split_once(':')
                .unwrap_or_else(|| panic!("target `{target}` is not <version>:<connector>"));
            let mut options = ExportOptions::for_flink(version).unwrap_or_else(|e| panic!("{e}"));
            options.connector = match connector {
                "kafka" => SinkConnector::Kafka,
                release => SinkConnector::Rocketmq {
                    release: release.to_string(),
                },
            };
            options.namesrv = Some("rocketmq-ns:9876".into());
            options.bootstrap_servers = Some("kafka:9092".into());
            jobs.iter()
                .map(|j| export_job(j, &options).changes)
                .collect()
        };
        let dir = out.join(target.replace(':', "-"));
        for result in &results {
            let path = dir.join(&result.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
            }
            std::fs::write(&path, &result.output)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let report = dir.join("report.json");
        std::fs::write(&report, render_json(&results))
            .unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    }
}
