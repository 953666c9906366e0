//! `riffle sql`: Flink's SQL client, on a Riffle [`Session`].
//!
//! Interactive: line editing and history (rustyline), statements over several lines until `;`.
//! A `SELECT` shows its result live in the session's result mode — `tableau` (every change as a
//! table row with its `op`), `table` (the materialized result, redrawn in place as it changes)
//! or `changelog` (`+I[..]` lines) — until its bounded inputs end or Ctrl-C cancels it (Ctrl-C
//! never ends the client). `INSERT` starts a background job (`SHOW JOBS`, `STOP JOB 'id'`).
//! With a script (`-f`), statements run in order and the first error ends the run.

#![warn(missing_docs)]

mod live;
pub mod render;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use riffle_session::{JobRegistry, Outcome, Session, StatementSplitter};
use rustyline::error::ReadlineError;
use tokio::runtime::Runtime;

pub use live::ResultMode;

use crate::render::TableLayout;

/// The session key choosing how query results show (Flink's SQL client key).
pub const RESULT_MODE_KEY: &str = "sql-client.execution.result-mode";

/// How `riffle sql` runs.
#[derive(Debug, Clone, Default)]
pub struct ReplOptions {
    /// Run this script instead of reading statements interactively.
    pub script: Option<PathBuf>,
    /// Initial result mode.
    pub result_mode: ResultMode,
    /// Where interactive history is kept (none: no history file).
    pub history: Option<PathBuf>,
}

/// A failure that ends `riffle sql`.
#[derive(Debug)]
pub struct ReplError {
    /// What went wrong.
    pub message: String,
    /// The error is about the input (a failing statement), not the environment.
    pub statement_failed: bool,
}

/// The client: a session, the runtime it runs on, and the display state.
struct Client {
    runtime: Runtime,
    session: Session,
    mode: ResultMode,
    /// Set by Ctrl-C; a live query checks it and cancels itself.
    interrupted: Arc<AtomicBool>,
    interactive: bool,
}

/// Runs `riffle sql`.
pub fn run(options: ReplOptions) -> Result<(), ReplError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| environment(format!("cannot start the tokio runtime: {e}")))?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let session = Session::new(runtime.handle().clone(), JobRegistry::new());
    let mut client = Client {
        runtime,
        session,
        mode: options.result_mode,
        interrupted,
        interactive: options.script.is_none(),
    };
    let result = match &options.script {
        Some(path) => client.run_script(path),
        None => client.run_interactive(options.history.as_deref()),
    };
    client.session.jobs().stop_all();
    // Stopped jobs drain quickly; don't hang on a source that does not.
    client
        .runtime
        .shutdown_timeout(std::time::Duration::from_secs(5));
    result
}

/// From now on Ctrl-C (SIGINT) sets `flag` instead of killing the process: it cancels the live
/// query. The handler sets the flag itself, so it works even while the runtime's threads are
/// all busy running a query.
fn on_ctrl_c(flag: Arc<AtomicBool>) -> Result<(), ReplError> {
    // SAFETY: the action only stores to an atomic, which is async-signal-safe.
    unsafe {
        signal_hook_registry::register(libc::SIGINT, move || flag.store(true, Ordering::SeqCst))
    }
    .map(|_| ())
    .map_err(|e| environment(format!("cannot handle Ctrl-C: {e}")))
}

impl Client {
    fn run_script(&mut self, path: &std::path::Path) -> Result<(), ReplError> {
        on_ctrl_c(self.interrupted.clone())?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| environment(format!("cannot read {}: {e}", path.display())))?;
        let mut splitter = StatementSplitter::new();
        let mut statements = splitter.push(&text);
        statements.extend(splitter.finish());
        for statement in statements {
            println!("riffle> {};", statement.trim());
            if let Err(message) = self.execute(&statement) {
                println!("[ERROR] {message}");
                return Err(ReplError {
                    message: format!("statement failed: {}", first_line(&statement)),
                    statement_failed: true,
                });
            }
        }
        self.wait_for_jobs();
        Ok(())
    }

    /// A script's background jobs run to their end (Ctrl-C stops them).
    fn wait_for_jobs(&self) {
        let jobs = self.session.jobs();
        loop {
            let running = jobs
                .list()
                .iter()
                .any(|j| j.status == riffle_session::JobStatus::Running);
            if !running {
                return;
            }
            if self.interrupted.swap(false, Ordering::SeqCst) {
                jobs.stop_all();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    fn run_interactive(&mut self, history: Option<&std::path::Path>) -> Result<(), ReplError> {
        let mut editor = rustyline::DefaultEditor::new()
            .map_err(|e| environment(format!("cannot start the line editor: {e}")))?;
        // After the editor: it takes SIGINT over when it starts; this handler runs first and
        // then passes the signal on to the editor's.
        on_ctrl_c(self.interrupted.clone())?;
        if let Some(path) = history {
            // A missing history file is the normal first run.
            let _ = editor.load_history(path);
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
        }
        println!(
            "Riffle SQL client. End statements with ';'. Type HELP; for help, QUIT; to leave."
        );
        let mut splitter = StatementSplitter::new();
        'session: loop {
            let prompt = if splitter.is_empty() {
                "riffle> "
            } else {
                "     > "
            };
            match editor.readline(prompt) {
                Ok(line) => {
                    for statement in splitter.push(&format!("{line}\n")) {
                        let _ = editor.add_history_entry(format!("{};", statement.trim()));
                        if is_quit(&statement) {
                            break 'session;
                        }
                        if let Err(message) = self.execute(&statement) {
                            println!("[ERROR] {message}");
                        }
                    }
                }
                Err(ReadlineError::Interrupted) => {
                    // Ctrl-C at the prompt drops the statement being typed.
                    splitter = StatementSplitter::new();
                }
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(environment(format!("cannot read input: {e}"))),
            }
        }
        if let Some(path) = history {
            if let Err(e) = editor.save_history(path) {
                eprintln!("warning: cannot save history to {}: {e}", path.display());
            }
        }
        println!("Goodbye.");
        Ok(())
    }

    /// Executes one statement and shows its outcome; `Err` carries the message to show.
    fn execute(&mut self, statement: &str) -> Result<(), String> {
        if is_help(statement) {
            println!("{HELP}");
            return Ok(());
        }
        if let Some(mode) = self.result_mode_setting(statement)? {
            self.mode = mode;
            println!("[INFO] Result mode: {}.", mode.name());
            return Ok(());
        }
        let outcome = self.session.execute(statement).map_err(|e| e.message)?;
        match outcome {
            Outcome::Done(message) => println!("[INFO] {message}"),
            Outcome::Rows { header, rows } => print_rows(&header, &rows),
            Outcome::Explain(text) => println!("{}", text.trim_end()),
            Outcome::Job(job) => {
                println!("[INFO] Submitting SQL update statement to the cluster...");
                println!("[INFO] Job '{}' started in the background.", job.id);
            }
            Outcome::Query(query) => {
                self.interrupted.store(false, Ordering::SeqCst);
                let shown = live::show(
                    &self.runtime,
                    query,
                    self.mode,
                    &self.interrupted,
                    self.interactive,
                );
                match shown {
                    Ok(summary) => println!("{summary}"),
                    Err(message) => return Err(message),
                }
            }
        }
        Ok(())
    }

    /// `SET 'sql-client.execution.result-mode' = '...'` is the client's, not the session's.
    fn result_mode_setting(&self, statement: &str) -> Result<Option<ResultMode>, String> {
        let text = statement.trim();
        let Some(rest) = strip_keyword(text, "SET") else {
            return Ok(None);
        };
        let Some((key, value)) = rest.split_once('=') else {
            return Ok(None);
        };
        if unquote(key) != RESULT_MODE_KEY {
            return Ok(None);
        }
        ResultMode::parse(&unquote(value)).map(Some)
    }
}

/// A small finished table, boxed, with its row count.
fn print_rows(header: &[String], rows: &[Vec<String>]) {
    if rows.is_empty() {
        println!("Empty set");
        return;
    }
    let layout = TableLayout::fitting(header, rows);
    println!("{}", layout.header(header));
    for row in rows {
        println!("{}", layout.row(row));
    }
    println!("{}", layout.border());
    println!(
        "{} row{} in set",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
}

const HELP: &str = "\
Statements end with ';' and may span lines.
  CREATE TABLE|VIEW|FUNCTION ...; DROP ...;   declare in the session catalog
  SHOW TABLES; SHOW VIEWS; SHOW FUNCTIONS; DESCRIBE t;
  SET; SET 'key' = 'value'; RESET 'key';       session configuration
  SET 'sql-client.execution.result-mode' = 'tableau|table|changelog';
  SELECT ...;      live result (Ctrl-C cancels it)
  INSERT ...;      background job; SHOW JOBS; STOP JOB 'id' [WITH SAVEPOINT];
  EXPLAIN ...;     the job graph
  QUIT;            leave";

fn is_quit(statement: &str) -> bool {
    matches!(
        statement.trim().to_ascii_uppercase().as_str(),
        "QUIT" | "EXIT"
    )
}

fn is_help(statement: &str) -> bool {
    statement.trim().eq_ignore_ascii_case("HELP")
}

/// `text` after a leading keyword (case-insensitive) and whitespace.
fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = &text[keyword.len()..];
    (head.eq_ignore_ascii_case(keyword) && rest.starts_with(char::is_whitespace))
        .then(|| rest.trim_start())
}

fn unquote(text: &str) -> String {
    text.trim().trim_matches('\'').to_string()
}

fn first_line(statement: &str) -> String {
    statement.lines().next().unwrap_or("").trim().to_string()
}

fn environment(message: String) -> ReplError {
    ReplError {
        message,
        statement_failed: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_statements_are_recognised() {
        assert!(is_quit(" quit "));
        assert!(is_help("Help"));
        assert_eq!(strip_keyword("set 'a' = 'b'", "SET"), Some("'a' = 'b'"));
        assert_eq!(strip_keyword("SETX", "SET"), None);
        assert_eq!(strip_keyword("SE", "SET"), None);
    }
}
