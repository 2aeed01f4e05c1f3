"""The activations' polynomials: the functions the smooth activations are interpolated from, the least Chebyshev
degree within a tolerance, and the composite minimax sign polynomials that ReLU is made of."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

import kasoku as ks

SMOOTH = {
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0),
}


def degree_for(fn, interval, max_depth: int, tol: float) -> Any:
    """The least 2^d - 1 degree whose Chebyshev interpolant is within tol on the interval (at most 2^max_depth - 1)."""
    a, b = interval
    xs = np.linspace(a, b, 2001)
    for d in range(2, max_depth + 1):
        p = ks.chebyshev(lambda v: fn(np.real(np.asarray(v))), (a, b), (1 << d) - 1)
        if np.max(np.abs(np.real(np.asarray(p(xs.astype(complex)))) - fn(xs))) <= tol:
            return p
    return p


# ---------------------------------------------------------------- ReLU's sign


def _odd_basis(x: np.ndarray, degree: int) -> np.ndarray:
    """T_1(x), T_3(x), ..., T_degree(x) as columns (x in [-1, 1])."""
    return np.cos(np.outer(np.arccos(np.clip(x, -1.0, 1.0)), np.arange(1, degree + 1, 2)))


@functools.lru_cache(maxsize=512)
def minimax_stage(a: float, degree: int) -> tuple[np.ndarray, float, float]:
    """The odd polynomial of the given degree closest to 1 on [a, 1] in the maximum norm (Remez's exchange over a
    dense grid), as its odd Chebyshev coefficients, with its least value on [a, 1] and its greatest magnitude on [0, 1]:
    it maps [a, 1] into [lo, hi] and [-1, 1] into [-hi, hi]."""
    n = (degree + 1) // 2  # coefficients; n + 1 reference points with the error E
    t = (1.0 - np.cos(np.linspace(0.0, np.pi, 24001))) / 2.0
    grid = np.unique(np.concatenate([a + (1.0 - a) * t, np.linspace(a, 1.0, 8001)]))
    basis = _odd_basis(grid, degree)
    ref = a + (1.0 - a) * (1.0 - np.cos(np.pi * np.arange(n + 1) / n)) / 2.0
    signs = (-1.0) ** np.arange(n + 1)
    c = np.zeros(n)
    for _ in range(100):
        system = np.concatenate([_odd_basis(ref, degree), signs[:, None]], axis=1)
        sol = np.linalg.lstsq(system, np.ones(n + 1), rcond=None)[0]
        c, level = sol[:n], abs(sol[n])
        err = basis @ c - 1.0
        d = np.diff(err)
        turns = np.flatnonzero(d[:-1] * d[1:] <= 0) + 1
        idx = np.concatenate([[0], turns, [len(grid) - 1]])
        pick: list[int] = []  # alternating extrema, the largest of each run of one sign
        for i in idx:
            if pick and np.sign(err[i]) == np.sign(err[pick[-1]]):
                if abs(err[i]) > abs(err[pick[-1]]):
                    pick[-1] = i
            else:
                pick.append(int(i))
        while len(pick) > n + 1:  # drop the smaller end
            pick.pop(0 if abs(err[pick[0]]) < abs(err[pick[-1]]) else -1)
        worst = float(np.max(np.abs(err)))
        if len(pick) < n + 1 or worst <= level * (1 + 1e-9) + 1e-15:
            break
        ref = grid[pick]
    coeffs = np.zeros(degree + 1)
    coeffs[1::2] = c
    below = np.abs(_odd_basis(np.linspace(0.0, a, 4001), degree) @ c)
    return coeffs, float((basis @ c).min()), float(max(below.max(), np.abs(basis @ c).max()))


STAGE_DEPTH = 6  # the deepest stage: an odd polynomial of degree 63


def sign_stages(eps: float, bits: int, max_depth: int = STAGE_DEPTH) -> list[np.ndarray]:
    """Odd Chebyshev coefficients of the stages of a composite polynomial p_m o ... o p_1 within 2^-bits of sign(x)
    for eps <= |x| <= 1 and within [-1 - 2^-bits, 1 + 2^-bits] everywhere on [-1, 1], in the fewest levels (Lee, Lee,
    Kim and No, "Minimax approximate sign function by composite polynomial"): each stage is the minimax polynomial of
    its degree on the interval the stages before it leave, [a, 1] (scaled so that it never exceeds 1, but the last).
    The fewest levels by dynamic programming over the total depth: the greatest a that D levels can reach is the best
    over the last stage's depth k of a stage of depth k after the best of D - k (a stage's result grows with its a);
    the last stage takes the least odd degree of its depth that meets 2^-bits. Each stage takes at most max_depth
    levels (2 to 6: degrees 3 to 63), so that it fits between two bootstraps."""
    if not 0 < eps < 1 or bits < 1:
        raise ks.ParameterError(f"relu_eps {eps} must be in (0, 1) and relu_bits {bits} at least 1")
    if max_depth < 2:
        raise ks.ParameterError(f"a sign stage takes at least 2 levels; {max_depth} are left between bootstraps")
    return [c.copy() for c in _sign_stages(float(eps), int(bits), min(int(max_depth), STAGE_DEPTH))]


@functools.lru_cache(maxsize=64)
def _sign_stages(eps: float, bits: int, max_depth: int) -> tuple[np.ndarray, ...]:
    target = 2.0**-bits
    depths = range(2, max_depth + 1)  # a stage of depth k: degree 2^k - 1

    def stage(a: float, k: int):  # the stage of depth k on [a, 1]: (coefficients, lo, hi)
        return minimax_stage(round(a, 12), (1 << k) - 1)

    best: dict[int, tuple[float, tuple[np.ndarray, ...]]] = {0: (eps, ())}  # depth -> (a reached, stages)
    for depth in range(2, 61):
        finals = []
        for k in depths:
            if depth - k not in best:
                continue
            a, stages = best[depth - k]
            c, lo, hi = stage(a, k)
            if 1.0 - lo <= target and hi - 1.0 <= target:
                finals.append((k, a, stages))
        if finals:
            k, a, stages = min(finals, key=lambda f: f[0])  # the shallowest last stage: the fewest products
            for degree in range((1 << (k - 1)) + 1, (1 << k), 2):  # its least degree of that depth
                c, lo, hi = minimax_stage(round(a, 12), degree)
                if 1.0 - lo <= target and hi - 1.0 <= target:
                    return (*stages, c)
            return (*stages, stage(a, k)[0])
        options = []
        for k in depths:
            if depth - k in best:
                a, stages = best[depth - k]
                c, lo, hi = stage(a, k)
                options.append((lo / hi, (*stages, c / hi)))
        if options:
            best[depth] = max(options, key=lambda o: o[0])
    raise ks.ParameterError(f"no composite sign polynomial of up to 60 levels reaches 2^-{bits} at eps {eps}")


def sign_polynomials(eps: float, bits: int, max_depth: int = STAGE_DEPTH) -> list:
    """The stages of sign_stages as ks.Polynomial (Chebyshev basis on [-1, 1]: no level for the interval)."""
    return [ks.Polynomial(c, "chebyshev") for c in sign_stages(eps, bits, max_depth)]
