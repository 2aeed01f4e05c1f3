#!/usr/bin/env python3
"""Encrypted inference of the networks Orion ships, kasoku.nn beside Orion (orion-fhe) in one run: the same weights,
the same images, the same thread count, each library and network in a process of its own (its peak memory).

    .venv/bin/python bench/nn_peers.py --models MLP LoLA LeNet5 --threads 1 --images 5 \\
        --orion-python bench/.venv-orion/bin/python --out docs/data/nn-zen4.jsonl
    .venv/bin/python bench/nn_peers.py --models MLP --all-digits        # kasoku only: every digits test image
    .venv/bin/python bench/nn_peers.py --models ResNet20 --params BOOT16 --threads 2 --images 1 \
        --orion-python bench/.venv-orion/bin/python                     # 3 x 32 x 32, bootstrapping

The networks (examples/nn/models.py, Orion's orion.models shapes, x^2 activations) are trained here in the clear on
scikit-learn's digits upsampled to 28 x 28 (fixed seeds), and their weights loaded into Orion's own modules (same
attribute names). kasoku compiles with its defaults (kasoku.nn.compile: parameters chosen for the plan); Orion with its
repository's configs (MLP, LoLA: configs/mlp.yml and lola.yml, N = 2^13, 26-bit scale; LeNet-5: the same shape at
N = 2^14 with 7 levels, as it has no config of its own; ResNet-20: configs/resnet.yml, N = 2^16 with bootstrapping).
Both fit their ranges on the same 256 training images (ResNet-20: 64 random CIFAR-shaped images, see CIFAR_SHAPED).
Per network and library: compile (trace, pack, parameters, encoded transforms), key generation, encryption, inference
(median over the images), logit error against the clear model (max and mean over the images), argmax agreement, and
the process's peak resident memory. One JSON line each, tagged with the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

# configs/mlp.yml and configs/lola.yml of the Orion repository (the same block); LeNet-5 has no config there: the same
# at N = 2^14 with 7 levels
_ORION_SMALL = {
    "LogN": 13,
    "LogQ": [29, 26, 26, 26, 26, 26],
    "LogP": [29, 29],
    "LogScale": 26,
    "H": 8192,
    "RingType": "ConjugateInvariant",
}
ORION_CONFIG = {
    "MLP": _ORION_SMALL,
    "LoLA": _ORION_SMALL,
    "LeNet5": {**_ORION_SMALL, "LogN": 14, "LogQ": [29] + [26] * 7},
    # configs/resnet.yml of the Orion repository (its boot_params: LogP [61] * 8)
    "ResNet20": {
        "LogN": 16,
        "LogQ": [55] + [40] * 10,
        "LogP": [61, 61, 61],
        "LogScale": 40,
        "H": 16384,
        "RingType": "standard",
    },
}
ORION_BOOT = {"ResNet20": {"LogP": [61] * 8}}
ORION_CLASS = {"MLP": "MLP", "LoLA": "LoLA", "LeNet5": "LeNet", "ResNet20": "ResNet20"}
# ResNet-20 takes 3 x 32 x 32 images; the machine has no CIFAR-10, so its inputs are random tensors of that shape and
# its weights PyTorch's initialisation with BatchNorm statistics gathered on them: timing, bootstraps, memory and logit
# error against the same model in the clear, not accuracy
CIFAR_SHAPED = {"ResNet20"}
# ResNet-20's 21 transforms at N = 2^16 would hold tens of GB encoded: at most 1 GB kept, the others encoded at use
COMPILE = {"ResNet20": {"max_encoded_bytes": 1 << 30}}


def progress(msg: str) -> None:
    print(f"[nn bench] {msg}", file=sys.stderr, flush=True)


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kilobytes on Linux


def errors(got, want) -> dict:
    import numpy as np

    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    err = np.abs(got - want)
    return {
        "logit_max_err": float(err.max()),
        "logit_mean_err": float(err.mean()),
        "argmax_agree": int((got.argmax(1) == want.argmax(1)).sum()),
        "images": int(len(got)),
    }


def record(compile_s: float, keygen_s: float, enc: list, inf: list, got, want) -> dict:
    """A child's timings, errors and peak memory, the same for both libraries."""
    return {
        "compile_s": compile_s,
        "keygen_s": keygen_s,
        "encrypt_s": statistics.median(enc),
        "inference_s": statistics.median(inf),
        "inference_all_s": inf,
        **errors(got, want),
        "peak_gb": peak_gb(),
    }


# ---------------------------------------------------------------- children (one library, one network)


def child_kasoku(
    work: pathlib.Path, name: str, threads: int, images: int, device: str = "cpu", params: str | None = None
) -> dict:
    import torch

    import kasoku as ks
    import kasoku.nn as ksnn

    sys.path.insert(0, str(ROOT))
    from examples.nn import models

    torch.set_num_threads(threads)
    data = torch.load(work / _data_file(name))
    net = getattr(models, name)()
    net.load_state_dict(torch.load(work / f"{name}.pt"))
    net.eval()
    x = data["x_test"][:images]
    t = time.perf_counter()
    chosen = ks.Parameters.named(params) if params else None
    plan = ksnn.compile(
        net, x[:1], calibration=data["x_cal"], params=chosen, threads=threads, device=device, **COMPILE.get(name, {})
    )
    compile_s = time.perf_counter() - t
    progress(f"kasoku {name}: compiled in {compile_s:.1f} s\n{plan}")
    t = time.perf_counter()
    plan.keygen()
    keygen_s = time.perf_counter() - t
    enc, inf, got = [], [], []
    for i in range(len(x)):
        t = time.perf_counter()
        ct = plan.encrypt(x[i])
        enc.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = plan.run(ct, threads=threads)
        inf.append(time.perf_counter() - t)
        got.append(plan.decrypt(out))
        progress(f"kasoku {name}: image {i + 1}/{len(x)}: {inf[-1]:.3f} s")
    with torch.no_grad():
        want = net(x).numpy()
    p = plan.params
    return {
        **record(compile_s, keygen_s, enc, inf, got, want),
        "bootstraps": plan.bootstraps,
        "galois_keys": len(plan.galois_elements()),
        "params": f"N=2^{p.log_n}, {p.levels} levels, scale 2^{p.scale_bits}, log2(QP) {p.log_qp}",
        "simd": ks.simd_active(),
        "device": device if device == "cpu" else ks.cuda_info().get("name", device),
    }


def child_orion(work: pathlib.Path, name: str, threads: int, images: int) -> dict:
    import numpy as np
    import torch

    import orion
    import orion.models

    torch.set_num_threads(threads)
    data = torch.load(work / _data_file(name))
    net = getattr(orion.models, ORION_CLASS[name])()
    state = torch.load(work / f"{name}.pt")
    if name == "ResNet20":  # our blocks are one Sequential, Orion's three stages of three: layers.{3i+j} -> layers.i.j
        state = {
            re.sub(r"^layers\.(\d+)\.", lambda m: f"layers.{int(m[1]) // 3}.{int(m[1]) % 3}.", k): v
            for k, v in state.items()
        }
    missing, unexpected = net.load_state_dict(state, strict=False)
    # Orion's own buffers (BatchNorm's counter, its average pooling's fixed kernel) are not weights of the model
    if unexpected or [k for k in missing if not (k.endswith("num_batches_tracked") or k.startswith("avgpool."))]:
        raise SystemExit(
            f"Orion's {ORION_CLASS[name]} does not take these weights: missing {missing}, unexpected {unexpected}"
        )
    if isinstance(getattr(net, "pool", None), torch.nn.Identity):
        # ResNet's CIFAR stem holds a torch Identity, on which orion.fit with a DataLoader fails (it sets batch sizes on
        # every module it traced: AttributeError 'input_shape'); a plain function is the same and is traced through
        del net._modules["pool"]
        net.pool = lambda t: t
    net.eval()
    x = data["x_test"][:images]
    with torch.no_grad():
        want = net(x).numpy()
    config = {
        "ckks_params": ORION_CONFIG[name],
        **({"boot_params": ORION_BOOT[name]} if name in ORION_BOOT else {}),
        "orion": {
            "margin": 2,
            "embedding_method": "hybrid",
            "backend": "lattigo",
            "fuse_modules": True,
            "debug": False,
            "diags_path": "",
            "keys_path": "",
            "io_mode": "none",
        },
    }
    t = time.perf_counter()
    orion.init_scheme(config)  # Lattigo's parameters and the secret, public and relinearisation keys
    keygen_s = time.perf_counter() - t
    t = time.perf_counter()
    # a loader of batch 1: Orion fits on batches of 128 and packs for the loader's batch size (a tensor's batch of 256
    # would make it pack 256 images per transform)
    cal = torch.utils.data.TensorDataset(data["x_cal"], torch.zeros(len(data["x_cal"])))
    orion.fit(net, torch.utils.data.DataLoader(cal, batch_size=1))
    said = io.StringIO()
    with contextlib.redirect_stdout(said):  # Orion reports on stdout, where the parent reads this child's result
        level = orion.compile(net)  # packing, levels, diagonals, bootstrap placement and the keys they need
    compile_s = time.perf_counter() - t
    sys.stderr.write(said.getvalue())
    boots = re.search(r"Network requires (\d+) bootstrap", said.getvalue())
    net.he()
    enc, inf, got = [], [], []
    for i in range(len(x)):
        t = time.perf_counter()
        ct = orion.encrypt(orion.encode(x[i : i + 1], level))
        enc.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = net(ct)
        inf.append(time.perf_counter() - t)
        got.append(np.asarray(out.decrypt().decode(), dtype=float).reshape(-1)[: want.shape[1]])
        progress(f"orion {name}: image {i + 1}/{len(x)}: {inf[-1]:.3f} s")
    c = ORION_CONFIG[name]
    return {
        **record(compile_s, keygen_s, enc, inf, got, want),
        "bootstraps": int(boots[1]) if boots else 0,
        "params": f"N=2^{c['LogN']} {c['RingType']}, {len(c['LogQ']) - 1} levels, scale 2^{c['LogScale']}, "
        f"log2(QP) {sum(c['LogQ']) + sum(c['LogP'])}",
    }


# ---------------------------------------------------------------- driver


def _data_file(name: str) -> str:
    return "cifar-shaped.pt" if name in CIFAR_SHAPED else "data.pt"


def train_all(work: pathlib.Path, names: list[str], epochs: int) -> None:
    import torch

    sys.path.insert(0, str(ROOT))
    from examples.nn import models

    (x_train, y_train), (x_test, y_test) = models.digits()
    torch.save({"x_cal": x_train[:256], "x_test": x_test, "y_test": y_test}, work / "data.pt")
    g = torch.Generator().manual_seed(0)
    x_rand = torch.rand(96, 3, 32, 32, generator=g)
    torch.save({"x_cal": x_rand[:64], "x_test": x_rand[64:]}, work / "cifar-shaped.pt")
    for name in names:
        t = time.perf_counter()
        if name in CIFAR_SHAPED:
            torch.manual_seed(0)
            net = getattr(models, name)()
            net.train()
            for m in net.modules():  # BatchNorm's statistics as the cumulative average over the calibration images
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.momentum = None
            with torch.no_grad():
                net(x_rand[:64])
            torch.save(net.eval().state_dict(), work / f"{name}.pt")
            progress(
                f"{name}: initialised, BatchNorm statistics from 64 random images ({time.perf_counter() - t:.1f} s)"
            )
            continue
        net = models.train(getattr(models, name)(), x_train, y_train, epochs=epochs)
        torch.save(net.state_dict(), work / f"{name}.pt")
        progress(
            f"{name}: trained in {time.perf_counter() - t:.1f} s, test accuracy "
            f"{models.accuracy(net, x_test, y_test):.3f}"
        )


def run_child(
    python: str,
    lib: str,
    work: pathlib.Path,
    name: str,
    threads: int,
    images: int,
    device: str = "cpu",
    params: str | None = None,
) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), GOMAXPROCS=str(threads), MKL_NUM_THREADS=str(threads))
    cmd = [
        python,
        str(pathlib.Path(__file__).resolve()),
        "--child",
        lib,
        "--work",
        str(work),
        "--models",
        name,
        "--threads",
        str(threads),
        "--images",
        str(images),
        "--device",
        device,
    ] + (["--params", params] if params else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(work))
    sys.stderr.write(r.stderr[-4000:])
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        return {"error": f"exit {r.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["MLP", "LoLA", "LeNet5"], choices=list(ORION_CONFIG))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--images", type=int, default=5, help="test images per network and library")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--orion-python", help="the interpreter of a venv with orion-fhe (none: kasoku only)")
    ap.add_argument("--libs", nargs="+", default=["kasoku", "orion"], choices=["kasoku", "orion"])
    ap.add_argument("--all-digits", action="store_true", help="kasoku on all 360 test images (decisions and errors)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="kasoku's device (Orion runs on the CPU)")
    ap.add_argument("--params", help="kasoku's parameters by name (default: chosen by kasoku.nn.compile)")
    ap.add_argument("--out", help="append the JSON lines here too")
    ap.add_argument("--child", choices=["kasoku", "orion"], help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.child == "kasoku":
            rec = child_kasoku(pathlib.Path(a.work), a.models[0], a.threads, a.images, a.device, a.params)
        else:
            rec = child_orion(pathlib.Path(a.work), a.models[0], a.threads, a.images)
        print(json.dumps(rec), flush=True)
        return 0

    sys.path.insert(0, str(ROOT / "bench"))
    from peers import machine_info

    host = machine_info()
    progress(f"{host['cpu']}, {a.threads} thread(s)")
    images = 360 if a.all_digits else a.images
    failed = False
    with tempfile.TemporaryDirectory(prefix="kasoku-nn-") as tmp:
        work = pathlib.Path(tmp)
        train_all(work, a.models, a.epochs)
        for name in a.models:
            libs = [("kasoku", sys.executable)] if "kasoku" in a.libs else []
            if a.orion_python and not a.all_digits and "orion" in a.libs:
                libs.append(("orion", os.path.abspath(a.orion_python)))
            for lib, python in libs:
                progress(f"{lib} {name} ...")
                rec = {
                    "lib": lib,
                    "model": name,
                    "threads": a.threads,
                    "cpu": host["cpu"],
                    "date": time.strftime("%Y-%m-%d"),
                    **run_child(
                        python, lib, work, name, a.threads, images, *((a.device, a.params) if lib == "kasoku" else ())
                    ),
                }
                failed |= "error" in rec
                line = json.dumps(rec)
                print(line, flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
