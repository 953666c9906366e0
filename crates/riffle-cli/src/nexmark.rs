//! `riffle nexmark gen`: writes the Nexmark events the `nexmark` source generates to a file, so
//! other engines (real Flink) can read identical input.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use arrow::json::writer::{LineDelimited, WriterBuilder};
use clap::{Args, Subcommand, ValueEnum};
use riffle_connectors::nexmark::config_from_options;
use riffle_connectors::options::Options;
use riffle_nexmark::{NexmarkConfig, NexmarkGenerator};
use riffle_plan::ConnectorSpec;

/// Arguments of `riffle nexmark`.
#[derive(Args)]
pub struct NexmarkArgs {
    #[command(subcommand)]
    command: NexmarkCommand,
}

#[derive(Subcommand)]
enum NexmarkCommand {
    /// Generate Nexmark events into a file (one JSON object per line).
    Gen(GenArgs),
}

/// Arguments of `riffle nexmark gen`.
#[derive(Args)]
pub struct GenArgs {
    /// Number of events.
    #[arg(long)]
    events: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GenFormat::Json)]
    format: GenFormat,
    /// Output file.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// A `nexmark` connector option as `KEY=VALUE` (repeatable), e.g. `seed=7`,
    /// `first-event.rate=100`, `bid.avg-size=0`, `base-time=0`.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
}

/// File formats `gen` writes.
#[derive(Clone, Copy, ValueEnum)]
enum GenFormat {
    /// JSON lines, timestamps in ISO-8601 (read them with `'json.timestamp-format.standard' =
    /// 'ISO-8601'`); the ROWs of the other event kinds are left out (NULL).
    Json,
}

/// Runs `riffle nexmark` and returns its exit code.
pub fn run(args: NexmarkArgs) -> ExitCode {
    match args.command {
        NexmarkCommand::Gen(args) => match generate(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// The generator configuration of `gen`: the nexmark source's options, read by the connector.
fn config(args: &GenArgs) -> Result<NexmarkConfig, String> {
    let mut spec = ConnectorSpec {
        table: "nexmark".to_string(),
        connector: "nexmark".to_string(),
        ..ConnectorSpec::default()
    };
    spec.options
        .insert("connector".to_string(), "nexmark".to_string());
    for kv in &args.options {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("--option expects KEY=VALUE, got '{kv}'"));
        };
        spec.options
            .insert(k.trim().to_string(), v.trim().to_string());
    }
    spec.options
        .insert("events.num".to_string(), args.events.to_string());
    let mut options = Options::new(&spec);
    let config = config_from_options(&mut options).map_err(|e| e.to_string())?;
    options.finish().map_err(|e| e.to_string())?;
    Ok(config)
}

fn generate(args: &GenArgs) -> Result<(), String> {
    if args.events == 0 {
        return Err("--events must be positive".to_string());
    }
    let config = config(args)?;
    let mut generator = NexmarkGenerator::new(config, 0, 1).map_err(|e| e.to_string())?;
    let file = File::create(&args.output)
        .map_err(|e| format!("cannot create {}: {e}", args.output.display()))?;
    let GenFormat::Json = args.format;
    let mut writer = WriterBuilder::new().build::<_, LineDelimited>(BufWriter::new(file));
    while let Some(batch) = generator
        .next_batch(riffle_connectors::BATCH_SIZE)
        .map_err(|e| e.to_string())?
    {
        writer.write(&batch).map_err(|e| e.to_string())?;
    }
    writer.finish().map_err(|e| e.to_string())?;
    writer
        .into_inner()
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", args.output.display()))
}
