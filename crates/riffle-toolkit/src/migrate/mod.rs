//! `riffle migrate`: rewrites existing Flink SQL jobs into jobs Riffle runs, changing only what
//! needs it and leaving every other byte as it was.
//!
//! - `kafka` / `upsert-kafka` tables become `rocketmq` tables (`dialects/mappings/kafka-rocketmq.toml`);
//! - Flink's pre-1.11 `connector.type` option style becomes the current keys
//!   (`legacy-options.toml`);
//! - legacy rocketmq-flink keys and rsqlDB scripts (`type = 'rocketmq'`, `withOffset` watermarks,
//!   `header` columns) become current Flink SQL (`rocketmq-keys.toml`, `rsqldb.toml`);
//! - with [`MigrateOptions::modernize`], legacy group windows become window TVFs where that gives
//!   the same rows (`group-windows.toml`).
//!
//! Every rewrite is a text patch on a span of the original ([`patch`]); overlapping patches are
//! refused, never merged. The report ([`JobChanges`]) lists each change and each item left for a
//! human. Migrating a migrated job changes nothing.
//!
//! ```
//! use riffle_toolkit::{migrate::{migrate_job, MigrateOptions}, JobSource};
//! let job = JobSource {
//!     path: "j.sql".into(),
//!     text: "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'in', \
//!            'properties.bootstrap.servers' = 'k:9092', 'format' = 'json');\n\
//!            SELECT a FROM t;".into(),
//! };
//! let options = MigrateOptions { namesrv: Some("ns:9876".into()), ..Default::default() };
//! let out = migrate_job(&job, &options);
//! assert!(out.output.contains("'connector' = 'rocketmq', 'rocketmq.source.topic' = 'in'"));
//! assert!(out.output.contains("'rocketmq.client.endpoints' = 'ns:9876'"));
//! ```

pub(crate) mod ddl;
mod joins;
mod message_key;
pub(crate) mod options;
pub mod patch;
pub mod report;
pub(crate) mod source;
pub(crate) mod tables;
mod windows;

use std::collections::BTreeMap;

use rayon::prelude::*;
use riffle_sql::ast::StatementKind;
use riffle_sql::Severity;

pub use patch::{apply, Overlap, Patch};
pub use report::{render_json, render_text, Change, JobChanges, ManualItem};

use crate::check::JobSource;
use options::Log;
use source::SourceText;
use tables::Tables;

/// How to migrate.
#[derive(Debug, Clone, Default)]
pub struct MigrateOptions {
    /// The RocketMQ name server every Kafka cluster maps to (`--namesrv`).
    pub namesrv: Option<String>,
    /// Kafka `properties.bootstrap.servers` values -> name servers (a cluster map file); wins
    /// over `namesrv`.
    pub clusters: BTreeMap<String, String>,
    /// Rewrite legacy group windows into window TVFs (`--modernize`).
    pub modernize: bool,
}

impl MigrateOptions {
    /// Reads a cluster map: a TOML file with a `[clusters]` table of
    /// `"<bootstrap servers>" = "<name server>"` entries.
    pub fn read_cluster_map(text: &str) -> Result<BTreeMap<String, String>, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            clusters: BTreeMap<String, String>,
        }
        toml::from_str::<File>(text)
            .map(|f| f.clusters)
            .map_err(|e| e.to_string())
    }
}

/// Migrates many jobs in parallel; results come back in input order.
pub fn migrate_all(jobs: &[JobSource], options: &MigrateOptions) -> Vec<JobChanges> {
    jobs.par_iter().map(|j| migrate_job(j, options)).collect()
}

/// The common start of rewriting a job (migrate and export): parse it, log every statement that
/// does not parse as left for a human, and an empty change set whose output is the original text.
pub(crate) fn start_job(job: &JobSource) -> (riffle_sql::ParsedScript, Log, JobChanges) {
    let parsed = riffle_sql::parse_script(&job.text);
    let mut log = Log::default();
    for d in parsed
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        log.manual(
            d.code.clone(),
            d.span,
            "a statement that does not parse",
            format!("left as it is: {}", d.message),
        );
    }
    let changes = JobChanges {
        path: job.path.clone(),
        changes: Vec::new(),
        manual: Vec::new(),
        error: None,
        original: job.text.clone(),
        output: job.text.clone(),
    };
    (parsed, log, changes)
}

/// Migrates one job. Statements that do not parse are left as they are and reported.
pub fn migrate_job(job: &JobSource, options: &MigrateOptions) -> JobChanges {
    let (parsed, mut log, mut result) = start_job(job);
    let Some(src) = SourceText::new(&job.text) else {
        result.error = Some("the job does not tokenize".to_string());
        return result;
    };
    let tables = Tables::collect(&parsed.script);
    let mut patches = Vec::new();
    for statement in &parsed.script.statements {
        let StatementKind::CreateTable(table) = &statement.kind else {
            continue;
        };
        let Some(info) = tables.get(&table.name) else {
            continue;
        };
        let table_job = ddl::TableJob {
            table,
            info,
            src: &src,
            options,
        };
        patches.extend(ddl::migrate_table(&table_job, &mut log));
    }
    joins::report_proctime_calls(&parsed.script, &mut log);
    if options.modernize {
        let analysis = riffle_catalog::analyze(&parsed.script);
        patches.extend(windows::modernize(
            &parsed.script,
            &analysis.catalog,
            &src,
            &mut log,
        ));
    }
    result.changes = log.changes;
    result.manual = log.manual;
    match apply(&job.text, &patches) {
        Ok(output) => result.output = output,
        Err(overlap) => result.error = Some(overlap.to_string()),
    }
    result.sort();
    result
}
