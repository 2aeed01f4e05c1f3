"""Kernel grid F60 (seed 000 Table 5.2): MultAdd (mul, then add: two passes) vs FMA (one pass, one reduction).

Runs the C++ Google Benchmark binary for logN 10..15 x l 1..15 limbs of 60-bit primes, for every SIMD body
this CPU runs, writes the raw JSON and prints one speedup matrix (MultAdd time / FMA time) per body.

    python bench/f60_grid.py [--bench build/cpp/bench/bench_arith] [--json docs/data/f60.json] [--md out.md]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=str(ROOT / "build/cpp/bench/bench_arith"), help="bench_arith binary")
    ap.add_argument("--json", default=str(ROOT / "docs/data/f60.json"), help="raw Google Benchmark JSON output")
    ap.add_argument("--md", default=None, help="also write the markdown tables here")
    ap.add_argument(
        "--min-time",
        default="0.05",
        help="Google Benchmark --benchmark_min_time (seconds; a bare "
        "number: Google Benchmark 1.7 ignores a unit suffix and falls back to 0.5 s)",
    )
    ap.add_argument("--repetitions", type=int, default=3, help="repetitions per benchmark (median used)")
    ap.add_argument("--from-json", action="store_true", help="only format an existing --json file")
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
    t: dict[tuple[str, str, int, int], float] = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        m = re.match(r"BM_F60_(MultAdd|Fma)_(\w+)/(\d+)/(\d+)", b["run_name"] if "run_name" in b else b["name"])
        if m:
            t[(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))] = float(b["real_time"])
    bodies = sorted({k[1] for k in t}, key=["scalar", "avx2", "avx512", "ifma"].index)
    ctx = data.get("context", {})
    out = [
        f"F60 grid on {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, {ctx.get('date', '')}: "
        "speedup = MultAdd time / FMA time (> 1: FMA faster); medians of "
        f"{args.repetitions} repetitions.",
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
