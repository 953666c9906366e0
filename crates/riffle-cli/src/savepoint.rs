//! `riffle savepoint JOB_ID`: copies the newest completed checkpoint of a job (running or not)
//! into a savepoint directory that `riffle run --from-savepoint DIR` starts from.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Arguments of `riffle savepoint`.
#[derive(Args)]
pub struct SavepointArgs {
    /// The job's id (`riffle run --job-id`, else its `pipeline.name` or script hash).
    job_id: String,
    /// Where the job's checkpoints are (its `execution.checkpointing.dir`).
    #[arg(long = "checkpoint-dir", value_name = "DIR", default_value = riffle_runtime::checkpoint::DEFAULT_DIR)]
    checkpoint_dir: PathBuf,
    /// Where to write the savepoint (as Flink's `state.savepoints.dir`).
    #[arg(
        long = "target",
        value_name = "DIR",
        default_value = ".riffle/savepoints"
    )]
    target: PathBuf,
}

/// Runs `riffle savepoint` and returns its exit code.
pub fn run(args: SavepointArgs) -> ExitCode {
    let result = riffle_runtime::checkpoint::validate_job_id(&args.job_id).and_then(|id| {
        riffle_runtime::checkpoint::savepoint::create(&args.checkpoint_dir, &id, &args.target)
    });
    match result {
        Ok(dir) => {
            println!("{}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
