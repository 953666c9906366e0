//! `riffle export` over the fixture jobs: every job exports for every target, syntax the target
//! lacks is rewritten, the round trip through migrate gives back the same job, and the bundle and
//! representative exports match reviewed snapshots. (That Flink plans every exported job is checked
//! on real Flink by `tests/flink/validate_exports.py`.)

use std::path::Path;

use riffle_toolkit::export::bundle::{bundle, BundleOptions};
use riffle_toolkit::export::{export_job, ExportOptions, SinkConnector};
use riffle_toolkit::migrate::{migrate_job, render_text, MigrateOptions};
use riffle_toolkit::{check_job, JobSource, Status};

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

fn fixture(name: &str) -> JobSource {
    fixtures()
        .into_iter()
        .find(|j| j.path == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn options(version: &str, connector: SinkConnector) -> ExportOptions {
    let mut o = ExportOptions::for_flink(version).unwrap_or_else(|e| panic!("{e}"));
    o.connector = connector;
    o.namesrv = Some("rocketmq-ns:9876".into());
    o.bootstrap_servers = Some("kafka:9092".into());
    o
}

fn rocketmq(release: &str) -> SinkConnector {
    SinkConnector::Rocketmq {
        release: release.into(),
    }
}

#[test]
fn unknown_targets_are_refused() {
    assert!(ExportOptions::for_flink("1.14").is_err());
    assert!(ExportOptions::for_flink("latest").is_err());
    assert!(ExportOptions::for_flink("2.3").is_ok());
}

#[test]
fn every_fixture_exports_for_every_target() {
    let jobs = fixtures();
    let versions: Vec<String> = riffle_dialects::mappings()
        .flink
        .releases
        .iter()
        .map(|r| r.version.to_string())
        .collect();
    for version in &versions {
        for connector in [rocketmq("legacy"), rocketmq("1.15.0"), SinkConnector::Kafka] {
            let opts = options(version, connector.clone());
            for job in &jobs {
                let out = export_job(job, &opts);
                assert_eq!(
                    out.changes.error, None,
                    "{} for {version} {connector:?}",
                    job.path
                );
                let parsed = riffle_sql::parse_script(&out.changes.output);
                assert!(
                    parsed.diagnostics.is_empty(),
                    "{} for {version} {connector:?} does not parse: {:?}",
                    job.path,
                    parsed.diagnostics
                );
                // rsqlDB syntax and pre-1.11 options never reach Flink.
                let check = check_job(&JobSource {
                    path: job.path.clone(),
                    text: out.changes.output.clone(),
                });
                for f in &check.findings {
                    assert!(
                        !matches!(
                            f.code.as_str(),
                            "ddl.rsqldb-options"
                                | "ddl.legacy-option-style"
                                | "ddl.legacy-watermark"
                                | "ddl.header-column"
                        ),
                        "{}: {} left in the export",
                        job.path,
                        f.code
                    );
                }
            }
        }
    }
}

#[test]
fn session_tvfs_and_named_arguments_are_rewritten_for_older_flink() {
    let session = fixture("window_session_partitioned.sql");
    let old = export_job(&session, &options("1.18", rocketmq("legacy")));
    assert!(
        !old.changes.output.contains("SESSION(TABLE"),
        "{}",
        old.changes.output
    );
    assert!(
        old.changes
            .output
            .contains("GROUP BY user_id, device, SESSION(event_time, INTERVAL '20' MINUTE)"),
        "{}",
        old.changes.output
    );
    assert!(old
        .changes
        .output
        .contains("SESSION_START(event_time, INTERVAL '20' MINUTE) AS session_start"));
    let new = export_job(&session, &options("1.19", rocketmq("legacy")));
    assert!(new
        .changes
        .output
        .contains("SESSION(TABLE playback_events PARTITION BY (user_id, device)"));

    let named = fixture("window_hop_named_args.sql");
    let old = export_job(&named, &options("1.18", rocketmq("legacy")));
    assert!(old.changes.output.contains("HOP(TABLE api_requests, DESCRIPTOR(request_time), INTERVAL '1' MINUTE, INTERVAL '10' MINUTE)"), "{}", old.changes.output);
    let new = export_job(&named, &options("1.19", rocketmq("legacy")));
    assert!(new.changes.output.contains("SLIDE => INTERVAL '1' MINUTE"));
}

#[test]
fn state_ttl_hints_go_before_flink_1_18() {
    let job = fixture("regular_join_full_outer_ttl.sql");
    let old = export_job(&job, &options("1.17", rocketmq("legacy")));
    assert!(
        !old.changes.output.contains("/*+ STATE_TTL"),
        "{}",
        old.changes.output
    );
    assert!(
        old.changes.output.contains("SELECT\n    COALESCE"),
        "{}",
        old.changes.output
    );
    assert!(old
        .changes
        .changes
        .iter()
        .any(|c| c.code == "export.hint.state_ttl"));
    let new = export_job(&job, &options("1.18", rocketmq("legacy")));
    assert!(new.changes.output.contains("/*+ STATE_TTL"));
}

#[test]
fn newer_functions_and_keys_are_reported() {
    let job = JobSource {
        path: "f.sql".into(),
        text: "SET 'table.exec.mini-batch.enabled' = 'true';\nSELECT ARRAY_SORT(ARRAY[3, 1, 2]);\n"
            .into(),
    };
    let since = riffle_dialects::function("ARRAY_SORT")
        .and_then(|f| f.since.clone())
        .unwrap_or_default();
    let old = export_job(&job, &options("1.15", rocketmq("legacy")));
    assert!(
        old.changes
            .manual
            .iter()
            .any(|m| m.code == "export.function.array_sort" && m.reason.contains(&since)),
        "{:#?}",
        old.changes.manual
    );
    let new = export_job(&job, &options("2.3", rocketmq("legacy")));
    assert!(new.changes.manual.is_empty(), "{:#?}", new.changes.manual);
}

#[test]
fn embedded_store_tables_get_the_cluster_or_are_reported() {
    let job = fixture("kafka/nexmark_q1.sql");
    let riffle_job = migrate_job(&job, &MigrateOptions::default());
    assert!(!riffle_job.output.contains("rocketmq.client.endpoints"));
    let migrated = JobSource {
        path: job.path.clone(),
        text: riffle_job.output,
    };
    let exported = export_job(&migrated, &options("1.20", rocketmq("legacy")));
    assert!(exported
        .changes
        .output
        .contains("'nameServerAddress' = 'rocketmq-ns:9876'"));
    let mut no_cluster = options("1.20", rocketmq("legacy"));
    no_cluster.namesrv = None;
    let exported = export_job(&migrated, &no_cluster);
    assert!(exported
        .changes
        .manual
        .iter()
        .any(|m| m.message.contains("nameServerAddress")));
}

/// An upsert-kafka source migrates to a rocketmq upsert changelog read from the earliest
/// offset, and exports back to upsert-kafka, which always reads from there (no startup mode).
#[test]
fn upsert_sources_round_trip_through_kafka() {
    let job = fixture("kafka/upsert_account_tier_counts.sql");
    let migrated = migrate_job(&job, &MigrateOptions::default());
    assert!(migrated.manual.is_empty(), "{:?}", migrated.manual);
    assert!(migrated
        .output
        .contains("'rocketmq.source.startup.scan.mode' = 'earliest'"));
    let riffle_job = JobSource {
        path: job.path.clone(),
        text: migrated.output,
    };
    let exported = export_job(&riffle_job, &options("2.3", SinkConnector::Kafka));
    let accounts = exported
        .changes
        .output
        .split("CREATE TABLE")
        .find(|t| t.trim_start().starts_with("accounts"))
        .unwrap_or_default();
    assert!(
        accounts.contains("'connector' = 'upsert-kafka'"),
        "{accounts}"
    );
    assert!(!accounts.contains("startup"), "{accounts}");
}

/// The rocketmq tables and the Flink releases a rocketmq-flink release runs on.
#[test]
fn flink_2_has_no_rocketmq_flink_release() {
    let job = fixture("rocketmq_payment_risk_dotted.sql");
    let on_2 = export_job(&job, &options("2.3", rocketmq("legacy")));
    assert!(on_2
        .changes
        .manual
        .iter()
        .any(|m| m.code == "export.rocketmq-flink"));
    let on_1 = export_job(&job, &options("1.20", rocketmq("legacy")));
    assert!(!on_1
        .changes
        .manual
        .iter()
        .any(|m| m.code == "export.rocketmq-flink"));
    let kafka = export_job(&job, &options("2.3", SinkConnector::Kafka));
    assert!(!kafka.changes.output.contains("'connector' = 'rocketmq'"));
    assert!(kafka
        .jars
        .iter()
        .any(|j| j.artifact.contains("flink-sql-connector-kafka")));
}

/// Findings of `riffle check` as comparable (code, status, message) triples.
fn findings(text: &str) -> Vec<(String, Status, String)> {
    let report = check_job(&JobSource {
        path: "j.sql".into(),
        text: text.into(),
    });
    let mut f: Vec<_> = report
        .findings
        .into_iter()
        .map(|f| (f.code, f.status, f.message))
        .collect();
    f.sort();
    f
}

/// migrate(export(job)) is the job again for every Riffle job of the corpus (the migrated
/// fixtures): the same `riffle check` report.
#[test]
fn migrate_after_export_gives_back_the_job() {
    let migrate_opts = MigrateOptions {
        namesrv: Some("rocketmq-ns:9876".into()),
        ..MigrateOptions::default()
    };
    let export_opts = options("1.20", rocketmq("legacy"));
    let mut compared = 0;
    for job in fixtures() {
        let riffle_job = migrate_job(&job, &migrate_opts);
        if !riffle_job.manual.is_empty() {
            continue; // a job with items for a human is not a Riffle job yet
        }
        let riffle_job = JobSource {
            path: job.path.clone(),
            text: riffle_job.output,
        };
        let exported = export_job(&riffle_job, &export_opts);
        let back = migrate_job(
            &JobSource {
                path: job.path.clone(),
                text: exported.changes.output.clone(),
            },
            &migrate_opts,
        );
        assert_eq!(
            findings(&back.output),
            findings(&riffle_job.text),
            "{}: migrate(export(job)) differs:\n{}",
            job.path,
            back.unified_diff()
        );
        compared += 1;
    }
    assert!(compared >= 60, "only {compared} jobs compared");
}

const SNAPSHOTS: [(&str, &str, &str); 6] = [
    ("rocketmq_device_alerts_dotted.sql", "1.20", "legacy"),
    ("rocketmq_payment_risk_dotted.sql", "2.3", "kafka"),
    ("rsqldb_clicks_session.sql", "1.18", "legacy"),
    ("window_session_partitioned.sql", "1.17", "1.15.0"),
    ("cdc_canal_rocketmq.sql", "2.3", "kafka"),
    ("regular_join_full_outer_ttl.sql", "1.16", "legacy"),
];

#[test]
fn representative_exports_match_their_snapshots() {
    for (name, version, target) in SNAPSHOTS {
        let connector = if target == "kafka" {
            SinkConnector::Kafka
        } else {
            rocketmq(target)
        };
        let out = export_job(&fixture(name), &options(version, connector));
        let text = format!(
            "{}\njars: {:?}\n\n{}",
            render_text(std::slice::from_ref(&out.changes), ""),
            out.jars
                .iter()
                .map(|j| j.artifact.as_str())
                .collect::<Vec<_>>(),
            out.changes.unified_diff()
        );
        let snapshot = format!(
            "export__{}__{version}__{target}",
            name.trim_end_matches(".sql")
        );
        insta::assert_snapshot!(snapshot, text);
    }
}

#[test]
fn the_bundle_holds_sql_manifests_dockerfile_and_jars() {
    let out = export_job(
        &fixture("rocketmq_payment_risk_dotted.sql"),
        &options("1.20", SinkConnector::Kafka),
    );
    let files = bundle(
        &out,
        "rocketmq_payment_risk_dotted",
        &BundleOptions::for_job("rocketmq_payment_risk_dotted"),
    );
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "rocketmq_payment_risk_dotted.sql",
            "rocketmq_payment_risk_dotted.flinkdeployment.yaml",
            "rocketmq_payment_risk_dotted.flinksessionjob.yaml",
            "rocketmq_payment_risk_dotted.Dockerfile",
            "rocketmq_payment_risk_dotted.jars.txt",
            "rocketmq_payment_risk_dotted.export.json",
        ]
    );
    let get = |suffix: &str| {
        files
            .iter()
            .find(|f| f.name.ends_with(suffix))
            .map(|f| f.contents.clone())
            .unwrap_or_default()
    };
    assert_eq!(get(".sql"), out.changes.output);
    let report: serde_json::Value = serde_json::from_str(&get(".export.json")).unwrap_or_default();
    assert_eq!(report["flink_version"], "1.20");
    insta::assert_snapshot!("export__bundle__deployment", get(".flinkdeployment.yaml"));
    insta::assert_snapshot!("export__bundle__session_job", get(".flinksessionjob.yaml"));
    insta::assert_snapshot!("export__bundle__dockerfile", get(".Dockerfile"));
    insta::assert_snapshot!("export__bundle__jars", get(".jars.txt"));
}
