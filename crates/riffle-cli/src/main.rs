//! The `riffle` binary: a thin clap front over Riffle's library crates.

mod check;
mod topic;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Run Flink SQL jobs natively over RocketMQ topics, and check them for compatibility.
#[derive(Parser)]
#[command(name = "riffle", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report what each Flink SQL job uses and whether Riffle runs it (for CI).
    Check(check::CheckArgs),
    /// Manage and use topics of the embedded store (create, list, describe, produce, consume, ...).
    Topic(topic::TopicArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Topic(args) => topic::run(args),
    }
}
