//! `riffle sql [-f SCRIPT]`: the interactive SQL client (see `riffle-repl`).
//!
//! Exit codes: 0 — the session ended normally; 1 — a statement of the script failed; 2 — the
//! script could not be read or the terminal could not be used.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use riffle_repl::{ReplOptions, ResultMode};

/// Arguments of `riffle sql`.
#[derive(Args)]
pub struct SqlArgs {
    /// Run the statements of this script, then exit (jobs it starts run to their end).
    #[arg(short = 'f', long = "file", value_name = "SCRIPT")]
    file: Option<PathBuf>,
    /// How query results show: tableau, table or changelog.
    #[arg(long = "result-mode", value_name = "MODE", default_value = "tableau")]
    result_mode: String,
    /// History file of the interactive client (default: `.riffle/sql_history`).
    #[arg(long = "history", value_name = "FILE")]
    history: Option<PathBuf>,
}

/// Runs `riffle sql` and returns its exit code.
pub fn run(args: SqlArgs) -> ExitCode {
    let result_mode = match ResultMode::parse(&args.result_mode) {
        Ok(mode) => mode,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let history = args
        .history
        .unwrap_or_else(|| PathBuf::from(".riffle").join("sql_history"));
    let options = ReplOptions {
        script: args.file,
        result_mode,
        history: Some(history),
    };
    match riffle_repl::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(if e.statement_failed { 1 } else { 2 })
        }
    }
}
