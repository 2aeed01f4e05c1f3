"""The operations that bench/compare_builds.py times and bench/count_instructions.py counts, set up once per worker
process on whichever kasoku that process imports (so that two builds run exactly the same calls), and the worker that
times them on request (harness.times)."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import harness

OPS = ["KeyGen", "Encode", "Encrypt", "DecryptDecode", "Add", "MulRelinRescale", "Rotate"]
HOISTING_OPS = ["SumSlots", "Rotate16Hoisted"]
SUM_SLOTS_H = 5  # fixed, so that both builds run the same plan


def setup(params_name: str, threads: int, hoisting: bool) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """Context, keys (rotation 1; with hoisting also rotations 1..16 and sum_slots' elements) and two encrypted
    random vectors; returns {op: call} and the objects (ks, params, ctx, keys, ev, x, y, a, b)."""
    import numpy as np

    import kasoku as ks

    params = ks.Parameters.named(params_name)
    ctx = ks.Context(params, threads=threads)
    rotations = list(range(1, 17)) if hoisting else [1]
    galois = ks.trace_galois_elements(params, params.log_n - 1, SUM_SLOTS_H) if hoisting else []
    keys = ctx.keygen(rotations=rotations, galois_elements=galois)
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    pt = ctx.encode(x)
    a, b = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    run: dict[str, Callable[[], Any]] = {
        "KeyGen": lambda: ctx.keygen(rotations=[1]),
        "Encode": lambda: ctx.encode(x),
        "Encrypt": lambda: ctx.encrypt(pt, keys.public),
        "DecryptDecode": lambda: ctx.decrypt(a, keys.secret),
        "Add": lambda: ev.add(a, b),
        "MulRelinRescale": lambda: ev.multiply(a, b),
        "Rotate": lambda: ev.rotate(a, 1),
    }
    if hoisting:
        run["SumSlots"] = lambda: ev.sum_slots(a, h=SUM_SLOTS_H)
        run["Rotate16Hoisted"] = lambda: ev.rotate_hoisted(a, rotations)
    objs = dict(ks=ks, params=params, ctx=ctx, keys=keys, ev=ev, x=x, y=y, a=a, b=b)
    return run, objs


def serve(params_name: str, threads: int, hoisting: bool) -> None:
    """compare_builds' worker: sets up, runs every operation once (the first use of every buffer size and table), says
    it is ready (SIMD body, precision of one MulRelinRescale in bits), then answers each line "OP REPS" of stdin with
    the JSON list of REPS timings in ms (NTT: one forward NTT of a 60-bit prime, timed inside the library)."""
    import numpy as np

    run, o = setup(params_name, threads, hoisting)
    ks, ctx, ev, keys, a, b = o["ks"], o["ctx"], o["ev"], o["keys"], o["a"], o["b"]
    for f in run.values():
        f()
    bits = float(-np.log2(np.max(np.abs(ctx.decrypt(ev.multiply(a, b), keys.secret).real - o["x"] * o["y"]))))
    print(json.dumps({"ready": True, "simd": ks.simd_active(), "bits": bits}), flush=True)
    for line in sys.stdin:
        op, reps = line.split()
        if op == "NTT":  # the kernel alone
            secs = ks._kasoku.bench_ntt(o["params"].log_n, 60, int(reps))
        else:
            secs = harness.times(run[op], int(reps))
        print(json.dumps([t * 1e3 for t in secs]), flush=True)
