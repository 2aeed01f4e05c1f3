#!/usr/bin/env python3
"""Two builds of kasoku side by side in one run, interleaved operation by operation.

    python bench/compare_builds.py --old OLD_VENV/bin/python --new .venv/bin/python \
        --params H16 --threads 1 --cycles 30 [--hoisting] [--out runs.jsonl] [--table t.md]

One worker process per build sets up a context, keys and inputs once (the same parameters; each its own random
keys) and then runs operations on request.  The coordinator asks them in turn, in alternating order, for a few
timed repetitions of one operation at a time: a cycle is every operation on both builds, a few seconds apart, so
that the slow phases of a shared machine hit both builds alike.  The table gives, per operation, the median over
all timings of each build and the median of the per-cycle ratios new/old (with its 10th-90th percentile range).
The precision of one MulRelinRescale is compared too.  Set KASOKU_SIMD in the environment to pin the kernel body of
both.  The operations are those of ``python -m kasoku bench`` (SumSlots with a fixed h = 5, so that both builds run
the same plan; NTT: one forward NTT of a 60-bit prime, timed inside the library).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import harness
from build_ops import HOISTING_OPS, OPS, serve

ALL_OPS = OPS + ["NTT"]
REPS = {
    "KeyGen": 2,
    "Add": 9,
    "NTT": 21,
    "SumSlots": 2,
    "Rotate16Hoisted": 2,
}  # timed repetitions per cycle (default 5)


class Worker:
    def __init__(self, python: str, args):
        cmd = [
            os.path.abspath(python),
            os.path.abspath(__file__),
            "--worker",
            args.params,
            str(args.threads),
            "1" if args.hoisting else "0",
        ]
        self.python = python
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self._reply()

    def _reply(self):
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(
                f"compare_builds: the worker of {self.python} stopped (its error is printed above); "
                "is kasoku installed for that python?"
            )
        return json.loads(line)

    def time(self, op: str, reps: int) -> list[float]:
        self.p.stdin.write(f"{op} {reps}\n")
        self.p.stdin.flush()
        return self._reply()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def pct(v: list[float], q: float) -> float:
    s = sorted(v)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="python of the old build")
    ap.add_argument("--new", required=True, help="python of the new build")
    ap.add_argument("--params", default="H16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--hoisting", action="store_true", help="also SumSlots (h = 5) and Rotate16Hoisted")
    ap.add_argument("--ops", help="comma-separated subset of the operations (default: all, with --hoisting's)")
    ap.add_argument("--out", help="append every timing (JSON lines: build, op, cycle, ms)")
    ap.add_argument("--table", help="write the Markdown table here too")
    args = ap.parse_args()
    ops = ALL_OPS + (HOISTING_OPS if args.hoisting else [])
    if args.ops:
        wanted = [o for o in args.ops.split(",") if o]
        unknown = [o for o in wanted if o not in ALL_OPS + HOISTING_OPS]
        if unknown:
            ap.error(f"unknown operations {unknown}; choose from {ALL_OPS + HOISTING_OPS}")
        if any(o in HOISTING_OPS for o in wanted):
            args.hoisting = True  # the workers make the hoisting keys
        ops = wanted

    print("[compare_builds] setting up the old build's worker ...", file=sys.stderr, flush=True)
    workers = {"old": Worker(args.old, args)}
    print("[compare_builds] setting up the new build's worker ...", file=sys.stderr, flush=True)
    workers["new"] = Worker(args.new, args)
    times = {tag: {op: [] for op in ops} for tag in workers}
    ratios = {op: [] for op in ops}
    for cyc in range(args.cycles):
        print(f"[compare_builds] cycle {cyc + 1}/{args.cycles}", file=sys.stderr, flush=True)
        for i, op in enumerate(ops):
            order = ["old", "new"] if (cyc + i) % 2 == 0 else ["new", "old"]
            med = {}
            for tag in order:
                t = workers[tag].time(op, REPS.get(op, 5))
                times[tag][op] += t
                med[tag] = harness.median(t)
                if args.out:  # every timing, to the file only (the table is what this prints)
                    rec = {"build": tag, "op": op, "cycle": cyc, "params": args.params, "threads": args.threads}
                    harness.emit({**rec, "simd": workers[tag].info["simd"], "ms": t}, args.out, echo=False)
            ratios[op].append(med["new"] / med["old"])
    for w in workers.values():
        w.close()

    simd = {tag: w.info["simd"] for tag, w in workers.items()}
    lines = [
        f"{args.params}, {args.threads} thread(s), SIMD body {simd['old']} (old) / {simd['new']} (new), {args.cycles} "
        "cycles (ms: median of every timing; ratio: median of the per-cycle ratios new/old, 10th-90th percentile)",
        "",
        "| op | old ms | new ms | new/old | p10-p90 |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for op in ops:
        r = ratios[op]
        lines.append(
            f"| {op} | {harness.median(times['old'][op]):.2f} | {harness.median(times['new'][op]):.2f} | "
            f"{harness.median(r):.3f} | {pct(r, 0.1):.2f}-{pct(r, 0.9):.2f} |"
        )
    lines += [
        "",
        f"Precision after one MulRelinRescale (bits, worst slot): old {workers['old'].info['bits']:.2f}, "
        f"new {workers['new'].info['bits']:.2f}",
    ]
    text = "\n".join(lines)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
