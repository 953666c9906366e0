//! `riffle export`: turns a job that runs on Riffle into what runs on Apache Flink — Flink SQL for
//! a chosen Flink release, plus a deployment bundle ([`bundle`]).
//!
//! The export reads the same mappings as `riffle migrate` (`dialects/mappings/`), in the other
//! direction:
//! - rsqlDB syntax, legacy rocketmq-flink keys and the pre-1.11 `connector.type` style are first
//!   written as current Flink SQL (exactly as migrate does, Kafka tables kept);
//! - rocketmq tables get the option keys of the chosen rocketmq-flink release
//!   (`rocketmq-keys.toml`), or become Kafka tables with [`SinkConnector::Kafka`]
//!   (`kafka-rocketmq.toml`); tables on Riffle's embedded store get the given cluster;
//!   Riffle-only options are removed or reported;
//! - SQL the target release lacks is rewritten where an exact older form exists (SESSION window
//!   TVF -> legacy SESSION group window, named TVF arguments -> positional) and reported
//!   otherwise (functions, `SET` keys, hints newer than the target; `flink-releases.toml`).
//!
//! Like migrate, every rewrite is a span patch on the original text.

pub mod bundle;
mod connectors;
mod syntax;

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use riffle_dialects::{mappings, FlinkVersion};
use riffle_sql::ast::StatementKind;
use serde::Serialize;

use crate::check::JobSource;
use crate::migrate::ddl::{normalize_table, TableJob};
use crate::migrate::source::SourceText;
use crate::migrate::tables::Tables;
use crate::migrate::{apply, start_job, JobChanges, MigrateOptions};

/// Where rocketmq tables go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkConnector {
    /// The rocketmq-flink connector, with the keys of this release (`rocketmq-keys.toml`).
    Rocketmq {
        /// The release name (`legacy`, `1.15.0`).
        release: String,
    },
    /// Flink's Kafka connectors (`kafka`, or `upsert-kafka` for upsert tables).
    Kafka,
}

/// How to export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The Flink release the SQL must run on.
    pub flink_version: FlinkVersion,
    /// Where rocketmq tables go.
    pub connector: SinkConnector,
    /// The RocketMQ name server for tables on Riffle's embedded store (`--namesrv`).
    pub namesrv: Option<String>,
    /// The Kafka cluster for [`SinkConnector::Kafka`] when the cluster map has none
    /// (`--bootstrap-servers`).
    pub bootstrap_servers: Option<String>,
    /// Kafka bootstrap servers -> name server (the same cluster map file as migrate's), read
    /// backwards.
    pub clusters: BTreeMap<String, String>,
}

/// The rocketmq-flink release export uses unless told otherwise: the one whose table factories
/// declare every key they read (see `rocketmq-keys.toml`).
pub const DEFAULT_ROCKETMQ_RELEASE: &str = "legacy";

impl ExportOptions {
    /// Options for a target release (`1.15` ... `2.3`), rocketmq tables on the default
    /// rocketmq-flink release.
    pub fn for_flink(version: &str) -> Result<ExportOptions, String> {
        let flink_version = FlinkVersion::parse(version)?;
        if mappings().flink.release(flink_version).is_none() {
            let known: Vec<String> = mappings()
                .flink
                .releases
                .iter()
                .map(|r| r.version.to_string())
                .collect();
            return Err(format!(
                "Flink {flink_version} is not an export target (targets: {})",
                known.join(", ")
            ));
        }
        Ok(ExportOptions {
            flink_version,
            connector: SinkConnector::Rocketmq {
                release: DEFAULT_ROCKETMQ_RELEASE.to_string(),
            },
            namesrv: None,
            bootstrap_servers: None,
            clusters: BTreeMap::new(),
        })
    }
}

/// A jar the exported job needs on Flink's classpath.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Jar {
    /// Maven coordinates (`group:artifact:version`).
    pub artifact: String,
    /// The jar's file name.
    pub file: String,
    /// Where it comes from, when not from Maven Central.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its Maven Central URL, when it is published there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Jar {
    /// A jar published on Maven Central.
    fn maven(artifact: &str) -> Jar {
        let parts: Vec<&str> = artifact.split(':').collect();
        let (file, url) = match parts.as_slice() {
            [group, name, version] => {
                let file = format!("{name}-{version}.jar");
                let url = format!(
                    "https://repo.maven.apache.org/maven2/{}/{name}/{version}/{file}",
                    group.replace('.', "/")
                );
                (file, Some(url))
            }
            _ => (artifact.to_string(), None),
        };
        Jar {
            artifact: artifact.to_string(),
            file,
            note: None,
            url,
        }
    }
}

/// One exported job.
#[derive(Debug, Clone, Serialize)]
pub struct ExportedJob {
    /// The rewrite: `output` is the Flink SQL.
    #[serde(flatten)]
    pub changes: JobChanges,
    /// The target release.
    #[serde(serialize_with = "as_string")]
    pub flink_version: FlinkVersion,
    /// The Flink connectors the SQL uses.
    pub connectors: Vec<String>,
    /// The jars it needs beyond Flink's distribution.
    pub jars: Vec<Jar>,
}

fn as_string<S: serde::Serializer>(v: &FlinkVersion, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// Exports many jobs in parallel; results come back in input order.
pub fn export_all(jobs: &[JobSource], options: &ExportOptions) -> Vec<ExportedJob> {
    jobs.par_iter().map(|j| export_job(j, options)).collect()
}

/// Exports one job.
pub fn export_job(job: &JobSource, options: &ExportOptions) -> ExportedJob {
    let (parsed, mut log, mut changes) = start_job(job);
    let mut exported = ExportedJob {
        changes: changes.clone(),
        flink_version: options.flink_version,
        connectors: Vec::new(),
        jars: Vec::new(),
    };
    let Some(src) = SourceText::new(&job.text) else {
        exported.changes.error = Some("the job does not tokenize".to_string());
        return exported;
    };
    let tables = Tables::collect(&parsed.script);
    let migrate_options = MigrateOptions::default();
    let mut patches = Vec::new();
    for statement in &parsed.script.statements {
        let StatementKind::CreateTable(table) = &statement.kind else {
            continue;
        };
        let Some(info) = tables.get(&table.name) else {
            continue;
        };
        let table_job = TableJob {
            table,
            info,
            src: &src,
            options: &migrate_options,
        };
        let mut rewrite = normalize_table(&table_job, &mut log, false);
        connectors::export_table(&table_job, &mut rewrite, options, &mut log);
        patches.extend(rewrite.into_patches(&src));
    }
    let analysis = riffle_catalog::analyze(&parsed.script);
    patches.extend(syntax::downgrade(
        &parsed.script,
        &analysis.catalog,
        &src,
        options.flink_version,
        &mut log,
    ));
    changes.changes = log.changes;
    changes.manual = log.manual;
    match apply(&job.text, &patches) {
        Ok(output) => changes.output = output,
        Err(overlap) => changes.error = Some(overlap.to_string()),
    }
    changes.sort();
    let output = changes.output.clone();
    let (connectors, jars) = needed_jars(&output, options, &mut changes);
    exported.changes = changes;
    exported.connectors = connectors;
    exported.jars = jars;
    exported
}

/// The connectors the exported SQL uses and the jars they (and their formats) need; unknown
/// connectors are reported.
fn needed_jars(
    sql: &str,
    options: &ExportOptions,
    changes: &mut JobChanges,
) -> (Vec<String>, Vec<Jar>) {
    let parsed = riffle_sql::parse_script(sql);
    let tables = Tables::collect(&parsed.script);
    let rules = &mappings().flink;
    let release = rules.release(options.flink_version);
    let mut connectors = BTreeSet::new();
    let mut jars = BTreeSet::new();
    for (name, info) in &tables.by_name {
        let Some(connector) = info.connector.clone() else {
            continue;
        };
        connectors.insert(connector.clone());
        if rules.jars.builtin.contains(&connector) {
            // In every Flink distribution.
        } else if rules.jars.kafka.contains(&connector) {
            if let Some(r) = release {
                jars.insert(Jar::maven(&r.kafka_jar));
            }
        } else if connector == "rocketmq" {
            if let SinkConnector::Rocketmq { release } = &options.connector {
                if let Some(r) = mappings().rocketmq.release(release) {
                    jars.insert(Jar {
                        artifact: r.artifact.clone(),
                        file: r.jar.clone(),
                        note: Some(r.build.clone()),
                        url: None,
                    });
                }
            }
        } else {
            changes.manual.push(crate::migrate::ManualItem {
                code: format!("export.connector.{connector}"),
                message: format!("connector '{connector}' of table `{name}`"),
                span: riffle_sql::Span::default(),
                reason: "its jar is not known to riffle; add it to the bundle by hand".to_string(),
            });
        }
        for key in ["format", "value.format", "key.format"] {
            if let Some(artifact) = info
                .options
                .get(key)
                .and_then(|f| rules.jars.formats.get(f))
            {
                jars.insert(Jar::maven(&format!(
                    "{artifact}:{}.0",
                    options.flink_version
                )));
            }
        }
    }
    (connectors.into_iter().collect(), jars.into_iter().collect())
}
