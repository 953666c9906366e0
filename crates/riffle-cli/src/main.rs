//! The `riffle` binary: a thin clap front over Riffle's library crates.

mod bench;
mod check;
mod compat;
mod explain;
mod export;
mod job;
mod migrate;
mod nexmark;
mod progress;
mod run;
mod savepoint;
mod serve;
mod sql;
mod topic;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Engine work allocates many small, short-lived buffers (state rows, batch builders), where
/// mimalloc is markedly cheaper than the system allocator (`riffle bench` measures it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Run Flink SQL jobs natively over RocketMQ topics, and check them for compatibility.
#[derive(Parser)]
#[command(name = "riffle", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a Flink SQL job natively: every INSERT (and statement set) as one job.
    Run(run::RunArgs),
    /// Inspect a job run by a group of processes (`job status JOB --group NAME`).
    Job(job::JobArgs),
    /// Copy a job's newest completed checkpoint into a savepoint (`run --from-savepoint`).
    Savepoint(savepoint::SavepointArgs),
    /// Print the job graph a Flink SQL script plans to (text or Graphviz dot).
    Explain(explain::ExplainArgs),
    /// Report what each Flink SQL job uses and whether Riffle runs it (for CI).
    Check(check::CheckArgs),
    /// Manage and use topics of the embedded store (create, list, describe, produce, consume, ...).
    Topic(topic::TopicArgs),
    /// Rewrite Kafka/Blink/rsqlDB-style Flink SQL jobs into jobs Riffle runs.
    Migrate(migrate::MigrateArgs),
    /// Turn a Riffle job into what runs on Apache Flink (SQL for a release + deployment bundle).
    Export(export::ExportArgs),
    /// Run the Flink conformance suite on the engine (`compat run compat-tests/`).
    Compat(compat::CompatArgs),
    /// Generate Nexmark events into files (`nexmark gen`).
    Nexmark(nexmark::NexmarkArgs),
    /// Benchmark the engine (`bench nexmark --queries q0,q5 --events N`).
    Bench(bench::BenchArgs),
    /// Interactive SQL client with live query results (or `-f script.sql`).
    Sql(sql::SqlArgs),
    /// Run Riffle as a service: REST API, web console, persisted jobs (127.0.0.1 by default).
    Serve(serve::ServeArgs),
}

/// Stack of the thread Riffle works on (planning deep expressions in a debug build needs more
/// than the 2 MiB of a spawned thread's default).
const WORKER_STACK_BYTES: usize = 16 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The embedded JVM (Java UDFs) puts stack guard pages into each thread that calls it. On the
    // process's first thread it places them where it guesses that stack ends, about 1 MiB deep
    // instead of the real 8 MiB, and later deep planning there faults. So Riffle does its work on
    // a thread of its own, whose stack bounds the JVM reads correctly.
    let worker = std::thread::Builder::new()
        .name("riffle".to_string())
        .stack_size(WORKER_STACK_BYTES)
        .spawn(move || dispatch(cli));
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        // The panic message has been printed already.
        Ok(Err(_)) => ExitCode::from(101),
        Err(e) => {
            eprintln!("error: cannot start a thread: {e}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Run(args) => run::run(args),
        Command::Savepoint(args) => savepoint::run(args),
        Command::Job(args) => job::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Topic(args) => topic::run(args),
        Command::Migrate(args) => migrate::run(args),
        Command::Export(args) => export::run(args),
        Command::Compat(args) => compat::run(args),
        Command::Nexmark(args) => nexmark::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Sql(args) => sql::run(args),
        Command::Serve(args) => serve::run(args),
    }
}
