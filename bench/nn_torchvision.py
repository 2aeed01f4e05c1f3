#!/usr/bin/env python3
"""torchvision's models as users take them, through kasoku.nn: `resnet18(num_classes=10)` and
`mobilenet_v2(num_classes=10)` on 3 x 32 x 32 inputs, random weights (seed 0) with BatchNorm's statistics set from 64
random images, no download. Per model and thread count: compile, key generation, the encrypted inference of each test
image (median), the decisions against the clear model's, the logit errors, the bootstraps, the peak memory; one JSON
line each (bench/harness.py). Each model in a process of its own (its peak memory).

    python3 -m venv bench/.venv-tv && bench/.venv-tv/bin/pip install torch==2.14.1 torchvision==0.29.1 numpy
    # kasoku in that venv: pip install . there, or a .pth file naming a folder that holds .venv's kasoku package
    bench/.venv-tv/bin/python bench/nn_torchvision.py --models resnet18 mobilenet_v2 --images 5 --threads 1 2 \\
        --out docs/data/nn-torchvision.jsonl
    bench/.venv-tv/bin/python bench/nn_torchvision.py --models resnet18 --compile-only   # the plan, its clear decisions

torchvision's wheels need a PyTorch newer than the one make venv installs (docs/NN.md), hence a venv of their own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import harness
from nn_networks import peak_gb

MODELS = ("resnet18", "mobilenet_v2")


def progress(msg: str) -> None:
    print(f"[torchvision bench] {msg}", file=sys.stderr, flush=True)


def build(name: str):
    """The torchvision model with 10 classes, PyTorch's initialisation (seed 0) and BatchNorm's statistics the
    cumulative average over 64 random 3 x 32 x 32 images, in eval mode; those images and 32 more to infer."""
    import torch
    import torchvision

    torch.manual_seed(0)
    net = getattr(torchvision.models, name)(num_classes=10)
    x = torch.rand(96, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    net.train()
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None
    with torch.no_grad():
        net(x[:64])
    return net.eval(), x[:64], x[64:]


def child(name: str, threads: int, images: int, compile_only: bool) -> dict:
    import numpy as np
    import torch

    import kasoku as ks
    import kasoku.nn as ksnn

    torch.set_num_threads(threads)
    net, x_cal, x_test = build(name)
    compile_s, plan = harness.timed(
        lambda: ksnn.compile(net, x_test[:1], calibration=x_cal, threads=threads, max_encoded_bytes=0)
    )
    progress(f"{name}: compiled in {compile_s:.1f} s\n{plan}")
    x = x_test[:images]
    with torch.no_grad():
        want = net(x).double().numpy()
    clear = np.array([plan.forward_clear(v) for v in x])
    rec = {
        "model": f"torchvision.{name}",
        "threads": threads,
        "compile_s": compile_s,
        "bootstraps": plan.bootstraps,
        "key_bytes": plan.key_bytes(),
        "calibration": plan.calibration,
        "clear_argmax_agree": int((clear.argmax(1) == want.argmax(1)).sum()),
        "clear_logit_max_err": float(np.abs(clear - want).max()),
        "params": repr(plan.params),
        "simd": ks.simd_active(),
    }
    if compile_only:
        return {**rec, "images": len(x), "peak_gb": peak_gb()}
    keygen_s = harness.timed(plan.keygen)[0]
    got, times = [], []
    for i in range(len(x)):
        ct = plan.encrypt(x[i])
        secs, out = harness.timed(lambda: plan.run(ct, threads=threads))
        times.append(secs)
        got.append(plan.decrypt(out))
        progress(
            f"{name}: image {i + 1}/{len(x)}: {secs:.1f} s, decision {int(got[-1].argmax())} (clear "
            f"{int(want[i].argmax())}), logit error {float(np.abs(got[-1] - want[i]).max()):.2e}"
        )
    got = np.array(got)
    return {
        **rec,
        "keygen_s": keygen_s,
        "images": len(x),
        "inference_s": harness.median(times),
        "inference_all_s": times,
        "argmax_agree": int((got.argmax(1) == want.argmax(1)).sum()),
        "logit_max_err": float(np.abs(got - want).max()),
        "logit_range": float(np.ptp(want)),
        "peak_gb": peak_gb(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--images", type=int, default=5)
    ap.add_argument("--compile-only", action="store_true", help="the plan and its clear decisions, no encryption")
    ap.add_argument("--out", help="append the JSON lines here too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        harness.emit(child(a.child, a.threads[0], a.images, a.compile_only))
        return 0
    failed = False
    for name in a.models:
        for threads in a.threads:
            cmd = [sys.executable, __file__, "--child", name, "--threads", str(threads), "--images", str(a.images)]
            cmd += ["--compile-only"] if a.compile_only else []
            p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            rec = json.loads(lines[-1]) if p.returncode == 0 and lines else {"error": f"exit {p.returncode}"}
            rec.setdefault("model", f"torchvision.{name}")
            rec.pop("command", None)  # the line carries this run's command, not its child's
            failed |= "error" in rec
            harness.emit({"lib": "kasoku", **rec}, a.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
