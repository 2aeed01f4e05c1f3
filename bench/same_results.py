#!/usr/bin/env python3
"""Do two builds of kasoku compute the same bits?  For refactors that must change no result.

    /path/to/old/python bench/same_results.py save  DIR   # keys, inputs and every result, from the old build
    /path/to/new/python bench/same_results.py check DIR   # the new build loads the same inputs, compares

``save`` makes keys and ciphertexts (random, so they are saved, not recomputed), runs every evaluator operation
of the Python API on them, and writes the serialized results.  ``check`` loads the saved keys and inputs into a
context of the same parameters (the primes are deterministic), runs the same operations and compares the results
byte for byte, and the decrypted values exactly.  It also loads every kind of saved object (parameters, keys,
ciphertexts seeded or not, of size 2 and 3, plain and zstd) and saves it again: the same bytes, for a change of the
serialization code.  It prints one JSON line per operation or object (harness.emit; with --out, appended there too)
and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import harness
import numpy as np

import kasoku as ks

# Shapes the comparison covers: one key-switching digit per prime (dnum = L + 1), several digits of several primes.
# Written out (not named sets): both builds, old and new, must construct exactly these parameters.
PRIMES = {"first_bits": 60, "scale_bits": 40, "special_bits": 60, "security": None}
BOOT = {"boot_levels": 15, "boot_bits": 55, "boot_secret_weight": 32}
PARAMS = {
    "dnum3": {**PRIMES, "log_n": 12, "levels": 5, "special_primes": 2},
    "dnum1": {**PRIMES, "log_n": 11, "levels": 3, "special_primes": 4},
    # bootstrapping keys: compact Galois keys and the encapsulation keys
    "boot10": {**PRIMES, "log_n": 10, "levels": 2, "special_primes": 4, **BOOT},
}
ROTATIONS = [1, 2, 3, 5, -4]


def operations(ctx, ev, a, b, x):
    """Every evaluator operation of the Python API: name -> Ciphertext or list of Ciphertexts."""
    slots = ctx.slots
    lt = ks.LinearTransform(ctx, {0: x, 1: x[::-1].copy(), 3: np.ones(slots)}, level=a.level)
    d = ev.decompose(a)
    lazy = ev.inner_product_lazy(d, ctx.galois_element(1)) + ev.inner_product_lazy(d, ctx.galois_element(2))
    ops = {
        "add": ev.add(a, b),
        "sub": ev.sub(a, b),
        "negate": ev.negate(a),
        "add_plain": ev.add_plain(a, x),
        "add_scalar": ev.add_plain(a, 0.25),
        "multiply_plain": ev.multiply_plain(a, x),
        "multiply_scalar": ev.multiply_plain(a, 3.0),
        "multiply": ev.multiply(a, b),
        "multiply_norescale": ev.multiply(a, b, rescale=False),
        "square": ev.square(a),
        "relin_then_rescale": ev.rescale(ev.multiply(a, b, rescale=False)),
        "aligned_add": ev.add(ev.multiply(a, b), a),
        "drop_level": ev.drop_level(a, 1),
        "rotate": ev.rotate(a, 1),
        "rotate_neg": ev.rotate(a, -4),
        "conjugate": ev.conjugate(a),
        "rotate_hoisted": ev.rotate_hoisted(a, ROTATIONS, conjugate=True),
        "rotate_sum_hoisted": ev.rotate_sum_hoisted(a, steps=[1, 2, 3], conjugate=True),
        "split_keyswitch": ev.mod_down(lazy),
        "sum_slots_h1": ev.sum_slots(a, count=8, h=1),
        "sum_slots_h3": ev.sum_slots(a, count=8, h=3),
        "trace": ev.trace(a, [ctx.galois_element(1), ctx.galois_element(2)], h=1),
        "linear_transform": ev.apply(lt, a),
        "operators": (a * b + a) * 2.0 - 1.0,
    }
    return ops


def keys_for(ctx):
    galois = set(ks.trace_galois_elements(ctx.params, 3, 1)) | set(ks.trace_galois_elements(ctx.params, 3, 3))
    boot = ctx.params.boot_levels > 0
    return ctx.keygen(rotations=ROTATIONS, conjugation=True, galois_elements=sorted(galois), bootstrapping=boot)


# Every serializable kind and how it is loaded.
LOADERS = {
    "parameters": lambda ctx, d: ks.Parameters.from_bytes(d),
    "public_key": lambda ctx, d: ks.PublicKey.from_bytes(ctx, d),
    "secret_key": lambda ctx, d: ks.SecretKey.from_bytes(ctx, d),
    "evaluation_keys": lambda ctx, d: ks.EvaluationKeys.from_bytes(ctx, d),
    "ciphertext": lambda ctx, d: ks.Ciphertext.from_bytes(ctx, d),
}


def objects(ctx, keys, a, b):
    """One object of each kind (ciphertexts public-key, seeded and of size 3), plain and zstd: name -> bytes."""
    made = {
        "parameters": ctx.params,
        "public_key": keys.public,
        "secret_key": keys.secret,
        "evaluation_keys": keys.evaluation(),
        "ciphertext public-key": a,
        "ciphertext seeded": ctx.encrypt(np.ones(4), keys.secret),
        "ciphertext size-3": ctx.evaluator(keys.evaluation()).tensor(a, b),
    }
    return {f"{k} {c or 'plain'}": obj.to_bytes(compression=c) for k, obj in made.items() for c in (None, "zstd")}


def to_bytes(r):
    return [c.to_bytes() for c in r] if isinstance(r, list) else [r.to_bytes()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["save", "check"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", help="also append the JSON lines here")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, p in PARAMS.items():
        params = ks.Parameters(**p)
        ctx = ks.Context(params, threads=2)
        path = args.dir / f"{name}.pkl"
        if args.mode == "save":
            keys = keys_for(ctx)
            rng = np.random.default_rng(7)
            x = rng.uniform(-1, 1, ctx.slots)
            a = ctx.encrypt(x, keys.public)
            b = ctx.encrypt(rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots), keys.public)
            ev = ctx.evaluator(keys.evaluation())
            results = {k: to_bytes(v) for k, v in operations(ctx, ev, a, b, x).items()}
            decrypted = {
                k: [ctx.decrypt(ks.Ciphertext.from_bytes(ctx, c), keys.secret) for c in v] for k, v in results.items()
            }
            blob = dict(
                sk=keys.secret.to_bytes(),
                ek=keys.evaluation().to_bytes(),
                a=a.to_bytes(),
                b=b.to_bytes(),
                x=x,
                results=results,
                decrypted=decrypted,
                objects=objects(ctx, keys, a, b),
            )
            path.write_bytes(pickle.dumps(blob))
            harness.emit({"params": name, "mode": "save", "results": len(results), "file": str(path)}, args.out)
            continue
        blob = pickle.loads(path.read_bytes())
        sk = ks.SecretKey.from_bytes(ctx, blob["sk"])
        ev = ctx.evaluator(ks.EvaluationKeys.from_bytes(ctx, blob["ek"]))
        a = ks.Ciphertext.from_bytes(ctx, blob["a"])
        b = ks.Ciphertext.from_bytes(ctx, blob["b"])
        for op, got in operations(ctx, ev, a, b, blob["x"]).items():
            got_bytes = to_bytes(got)
            same = got_bytes == blob["results"][op]
            dec = [ctx.decrypt(c, sk) for c in (got if isinstance(got, list) else [got])]
            same_dec = all(np.array_equal(u, v) for u, v in zip(dec, blob["decrypted"][op]))
            harness.emit({"params": name, "op": op, "same_bytes": same, "same_decryption": same_dec}, args.out)
            bad += (not same) + (not same_dec)
        for kind, data in blob["objects"].items():
            obj = LOADERS[kind.split()[0]](ctx, data)
            same = obj.to_bytes(compression="zstd" if kind.endswith("zstd") else None) == data
            harness.emit({"params": name, "object": kind, "same_bytes": same}, args.out)
            bad += not same
    if args.mode == "check":
        print(f"[same_results] {bad or 'no'} difference(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
