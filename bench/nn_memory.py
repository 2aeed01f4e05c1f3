"""Where an encrypted inference's memory goes over time: one network compiled, its keys made and one image run, with
the process's resident memory and glibc's heap (mallinfo2: bytes in use, and bytes free but still held) sampled every
0.2 s, the peak of each phase reported. A peak that the heap's free bytes make (freed blocks held between live ones)
reads differently from one that the live data makes.

    .venv/bin/python bench/nn_memory.py --model ResNet20 --threads 1 --out run.jsonl [--timeline t.json]
    .venv/bin/python bench/nn_memory.py --model SmallCNN --threads 2   # params=None, as a new user would

One JSON line: per phase (compile, keygen, encrypt, run) the peak resident GB and, at that moment, the heap's in-use
and free GB; the plan's own memory figures (Plan.memory), the inference's seconds and its logit error. The network
and inputs are bench/nn_peers.py's (SmallCNN: examples/nn/models.py's, on the same random 3 x 32 x 32 images as the
ResNets)."""

from __future__ import annotations

import argparse
import ctypes
import json
import pathlib
import sys
import tempfile
import threading
import time

import harness
import nn_networks
import numpy as np


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


def _heap():
    """(in use, free) GB of glibc's heap, or (None, None) where there is no mallinfo2 (not glibc, or glibc < 2.33)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return lambda: (None, None)

    def read():
        m = libc.mallinfo2()
        return m.uordblks / 1e9, m.fordblks / 1e9

    return read


def _rss_gb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1e6
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ResNet20", choices=list(nn_networks.ORION_CONFIG) + nn_networks.KASOKU_ONLY)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument(
        "--max-encoded-mb",
        type=float,
        help="compile's max_encoded_bytes in MB (transforms kept encoded, others at use); default nn_networks.COMPILE",
    )
    ap.add_argument(
        "--max-memory-mb", type=float, help="compile's max_memory_bytes in MB (default: its memory classes)"
    )
    ap.add_argument("--out", help="append the JSON line here too")
    ap.add_argument("--timeline", help="write every sample here (JSON: seconds, resident GB, phase, heap in use, free)")
    a = ap.parse_args()

    heap = _heap()
    samples: list[tuple] = []
    phase = ["start"]
    t0 = time.perf_counter()

    def take() -> None:
        samples.append((time.perf_counter() - t0, _rss_gb(), phase[0], *heap()))

    def sample() -> None:
        while True:
            take()
            time.sleep(0.2)

    def enter(name: str) -> None:  # the phase ending sampled at its end too (a phase may be shorter than 0.2 s)
        take()
        phase[0] = name

    threading.Thread(target=sample, daemon=True).start()

    import torch

    import kasoku.nn as ksnn

    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory(prefix="kasoku-nn-") as tmp:
        work = pathlib.Path(tmp)
        nn_networks.train_all(work, [a.model], a.epochs)
        net, data = nn_networks.load_trained(work, a.model)
    x = data["x_test"][:1]
    enter("compile")
    options = dict(nn_networks.COMPILE.get(a.model, {}))
    if a.max_encoded_mb is not None:
        options["max_encoded_bytes"] = int(a.max_encoded_mb * 1e6)
    if a.max_memory_mb is not None:
        options["max_memory_bytes"] = int(a.max_memory_mb * 1e6)
    compile_s, plan = harness.timed(
        lambda: ksnn.compile(net, x, calibration=data["x_cal"], threads=a.threads, **options)
    )
    enter("keygen")
    keygen_s = harness.timed(plan.keygen)[0]
    enter("encrypt")
    ct = plan.encrypt(x[0])
    enter("run")
    run_s, out = harness.timed(lambda: plan.run(ct, threads=a.threads))
    enter("done")
    time.sleep(0.5)
    with torch.no_grad():
        want = net(x).numpy().reshape(-1)
    peaks: dict[str, dict] = {}
    for _, rss, p, in_use, free in list(samples):
        if p in ("compile", "keygen", "encrypt", "run") and rss > peaks.get(p, {}).get("rss_gb", -1.0):
            peaks[p] = {"rss_gb": round(rss, 3), "heap_in_use_gb": in_use, "heap_free_gb": free}
    if a.timeline:
        pathlib.Path(a.timeline).write_text(json.dumps(samples))
    harness.emit(
        {
            "model": a.model,
            "threads": a.threads,
            "max_encoded_bytes": options.get("max_encoded_bytes"),
            "max_memory_bytes": options.get("max_memory_bytes"),
            "params": repr(plan.params),
            "compile_s": round(compile_s, 1),
            "keygen_s": round(keygen_s, 1),
            "inference_s": round(run_s, 1),
            "bootstraps": plan.bootstraps,
            "logit_err_max": float(np.max(np.abs(plan.decrypt(out) - want))),
            "peak_gb": max(v["rss_gb"] for v in peaks.values()),
            "phases": peaks,
            "memory_bytes": plan.memory(),
        },
        a.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
