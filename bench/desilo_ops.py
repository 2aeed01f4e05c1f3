#!/usr/bin/env python3
"""DESILO FHE (the GPU and CPU peer, `desilofhe` / `desilofhe-cu130`) at kasoku's shapes: one JSON line per operation,
in the fields of `python -m kasoku bench` (lib "desilo").

    python bench/desilo_ops.py --mode gpu --max-level 20 --reps 10          # H16's shape: N = 2^16, 21 levels
    python bench/desilo_ops.py --mode cpu --threads 16 --max-level 20
    python bench/desilo_ops.py --mode gpu --bootstrap --reps 3              # Engine(bootstrap=True): N = 2^16

Operations: key generation, encryption, decryption, multiply (relinearised and rescaled: DESILO's multiply), rotate
by one slot (a fixed rotation key), 16 rotations sharing their input (rotate_many), and with --bootstrap one
bootstrap of a ciphertext at level 0 with its precision (mean and worst bits over the slots). Each timing is the
median of --reps calls after a warm-up; on the GPU a second figure times --reps calls in a row ended by a decryption
(minus a decryption's median), in case a call returns before its device work ends.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np


def progress(msg: str) -> None:
    print(f"[desilo bench] {msg}", file=sys.stderr, flush=True)


def engine(desilofhe, args):
    kw = {"mode": args.mode}
    if args.mode == "cpu":
        kw["thread_count"] = args.threads
    if not args.bootstrap:
        return desilofhe.Engine(max_level=args.max_level, **kw)
    try:
        return desilofhe.Engine(bootstrap=True, **kw)  # 2.x
    except TypeError:
        return desilofhe.Engine(use_bootstrap=True, **kw)  # 1.x (desilofhe-cu130 1.17)


def timings(fn, reps: int) -> list[float]:
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--threads", type=int, default=1, help="CPU mode: thread_count")
    ap.add_argument("--max-level", type=int, default=20, help="levels (20: N = 2^16, H16's shape)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bootstrap", action="store_true", help="Engine(bootstrap=True) and one bootstrap per rep")
    ap.add_argument("--no-hoisting", action="store_true", help="skip the 16 rotations (their keys take memory)")
    ap.add_argument("--json", default=None, help="also append the JSON lines here")
    args = ap.parse_args(argv)
    try:
        import desilofhe
    except ImportError as e:
        print(
            f"desilofhe is not installed ({e}): pip install desilofhe (CPU) or desilofhe-cu130 (CUDA 13)",
            file=sys.stderr,
        )
        return 3
    from importlib import metadata

    version = "unknown"
    for dist in ("desilofhe", "desilofhe-cu130", "desilofhe-cu132"):
        try:
            version = f"{dist} {metadata.version(dist)}"
            break
        except metadata.PackageNotFoundError:
            pass
    e = engine(desilofhe, args)
    shape = "BOOT" if args.bootstrap else f"max_level={args.max_level}"
    out = open(args.json, "a") if args.json else None

    def emit(op, times, **extra):
        rec = {
            "lib": "desilo",
            "version": version,
            "op": op,
            "params": shape,
            "mode": args.mode,
            "threads": args.threads if args.mode == "cpu" else None,
            "slots": e.slot_count,
            "median_ms": statistics.median(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "reps": len(times),
            **extra,
        }
        print(json.dumps(rec), flush=True)
        if out:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, e.slot_count)
    y = rng.uniform(-1, 1, e.slot_count)
    progress(f"{shape}, {args.mode}: keys")
    t0 = time.perf_counter()
    sk = e.create_secret_key()
    pk = e.create_public_key(sk)
    rk = e.create_relinearization_key(sk)
    keygen_ms = (time.perf_counter() - t0) * 1e3
    emit("KeyGen", [keygen_ms], note="secret + public + relinearisation key, once")
    emit("Encrypt", timings(lambda: e.encrypt(x, pk), args.reps))
    a, b = e.encrypt(x, pk), e.encrypt(y, pk)
    decrypt = timings(lambda: e.decrypt(a, sk), args.reps)
    emit("DecryptDecode", decrypt)

    def with_loop(op, fn, check=None, **extra):
        progress(op)
        times = timings(fn, args.reps)
        if args.mode == "gpu":  # reps calls back to back, then a decryption that waits for them
            t0 = time.perf_counter()
            for _ in range(args.reps - 1):
                fn()
            e.decrypt(fn(), sk) if check is None else check(fn())
            loop = (time.perf_counter() - t0) * 1e3 - statistics.median(decrypt)
            extra["loop_ms_per_op"] = loop / args.reps
        emit(op, times, **extra)

    if not args.bootstrap:
        prod = e.multiply(a, b, rk)
        err = float(np.max(np.abs(e.decrypt(prod, sk) - x * y)))
        with_loop("MulRelinRescale", lambda: e.multiply(a, b, rk), levels_left=prod.level, max_abs_error=err)
        fk = e.create_fixed_rotation_key(sk, 1)
        err = float(np.max(np.abs(e.decrypt(e.rotate(a, fk), sk) - np.roll(x, -1))))
        with_loop("Rotate", lambda: e.rotate(a, fk), max_abs_error=err)
        if not args.no_hoisting:
            keys = [e.create_fixed_rotation_key(sk, k) for k in range(1, 17)]
            progress("Rotate16Hoisted")
            many = getattr(e, "rotate_many", None) or getattr(e, "rotate_batch")  # 2.x / 1.x name
            emit("Rotate16Hoisted", timings(lambda: many(a, keys), args.reps), note=f"{many.__name__}, 16 fixed keys")
            del keys
    else:
        progress("bootstrap keys")
        t0 = time.perf_counter()
        conj = e.create_conjugation_key(sk)
        bk = e.create_bootstrap_key(sk)
        emit("BootstrapKeyGen", [(time.perf_counter() - t0) * 1e3])
        low = e.encrypt(x, pk, 0)
        res = e.bootstrap(low, rk, conj, bk)
        err = np.abs(e.decrypt(res, sk) - x)
        bits = -np.log2(np.maximum(err, 2.0**-60))
        progress("bootstrap")
        emit(
            "Bootstrap",
            timings(lambda: e.bootstrap(low, rk, conj, bk), args.reps),
            levels_left=res.level,
            mean_bits=float(np.mean(bits)),
            worst_bits=float(np.min(bits)),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
