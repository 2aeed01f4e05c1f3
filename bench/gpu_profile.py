#!/usr/bin/env python3
"""The kernels of single operations on the GPU, for a profiler started from the program (scripts/device_run.py's
ncu step: `ncu --profile-from-start off ... python bench/gpu_profile.py`): set-up and one warm-up call of each operation
run outside the profiled range; then, inside it, one call: an H16 multiply-relinearize-rescale, an H16 rotate or a B13
batch of 100 multiplies. Prints one JSON line naming what was profiled, and the machine (harness.emit).

    ncu --profile-from-start off --csv --metrics gpu__time_duration.sum python bench/gpu_profile.py --op mul
"""

from __future__ import annotations

import argparse
import ctypes
import sys

import harness
import numpy as np

import kasoku as ks


def profiler(on: bool) -> None:
    """cuProfilerStart/Stop of the driver API: applies to the current context, which the runtime made current."""
    lib = ctypes.CDLL("libcuda.so.1")
    rc = (lib.cuProfilerStart if on else lib.cuProfilerStop)()
    if rc != 0:
        print(f"cuProfiler{'Start' if on else 'Stop'} returned {rc}", file=sys.stderr)


OPS = {"mul": ("H16", "MulRelinRescale"), "rot": ("H16", "Rotate"), "batch": ("B13", "multiply_many")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--op",
        choices=sorted(OPS),
        required=True,
        help="mul: H16 multiply-relinearize-rescale, rot: H16 rotate, batch: B13 multiply_many",
    )
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=100, help="B13 batch size")
    args = ap.parse_args(argv)
    name, op = OPS[args.op]
    rng = np.random.default_rng(1)
    ctx = ks.Context(ks.Parameters.named(name), device=args.device)
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    a, b = (ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public) for _ in range(2))
    fn = {
        "mul": lambda: ev.multiply(a, b),
        "rot": lambda: ev.rotate(a, 1),
        "batch": lambda: ev.multiply_many([a] * args.batch, [b] * args.batch),
    }[args.op]
    warmup_s = harness.timed(fn, ctx.synchronize)[0]  # first-call allocations and table uploads stay outside the range
    profiler(True)
    fn()
    ctx.synchronize()
    profiler(False)
    batch = args.batch if args.op == "batch" else 1
    harness.emit(
        {"lib": "kasoku", "op": op, "params": name, "batch": batch, "device": ctx.device, "warmup_s": warmup_s}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
