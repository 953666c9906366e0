//! `riffle explain JOB.sql`: prints the JobGraph Riffle would run (text, Graphviz DOT or JSON).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

/// Arguments of `riffle explain`.
#[derive(Args)]
pub struct ExplainArgs {
    /// The Flink SQL script to plan.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    format: ExplainFormat,
}

/// Renderings of the job graph.
#[derive(Clone, Copy, ValueEnum)]
enum ExplainFormat {
    Text,
    Dot,
    Json,
}

/// Runs `riffle explain` and returns its exit code (1 when the script does not plan).
pub fn run(args: ExplainArgs) -> ExitCode {
    let sql = match std::fs::read_to_string(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let graph = match crate::run::plan_file(&args.file, &sql, "") {
        Ok(g) => g,
        Err(code) => return code,
    };
    let text = match args.format {
        ExplainFormat::Text => riffle_plan::explain::to_text(&graph),
        ExplainFormat::Dot => riffle_plan::explain::to_dot(&graph),
        ExplainFormat::Json => match serde_json::to_string_pretty(&graph) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        },
    };
    print!("{text}");
    ExitCode::SUCCESS
}
