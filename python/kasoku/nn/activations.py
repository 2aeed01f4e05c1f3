"""The activations' polynomials: the functions the smooth activations are interpolated from, the least Chebyshev
degree within a tolerance, and the sign polynomial that ReLU composes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import kasoku as ks

# Cheon, Kim and Kim's f_3 (ks.Evaluator.sign composes it): on [-1, 1] each application pushes |x| >= eps toward 1.
_F3 = [0.0, 35 / 16, 0.0, -35 / 16, 0.0, 21 / 16, 0.0, -5 / 16]


_SMOOTH = {
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0),
}


def _degree_for(fn, interval, max_depth: int, tol: float) -> Any:
    """The least 2^d - 1 degree whose Chebyshev interpolant is within tol on the interval (at most 2^max_depth - 1)."""
    a, b = interval
    xs = np.linspace(a, b, 2001)
    for d in range(2, max_depth + 1):
        p = ks.chebyshev(lambda v: fn(np.real(np.asarray(v))), (a, b), (1 << d) - 1)
        if np.max(np.abs(np.real(np.asarray(p(xs.astype(complex)))) - fn(xs))) <= tol:
            return p
    return p
