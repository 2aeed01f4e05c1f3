#!/usr/bin/env python3
"""The hot kernels' AVX2 bodies against their AVX-512-IFMA bodies per bit of modulus: bench_arith's NTTs, products,
inner products (Dot3: one limb of a key-switching inner product over three digits; Dot8: eight plaintext products of
a transform) and base conversions (DotConst7: seven sources as they come; DotConstSmallS7: sources below 2^50, the
small-source path) at N = 2^16 with primes of 40, 48, 50 and 60 bits, both bodies in one run on this CPU. A limb of a
b-bit prime carries b bits of the modulus, so ns per word and bit is what a chain of a given log Q costs per word:
the prime width that is cheapest per bit on a body is the one its parameters should take. One JSON line per kernel and
width; the table on stdout.

    .venv/bin/python bench/kernels_per_bit.py --out docs/data/kernels-per-bit-MACHINE.jsonl

Needs a CPU with both bodies (AVX-512 IFMA); build/cpp/bench/bench_arith first (make bench, or cmake --build).
Automorphisms (one permutation body, no SIMD variant) and encoding (a double-precision FFT, the same on both) are not
per-body kernels and are not here."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys

import harness

ROOT = pathlib.Path(__file__).resolve().parents[1]
KERNELS = ["NttForward", "NttInverse", "MulMod", "FmaMod", "Dot3", "Dot8", "DotConst7", "DotConstSmallS7"]
BITS = [40, 48, 50, 60]
BODIES = ["avx2", "ifma"]


def run(binary: pathlib.Path, reps: int, min_time: float) -> dict:
    """Median ns per call of each (kernel, body, bits) at 2^16 words."""
    pattern = f"^BM_({'|'.join(KERNELS)})_({'|'.join(BODIES)})/q({'|'.join(map(str, BITS))})/16$"
    out = subprocess.run(
        [
            str(binary),
            f"--benchmark_filter={pattern}",
            f"--benchmark_repetitions={reps}",
            f"--benchmark_min_time={min_time}s",
            "--benchmark_format=json",
            "--benchmark_report_aggregates_only=false",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    times: dict[tuple, list[float]] = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        m = re.match(r"BM_(\w+?)_(avx2|ifma)/q(\d+)/16$", b["name"])
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6}[b["time_unit"]]
        times.setdefault((m[1], m[2], int(m[3])), []).append(b["real_time"] * scale)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(ROOT / "build/cpp/bench/bench_arith"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition")
    ap.add_argument("--out", help="append the JSON lines here too")
    a = ap.parse_args()
    med = run(pathlib.Path(a.bench), a.reps, a.min_time)
    if not any(body == "ifma" for _, body, _ in med):
        print("this CPU has no AVX-512 IFMA body to compare with", file=sys.stderr)
        return 1
    n = 1 << 16
    print(f"{harness.machine()}: ns per word and modulus bit, 2^16 words (avx2 / ifma, their ratio)")
    print("| kernel | " + " | ".join(f"{b}-bit" for b in BITS) + " |")
    print("| --- |" + " ---: |" * len(BITS))
    for kernel in KERNELS:
        cells = []
        for bits in BITS:
            avx2, ifma = med.get((kernel, "avx2", bits)), med.get((kernel, "ifma", bits))
            if avx2 is None or ifma is None:
                cells.append("")
                continue
            rec = {
                "kernel": kernel,
                "bits": bits,
                "n": n,
                "avx2_ns": avx2,
                "ifma_ns": ifma,
                "avx2_ns_per_word_bit": avx2 / (n * bits),
                "ifma_ns_per_word_bit": ifma / (n * bits),
                "avx2_over_ifma": avx2 / ifma,
                "reps": a.reps,
            }
            harness.emit(rec, a.out, echo=False)
            cells.append(
                f"{rec['avx2_ns_per_word_bit'] * 1e3:.1f} / {rec['ifma_ns_per_word_bit'] * 1e3:.1f} ({avx2 / ifma:.2f})"
            )
        print(f"| {kernel} | " + " | ".join(cells) + " |")
    print("(ps per word and bit)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
