#!/usr/bin/env python3
"""Proof that `riffle migrate --modernize` keeps results: runs legacy group-window queries and
their window-TVF rewrites on real Apache Flink with the same inputs and compares the outputs.

A developer tool (CI has no Flink). Usage, from the repository root:

    python3 crates/riffle-toolkit/tests/flink/modernize_proof.py [-v]

The cases are every conformance case under compat-tests/cases that uses a legacy group window
(`GROUP BY TUMBLE/HOP/SESSION(...)`), plus the extra cases in modernize-cases/ next to this script.
For each case the script

  1. takes the case's SQL and has riffle migrate it with --modernize (through the ignored test
     `migrate_flink`, so no riffle binary is needed);
  2. writes two copies of the case into a scratch case tree, the original and the rewritten SQL,
     with the same inputs, configuration and options;
  3. runs both with compat-tests/oracle/regenerate (one Flink JVM for all) and compares the
     generated sections (result schema and rows) with the oracle's own comparison rules
     (`same_result`), and also requires the schemas to be identical.

A case passes when migrate rewrote it and Flink's two outputs agree: `identical` (same schema and
rows), `same-rows` (same rows; the only schema difference is that the TVF's `window_time` is
NOT NULL where TUMBLE_ROWTIME and the like were nullable), or `both-rejected` (an error case that
Flink rejects in both forms). Cases migrate leaves for a human are listed with the reason and
prove nothing. Exit status 1 when any rewritten case differs.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
CASES = ROOT / "compat-tests" / "cases"
EXTRA = HERE / "modernize-cases"
LEGACY_WINDOW = re.compile(r"(?is)GROUP\s+BY[^;]*?\b(TUMBLE|HOP|SESSION)\s*\(\s*(?!TABLE\b)")


def load_regenerate():
    """compat-tests/oracle/regenerate as a module (it has no .py suffix)."""
    path = ROOT / "compat-tests" / "oracle" / "regenerate"
    loader = importlib.machinery.SourceFileLoader("regenerate", str(path))
    spec = importlib.util.spec_from_loader("regenerate", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def sql_section(lines: list[str]) -> tuple[int, int]:
    """(first body line, end) of the `--- sql` section, as indexes into lines."""
    start = next(i for i, l in enumerate(lines) if l.strip() == "--- sql") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("--- ")), len(lines))
    return start, end


def authored(lines: list[str], regen) -> list[str]:
    """The lines before the generated sections."""
    for i, line in enumerate(lines):
        m = regen.HEADER_RE.match(line)
        if m and m.group(1) in regen.GENERATED:
            return lines[:i]
    return lines


def migrate(sqls: dict[str, str], verbose: bool) -> dict[str, tuple[str, dict]]:
    """Runs riffle migrate --modernize on each SQL text; returns (output, report) by name."""
    with tempfile.TemporaryDirectory(prefix="riffle-modernize-") as tmp:
        src, dst = Path(tmp) / "in", Path(tmp) / "out"
        src.mkdir()
        dst.mkdir()
        for name, text in sqls.items():
            (src / f"{name}.sql").write_text(text, encoding="utf-8")
        env = dict(os.environ, RIFFLE_MIGRATE_IN=str(src), RIFFLE_MIGRATE_OUT=str(dst))
        # `--workspace` (not `-p riffle-toolkit`): the workspace's feature set, so the normal
        # test build is reused instead of DataFusion being rebuilt.
        cmd = ["cargo", "test", "-q", "--workspace", "--locked", "--test", "migrate_flink", "--", "--ignored"]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=not verbose, text=True)
        if proc.returncode != 0:
            sys.exit(f"modernize_proof: migrate failed:\n{proc.stdout}\n{proc.stderr}")
        out = {}
        for name in sqls:
            text = (dst / f"{name}.sql").read_text(encoding="utf-8")
            report = json.loads((dst / f"{name}.sql.report.json").read_text(encoding="utf-8"))
            out[name] = (text, report["jobs"][0])
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    regen = load_regenerate()

    # Collect the cases: id -> lines of the authored part.
    cases: dict[str, list[str]] = {}
    for path in sorted(CASES.rglob("*.test")):
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        start, end = sql_section(lines)
        if LEGACY_WINDOW.search("\n".join(lines[start:end])):
            cases[path.relative_to(CASES).with_suffix("").as_posix()] = authored(lines, regen)
    for path in sorted(EXTRA.glob("*.test")):
        cases[f"extra/{path.stem}"] = authored(path.read_text(encoding="utf-8").split("\n"), regen)

    key = lambda cid: cid.replace("/", "__")
    sqls = {}
    for cid, lines in cases.items():
        start, end = sql_section(lines)
        sqls[key(cid)] = "\n".join(lines[start:end])
    migrated = migrate(sqls, args.verbose)

    scratch = Path(tempfile.mkdtemp(prefix="riffle-modernize-cases-"))
    rewritten = []
    for cid, lines in cases.items():
        text, report = migrated[key(cid)]
        windows = [c for c in report["changes"] if c["code"].startswith("query.group-window.")]
        manual = [m for m in report["manual"] if m["code"].startswith("query.group-window.")]
        if not windows:
            reason = "; ".join(m["reason"] for m in manual) or "no legacy window found"
            print(f"{'left-for-human':16} {cid}: {reason}")
            continue
        start, end = sql_section(lines)
        modern = lines[:start] + text.split("\n") + lines[end:]
        for side, content in (("orig", lines), ("modern", modern)):
            target = scratch / side / f"{cid}.test"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(content).rstrip("\n") + "\n", encoding="utf-8")
        rewritten.append(cid)
        if args.verbose:
            print(f"--- {cid} (rewritten SQL)\n{text}")

    # Run every copy in one Flink JVM; regenerate writes the generated sections into the copies.
    regen.CASES_DIR = scratch
    sys.argv = ["regenerate"]
    status = regen.main()
    if status not in (0, 1):
        return 2

    failures = 0
    narrowed: list[str] = []
    for cid in rewritten:
        sides = {}
        for side in ("orig", "modern"):
            path = scratch / side / f"{cid}.test"
            case = regen.Case(path)
            sides[side] = (case, case.lines[case.generated_at :])
        (case, orig), (_, modern) = sides["orig"], sides["modern"]
        strip = lambda ls: [l for l in ls if l.strip()]
        orig, modern = strip(orig), strip(modern)
        schema = lambda ls: [l for l in ls if not re.match(r"^(.*> )?[+-][IUD]\[", l)]
        rejected = [any(l.startswith("--- expected-error") for l in side) for side in (orig, modern)]
        if all(rejected):
            # Both forms are rejected by Flink (an error case); the messages differ by form.
            print(f"{'both-rejected':16} {cid}: {orig[-1]} | {modern[-1]}")
            continue
        rows = sum(1 for l in orig if re.match(r"^(.*> )?[+-][IUD]\[", l))
        # Compare the rows alone (same_result also compares the schema lines, given separately here).
        rows_of = lambda ls: [l for l in ls if l not in schema(ls)]
        same_rows = regen.same_result(case, schema(modern) + rows_of(orig), modern)
        # The window TVF's window_time is NOT NULL where TUMBLE_ROWTIME & co. were nullable;
        # that is the only schema difference tolerated (same values, narrower type).
        relaxed = lambda ls: [l.replace(" NOT NULL *ROWTIME*", " *ROWTIME*").replace(" NOT NULL *PROCTIME*", " *PROCTIME*") for l in ls]
        if same_rows and schema(orig) == schema(modern):
            verdict = "identical"
        elif same_rows and relaxed(schema(orig)) == relaxed(schema(modern)):
            verdict = "same-rows"
            narrowed.append(cid)
        else:
            verdict = "DIFFERENT"
        same = verdict != "DIFFERENT"
        print(f"{verdict:16} {cid}: {rows} row(s)" + (" (window_time is NOT NULL where the legacy rowtime was nullable)" if verdict == "same-rows" else ""))
        if not same:
            failures += 1
            print("  original:\n    " + "\n    ".join(orig))
            print("  modernized:\n    " + "\n    ".join(modern))
    print(f"\n{len(cases)} case(s): {len(rewritten)} rewritten, {len(rewritten) - failures} with the same rows on Flink "
          f"({len(narrowed)} of them with window_time NOT NULL), {failures} different, "
          f"{len(cases) - len(rewritten)} left for a human")
    if failures == 0:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"scratch cases kept in {scratch}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
