#!/usr/bin/env python3
"""Batches against loops of single operations (seed 002), on the CPU: the same d ciphertexts, one thread and all.

    .venv/bin/python bench/batch.py --params T13 --d 16 --reps 5 [--out batch.jsonl]

For each operation (add, multiply with relinearisation and rescale, rotate) and thread count, a loop of d single
operations (each with all the threads) and one *_many call (the elements spread over the threads) run in turn, reps
times; medians in ms per batch and their ratio batch/loop. The results are checked equal first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import kasoku as ks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="T13")
    ap.add_argument("--d", type=int, default=16, help="ciphertexts per batch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", help="append JSON lines here")
    args = ap.parse_args()
    ctx = ks.Context(ks.Parameters.named(args.params))
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(5)
    a = [ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public) for _ in range(args.d)]
    b = [ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public) for _ in range(args.d)]
    ops = {
        "Add": (lambda t: [ev.add(x, y, threads=t) for x, y in zip(a, b)], lambda t: ev.add_many(a, b, threads=t)),
        "MulRelinRescale": (lambda t: [ev.multiply(x, y, threads=t) for x, y in zip(a, b)],
                            lambda t: ev.multiply_many(a, b, threads=t)),
        "Rotate": (lambda t: [ev.rotate(x, 1, threads=t) for x in a], lambda t: ev.rotate_many(a, 1, threads=t)),
    }
    rows = []
    out = open(args.out, "a") if args.out else None
    for op, (loop, batch) in ops.items():
        assert [c.to_bytes() for c in loop(1)] == [c.to_bytes() for c in batch(ctx.threads)], op
        for t in sorted({1, ctx.threads}):
            times: dict[str, list[float]] = {"loop": [], "batch": []}
            for r in range(args.reps + 1):  # the first round warms up
                for mode in (("loop", "batch") if r % 2 else ("batch", "loop")):
                    t0 = time.perf_counter()
                    (loop if mode == "loop" else batch)(t)
                    if r:
                        times[mode].append((time.perf_counter() - t0) * 1e3)
            rec = {"op": op, "params": args.params, "d": args.d, "threads": t, "simd": ks.simd_active(),
                   "loop_ms": statistics.median(times["loop"]), "batch_ms": statistics.median(times["batch"]),
                   "reps": args.reps}
            rec["batch_over_loop"] = rec["batch_ms"] / rec["loop_ms"]
            rows.append(rec)
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
            print(f"[batch] {op} threads={t} done", file=sys.stderr, flush=True)
    print(f"\n{args.params}, d = {args.d}, medians of {args.reps} (ms per batch)\n")
    print("| op | threads | loop of single ops | *_many | batch / loop |\n| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['op']} | {r['threads']} | {r['loop_ms']:.1f} | {r['batch_ms']:.1f} | {r['batch_over_loop']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
