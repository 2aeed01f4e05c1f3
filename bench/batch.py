#!/usr/bin/env python3
"""Batches against loops of single operations (seed 002): the same d ciphertexts, on the CPU (one thread and all) or a
CUDA GPU.

    .venv/bin/python bench/batch.py --params T13 --d 16 --reps 5 [--out batch.jsonl]
    python bench/batch.py --params B13 --device cuda --d 10,100,1000 --reps 5

For each operation (add, multiply with relinearisation and rescale, rotate), batch size d and thread count, a loop of
d single operations (each with all the threads) and one *_many call (the elements spread over the threads; on a GPU,
queued together) run in turn, reps times, each timed up to the end of the device's work; medians in ms per batch, their
ratio batch/loop and the operations per second of each. The results are checked equal first.
"""

from __future__ import annotations

import argparse
import sys

import harness
import numpy as np

import kasoku as ks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="T13")
    ap.add_argument("--d", default="16", help="ciphertexts per batch, comma separated")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--ops", default="Add,MulRelinRescale,Rotate", help="operations, comma separated")
    ap.add_argument("--out", help="append JSON lines here")
    args = ap.parse_args(argv)
    ctx = ks.Context(ks.Parameters.named(args.params), device=args.device)
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(5)
    sizes = [int(v) for v in args.d.split(",")]
    base = [ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public) for _ in range(2)]
    rows = []
    for d in sizes:
        # d distinct ciphertexts per operand (sums of two encryptions: the work does not depend on the values)
        a = [ev.add(base[i % 2], base[(i // 2) % 2]) for i in range(d)]
        b = [ev.add(base[(i + 1) % 2], base[(i // 3) % 2]) for i in range(d)]
        ops = {
            "Add": (lambda t: [ev.add(x, y, threads=t) for x, y in zip(a, b)], lambda t: ev.add_many(a, b, threads=t)),
            "MulRelinRescale": (
                lambda t: [ev.multiply(x, y, threads=t) for x, y in zip(a, b)],
                lambda t: ev.multiply_many(a, b, threads=t),
            ),
            "Rotate": (lambda t: [ev.rotate(x, 1, threads=t) for x in a], lambda t: ev.rotate_many(a, 1, threads=t)),
        }
        for op in args.ops.split(","):
            loop, batch = ops[op]
            assert [c.to_bytes() for c in loop(1)] == [c.to_bytes() for c in batch(ctx.threads)], op
            for t in sorted({1, ctx.threads}) if args.device == "cpu" else [ctx.threads]:
                # in turn, the order swapped every round; the first round warms up; each up to the device's work
                secs = harness.interleaved(
                    {"loop": lambda: loop(t), "batch": lambda: batch(t)}, args.reps, 1, ctx.synchronize
                )
                rec = {
                    "lib": "kasoku",
                    "op": op,
                    "params": args.params,
                    "d": d,
                    "threads": t,
                    "device": ctx.device,
                    "simd": ks.simd_active(),
                    "loop_ms": harness.median(secs["loop"]) * 1e3,
                    "batch_ms": harness.median(secs["batch"]) * 1e3,
                    "reps": args.reps,
                }
                rec["batch_over_loop"] = rec["batch_ms"] / rec["loop_ms"]
                rec["loop_ops_per_s"] = 1e3 * d / rec["loop_ms"]
                rec["batch_ops_per_s"] = 1e3 * d / rec["batch_ms"]
                rows.append(harness.emit(rec, args.out))
                print(f"[batch] {op} d={d} threads={t} done", file=sys.stderr, flush=True)
    print(f"\n{args.params} on {ctx.device}, medians of {args.reps} (ms per batch)\n", file=sys.stderr)
    print(
        "| op | d | threads | loop of single ops | *_many | batch / loop | batch ops/s |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        file=sys.stderr,
    )
    for r in rows:
        print(
            f"| {r['op']} | {r['d']} | {r['threads']} | {r['loop_ms']:.1f} | {r['batch_ms']:.1f} | "
            f"{r['batch_over_loop']:.2f} | {r['batch_ops_per_s']:,.0f} |",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
