//! `riffle topic`: manage and use topics of the embedded store (`riffle_store`), or of a real
//! RocketMQ cluster with `--namesrv host:port` (the same operations through [`Topics`]).
//!
//! Exit codes: 0 — success; 2 — usage, data, network or I/O error (printed as `error: ...` on
//! stderr).
//! Several `riffle` processes may use one data directory (default `./.riffle`) at once, for
//! example `consume --follow` while a job writes the topic.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use riffle_store::admin::{self, ConsumeOptions, OutputFormat, ProduceOptions, StartFrom};
use riffle_store::{CleanupPolicy, Store, StoreError, StoreOptions, TopicConfig, Topics};

/// Arguments of `riffle topic`.
#[derive(Args)]
pub struct TopicArgs {
    /// Data directory of the embedded store.
    #[arg(long, global = true, default_value = ".riffle")]
    data_dir: PathBuf,
    /// Use a real RocketMQ cluster through this name server instead of the embedded store.
    #[arg(long, global = true, value_name = "HOST:PORT")]
    namesrv: Option<String>,
    #[command(subcommand)]
    command: TopicCommand,
}

#[derive(Subcommand)]
enum TopicCommand {
    /// Create a topic.
    Create {
        /// Topic name (A-Z a-z 0-9 _ - %).
        name: String,
        /// Number of queues.
        #[arg(long, default_value_t = 4)]
        queues: u32,
        /// Keep only the latest message per key (cleanup.policy=COMPACTION).
        #[arg(long, conflicts_with_all = ["retention", "retention_bytes"])]
        compact: bool,
        /// Delete data older than this (e.g. 7d, 12h, 30m, 500ms).
        #[arg(long, value_parser = admin::parse_duration_ms, value_name = "DURATION")]
        retention: Option<i64>,
        /// Delete the oldest data while a queue is larger than this (e.g. 512MiB).
        #[arg(long, value_parser = admin::parse_size, value_name = "SIZE")]
        retention_bytes: Option<u64>,
    },
    /// List topics.
    List,
    /// Show a topic's queues, offsets, consumer groups and lag.
    Describe {
        /// Topic name.
        name: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DescribeFormat::Text)]
        format: DescribeFormat,
    },
    /// Append messages, one per input line (JSON lines unless --raw).
    Produce {
        /// Topic name.
        name: String,
        /// Read this file instead of stdin.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Each line is the body as is (not parsed as JSON).
        #[arg(long)]
        raw: bool,
        /// Key for every message.
        #[arg(long)]
        key: Option<String>,
        /// Take each message's key from this top-level JSON field.
        #[arg(long, conflicts_with = "raw")]
        key_field: Option<String>,
        /// Tag for every message.
        #[arg(long)]
        tag: Option<String>,
        /// Put every message in this queue (default: by key hash, else round-robin).
        #[arg(long)]
        queue: Option<u32>,
    },
    /// Print messages, one per line.
    Consume {
        /// Topic name.
        name: String,
        /// Start at earliest, latest or an offset (default: the group's committed offset,
        /// else earliest).
        #[arg(long, value_parser = admin::parse_start, conflicts_with = "from_time")]
        from: Option<StartFrom>,
        /// Start at the first message stored at or after this time (ms since the epoch).
        #[arg(long, value_name = "TIMESTAMP_MS")]
        from_time: Option<i64>,
        /// Read only this queue (default: all).
        #[arg(long)]
        queue: Option<u32>,
        /// Consumer group: start from its committed offsets and commit as messages are printed.
        #[arg(long)]
        group: Option<String>,
        /// Wait for new messages instead of exiting at the end.
        #[arg(long)]
        follow: bool,
        /// Stop after this many messages.
        #[arg(long)]
        max: Option<u64>,
        /// Output: the body as is, or a JSON envelope with queue, offset, keys, tag, timestamps.
        #[arg(long, value_enum, default_value_t = ConsumeFormat::Body)]
        format: ConsumeFormat,
    },
    /// Delete a topic, its data and its consumer-group offsets.
    Delete {
        /// Topic name.
        name: String,
    },
    /// Compact a COMPACTION topic now (embedded store; a cluster's brokers compact by themselves).
    Compact {
        /// Topic name.
        name: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum DescribeFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ConsumeFormat {
    Body,
    Json,
}

/// Runs `riffle topic` and returns its exit code.
pub fn run(args: TopicArgs) -> ExitCode {
    let result = match args.namesrv.clone() {
        Some(namesrv) => riffle_connectors::rocketmq::cluster::connect_namesrv(&namesrv)
            .and_then(|cluster| execute(args.command, cluster.as_ref())),
        None => Store::open(&args.data_dir, StoreOptions::default()).and_then(|store| {
            let result = execute(args.command, &store);
            let closed = store.close();
            result.and(closed)
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn execute(command: TopicCommand, store: &dyn Topics) -> Result<(), StoreError> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match command {
        TopicCommand::Create {
            name,
            queues,
            compact,
            retention,
            retention_bytes,
        } => {
            let config = TopicConfig {
                queues,
                cleanup_policy: if compact {
                    CleanupPolicy::Compaction
                } else {
                    CleanupPolicy::Delete
                },
                retention_ms: retention,
                retention_bytes,
            };
            store.create_topic(&name, config)?;
            eprintln!("created topic {name} with {queues} queue(s)");
        }
        TopicCommand::List => admin::list(store, &mut out)?,
        TopicCommand::Describe { name, format } => {
            admin::describe(
                store,
                &name,
                matches!(format, DescribeFormat::Json),
                &mut out,
            )?;
        }
        TopicCommand::Produce {
            name,
            file,
            raw,
            key,
            key_field,
            tag,
            queue,
        } => {
            let options = ProduceOptions {
                raw,
                key,
                key_field,
                tag,
                queue,
            };
            let input: Box<dyn Read> = match &file {
                Some(path) => Box::new(File::open(path).map_err(|source| StoreError::Io {
                    context: format!("opening {}", path.display()),
                    source,
                })?),
                None => Box::new(io::stdin()),
            };
            let summary = admin::produce(store, &name, &options, input)?;
            eprintln!("produced {} message(s) to {name}", summary.total());
        }
        TopicCommand::Consume {
            name,
            from,
            from_time,
            queue,
            group,
            follow,
            max,
            format,
        } => {
            let options = ConsumeOptions {
                start: from_time.map(StartFrom::Timestamp).or(from),
                queue,
                group,
                follow,
                max,
                format: match format {
                    ConsumeFormat::Body => OutputFormat::Body,
                    ConsumeFormat::Json => OutputFormat::Json,
                },
                ..ConsumeOptions::default()
            };
            admin::consume(store, &name, &options, &mut out)?;
        }
        TopicCommand::Delete { name } => {
            store.delete_topic(&name)?;
            eprintln!("deleted topic {name}");
        }
        TopicCommand::Compact { name } => {
            let Some(store) = store.as_store() else {
                return Err(StoreError::Invalid(format!(
                    "unsupported feature: `riffle topic compact` on {}; RocketMQ brokers compact COMPACTION topics themselves",
                    store.location()
                )));
            };
            let stats = store.compact(&name)?;
            eprintln!(
                "compacted {name}: removed {} message(s), kept {}, {} -> {} bytes",
                stats.removed, stats.kept, stats.bytes_before, stats.bytes_after
            );
        }
    }
    Ok(())
}
