#!/usr/bin/env python3
"""H16 key switching with 60-bit and 50-bit special primes, interleaved in one process (issue: CPU key switching).

Below 2^50 the AVX-512-IFMA kernels take the special primes too; 7 primes of 50 bits (350 bits) still exceed every
digit's modulus (at most 300 bits at dnum 3). Each round runs every operation once per parameter set, in turn (the
order reversed every other round: harness.interleaved), so that the machine's drift falls on both; medians over the
rounds. Prints one JSON line per set and operation (harness.emit; --out appends them to a file too).

    .venv/bin/python bench/special_primes.py --threads 1 --rounds 15
"""

from __future__ import annotations

import argparse

import harness
import numpy as np

import kasoku as ks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--bits", default="60,50", help="special-prime sizes to compare")
    ap.add_argument("--log-n", type=int, default=16, help="ring size (16: H16's; smaller: a quick try, not secure)")
    ap.add_argument("--out", help="append the JSON lines here")
    args = ap.parse_args(argv)
    sets = {}
    for bits in map(int, args.bits.split(",")):
        quick = {} if args.log_n == 16 else {"log_n": args.log_n, "security": None}
        p = ks.Parameters.named("H16").replace(special_bits=bits, special_primes=7, dnum=3, **quick)
        ctx = ks.Context(p, threads=args.threads)
        keygen_s, keys = harness.timed(lambda: ctx.keygen(rotations=list(range(1, 17)), sum_slots=True))
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
    secs = harness.interleaved(
        {(bits, op): (lambda s=s, fn=fn: fn(s)) for op, fn in ops.items() for bits, s in sets.items()}, args.rounds
    )
    for bits, s in sets.items():
        for op in ops:
            rec = {
                "lib": "kasoku",
                "params": f"H16 shape, P = 7 x {bits} bits" + (f", N = 2^{args.log_n}" if args.log_n != 16 else ""),
                "special_bits": bits,
                "op": op,
                "threads": args.threads,
                "simd": ks.simd_active(),
                **harness.summary(secs[(bits, op)], "ms"),
                "keygen_s": s["keygen_s"],
                "eval_key_bytes": s["key_bytes"],
                "mul_mean_abs_error": s["mean_err"],
                "mul_worst_bits": s["bits"],
            }
            harness.emit(rec, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
