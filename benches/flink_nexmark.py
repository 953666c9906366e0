#!/usr/bin/env python3
"""Nexmark on real Apache Flink 2.3 (PyFlink) next to Riffle, on the same input file.

    $HOME/.cache/riffle-oracle-venv/bin/python benches/flink_nexmark.py \
        --queries q0,q1,q2 --events 1000000 [--parallelism 1,2] [--riffle target/release/riffle]

Steps:
  1. `riffle nexmark gen --events N -o FILE` writes the events once (JSON lines, ISO timestamps),
     unless FILE exists already.
  2. Riffle: `riffle bench nexmark --input FILE --format json` per parallelism, and once more
     with the built-in generator (no decoding).
  3. Flink: for each query and parallelism, a fresh TableEnvironment in one JVM runs the fixture
     fixtures/nexmark/<q>.sql with its `nexmark` table swapped for a `filesystem`/`json` table
     over FILE (same schema, computed `dateTime`, watermark), into the fixture's blackhole sink.
     Wall time is from submission to the end of the job; CPU time and peak RSS are the JVM's
     (read from /proc; the peak is reset before each job).
  4. Prints one table: events/s and events/s per CPU core of each engine and their ratio.
     The input file is read once before every run, so both engines read it from the page cache.
     With `--rounds N` every measured run is repeated N times (the engines alternate by round)
     and the table gives each rate's median with the range of the rounds: both engines' rates
     move by tens of percent between single runs on a shared machine.

events/s per core = events / CPU-seconds of the engine's process during the job, which is stable
on a busy machine where wall-clock rates are not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "nexmark"
USER_HZ = os.sysconf("SC_CLK_TCK")


def jvm_pid() -> int:
    """The PyFlink gateway JVM: the java child of this process."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"java" in cmdline:
            return int(entry.name)
    raise RuntimeError("no JVM child process found")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / USER_HZ


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


def statements(sql: str) -> list[str]:
    """Splits a fixture into statements (fixtures put `;` at line ends, outside comments)."""
    body = "\n".join(l for l in sql.splitlines() if not l.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";\n") if s.strip().rstrip(";").strip()]


def warm_page_cache(path: Path) -> None:
    """Reads the input file once, so that every run reads it from the page cache: a file
    partly evicted (by the other engine's heap, say) costs the run that reads it from disk
    about half again as much CPU, which is noise and not the engine."""
    with open(path, "rb", buffering=0) as f:
        chunk = bytearray(1 << 24)
        while f.readinto(chunk):
            pass


def flink_statements(query: str, input_file: Path) -> list[str]:
    stmts = statements((FIXTURES / f"{query}.sql").read_text())
    out = []
    for s in stmts:
        s = s.rstrip(";")
        if "'connector' = 'nexmark'" in s:
            s = re.sub(
                r"WITH\s*\((.*)\)\s*$",
                "WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json', "
                "'json.timestamp-format.standard' = 'ISO-8601')" % input_file,
                s,
                flags=re.S,
            )
        out.append(s)
    return out


def run_flink_job(stmts: list[str], parallelism: int) -> dict:
    """Runs one script on a fresh TableEnvironment of the gateway JVM: its other statements
    first, then its INSERTs as one statement set, measured. Returns the job's wall and CPU
    seconds and the JVM's peak RSS; raises what Flink raises (e.g. a rejected query)."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(parallelism))
    conf.set("table.local-time-zone", "UTC")
    inserts = []
    for s in stmts:
        if s.upper().startswith("INSERT"):
            inserts.append(s)
        else:
            env.execute_sql(s)
    pid = jvm_pid()
    reset_peak_rss(pid)
    cpu0 = cpu_seconds(pid)
    t0 = time.monotonic()
    stmt_set = env.create_statement_set()
    for s in inserts:
        stmt_set.add_insert_sql(s)
    stmt_set.execute().wait()
    return {"seconds": time.monotonic() - t0, "cpu_seconds": cpu_seconds(pid) - cpu0,
            "peak_rss_bytes": peak_rss(pid)}


def flink_error(e: Exception) -> str:
    """The first line of what Flink raised."""
    return str(e).strip().splitlines()[0][:160] if str(e).strip() else repr(e)


def run_flink(queries, parallelisms, input_file: Path, events: int, warmup: list[str]):
    results = []
    # The JVM compiles Flink's code paths while it runs them; warm-up jobs (not reported) keep
    # that one-off cost out of the measured ones. Only the first round of a run warms up.
    runs = [(1, q, False) for q in warmup] + [
        (p, q, True) for p in parallelisms for q in queries]
    for p, q, measured in runs:
        result = {"engine": "flink", "query": q, "parallelism": p}
        warm_page_cache(input_file)
        try:  # a query Flink rejects is reported, and the others still run
            job = run_flink_job(flink_statements(q, input_file), p)
            cpu = job["cpu_seconds"]
            result.update(job, events=events, events_per_sec=events / job["seconds"],
                          events_per_sec_per_core=events / cpu if cpu > 0 else None)
        except Exception as e:
            result["error"] = flink_error(e)
        if not measured:
            print(f"warm-up {q}: {json.dumps(result)}", file=sys.stderr)
            continue
        results.append(result)
        print(json.dumps(result), file=sys.stderr)
    return results


def run_riffle(riffle: str, queries, parallelisms, input_file: Path, events: int):
    results = []
    runs = [(p, input_file) for p in parallelisms] + [(1, None)]
    for p, file in runs:
        for q in queries:
            cmd = [riffle, "bench", "nexmark", "--queries", q, "--events", str(events),
                   "--parallelism", str(p), "--format", "json", "--dir", str(FIXTURES)]
            if file is not None:
                cmd += ["--input", str(file)]
                warm_page_cache(file)
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode != 0:
                err = (proc.stderr.strip().splitlines() or ["failed"])[-1][:160]
                results.append({"engine": "riffle", "query": q, "parallelism": p,
                                "source": "json-file" if file else "nexmark", "error": err})
            else:
                for r in json.loads(proc.stdout):
                    r["engine"] = "riffle"
                    results.append(r)
            print(json.dumps(results[-1]), file=sys.stderr)
    return results


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def summarize(rounds: list[list[dict]]) -> list[dict]:
    """One result per (query, parallelism, source) from several rounds: the median rates and
    peak RSS, with each rate's range over the rounds as `<rate>_range`. A run that failed in
    any round is reported with its error."""
    out = []
    for first in rounds[0]:
        same = [r for runs in rounds for r in runs
                if (r["query"], r.get("parallelism"), r.get("source"))
                == (first["query"], first.get("parallelism"), first.get("source"))]
        failed = next((r for r in same if r.get("error") or
                       r.get("events_per_sec_per_core") is None), None)
        if failed:
            out.append(failed)
            continue
        summary = dict(first, rounds=len(same))
        for key in ("events_per_sec", "events_per_sec_per_core", "peak_rss_bytes"):
            values = [r[key] for r in same]
            summary[key] = median(values)
            summary[f"{key}_range"] = [min(values), max(values)]
        out.append(summary)
    return out


def fmt_range(r, key):
    """`median (min–max)` of a summarized rate, or just the value of a single round."""
    value, spread = r.get(key), r.get(f"{key}_range")
    if value is None or not spread or r.get("rounds", 1) < 2:
        return fmt(value)
    digits = 0 if spread[1] >= 100_000 else 1
    return f"{fmt(value)} ({fmt(spread[0] / 1000, digits)}–{fmt(spread[1] / 1000, digits)}k)"


def print_table(riffle, flink):
    rounds = max([r.get("rounds", 1) for r in riffle + flink] or [1])
    if rounds > 1:
        print(f"medians of {rounds} rounds; per-core rates with their range over the rounds")
    print(f"{'query':<6} {'p':>2} {'source':<10} {'Riffle ev/s':>13} {'Riffle ev/s/core':>17} "
          f"{'Flink ev/s':>12} {'Flink ev/s/core':>16} {'ratio/core':>10} {'Riffle RSS MB':>13} "
          f"{'Flink RSS MB':>12}")
    for r in riffle:
        f = next((x for x in flink if x["query"] == r["query"]
                  and x["parallelism"] == r.get("parallelism")), {})
        rc, fc = r.get("events_per_sec_per_core"), f.get("events_per_sec_per_core")
        ratio = rc / fc if rc and fc else None
        err = r.get("error") or f.get("error")
        print(f"{r['query']:<6} {r.get('parallelism', 1):>2} {r.get('source', ''):<10} "
              f"{fmt(r.get('events_per_sec')):>13} {fmt_range(r, 'events_per_sec_per_core'):>17} "
              f"{fmt(f.get('events_per_sec')):>12} "
              f"{fmt_range(f, 'events_per_sec_per_core'):>16} {fmt(ratio, 1):>10} "
              f"{fmt((r.get('peak_rss_bytes') or 0) / 2**20):>13} "
              f"{fmt((f.get('peak_rss_bytes') or 0) / 2**20):>12}"
              + (f"  ({err})" if err else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", default="q0,q1,q2")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--parallelism", default="1,2")
    ap.add_argument("--riffle", default=str(ROOT / "target" / "release" / "riffle"))
    ap.add_argument("--input", type=Path, help="events file (default /tmp/nexmark-<events>.json)")
    ap.add_argument("--skip-flink", action="store_true")
    ap.add_argument("--warmup", default="all",
                    help="queries Flink runs once, unreported, before the measured ones: 'all' "
                         "(the measured queries), a comma-separated list, or '' for none")
    ap.add_argument("--json", type=Path, help="also write all results to this file")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every run this many times and report medians (default 1)")
    ap.add_argument("--flink-rounds", type=int,
                    help="rounds of the Flink runs, when fewer than --rounds (a 10M-event "
                         "round of Flink takes about 20 minutes on 2 cores)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    flink_rounds_wanted = min(args.flink_rounds or args.rounds, args.rounds)
    queries = [q.strip() for q in args.queries.split(",") if q.strip()]
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    input_file = args.input or Path(f"/tmp/nexmark-{args.events}.json")
    if not input_file.exists():
        subprocess.run([args.riffle, "nexmark", "gen", "--events", str(args.events),
                        "--format", "json", "-o", str(input_file)], check=True)
    warmup = queries if args.warmup == "all" else [q for q in args.warmup.split(",") if q.strip()]
    riffle_rounds, flink_rounds = [], []
    for round_no in range(args.rounds):
        riffle_rounds.append(run_riffle(args.riffle, queries, parallelisms, input_file, args.events))
        if not args.skip_flink and round_no < flink_rounds_wanted:
            flink_rounds.append(run_flink(queries, parallelisms, input_file, args.events,
                                          warmup if round_no == 0 else []))
    riffle = summarize(riffle_rounds)
    flink = summarize(flink_rounds) if flink_rounds else []
    if args.json:
        args.json.write_text(json.dumps({"riffle": riffle, "flink": flink,
                                         "rounds": {"riffle": riffle_rounds, "flink": flink_rounds}},
                                        indent=2))
    print_table(riffle, flink)


if __name__ == "__main__":
    main()
