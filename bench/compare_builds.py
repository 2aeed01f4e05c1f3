#!/usr/bin/env python3
"""Two builds of kasoku side by side in one run: ``python -m kasoku bench`` of each, interleaved.

    python bench/compare_builds.py --old OLD_VENV/bin/python --new .venv/bin/python \
        --params H16 --threads 1 --rounds 8 --reps 5 [--hoisting] [--out runs.jsonl] [--table t.md]

Each round runs the old build's benchmark and then the new one's, in alternating order (ABBA...), one at a time.
The table gives, per operation, the median over rounds of each build's per-run median and the median of the
per-round ratios new/old with their range; a ratio is paired within a round, so that slow phases of a shared
machine hit both builds.  The precision lines (bits after one MulRelinRescale) are compared too.  Set
KASOKU_SIMD in the environment to pin the kernel body of both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def run_bench(python: str, args, tag: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.jsonl"
        cmd = [os.path.abspath(python), "-m", "kasoku", "bench", "--params", args.params, "--threads", str(args.threads),
               "--reps", str(args.reps), "--json", str(out)]
        if args.hoisting:
            cmd.append("--hoisting")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        recs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    for r in recs:
        r["build"] = tag
    return recs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="python of the old build")
    ap.add_argument("--new", required=True, help="python of the new build")
    ap.add_argument("--params", default="H16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--hoisting", action="store_true", help="also SumSlots and Rotate16Hoisted")
    ap.add_argument("--out", help="append every JSON line (both builds, tagged with build and round)")
    ap.add_argument("--table", help="write the Markdown table here too")
    args = ap.parse_args()

    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    bits: dict[str, list[float]] = {"old": [], "new": []}
    all_recs = []
    for rnd in range(args.rounds):
        order = ["old", "new"] if rnd % 2 == 0 else ["new", "old"]
        for tag in order:
            print(f"[compare_builds] round {rnd + 1}/{args.rounds}: {tag} build ...", file=sys.stderr, flush=True)
            recs = run_bench(args.old if tag == "old" else args.new, args, tag)
            for r in recs:
                r["round"] = rnd
            all_recs += recs
            runs[tag].append({r["op"]: r["median_ms"] for r in recs if "median_ms" in r})
            bits[tag] += [r["bits"] for r in recs if r.get("op") == "precision"]
    if args.out:
        with open(args.out, "a") as f:
            for r in all_recs:
                f.write(json.dumps(r) + "\n")

    simd = os.environ.get("KASOKU_SIMD", "auto")
    lines = [f"{args.params}, {args.threads} thread(s), KASOKU_SIMD={simd}, {args.rounds} rounds x {args.reps} reps "
             "(ms: median over rounds of each run's median; ratio: median of the per-round ratios new/old, range)", "",
             "| op | old ms | new ms | new/old | range |", "| --- | ---: | ---: | ---: | --- |"]
    worst = 0.0
    for op in runs["old"][0]:
        old = [r[op] for r in runs["old"]]
        new = [r[op] for r in runs["new"]]
        ratios = [n / o for n, o in zip(new, old)]
        med = statistics.median(ratios)
        if op != "NTT":
            worst = max(worst, med)
        lines.append(f"| {op} | {statistics.median(old):.2f} | {statistics.median(new):.2f} | {med:.3f} | "
                     f"{min(ratios):.2f}-{max(ratios):.2f} |")
    lines.append("")
    lines.append(f"Precision after one MulRelinRescale (bits, worst slot): old {min(bits['old']):.2f}-{max(bits['old']):.2f}, "
                 f"new {min(bits['new']):.2f}-{max(bits['new']):.2f}")
    text = "\n".join(lines)
    print(text)
    if args.table:
        Path(args.table).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
