"""The networks bench/nn_peers.py runs and their data: Orion's configs for each, the CIFAR-shaped and trained
ones, training in the clear (examples/nn/models.py), and what both libraries' children record (timings, errors, peak
memory)."""

from __future__ import annotations

import pathlib
import resource
import subprocess
import sys
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
    """The process's peak resident memory in GB (10^9 bytes; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def errors(got, want) -> dict:
    import numpy as np

    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    err = np.abs(got - want)
    top2 = np.sort(want, axis=1)[:, -2:]
    return {
        "logit_max_err": float(err.max()),
        "logit_mean_err": float(err.mean()),
        "logit_range": float(want.max() - want.min()),  # of the clear model's logits over the images
        "argmax_agree": int((got.argmax(1) == want.argmax(1)).sum()),
        "images": int(len(got)),
        # each image's gap between the clear model's two largest logits: a decision an error of that size can flip
        "clear_margins": (top2[:, 1] - top2[:, 0]).tolist(),
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


def data_file(name: str) -> str:
    return "digits32.pt" if name in TRAINED else "cifar-shaped.pt" if name in CIFAR_SHAPED else "data.pt"


def load_trained(work: pathlib.Path, name: str):
    """The network train_all left in `work` (its examples/nn/models.py class with the saved weights, in eval mode)
    and its data (x_cal, x_test, ...)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from examples.nn import models

    net = getattr(models, TRAINED.get(name, name))()
    net.load_state_dict(torch.load(work / f"{name}.pt"))
    return net.eval(), torch.load(work / data_file(name))


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
