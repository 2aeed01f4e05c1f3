#!/usr/bin/env python3
"""Encrypted inference of the networks Orion ships, kasoku.nn beside Orion (orion-fhe) in one run: the same weights,
the same images, the same thread count, each library and network in a process of its own (its peak memory).

    .venv/bin/python bench/nn_peers.py --models MLP LoLA LeNet5 --threads 1 --images 5 \\
        --orion-python bench/.venv-orion/bin/python --out docs/data/nn-zen4.jsonl
    .venv/bin/python bench/nn_peers.py --models MLP --all-digits        # kasoku only: every digits test image
    .venv/bin/python bench/nn_peers.py --models ResNet20 ResNet32 ResNet44 --threads 1 --images 1 \\
        --orion-python bench/.venv-orion/bin/python                     # 3 x 32 x 32, bootstrapping
    .venv/bin/python bench/nn_peers.py --models ResNet20-trained --libs kasoku --images 50 --threads 2 \
        --data nn-work        # the weights kept there: --first-image 30 --images 20 goes on where a run stopped

The networks (examples/nn/models.py, Orion's orion.models shapes, x^2 activations) are trained here in the clear on
scikit-learn's digits upsampled to 28 x 28 (fixed seeds), and their weights loaded into Orion's own modules (same
attribute names). kasoku compiles with its defaults (kasoku.nn.compile: parameters chosen for the plan); Orion with its
repository's configs (MLP, LoLA: configs/mlp.yml and lola.yml, N = 2^13, 26-bit scale; LeNet-5: the same shape at
N = 2^14 with 7 levels, as it has no config of its own; the ResNets: configs/resnet.yml of its main branch, N = 2^16
with bootstrapping). Both fit their ranges on the same 256 training images (the ResNets: 64 random CIFAR-shaped
images, see CIFAR_SHAPED). Per network and library: compile (trace, pack, parameters, encoded transforms), key
generation, encryption, inference (median over the images), logit error against the clear model (max and mean over the
images), argmax agreement, and the process's peak resident memory. One JSON line each, tagged with the CPU.

Orion's ResNets do not fit 24 GB in one process (ResNet-20 is killed in orion.compile with io_mode none), so they run
with its own disk offload in two processes (ORION_SPLIT): the first compiles with io_mode save (diagonals and rotation
keys written to HDF5 files under --orion-work), the second loads them (io_mode load) and runs the images, its
bootstrappers made one at a time as the network reaches them, under GOMEMLIMIT (--orion-gomemlimit). The HDF5 reads
and the bootstrappers' key generation during a run are timed apart and left out of inference_s (inference_wall_s has
them); compile_peak_gb and inference_peak_gb are the two processes' peaks, peak_gb the larger. Their layers' diagonals
are read from the sparse matrices by the bench (the same values as Orion's packing, ORION_SPARSE_PACKING): Orion's
dense index arrays alone are 26 GB for the last layer at N = 2^16.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading

import harness

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
# configs/resnet.yml of the Orion repository's main branch: N = 2^16, 10 levels of 40 bits, a sparse secret of Hamming
# weight 192 (a development branch has 16384), and its boot_params (LogP [61] * 8)
_ORION_RESNET = {
    "LogN": 16,
    "LogQ": [55] + [40] * 10,
    "LogP": [61, 61, 61],
    "LogScale": 40,
    "H": 192,
    "RingType": "standard",
}
# the CIFAR ResNets (examples/nn/models.py, orion.models) by their blocks a stage: 6n + 2 layers
RESNET_BLOCKS = {"ResNet20": 3, "ResNet32": 5, "ResNet44": 7}
ORION_CONFIG = {
    "MLP": _ORION_SMALL,
    "LoLA": _ORION_SMALL,
    "LeNet5": {**_ORION_SMALL, "LogN": 14, "LogQ": [29] + [26] * 7},
    **{name: _ORION_RESNET for name in RESNET_BLOCKS},
}
ORION_BOOT = {name: {"LogP": [61] * 8} for name in RESNET_BLOCKS}
ORION_CLASS = {"MLP": "MLP", "LoLA": "LoLA", "LeNet5": "LeNet", **{name: name for name in RESNET_BLOCKS}}
# the ResNets take 3 x 32 x 32 images; the machine has no CIFAR-10, so their inputs are random tensors of that shape
# and their weights PyTorch's initialisation with BatchNorm statistics gathered on them: timing, bootstraps, memory and
# logit error against the same model in the clear, not accuracy
CIFAR_SHAPED = set(RESNET_BLOCKS) | {"SmallCNN"}
# networks Orion does not ship, run by kasoku's scripts alone (bench/nn_memory.py)
KASOKU_ONLY = ["SmallCNN"]
# the CIFAR networks trained here on the digits as 3 x 32 x 32 images (name -> examples/nn/models.py class): a network
# with real margins between its outputs, whose encrypted decisions are compared with its labels (accuracy) too
TRAINED = {"ResNet20-trained": "ResNet20"}
# ResNet-20's 21 transforms at N = 2^16 would hold tens of GB encoded: on the CPU every transform (and the bootstrapping
# plan) encoded at each use, which kept ResNet-20 under 8 GB (7.8 GB against 9.1 GB with 1 GiB kept, 134.5 s against
# 121.5 s on one Zen 5 thread: docs/NN.md)
COMPILE = {name: {"max_encoded_bytes": 0} for name in [*RESNET_BLOCKS, *TRAINED]}
# Orion in two processes with its HDF5 offload (io_mode save, then load): one of its bootstrappers at N = 2^16 holds
# about 12.7 GB of keys (measured), and with io_mode none ResNet-20 was killed in compile on a 24 GB machine
ORION_SPLIT = set(RESNET_BLOCKS)
# and their layers' diagonals read from the sparse matrices (_sparse_diagonals), the same values: Orion's dense index
# arrays are 26 GB for the last linear layer, 13 GB for a stage-1 convolution
ORION_SPARSE_PACKING = set(RESNET_BLOCKS)


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
        "encrypt_s": harness.median(enc),
        "inference_s": harness.median(inf),
        "inference_all_s": inf,
        **errors(got, want),
        "peak_gb": peak_gb(),
    }


class DeviceMemory:
    """The GPU's used memory sampled every 0.1 s (nvidia-smi) while the block runs: peak_gb is the peak above what
    was in use when it began (other processes' and the driver's)."""

    def __init__(self) -> None:
        self.base = self.peak = self._used()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def _used() -> int:
        out = subprocess.run(
            ["nvidia-smi", "--id=0", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.split()[0]) << 20  # MiB

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self._used())

    def __enter__(self) -> DeviceMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._used())

    @property
    def peak_gb(self) -> float:
        return (self.peak - self.base) / 1e9


# ---------------------------------------------------------------- children (one library, one network)


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


class _Tee(io.StringIO):
    """Orion's reports kept (the bootstrap count is read from them) and shown on stderr as they come: stdout is where
    the parent reads this child's result."""

    def write(self, text: str) -> int:
        sys.stderr.write(text)
        return super().write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _orion_net(work: pathlib.Path, name: str):
    """Orion's module of the network with this run's weights, in eval mode."""
    import torch

    import orion.models

    net = getattr(orion.models, ORION_CLASS[name])()
    state = torch.load(work / f"{name}.pt")
    if name in RESNET_BLOCKS:  # our blocks are one Sequential, Orion's 3 stages of n: layers.{n i + j} -> layers.i.j
        n = RESNET_BLOCKS[name]
        state = {
            re.sub(r"^layers\.(\d+)\.", lambda m: f"layers.{int(m[1]) // n}.{int(m[1]) % n}.", k): v
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
    net.eval()  # Orion's Module.eval returns None
    return net


def _orion_fit(net, data) -> None:
    import torch

    import orion

    # a loader of batch 1: Orion fits on batches of 128 and packs for the loader's batch size (a tensor's batch of 256
    # would make it pack 256 images per transform); sequential, so that a second process fits the same ranges (io_mode
    # load checks them against the saved ones)
    cal = torch.utils.data.TensorDataset(data["x_cal"], torch.zeros(len(data["x_cal"])))
    orion.fit(net, torch.utils.data.DataLoader(cal, batch_size=1))


def _orion_params(name: str) -> dict:
    c = ORION_CONFIG[name]
    boot = ORION_BOOT.get(name)
    return {
        "params": f"N=2^{c['LogN']} {c['RingType']}, {len(c['LogQ']) - 1} levels, scale 2^{c['LogScale']}, "
        f"H {c['H']}, log2(QP) {sum(c['LogQ']) + sum(c['LogP'])}"
        + (f"; bootstrapping LogP {boot['LogP']}" if boot else ""),
        "orion_config": {"ckks_params": c, **({"boot_params": boot} if boot else {})},
    }


def _sparse_diagonals(packing) -> None:
    """Orion's diagonal extraction (orion.core.packing.diagonalize) replaced by one that reads the same diagonals from
    the sparse matrix. Orion's builds dense index arrays of block height x slots int64, three at once: at N = 2^16, 13
    GB for a stage-1 convolution of ResNet-20 and 26 GB for its last linear layer (packed square), which kills its
    compile on a 24 GB machine. Here, as there: blocks of slots columns and block height h rows (h the power of two
    above the rows for a hybrid-packed layer of one block row, not the last; else slots, then 0 output rotations),
    diagonal i of a block holding M[c mod h, (i + c) mod slots] at slot c, kept where it has a nonzero float32 value,
    in increasing i; a block without one as {0: zeros}. An entry M[r, col] is at i = (col - r) mod h, slot
    c = r + h floor(((col - r) mod slots) / h). Checked equal to Orion's (values, order, empty blocks) on random
    sparse matrices and a convolution's, hybrid and square, last layer or not."""
    import math

    import numpy as np

    def diagonalize(matrix, num_slots, embed_method, is_last_layer):
        height, width = matrix.shape
        rows, cols = math.ceil(height / num_slots), math.ceil(width / num_slots)
        if rows == 1 and embed_method == "hybrid" and not is_last_layer:
            h = 2 ** math.ceil(math.log2(height))
            output_rotations = int(math.log2(num_slots // h))
        else:
            h, output_rotations = num_slots, 0
        matrix.resize(rows * h, cols * num_slots)
        print(
            f"├── matrix {height} x {width}, blocks {(rows, cols)} of {h} x {num_slots}, {output_rotations} rotations"
        )
        blocks, total = {}, 0
        for i in range(rows):
            for j in range(cols):
                block = matrix[i * h : (i + 1) * h, j * num_slots : (j + 1) * num_slots].tocoo()
                block.sum_duplicates()
                values = block.data.astype(np.float32)
                keep = values != 0
                r, values = block.row[keep].astype(np.int64), values[keep]
                q = (block.col[keep].astype(np.int64) - r) % num_slots
                diag, slot = q % h, r + (q // h) * h
                order = np.argsort(diag, kind="stable")
                diag, slot, values = diag[order], slot[order], values[order]
                starts = np.flatnonzero(np.diff(diag, prepend=-1)).tolist() + [len(diag)]
                diagonals = {}
                for a, b in zip(starts[:-1], starts[1:]):
                    d = np.zeros(num_slots, dtype=np.float32)
                    d[slot[a:b]] = values[a:b]
                    diagonals[int(diag[a])] = d.tolist()
                total += len(diagonals)
                blocks[(i, j)] = diagonals or {0: [0.0] * num_slots}
        print(f"├── # diagonals = {total} (read from the sparse matrix: nn_peers)")
        return blocks, output_rotations

    packing.diagonalize = diagonalize


def _emptied(layer, generate):
    """Orion's generate_diagonals of a layer, its diagonals' values dropped after (their indices kept)."""

    def call(last):
        generate(last)
        for diags in layer.diagonals.values():
            for k in diags:
                diags[k] = []

    return call


def child_orion(
    work: pathlib.Path, name: str, threads: int, images: int, stage: str | None = None, files: str | None = None
) -> dict:
    """One process of Orion: the whole run (stage None, io_mode none), or the compile that writes its diagonals and
    rotation keys to HDF5 files in the folder `files` (stage "save") or the run that reads them back ("load")."""
    import numpy as np
    import torch

    import orion
    from orion.core import scheme  # the Scheme that orion.init_scheme fills
    from orion.nn.linear import LinearTransform

    torch.set_num_threads(threads)
    data = torch.load(work / _data_file(name))
    net = _orion_net(work, name)
    x = data["x_test"][:images]
    with torch.no_grad():
        want = net(x).numpy()  # the model in the clear, before Orion fits and fuses it
    if name in ORION_SPARSE_PACKING:
        import orion.core.packing

        _sparse_diagonals(orion.core.packing)
    io_mode = stage or "none"
    config = {
        "ckks_params": ORION_CONFIG[name],
        **({"boot_params": ORION_BOOT[name]} if name in ORION_BOOT else {}),
        "orion": {
            "margin": 2,
            "embedding_method": "hybrid",
            "backend": "lattigo",
            "fuse_modules": True,
            "debug": False,
            "diags_path": str(pathlib.Path(files) / "diagonals.h5") if stage else "",
            "keys_path": str(pathlib.Path(files) / "keys.h5") if stage else "",
            "io_mode": io_mode,
        },
    }
    # Lattigo's parameters and the secret (save: written; load: read), public and relin keys
    keygen_s = harness.timed(lambda: orion.init_scheme(config))[0]
    _orion_fit(net, data)

    # the rotation keys are made in orion.compile (save: and written to the HDF5 file): timed apart
    rot = {"s": 0.0}
    make_rotation_keys = scheme.lt_evaluator.generate_rotation_keys

    def timed_rotation_keys(transform_id):
        rot["s"] += harness.timed(lambda: make_rotation_keys(transform_id))[0]

    scheme.lt_evaluator.generate_rotation_keys = timed_rotation_keys
    make_bootstrapper = scheme.bootstrapper.generate_bootstrapper
    boot_slots = []
    if stage == "load":
        # compile packs every layer again and, in load mode, keeps all their diagonals as Python lists until it reads
        # them back from the file (ResNet-20: about 11,000 of 32768 floats, some 12 GB); the save mode empties each
        # layer's once written, keeping their indices (the bootstrap placement counts them): the same here
        for m in net.modules():
            if isinstance(m, LinearTransform):
                m.generate_diagonals = _emptied(m, m.generate_diagonals)
    if stage:
        # one bootstrapper at N = 2^16 is about 12.7 GB of keys: the save process needs none (they are not written),
        # the load process makes each when the network reaches it, below, and drops the one before
        scheme.bootstrapper.generate_bootstrapper = boot_slots.append
    said = _Tee()
    with contextlib.redirect_stdout(said):  # Orion reports on stdout, where the parent reads this child's result
        # packing, levels, diagonals, bootstrap placement and the keys they need
        compile_s, level = harness.timed(lambda: orion.compile(net))
    boots = re.search(r"Network requires (\d+) bootstrap", said.getvalue())
    common = {
        **({"orion_patch": "diagonals read from the sparse matrix"} if name in ORION_SPARSE_PACKING else {}),
        "bootstraps": int(boots[1]) if boots else 0,
        "rotation_keygen_s": rot["s"],
        **_orion_params(name),
    }
    if stage == "save":
        return {
            "compile_s": compile_s,
            "keygen_s": keygen_s,
            "bootstrapper_slots": boot_slots,
            "diagonals_file_gb": os.path.getsize(config["orion"]["diags_path"]) / 1e9,
            "keys_file_gb": os.path.getsize(config["orion"]["keys_path"]) / 1e9,
            "peak_gb": peak_gb(),
            **common,
        }
    if stage == "load":
        # the layers' diagonals (packed again by compile, then read back to check them against the saved ones) are not
        # used in the run: the encoded ones are read from the file at each transform
        for m in net.modules():
            if isinstance(m, LinearTransform):
                m.diagonals = {}
        gc.collect()

    # what a run spends on the offload: the HDF5 reads of rotation keys and encoded diagonals, and the bootstrappers'
    # keys made when the network reaches a bootstrap of another slot count (one held at a time); and its bootstraps
    spent = {"io": 0.0, "boot_keygen": 0.0, "boot": 0.0, "boots": 0}
    boot_keygen = []  # (slots, seconds) of each bootstrapper made

    def accounted(fn, key):
        def call(*args):
            secs, out = harness.timed(lambda: fn(*args))
            spent[key] += secs
            return out

        return call

    if stage == "load":
        lt = scheme.lt_evaluator
        lt.load_rotation_keys = accounted(lt.load_rotation_keys, "io")
        lt.load_plaintext_diagonals = accounted(lt.load_plaintext_diagonals, "io")
        bootstrap = scheme.bootstrapper.bootstrap
        held = [None]

        def one_bootstrapper(ctxt, slots):
            if held[0] != slots:
                # the old ones: garbage for Go's collector, which GOMEMLIMIT keeps at work
                secs = harness.timed(lambda: (scheme.backend.DeleteBootstrappers(), make_bootstrapper(slots)))[0]
                held[0] = slots
                boot_keygen.append((slots, secs))
                spent["boot_keygen"] += secs
                progress(f"orion {name}: bootstrapper for {slots} slots made in {secs:.1f} s")
            secs, out = harness.timed(lambda: bootstrap(ctxt, slots))
            spent["boot"] += secs
            spent["boots"] += 1
            return out

        scheme.bootstrapper.bootstrap = one_bootstrapper

    net.he()
    enc, inf, wall, got, per_image = [], [], [], [], []
    for i in range(len(x)):
        secs, ct = harness.timed(lambda: orion.encrypt(orion.encode(x[i : i + 1], level)))
        enc.append(secs)
        before = dict(spent)
        secs, out = harness.timed(lambda: net(ct))
        wall.append(secs)
        d = {k: spent[k] - before[k] for k in spent}
        inf.append(wall[-1] - d["io"] - d["boot_keygen"])
        per_image.append(d)
        got.append(np.asarray(out.decrypt().decode(), dtype=float).reshape(-1)[: want.shape[1]])
        progress(
            f"orion {name}: image {i + 1}/{len(x)}: {inf[-1]:.3f} s"
            + (
                f" ({wall[-1]:.1f} s with {d['io']:.1f} s of HDF5 reads and {d['boot_keygen']:.1f} s of bootstrapper"
                f" keys; {d['boots']} bootstraps, {d['boot']:.1f} s)"
                if stage
                else ""
            )
        )
    rec = {**record(compile_s, keygen_s, enc, inf, got, want), **common}
    if stage == "load":
        first = {}  # each slot count's first bootstrapper: the keys a run needs once
        for slots, sec in boot_keygen:
            first.setdefault(slots, sec)
        rec.update(
            load_compile_s=compile_s,
            load_keygen_s=keygen_s,
            boot_keygen_s=sum(first.values()),
            bootstrappers_made=[[slots, sec] for slots, sec in boot_keygen],
            inference_wall_s=wall,
            hdf5_read_s=[d["io"] for d in per_image],
            bootstrap_s=[d["boot"] for d in per_image],
            bootstraps_run=[d["boots"] for d in per_image],
            gomemlimit=os.environ.get("GOMEMLIMIT"),
        )
    return rec


# ---------------------------------------------------------------- driver


def _data_file(name: str) -> str:
    return "digits32.pt" if name in TRAINED else "cifar-shaped.pt" if name in CIFAR_SHAPED else "data.pt"


def load_trained(work: pathlib.Path, name: str):
    """The network train_all left in `work` (its examples/nn/models.py class with the saved weights, in eval mode)
    and its data (x_cal, x_test, ...)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from examples.nn import models

    net = getattr(models, TRAINED.get(name, name))()
    net.load_state_dict(torch.load(work / f"{name}.pt"))
    return net.eval(), torch.load(work / _data_file(name))


def train_all(work: pathlib.Path, names: list[str], epochs: int) -> None:
    """The networks' weights and data in work; a network whose weights are there already is kept (--data)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from examples.nn import models

    (x_train, y_train), (x_test, y_test) = models.digits()
    torch.save({"x_cal": x_train[:256], "x_test": x_test, "y_test": y_test}, work / "data.pt")
    g = torch.Generator().manual_seed(0)
    x_rand = torch.rand(96, 3, 32, 32, generator=g)
    torch.save({"x_cal": x_rand[:64], "x_test": x_rand[64:]}, work / "cifar-shaped.pt")
    if any(name in TRAINED for name in names):
        (x3_train, y3_train), (x3_test, y3_test) = models.digits(size=32, channels=3)
        torch.save({"x_cal": x3_train[:256], "x_test": x3_test, "y_test": y3_test}, work / "digits32.pt")
    for name in names:
        if (work / f"{name}.pt").exists():
            progress(f"{name}: the weights in {work} (not trained again)")
            continue
        if name in TRAINED:
            net = getattr(models, TRAINED[name])()
            secs, net = harness.timed(lambda: models.train(net, x3_train, y3_train, epochs=epochs))
            torch.save(net.state_dict(), work / f"{name}.pt")
            progress(f"{name}: trained in {secs:.1f} s, test accuracy {models.accuracy(net, x3_test, y3_test):.3f}")
            continue
        if name in CIFAR_SHAPED:
            secs, net = harness.timed(lambda: _initialised(getattr(models, name), x_rand[:64]))
            torch.save(net.state_dict(), work / f"{name}.pt")
            progress(f"{name}: initialised, BatchNorm statistics from 64 random images ({secs:.1f} s)")
            continue
        secs, net = harness.timed(lambda: models.train(getattr(models, name)(), x_train, y_train, epochs=epochs))
        torch.save(net.state_dict(), work / f"{name}.pt")
        progress(f"{name}: trained in {secs:.1f} s, test accuracy {models.accuracy(net, x_test, y_test):.3f}")


def _initialised(model, x):
    """The model with PyTorch's initialisation (seed 0) and BatchNorm's statistics as the cumulative average over the
    images x; in eval mode."""
    import torch

    torch.manual_seed(0)
    net = model()
    net.train()
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None
    with torch.no_grad():
        net(x)
    return net.eval()


def run_child(
    python: str,
    lib: str,
    work: pathlib.Path,
    name: str,
    threads: int,
    images: int,
    device: str = "cpu",
    params: str | None = None,
    extra: list[str] | None = None,
    env_extra: dict | None = None,
) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), GOMAXPROCS=str(threads), MKL_NUM_THREADS=str(threads))
    env.update(env_extra or {})
    cmd = (
        [
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
        ]
        + (["--params", params] if params else [])
        + (extra or [])
    )
    # the child's stderr shown as it comes (a ResNet runs for tens of minutes), its last lines kept for an error
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(work))
    tail: list[str] = []

    def relay() -> None:
        for ln in p.stderr:
            sys.stderr.write(ln)
            tail[:] = (tail + [ln.rstrip()])[-3:]

    relaying = threading.Thread(target=relay, daemon=True)
    relaying.start()
    out = p.stdout.read()
    p.wait()
    relaying.join()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": f"exit {p.returncode}: " + " | ".join((out.strip().splitlines() + tail)[-3:])}
    return json.loads(lines[-1])


def run_orion_split(
    python: str, work: pathlib.Path, name: str, threads: int, images: int, files_root: str | None, gomemlimit: str
) -> dict:
    """Orion in two processes with its HDF5 offload (ORION_SPLIT): compile and write, then read and run; one record of
    both, with each process's peak memory. The files (tens of GB, useless without this run's secret key) are removed
    after."""
    files = pathlib.Path(tempfile.mkdtemp(prefix=f"orion-{name}-", dir=files_root or work))

    def stage(mode: str) -> dict:
        extra = ["--orion-stage", mode, "--orion-files", str(files)]
        return run_child(
            python, "orion", work, name, threads, images, extra=extra, env_extra={"GOMEMLIMIT": gomemlimit}
        )

    try:
        progress(f"orion {name}: compile, io_mode save (files in {files}) ...")
        first = stage("save")
        if "error" in first:
            return {"error": "compile process (io_mode save): " + first["error"]}
        progress(f"orion {name}: inference, io_mode load ...")
        second = stage("load")
        if "error" in second:
            return {
                "error": "inference process (io_mode load): " + second["error"],
                "compile_s": first["compile_s"],
                "compile_peak_gb": first["peak_gb"],
                "bootstraps": first["bootstraps"],
            }
    finally:
        shutil.rmtree(files, ignore_errors=True)
    return {
        **second,
        # compile: the first process's orion.compile (its rotation keys made and written in it: rotation_keygen_s);
        # keys: its secret, public and relinearisation keys, and one bootstrapper of each slot count in the second
        "compile_s": first["compile_s"],
        "keygen_s": first["keygen_s"] + second["boot_keygen_s"],
        "rotation_keygen_s": first["rotation_keygen_s"],
        "bootstraps": first["bootstraps"],
        "bootstrapper_slots": first["bootstrapper_slots"],
        "diagonals_file_gb": first["diagonals_file_gb"],
        "keys_file_gb": first["keys_file_gb"],
        "compile_peak_gb": first["peak_gb"],
        "inference_peak_gb": second["peak_gb"],
        "peak_gb": max(first["peak_gb"], second["peak_gb"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--models", nargs="+", default=["MLP", "LoLA", "LeNet5"], choices=[*ORION_CONFIG, *KASOKU_ONLY, *TRAINED]
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--images", type=int, default=5, help="test images per network and library")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--orion-python", help="the interpreter of a venv with orion-fhe (none: kasoku only)")
    ap.add_argument("--libs", nargs="+", default=["kasoku", "orion"], choices=["kasoku", "orion"])
    ap.add_argument("--all-digits", action="store_true", help="kasoku on all 360 test images (decisions and errors)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="kasoku's device (Orion runs on the CPU)")
    ap.add_argument("--params", help="kasoku's parameters by name (default: chosen by kasoku.nn.compile)")
    ap.add_argument(
        "--orion-work", help="where Orion's HDF5 files go for the ResNets (default: the run's temporary folder)"
    )
    ap.add_argument(
        "--orion-gomemlimit",
        default="16GiB",
        help="GOMEMLIMIT of Orion's two processes for the ResNets: Go's collector at work before the machine is full",
    )
    ap.add_argument(
        "--first-image", type=int, default=0, help="kasoku's first test image (a run that goes on where one stopped)"
    )
    ap.add_argument(
        "--data", help="keep the networks' weights and data in this folder; weights already there are not trained again"
    )
    ap.add_argument("--out", help="append the JSON lines here too")
    ap.add_argument("--child", choices=["kasoku", "orion"], help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--orion-stage", choices=["save", "load"], help=argparse.SUPPRESS)
    ap.add_argument("--orion-files", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.child == "kasoku":
            rec = child_kasoku(
                pathlib.Path(a.work), a.models[0], a.threads, a.images, a.device, a.params, a.first_image
            )
        else:
            rec = child_orion(pathlib.Path(a.work), a.models[0], a.threads, a.images, a.orion_stage, a.orion_files)
        harness.emit(rec)  # the line the parent reads
        return 0

    cpu = harness.machine()
    progress(f"{cpu}, {a.threads} thread(s)")
    images = 360 if a.all_digits else a.images
    failed = False
    with contextlib.ExitStack() as stack:
        if a.data:
            work = pathlib.Path(a.data).resolve()
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kasoku-nn-")))
        train_all(work, a.models, a.epochs)
        for name in a.models:
            libs = [("kasoku", sys.executable)] if "kasoku" in a.libs else []
            if a.orion_python and not a.all_digits and "orion" in a.libs and name in ORION_CONFIG:
                libs.append(("orion", os.path.abspath(a.orion_python)))
            for lib, python in libs:
                progress(f"{lib} {name} ...")
                if lib == "orion" and name in ORION_SPLIT:
                    got = run_orion_split(python, work, name, a.threads, images, a.orion_work, a.orion_gomemlimit)
                else:
                    got = run_child(
                        python,
                        lib,
                        work,
                        name,
                        a.threads,
                        images,
                        *((a.device, a.params) if lib == "kasoku" else ()),
                        extra=["--first-image", str(a.first_image)] if lib == "kasoku" else None,
                    )
                rec = {"lib": lib, "model": name, "threads": a.threads, "cpu": cpu, **got}
                failed |= "error" in rec
                harness.emit(rec, a.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
