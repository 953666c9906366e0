//! Executing one statement in a session.

use std::path::{Path, PathBuf};

use riffle_plan::{JobGraph, OperatorKind, COLLECT_CONNECTOR};
use riffle_runtime::{PrintTarget, RunOptions, StopHandle};
use riffle_sql::ast::{DropObject, Statement, StatementKind};
use riffle_sql::{Diagnostic, Severity};
use riffle_toolkit::render::render_text;
use riffle_toolkit::{check_job, JobSource, Status};
use tokio::runtime::Handle;

use crate::catalog::{kind_name, Catalog, CatalogEntry, EntryKind};

/// How long `STOP JOB ... WITH SAVEPOINT` waits for the job's next checkpoint.
const STOP_SAVEPOINT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
use crate::jobs::{job_id, JobInfo, JobRegistry, OnJobEnd};
use crate::query::{QueryColumn, QueryHandle};

/// What executing a statement produced.
pub enum Outcome {
    /// The statement took effect (`CREATE`, `SET 'k' = 'v'`, `STOP JOB`, ...).
    Done(String),
    /// A small table (`SHOW TABLES`, `DESCRIBE`, `SET`, `SHOW JOBS`).
    Rows {
        /// Column headers.
        header: Vec<String>,
        /// Rows of display values.
        rows: Vec<Vec<String>>,
    },
    /// `EXPLAIN`'s job graph as text.
    Explain(String),
    /// A running `SELECT`.
    Query(QueryHandle),
    /// An `INSERT` (or statement set) submitted as a background job.
    Job(JobInfo),
}

/// A statement that could not be executed, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    /// The diagnostic(s), ready to show.
    pub message: String,
}

impl SessionError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SessionError {}

/// A SQL session: its catalog, and the jobs it submitted, running on a tokio runtime.
pub struct Session {
    runtime: Handle,
    catalog: Catalog,
    jobs: JobRegistry,
    /// The embedded store `rocketmq` tables use unless they name one (`riffle.store.dir`).
    store_dir: Option<PathBuf>,
}

impl Session {
    /// A session with an empty catalog whose jobs and queries run on `runtime`.
    pub fn new(runtime: Handle, jobs: JobRegistry) -> Self {
        Self {
            runtime,
            catalog: Catalog::default(),
            jobs,
            store_dir: None,
        }
    }

    /// Makes `rocketmq` tables without a `riffle.store.dir` option use the embedded store in
    /// `dir` (a server's data directory) instead of `./.riffle`.
    pub fn with_store_dir(mut self, dir: PathBuf) -> Self {
        self.store_dir = Some(dir);
        self
    }

    /// The session's catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Replaces the catalog (a server restoring its persisted catalog).
    pub fn set_catalog(&mut self, catalog: Catalog) {
        self.catalog = catalog;
    }

    /// The jobs this session submitted.
    pub fn jobs(&self) -> &JobRegistry {
        &self.jobs
    }

    /// Executes one statement (without its `;`).
    pub fn execute(&mut self, statement: &str) -> Result<Outcome, SessionError> {
        self.execute_with(statement, None)
    }

    /// Executes one statement; a job it submits calls `on_end` with its final status.
    pub fn execute_with(
        &mut self,
        statement: &str,
        on_end: Option<OnJobEnd>,
    ) -> Result<Outcome, SessionError> {
        if let Some(outcome) = self.client_command(statement)? {
            return Ok(outcome);
        }
        let parsed = parse_one(statement)?;
        match &parsed.kind {
            StatementKind::CreateTable(t) => self.declare(
                statement,
                EntryKind::Table,
                &t.name.to_string(),
                t.if_not_exists,
            ),
            StatementKind::CreateView(v) => self.declare(
                statement,
                EntryKind::View,
                &v.name.to_string(),
                v.if_not_exists,
            ),
            StatementKind::CreateFunction(f) => self.declare(
                statement,
                EntryKind::Function,
                &f.name.to_string(),
                f.if_not_exists,
            ),
            StatementKind::Drop(d) => {
                let kind = match d.object {
                    DropObject::Table => EntryKind::Table,
                    DropObject::View => EntryKind::View,
                    DropObject::Function => EntryKind::Function,
                    DropObject::Catalog | DropObject::Database => {
                        return Err(unsupported("DROP CATALOG/DATABASE"))
                    }
                };
                let name = last_part(&d.name.to_string());
                if self.catalog.remove(kind, &name) || d.if_exists {
                    Ok(Outcome::Done(format!(
                        "{} '{name}' dropped",
                        kind_name(kind)
                    )))
                } else {
                    Err(SessionError::new(format!(
                        "{} '{name}' does not exist in the session",
                        kind_name(kind)
                    )))
                }
            }
            StatementKind::Set(None) => Ok(Outcome::Rows {
                header: vec!["key".into(), "value".into()],
                rows: self
                    .catalog
                    .config
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect(),
            }),
            StatementKind::Set(Some(option)) => {
                self.catalog
                    .config
                    .insert(option.key.clone(), option.value.clone());
                Ok(Outcome::Done("Execute statement succeeded.".into()))
            }
            StatementKind::Reset(key) => {
                match key {
                    Some(key) => {
                        self.catalog.config.remove(&key.key);
                    }
                    None => self.catalog.config.clear(),
                }
                Ok(Outcome::Done("Execute statement succeeded.".into()))
            }
            StatementKind::Insert(_) | StatementKind::StatementSet(_) => {
                let script = self.script_with(statement);
                self.submit_script(None, statement, &script, on_end, None)
                    .map(Outcome::Job)
            }
            StatementKind::Query(_) => self.query(statement).map(Outcome::Query),
            StatementKind::Explain(explain) => {
                let inner = statement
                    .get(explain.statement.span.byte_range(statement))
                    .ok_or_else(|| SessionError::new("cannot locate the explained statement"))?;
                let graph = self.plan(&self.script_with(inner))?;
                Ok(Outcome::Explain(riffle_plan::explain::to_text(&graph)))
            }
            StatementKind::Client(client) => self.client_statement(&client.keywords, &client.text),
            StatementKind::Alter(u) => Err(unsupported(&u.keywords)),
            StatementKind::CreateCatalog(_) => Err(unsupported("CREATE CATALOG")),
            StatementKind::CreateDatabase(_) => Err(unsupported("CREATE DATABASE")),
            StatementKind::Use(_) => Err(unsupported("USE")),
        }
    }

    /// Statements of the SQL client that Riffle's parser does not know: `STOP JOB 'id'
    /// [WITH SAVEPOINT]`.
    fn client_command(&mut self, statement: &str) -> Result<Option<Outcome>, SessionError> {
        let words: Vec<&str> = statement.split_whitespace().collect();
        let is = |i: usize, w: &str| words.get(i).is_some_and(|x| x.eq_ignore_ascii_case(w));
        if is(0, "STOP") && is(1, "JOB") {
            let usage = || SessionError::new("usage: STOP JOB '<job id>' [WITH SAVEPOINT]");
            let Some(id) = words.get(2).map(|w| w.trim_matches('\'')) else {
                return Err(usage());
            };
            let with_savepoint = match words.len() {
                3 => false,
                5 if is(3, "WITH") && is(4, "SAVEPOINT") => true,
                _ => return Err(usage()),
            };
            if !with_savepoint {
                self.jobs.stop(id).map_err(SessionError::new)?;
                return Ok(Some(Outcome::Done(format!("Stopping job '{id}'."))));
            }
            // As Flink's SQL client: the savepoint goes to 'state.savepoints.dir'.
            let Some(dir) = self.catalog.config.get("state.savepoints.dir") else {
                return Err(SessionError::new(
                    "STOP JOB ... WITH SAVEPOINT needs a target directory: SET 'state.savepoints.dir' first",
                ));
            };
            let target = PathBuf::from(dir.strip_prefix("file://").unwrap_or(dir));
            let path = self
                .jobs
                .savepoint(id, &target, STOP_SAVEPOINT_TIMEOUT)
                .map_err(SessionError::new)?;
            self.jobs.stop(id).map_err(SessionError::new)?;
            return Ok(Some(Outcome::Rows {
                header: vec!["savepoint path".into()],
                rows: vec![vec![path.display().to_string()]],
            }));
        }
        Ok(None)
    }

    /// Plans `script` (a catalog prelude and the `INSERT` `statement`) and starts it as a
    /// background job: as job `id`, else the id [`job_id`] derives. Re-submitting the script of
    /// a checkpointed job under its id resumes it from its latest checkpoint, or from
    /// `from_savepoint` when given.
    pub fn submit_script(
        &self,
        id: Option<&str>,
        statement: &str,
        script: &str,
        on_end: Option<OnJobEnd>,
        from_savepoint: Option<PathBuf>,
    ) -> Result<JobInfo, SessionError> {
        let graph = self.plan(script)?;
        let id = job_id(id, &graph, script);
        self.jobs
            .submit(
                &self.runtime,
                id,
                (statement.to_string(), script.to_string()),
                graph,
                on_end,
                from_savepoint,
            )
            .map_err(SessionError::new)
    }

    /// `SHOW ...`, `DESCRIBE ...`.
    fn client_statement(&self, keywords: &str, text: &str) -> Result<Outcome, SessionError> {
        let names = |kinds: &[EntryKind]| {
            let mut names: Vec<Vec<String>> = self
                .catalog
                .entries
                .iter()
                .filter(|e| kinds.contains(&e.kind))
                .map(|e| vec![e.name.clone()])
                .collect();
            names.sort();
            names
        };
        match keywords {
            "SHOW TABLES" => Ok(Outcome::Rows {
                header: vec!["table name".into()],
                rows: names(&[EntryKind::Table, EntryKind::View]),
            }),
            "SHOW VIEWS" => Ok(Outcome::Rows {
                header: vec!["view name".into()],
                rows: names(&[EntryKind::View]),
            }),
            "SHOW FUNCTIONS" | "SHOW USER" => Ok(Outcome::Rows {
                header: vec!["function name".into()],
                rows: names(&[EntryKind::Function]),
            }),
            "SHOW JOBS" => Ok(Outcome::Rows {
                header: vec!["job id".into(), "status".into(), "statement".into()],
                rows: self
                    .jobs
                    .list()
                    .into_iter()
                    .map(|j| {
                        vec![
                            j.id,
                            j.status.label().to_string(),
                            one_line(&j.statement, 60),
                        ]
                    })
                    .collect(),
            }),
            "DESCRIBE" | "DESC" => {
                let name = text
                    .split_whitespace()
                    .nth(1)
                    .map(|n| n.trim_matches('`').to_string())
                    .ok_or_else(|| SessionError::new("usage: DESCRIBE <table>"))?;
                let columns = self.describe(&name)?;
                Ok(Outcome::Rows {
                    header: vec!["name".into(), "type".into(), "null".into()],
                    rows: columns
                        .into_iter()
                        .map(|c| {
                            let not_null = c.data_type.ends_with(" NOT NULL");
                            let ty = c.data_type.trim_end_matches(" NOT NULL").to_string();
                            vec![c.name, ty, (!not_null).to_string().to_uppercase()]
                        })
                        .collect(),
                })
            }
            other => Err(unsupported(other)),
        }
    }

    /// The columns of table or view `name`, as the planner types them.
    pub fn describe(&self, name: &str) -> Result<Vec<QueryColumn>, SessionError> {
        let entry = self.catalog.relation(name).ok_or_else(|| {
            SessionError::new(format!(
                "table or view '{name}' does not exist in the session"
            ))
        })?;
        let graph = self.plan(&self.script_with(&format!("SELECT * FROM `{}`", entry.name)))?;
        result_columns(&graph)
    }

    /// Plans `statement` (a query) and starts it, its rows streamed to the returned handle.
    pub fn query(&self, statement: &str) -> Result<QueryHandle, SessionError> {
        let script = self.script_with(statement);
        let graph = self.plan(&script)?;
        let columns = result_columns(&graph)?;
        let (sender, rows) = tokio::sync::mpsc::unbounded_channel();
        let stop = StopHandle::default();
        let options = RunOptions {
            print_target: PrintTarget::Rows(sender),
            stop: stop.clone(),
            job_id: Some(job_id(None, &graph, &script)),
            from_savepoint: None,
        };
        let done = self
            .runtime
            .spawn(async move { riffle_runtime::run(&graph, options).await });
        Ok(QueryHandle {
            columns,
            rows,
            done,
            stop,
        })
    }

    /// Adds a `CREATE` to the catalog once `riffle check` and the planner accept it.
    fn declare(
        &mut self,
        statement: &str,
        kind: EntryKind,
        name: &str,
        if_not_exists: bool,
    ) -> Result<Outcome, SessionError> {
        let name = last_part(name);
        let entry = CatalogEntry {
            name: name.clone(),
            kind,
            ddl: statement.to_string(),
        };
        let exists = match kind {
            EntryKind::Function => self.catalog.find(kind, &name).is_some(),
            _ => self.catalog.relation(&name).is_some(),
        };
        if exists && if_not_exists {
            return Ok(Outcome::Done(format!(
                "{} '{name}' already exists; nothing done",
                kind_name(kind)
            )));
        }
        let mut candidate = self.catalog.clone();
        candidate.add(entry).map_err(SessionError::new)?;
        // A view is always read, so planning a query over it types its columns now. A table may
        // be a sink only, so it is validated as a declaration; the options of its role (source
        // or sink) are checked when a statement uses it.
        match kind {
            EntryKind::View => {
                let probe = format!("{}SELECT * FROM `{name}`;\n", candidate.prelude());
                riffle_plan::plan_sql(&probe).map_err(|d| diagnostics_error(&d, &probe))?;
            }
            EntryKind::Table | EntryKind::Function => validate(&candidate.prelude())?,
        }
        self.catalog = candidate;
        Ok(Outcome::Done(format!(
            "{} '{name}' created",
            kind_name(kind)
        )))
    }

    /// The catalog's prelude followed by `statement`.
    fn script_with(&self, statement: &str) -> String {
        format!("{}{statement};\n", self.catalog.prelude())
    }

    /// Checks and plans a whole script.
    fn plan(&self, script: &str) -> Result<JobGraph, SessionError> {
        check(script)?;
        let mut graph = riffle_plan::plan_sql(script).map_err(|d| diagnostics_error(&d, script))?;
        if let Some(dir) = &self.store_dir {
            place_store(&mut graph, dir);
        }
        Ok(graph)
    }
}

/// The option naming a `rocketmq` table's embedded store directory.
const STORE_DIR_OPTION: &str = "riffle.store.dir";

/// Points the `rocketmq` tables of `graph` that name no store at the store in `dir`.
fn place_store(graph: &mut JobGraph, dir: &Path) {
    for op in &mut graph.operators {
        if let OperatorKind::Source { connector } | OperatorKind::Sink { connector } = &mut op.kind
        {
            if connector.connector == riffle_connectors::rocketmq::options::CONNECTOR {
                connector
                    .options
                    .entry(STORE_DIR_OPTION.to_string())
                    .or_insert_with(|| dir.display().to_string());
            }
        }
    }
}

/// Parses exactly one statement.
fn parse_one(statement: &str) -> Result<Statement, SessionError> {
    let parsed = riffle_sql::parse_script(statement);
    let errors: Vec<Diagnostic> = parsed
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(diagnostics_error(&errors, statement));
    }
    let mut statements = parsed.script.statements.into_iter();
    match (statements.next(), statements.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(SessionError::new("no statement")),
        (Some(_), Some(_)) => Err(SessionError::new(
            "one statement at a time (end each with ';')",
        )),
    }
}

/// Fails with the catalog analysis's errors about the declarations of `script`.
fn validate(script: &str) -> Result<(), SessionError> {
    let parsed = riffle_sql::parse_script(script);
    let errors: Vec<Diagnostic> = parsed
        .diagnostics
        .into_iter()
        .chain(riffle_catalog::analyze(&parsed.script).diagnostics)
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(diagnostics_error(&errors, script))
    }
}

/// Fails with `riffle check`'s diagnostics when the script uses something Riffle does not run.
fn check(script: &str) -> Result<(), SessionError> {
    let report = check_job(&JobSource {
        path: "<session>".to_string(),
        text: script.to_string(),
    });
    if report.status >= Status::Unsupported {
        return Err(SessionError::new(
            render_text(&[report], Status::Unsupported)
                .trim_end()
                .to_string(),
        ));
    }
    Ok(())
}

/// The columns of the query result a graph collects.
fn result_columns(graph: &JobGraph) -> Result<Vec<QueryColumn>, SessionError> {
    graph
        .operators
        .iter()
        .find(|op| {
            matches!(&op.kind, OperatorKind::Sink { connector } if connector.connector == COLLECT_CONNECTOR)
        })
        .map(|op| {
            op.schema
                .iter()
                .map(|f| QueryColumn {
                    name: f.name.clone(),
                    data_type: f.data_type.clone(),
                })
                .collect()
        })
        .ok_or_else(|| SessionError::new("the statement has no query result"))
}

/// Diagnostics as `[code] message (line L, column C)` lines, with their help.
fn diagnostics_error(diagnostics: &[Diagnostic], source: &str) -> SessionError {
    let mut out = Vec::new();
    for d in diagnostics {
        let mut line = format!("[{}] {}", d.code, d.message);
        if !d.span.is_unknown() {
            let range = d.span.byte_range(source);
            let snippet = source
                .get(range)
                .map(|s| one_line(s, 40))
                .unwrap_or_default();
            if !snippet.is_empty() {
                line.push_str(&format!(" (at '{snippet}')"));
            }
        }
        if let Some(help) = &d.help {
            line.push_str(&format!("\n  help: {help}"));
        }
        out.push(line);
    }
    SessionError::new(out.join("\n"))
}

fn unsupported(what: &str) -> SessionError {
    SessionError::new(format!(
        "unsupported feature: {what} is not supported by riffle sql"
    ))
}

/// The last part of a possibly qualified name, without quotes.
fn last_part(name: &str) -> String {
    name.rsplit('.')
        .next()
        .unwrap_or(name)
        .trim_matches(|c| c == '`' || c == '"')
        .to_string()
}

/// `text` on one line, cut to `max` characters with `...`.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(3)).collect();
    format!("{cut}...")
}
