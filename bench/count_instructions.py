#!/usr/bin/env python3
"""Instructions per operation of two builds, counted by valgrind (callgrind): a measure that machine noise does not
move.

    python bench/count_instructions.py --old OLD_VENV/bin/python --new .venv/bin/python --params H16 \
        [--ops MulRelinRescale,Rotate,...] [--out counts.jsonl]

For each build and operation, a worker process sets up a context (one thread), the keys the operation needs and its
inputs, and runs the operation once or three times; both runs go under callgrind, and the difference of their
instruction counts over two is the operation's count (the setup is the same work in both, up to the rejection
sampling of random keys: a few thousand instructions).  Prints a table of counts and new/old ratios.  The kernel
body is the one KASOKU_SIMD selects (valgrind runs AVX2 code; it does not run AVX-512).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness
from build_ops import HOISTING_OPS, OPS, setup

ALL_OPS = OPS + HOISTING_OPS


def worker(params_name: str, op: str, reps: int) -> None:
    run, _ = setup(params_name, 1, op in HOISTING_OPS)
    for _ in range(reps):
        run[op]()


def count(python: str, params_name: str, op: str, reps: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            os.path.abspath(python),
            os.path.abspath(__file__),
            "--worker",
            params_name,
            op,
            str(reps),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if r.returncode != 0:
            raise RuntimeError(f"valgrind failed for {op}: {r.stderr[-2000:]}")
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if not m:
            raise RuntimeError(f"no instruction count in valgrind's output: {r.stderr[-2000:]}")
        return int(m.group(1))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="python of the old build")
    ap.add_argument("--new", required=True, help="python of the new build")
    ap.add_argument("--params", default="H16")
    ap.add_argument("--ops", default=",".join(ALL_OPS), help="comma-separated, from " + ", ".join(ALL_OPS))
    ap.add_argument("--out", help="append one JSON line per operation")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not installed: apt-get install valgrind (Debian/Ubuntu)")
    ops = [o for o in args.ops.split(",") if o]
    unknown = [o for o in ops if o not in ALL_OPS]
    if unknown:
        ap.error(f"unknown operations {unknown}; choose from {ALL_OPS}")
    rows = []
    for op in ops:
        per = {}
        for tag, py in [("old", args.old), ("new", args.new)]:
            print(f"[count_instructions] {op}: {tag} build ...", file=sys.stderr, flush=True)
            one, three = count(py, args.params, op, 1), count(py, args.params, op, 3)
            per[tag] = (three - one) / 2
        rec = {
            "op": op,
            "params": args.params,
            "simd": os.environ.get("KASOKU_SIMD", "auto"),
            "old_instructions": per["old"],
            "new_instructions": per["new"],
            "ratio": per["new"] / per["old"],
        }
        rows.append(harness.emit(rec, args.out))
    print(f"\n{args.params}, one thread, instructions per operation (callgrind)\n")
    print("| op | old | new | new/old |\n| --- | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['op']} | {r['old_instructions'] / 1e6:,.1f} M | {r['new_instructions'] / 1e6:,.1f} M "
            f"| {r['ratio']:.4f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
