#!/usr/bin/env python3
"""Write the Flink side of the migrate-and-run check (a developer tool; not run in CI).

    python3 crates/riffle-toolkit/tests/flink/migrate_run_cases.py            # write the cases
    python3 crates/riffle-toolkit/tests/flink/migrate_run_cases.py --oracle   # ... and run them on Flink

For every Kafka job of `fixtures/jobs/kafka/`, this writes a conformance case
`crates/riffle-toolkit/tests/migrate-run/<job>.test` holding the ORIGINAL job's statements with
its Kafka tables swapped for built-in connectors over the same rows, and the rows of
`migrate-inputs/`. `--oracle` then runs the cases without expectations on real Flink 2.3 with the conformance oracle
(`compat-tests/oracle/regenerate`, pointed at that directory), which writes the expected sections.
The Riffle side (`crates/riffle-cli/tests/migrate_run.rs`) migrates the same original job, produces
the same rows into the migrated job's topics, runs it with `riffle run` and compares what its sink
topics hold with these expectations.

The swap, the only change made to the original job:
  * a Kafka source (`kafka`, or the legacy `connector.type` style) becomes a `filesystem` table
    reading input `<table>` with the same format and format options (`value.format` /
    `value.<fmt>.*` become `format` / `<fmt>.*`); Kafka-only options go, as a file has no topic,
    group or partitions;
  * every table the job writes (Kafka topics, blackhole, and files: the rows the files hold)
    becomes a `print` table with the same columns and primary key, so the oracle captures the
    rows; a table with a primary key is compared
    as the final table (`compare = final`), which is what an upsert topic holds, and so is the
    result a blackhole discarded; `migrate-inputs/<job>/options` adds harness options (with a
    comment saying why), as conformance cases do;
  * the rows: `migrate-inputs/<job>/<table>.<ext>`, else `migrate-inputs/<table>.<ext>` (shared
    by jobs over the same topic, e.g. Nexmark's events) — `.jsonl` for JSON, `.csv` for CSV, ...
  * an upsert-kafka source becomes a filesystem table in `debezium-json` over events standing for
    its records (`upsert_events`), with `table.exec.source.cdc-events-duplicate` = true so that
    Flink normalizes them by the primary key as it normalizes upsert-kafka's changelog;
  * a `CREATE FUNCTION` naming a class of `fixtures/udf/java` gets `USING JAR '${udf_jar}'`.

A job whose original meaning depends on something a file cannot stand for gets no case; instead
`migrate-run/NOT_COMPARABLE` lists it with the reason (Kafka metadata columns, topic patterns,
start positions other than earliest/group offsets, Avro sources, filesystem sinks,
processing time, Java functions whose class is not in the repository).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import importlib.util
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "fixtures"))

import validate_with_flink as flink  # noqa: E402  (statement splitting and CREATE TABLE parsing)

JOBS = ROOT / "fixtures" / "jobs" / "kafka"
INPUTS = HERE / "migrate-inputs"
CASES = HERE.parent / "migrate-run"
ORACLE = ROOT / "compat-tests" / "oracle" / "regenerate"
UDF_SOURCES = ROOT / "fixtures" / "udf" / "java"
KAFKA_CONNECTORS = {"kafka", "legacy:kafka"}
# Start positions a file read from its beginning stands for (a fresh consumer group reads all).
WHOLE_TOPIC_STARTS = {None, "earliest-offset", "group-offsets"}
INPUT_EXTENSIONS = {"json": "jsonl", "csv": "csv", "debezium-json": "jsonl", "canal-json": "jsonl", "raw": "txt"}
# Kafka options that are not the format's (dropped by the swap).
FORMAT_PREFIXES = ("json.", "csv.", "debezium-json.", "canal-json.", "raw.")
# Makes Flink normalize the stand-in of an upsert-kafka source by its primary key.
UPSERT_CONFIG = "table.exec.source.cdc-events-duplicate"


CREATE_FUNCTION = re.compile(r"(?is)^CREATE\s+(?:TEMPORARY\s+)?(?:SYSTEM\s+)?FUNCTION\s+.*?\bAS\s+'([^']+)'")


class NotComparable(Exception):
    """The job's result on a file would not be the original job's result on Kafka."""


def fmt_of(t: flink.TableDef) -> str:
    return t.option("value.format") or t.option("format") or t.option("format.type") or ""


def upsert_events(t: flink.TableDef, job: str) -> str:
    """The Debezium events standing for the messages of an upsert-kafka topic.

    `migrate-inputs/<job>/<table>.upsert.jsonl` holds the topic's records, one per line, as
    `{"key": {<key columns>}, "value": {<row>} | null}` (key and value in the JSON formats the
    table names). A record with a value becomes an insert event of that row, a tombstone a delete
    event of a row holding only the key — the changes upsert-kafka's source emits ([I] per value,
    [D] with the key per tombstone) — and `table.exec.source.cdc-events-duplicate` makes Flink
    normalize them by the primary key (ChangelogNormalize), as it does for upsert-kafka.
    """
    path = INPUTS / job / f"{t.name}.upsert.jsonl"
    if not path.exists():
        raise SystemExit(f"{job}: no records for upsert source `{t.name}` (write {path})")
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("value") is None:
            event = {"before": record["key"], "after": None, "op": "d"}
        else:
            event = {"before": None, "after": record["value"], "op": "c"}
        events.append(json.dumps(event, separators=(",", ":")))
    return "".join(e + "\n" for e in events)


def source_table(t: flink.TableDef, job: str) -> tuple[flink.TableDef, str, str]:
    """The filesystem stand-in of a Kafka source table, with its input name and rows."""
    conn = flink.connector_of(t)
    fmt = fmt_of(t)
    meta = [m.group(1) for c in t.columns or [] if (m := re.search(r"(?i)\bMETADATA(?:\s+FROM\s+'([^']*)')?", c))]
    if meta:
        keys = ", ".join(k or "(column name)" for k in meta)
        if all(k and k.startswith("value.") for k in meta):
            # Flink's filesystem connector exposes no format metadata (only file metadata).
            raise NotComparable(f"`{t.name}` reads metadata of its '{fmt}' format ({keys}), which Flink's filesystem tables do not expose")
        raise NotComparable(f"`{t.name}` reads metadata columns ({keys}) that a file does not carry")
    if t.option("topic-pattern") is not None or ";" in (t.option("topic") or ""):
        raise NotComparable(f"`{t.name}` reads a topic pattern or several topics")
    start = t.option("scan.startup.mode") or t.option("connector.startup-mode")
    if start == "specific-offsets":
        raise NotComparable(f"`{t.name}` starts at given offsets of each Kafka partition ('specific-offsets'), which name no position in a file (nor a RocketMQ queue offset: migrate leaves them for a human)")
    if start not in WHOLE_TOPIC_STARTS:
        raise NotComparable(f"`{t.name}` starts at '{start}', not at the beginning of the topic")
    if conn == "upsert-kafka":
        if fmt != "json":
            raise NotComparable(f"`{t.name}` is an upsert-kafka source in format '{fmt}' (the stand-in reads JSON records)")
        opts = [("connector", "filesystem"), ("path", f"${{{t.name}}}"), ("format", "debezium-json")]
        return flink.TableDef(t.name, t.head, t.columns, t.middle, opts, t.like), t.name, upsert_events(t, job)
    if fmt == "avro-confluent":
        raise NotComparable(f"`{t.name}` has format 'avro-confluent': the Flink here has no flink-avro-confluent-registry jar nor a schema registry to read it with (Riffle runs it against a test registry: crates/riffle-cli/tests/avro_confluent_job.rs)")
    if fmt not in INPUT_EXTENSIONS:
        raise NotComparable(f"`{t.name}` has format '{fmt}', which a filesystem table cannot read here")
    opts = [("connector", "filesystem"), ("path", f"${{{t.name}}}"), ("format", fmt)]
    for k, v in t.options:
        key = k[len("value.") :] if k.startswith(f"value.{fmt}.") else k
        if key.startswith(FORMAT_PREFIXES):
            opts.append((key, v))
    ext = INPUT_EXTENSIONS[fmt]
    for candidate in (INPUTS / job / f"{t.name}.{ext}", INPUTS / f"{t.name}.{ext}"):
        if candidate.exists():
            rows = candidate.read_text(encoding="utf-8")
            break
    else:
        raise SystemExit(f"{job}: no rows for `{t.name}` (write {INPUTS / job / f'{t.name}.{ext}'})")
    return flink.TableDef(t.name, t.head, t.columns, t.middle, opts, t.like), t.name, rows


def sink_table(t: flink.TableDef) -> flink.TableDef:
    """The print stand-in of a table the job writes (a filesystem sink's files hold its rows)."""
    conn = flink.connector_of(t)
    if conn not in KAFKA_CONNECTORS | {"upsert-kafka", "blackhole", "filesystem"}:
        raise NotComparable(f"`{t.name}` is a {conn} sink, not a topic")
    if any(flink.METADATA_COL.match(c) for c in t.columns or []):
        raise NotComparable(f"`{t.name}` writes Kafka record metadata")
    return flink.TableDef(t.name, t.head, t.columns, "", [("connector", "print")], t.like)


def case_text(path: Path) -> str:
    """The conformance case of one Kafka job (raises NotComparable)."""
    job = path.stem
    statements = flink.strip_and_split(path.read_text(encoding="utf-8"))
    targets = {
        flink.unquote_ident(m.group(1))
        for s in statements
        for m in flink.INSERT_TARGET.finditer(s)
    }
    config, sql, inputs, keyed = [], [], {}, False
    for stmt in statements:
        set_stmt = flink.SET_STMT.match(stmt)
        if set_stmt:
            config.append(f"{set_stmt.group(1)} = {set_stmt.group(2)}")
            continue
        if flink.CREATE_TABLE.match(stmt):
            t = flink.parse_create_table(stmt)
            if t.name in targets:
                # An upsert topic holds the final table; a blackhole shows nothing but the
                # result's final state is still what the job computes.
                keyed |= any(re.match(r"(?i)PRIMARY\s+KEY", c) for c in t.columns or [])
                keyed |= flink.connector_of(t) == "blackhole"
                stmt = sink_table(t).render()
            elif flink.connector_of(t) in KAFKA_CONNECTORS | {"upsert-kafka"}:
                if flink.connector_of(t) == "upsert-kafka":
                    config.append(f"{UPSERT_CONFIG} = true")
                t, name, rows = source_table(t, job)
                inputs[name] = rows
                stmt = t.render()
            else:
                raise NotComparable(f"`{t.name}` reads a {flink.connector_of(t)} table outside the topics")
        elif function := CREATE_FUNCTION.match(stmt):
            source = UDF_SOURCES / (function.group(1).replace(".", "/") + ".java")
            if not source.exists():
                raise NotComparable(f"calls the Java function {function.group(1)}, whose class is not in fixtures/udf/java")
            stmt = re.sub(r"(?is)\s+LANGUAGE\s+JAVA\s*$", "", stmt) + " LANGUAGE JAVA USING JAR '${udf_jar}'"
        if re.search(r"(?i)\bPROCTIME\s*\(", stmt):
            raise NotComparable("uses processing time, so its result depends on the wall clock")
        sql.append(stmt)
    out = [
        f"# `riffle migrate` check: fixtures/jobs/kafka/{path.name} with its Kafka tables swapped for",
        "# filesystem sources over the rows below and print sinks (written by",
        "# crates/riffle-toolkit/tests/flink/migrate_run_cases.py; expectations by the Flink oracle).",
    ]
    if config:
        out += ["--- config", *config]
    options = ["compare = final"] if keyed else []
    extra = INPUTS / job / "options"
    if extra.exists():  # per-job harness options, each with a `#` line saying why
        options += [ln for ln in extra.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    if options:
        out += ["--- options", *dict.fromkeys(options)]
    for name, rows in inputs.items():
        out += [f"--- input {name}", rows.rstrip("\n")]
    out += ["--- sql", *(s.strip() + ";\n" for s in sql)]
    return "\n".join(out).rstrip("\n") + "\n"


def run_oracle() -> int:
    """Runs the oracle on the cases (its own runner, pointed at CASES)."""
    loader = importlib.machinery.SourceFileLoader("regenerate", str(ORACLE))
    spec = importlib.util.spec_from_loader("regenerate", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.CASES_DIR = CASES
    sys.argv = ["regenerate", "--missing"]
    return module.main()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", action="store_true", help="also run the cases on Flink (writes expectations)")
    args = ap.parse_args()
    CASES.mkdir(exist_ok=True)
    not_comparable = []
    for path in sorted(JOBS.glob("*.sql")):
        target = CASES / f"{path.stem}.test"
        try:
            text = case_text(path)
        except NotComparable as e:
            not_comparable.append(f"{path.stem}: {e}")
            target.unlink(missing_ok=True)
            continue
        if target.exists():
            old = target.read_text(encoding="utf-8")
            generated = re.search(r"(?m)^--- (columns|expected|expected-error)\b", old)
            if generated and old[: generated.start()].rstrip("\n") + "\n" == text:
                continue  # unchanged: keep the recorded expectations
        target.write_text(text, encoding="utf-8")
    (CASES / "NOT_COMPARABLE").write_text(
        "# Kafka jobs whose original result a file cannot reproduce (written by migrate_run_cases.py)\n"
        + "".join(f"{line}\n" for line in not_comparable),
        encoding="utf-8",
    )
    print(f"{len(list(CASES.glob('*.test')))} case(s), {len(not_comparable)} not comparable")
    return run_oracle() if args.oracle else 0


if __name__ == "__main__":
    sys.exit(main())
