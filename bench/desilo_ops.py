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
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (bench/, run with the peer's Python)


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
    threads = args.threads if args.mode == "cpu" else None

    def emit(op, secs, **extra):
        """One line: `secs` (harness.times: each after one warm-up call) as median_ms, min_ms, max_ms, reps."""
        rec = {"lib": "desilo", "version": version, "op": op, "params": shape, "mode": args.mode, "threads": threads}
        harness.emit({**rec, "slots": e.slot_count, **harness.summary(secs, "ms"), **extra}, args.json)

    def timings(fn):
        return harness.times(fn, args.reps, warmup=1)

    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, e.slot_count)
    y = rng.uniform(-1, 1, e.slot_count)
    progress(f"{shape}, {args.mode}: keys")

    def keygen():
        sk = e.create_secret_key()
        return sk, e.create_public_key(sk), e.create_relinearization_key(sk)

    keygen_s, (sk, pk, rk) = harness.timed(keygen)
    emit("KeyGen", [keygen_s], note="secret + public + relinearisation key, once")
    emit("Encrypt", timings(lambda: e.encrypt(x, pk)))
    a, b = e.encrypt(x, pk), e.encrypt(y, pk)
    decrypt = timings(lambda: e.decrypt(a, sk))
    emit("DecryptDecode", decrypt)

    def with_loop(op, fn, check=None, **extra):
        progress(op)
        secs = timings(fn)
        if args.mode == "gpu":  # reps calls back to back, then a decryption that waits for them

            def loop():
                for _ in range(args.reps - 1):
                    fn()
                e.decrypt(fn(), sk) if check is None else check(fn())

            loop_s = harness.timed(loop)[0] - harness.median(decrypt)
            extra["loop_ms_per_op"] = loop_s * 1e3 / args.reps
        emit(op, secs, **extra)

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
            emit("Rotate16Hoisted", timings(lambda: many(a, keys)), note=f"{many.__name__}, 16 fixed keys")
            del keys
    else:
        progress("bootstrap keys")
        boot_keygen_s, (conj, bk) = harness.timed(lambda: (e.create_conjugation_key(sk), e.create_bootstrap_key(sk)))
        emit("BootstrapKeyGen", [boot_keygen_s])
        low = e.encrypt(x, pk, 0)
        res = e.bootstrap(low, rk, conj, bk)
        err = np.abs(e.decrypt(res, sk) - x)
        bits = -np.log2(np.maximum(err, 2.0**-60))
        progress("bootstrap")
        emit(
            "Bootstrap",
            timings(lambda: e.bootstrap(low, rk, conj, bk)),
            levels_left=res.level,
            mean_bits=float(np.mean(bits)),
            worst_bits=float(np.min(bits)),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
