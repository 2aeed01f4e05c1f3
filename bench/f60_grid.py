"""Kernel grid F60 (seed 000 Table 5.2): MultAdd (mul, then add: two passes) vs FMA (one pass, one reduction).

Runs the C++ Google Benchmark binary for logN 10..15 x l 1..15 limbs of 60-bit primes, for every SIMD body
this CPU runs, writes the raw JSON (its context with the machine, harness.machine()) and prints one speedup matrix
(MultAdd time / FMA time) per body; with --out, one JSON line per body, logN and l (harness.emit).

    python bench/f60_grid.py [--bench build/cpp/bench/bench_arith] [--json docs/data/f60.json] [--md out.md] \
        [--out f60.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parent.parent
# a bare number: Google Benchmark 1.7 ignores a unit suffix and falls back to 0.5 s
MIN_TIME = "Google Benchmark --benchmark_min_time (seconds, a bare number)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=str(ROOT / "build/cpp/bench/bench_arith"), help="bench_arith binary")
    ap.add_argument("--json", default=str(ROOT / "docs/data/f60.json"), help="raw Google Benchmark JSON output")
    ap.add_argument("--md", default=None, help="also write the markdown tables here")
    ap.add_argument("--min-time", default="0.05", help=MIN_TIME)
    ap.add_argument("--repetitions", type=int, default=3, help="repetitions per benchmark (median used)")
    ap.add_argument("--from-json", action="store_true", help="only format an existing --json file")
    ap.add_argument("--out", help="append one JSON line per body, logN and l here")
    args = ap.parse_args(argv)

    if not args.from_json:
        cmd = [
            args.bench,
            "--benchmark_filter=BM_F60_",
            f"--benchmark_min_time={args.min_time}",
            f"--benchmark_repetitions={args.repetitions}",
            "--benchmark_report_aggregates_only=true",
            "--benchmark_enable_random_interleaving=true",  # repetitions interleaved: noise bursts hit both
            f"--benchmark_out={args.json}",
            "--benchmark_out_format=json",
        ]
        print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    data = json.loads(Path(args.json).read_text())
    ctx = data.setdefault("context", {})
    if not args.from_json:  # the machine it ran on, as every JSON line names it
        ctx["machine"] = harness.machine()
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    machine = ctx.get("machine") or f"{ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs"
    t: dict[tuple[str, str, int, int], float] = {}
    unit, reps = "ns", args.repetitions
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        m = re.match(r"BM_F60_(MultAdd|Fma)_(\w+)/(\d+)/(\d+)", b["run_name"] if "run_name" in b else b["name"])
        if m:
            t[(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))] = float(b["real_time"])
            unit, reps = b.get("time_unit", unit), b.get("repetitions", reps)
    bodies = sorted({k[1] for k in t}, key=["scalar", "avx2", "avx512", "ifma"].index)
    out = [
        f"F60 grid on {machine}, {ctx.get('date', '')}: "
        "speedup = MultAdd time / FMA time (> 1: FMA faster); medians of "
        f"{reps} repetitions.",
        "",
    ]
    worst = {}
    for body in bodies:
        out += [
            f"**{body}**",
            "",
            "| logN \\ l | " + " | ".join(str(l) for l in range(1, 16)) + " |",
            "| --- |" + " ---: |" * 15,
        ]
        for log_n in range(10, 16):
            row = []
            for l in range(1, 16):
                ma, fm = t.get(("MultAdd", body, log_n, l)), t.get(("Fma", body, log_n, l))
                if ma and fm:
                    row.append(f"{ma / fm:.2f}")
                    worst[body] = min(worst.get(body, 99.0), ma / fm)
                    if args.out:
                        cell = {"op": "F60", "body": body, "log_n": log_n, "l": l, f"multadd_{unit}": ma}
                        rec = {**cell, f"fma_{unit}": fm, "speedup": ma / fm, "repetitions": reps}
                        harness.emit({**rec, "machine": machine, "date": ctx.get("date")}, args.out, echo=False)
                else:
                    row.append("n/a")
            out.append(f"| {log_n} | " + " | ".join(row) + " |")
        out.append("")
    out.append("Smallest speedup per body: " + ", ".join(f"{b} {w:.2f}" for b, w in worst.items()) + ".")
    text = "\n".join(out)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
