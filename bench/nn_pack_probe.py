#!/usr/bin/env python3
"""Where a large network's compile spends memory before its parameters are chosen: kasoku.nn.compile traced, probed
and packed (packing.pack_affine keeps each step's diagonals' offsets, never their values), then stopped at the
calibration check that follows. One line per affine step: its name, the weights' shape and nonzeros, the input and
output periods, the packing chosen, the diagonals of each input (the first, then those its other inputs, a residual
join's, read onto the first's output slots), seconds, and the process's peak resident GB so far; then the total.

    bench/.venv-tv/bin/python bench/nn_pack_probe.py mobilenet_v2      # torchvision's models (nn_torchvision.build)
"""

from __future__ import annotations

import resource
import sys
import time

import kasoku.nn.compiler as compiler
from nn_torchvision import build

_pack_affine = compiler.pack_affine


class _Packed(Exception):
    """Raised where compile would start its calibration check: everything before it has run."""


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _packed(step, slots, zero) -> None:
    """packing.pack_affine, timed and reported."""
    t = time.perf_counter()
    _pack_affine(step, slots, zero)
    W = step.Ws[0]
    print(
        step.name[:60], W.shape, W.nnz, step.p_in, step.p_out, step.mode, [len(o) for o in step.offsets],
        f"{time.perf_counter() - t:.1f} s", f"{_peak_gb():.2f} GB", flush=True,
    )  # fmt: skip


def _stop(*args, **kwargs):
    raise _Packed


def main() -> int:
    name = sys.argv[1] if len(sys.argv) > 1 else "mobilenet_v2"
    compiler.pack_affine, compiler._clear_check = _packed, _stop
    net, x_cal, x_test = build(name)
    t = time.perf_counter()
    try:
        compiler.compile(net, x_test[:1], calibration=x_cal, threads=1, max_encoded_bytes=0)
    except _Packed:
        pass
    print(f"{name}: traced, probed and packed in {time.perf_counter() - t:.0f} s, peak {_peak_gb():.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
