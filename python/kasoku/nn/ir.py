"""The plan's intermediate representation: its steps (Affine, Activation, Bootstrap, ReluJoin), each reading values
by id (value 0 is the input) and making one; the sparse weights of the affine steps; the levels of a list of steps.
Every other module of kasoku.nn builds, places, packs, saves or runs these steps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import kasoku as ks


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
    The other inputs are read onto those slots: a hybrid step's by the hybrid rule (at most p_out diagonals each, their
    blocks added by the one rotate-and-sum), a layout step's straight onto the output slots."""

    name: str
    inputs: list[int]  # value ids
    output: int
    Ws: list[SparseMatrix]
    b: np.ndarray
    layouts_in: list[np.ndarray]
    p_in: int
    layout_out: Any = None  # np.ndarray once packed
    p_out: int = 0
    mode: str = "hybrid"
    diags: Any = None  # per input: offset -> values over one period (None: rebuilt from Ws, packing.diagonals_of)
    offsets: Any = None  # per input: the offsets of its nonzero diagonals
    sums: list[int] = field(default_factory=list)  # rotations of the rotate-and-sum (hybrid, shrinking)
    level: int = 0
    lts: Any = None  # ks.LinearTransform per input (None: encoded at each use, see encode)
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
            f"{self.p_in} -> {self.p_out}, {self.count} diagonals{rot}{sums}, level "
            f"{self.level} -> {self.level - 1}"
        )

    def forward(self, xs: list[np.ndarray]) -> np.ndarray:
        return sum(W @ x for W, x in zip(self.Ws, xs)) + self.b


@dataclass
class Activation:
    """A slot-wise polynomial: x^2 exactly, or the Chebyshev interpolant of a function on an interval."""

    name: str
    kind: str  # "square", "chebyshev", "power" (a user polynomial) or "sign" (a stage of ReLU's sign, no units)
    fn: Any = None  # numpy function (chebyshev)
    interval: tuple[float, float] = (-1.0, 1.0)
    degree: int = 2
    poly: Any = None  # ks.Polynomial
    level: int = 0
    input: int = 0  # value ids
    output: int = 0
    s_in: float = 1.0  # the input's unit: the interval in the model's units is interval * s_in
    coeffs: Any = None  # a user polynomial's, in the model's units
    shift: float = 0.0  # a sign stage's: subtracted from its input first, in the model's units (a ReLU6's x - 6)

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
            what = f"odd minimax polynomial of degree {self.poly.degree}"
            what += f" of x - {self.shift:g}" if self.shift else ""
        else:
            lo, hi = self.interval[0] * self.s_in, self.interval[1] * self.s_in
            what = f"Chebyshev degree {self.poly.degree} on [{lo:.3g}, {hi:.3g}]"
        return f"{self.name}: {what}, level {self.level} -> {self.level - self.depth}"

    def forward(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "square":
            return x * x
        if self.shift:  # x is held divided by s_in
            x = x - self.shift / self.s_in
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


@dataclass
class ReluJoin:
    """The end of a ReLU: u + u s for u the input (held divided by its unit, in [-1, 1]) and s its sign (the sign
    stages composed): 2 relu(u) where abs(u) >= eps, held with half the input's unit. One level (a product).
    A ReLU6 (clip > 0: min(max(x, 0), clip) = relu(x) - relu(x - clip)) reads [u, s, t] with t the sign of
    u - clip / s_in: u (s - t) + c (1 + t) for c = clip / s_in, 2 relu6(x) / s_in, the same level and unit."""

    name: str
    inputs: list[int]  # [u, s] or, for a ReLU6, [u, s, t]
    output: int
    level: int = 0
    depth = 1
    clip: float = 0.0  # a ReLU6's upper end, in the model's units (0: a ReLU)
    s_in: float = 1.0  # the input's unit (a ReLU6's c is clip / s_in)
    layout: Any = None  # a ReLU6's: its value's slots and period, where c is added (the slots known to hold 0 stay 0)
    period: int = 0

    def describe(self) -> str:
        t = f"sign(x - {self.clip:g})"
        what = f"u (sign u - {t}) + c (1 + {t}), a clipped ReLU" if self.clip else "u (1 + sign u)"
        return f"{self.name}: {what}, level {self.level} -> {self.level - 1}"

    def forward(self, xs: list[np.ndarray]) -> np.ndarray:
        if not self.clip:
            return xs[0] + xs[0] * xs[1]
        c = self.clip / self.s_in
        return xs[0] * (xs[1] - xs[2]) + c * (1.0 + xs[2])


def unit_of(peak: float) -> float:
    """The power of two at or above a value's peak: the plan holds every value divided by it, in [-1, 1]."""
    return 2.0 ** math.ceil(math.log2(peak)) if peak > 0 else 1.0


class SparseMatrix:
    """An affine step's weights as (row, column, value) triples sorted by row, in the memory of their nonzeros (a
    convolution's matrix is mostly zeros: ResNet-20's first block is 16384 x 16384 with 144 weights a row)."""

    def __init__(self, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray, values: np.ndarray):
        order = np.lexsort((cols, rows))
        self.shape = (int(shape[0]), int(shape[1]))
        index = np.int32 if max(self.shape) < 2**31 else np.int64  # 16 bytes a weight instead of 24
        self.rows, self.cols = rows[order].astype(index), cols[order].astype(index)
        self.values = np.asarray(values, dtype=np.float64)[order]

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

    def __mul__(self, f: float) -> SparseMatrix:
        return SparseMatrix(self.shape, self.rows, self.cols, self.values * f)

    @classmethod
    def from_arrays(cls, arrays: dict, key: str) -> SparseMatrix:
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


def value_levels(steps, top: int, start: int | None = None) -> tuple[dict, list[int]]:
    """With the input at level `start` (default `top`) and bootstraps landing at `top`: the level of every value, and
    each step's (the lowest of its inputs': the others are dropped to it)."""
    level, at = {0: top if start is None else start}, []
    for st in steps:
        at.append(min(level[i] for i in st.inputs))
        level[st.output] = top if isinstance(st, Bootstrap) else at[-1] - st.depth
    return level, at


def plan_depth(steps) -> int:
    """The levels the plan takes: its longest path."""
    return -min(value_levels(steps, 0)[0].values())


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())
