//! `riffle check`: parse, analyse and classify jobs against what Riffle really runs.

use std::collections::HashSet;

use rayon::prelude::*;
use riffle_dialects::Support;
use riffle_sql::ast::{Statement, StatementKind};
use riffle_sql::{Diagnostic, Severity};

use crate::features::{self, FeatureUse};
use crate::report::{Finding, JobReport, StatementSummary, Status};

/// One job to check: a display path and its SQL text.
#[derive(Debug, Clone)]
pub struct JobSource {
    /// Path shown in reports (as the user gave it).
    pub path: String,
    /// The SQL text.
    pub text: String,
}

/// Checks many jobs in parallel; reports come back in input order.
pub fn check_all(jobs: &[JobSource]) -> Vec<JobReport> {
    jobs.par_iter().map(check_job).collect()
}

/// Checks one job: parse errors, semantic errors (Flink's rules), every feature it uses, and the
/// engine's own verdict (the planner `riffle run` uses).
pub fn check_job(job: &JobSource) -> JobReport {
    let parsed = riffle_sql::parse_script(&job.text);
    let analysis = riffle_catalog::analyze(&parsed.script);
    let statements = &parsed.script.statements;

    let mut findings: Vec<Finding> = parsed
        .diagnostics
        .iter()
        .chain(analysis.diagnostics.iter())
        .map(|d| from_diagnostic(d, statements))
        .collect();
    let mut seen = HashSet::new();
    for feature_use in features::collect(&parsed.script, &analysis.catalog) {
        if !seen.insert((feature_use.statement, feature_use.code.clone())) {
            continue;
        }
        if let Some(finding) = classify(&feature_use) {
            findings.push(finding);
        }
    }
    if !findings.iter().any(|f| f.status == Status::Error) {
        findings.extend(engine_findings(&parsed.script, &findings));
    }
    findings.sort_by_key(|f| (f.span.start, f.span.end));

    let summaries = statements
        .iter()
        .enumerate()
        .map(|(index, statement)| StatementSummary {
            description: describe(statement),
            span: statement.span,
            status: findings
                .iter()
                .filter(|f| f.statement == Some(index))
                .map(|f| f.status)
                .max()
                .unwrap_or(Status::Supported),
        })
        .collect();
    let status = findings
        .iter()
        .map(|f| f.status)
        .max()
        .unwrap_or(Status::Supported);
    JobReport {
        path: job.path.clone(),
        status,
        statements: summaries,
        findings,
        source: job.text.clone(),
    }
}

/// A parse or analysis diagnostic as a finding of the statement that contains it.
fn from_diagnostic(diagnostic: &Diagnostic, statements: &[Statement]) -> Finding {
    let status = match diagnostic.severity {
        Severity::Error => Status::Error,
        Severity::Warning => Status::NeedsMigration,
        Severity::Note => Status::Supported,
    };
    let statement = statements
        .iter()
        .position(|s| s.span.start <= diagnostic.span.start && diagnostic.span.start < s.span.end);
    Finding {
        status,
        code: diagnostic.code.clone(),
        message: diagnostic.message.clone(),
        span: diagnostic.span,
        help: diagnostic.help.clone(),
        statement,
    }
}

/// What the engine itself rejects when it plans the job exactly as `riffle run` would (only asked
/// once the job is free of errors). The planner reaches constructs the feature registry does not
/// name (a particular cast, a function's argument types), so its verdict is part of every report;
/// a rejection at a place the registry already reported as unsupported adds nothing.
fn engine_findings(script: &riffle_sql::ast::Script, registry: &[Finding]) -> Vec<Finding> {
    let Err(diagnostics) = riffle_plan::plan_script(script) else {
        return Vec::new();
    };
    diagnostics
        .iter()
        .filter(|d| {
            !registry
                .iter()
                .any(|f| f.status >= Status::Unsupported && f.span == d.span)
        })
        .map(|d| {
            // Analysis applied Flink's rules and found nothing wrong, so a statement the planner
            // cannot plan is Riffle's limitation, not the job's fault.
            let mut finding = from_diagnostic(d, &script.statements);
            finding.status = Status::Unsupported;
            finding.help.get_or_insert_with(|| {
                "the Riffle engine cannot run this statement as written yet".to_string()
            });
            finding
        })
        .collect()
}

/// Classifies one feature use with the support registry, or `None` when nothing is worth reporting
/// (e.g. an unknown function or connector, which analysis already reported as an error).
fn classify(feature_use: &FeatureUse) -> Option<Finding> {
    let code = feature_use.code.as_str();
    let (title, support) = if let Some(name) = code.strip_prefix("function.") {
        match riffle_dialects::function(name) {
            Some(spec) => (format!("function {}", spec.name), spec.support.clone()),
            // User-defined functions are classified at their CREATE FUNCTION (`udf.*`); unknown
            // functions were already reported by analysis.
            None => return None,
        }
    } else if let Some(name) = code.strip_prefix("connector.") {
        let schema = riffle_dialects::connector(name)?;
        (
            format!("connector '{}'", schema.name),
            schema.support.clone(),
        )
    } else if let Some(name) = code.strip_prefix("format.") {
        let schema = riffle_dialects::format(name)?;
        (format!("format '{}'", schema.name), schema.support.clone())
    } else if let Some(rest) = code.strip_prefix("connector-format.") {
        let (connector, format) = rest.split_once('.')?;
        let reason = riffle_dialects::connector(connector)?
            .format
            .unsupported
            .get(format)?;
        (
            format!("format '{format}' with connector '{connector}'"),
            Support::Unsupported {
                reason: reason.clone(),
            },
        )
    } else if let Some(rest) = code.strip_prefix("option.") {
        let (connector, key) = rest.split_once('.')?;
        let schema = riffle_dialects::connector(connector)?;
        let option = schema.option(key)?;
        // An option only adds information when its status differs from its connector's (e.g. a
        // legacy key `riffle migrate` rewrites, or an unsupported option of a supported connector).
        if option.support == Support::Supported || option.support == schema.support {
            return None;
        }
        (
            format!("option '{key}' of connector '{connector}'"),
            option.support.clone(),
        )
    } else if let Some(key) = code.strip_prefix("config.") {
        let option = riffle_dialects::config_option(key)?;
        if option.support == Support::Supported {
            return None;
        }
        (format!("configuration '{key}'"), option.support.clone())
    } else {
        match riffle_dialects::feature(code) {
            Some(feature) => (feature.title.clone(), feature.support.clone()),
            None => (
                code.to_string(),
                Support::Unsupported {
                    reason: "not in Riffle's feature registry".to_string(),
                },
            ),
        }
    };
    let (status, message, help) = match support {
        Support::Supported => (Status::Supported, title, None),
        Support::NeedsMigration { migration } => (
            Status::NeedsMigration,
            format!("{title} needs migration"),
            Some(migration),
        ),
        Support::Unsupported { reason } => (
            Status::Unsupported,
            format!("{title} is not supported"),
            Some(reason),
        ),
    };
    Some(Finding {
        status,
        code: code.to_string(),
        message,
        span: feature_use.span,
        help,
        statement: Some(feature_use.statement),
    })
}

/// A short description of a statement for reports, e.g. `CREATE TABLE orders`.
fn describe(statement: &Statement) -> String {
    match &statement.kind {
        StatementKind::CreateTable(t) => format!("CREATE TABLE {}", t.name),
        StatementKind::CreateView(v) => format!("CREATE VIEW {}", v.name),
        StatementKind::CreateFunction(f) => format!("CREATE FUNCTION {}", f.name),
        StatementKind::CreateCatalog(c) => format!("CREATE CATALOG {}", c.name),
        StatementKind::CreateDatabase(d) => format!("CREATE DATABASE {}", d.name),
        StatementKind::Drop(d) => format!("DROP {:?} {}", d.object, d.name).to_uppercase(),
        StatementKind::Alter(u) | StatementKind::Client(u) => u.keywords.clone(),
        StatementKind::Set(Some(option)) => format!("SET '{}'", option.key),
        StatementKind::Set(None) => "SET".to_string(),
        StatementKind::Reset(Some(key)) => format!("RESET '{}'", key.key),
        StatementKind::Reset(None) => "RESET".to_string(),
        StatementKind::Use(u) => format!("USE {}", u.name),
        StatementKind::Insert(i) => {
            format!(
                "INSERT {} {}",
                if i.overwrite { "OVERWRITE" } else { "INTO" },
                i.table
            )
        }
        StatementKind::StatementSet(s) => format!("STATEMENT SET ({} inserts)", s.inserts.len()),
        StatementKind::Query(_) => "SELECT".to_string(),
        StatementKind::Explain(e) => format!("EXPLAIN {}", describe(&e.statement)),
    }
}
