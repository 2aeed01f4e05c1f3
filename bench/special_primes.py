#!/usr/bin/env python3
"""H16 key switching with 60-bit and 50-bit special primes, interleaved in one process (issue: CPU key switching).

Below 2^50 the AVX-512-IFMA kernels take the special primes too; 7 primes of 50 bits (350 bits) still exceed every
digit's modulus (at most 300 bits at dnum 3). Each round runs every operation once per parameter set, in turn, so that
the machine's drift falls on both; medians over the rounds. Prints one JSON line per set and operation.

    .venv/bin/python bench/special_primes.py --threads 1 --rounds 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import kasoku as ks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--bits", default="60,50", help="special-prime sizes to compare")
    args = ap.parse_args(argv)
    sets = {}
    for bits in map(int, args.bits.split(",")):
        p = ks.Parameters(
            log_n=16, first_bits=60, scale_bits=40, levels=20, special_bits=bits, special_primes=7, dnum=3
        )
        ctx = ks.Context(p, threads=args.threads)
        t = time.perf_counter()
        keys = ctx.keygen(rotations=list(range(1, 17)), sum_slots=True)
        keygen_s = time.perf_counter() - t
        ev = ctx.evaluator(keys.evaluation())
        rng = np.random.default_rng(1)
        x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
        a, b = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
        err = np.abs(ctx.decrypt(ev.multiply(a, b), keys.secret).real - x * y)
        sets[bits] = dict(
            ev=ev,
            a=a,
            b=b,
            keygen_s=keygen_s,
            key_bytes=keys.evaluation().nbytes,
            mean_err=float(np.mean(err)),
            bits=float(-np.log2(np.max(err))),
        )
    ops = {
        "MulRelinRescale": lambda s: s["ev"].multiply(s["a"], s["b"]),
        "Rotate": lambda s: s["ev"].rotate(s["a"], 1),
        "Rotate16Hoisted": lambda s: s["ev"].rotate_hoisted(s["a"], list(range(1, 17))),
        "SumSlots": lambda s: s["ev"].sum_slots(s["a"]),
    }
    times = {(bits, op): [] for bits in sets for op in ops}
    for s in sets.values():
        for fn in ops.values():
            fn(s)  # warm-up
    for _ in range(args.rounds):
        for op, fn in ops.items():
            for bits, s in sets.items():
                t = time.perf_counter()
                fn(s)
                times[(bits, op)].append((time.perf_counter() - t) * 1e3)
    for bits, s in sets.items():
        for op in ops:
            ts = times[(bits, op)]
            print(
                json.dumps(
                    {
                        "lib": "kasoku",
                        "params": f"H16 shape, P = 7 x {bits} bits",
                        "special_bits": bits,
                        "op": op,
                        "threads": args.threads,
                        "simd": ks.simd_active(),
                        "median_ms": statistics.median(ts),
                        "min_ms": min(ts),
                        "reps": len(ts),
                        "keygen_s": s["keygen_s"],
                        "eval_key_bytes": s["key_bytes"],
                        "mul_mean_abs_error": s["mean_err"],
                        "mul_worst_bits": s["bits"],
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
