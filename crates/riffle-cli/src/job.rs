//! `riffle job status JOB --group NAME`: the processes of a job run with `riffle run --group`,
//! the units each one runs, the lag of every unit's input queues and the state size per
//! operator (see docs/scale-out.md), on the embedded store or a RocketMQ cluster.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Arguments of `riffle job`.
#[derive(Args)]
pub struct JobArgs {
    #[command(subcommand)]
    command: JobCommand,
}

#[derive(Subcommand)]
enum JobCommand {
    /// Processes, unit assignment, lag per queue and state size of a job run with `--group`.
    Status {
        /// The job id (`riffle run --job-id`, `pipeline.name`, or the hash `riffle run` printed).
        job: String,
        /// The group the job's processes joined.
        #[arg(long = "group", value_name = "NAME")]
        group: String,
        /// The job's checkpoint directory (`execution.checkpointing.dir`).
        #[arg(
            long = "checkpoint-dir",
            value_name = "DIR",
            default_value = ".riffle/checkpoints"
        )]
        checkpoint_dir: PathBuf,
        /// `text` (default) or `json`.
        #[arg(long = "format", value_name = "FORMAT", default_value = "text")]
        format: String,
        /// Read the job from the RocketMQ cluster behind this name server (a job whose tables
        /// name one); by default the checkpoint directory's plan says where the job is.
        #[arg(long = "namesrv", value_name = "HOST:PORT")]
        namesrv: Option<String>,
    },
}

/// Runs `riffle job` and returns its exit code.
pub fn run(args: JobArgs) -> ExitCode {
    match args.command {
        JobCommand::Status { ref format, .. } if format != "text" && format != "json" => {
            eprintln!("error: unknown format '{format}' (text or json)");
            ExitCode::from(2)
        }
        JobCommand::Status {
            job,
            group,
            checkpoint_dir,
            format,
            namesrv,
        } => match match &namesrv {
            Some(namesrv) => riffle_cluster::status::read_cluster(namesrv, &job, &group),
            None => riffle_cluster::status::read(&checkpoint_dir, &job, &group),
        } {
            Ok(status) if format == "json" => match serde_json::to_string_pretty(&status) {
                Ok(text) => {
                    println!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            },
            Ok(status) => {
                print!("{}", status.render());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        },
    }
}
