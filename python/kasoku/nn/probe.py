"""The weights of an affine part of the graph, found by running it in float64 on probes: unit vectors, or spaced
groups of a feature map's inputs (three probes a group), kept sparse."""

from __future__ import annotations

import numpy as np

import kasoku as ks

from .ir import Affine, SparseMatrix
from .trace import run_nodes


_PROBE_NONZEROS = 1 << 26  # the most weights (nonzeros) of an affine part probe_affine derives: 1.5 GB of triples
_PROBE_VALUES = 1 << 24  # values of one probe batch's widest tensor (128 MB in float64)
_PROBE_UNITS = 4096  # inputs up to this size are probed by unit vectors; larger feature maps by spaced groups first


def probe_affine(torch, gm, region, ins, ex, name) -> Affine:
    """y = sum_k W_k x_k + b of an affine region, found by running it in float64 on 0 and on probes of each input (the
    first input: the one with the most weights). A feature map (C, H, W, ...) larger than _PROBE_UNITS values is probed
    by groups: the inputs of one channel at positions congruent modulo a spacing s (s = 3, 5, 9, ...), all at once, then
    weighted by each coordinate + 1, which names the one input of the group an output reads (3 probes per group, C s^2
    groups: 432 probes for ResNet-20's 16 x 32 x 32 instead of 16384). The result is checked on random inputs; a
    spacing too small for the layer (two inputs of a group read by one output) fails the check and the next is tried,
    unit vectors last."""
    shapes = [tuple(ex[m].shape[1:]) for m in ins]
    dims = [int(np.prod(sh)) for sh in shapes]
    out_dim = int(np.prod(tuple(ex[region[-1]].shape[1:])))
    widest = max(
        [out_dim] + dims + [int(np.prod(tuple(ex[n].shape[1:]))) for n in region if isinstance(ex.get(n), torch.Tensor)]
    )
    batch = max(1, _PROBE_VALUES // widest)
    zeros = {m: torch.zeros(1, *sh, dtype=torch.float64) for m, sh in zip(ins, shapes)}
    b = run_nodes(torch, gm, region, zeros)[region[-1]].reshape(-1).numpy().copy()
    Ws = []
    for m, sh, d in zip(ins, shapes, dims):

        def linear(X: np.ndarray, m=m, sh=sh) -> np.ndarray:
            """The region's linear part on the rows of X (values of input m; the other inputs 0)."""
            out = []
            for start in range(0, len(X), batch):
                n = min(batch, len(X) - start)
                env = {k: torch.zeros(n, *s2, dtype=torch.float64) for k, s2 in zip(ins, shapes)}
                env[m] = torch.from_numpy(np.ascontiguousarray(X[start : start + n])).reshape(n, *sh)
                out.append(run_nodes(torch, gm, region, env)[region[-1]].reshape(n, -1).numpy() - b)
            return np.concatenate(out)

        W = None
        if len(sh) >= 2 and d > _PROBE_UNITS:
            for spacing in (3, 5, 9, 17, 33):
                if spacing >= max(sh[1:]):
                    break
                W = probe_groups(linear, sh, spacing, out_dim)
                if W is not None:
                    r = np.random.default_rng(0).standard_normal((2, d))
                    want = linear(r)
                    got = np.stack([W @ v for v in r])
                    bound = np.stack([SparseMatrix(W.shape, W.rows, W.cols, np.abs(W.values)) @ np.abs(v) for v in r])
                    if np.all(np.abs(got - want) <= 1e-9 * (bound + np.abs(want)) + 1e-300):
                        break
                    W = None
        if W is None:
            W = _probe_units(linear, d, out_dim, batch)
        if W is None or W.nnz > _PROBE_NONZEROS:
            raise ks.ParameterError(
                f"layer {name}: an affine part from {d} to {out_dim} values with more than {_PROBE_NONZEROS} "
                "weights (a dense layer that wide, or a convolution over that many channels); kasoku.nn holds "
                "at most that many: use a smaller layer or fewer channels"
            )
        Ws.append(W)
    order = sorted(range(len(ins)), key=lambda k: -Ws[k].nnz)
    step = Affine(name, [], 0, [Ws[k] for k in order], b, [], 0)
    ins[:] = [ins[k] for k in order]
    return step


def _probe_units(linear, d: int, out_dim: int, batch: int) -> SparseMatrix | None:
    """The matrix from the region on each unit vector, a batch at a time, keeping the nonzeros (None past
    _PROBE_NONZEROS of them)."""
    rows, cols, vals, total = [], [], [], 0
    for start in range(0, d, batch):
        n = min(batch, d - start)
        unit = np.zeros((n, d))
        unit[np.arange(n), start + np.arange(n)] = 1.0
        out = linear(unit)
        i, o = np.nonzero(out)
        total += len(i)
        if total > _PROBE_NONZEROS:
            return None
        rows.append(o)
        cols.append(start + i)
        vals.append(out[i, o])
    return SparseMatrix((out_dim, d), np.concatenate(rows), np.concatenate(cols), np.concatenate(vals))


def probe_groups(linear, shape: tuple, spacing: int, out_dim: int) -> SparseMatrix | None:
    """The matrix of a feature map's region from grouped probes (see probe_affine), or None where an output's responses
    do not name one input of a group (two of its inputs in one group: the spacing is too small)."""
    d = int(np.prod(shape))
    coords = np.unravel_index(np.arange(d), shape)  # channel, then the positions
    spatial = coords[1:]
    key = coords[0]
    for c in spatial:
        key = key * spacing + c % spacing
    groups = np.unique(key)
    k = 1 + len(spatial)  # probes per group: the group, then weighted by each coordinate + 1
    X = np.zeros((len(groups) * k, d))
    g = np.searchsorted(groups, key)
    X[g * k, np.arange(d)] = 1.0
    for j, c in enumerate(spatial):
        X[g * k + 1 + j, np.arange(d)] = c + 1.0
    R = linear(X).reshape(len(groups), k, out_dim)
    base = R[:, 0]
    gi, o = np.nonzero(base)
    if np.count_nonzero(R[:, 1:]) != len(gi) * len(spatial):  # a coordinate probe answers where the group does not
        return None
    pos = []
    for j, c in enumerate(spatial):
        ratio = R[gi, 1 + j, o] / base[gi, o] - 1.0
        p = np.rint(ratio)
        if np.any(np.abs(ratio - p) > 1e-6) or np.any(p < 0) or np.any(p >= shape[1 + j]):
            return None
        pos.append(p.astype(np.int64))
    # the one input of group gi at those positions: its channel and residues are the group's
    first = np.zeros(len(groups), dtype=np.int64)
    first[g[::-1]] = np.arange(d)[::-1]  # an input of each group: its channel
    col = np.ravel_multi_index((coords[0][first[gi]], *pos), shape)
    if np.any(key[col] != groups[gi]):
        return None
    return SparseMatrix((out_dim, d), o, col, base[gi, o])
