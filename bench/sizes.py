#!/usr/bin/env python3
"""Serialized sizes of kasoku's objects (format 5: packed, seeded; with and without zstd), and the time to write and
read them back.

    .venv/bin/python bench/sizes.py --params H16 --out docs/data/sizes.jsonl
    .venv/bin/python bench/sizes.py --params M14 --matmul 64 2 --out docs/data/sizes.jsonl

Objects: a public-key and a secret-key ciphertext at the top level, the public, secret, relinearisation and one Galois
key, the evaluation keys of sum_slots (Galois keys only) and, with --matmul d g, those of ks.matmul for that packing.
One JSON line per object and compression: bytes, and the medians of --reps writes (to_bytes) and reads (from_bytes).
"""

from __future__ import annotations

import argparse
import sys

import harness
import numpy as np

import kasoku as ks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="H16")
    ap.add_argument("--matmul", nargs=2, type=int, metavar=("D", "G"), help="also the keys of ks.matmul((d, g))")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="append JSON lines here")
    args = ap.parse_args()
    ctx = ks.Context(ks.Parameters.named(args.params), threads=args.threads)
    rng = np.random.default_rng(3)
    keys = ctx.keygen(rotations=[1])
    x = rng.uniform(-1, 1, ctx.slots)
    objects = [
        ("ciphertext (public-key encryption)", ks.Ciphertext, ctx.encrypt(x, keys.public)),
        ("ciphertext (secret-key encryption)", ks.Ciphertext, ctx.encrypt(x, keys.secret)),
        ("public key", ks.PublicKey, keys.public),
        ("secret key", ks.SecretKey, keys.secret),
        ("relinearisation key", None, keys.relin),
        ("one Galois key", None, keys.galois[ctx.galois_element(1)]),
    ]
    del keys
    sums = ctx.keygen(relin=False, sum_slots=True).evaluation()
    objects.append((f"sum_slots evaluation keys ({sums.galois_count} Galois keys)", ks.EvaluationKeys, sums))
    if args.matmul:
        d, g = args.matmul
        mm = ctx.keygen(matmul=(d, g)).evaluation()
        objects.append(
            (f"matmul d={d} g={g} evaluation keys (relin + {mm.galois_count} Galois keys)", ks.EvaluationKeys, mm)
        )
    print(f"{'object':<58}{'format 4 bytes':>16}{'zstd bytes':>14}{'write ms':>10}{'read ms':>10}")
    for what, cls, obj in objects:
        data = obj.to_bytes()
        rec = {
            "lib": "kasoku",
            "op": "size",
            "params": args.params,
            "what": what,
            "format": 5,
            "bytes": len(data),
            "zstd_bytes": len(obj.to_bytes(compression="zstd")),
            "write_ms": harness.median(lambda: obj.to_bytes(), args.reps) * 1e3,
        }
        if cls is not None:  # SwitchKey has no from_bytes of its own (it travels in EvaluationKeys)
            rec["read_ms"] = harness.median(lambda: cls.from_bytes(ctx, data), args.reps) * 1e3
        print(
            f"{what:<58}{rec['bytes']:>16,}{rec['zstd_bytes']:>14,}{rec['write_ms']:>10.1f}"
            f"{rec.get('read_ms', float('nan')):>10.1f}",
            flush=True,
        )
        harness.emit(rec, args.out, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
