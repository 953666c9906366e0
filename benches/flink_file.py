#!/usr/bin/env python3
"""The file benchmark on real Apache Flink 2.3 (PyFlink) next to Riffle, on the same CSV file.

    $HOME/.cache/riffle-oracle-venv/bin/python benches/flink_file.py \
        --rows 10000000 [--queries passthrough,tumble] [--parallelism 1] \
        [--riffle target/release/riffle]

Steps:
  1. Riffle: `riffle bench file --rows N --format json` per parallelism. It generates the CSV file
     once (deterministic for N; kept in the temp directory) and reports its path.
  2. Flink: for each query and parallelism, a fresh TableEnvironment in one JVM runs
     benches/file/<query>.sql with the filesystem table's 'path' set to that same file, into the
     script's blackhole sink. Wall time is from submission to the end of the job; CPU time and
     peak RSS are the JVM's (from /proc; the peak is reset before each job).
  3. Prints one table: rows/s and rows/s per CPU core of each engine and their ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from flink_nexmark import ROOT, flink_error, fmt, run_flink_job, statements

QUERIES = ROOT / "benches" / "file"


def flink_statements(query: str, input_file: str) -> list[str]:
    out = []
    for s in statements((QUERIES / f"{query}.sql").read_text()):
        s = s.rstrip(";")
        if "'connector' = 'filesystem'" in s:
            s = re.sub(r"'path'\s*=\s*'[^']*'", "'path' = '%s'" % input_file, s)
        out.append(s)
    return out


def run_riffle(riffle: str, queries, parallelisms, rows: int):
    results = []
    for p in parallelisms:
        for q in queries:
            cmd = [riffle, "bench", "file", "--rows", str(rows), "--queries", q,
                   "--parallelism", str(p), "--format", "json", "--dir", str(QUERIES)]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode != 0:
                err = (proc.stderr.strip().splitlines() or ["failed"])[-1][:160]
                results.append({"engine": "riffle", "query": q, "parallelism": p, "error": err})
            else:
                results.extend(dict(r, engine="riffle") for r in json.loads(proc.stdout))
            print(json.dumps(results[-1]), file=sys.stderr)
    return results


def run_flink(queries, parallelisms, input_file: str, rows: int):
    results = []
    for p in parallelisms:
        for q in queries:
            result = {"engine": "flink", "query": q, "parallelism": p}
            try:  # a query Flink rejects is reported, and the others still run
                job = run_flink_job(flink_statements(q, input_file), p)
                cpu = job["cpu_seconds"]
                result.update(job, rows=rows, rows_per_sec=rows / job["seconds"],
                              rows_per_sec_per_core=rows / cpu if cpu > 0 else None)
            except Exception as e:
                result["error"] = flink_error(e)
            results.append(result)
            print(json.dumps(result), file=sys.stderr)
    return results


def print_table(riffle, flink):
    print(f"{'query':<12} {'p':>2} {'Riffle rows/s':>14} {'Riffle rows/s/core':>19} "
          f"{'Flink rows/s':>13} {'Flink rows/s/core':>18} {'ratio/core':>10} "
          f"{'Riffle RSS MB':>13} {'Flink RSS MB':>12}")
    for r in riffle:
        f = next((x for x in flink if x["query"] == r["query"]
                  and x["parallelism"] == r.get("parallelism")), {})
        rc, fc = r.get("rows_per_sec_per_core"), f.get("rows_per_sec_per_core")
        ratio = rc / fc if rc and fc else None
        err = r.get("error") or f.get("error")
        print(f"{r['query']:<12} {r.get('parallelism', 1):>2} {fmt(r.get('rows_per_sec')):>14} "
              f"{fmt(rc):>19} {fmt(f.get('rows_per_sec')):>13} {fmt(fc):>18} {fmt(ratio, 1):>10} "
              f"{fmt((r.get('peak_rss_bytes') or 0) / 2**20):>13} "
              f"{fmt((f.get('peak_rss_bytes') or 0) / 2**20):>12}"
              + (f"  ({err})" if err else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--queries", default="passthrough,tumble")
    ap.add_argument("--parallelism", default="1")
    ap.add_argument("--riffle", default=str(ROOT / "target" / "release" / "riffle"))
    ap.add_argument("--skip-flink", action="store_true")
    ap.add_argument("--json", type=Path, help="also write all results to this file")
    args = ap.parse_args()
    queries = [q.strip() for q in args.queries.split(",") if q.strip()]
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    riffle = run_riffle(args.riffle, queries, parallelisms, args.rows)
    input_file = next((r["input"] for r in riffle if "input" in r), None)
    if input_file is None:
        sys.exit("riffle bench file failed; no input file to give Flink")
    flink = [] if args.skip_flink else run_flink(queries, parallelisms, input_file, args.rows)
    if args.json:
        args.json.write_text(json.dumps({"riffle": riffle, "flink": flink}, indent=2))
    print_table(riffle, flink)


if __name__ == "__main__":
    main()
