#!/usr/bin/env python3
"""Real Flink plans every exported fixture job (a developer tool; CI has no Flink).

Usage, from the repository root (PyFlink 2.3.0 in $HOME/.cache/riffle-oracle-venv, Java 17):

    $HOME/.cache/riffle-oracle-venv/bin/python crates/riffle-toolkit/tests/flink/validate_exports.py \\
        [--targets 2.3:legacy,2.3:kafka,1.18:legacy,migrate] [-v]

For each target (`<flink version>:<rocketmq-flink release | kafka>`, or `migrate` for the output of
`riffle migrate --modernize`), the script has riffle export every job of fixtures/jobs (through the
ignored test `export_flink`, so no riffle binary is needed) and gives each exported job to
fixtures/validate_with_flink.py, which plans it on Flink 2.3 with `EXPLAIN` after swapping the
connectors that have no jar here (kafka, upsert-kafka, rocketmq) for datagen / blackhole /
filesystem with the schema kept. Jobs Flink itself rejects are listed there (EXPECTED_FAILURES).
Exported SQL for an older Flink release is planned by Flink 2.3 too: it shows that the rewrites
(legacy SESSION windows, positional TVF arguments) are valid Flink SQL, not that the older planner
takes the job.

Prints one line per job and a summary per target; exit status 1 when a job fails unexpectedly.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "fixtures"))

import validate_with_flink as flink  # noqa: E402  (the fixture validator, reused as a library)

# After migrate/export, rsqlDB's `FOR SYSTEM_TIME AS OF PROCTIME()` lookup joins are standard SQL
# that Flink itself rejects (migrate reports them for a human: the probe side needs a proctime
# attribute, and the dimension a lookup source).
flink.EXPECTED_FAILURES["rsqldb_ticket_dim_join.sql"] = "Unsupported time travel expression: PROCTIME()"


def write_exports(out: Path, targets: list[str], verbose: bool) -> None:
    env = dict(os.environ, RIFFLE_EXPORT_OUT=str(out), RIFFLE_EXPORT_TARGETS=",".join(targets))
    # `--workspace` (not `-p riffle-toolkit`) builds with the workspace's feature set, so the
    # test's build reuses the normal test build instead of rebuilding DataFusion.
    cmd = ["cargo", "test", "-q", "--workspace", "--locked", "--test", "export_flink", "--", "--ignored"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=not verbose, text=True)
    if proc.returncode != 0:
        sys.exit(f"validate_exports: export failed:\n{proc.stdout}\n{proc.stderr}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="2.3:legacy,2.3:kafka,1.18:legacy,migrate")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]

    out = Path(tempfile.mkdtemp(prefix="riffle-exports-"))
    write_exports(out, targets, args.verbose)
    stand_ins = flink.make_stand_ins()
    summary = []
    failed = 0
    for target in targets:
        directory = out / target.replace(":", "-")
        counts: dict[str, int] = {}
        for path in sorted(directory.rglob("*.sql")):
            try:
                outcome = flink.validate_file(path, stand_ins)
            except ValueError as exc:
                outcome = flink.Outcome("ERROR", f"validator: {exc}")
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
            rel = path.relative_to(directory)
            print(f"{target:14} {outcome.status:14} {rel}" + (f"\n{'':30}{outcome.detail}" if outcome.detail else ""), flush=True)
            if args.verbose and outcome.status == "ERROR":
                for s in outcome.rewritten:
                    print("\n".join(f"{'':30}| {ln}" for ln in s.splitlines()))
        failed += counts.get("ERROR", 0)
        total = sum(counts.values())
        summary.append(f"{target}: {total} jobs — " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print("\n" + "\n".join(summary))
    print(f"exported files kept in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
