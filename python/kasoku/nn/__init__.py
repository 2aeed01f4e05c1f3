"""kasoku.nn: encrypted inference of PyTorch models (docs/NN.md).

    import kasoku.nn as ksnn
    plan = ksnn.compile(model, example_input, calibration=train_batch)  # traces, packs, chooses parameters
    print(plan)                                                           # layers, levels, rotations, keys
    keys = plan.keygen()                                                  # client: secret, public, evaluation keys
    ct = plan.encrypt(x)                                                  # client: one sample like example_input
    out = plan.run(ct)                                                    # server: evaluation keys only
    logits = plan.decrypt(out)                                            # client

The model is traced with torch.fx. The affine parts of its graph (Linear, Conv1d/2d with any stride, padding and
groups, BatchNorm in eval mode, AvgPool, AdaptiveAvgPool, Flatten, reshapes, constant scalings and shifts, residual
additions, concatenations) become one map each of the activations they read, found by probing with unit vectors in
float64, so BatchNorm folds into its neighbours for free; each costs one level. Activations: x^2 (and x * x, x ** 2)
exactly, one level; kasoku.nn.Polynomial as written; SiLU, GELU, sigmoid, tanh and softplus by Chebyshev
interpolation on the range the calibration data shows them (with a margin); ReLU by composed sign polynomials.
Bootstraps are placed where the levels run out. PyTorch is needed to compile (pip install 'kasoku[nn]').
"""

from __future__ import annotations

import copy
import io
import json
import math
import operator
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import kasoku as ks

__all__ = ["compile", "load", "CompiledModel", "Polynomial", "Square"]


def _torch():
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:  # pragma: no cover - the CI venv has torch
        raise ks.ParameterError("kasoku.nn.compile needs PyTorch: pip install 'kasoku[nn]' (or torch)") from e
    return torch


try:  # the activation modules of this package, when PyTorch is there
    import torch as _t

    class Square(_t.nn.Module):
        """x^2, the activation CKKS evaluates exactly in one level."""

        def forward(self, x):
            """x * x, element by element."""
            return x * x

    class Polynomial(_t.nn.Module):
        """sum_i coeffs[i] x^i, evaluated as written (power basis) on the encrypted values."""

        def __init__(self, coeffs):
            super().__init__()
            self.coeffs = [float(c) for c in coeffs]

        def forward(self, x):
            """The polynomial at every element of x (Horner)."""
            out = _t.zeros_like(x)
            for c in reversed(self.coeffs):
                out = out * x + c
            return out
except ImportError:  # pragma: no cover
    Square = Polynomial = None  # type: ignore[assignment,misc]


# ---------------------------------------------------------------- the steps of a plan


@dataclass
class Affine:
    """y = sum_k W_k x_k + b on flattened tensors (a run of affine layers; several inputs where branches join: a
    residual addition, a concatenation). Input k arrives in slots: its index i at slot layouts_in[k][i] of a vector of
    period p_in (the largest input period; the others divide it); other slots hold anything, read with zero weights.
    The first input (the one with the most weights) chooses the output's slots, the cheaper of two packings:
      "hybrid": y[o] at slot o, period p_out = the power of two above d_out; the rows repeat every p_out slots and the
        p_out diagonals of the (p_out x p_in) matrix each read a different column block, then a rotate-and-sum over the
        p_in / p_out blocks adds them up (Juvekar et al., GAZELLE);
      "layout": y[o] at a slot chosen so that outputs that read the same pattern of inputs (a convolution's channel,
        all its positions) share their diagonals: out slot = the first input slot it reads + one shift per pattern,
        so a k x k convolution costs about k^2 x (output channels) diagonals instead of the period. The next layer
        reads the outputs where they are (the activations work slot-wise), and decryption reads the logits there.
    The other inputs are read onto those slots (their diagonals put each row in the first block, which the
    rotate-and-sum spreads)."""

    name: str
    inputs: list[int]  # value ids
    output: int
    Ws: list[_SparseMatrix]
    b: np.ndarray
    layouts_in: list[np.ndarray]
    p_in: int
    layout_out: Any = None  # np.ndarray once packed
    p_out: int = 0
    mode: str = "hybrid"
    diags: Any = None  # per input: offset -> values over one period (None: rebuilt from Ws at use, see _encode)
    sums: list[int] = field(default_factory=list)  # rotations of the rotate-and-sum (hybrid, shrinking)
    level: int = 0
    lts: Any = None  # ks.LinearTransform per input (None: encoded at each use, see _encode)
    plans: Any = None  # per input: (baby steps, giant steps, Galois elements, baby) of its transform
    count: int = 0  # diagonals, all inputs
    bias: np.ndarray | None = None  # b at its slots, tiled to the slots

    @property
    def depth(self) -> int:
        return 1

    @property
    def d_in(self) -> int:
        return sum(W.shape[1] for W in self.Ws)

    def describe(self) -> str:
        rot = ""
        if self.plans is not None:
            baby = sum(len(pl[0]) for pl in self.plans)
            giant = sum(len(pl[1]) for pl in self.plans)
            rot = f", {baby} baby + {giant} giant rotations" + ("" if self.lts is not None else ", encoded at use")
        sums = f" + {len(self.sums)} rotate-and-sum" if self.sums else ""
        ins = f"{len(self.Ws)} inputs, " if len(self.Ws) > 1 else ""
        return (
            f"affine {self.d_in} -> {self.Ws[0].shape[0]} ({self.name}): {ins}{self.mode} packing, period "
            f"{self.p_in} -> {self.p_out}, {self.count or sum(len(d) for d in self.diags)} diagonals{rot}{sums}, level "
            f"{self.level} -> {self.level - 1}"
        )

    def forward(self, xs: list[np.ndarray]) -> np.ndarray:
        return sum(W @ x for W, x in zip(self.Ws, xs)) + self.b


def _hybrid(W: _SparseMatrix, layout_in: np.ndarray, p_in: int, build: bool = True):
    """The hybrid packing: output slots 0..d_out-1, its diagonals (only their offsets unless `build`) and
    rotate-and-sum steps. Diagonal r < p holds, at slot s, the weight of output s mod p on the input at slot
    (s + r) mod q (the p_out x p_in matrix's rows repeated every p slots)."""
    d_out = W.shape[0]
    p = _pow2(d_out)
    q = max(p, p_in)
    rows, cols, vals = W.nonzero()
    c = layout_in[cols]
    r = (c - rows) % p  # each weight on the one diagonal r < p that meets its input slot c in the block of s
    s = (c - r) % q
    sums = [p << i for i in range(int(math.log2(q // p)))]
    if not build:
        return np.arange(d_out), p, dict.fromkeys(np.unique(r).tolist()), sums
    return np.arange(d_out), p, _diagonals(r, s, vals, q), sums


def _diagonals(offsets: np.ndarray, slots: np.ndarray, values: np.ndarray, length: int) -> dict:
    """{offset: the diagonal over `length` slots}, the values summed at their (offset, slot)."""
    order = np.argsort(offsets, kind="stable")
    offsets, slots, values = offsets[order], slots[order], values[order]
    uniq, starts = np.unique(offsets, return_index=True)
    diags = {}
    for r, a, b in zip(uniq.tolist(), starts, list(starts[1:]) + [len(offsets)]):
        d = np.zeros(length)
        np.add.at(d, slots[a:b], values[a:b])
        diags[int(r)] = d
    return diags


def _layout(W: _SparseMatrix, layout_in: np.ndarray, p_in: int, limit: int, zero: np.ndarray):
    """The layout packing, or None when the outputs share no pattern (a dense layer: the hybrid packing is cheaper).
    zero[s]: slot s of the input is known to hold 0 (no value is packed there and the steps before keep it 0)."""
    d_out = W.shape[0]
    rows, cols, _ = W.nonzero()
    starts = W.row_starts()  # the entries are sorted by row
    slots_of = [np.sort(layout_in[cols[starts[o] : starts[o + 1]]]) for o in range(d_out)]
    anchor = np.array([s[0] if s.size else 0 for s in slots_of])
    pattern_of = [tuple((s - s[0]).tolist()) if s.size else () for s in slots_of]
    distinct = sorted(set(pattern_of), key=len, reverse=True)
    if len(distinct) * 4 > d_out:
        return None
    # An output reading part of a larger pattern (a padded convolution's border) reads the larger one's diagonals, with
    # zero weights where its inputs are missing: it joins the larger pattern, its anchor moved back by its place in it.
    # Of the places it fits, the one whose missing inputs fall most on slots known to be 0 (the padding: the right one).
    roots: list[tuple] = []
    fits: dict[tuple, list] = {}  # pattern -> [(root, t, the root's offsets it lacks there)]
    for pat in distinct:
        pat_set = set(pat)
        fits[pat] = []
        for big in roots:
            if len(pat) >= len(big) or not pat:
                continue
            big_set = set(big)
            for t in (q - pat[0] for q in big):
                if all(v + t in big_set for v in pat):
                    fits[pat].append((big, t, np.array([q for q in big if q - t not in pat_set])))
        if not fits[pat]:
            roots.append(pat)
    canon, shift_back = [], np.zeros(d_out, dtype=np.int64)
    for o in range(d_out):
        pat = pattern_of[o]
        root, best = pat, None
        for big, t, missing in fits.get(pat, []):
            misses = int(np.count_nonzero(~zero[(anchor[o] - t + missing) % p_in]))
            if best is None or misses < best:
                root, shift_back[o], best = big, t, misses
        canon.append(root)
    virtual = anchor - shift_back
    # outputs of one pattern, the k-th of each anchor in the k-th group (a convolution's k-th channel)
    groups: dict[tuple, list[int]] = {}
    seen: dict[tuple, int] = {}
    for o in range(d_out):
        key = (canon[o], int(virtual[o]))
        k = seen.get(key, 0)
        seen[key] = k + 1
        groups.setdefault((key[0], k), []).append(o)
    if len(groups) * 4 > d_out:
        return None
    order = sorted(groups.items(), key=lambda kv: -len(kv[1]))

    def correlate(x, marks):  # c[s] = sum_i x[(marks_i + s) mod len(x)], for every s at once (FFT)
        ind = np.zeros(len(x))
        np.add.at(ind, marks % len(x), 1.0)
        return np.rint(np.fft.irfft(np.fft.rfft(x) * np.conj(np.fft.rfft(ind)), len(x)))

    def place(limit: int, fewest: bool):
        """Each group at the first free shift inside `limit` slots, or (fewest) at the free shift that adds the fewest
        diagonals to those of the groups placed before it, the first among equals: an output at virtual + shift reads
        virtual + root, so its offsets are root - shift, and channels whose inputs sit alike (a convolution after a
        convolution) share diagonals. None when a group finds no room."""
        out_slot = np.zeros(d_out, dtype=np.int64)
        used, present = np.zeros(limit), np.zeros(p_in)
        group_of = np.zeros(d_out, dtype=np.int64)
        for g, (_, outs) in enumerate(order):
            group_of[outs] = g
        entry_group = group_of[rows]
        for g, ((root, _), outs) in enumerate(order):
            a = virtual[outs]
            shifts = np.arange(-int(a.min()), limit - int(a.max()))  # those that keep the group inside
            if shifts.size == 0:
                return None
            free = np.flatnonzero(correlate(used, a)[shifts % limit] == 0)
            if free.size == 0:
                return None
            pick = free[0]
            if fewest and root and present.any():
                shared = correlate(present, np.asarray(root, dtype=np.int64))[(-shifts[free]) % p_in]
                pick = free[np.argmax(shared)]
            out_slot[outs] = a + shifts[pick]
            used[out_slot[outs]] = 1.0
            if fewest:
                mine = entry_group == g
                present[(layout_in[cols[mine]] - out_slot[rows[mine]]) % p_in] = 1.0
        return out_slot

    first = place(limit, False)
    if first is None:
        return None
    # the fewest diagonals within the period of the first-free placement (never a wider one: the ring depends on it)
    fewer = place(max(p_in, _pow2(int(first.max()) + 1)), True)
    out_slot = first if fewer is None else fewer
    p_out = max(p_in, _pow2(int(out_slot.max()) + 1))
    return out_slot, p_out, _onto(W, layout_in, p_in, out_slot, p_out)


def _pack_affine(step: Affine, slots: int, zero: np.ndarray) -> None:
    """Chooses the first input's packing with fewer rotations (about 2 sqrt(diagonals) for the BSGS, plus the
    rotate-and-sum), then reads the other inputs onto its output slots."""
    W, lay_in = step.Ws[0], step.layouts_in[0]
    out, p_out, diags, sums = _hybrid(W, lay_in, step.p_in, build=False)
    best = (2 * math.sqrt(len(diags)) + len(sums), len(diags))
    lay = _layout(W, lay_in, step.p_in, slots, zero)
    if lay is not None and (2 * math.sqrt(len(lay[2])), len(lay[2])) < best:
        step.layout_out, step.p_out, first = lay
        step.sums, step.mode = [], "layout"
    else:
        step.layout_out, step.p_out, first, step.sums = _hybrid(W, lay_in, step.p_in)
        step.mode = "hybrid"
    length = max(step.p_out, step.p_in)  # the period of the transforms' results (before the rotate-and-sum)
    step.diags = [first] + [
        _onto(Wk, lk, step.p_in, step.layout_out, length) for Wk, lk in zip(step.Ws[1:], step.layouts_in[1:])
    ]


def _onto(W: _SparseMatrix, layout_in: np.ndarray, p_in: int, out_slot: np.ndarray, length: int) -> dict:
    """The diagonals that put W x (x at layout_in, period p_in) at the given output slots of a vector of `length`."""
    rows, cols, vals = W.nonzero()
    return _diagonals((layout_in[cols] - out_slot[rows]) % p_in, out_slot[rows], vals, length)


@dataclass
class Activation:
    """A slot-wise polynomial: x^2 exactly, or the Chebyshev interpolant of a function on an interval."""

    name: str
    kind: str  # "square", "chebyshev", "power" (a user polynomial) or "sign" (f_3 on a held value, no units)
    fn: Any = None  # numpy function (chebyshev)
    interval: tuple[float, float] = (-1.0, 1.0)
    degree: int = 2
    poly: Any = None  # ks.Polynomial
    level: int = 0
    input: int = 0  # value ids
    output: int = 0
    s_in: float = 1.0  # the input's unit: the interval in the model's units is interval * s_in
    coeffs: Any = None  # a user polynomial's, in the model's units

    @property
    def inputs(self) -> list[int]:
        return [self.input]

    @property
    def depth(self) -> int:
        return 1 if self.kind == "square" else self.poly.depth

    def describe(self) -> str:
        if self.kind == "square":
            what = "x^2"
        elif self.kind == "power":
            what = f"polynomial of degree {self.poly.degree}"
        elif self.kind == "sign":
            what = "f_3 (a sign step)"
        else:
            lo, hi = self.interval[0] * self.s_in, self.interval[1] * self.s_in
            what = f"Chebyshev degree {self.poly.degree} on [{lo:.3g}, {hi:.3g}]"
        return f"{self.name}: {what}, level {self.level} -> {self.level - self.depth}"

    def forward(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "square":
            return x * x
        return np.real(np.asarray(self.poly(x.astype(complex))))


@dataclass
class Bootstrap:
    """A held value refreshed to the top user level (placed where the next step would need more levels than it has)."""

    name: str
    input: int
    level: int = 0
    depth = 0

    @property
    def inputs(self) -> list[int]:
        return [self.input]

    @property
    def output(self) -> int:
        return self.input

    def describe(self) -> str:
        return f"{self.name}: level {self.level} -> the top"

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x


# Cheon, Kim and Kim's f_3 (ks.Evaluator.sign composes it): on [-1, 1] each application pushes |x| >= eps toward 1.
_F3 = [0.0, 35 / 16, 0.0, -35 / 16, 0.0, 21 / 16, 0.0, -5 / 16]


@dataclass
class ReluJoin:
    """The end of a ReLU: u + u s for u the input (held divided by its unit, in [-1, 1]) and s its sign (f_3
    composed): 2 relu(u) where abs(u) >= eps, held with half the input's unit. One level (a product)."""

    name: str
    inputs: list[int]  # [u, s]
    output: int
    level: int = 0
    depth = 1

    def describe(self) -> str:
        return f"{self.name}: u (1 + sign u), level {self.level} -> {self.level - 1}"

    def forward(self, xs: list[np.ndarray]) -> np.ndarray:
        return xs[0] + xs[0] * xs[1]


def _unit(peak: float) -> float:
    """The power of two at or above a value's peak: the plan holds every value divided by it, in [-1, 1]."""
    return 2.0 ** math.ceil(math.log2(peak)) if peak > 0 else 1.0


# ---------------------------------------------------------------- tracing


_SMOOTH = {
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0),
}


def _classify(torch, node, modules):
    """'affine', 'square', ('smooth', name), ('power', coeffs) or ('unsupported', why) for a node of the graph."""
    nn, F = torch.nn, torch.nn.functional
    args = [a for a in node.args if isinstance(a, torch.fx.Node)]
    if node.op == "call_module":
        m = modules[node.target]
        if Square is not None and isinstance(m, Square):
            return "square"
        if Polynomial is not None and isinstance(m, Polynomial):
            return ("power", m.coeffs)
        affine = (
            nn.Linear,
            nn.Conv1d,
            nn.Conv2d,
            nn.BatchNorm1d,
            nn.BatchNorm2d,
            nn.AvgPool1d,
            nn.AvgPool2d,
            nn.AdaptiveAvgPool1d,
            nn.AdaptiveAvgPool2d,
            nn.Flatten,
            nn.Unflatten,
            nn.Identity,
            nn.Dropout,
        )
        if isinstance(m, affine):
            return "affine"
        smooth = {nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.GELU: "gelu", nn.Softplus: "softplus"}
        for t, name in smooth.items():
            if isinstance(m, t):
                return ("smooth", name)
        if type(m) is nn.ReLU:
            return ("relu",)
        if isinstance(m, (nn.ReLU6, nn.LeakyReLU)):
            return (
                "unsupported",
                f"{type(m).__name__} is not built yet: use ReLU, x^2 (kasoku.nn.Square), SiLU, GELU, sigmoid or tanh",
            )
        return ("unsupported", f"layer type {type(m).__name__} is not supported")
    if node.op == "call_function":
        f = node.target
        if f in (operator.mul,) and len(args) == 2 and args[0] is args[1]:
            return "square"
        if f in (torch.square,) or (f in (operator.pow, torch.pow) and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if f in (
            torch.flatten,
            torch.reshape,
            F.avg_pool1d,
            F.avg_pool2d,
            F.adaptive_avg_pool1d,
            F.adaptive_avg_pool2d,
            operator.neg,
            operator.getitem,
        ) or (
            f in (operator.mul, operator.truediv, operator.add, operator.sub, torch.mul, torch.add) and len(args) == 1
        ):
            return "affine"
        smooth = {
            F.silu: "silu",
            torch.sigmoid: "sigmoid",
            F.sigmoid: "sigmoid",
            torch.tanh: "tanh",
            F.tanh: "tanh",
            F.gelu: "gelu",
            F.softplus: "softplus",
        }
        if f in smooth:
            return ("smooth", smooth[f])
        if f in (operator.add, operator.sub, torch.add, torch.sub) and len(args) == 2:
            return "affine"  # a residual connection: affine in both operands
        if f in (torch.cat, torch.concat):
            return "affine"
        if f in (operator.mul, torch.mul) and len(args) == 2:
            return ("unsupported", "products of two different tensors are not supported (only x * x)")
        if f in (torch.relu, F.relu):
            return ("relu",)
        return ("unsupported", f"function {getattr(f, '__name__', f)} is not supported")
    if node.op == "call_method":
        if node.target in ("view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze"):
            return "affine"
        if node.target in ("add", "sub") and len(args) <= 2:
            return "affine"
        if node.target == "square" or (node.target == "pow" and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if node.target in ("sigmoid", "tanh"):
            return ("smooth", node.target)
        if node.target == "relu":
            return ("relu",)
        return ("unsupported", f"method .{node.target}() is not supported")
    return ("unsupported", f"graph node {node.op} {node.target}")


def _name(node, modules) -> str:
    """A layer's name as its model says it: the module's path and type, or the function traced."""
    if node.op == "call_module":
        return f"{node.target} ({type(modules[node.target]).__name__})"
    if node.op == "call_function":
        return f"{node.name} ({getattr(node.target, '__name__', node.target)})"
    return f"{node.name} (.{node.target}())"


def _trace(torch, model):
    """torch.fx's graph of the model, with this package's activations kept as modules (not traced into)."""

    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, (Square, Polynomial)) or super().is_leaf_module(m, qualname)

    return torch.fx.GraphModule(model, Tracer().trace(model))


def _lower_max_pools(torch, gm, x) -> None:
    """Each max-pooling (MaxPool1d/2d, F.max_pool1d/2d) rewritten in the graph as what the plan evaluates: the window's
    elements as strided slices (affine), reduced in pairs by max(a, b) = b + relu(a - b), so that a k x k window costs
    ceil(log2(k^2)) ReLUs one after the other (ReLU's sign steps, levels and precision). Raises ks.ParameterError for
    padding (max-pooling pads with -infinity), dilation, ceil_mode or return_indices."""
    nn, F = torch.nn, torch.nn.functional
    modules = dict(gm.named_modules())
    pools = []
    for n in gm.graph.nodes:
        if n.op == "call_module" and isinstance(modules[n.target], (nn.MaxPool1d, nn.MaxPool2d)):
            m = modules[n.target]
            dims = 1 if isinstance(m, nn.MaxPool1d) else 2
            opts = dict(
                kernel_size=m.kernel_size,
                stride=m.stride,
                padding=m.padding,
                dilation=m.dilation,
                ceil_mode=m.ceil_mode,
                return_indices=m.return_indices,
            )
        elif n.op == "call_function" and n.target in (F.max_pool1d, F.max_pool2d):
            dims = 1 if n.target is F.max_pool1d else 2
            names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
            opts = dict(stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
            opts.update(zip(names, n.args[1:]))
            opts.update(n.kwargs)
        else:
            continue
        pools.append((n, dims, opts))
    if not pools:
        return
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(x[None])
    for n, dims, o in pools:
        tup = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * dims  # noqa: E731
        k = tup(o["kernel_size"])
        s = tup(o["stride"] if o["stride"] not in (None, [], ()) else o["kernel_size"])
        if any(tup(o["padding"])) or any(d != 1 for d in tup(o["dilation"])) or o["ceil_mode"] or o["return_indices"]:
            raise ks.ParameterError(
                f"layer {_name(n, modules)}: max-pooling with padding, dilation, ceil_mode or return_indices is not "
                "built (padding is -infinity, which CKKS cannot hold): pad the input with zeros before it (F.pad), "
                "or pool without them"
            )
        src = n.args[0]
        size = tuple(src.meta["tensor_meta"].shape[-dims:])
        out = [(sz - kk) // ss + 1 for sz, kk, ss in zip(size, k, s)]
        g = gm.graph
        with g.inserting_before(n):
            parts = []
            for offs in np.ndindex(*k):
                index = (Ellipsis,) + tuple(
                    slice(int(i), int(i) + ss * (oo - 1) + 1, ss) for i, ss, oo in zip(offs, s, out)
                )
                parts.append(g.create_node("call_function", operator.getitem, (src, index), name=f"{n.name}_at"))
            while len(parts) > 1:  # max(a, b) = b + relu(a - b), pairwise
                nxt = []
                for a, b in zip(parts[0::2], parts[1::2]):
                    d = g.create_node("call_function", operator.sub, (a, b), name=f"{n.name}_diff")
                    r = g.create_node("call_function", F.relu, (d,), name=f"{n.name}_relu")
                    nxt.append(g.create_node("call_function", operator.add, (b, r), name=f"{n.name}_max"))
                parts = nxt + parts[len(parts) - len(parts) % 2 :]
        n.replace_all_uses_with(parts[0])
        g.erase_node(n)
    gm.graph.lint()
    gm.recompile()


def _tensor_inputs(node) -> list:
    """The graph nodes a node reads its tensors from (constants fetched with get_attr do not count)."""
    return [a for a in node.all_input_nodes if a.op != "get_attr"]


def _run_nodes(torch, gm, nodes, env: dict) -> dict:
    """Runs graph nodes in order on the values of env (node -> tensor) and returns env with theirs added."""
    modules = dict(gm.named_modules())
    env = dict(env)

    def value(n):
        if n.op == "get_attr":
            v = gm
            for part in n.target.split("."):
                v = getattr(v, part)
            return v
        return env[n]

    for node in nodes:
        args = torch.fx.node.map_arg(node.args, value)
        kwargs = torch.fx.node.map_arg(node.kwargs, value)
        if node.op == "call_module":
            env[node] = modules[node.target](*args, **kwargs)
        elif node.op == "call_function":
            env[node] = node.target(*args, **kwargs)
        else:
            env[node] = getattr(args[0], node.target)(*args[1:], **kwargs)
    return env


def _input_layout(shape) -> np.ndarray:
    """The input's slots: an image (..., H, W) with g empty columns after each row and g empty rows after each plane,
    the largest g in 4, 2, 1 that keeps the same power of two of slots: a padded convolution's border then reads zeros
    and shares the diagonals of the inside (see _layout). Other shapes: in order."""
    dim = int(np.prod(shape))
    if len(shape) >= 2:
        h, w = shape[-2:]
        c = dim // (h * w)
        for g in (4, 2, 1):
            if c * (h + g) * (w + g) <= _pow2(dim):
                ci, hi, wi = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
                return (ci * (h + g) * (w + g) + hi * (w + g) + wi).reshape(-1)
    return np.arange(dim)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _degree_for(fn, interval, max_depth: int, tol: float) -> Any:
    """The least 2^d - 1 degree whose Chebyshev interpolant is within tol on the interval (at most 2^max_depth - 1)."""
    a, b = interval
    xs = np.linspace(a, b, 2001)
    for d in range(2, max_depth + 1):
        p = ks.chebyshev(lambda v: fn(np.real(np.asarray(v))), (a, b), (1 << d) - 1)
        if np.max(np.abs(np.real(np.asarray(p(xs.astype(complex)))) - fn(xs))) <= tol:
            return p
    return p


# ---------------------------------------------------------------- the compiled model


class CompiledModel:
    """A model compiled for encrypted inference: its steps, parameters, context, transforms and keys (see compile)."""

    def __init__(
        self,
        steps,
        output,
        in_shape,
        in_layout,
        in_unit,
        out_dim,
        out_layout,
        out_unit,
        params,
        ctx,
        bootstrapper,
        compile_s,
    ):
        self.steps = steps  # in an order where every value is made before it is read; value 0 is the input
        self.output = output  # the value id of the logits
        self.in_shape = tuple(in_shape)
        self.in_dim = int(np.prod(in_shape))
        self.in_layout = np.asarray(in_layout)  # the slot of each input value
        self.in_unit = in_unit  # the input is encrypted divided by it (a power of two: every held value is in [-1, 1])
        self.out_dim = out_dim
        self.out_layout = np.asarray(out_layout)  # the slot of each output value
        self.out_unit = out_unit  # decryption multiplies by it
        self.params = params
        self.ctx = ctx
        self.bootstrapper = bootstrapper  # a ks.Bootstrapper when the plan bootstraps
        self.compile_s = compile_s
        self.keys = None
        self.evaluator = None

    @property
    def depth(self) -> int:
        """The levels the plan takes (between bootstraps, where it has them)."""
        return self.ctx.user_level - min(_levels(self.steps, self.ctx.user_level)[0].values())

    @property
    def bootstraps(self) -> int:
        """Bootstraps one inference runs."""
        return sum(isinstance(s, Bootstrap) for s in self.steps)

    @property
    def p_in(self) -> int:
        """Slots the input occupies: the power of two at or above its size."""
        return _pow2(self.in_dim)

    def galois_elements(self) -> list[int]:
        """The Galois elements of every rotation the plan runs (keygen makes exactly their keys)."""
        g = set()
        for s in self.steps:
            if isinstance(s, Affine):
                for plan in s.plans:
                    g.update(plan[2])
                g.update(self.ctx.galois_element(k) for k in s.sums)
        if self.bootstrapper is not None:
            g.update(self.bootstrapper.galois_elements())
        return sorted(g)

    def __repr__(self) -> str:
        rot = sum(len(pl[0]) + len(pl[1]) for s in self.steps if isinstance(s, Affine) for pl in s.plans)
        rot += sum(len(s.sums) for s in self.steps if isinstance(s, Affine))
        lines = [
            f"CompiledModel({self.in_shape} -> {self.out_dim}; {self.params!r})",
            f"  depth {self.depth} of {self.ctx.user_level} levels, "
            f"{self.bootstraps or 'no'} bootstrap{'s' if self.bootstraps != 1 else ''}; {rot} rotations per "
            f"inference, "
            f"{len(self.galois_elements())} Galois keys; "
            + ("loaded from bytes" if self.compile_s is None else f"compiled in {self.compile_s:.1f} s"),
        ]
        lines += ["  " + s.describe() for s in self.steps]
        return "\n".join(lines)

    # -- client side
    def keygen(self, progress=None):
        """Secret, public, relinearisation and exactly the Galois keys the plan needs (kept by the plan too)."""
        self.keys = self.ctx.keygen(
            galois_elements=self.galois_elements(), bootstrapping=self.bootstrapper or False, progress=progress
        )
        self.evaluator = self.ctx.evaluator(self.keys.evaluation())
        return self.keys

    def pack(self, x) -> np.ndarray:
        """A sample (shaped like the example input, with or without its batch dimension of 1) as slot values."""
        v = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
        if v.size != self.in_dim:
            raise ks.ParameterError(
                f"the input has {v.size} values; the model was compiled for {self.in_dim} "
                f"(shape {self.in_shape}): encrypt one sample at a time"
            )
        out = np.zeros(self.p_in)
        out[self.in_layout] = v / self.in_unit
        return np.tile(out, self.ctx.slots // self.p_in)

    def encrypt(self, x, key=None, check: bool = True):
        """One sample, encrypted (client side). check: first run the plan in the clear on it and refuse an input that
        takes an approximated activation outside the range it was fitted on (its result would be garbage)."""
        if check:
            self.check(x)
        key = key if key is not None else self._keys("encrypt").public
        return self.ctx.encrypt(self.pack(x), key)

    def check(self, x) -> None:
        """Raises ks.ParameterError, naming the layer, when x drives an approximated activation outside its fitted
        interval (the client holds x in the clear; this is the plan's arithmetic without the encryption)."""
        self._clear(self.pack(x)[: self.p_in][self.in_layout], check=True)

    def _clear(self, x: np.ndarray, check: bool) -> np.ndarray:
        vals = {0: x}
        for s in self.steps:
            if check and isinstance(s, Activation) and s.kind == "chebyshev":
                v, (lo, hi) = vals[s.input], s.interval
                if v.min() < lo or v.max() > hi:
                    u = s.s_in
                    raise ks.ParameterError(
                        f"layer {s.name}: this input gives it values in [{u * v.min():.4g}, {u * v.max():.4g}], "
                        f"outside the interval [{u * lo:.4g}, {u * hi:.4g}] fitted on the calibration data, where "
                        "its polynomial is garbage: compile with calibration data that covers such inputs (or a "
                        "larger margin)"
                    )
            ins = [vals[i] for i in s.inputs]
            vals[s.output] = s.forward(ins) if isinstance(s, (Affine, ReluJoin)) else s.forward(ins[0])
        return vals[self.output]

    def decrypt(self, ct, key=None) -> np.ndarray:
        """Client side: the model's outputs (logits) from run's ciphertext, read from the slots the plan put them in,
        with `key` (default: the secret key of keygen)."""
        key = key if key is not None else self._keys("decrypt").secret
        return np.real(self.ctx.decrypt(ct, key))[self.out_layout] * self.out_unit

    def _keys(self, what):
        if self.keys is None:
            raise ks.MissingKeyError(f"{what} needs keys: call plan.keygen() first (or pass key=)")
        return self.keys

    # -- server side
    def use(self, evaluation_keys):
        """Sets the evaluation keys that run() computes with (a server's: keys.evaluation() from the client)."""
        self.evaluator = self.ctx.evaluator(evaluation_keys)

    def check_input(self, ct) -> None:
        """Raises ks.LevelError for a ciphertext below the level the plan reads its input at."""
        if ct.level < self.ctx.user_level:
            raise ks.LevelError(
                f"the model reads its input at level {self.ctx.user_level} or above (plan.encrypt puts it there), this "
                f"ciphertext is at level {ct.level}"
            )

    def run(self, ct, threads=None, evaluator=None):
        """The model on an encrypted sample: the logits, encrypted (evaluation keys only). evaluator: one of the
        plan's context with other evaluation keys than plan.use set (a server holding several clients' keys)."""
        ev = evaluator if evaluator is not None else self.evaluator
        if ev is None:
            raise ks.MissingKeyError("run needs the evaluation keys: plan.keygen() (client) or plan.use(keys) (server)")
        self.check_input(ct)
        last = {}  # value -> the last step that reads it (then it is dropped)
        for k, s in enumerate(self.steps):
            for i in s.inputs:
                last[i] = k
        vals = {0: ct}
        for k, s in enumerate(self.steps):
            ins = [vals[i] for i in s.inputs]
            if isinstance(s, Affine):
                ins = [c if c.level == s.level else ev.drop_level(c, s.level) for c in ins]
                out = None
                for lt, c in zip(s.lts or _transforms(s, self.ctx, threads, at_use=True), ins):
                    y = ev.apply(lt, c, threads=threads)
                    out = y if out is None else ev.add(out, y)
                for r in s.sums:
                    out = ev.add(out, ev.rotate(out, r, threads=threads))
                if s.bias is not None:
                    out = ev.add_plain(out, s.bias)
            elif isinstance(s, Bootstrap):
                out = ev.bootstrap(ins[0], self.bootstrapper, threads=threads)
            elif isinstance(s, ReluJoin):
                prod = ev.multiply(ins[0], ins[1], threads=threads)
                out = ev.add(ev.drop_level(ins[0], prod.level), prod)
            elif s.kind == "square":
                out = ev.square(ins[0], threads=threads)
            else:
                out = ev.evaluate_polynomial(ins[0], s.poly, threads=threads)
            vals[s.output] = out
            for i in s.inputs:
                if last[i] == k and i != self.output:
                    del vals[i]
        return vals[self.output]

    # -- saved and loaded
    def to_bytes(self) -> bytes:
        """The plan as bytes (kasoku.nn.load reads them): parameters, steps, folded weights, diagonals, polynomials and
        layouts; no key and nothing of PyTorch. What a server needs to run the model (the encrypted-compute service
        stores it: POST /v1/models), and what a client needs to encrypt for it and decrypt its logits."""
        meta = {
            "format": _PLAN_VERSION,
            "in_shape": list(self.in_shape),
            "in_unit": self.in_unit,
            "out_dim": self.out_dim,
            "out_unit": self.out_unit,
            "output": self.output,
            "bootstrap_slots": None if self.bootstrapper is None else self.bootstrapper.slots,
            "steps": [],
        }
        arrays = {
            "params": np.frombuffer(self.params.to_bytes(), dtype=np.uint8),
            "in_layout": self.in_layout,
            "out_layout": self.out_layout,
        }
        for i, st in enumerate(self.steps):
            d = {"type": type(st).__name__, "name": st.name, "inputs": list(st.inputs), "level": st.level}
            if isinstance(st, Affine):
                d.update(output=st.output, p_in=st.p_in, p_out=st.p_out, mode=st.mode, sums=list(st.sums))
                arrays[f"{i}.b"], arrays[f"{i}.layout_out"] = st.b, np.asarray(st.layout_out)
                for k, (W, lay, diags) in enumerate(zip(st.Ws, st.layouts_in, _diagonals_of(st))):
                    rows, cols, values = W.nonzero()
                    arrays[f"{i}.W{k}.shape"] = np.array(W.shape, dtype=np.int64)
                    arrays[f"{i}.W{k}.rows"], arrays[f"{i}.W{k}.cols"] = rows, cols
                    arrays[f"{i}.W{k}.values"], arrays[f"{i}.layout_in{k}"] = values, lay
                    arrays[f"{i}.offsets{k}"] = np.array(list(diags), dtype=np.int64)
                    arrays[f"{i}.diags{k}"] = np.array(list(diags.values()), dtype=np.float64)
            elif isinstance(st, Activation):
                d.update(output=st.output, kind=st.kind, degree=st.degree, interval=list(st.interval), s_in=st.s_in)
                if st.poly is not None:
                    d.update(basis=st.poly.basis, poly_interval=list(st.poly.interval))
                    arrays[f"{i}.coeffs"] = np.asarray(st.poly.coeffs, dtype=np.complex128)
            elif isinstance(st, ReluJoin):
                d.update(output=st.output)
            meta["steps"].append(d)
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        return _PLAN_MAGIC + buf.getvalue()

    def forward_clear(self, x) -> np.ndarray:
        """The plan in plain arithmetic (the affine maps and the polynomials it evaluates): what run() computes
        without the encryption's noise."""
        v = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
        return self._clear(v / self.in_unit, check=False) * self.out_unit


_ENCODED_BYTES = 4 << 30  # the most memory a plan's transforms keep encoded; the others are encoded at each use
_PLAN_MAGIC = b"KASOKU-NN-PLAN\n"
_PLAN_VERSION = 1


def load(
    data: bytes, device: str = "cpu", threads=None, max_bytes: int = 4 << 30, max_encoded_bytes: int = _ENCODED_BYTES
) -> CompiledModel:
    """A plan saved by CompiledModel.to_bytes, its transforms encoded for a context of its parameters on `device`
    (PyTorch is not needed). Raises ks.SerializationError, saying what is wrong, for bytes that are not such a plan
    (truncated, corrupted: each part is checked against its CRC, or inconsistent), or whose parts would take more
    than max_bytes once decompressed. The weights stay sparse (row, column, value), as they were saved.
    max_encoded_bytes: as for compile."""
    data = bytes(data)
    if not data.startswith(_PLAN_MAGIC):
        raise ks.SerializationError("these bytes are not a kasoku.nn plan (CompiledModel.to_bytes makes one)")
    body = io.BytesIO(data[len(_PLAN_MAGIC) :])
    try:
        with zipfile.ZipFile(body) as zf:  # the sizes it declares bound what reading it decompresses
            total = sum(i.file_size for i in zf.infolist())
    except Exception as e:
        raise ks.SerializationError(f"the plan's bytes are damaged or incomplete ({type(e).__name__}: {e})") from None
    if total > max_bytes:
        raise ks.SerializationError(
            f"the plan's parts take {total} bytes decompressed, more than max_bytes = {max_bytes}: load it with a "
            "larger max_bytes if it is one you trust"
        )
    try:
        with np.load(body, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("meta").tobytes())
        if meta.get("format") != _PLAN_VERSION:
            raise ks.SerializationError(
                f"plan format {meta.get('format')!r}: this kasoku reads format {_PLAN_VERSION} (save it again "
                "with this version)"
            )
        params = ks.Parameters.from_bytes(arrays.pop("params").tobytes())
        steps = [_step_from(d, i, arrays) for i, d in enumerate(meta["steps"])]
        in_layout, out_layout = arrays["in_layout"].astype(np.int64), arrays["out_layout"].astype(np.int64)
        in_shape, output = [int(v) for v in meta["in_shape"]], int(meta["output"])
        boot_slots = meta["bootstrap_slots"]
        in_unit, out_unit, out_dim = float(meta["in_unit"]), float(meta["out_unit"]), int(meta["out_dim"])
    except ks.SerializationError:
        raise
    except Exception as e:  # zip, zlib, JSON, NumPy and field errors alike: untrusted bytes, one kind of error
        raise ks.SerializationError(f"the plan's bytes are damaged or incomplete ({type(e).__name__}: {e})") from None
    ctx = ks.Context(params, threads=threads, device=device)
    _check_plan(steps, output, in_shape, in_layout, out_dim, out_layout, ctx)
    _encode(steps, ctx, threads, max_encoded_bytes)
    boot = None
    if any(isinstance(st, Bootstrap) for st in steps):
        boot = ks.Bootstrapper(ctx, slots=int(boot_slots), real=True, threads=threads)
    return CompiledModel(
        steps, output, in_shape, in_layout, in_unit, out_dim, out_layout, out_unit, params, ctx, boot, None
    )


def _step_from(d: dict, i: int, arrays: dict):
    kind, name, inputs, level = d["type"], str(d["name"]), [int(v) for v in d["inputs"]], int(d["level"])
    if kind == "Affine":
        n = len(inputs)
        diags = []
        for k in range(n):
            offsets, values = arrays[f"{i}.offsets{k}"], arrays[f"{i}.diags{k}"]
            if values.ndim != 2 or len(offsets) != len(values):
                raise ks.SerializationError(f"step {name}: {len(offsets)} offsets for {len(values)} diagonals")
            diags.append({int(r): v for r, v in zip(offsets, values)})
        st = Affine(
            name,
            inputs,
            int(d["output"]),
            [_SparseMatrix.from_arrays(arrays, f"{i}.W{k}") for k in range(n)],
            arrays[f"{i}.b"],
            [arrays[f"{i}.layout_in{k}"].astype(np.int64) for k in range(n)],
            int(d["p_in"]),
            layout_out=arrays[f"{i}.layout_out"].astype(np.int64),
            p_out=int(d["p_out"]),
            mode=str(d["mode"]),
            diags=diags,
            sums=[int(r) for r in d["sums"]],
        )
    elif kind == "Activation":
        st = Activation(name, str(d["kind"]), interval=tuple(map(float, d["interval"])), degree=int(d["degree"]))
        st.input, st.output, st.s_in = inputs[0], int(d["output"]), float(d["s_in"])
        if f"{i}.coeffs" in arrays:
            st.poly = ks.Polynomial(arrays[f"{i}.coeffs"], str(d["basis"]), tuple(map(float, d["poly_interval"])))
        elif st.kind != "square":
            raise ks.SerializationError(f"step {name}: a {st.kind} activation without its polynomial")
    elif kind == "Bootstrap":
        st = Bootstrap(name, inputs[0])
    elif kind == "ReluJoin":
        st = ReluJoin(name, inputs, int(d["output"]))
    else:
        raise ks.SerializationError(f"step {i}: unknown kind {kind!r}")
    st.level = level
    return st


class _SparseMatrix:
    """An affine step's weights as (row, column, value) triples sorted by row, in the memory of their nonzeros (a
    convolution's matrix is mostly zeros: ResNet-20's first block is 16384 x 16384 with 144 weights a row)."""

    def __init__(self, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray, values: np.ndarray):
        order = np.lexsort((cols, rows))
        self.shape = (int(shape[0]), int(shape[1]))
        self.rows, self.cols, self.values = rows[order], cols[order], np.asarray(values, dtype=np.float64)[order]

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        out[self.rows, self.cols] = self.values
        return out

    @property
    def nnz(self) -> int:
        return len(self.values)

    def row_starts(self) -> np.ndarray:
        """Row o's entries are [starts[o], starts[o + 1])."""
        return np.searchsorted(self.rows, np.arange(self.shape[0] + 1))

    def __mul__(self, f: float) -> _SparseMatrix:
        return _SparseMatrix(self.shape, self.rows, self.cols, self.values * f)

    @classmethod
    def from_arrays(cls, arrays: dict, key: str) -> _SparseMatrix:
        rows, cols = arrays[f"{key}.rows"].astype(np.int64), arrays[f"{key}.cols"].astype(np.int64)
        values = arrays[f"{key}.values"].astype(np.float64)
        shape = tuple(int(v) for v in arrays[f"{key}.shape"])
        if len(shape) != 2 or min(shape) < 1 or not len(rows) == len(cols) == len(values):
            raise ks.SerializationError(f"{key}: a matrix of shape {shape} with {len(values)} entries")
        if len(rows) and (min(rows.min(), cols.min()) < 0 or rows.max() >= shape[0] or cols.max() >= shape[1]):
            raise ks.SerializationError(f"{key}: an entry outside its {shape[0]} x {shape[1]} matrix")
        return cls(shape, rows, cols, values)

    def nonzero(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.rows, self.cols, self.values

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=self.values * x[self.cols], minlength=self.shape[0])


def _check_plan(steps, output, in_shape, in_layout, out_dim, out_layout, ctx) -> None:
    """A loaded plan's steps read only values made before them, at levels the context has, with slots and layouts
    within the ring: what run() and the transforms' encoding assume."""

    def bad(what):
        raise ks.SerializationError(f"the plan is inconsistent: {what}")

    made, p_in, slots = {0}, _pow2(int(np.prod(in_shape))), ctx.slots
    if p_in > slots or in_layout.size != int(np.prod(in_shape)) or in_layout.min(initial=0) < 0:
        bad("the input layout does not fit the ring")
    if in_layout.max(initial=0) >= p_in:
        bad("the input layout does not fit its period")
    for st, level in zip(steps, _levels(steps, ctx.user_level)[1]):
        if any(i not in made for i in st.inputs):
            bad(f"step {st.name} reads a value no earlier step makes")
        if st.level != level or not 0 <= level <= ctx.user_level:
            bad(f"step {st.name} is at level {st.level}, its inputs put it at {level}")
        if isinstance(st, Affine):
            for v in (st.p_in, st.p_out):
                if v < 1 or v & (v - 1) or v > slots:
                    bad(f"step {st.name}: period {v} is not a power of two within the {slots} slots")
            length = max(st.p_in, st.p_out)
            if len(st.Ws) != len(st.inputs) or len(st.diags) != len(st.inputs):
                bad(f"step {st.name}: {len(st.inputs)} inputs, {len(st.Ws)} weight matrices")
            if st.layout_out.size != st.Ws[0].shape[0] or st.layout_out.min(initial=0) < 0:
                bad(f"step {st.name}: the output layout does not match its {st.Ws[0].shape[0]} outputs")
            if st.layout_out.max(initial=0) >= st.p_out or st.b.shape != (st.Ws[0].shape[0],):
                bad(f"step {st.name}: the output layout or bias does not fit its period")
            for diags in st.diags:
                for r, v in diags.items():
                    if v.shape != (length,) or not 0 <= r < st.p_in:
                        bad(f"step {st.name}: a diagonal of {v.shape} values at offset {r} (period {length})")
            if any(not 0 < abs(r) < slots for r in st.sums):
                bad(f"step {st.name}: a rotate-and-sum by {st.sums}")
        made.add(st.output)
    if output not in made or out_layout.size != out_dim or out_layout.min(initial=0) < 0:
        bad("the output is not made by a step, or its layout does not match")
    if out_layout.max(initial=0) >= slots:
        bad("the output layout does not fit the ring")


def _levels(steps, top: int) -> tuple[dict, list[int]]:
    """With the input at level `top`: the level of every value, and each step's (the lowest of its inputs': the
    others are dropped to it)."""
    level, at = {0: top}, []
    for st in steps:
        at.append(min(level[i] for i in st.inputs))
        level[st.output] = top if isinstance(st, Bootstrap) else at[-1] - st.depth
    return level, at


def _depth(steps) -> int:
    """The levels the plan takes: its longest path."""
    return -min(_levels(steps, 0)[0].values())


def _place_bootstraps(steps, top: int) -> list:
    """The steps with a bootstrap of each value a step reads at the last moment: where the step needs more levels
    than the value has left (the fewest bootstraps on a chain; a refreshed value serves every later reader)."""
    level, out = {0: top}, []
    for st in steps:
        if st.depth > top:
            raise ks.ParameterError(
                f"layer {st.name} takes {st.depth} levels, more than the {top} a bootstrap gives "
                "back: use parameters with more user levels, or a lower-degree activation"
            )
        for i in st.inputs:
            if level[i] < st.depth:
                out.append(Bootstrap(f"bootstrap before {st.name}", i))
                level[i] = top
        level[st.output] = min(level[i] for i in st.inputs) - st.depth
        out.append(st)
    return out


def _units(steps, peaks: dict) -> dict:
    """Each held value's unit: the plan holds it divided by that power of two. A value that is bootstrapped must be
    within [-1, 1] (bootstrapping's sine is precise only there), so its unit is the power of two at or above its peak
    (with the margin), set by the step that makes it (weights, bias and polynomials divided by it, the readers'
    multiplied) or, for x^2, by its input's unit (squared); every other value keeps 1, its full precision."""
    made = {s.output: s for s in steps if not isinstance(s, Bootstrap)}
    units = dict.fromkeys(peaks, 1.0)

    def need(v, at_least):  # v must be held divided by at least `at_least` (a power of two)
        if units[v] >= at_least:
            return
        step = made.get(v)
        if isinstance(step, Activation) and step.kind == "square":
            need(step.input, 2.0 ** math.ceil(math.log2(at_least) / 2))
        elif isinstance(step, ReluJoin):
            need(step.inputs[0], 2 * at_least)
        elif isinstance(step, Activation) and step.kind == "sign":
            raise ks.ParameterError(f"{step.name}: a sign step's output cannot be scaled")  # |f_3| <= 1: never asked
        else:
            units[v] = at_least

    for s in steps:
        if isinstance(s, Bootstrap):
            need(s.input, _unit(peaks[s.input]))
        elif isinstance(s, ReluJoin):  # the sign reads the ReLU's input in [-1, 1]
            need(s.inputs[0], _unit(peaks[s.inputs[0]]))
    for s in steps:  # the units the steps fix: x^2 squares its input's, a ReLU halves it, a sign step is 1
        if isinstance(s, Activation) and s.kind == "square":
            units[s.output] = units[s.input] ** 2
        elif isinstance(s, ReluJoin):
            units[s.output] = units[s.inputs[0]] / 2
    for s in steps:  # scale what each step computes to its output's unit, from its inputs'
        if isinstance(s, Affine):
            out = units[s.output]
            for k, i in enumerate(s.inputs):
                f = units[i] / out
                if f != 1.0:
                    s.Ws[k] = s.Ws[k] * f
                    s.diags[k] = {r: d * f for r, d in s.diags[k].items()}
            s.b = s.b / out
        elif (
            isinstance(s, Activation)
            and s.kind not in ("square", "sign")
            and (units[s.input], units[s.output]) != (1.0, 1.0)
        ):
            s.s_in, out = units[s.input], units[s.output]
            if s.kind == "power":
                s.poly = ks.Polynomial([c * s.s_in**i / out for i, c in enumerate(s.coeffs)])
            else:  # the same degree on the scaled interval: the same depth
                f, si = s.fn, s.s_in
                s.interval = (s.interval[0] / si, s.interval[1] / si)
                s.fn = lambda u, f=f, si=si, out=out: f(si * u) / out
                s.poly = ks.chebyshev(lambda v, g=s.fn: g(np.real(np.asarray(v))), s.interval, s.degree)
    return units


def _first_past(steps, levels: int) -> str:
    """The name of the first step that needs a level beyond `levels`."""
    at = _levels(steps, levels)[1]
    return next((st.name for st, level in zip(steps, at) if level < st.depth), steps[-1].name)


def _choose_params(steps, depth: int, slots: int, precision_bits, bootstrap: bool, integer_bits: int):
    """Parameters.for_circuit for the plan (q_0 integer_bits above the scale: the largest value with the margin, and
    at least 8, the room a product at level 1 needs before its rescale). precision_bits None: the most precision (up
    to 20 bits) that the smallest ring holding the plan at 8 bits gives with the same number of primes (so at the same
    speed). A plan no 128-bit ring holds: the bootstrapping preset (BOOT16, 9 levels between bootstraps, or BOOT16L,
    14) that needs fewer bootstraps, when bootstrap is on."""

    def fit(bits, d=depth):  # None where no 128-bit ring holds it
        try:
            return ks.Parameters.for_circuit(d, bits, slots=slots, integer_bits=integer_bits)
        except ks.ParameterError:
            return None

    try:
        params = ks.Parameters.for_circuit(depth, precision_bits or 8, slots=slots, integer_bits=integer_bits)
    except ks.ParameterError as e:
        if bootstrap:
            presets = [ks.Parameters.named(n) for n in ("BOOT16", "BOOT16L")]
            usable = [p for p in presets if max(st.depth for st in steps) <= p.levels and p.slots >= slots]
            if usable:
                return min(
                    usable, key=lambda p: sum(isinstance(st, Bootstrap) for st in _place_bootstraps(steps, p.levels))
                )
        most = next((d for d in range(depth - 1, -1, -1) if fit(precision_bits or 8, d)), -1)
        raise ks.ParameterError(
            f"layer {_first_past(steps, most)} is past the {most} levels a 128-bit ring holds at {precision_bits or 8} "
            f"bits (the model needs {depth} levels and {slots} slots; {e}) and "
            + ("bootstrap=False" if not bootstrap else "no bootstrapping preset holds its widest step")
            + ": use fewer or lower-degree activations (x^2 is one level), fewer precision_bits, or bootstrap=True"
        ) from e
    if precision_bits is None:
        size = (params.log_n, params.levels + 1 + params.special_primes)
        for bits in range(20, 8, -1):
            p = fit(bits)
            if p is not None and (p.log_n, p.levels + 1 + p.special_primes) == size:
                return p
    return params


def compile(
    model,
    example_input,
    calibration=None,
    params=None,
    precision_bits: int | None = None,
    device: str = "cpu",
    threads=None,
    margin: float = 0.25,
    activation_error: float = 1e-3,
    max_activation_depth: int = 6,
    bootstrap: bool = True,
    relu_eps: float = 1 / 64,
    relu_bits: int = 10,
    max_encoded_bytes: int = _ENCODED_BYTES,
):
    """Compiles a PyTorch model (nn.Module) for encrypted inference of one sample shaped like example_input (a batch
    dimension of 1 is dropped). calibration: a batch of inputs whose activations fix the Chebyshev intervals (default:
    the example input), widened by `margin` on each side. params: a ks.Parameters, or None for the smallest 128-bit
    set with the plan's depth and slots at `precision_bits` (Parameters.for_circuit; precision_bits None: the most the
    smallest ring gives), or a bootstrapping preset when none holds the depth. bootstrap: place bootstraps where the
    levels run out (parameters that can bootstrap), or refuse such a model. relu_eps, relu_bits: ReLU is
    u (1 + sign u) / 2 on its input divided by its unit (the power of two above its peak, with the margin), the sign
    f_3 composed until abs(u) >= relu_eps reaches 2^-relu_bits (ks.sign_depth levels): within relu_eps times the unit
    below relu_eps, within 2^-relu_bits times abs(x) above it. max_encoded_bytes: the memory the transforms may keep
    encoded (the smallest first); the others are encoded at each use, for a few seconds each at N = 2^16 (a large
    network's diagonals over Q * P would take tens of GB). Raises ks.ParameterError naming the layer for what it
    cannot compile."""
    torch = _torch()
    t0 = time.perf_counter()
    model = copy.deepcopy(model).eval().double()
    x0 = torch.as_tensor(example_input, dtype=torch.float64)
    if x0.dim() >= 2 and x0.shape[0] == 1:
        x0 = x0[0]
    in_shape = tuple(x0.shape)
    gm = _trace(torch, model)
    _lower_max_pools(torch, gm, x0)
    modules = dict(gm.named_modules())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise ks.ParameterError(f"kasoku.nn compiles models of one input, this one has {len(placeholders)}")
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    outputs = [n for n in gm.graph.nodes if n.op == "output"][0].all_input_nodes
    if len(outputs) != 1 or outputs[0].op == "placeholder":
        raise ks.ParameterError("kasoku.nn compiles models with one output tensor computed from the input")
    kinds = {}
    for n in nodes:
        kinds[n] = _classify(torch, n, modules)
        if isinstance(kinds[n], tuple) and kinds[n][0] == "unsupported":
            raise ks.ParameterError(f"layer {_name(n, modules)}: {kinds[n][1]}")
        if kinds[n] != "affine" and len(_tensor_inputs(n)) != 1:
            raise ks.ParameterError(f"layer {_name(n, modules)}: an activation reads one tensor")
    # The values the plan holds as ciphertexts: the input, every activation's output, and the tensors activations and
    # the output read (affine ones: each is computed from the activations before it in one transform, so that every
    # run of affine layers, branches and joins included, costs one level).
    acts = [n for n in nodes if kinds[n] != "affine"]
    held = [placeholders[0]] + acts
    held += [m for m in [_tensor_inputs(a)[0] for a in acts] + outputs if m not in held]
    held = [n for n in gm.graph.nodes if n in held]  # in graph order: every value after the ones it reads
    vid = {n: i for i, n in enumerate(held)}
    cal = torch.as_tensor(calibration, dtype=torch.float64) if calibration is not None else x0[None]
    cal = cal.reshape(-1, *in_shape)
    with torch.no_grad():
        ex = _run_nodes(torch, gm, nodes, {placeholders[0]: x0[None]})
        calv = _run_nodes(torch, gm, nodes, {placeholders[0]: cal})
    absmax = {n: float(t.abs().max()) for n, t in calv.items()}
    for n in nodes:  # the largest value the calibration shows anywhere: q_0 holds it
        peak = absmax[n]
        if not peak < 2.0**30:
            raise ks.ParameterError(
                f"layer {_name(n, modules)}: the calibration data drives its outputs to {peak:.3g} (2^"
                f"{math.log2(peak) if math.isfinite(peak) else math.inf:.0f}), beyond the 2^30 CKKS holds above its "
                "scale: scale the inputs or the weights down (values near 1 keep every level's precision)"
            )
    in_layout = _input_layout(in_shape)
    dim0 = int(np.prod(in_shape))
    peaks = {vid[m]: absmax[m] * (1 + margin) for m in held}  # with the margin
    # where each held value sits: index i at slot layout[i] of a vector of `period`; zero: slots known to hold 0
    where = {0: (in_layout, _pow2(dim0), ~np.isin(np.arange(_pow2(dim0)), in_layout))}
    steps: list = []
    with torch.no_grad():
        for n in held[1:]:
            step: Affine | Activation
            if kinds[n] == "affine":
                region, ins = _region(n, held, kinds)
                step = _probe(torch, gm, region, ins, ex, ", ".join(_name(m, modules) for m in region))
                step.inputs, step.output = [vid[m] for m in ins], vid[n]
                step.layouts_in = [where[i][0] for i in step.inputs]
                step.p_in = max(where[i][1] for i in step.inputs)
                main = where[step.inputs[0]]
                zero = np.tile(main[2], step.p_in // main[1])
                _pack_affine(step, 2 * max(step.p_in, _pow2(step.Ws[0].shape[0])), zero)
                z = np.ones(step.p_out, dtype=bool)  # the transform writes only its outputs' slots
                z[step.layout_out] = False
                where[vid[n]] = (step.layout_out, step.p_out, z)
            else:
                src = _tensor_inputs(n)[0]
                kind, name = kinds[n], _name(n, modules)
                lay, per, z = where[vid[src]]
                if kind[0] == "relu":  # u (1 + f_3^k(u)): k sign steps, then the join
                    prev = vid[src]
                    k = ks.sign_depth(relu_eps, relu_bits) // 3
                    for i in range(k):
                        sid = len(peaks)
                        peaks[sid] = 1.0
                        steps.append(
                            Activation(
                                f"{name} sign step {i + 1}/{k}",
                                "sign",
                                poly=ks.Polynomial(_F3),
                                degree=7,
                                input=prev,
                                output=sid,
                            )
                        )
                        where[sid] = (lay, per, z)  # f_3(0) = 0
                        prev = sid
                    steps.append(ReluJoin(name, [vid[src], prev], vid[n]))
                    where[vid[n]] = (lay, per, z)
                    continue
                if kind == "square":
                    step = Activation(name, "square")
                elif kind[0] == "power":
                    step = Activation(
                        name, "power", poly=ks.Polynomial(kind[1]), degree=len(kind[1]) - 1, coeffs=list(kind[1])
                    )
                    z = z if kind[1][0] == 0 else np.zeros_like(z)
                else:  # Chebyshev on the calibration's range, widened
                    lo, hi = float(calv[src].min()), float(calv[src].max())
                    pad = margin * max(hi - lo, 1e-6)
                    interval = (lo - pad, hi + pad)
                    fn = _SMOOTH[kind[1]]
                    poly = _degree_for(fn, interval, max_activation_depth, activation_error)
                    step = Activation(name, "chebyshev", fn=fn, interval=interval, poly=poly, degree=poly.degree)
                    z = np.zeros_like(z)  # f(0) != 0 in the slots between the values
                step.input, step.output = vid[src], vid[n]
                where[vid[n]] = (lay, per, z)
            steps.append(step)
    out_id = vid[outputs[0]]
    out_dim = int(np.prod(ex[outputs[0]].shape[1:]))
    depth = _depth(steps)
    slots = max([_pow2(dim0)] + [max(s.p_in, s.p_out) for s in steps if isinstance(s, Affine)])
    if params is None or params == "auto":
        integer_bits = min(30, max(8, math.ceil(math.log2(2 * max(peaks.values()) + 1e-300)) + 1))
        params = _choose_params(steps, depth, slots, precision_bits, bootstrap, integer_bits)
    ctx = ks.Context(params, threads=threads, device=device)
    if ctx.slots < slots:
        raise ks.ParameterError(
            f"the model packs vectors of {slots} values, the parameters have {ctx.slots} slots: "
            "pass parameters with a larger ring, or params=None"
        )
    bootstrapper = None
    if ctx.user_level < depth:
        p = ctx.params
        if not bootstrap or not (p.boot_levels > 0 or p.hamming_weight > 0 or p.boot_secret_weight > 0):
            why = (
                "bootstrap=False"
                if not bootstrap
                else "the parameters cannot bootstrap (no sparse secret, no bootstrapping levels)"
            )
            raise ks.ParameterError(
                f"layer {_first_past(steps, ctx.user_level)} is past the last of the parameters' "
                f"{ctx.user_level} levels (the model needs {depth}) and {why}: pass parameters "
                "with more levels or bootstrapping (e.g. BOOT16), or params=None to have them "
                "chosen"
            )
        steps = _place_bootstraps(steps, ctx.user_level)
        held_periods = [where[s.input][1] for s in steps if isinstance(s, Bootstrap)]
        # activations are real: one EvalMod per full-slot bootstrap
        bootstrapper = ks.Bootstrapper(ctx, slots=min(ctx.slots, max(held_periods)), real=True, threads=threads)
    units = _units(steps, peaks)
    for s, level in zip(steps, _levels(steps, ctx.user_level)[1]):
        s.level = level
    _encode(steps, ctx, threads, max_encoded_bytes)
    return CompiledModel(
        steps,
        out_id,
        in_shape,
        in_layout,
        units[0],
        out_dim,
        where[out_id][0],
        units[out_id],
        params,
        ctx,
        bootstrapper,
        time.perf_counter() - t0,
    )


def _transforms(s: Affine, ctx, threads, at_use: bool = False) -> list:
    """The step's transforms for the context at its level (its diagonals tiled to the slots): encoded, or (at_use)
    holding the values and encoding each giant step's diagonals when apply reaches it."""
    return [
        ks.LinearTransform(
            ctx,
            {r: np.tile(d, ctx.slots // d.size) for r, d in diags.items()},
            level=s.level,
            baby=(plan[3] or None) if plan else None,  # the split found when the plan was made
            threads=threads,
            at_use=at_use,
        )
        for diags, plan in zip(_diagonals_of(s), s.plans or [None] * len(s.Ws))
    ]


def _diagonals_of(s: Affine) -> list:
    """The step's diagonals per input, rebuilt from its weights where _encode dropped them (the layout packing made
    them by _onto too: the same values bit for bit)."""
    if s.diags is not None:
        return s.diags
    length = max(s.p_out, s.p_in)
    return [_onto(W, lay, s.p_in, s.layout_out, length) for W, lay in zip(s.Ws, s.layouts_in)]


def _encode(steps, ctx, threads, budget: int = _ENCODED_BYTES) -> None:
    """The affine steps' transform plans and biases for the context; their transforms encoded (at each step's level)
    while they fit in `budget` bytes, the smallest first, and encoded at each use beyond it, a giant step's diagonals
    at a time: a diagonal over Q_level * P at N = 2^16 is up to 9 MB; ResNet-20's 21 transforms hold about 10,600."""
    affine = [s for s in steps if isinstance(s, Affine)]
    p = ctx.params
    for s in affine:
        if s.diags is not None:
            s.count = sum(len(d) for d in s.diags)
    size = {id(s): s.count * 8 * p.n * (s.level + 1 + p.special_primes) for s in affine}
    for s in sorted(affine, key=lambda s: size[id(s)]):
        diags = _diagonals_of(s)
        s.plans = [ks.LinearTransform.plan(ctx, sorted(r for r, d in ds.items() if np.any(d))) for ds in diags]
        s.lts = None
        if size[id(s)] <= budget:
            budget -= size[id(s)]
            s.lts = _transforms(s, ctx, threads)
        elif s.mode == "layout":  # held as the sparse weights only; _diagonals_of rebuilds them at each use
            s.diags = None
    for s in affine:
        s.bias = None
        if np.any(s.b):
            bias = np.zeros(s.p_out)
            bias[s.layout_out] = s.b
            s.bias = np.tile(bias, ctx.slots // s.p_out)


def _region(node, held, kinds):
    """The affine nodes that compute `node` from held values (in graph order) and the held non-affine values they
    read (the placeholder, activations)."""
    region, ins, todo, seen = [], [], [node], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n is not node and (n.op == "placeholder" or kinds.get(n) != "affine"):
            ins.append(n)
            continue
        region.append(n)
        todo.extend(_tensor_inputs(n))
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return sorted(region, key=order.get), sorted(ins, key=order.get)


_PROBE_NONZEROS = 1 << 26  # the most weights (nonzeros) of an affine part _probe derives: 1.5 GB of triples
_PROBE_VALUES = 1 << 24  # values of one probe batch's widest tensor (128 MB in float64)
_PROBE_UNITS = 4096  # inputs up to this size are probed by unit vectors; larger feature maps by spaced groups first


def _probe(torch, gm, region, ins, ex, name) -> Affine:
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
    widest = max([out_dim] + dims + [int(np.prod(tuple(ex[n].shape[1:]))) for n in region if n in ex])
    batch = max(1, _PROBE_VALUES // widest)
    zeros = {m: torch.zeros(1, *sh, dtype=torch.float64) for m, sh in zip(ins, shapes)}
    b = _run_nodes(torch, gm, region, zeros)[region[-1]].reshape(-1).numpy().copy()
    Ws = []
    for m, sh, d in zip(ins, shapes, dims):

        def linear(X: np.ndarray, m=m, sh=sh) -> np.ndarray:
            """The region's linear part on the rows of X (values of input m; the other inputs 0)."""
            out = []
            for start in range(0, len(X), batch):
                n = min(batch, len(X) - start)
                env = {k: torch.zeros(n, *s2, dtype=torch.float64) for k, s2 in zip(ins, shapes)}
                env[m] = torch.from_numpy(np.ascontiguousarray(X[start : start + n])).reshape(n, *sh)
                out.append(_run_nodes(torch, gm, region, env)[region[-1]].reshape(n, -1).numpy() - b)
            return np.concatenate(out)

        W = None
        if len(sh) >= 2 and d > _PROBE_UNITS:
            for spacing in (3, 5, 9, 17, 33):
                if spacing >= max(sh[1:]):
                    break
                W = _probe_groups(linear, sh, spacing, out_dim)
                if W is not None:
                    r = np.random.default_rng(0).standard_normal((2, d))
                    want = linear(r)
                    got = np.stack([W @ v for v in r])
                    bound = np.stack([_SparseMatrix(W.shape, W.rows, W.cols, np.abs(W.values)) @ np.abs(v) for v in r])
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


def _probe_units(linear, d: int, out_dim: int, batch: int) -> _SparseMatrix | None:
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
    return _SparseMatrix((out_dim, d), np.concatenate(rows), np.concatenate(cols), np.concatenate(vals))


def _probe_groups(linear, shape: tuple, spacing: int, out_dim: int) -> _SparseMatrix | None:
    """The matrix of a feature map's region from grouped probes (see _probe), or None where an output's responses do not
    name one input of a group (two of its inputs in one group: the spacing is too small)."""
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
    return _SparseMatrix((out_dim, d), o, col, base[gi, o])
