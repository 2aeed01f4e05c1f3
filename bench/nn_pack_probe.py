#!/usr/bin/env python3
"""Where a large network's compile spends memory before its parameters are chosen: kasoku.nn.compile traced, probed
and packed, each affine step's packing counted (its diagonals' offsets only, as compile keeps them), and compile
stopped at the calibration check that follows. One line per affine step: its name, the weights' shape and nonzeros,
the input and output periods, the diagonals of the hybrid and the layout packing (None: no layout), the packing
chosen, the diagonals of its other inputs (a residual join's, read onto the first's output slots), seconds, and the
process's peak resident GB so far; then the total.

    bench/.venv-tv/bin/python bench/nn_pack_probe.py mobilenet_v2      # torchvision's models (nn_torchvision.build)
"""

from __future__ import annotations

import math
import resource
import sys
import time

import numpy as np

import kasoku.nn.compiler as compiler
import kasoku.nn.packing as packing
from nn_torchvision import build


class _Packed(Exception):
    """Raised where compile would start its calibration check: everything before it has run."""


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _count(step, slots, zero) -> None:
    """packing.pack_affine's choice between the two packings, from their diagonals' offsets alone."""
    t = time.perf_counter()
    W, lay_in = step.Ws[0], step.layouts_in[0]
    out, p_out, hybrid, sums = packing._hybrid(W, lay_in, step.p_in, build=False)
    lay = packing._layout(W, lay_in, step.p_in, slots, zero)
    n_lay = None if lay is None else len(lay[2])
    if lay is not None and (2 * math.sqrt(n_lay), n_lay) < (2 * math.sqrt(len(hybrid)) + len(sums), len(hybrid)):
        step.layout_out, step.p_out, first = lay
        step.sums, step.mode = [], "layout"
    else:
        step.layout_out, step.p_out, step.sums, step.mode, first = out, p_out, sums, "hybrid", hybrid
    length = max(step.p_out, step.p_in)
    others = [_offsets(Wk, lk, step.p_in, step.layout_out, length) for Wk, lk in zip(step.Ws[1:], step.layouts_in[1:])]
    step.offsets, step.diags = [sorted(first)] + others, None
    step.count = sum(len(o) for o in step.offsets)
    print(
        step.name[:60], W.shape, W.nnz, step.p_in, step.p_out, len(hybrid), n_lay, step.mode,
        [len(o) for o in others], f"{time.perf_counter() - t:.1f} s", f"{_peak_gb():.2f} GB", flush=True,
    )  # fmt: skip


def _offsets(W, layout_in, p_in, out_slot, length) -> list:
    """The offsets of packing._onto's diagonals with a nonzero value, from the weights alone (no dense diagonal)."""
    rows, cols, vals = W.nonzero()
    r = (layout_in[cols] - out_slot[rows]) % p_in
    key = r.astype(np.int64) * length + out_slot[rows] % length
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.bincount(inv, weights=vals, minlength=len(uniq))
    return np.unique(uniq[sums != 0] // length).tolist()


def _stop(*args, **kwargs):
    raise _Packed


def main() -> int:
    name = sys.argv[1] if len(sys.argv) > 1 else "mobilenet_v2"
    compiler.pack_affine, compiler._clear_check = _count, _stop
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
