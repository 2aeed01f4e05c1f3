"""`python -m kasoku bench`: times the core operations at a named parameter set.

Prints one JSON line per operation (op, params, threads, median_ms, min_ms, max_ms, reps) and one per
object size (bytes), and writes them to --json when given.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

import kasoku as ks
from kasoku._progress import Steps


def time_calls(fn, reps: int, sync=None):
    """Wall times in ms of `reps` calls after one warm-up call (each up to sync(): a device's queued work done; the
    warm-up's too, before the first timed call starts)."""
    fn()
    if sync:
        sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


# The Chebyshev series of `--poly` (bench/openfhe_ops.py evaluates the same ones): uniform in [-1, 1], divided by i^2
# from i = 2 on (as a smooth function's coefficients decay), seeded by the degree.
POLY_DEGREES = (7, 15, 31, 63, 127, 255)


def poly_coeffs(d: int) -> np.ndarray:
    c = np.random.default_rng(1000 + d).uniform(-1.0, 1.0, d + 1)
    c[2:] /= np.arange(2, d + 1) ** 2
    return c


def run(
    params_name: str,
    threads: int | None,
    reps: int,
    json_path: str | None,
    progress=sys.stderr,
    hoisting: bool = False,
    device: str = "cpu",
    poly: bool = False,
) -> list[dict]:
    params = ks.Parameters.named(params_name)
    ctx = ks.Context(params, threads=threads, device=device)
    t = ctx.threads

    def timeit(fn, n):
        return time_calls(fn, n, ctx.synchronize)

    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, ctx.slots)
    y = rng.uniform(-1, 1, ctx.slots)
    lines: list[dict] = []
    steps = Steps(f"kasoku bench {params_name}", progress)

    def emit(op, times, **extra):
        rec = {
            "lib": "kasoku",
            "op": op,
            "params": params_name,
            "threads": t,
            "median_ms": statistics.median(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "reps": len(times),
            "simd": ks.simd_active(),
            "device": ctx.device,
            **extra,
        }
        lines.append(rec)
        steps.write(json.dumps(rec))

    step = steps.step

    step("KeyGen")
    keygen_reps = max(1, min(reps, 3)) if params.log_n >= 16 else reps
    emit(
        "KeyGen",
        timeit(lambda: ctx.keygen(rotations=[1]), keygen_reps),
        note="secret + public + relinearisation + one rotation key",
    )
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    step("Encode")
    emit("Encode", timeit(lambda: ctx.encode(x), reps), note=f"{ctx.slots} real values at the top level")
    step("Encrypt")
    pt = ctx.encode(x)
    emit(
        "Encrypt",
        timeit(lambda: ctx.encrypt(pt, keys.public), reps),
        note="public-key encryption of an encoded plaintext",
    )
    a = ctx.encrypt(x, keys.public)
    b = ctx.encrypt(y, keys.public)
    step("DecryptDecode")
    emit("DecryptDecode", timeit(lambda: ctx.decrypt(a, keys.secret), reps))
    step("Add")
    emit("Add", timeit(lambda: ev.add(a, b), reps))
    step("MulRelinRescale")
    emit("MulRelinRescale", timeit(lambda: ev.multiply(a, b), reps))
    step("Rotate")
    emit("Rotate", timeit(lambda: ev.rotate(a, 1), reps))
    if hoisting:
        step("keys for SumSlots and Rotate16Hoisted")
        hkeys = ctx.keygen(rotations=list(range(1, 17)), sum_slots=True, relin=False)
        hev = ctx.evaluator(hkeys.evaluation())
        ha = ctx.encrypt(x, hkeys.public)
        trace_steps = [ctx.galois_element(1 << i) for i in range(params.log_n - 1)]
        h = hev.choose_trace_h(trace_steps)
        costs = hev.keyswitch_costs()
        step(f"SumSlots (h = {h} of {len(trace_steps)})")
        emit(
            "SumSlots",
            timeit(lambda: hev.sum_slots(ha), reps),
            h=h,
            M=len(trace_steps),
            galois_keys=len(hkeys.galois),
            cost_model=costs,
            note="sum of all slots, h chosen by the cost model",
        )
        step("Rotate16Hoisted")
        emit(
            "Rotate16Hoisted",
            timeit(lambda: hev.rotate_hoisted(ha, list(range(1, 17))), reps),
            note="rotations by 1..16 sharing one ModUp (list form)",
        )
        err_sum = float(np.max(np.abs(ctx.decrypt(hev.sum_slots(ha), hkeys.secret).real - x.sum())))
        outs = hev.rotate_hoisted(ha, list(range(1, 17)))
        err_rot = max(
            float(np.max(np.abs(ctx.decrypt(c, hkeys.secret).real - np.roll(x, -k))))
            for c, k in zip(outs, range(1, 17))
        )
        rec = {
            "lib": "kasoku",
            "op": "check",
            "params": params_name,
            "max_err_sum_slots": err_sum,
            "max_err_rotate_hoisted": err_rot,
        }
        lines.append(rec)
        steps.write(json.dumps(rec))
        del hkeys, hev, ha, outs
    if poly:
        for d in POLY_DEGREES:
            c = poly_coeffs(d)
            plan = ks.Polynomial(c, "chebyshev").plan()
            if plan["depth"] > a.level:
                continue
            step(f"Chebyshev{d}")
            out = ev.evaluate_polynomial(a, c, basis="chebyshev")
            diff = np.abs(ctx.decrypt(out, keys.secret) - np.polynomial.chebyshev.chebval(x, c))
            emit(
                f"Chebyshev{d}",
                timeit(lambda: ev.evaluate_polynomial(a, c, basis="chebyshev"), reps),
                levels=a.level - out.level,
                max_abs_error=float(diff.max()),
                bits=float(-np.log2(diff.max())),
                products=plan["products"],
                note=f"evaluate_polynomial(ct, {d + 1} Chebyshev coefficients)",
            )
    step("NTT")
    ntt = [s * 1e3 for s in ks._kasoku.bench_ntt(params.log_n, 60, max(reps, 20))]
    emit("NTT", ntt, note=f"forward NTT of one 60-bit prime, N=2^{params.log_n}")
    # sizes
    for what, obj in [
        ("ciphertext", a),
        ("public_key", keys.public),
        ("secret_key", keys.secret),
        ("relin_key", keys.relin),
        ("galois_key", keys.galois[ctx.galois_element(1)]),
    ]:
        rec = {"lib": "kasoku", "op": "size", "what": what, "params": params_name, "bytes": len(obj.to_bytes())}
        lines.append(rec)
        steps.write(json.dumps(rec))
    # precision of one MulRelinRescale on inputs in [-1, 1]
    got = ctx.decrypt(ev.multiply(a, b), keys.secret).real
    diff = np.abs(got - x * y)
    err, mean = float(np.max(diff)), float(np.mean(diff))
    rec = {
        "lib": "kasoku",
        "op": "precision",
        "params": params_name,
        "what": "MulRelinRescale",
        "max_abs_error": err,
        "bits": float(-np.log2(err)),
        "mean_abs_error": mean,
        "mean_bits": float(-np.log2(mean)),
    }
    lines.append(rec)
    steps.write(json.dumps(rec))
    steps.close()
    if json_path:
        with open(json_path, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec) + "\n")
    return lines
