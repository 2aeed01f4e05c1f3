"""bench/nn_peers.py's kasoku child: one network compiled, keyed and run on the test images by kasoku.nn, with
its timings, errors and memory (one JSON line)."""

from __future__ import annotations

import contextlib
import pathlib
import subprocess

import harness
from nn_networks import COMPILE, DeviceMemory, load_trained, progress, record


def child_kasoku(
    work: pathlib.Path,
    name: str,
    threads: int,
    images: int,
    device: str = "cpu",
    params: str | None = None,
    first: int = 0,
) -> dict:
    import torch

    import kasoku as ks
    import kasoku.nn as ksnn

    torch.set_num_threads(threads)
    net, data = load_trained(work, name)
    x = data["x_test"][first : first + images]
    gpu = None
    if device == "cuda":
        try:
            gpu = DeviceMemory()
        except (OSError, subprocess.CalledProcessError, ValueError, IndexError) as e:
            progress(f"kasoku {name}: no device memory readings ({e})")
    with gpu or contextlib.nullcontext():
        rec = _kasoku_run(ks, ksnn, net, data, x, name, threads, device, params, first)
    if gpu is not None:
        rec["device_peak_gb"] = gpu.peak_gb
        progress(f"kasoku {name}: device memory peak {gpu.peak_gb:.2f} GB")
    return rec


def _kasoku_run(
    ks, ksnn, net, data, x, name: str, threads: int, device: str, params: str | None, first: int = 0
) -> dict:
    import numpy as np
    import torch

    chosen = ks.Parameters.named(params) if params else None
    compile_s, plan = harness.timed(
        lambda: ksnn.compile(
            net,
            x[:1],
            calibration=data["x_cal"],
            params=chosen,
            threads=threads,
            device=device,
            **(COMPILE.get(name, {}) if device == "cpu" else {}),  # a GPU keeps what its memory holds
        )
    )
    progress(f"kasoku {name}: compiled in {compile_s:.1f} s\n{plan}")
    keygen_s = harness.timed(plan.keygen)[0]
    enc, inf, got, cts = [], [], [], []
    for i in range(len(x)):
        secs, ct = harness.timed(lambda: plan.encrypt(x[i]))
        enc.append(secs)
        cts.append(ct)
        secs, out = harness.timed(lambda: plan.run(ct, threads=threads))
        inf.append(secs)
        got.append(plan.decrypt(out))
        with torch.no_grad():
            clear = net(x[i : i + 1]).numpy().reshape(-1)
        label = f", label {int(data['y_test'][first + i])}" if "y_test" in data else ""
        progress(
            f"kasoku {name}: image {first + i + 1} ({i + 1} of {len(x)}): {inf[-1]:.3f} s, decision "
            f"{int(got[-1].argmax())} (clear {int(clear.argmax())}{label}), logit error "
            f"{float(abs(got[-1] - clear).max()):.2e}"
        )
    throughput = None
    if len(cts) > 1 and threads > 1 and device == "cpu":  # images in flight, one thread each (two rounds of workers)
        batch = cts[: 2 * threads]
        throughput = len(batch) / harness.timed(lambda: plan.run_many(batch, workers=threads, threads=1))[0]
        progress(f"kasoku {name}: {len(batch)} images on {threads} workers: {throughput:.3f} images/s")
    with torch.no_grad():
        want = net(x).numpy()
    labels = {}
    if "y_test" in data:  # the decisions against the labels: the clear model's accuracy and the encrypted run's
        y = data["y_test"][first : first + len(x)].numpy()
        labels = {
            "accuracy_clear": float((want.argmax(1) == y).mean()),
            "accuracy_encrypted": float((np.asarray(got).argmax(1) == y).mean()),
        }
    p = plan.params
    boot = f", bootstrapping {p.boot_levels} x {p.boot_bits} bits" if p.boot_levels else ""
    return {
        **record(compile_s, keygen_s, enc, inf, got, want),
        **labels,
        **({"first_image": first} if first else {}),  # test images first .. first + images - 1
        "calibration": plan.calibration,
        "images_per_s": throughput,
        "bootstraps": plan.bootstraps,
        "galois_keys": len(plan.galois_elements()),
        "key_bytes": plan.key_bytes(),
        "memory_bytes": plan.memory(),
        "params": f"N=2^{p.log_n}, {p.levels} levels, scale 2^{p.scale_bits}{boot}, P {p.special_primes} x "
        f"{p.special_bits} bits, dnum {p.dnum}, log2(QP) {p.log_qp}",
        "simd": ks.simd_active(),
        "device": device if device == "cpu" else ks.cuda_info().get("name", device),
    }
