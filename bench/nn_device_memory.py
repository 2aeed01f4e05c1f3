#!/usr/bin/env python3
"""The device memory a kasoku.nn plan takes on a GPU, counted on a machine without one: the plan compiled for the
"gpu-emulated" backend (the GPU backend's logic on the host, its memory counted as a device's: Context.device_memory),
keys made, one sample encrypted and run, every kernel counted but not run (ks.GpuKernelsSkipped: the counts do not
depend on the data), beside the plan's own estimate (plan.memory()["gpu"], what repr(plan) says). The networks are
bench/nn_peers.py's (the ResNets in Orion's shapes with random weights and BatchNorm statistics from random images).

    .venv/bin/python bench/nn_device_memory.py --model ResNet20 --max-encoded-gb 0 4 --out run.jsonl

The emulated device memory is host memory: a ResNet-20 plan needs about as much RAM as it counts. One JSON line per
budget: device_counted_gb (the peak), device_estimate_gb, and the peak after each phase."""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import harness
import nn_networks


def count(net, data, max_encoded: int | None, threads: int) -> dict:
    import kasoku as ks
    import kasoku.nn as ksnn

    x = data["x_test"][:1]
    with ks.GpuKernelsSkipped():
        secs, plan = harness.timed(
            lambda: ksnn.compile(
                net,
                x,
                calibration=data["x_cal"],
                device="gpu-emulated",
                threads=threads,
                max_encoded_bytes=max_encoded,
                noise=False,  # measured noise needs kernels that run
            )
        )
        phases = {"compile": plan.ctx.device_memory()["peak_bytes"]}
        plan.keygen()
        phases["keygen"] = plan.ctx.device_memory()["peak_bytes"]
        ct = plan.encrypt(x[0], check=False)
        phases["encrypt"] = plan.ctx.device_memory()["peak_bytes"]
        plan.run(ct, threads=threads)
        phases["run"] = plan.ctx.device_memory()["peak_bytes"]
    m = plan.memory()
    return {
        "device_counted_gb": phases["run"] / 1e9,
        "device_estimate_gb": m["gpu"] / 1e9,
        "estimate_over_counted": m["gpu"] / phases["run"],
        "peak_after_gb": {k: v / 1e9 for k, v in phases.items()},
        "plan_memory_gb": {k: v / 1e9 for k, v in m.items()},
        "max_encoded_bytes": max_encoded,
        "bootstraps": plan.bootstraps,
        "compile_s": secs,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="ResNet20", choices=[*nn_networks.ORION_CONFIG, *nn_networks.KASOKU_ONLY])
    ap.add_argument(
        "--max-encoded-gb",
        type=float,
        nargs="+",
        default=[0.0],
        help="compile's max_encoded_bytes in GB, one run each (-1: compile's default)",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--out", help="append the JSON lines here too")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kasoku-nn-") as tmp:
        work = pathlib.Path(tmp)
        nn_networks.train_all(work, [a.model], a.epochs)
        net, data = nn_networks.load_trained(work, a.model)
        for gb in a.max_encoded_gb:
            budget = None if gb < 0 else int(gb * 1e9)
            nn_networks.progress(f"{a.model}: max_encoded_bytes {budget} ...")
            rec = {
                "model": a.model,
                "device": "gpu-emulated",
                "threads": a.threads,
                **count(net, data, budget, a.threads),
            }
            harness.emit(rec, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
