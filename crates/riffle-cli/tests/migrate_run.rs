//! `riffle migrate` produces jobs that run on Riffle with Flink's results.
//!
//! For every Kafka job of `fixtures/jobs/kafka/`, through the `riffle` binary: migrate the ORIGINAL
//! job (no `--namesrv`, so its topics live in the embedded store), produce the rows of its case
//! (`crates/riffle-toolkit/tests/migrate-run/<job>.test`) into its source topics, run it with
//! `riffle run`, read what its sink topics hold back with Riffle and compare that with the case's
//! expectation — what real Flink 2.3 produced for the original job over the same rows (the case and
//! how it was made: `crates/riffle-toolkit/tests/flink/migrate_run_cases.py`).
//!
//! The only change the test makes to a migrated job is `'scan.bounded.mode' = 'latest-offset'` on
//! the tables it feeds (the counterpart of the oracle's bounded files: the job ends, and its final
//! watermark fires the last windows), and a `blackhole` sink becomes `print` (as on the Flink side).
//!
//! Every job ends in exactly one of: matches Flink; rejected by Flink and Riffle alike; not
//! comparable (`migrate-run/NOT_COMPARABLE`, with the reason: a file cannot stand for its Kafka
//! source); or a known Riffle gap (`migrate-run/RIFFLE_GAPS`, with the reason). A job that stops
//! matching, or a listed gap that starts matching, fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use riffle_catalog::{ColumnRole, TableDef};
use riffle_compat::{compare, ActualOutput, Case, Expected};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cases_dir() -> PathBuf {
    root().join("crates/riffle-toolkit/tests/migrate-run")
}

/// `job: reason` lines of a list file (`#` comments).
fn listed(name: &str) -> BTreeMap<String, String> {
    let path = cases_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (job, reason) = l.split_once(':').unwrap_or((l, ""));
            (job.trim().to_string(), reason.trim().to_string())
        })
        .collect()
}

/// How one job ended.
#[derive(Debug)]
enum Outcome {
    Matches,
    BothReject(String),
    Differs(String),
    RiffleFails(String),
}

fn riffle(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_riffle"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the riffle binary runs")
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

/// The tables of a job, as Riffle's catalog sees them.
fn tables(sql: &str) -> Vec<TableDef> {
    let parsed = riffle_sql::parse_script(sql);
    let analysis = riffle_catalog::analyze(&parsed.script);
    analysis.catalog.tables().cloned().collect()
}

/// `sql` with `option` added to the WITH clause of table `table` (after its `'connector'`).
fn add_option(sql: &str, table: &str, option: &str) -> String {
    let lower = sql.to_lowercase();
    let Some(start) = lower
        .match_indices("create table")
        .map(|(i, _)| i)
        .find(|&i| {
            lower[i + "create table".len()..]
                .trim_start()
                .trim_start_matches('`')
                .starts_with(&table.to_lowercase())
        })
    else {
        return sql.to_string();
    };
    let Some(at) = lower[start..].find("'connector'").map(|i| start + i) else {
        return sql.to_string();
    };
    let Some(comma) = sql[at..].find(',').map(|i| at + i) else {
        return sql.to_string();
    };
    format!("{},\n    {option}{}", &sql[..comma], &sql[comma..])
}

/// A job reading `sink`'s topic back: the sink's persisted columns, primary key and format
/// options, as a bounded source from the earliest offset. A table with a primary key is read as
/// the upsert changelog the sink wrote (a tombstone deletes its key); the comparison then takes
/// the final table.
fn read_back_sql(sink: &TableDef, topic: &str) -> String {
    let mut columns: Vec<String> = sink
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnRole::Physical))
        .map(|c| format!("`{}` {}", c.name, c.data_type))
        .collect();
    let mut options = Vec::new();
    if !sink.primary_key.is_empty() {
        let keys: Vec<String> = sink.primary_key.iter().map(|k| format!("`{k}`")).collect();
        columns.push(format!("PRIMARY KEY ({}) NOT ENFORCED", keys.join(", ")));
        options.push(("riffle.changelog-mode".to_string(), "upsert".to_string()));
    }
    options.extend([
        ("connector".to_string(), "rocketmq".to_string()),
        ("rocketmq.source.topic".to_string(), topic.to_string()),
        (
            "rocketmq.source.startup.scan.mode".to_string(),
            "earliest".to_string(),
        ),
        ("scan.bounded.mode".to_string(), "latest-offset".to_string()),
    ]);
    const FORMAT_KEYS: [&str; 2] = ["format", "value.format"];
    for (k, v) in &sink.options {
        let format_option = FORMAT_KEYS.contains(&k.as_str())
            || ["json.", "csv.", "value.json.", "value.csv.", "key.json."]
                .iter()
                .any(|p| k.starts_with(p));
        if format_option {
            options.push((k.clone(), v.clone()));
        }
    }
    let with: Vec<String> = options
        .iter()
        .map(|(k, v)| format!("'{k}' = '{}'", v.replace('\'', "''")))
        .collect();
    format!(
        "CREATE TABLE read_back (\n  {}\n) WITH (\n  {}\n);\nSELECT * FROM read_back;\n",
        columns.join(",\n  "),
        with.join(",\n  ")
    )
}

/// Writes the records of an upsert topic into the embedded store of `work`, laid out as
/// Riffle's rocketmq sink writes an upsert changelog: the case's input holds them as the Debezium
/// events the Flink side reads (`migrate_run_cases.py`, `upsert_events`): an insert event's
/// `after` is a message body keyed by its primary key, a delete event's `before` (the key only)
/// a tombstone — the key without a body. The message key is the key column's value as text,
/// several key columns one JSON array of their texts.
fn produce_upsert(work: &Path, topic: &str, table: &TableDef, events: &str) -> Result<(), String> {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    let mut messages = Vec::new();
    for line in events.lines().filter(|l| !l.trim().is_empty()) {
        let event: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let (row, body) = match event["op"].as_str() {
            Some("c") => (&event["after"], event["after"].to_string().into_bytes()),
            Some("d") => (&event["before"], Vec::new()),
            other => return Err(format!("unexpected event kind {other:?} in `{line}`")),
        };
        let keys: Vec<Option<String>> = table
            .primary_key
            .iter()
            .map(|k| text(&row[k.as_str()]))
            .collect();
        let mut message = riffle_store::Message::new(body);
        message.keys = match keys.as_slice() {
            [single] => single.iter().cloned().collect(),
            several => {
                let array = several
                    .iter()
                    .map(|k| {
                        k.clone()
                            .map_or(serde_json::Value::Null, serde_json::Value::String)
                    })
                    .collect();
                vec![serde_json::Value::Array(array).to_string()]
            }
        };
        messages.push(message);
    }
    let store = riffle_store::Store::open(work.join(".riffle"), Default::default())
        .map_err(|e| e.to_string())?;
    store
        .append_batch(topic, 0, &messages)
        .map_err(|e| e.to_string())?;
    store.close().map_err(|e| e.to_string())
}

/// A job reading the files a filesystem sink wrote into `dir`: the sink's columns, partition
/// keys and options (its format options among them), as a filesystem source.
fn read_files_sql(sink: &TableDef, dir: &Path) -> String {
    let columns: Vec<String> = sink
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnRole::Physical))
        .map(|c| format!("`{}` {}", c.name, c.data_type))
        .collect();
    let partitioned = if sink.partition_keys.is_empty() {
        String::new()
    } else {
        let keys: Vec<String> = sink
            .partition_keys
            .iter()
            .map(|k| format!("`{k}`"))
            .collect();
        format!(" PARTITIONED BY ({})", keys.join(", "))
    };
    let format_prefix = |k: &str| {
        k == "format"
            || sink
                .option("format")
                .is_some_and(|f| k.starts_with(&format!("{f}.")))
    };
    let mut options = vec![
        "'connector' = 'filesystem'".to_string(),
        format!("'path' = '{}'", dir.display()),
    ];
    options.extend(
        sink.options
            .iter()
            .filter(|(k, _)| format_prefix(k))
            .map(|(k, v)| format!("'{k}' = '{}'", v.replace('\'', "''"))),
    );
    format!(
        "CREATE TABLE read_back (\n  {}\n){partitioned} WITH (\n  {}\n);\nSELECT * FROM read_back;\n",
        columns.join(",\n  "),
        options.join(",\n  ")
    )
}

fn printed_rows(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Migrates, feeds, runs and reads back one job; compares with Flink's result.
fn run_job(job: &str, case: &Case) -> Outcome {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let work = dir.path();
    let original = root().join(format!("fixtures/jobs/kafka/{job}.sql"));
    let out = riffle(
        work,
        &["migrate", &original.display().to_string(), "-o", "migrated"],
    );
    assert!(
        out.status.success(),
        "{job}: riffle migrate failed: {}",
        stderr_of(&out)
    );
    let migrated = std::fs::read_to_string(work.join(format!("migrated/{job}.sql")))
        .unwrap_or_else(|e| panic!("{job}: migrated file: {e}"));

    let inputs: BTreeMap<String, &str> = case
        .inputs
        .iter()
        .map(|i| (i.name.to_lowercase(), i.content.as_str()))
        .collect();
    let mut sql = migrated.replace("'connector' = 'blackhole'", "'connector' = 'print'");
    let mut sinks = Vec::new();
    let mut file_sinks = Vec::new();
    for table in tables(&migrated) {
        if table.connector.name.as_deref() == Some("filesystem") {
            // A filesystem sink writes into the work directory instead of its path (a path on
            // the machine it was written for), and its files are read back below.
            if let Some(path) = table.option("path") {
                let dir = work.join(format!("files-{}", table.path.name.to_lowercase()));
                sql = sql.replace(&format!("'{path}'"), &format!("'{}'", dir.display()));
                file_sinks.push((table.clone(), dir));
            }
            continue;
        }
        if table.connector.name.as_deref() != Some("rocketmq") {
            continue;
        }
        let name = table.path.name.to_lowercase();
        // Migrated without `--namesrv`: the table uses the embedded store of the work directory
        // (where the topics are created and read back below).
        assert_eq!(
            table.option("rocketmq.client.endpoints"),
            None,
            "{job}: `{name}` names a cluster"
        );
        match inputs.get(&name) {
            Some(rows) => {
                let topic = table
                    .option("rocketmq.source.topic")
                    .unwrap_or_else(|| panic!("{job}: source `{name}` has no topic"));
                let input = work.join(format!("{name}.input"));
                std::fs::write(&input, rows).expect("input file");
                let created = riffle(work, &["topic", "create", topic, "--queues", "1"]);
                assert!(created.status.success(), "{job}: {}", stderr_of(&created));
                sql = add_option(&sql, &name, "'scan.bounded.mode' = 'latest-offset'");
                if table.option("riffle.changelog-mode") == Some("upsert") {
                    produce_upsert(work, topic, &table, rows)
                        .unwrap_or_else(|e| panic!("{job}: producing `{name}`: {e}"));
                    continue;
                }
                let raw = table
                    .option("format")
                    .or(table.option("value.format"))
                    .is_some_and(|f| f != "json");
                let input = input.display().to_string();
                let mut args = vec!["topic", "produce", topic, "--file", &input];
                if raw {
                    args.push("--raw");
                }
                let produced = riffle(work, &args);
                assert!(produced.status.success(), "{job}: {}", stderr_of(&produced));
            }
            None => sinks.push(table),
        }
    }
    // The Flink side loads the fixture functions with `USING JAR`; the migrated job names only
    // the class, so the job file starts by naming the jar in `pipeline.jars`, as a deployment
    // that ships the jar does.
    if case.sql.contains("${udf_jar}") {
        let inputs = work.join("case-inputs");
        std::fs::create_dir_all(&inputs).expect("inputs directory");
        let paths = case
            .write_inputs(&inputs)
            .unwrap_or_else(|e| panic!("{job}: {e}"));
        sql = format!("SET 'pipeline.jars' = '{}';\n{sql}", paths["udf_jar"]);
    }
    std::fs::write(work.join("job.sql"), &sql).expect("job file");
    let mut args = vec!["run".to_string(), "job.sql".to_string()];
    for (k, v) in case.effective_config() {
        args.push("--set".into());
        args.push(format!("{k}={v}"));
    }

    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = riffle(work, &args);
    let expected = case
        .expected
        .as_ref()
        .unwrap_or_else(|| panic!("{job}: the case has no expectation; run the oracle"));
    if !ran.status.success() {
        let message = stderr_of(&ran);
        return match expected {
            Expected::Error(e) => BothReject(format!("Flink: {}: {}", e.class, e.message)),
            Expected::Rows(_) => RiffleFails(message),
        };
    }
    let mut rows = printed_rows(&ran);
    for sink in &sinks {
        let Some(topic) = sink.option("rocketmq.sink.topic") else {
            return RiffleFails(format!("sink `{}` has no topic", sink.path.name));
        };
        let exists = riffle(work, &["topic", "describe", topic]);
        if !exists.status.success() {
            continue; // nothing was written
        }
        std::fs::write(work.join("read_back.sql"), read_back_sql(sink, topic)).expect("file");
        let read = riffle(work, &["run", "read_back.sql"]);
        if !read.status.success() {
            return RiffleFails(format!("reading back {topic}: {}", stderr_of(&read)));
        }
        rows.extend(printed_rows(&read));
    }
    for (sink, dir) in &file_sinks {
        if !dir.exists() {
            continue; // nothing was written
        }
        std::fs::write(work.join("read_back.sql"), read_files_sql(sink, dir)).expect("file");
        let read = riffle(work, &["run", "read_back.sql"]);
        if !read.status.success() {
            return RiffleFails(format!(
                "reading back {}: {}",
                dir.display(),
                stderr_of(&read)
            ));
        }
        rows.extend(printed_rows(&read));
    }
    let comparison = compare(expected, &ActualOutput::Rows(rows));
    if comparison.passed() {
        Matches
    } else {
        Differs(comparison.to_string())
    }
}

use Outcome::{BothReject, Differs, Matches, RiffleFails};

#[test]
fn migrated_kafka_jobs_give_flinks_results() {
    let not_comparable = listed("NOT_COMPARABLE");
    let gaps = listed("RIFFLE_GAPS");
    let mut jobs: Vec<String> = std::fs::read_dir(root().join("fixtures/jobs/kafka"))
        .expect("fixtures/jobs/kafka")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    jobs.sort();
    let filter = std::env::var("RIFFLE_MIGRATE_RUN_FILTER").ok();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for job in &jobs {
        if filter.as_deref().is_some_and(|f| !job.contains(f)) {
            continue;
        }
        seen.insert(job.clone());
        let case_path = cases_dir().join(format!("{job}.test"));
        if let Some(reason) = not_comparable.get(job) {
            assert!(
                !case_path.exists(),
                "{job} is not comparable but has a case"
            );
            println!("NOT COMPARABLE  {job}: {reason}");
            *counts.entry("not comparable").or_default() += 1;
            continue;
        }
        let case = Case::load(&cases_dir(), &case_path)
            .unwrap_or_else(|e| panic!("{job}: {e} (run migrate_run_cases.py)"));
        let outcome = run_job(job, &case);
        let gap = gaps.get(job);
        match (&outcome, gap) {
            (Matches, None) => println!("MATCHES         {job}"),
            (BothReject(flink), None) => println!("BOTH REJECT     {job}: {flink}"),
            (Matches | BothReject(_), Some(_)) => {
                problems.push(format!("{job} now works: remove it from RIFFLE_GAPS"))
            }
            (Differs(detail) | RiffleFails(detail), Some(reason)) => {
                println!(
                    "RIFFLE GAP      {job}: {reason}\n    {}",
                    first_lines(detail)
                );
            }
            (Differs(detail) | RiffleFails(detail), None) => {
                problems.push(format!("{job}: {outcome:?}\n{detail}"))
            }
        }
        let label = match (&outcome, gap) {
            (Matches, _) => "matches Flink",
            (BothReject(_), _) => "rejected by Flink and Riffle",
            (_, Some(_)) => "known Riffle gap",
            (Differs(_), None) => "differs",
            (RiffleFails(_), None) => "fails on Riffle",
        };
        *counts.entry(label).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!("{} Kafka job(s): {}", seen.len(), summary.join(", "));
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The first lines of a long message, for the log.
fn first_lines(text: &str) -> String {
    text.lines().take(6).collect::<Vec<_>>().join("\n    ")
}
