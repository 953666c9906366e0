//! `riffle migrate` over every job in `fixtures/jobs/`: the rewrite is clean (what `riffle check`
//! flags as needing migration is rewritten or reported, and the result needs none), idempotent,
//! keeps comments, and matches reviewed snapshots for representative jobs.

use std::path::{Path, PathBuf};

use riffle_toolkit::migrate::{migrate_job, render_text, JobChanges, MigrateOptions};
use riffle_toolkit::{check_job, JobSource, Status};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jobs")
}

/// Every fixture job, with its path relative to `fixtures/jobs`.
fn fixtures() -> Vec<JobSource> {
    let root = fixtures_dir();
    let mut jobs = Vec::new();
    for dir in [root.clone(), root.join("kafka")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "sql") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let rel = path.strip_prefix(&root).unwrap_or(&path);
                jobs.push(JobSource {
                    path: rel.display().to_string(),
                    text,
                });
            }
        }
    }
    jobs.sort_by(|a, b| a.path.cmp(&b.path));
    jobs
}

fn options(modernize: bool) -> MigrateOptions {
    MigrateOptions {
        namesrv: Some("rocketmq-ns:9876".into()),
        modernize,
        ..MigrateOptions::default()
    }
}

fn migrated(job: &JobSource, changes: &JobChanges) -> JobSource {
    JobSource {
        path: job.path.clone(),
        text: changes.output.clone(),
    }
}

#[test]
fn the_fixture_corpus_is_complete() {
    assert_eq!(fixtures().len(), 83);
}

/// After migrate, `riffle check` reports nothing that needs migration; everything it reported as
/// needing migration before was rewritten or listed for a human under the same code.
#[test]
fn migrated_jobs_need_no_further_migration() {
    for modernize in [false, true] {
        for job in fixtures() {
            let result = migrate_job(&job, &options(modernize));
            assert_eq!(result.error, None, "{}", job.path);
            let before = check_job(&job);
            let after = check_job(&migrated(&job, &result));
            let left: Vec<_> = after
                .findings
                .iter()
                .filter(|f| f.status == Status::NeedsMigration)
                .collect();
            assert!(
                left.is_empty(),
                "{} still needs migration: {left:#?}",
                job.path
            );
            for finding in before
                .findings
                .iter()
                .filter(|f| f.status == Status::NeedsMigration)
            {
                let covered = result.changes.iter().any(|c| c.code == finding.code)
                    || result.manual.iter().any(|m| m.code == finding.code);
                assert!(
                    covered,
                    "{}: `{}` ({}) was neither rewritten nor reported",
                    job.path, finding.code, finding.message
                );
            }
            let parse_errors = after
                .findings
                .iter()
                .filter(|f| f.code == "parse-error")
                .count();
            assert_eq!(parse_errors, 0, "{} does not parse after migrate", job.path);
        }
    }
}

/// The only errors `riffle check` finds in a migrated job are the items left for a human.
#[test]
fn errors_after_migrate_are_the_items_left_for_a_human() {
    for job in fixtures() {
        let result = migrate_job(&job, &options(true));
        let before = check_job(&job);
        let after = check_job(&migrated(&job, &result));
        let new_errors: Vec<_> = after
            .findings
            .iter()
            .filter(|f| f.status == Status::Error)
            .filter(|f| {
                !before.findings.iter().any(|b| {
                    b.status == Status::Error && b.code == f.code && b.message == f.message
                })
            })
            .collect();
        if !new_errors.is_empty() {
            assert!(
                !result.manual.is_empty(),
                "{}: new errors without items for a human: {new_errors:#?}",
                job.path
            );
        }
    }
}

#[test]
fn migrating_twice_changes_nothing_the_second_time() {
    for modernize in [false, true] {
        for job in fixtures() {
            let once = migrate_job(&job, &options(modernize));
            let twice = migrate_job(&migrated(&job, &once), &options(modernize));
            assert_eq!(twice.output, once.output, "{}", job.path);
            assert!(
                twice.changes.is_empty(),
                "{}: {:#?}",
                job.path,
                twice.changes
            );
        }
    }
}

/// Every comment of the original job is still in the migrated job.
#[test]
fn comments_survive() {
    for job in fixtures() {
        let result = migrate_job(&job, &options(true));
        for line in job
            .text
            .lines()
            .filter(|l| l.trim_start().starts_with("--"))
        {
            assert!(result.output.contains(line), "{}: lost `{line}`", job.path);
        }
    }
}

#[test]
fn nothing_to_migrate_leaves_the_text_alone() {
    for name in [
        "window_tumble_offset.sql",
        "datagen_orders_print.sql",
        "rocketmq_payment_risk_dotted.sql",
    ] {
        let job = fixtures()
            .into_iter()
            .find(|j| j.path == name)
            .unwrap_or_else(|| panic!("{name}"));
        let result = migrate_job(&job, &options(true));
        assert!(!result.is_changed(), "{name}: {:#?}", result.changes);
        assert!(result.changes.is_empty());
    }
}

/// Without a name server, Kafka tables move to Riffle's embedded store.
#[test]
fn without_a_name_server_tables_use_the_embedded_store() {
    let job = fixtures()
        .into_iter()
        .find(|j| j.path == "kafka/nexmark_q1.sql")
        .unwrap_or_else(|| panic!("nexmark_q1"));
    let result = migrate_job(&job, &MigrateOptions::default());
    assert!(!result.output.contains("bootstrap.servers"));
    assert!(!result.output.contains("rocketmq.client.endpoints"));
    assert!(result.changes.iter().any(|c| c
        .note
        .as_deref()
        .is_some_and(|n| n.contains("embedded store"))));
    // A cluster map wins over --namesrv.
    let mut opts = options(false);
    opts.clusters.insert(
        "kafka-0.kafka:9092,kafka-1.kafka:9092".into(),
        "nexmark-ns:9876".into(),
    );
    let result = migrate_job(&job, &opts);
    assert!(result
        .output
        .contains("'rocketmq.client.endpoints' = 'nexmark-ns:9876'"));
}

const SNAPSHOTS: [&str; 12] = [
    "kafka/audit_log_topic_pattern.sql",
    "kafka/clickstream_multi_topic.sql",
    "kafka/legacy_connector_type_kafka.sql",
    "kafka/nexmark_q5.sql",
    "kafka/nexmark_q11.sql",
    "kafka/upsert_wallet_balances.sql",
    "kafka/iot_readings_keyed.sql",
    "rocketmq_user_behavior_legacy.sql",
    "rocketmq_mixed_generations.sql",
    "rsqldb_clicks_tumble.sql",
    "rsqldb_filter_projection.sql",
    "rsqldb_ticket_dim_join.sql",
];

#[test]
fn representative_jobs_match_their_snapshots() {
    let jobs = fixtures();
    for name in SNAPSHOTS {
        let job = jobs
            .iter()
            .find(|j| j.path == name)
            .unwrap_or_else(|| panic!("{name}"));
        let result = migrate_job(job, &options(true));
        let text = format!(
            "{}\n{}",
            render_text(std::slice::from_ref(&result), ""),
            result.unified_diff()
        );
        let snapshot = format!(
            "migrate__{}",
            name.trim_end_matches(".sql").replace('/', "__")
        );
        insta::assert_snapshot!(snapshot, text);
    }
}
