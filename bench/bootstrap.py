#!/usr/bin/env python3
"""Bootstrapping: time and precision per ring size, one JSON line each.

    .venv/bin/python bench/bootstrap.py --log-n 10 12 14 --threads 1 --reps 3 [--out results.jsonl]

Research parameters (security=None) of the shape the bootstrapper needs: q_0 60 bits, 17 levels of 50 bits, 3 special
primes of 60 bits, sparse secret (h = 64); the default Bootstrapper (3 + EvalMod + 3 levels). Inputs: uniform complex
values in the unit disk, encrypted at level 0. Precision: -log2 of the error per slot, its mean and its worst.
"""

import argparse
import json
import platform
import statistics
import time

import numpy as np

import kasoku as ks


def run(log_n: int, threads: int, reps: int, log_message_ratio: int) -> dict:
    params = ks.Parameters(log_n=log_n, first_bits=60, scale_bits=50, levels=17, special_bits=60, special_primes=3,
                           security=None, hamming_weight=64)
    ctx = ks.Context(params, threads=threads)
    t = time.perf_counter()
    boot = ks.Bootstrapper(ctx, log_message_ratio=log_message_ratio)
    plan_s = time.perf_counter() - t
    t = time.perf_counter()
    keys = ctx.keygen(bootstrapping=boot)
    keys_s = time.perf_counter() - t
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(1)
    r, phi = np.sqrt(rng.uniform(0, 1, ctx.slots)), rng.uniform(0, 2 * np.pi, ctx.slots)
    z = r * np.exp(1j * phi)
    ct = ctx.encrypt(z, keys.public, level=0)
    times, bits = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = ev.bootstrap(ct, boot)
        times.append(time.perf_counter() - t)
        err = np.abs(ctx.decrypt(out, keys.secret) - z)
        bits = -np.log2(np.maximum(err, 2.0 ** -60))
    return {"lib": "kasoku", "op": "bootstrap", "log_n": log_n, "slots": ctx.slots, "threads": ctx.threads,
            "reps": reps, "median_s": statistics.median(times), "min_s": min(times), "plan_s": plan_s, "keygen_s": keys_s,
            "mean_bits": float(np.mean(bits)), "worst_bits": float(np.min(bits)), "depth": boot.depth,
            "output_level": boot.output_level, "cos_degree": boot.cos_degree, "k_bound": boot.k_bound,
            "message_ratio": boot.message_ratio, "galois_keys": len(boot.galois_elements()),
            "machine": platform.processor() or platform.machine(), "simd": ks.simd_active()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, nargs="+", default=[10, 12, 14])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--log-message-ratio", type=int, default=8)
    ap.add_argument("--out", help="append the JSON lines to this file")
    args = ap.parse_args()
    for log_n in args.log_n:
        line = json.dumps(run(log_n, args.threads, args.reps, args.log_message_ratio))
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
