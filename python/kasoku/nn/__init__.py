"""kasoku.nn: encrypted inference of PyTorch models (docs/NN.md).

    import kasoku as ks
    plan = ks.nn.compile(model, example_input, calibration=train_batch)   # traces, packs, chooses parameters
    print(plan)                                                            # layers, levels, rotations, keys
    keys = plan.keygen()                                                   # client: secret, public, evaluation keys
    ct = plan.encrypt(x)                                                   # client: one sample, shaped like example_input
    out = plan.run(ct)                                                     # server: evaluation keys only
    logits = plan.decrypt(out)                                             # client

The model is traced with torch.fx. Runs of affine layers (Linear, Conv1d/2d with any stride, padding and groups,
BatchNorm in eval mode, AvgPool, AdaptiveAvgPool, Flatten, reshapes, constant scalings and shifts) become one matrix
each, found by probing the run with unit vectors in float64, so BatchNorm folds into its neighbours for free; each
costs one level. Activations: x^2 (and x * x, x ** 2) exactly, one level; SiLU, GELU, sigmoid, tanh, softplus and any
`kasoku.nn.Polynomial` by Chebyshev interpolation on the range the calibration data shows them (with a margin).
PyTorch is needed to compile (pip install 'kasoku[nn]'); a compiled plan runs without it.
"""

from __future__ import annotations

import copy
import math
import operator
import time
from dataclasses import dataclass, field

import numpy as np

import kasoku as ks

__all__ = ["compile", "CompiledModel", "Polynomial", "Square"]


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
            return x * x

    class Polynomial(_t.nn.Module):
        """sum_i coeffs[i] x^i, evaluated as written (power basis) on the encrypted values."""

        def __init__(self, coeffs):
            super().__init__()
            self.coeffs = [float(c) for c in coeffs]

        def forward(self, x):
            out = _t.zeros_like(x)
            for c in reversed(self.coeffs):
                out = out * x + c
            return out
except ImportError:  # pragma: no cover
    Square = Polynomial = None  # type: ignore[assignment,misc]


# ---------------------------------------------------------------- the steps of a plan


@dataclass
class Affine:
    """y = W x + b on the flattened activations. The input arrives in slots: index i at slot layout_in[i] of a vector of
    period p_in (the other slots hold anything: W reads them with zero weights). Two packings, the cheaper chosen:
      "hybrid": y[o] at slot o, period p_out = the power of two above d_out; the rows repeat every p_out slots and the
        p_out diagonals of the (p_out x p_in) matrix each read a different column block, then a rotate-and-sum over the
        p_in / p_out blocks adds them up (Juvekar et al., GAZELLE);
      "layout": y[o] at a slot chosen so that outputs that read the same pattern of inputs (a convolution's channel,
        all its positions) share their diagonals: out slot = the first input slot it reads + one shift per pattern,
        so a k x k convolution costs about k^2 x (output channels) diagonals instead of the period. The next layer
        reads the outputs where they are (the activations work slot-wise), and decryption reads the logits there."""

    name: str
    W: np.ndarray
    b: np.ndarray
    layout_in: np.ndarray
    p_in: int
    layout_out: np.ndarray = None
    p_out: int = 0
    mode: str = "hybrid"
    diags: dict = None  # offset -> values over one period (max(p_in, p_out))
    sums: list[int] = field(default_factory=list)  # rotations of the rotate-and-sum (hybrid, shrinking)
    level: int = 0
    lt: object = None  # ks.LinearTransform
    bias: np.ndarray | None = None  # b at its slots, tiled to the slots

    @property
    def depth(self) -> int:
        return 1

    def describe(self) -> str:
        lt = self.lt
        steps = f", {len(lt.baby_steps)} baby + {len(lt.giant_steps)} giant rotations" if lt is not None else ""
        sums = f" + {len(self.sums)} rotate-and-sum" if self.sums else ""
        return (f"affine {self.W.shape[1]} -> {self.W.shape[0]} ({self.name}): {self.mode} packing, period {self.p_in} -> "
                f"{self.p_out}, {len(self.diags)} diagonals{steps}{sums}, level {self.level} -> {self.level - 1}")

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.W @ x + self.b


def _hybrid(W: np.ndarray, layout_in: np.ndarray, p_in: int):
    """The hybrid packing: output slots 0..d_out-1, its diagonals and rotate-and-sum steps."""
    d_out = W.shape[0]
    p = _pow2(d_out)
    q = max(p, p_in)
    Wt = np.zeros((p, q))
    Wt[:d_out, layout_in] = W
    s = np.arange(q)
    diags = {}
    for r in range(p):
        d = Wt[s % p, (s + r) % q]
        if np.any(d):
            diags[r] = d
    sums = [p << i for i in range(int(math.log2(q // p)))]
    return np.arange(d_out), p, diags, sums


def _layout(W: np.ndarray, layout_in: np.ndarray, p_in: int, limit: int, zero: np.ndarray):
    """The layout packing, or None when the outputs share no pattern (a dense layer: the hybrid packing is cheaper).
    zero[s]: slot s of the input is known to hold 0 (no value is packed there and the steps before keep it 0)."""
    d_out = W.shape[0]
    slots_of = [np.sort(layout_in[np.flatnonzero(W[o])]) for o in range(d_out)]
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
    out_slot = np.zeros(d_out, dtype=np.int64)
    used = np.zeros(limit, dtype=bool)
    for _, outs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        a = virtual[outs]
        for shift in range(-int(a.min()), limit - int(a.max())):
            if not used[a + shift].any():
                used[a + shift] = True
                out_slot[outs] = a + shift
                break
        else:
            return None
    p_out = max(p_in, _pow2(int(out_slot.max()) + 1))
    diags: dict[int, np.ndarray] = {}
    for o in range(d_out):
        cols = np.flatnonzero(W[o])
        for i, r in zip(cols, (layout_in[cols] - out_slot[o]) % p_in):
            diags.setdefault(int(r), np.zeros(p_out))[out_slot[o]] = W[o, i]
    return out_slot, p_out, diags


def _pack_affine(step: Affine, slots: int, zero: np.ndarray) -> None:
    """Chooses the packing with fewer rotations (about 2 sqrt(diagonals) for the BSGS, plus the rotate-and-sum)."""
    out, p_out, diags, sums = _hybrid(step.W, step.layout_in, step.p_in)
    best = (2 * math.sqrt(len(diags)) + len(sums), len(diags))
    step.layout_out, step.p_out, step.diags, step.sums, step.mode = out, p_out, diags, sums, "hybrid"
    lay = _layout(step.W, step.layout_in, step.p_in, slots, zero)
    if lay is not None and (2 * math.sqrt(len(lay[2])), len(lay[2])) < best:
        step.layout_out, step.p_out, step.diags = lay
        step.sums, step.mode = [], "layout"


@dataclass
class Activation:
    """A slot-wise polynomial: x^2 exactly, or the Chebyshev interpolant of a function on an interval."""

    name: str
    kind: str  # "square" or "chebyshev" (or "power": a user polynomial)
    fn: object = None  # numpy function (chebyshev)
    interval: tuple[float, float] = (-1.0, 1.0)
    degree: int = 2
    poly: object = None  # ks.Polynomial
    level: int = 0

    @property
    def depth(self) -> int:
        return 1 if self.kind == "square" else self.poly.depth

    def describe(self) -> str:
        if self.kind == "square":
            what = "x^2"
        elif self.kind == "power":
            what = f"polynomial of degree {self.poly.degree}"
        else:
            what = f"Chebyshev degree {self.poly.degree} on [{self.interval[0]:.3g}, {self.interval[1]:.3g}]"
        return f"{self.name}: {what}, level {self.level} -> {self.level - self.depth}"

    def forward(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "square":
            return x * x
        return np.real(np.asarray(self.poly(x.astype(complex))))


# ---------------------------------------------------------------- tracing


_SMOOTH = {"silu": lambda x: x / (1.0 + np.exp(-x)),
           "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
           "tanh": np.tanh,
           "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
           "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)}


def _classify(torch, node, modules):
    """'affine', 'square', ('smooth', name), ('power', coeffs), or ('unsupported', why) for a node of the traced graph."""
    nn, F = torch.nn, torch.nn.functional
    args = [a for a in node.args if isinstance(a, torch.fx.Node)]
    if node.op == "call_module":
        m = modules[node.target]
        if Square is not None and isinstance(m, Square):
            return "square"
        if Polynomial is not None and isinstance(m, Polynomial):
            return ("power", m.coeffs)
        affine = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.BatchNorm1d, nn.BatchNorm2d, nn.AvgPool1d, nn.AvgPool2d,
                  nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout)
        if isinstance(m, affine):
            return "affine"
        smooth = {nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.GELU: "gelu", nn.Softplus: "softplus"}
        for t, name in smooth.items():
            if isinstance(m, t):
                return ("smooth", name)
        if isinstance(m, (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.MaxPool1d, nn.MaxPool2d)):
            return ("unsupported", f"{type(m).__name__} needs a sign approximation, which kasoku.nn does not build yet: "
                                   "use x^2 (kasoku.nn.Square), SiLU, GELU, sigmoid or tanh, and AvgPool for max-pooling")
        return ("unsupported", f"layer type {type(m).__name__} is not supported")
    if node.op == "call_function":
        f = node.target
        if f in (operator.mul,) and len(args) == 2 and args[0] is args[1]:
            return "square"
        if f in (torch.square,) or (f in (operator.pow, torch.pow) and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if f in (torch.flatten, torch.reshape, F.avg_pool1d, F.avg_pool2d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d,
                 operator.neg) or (f in (operator.mul, operator.truediv, operator.add, operator.sub, torch.mul, torch.add)
                                   and len(args) == 1):
            return "affine"
        smooth = {F.silu: "silu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid", torch.tanh: "tanh", F.tanh: "tanh",
                  F.gelu: "gelu", F.softplus: "softplus"}
        if f in smooth:
            return ("smooth", smooth[f])
        if f in (operator.add, torch.add) and len(args) == 2:
            return ("unsupported", "additions of two layers' outputs (residual connections) are not supported yet")
        if f in (torch.relu, F.relu, F.max_pool2d, F.max_pool1d):
            return ("unsupported", f"{getattr(f, '__name__', f)} needs a sign approximation, which kasoku.nn does not "
                                   "build yet: use x^2, SiLU, GELU, sigmoid or tanh, and average pooling")
        return ("unsupported", f"function {getattr(f, '__name__', f)} is not supported")
    if node.op == "call_method":
        if node.target in ("view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze"):
            return "affine"
        if node.target == "square" or (node.target == "pow" and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if node.target in ("sigmoid", "tanh"):
            return ("smooth", node.target)
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


def _tensor_inputs(node) -> list:
    """The graph nodes a node reads its tensors from (constants fetched with get_attr do not count)."""
    return [a for a in node.all_input_nodes if a.op != "get_attr"]


def _run_nodes(torch, gm, nodes, start, x):
    """Runs a chain of graph nodes on x (the value of `start`), returning the last one's value."""
    modules = dict(gm.named_modules())
    env = {start: x}

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
    return env[nodes[-1]]


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


def _degree_for(fn, interval, max_depth: int, tol: float) -> object:
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

    def __init__(self, steps, in_shape, in_layout, out_dim, out_layout, params, ctx, compile_s):
        self.steps = steps
        self.in_shape = tuple(in_shape)
        self.in_dim = int(np.prod(in_shape))
        self.in_layout = np.asarray(in_layout)  # the slot of each input value
        self.out_dim = out_dim
        self.out_layout = np.asarray(out_layout)  # the slot of each output value
        self.params = params
        self.ctx = ctx
        self.compile_s = compile_s
        self.keys = None
        self.evaluator = None

    @property
    def depth(self) -> int:
        return sum(s.depth for s in self.steps)

    @property
    def p_in(self) -> int:
        return _pow2(self.in_dim)

    def galois_elements(self) -> list[int]:
        g = set()
        for s in self.steps:
            if isinstance(s, Affine):
                g.update(s.lt.galois_elements())
                g.update(self.ctx.galois_element(k) for k in s.sums)
        return sorted(g)

    def __repr__(self) -> str:
        rot = sum(len(s.lt.baby_steps) + len(s.lt.giant_steps) + len(s.sums) for s in self.steps if isinstance(s, Affine))
        lines = [f"CompiledModel({self.in_shape} -> {self.out_dim}; {self.params!r})",
                 f"  depth {self.depth} of {self.ctx.user_level} levels, no bootstrap; {rot} rotations per inference, "
                 f"{len(self.galois_elements())} Galois keys; compiled in {self.compile_s:.1f} s"]
        lines += ["  " + s.describe() for s in self.steps]
        return "\n".join(lines)

    # -- client side
    def keygen(self, progress=None):
        """Secret, public, relinearisation and exactly the Galois keys the plan needs (kept by the plan too)."""
        self.keys = self.ctx.keygen(galois_elements=self.galois_elements(), progress=progress)
        self.evaluator = self.ctx.evaluator(self.keys.evaluation())
        return self.keys

    def pack(self, x) -> np.ndarray:
        """A sample (shaped like the example input, with or without its batch dimension of 1) as slot values."""
        v = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
        if v.size != self.in_dim:
            raise ks.ParameterError(f"the input has {v.size} values; the model was compiled for {self.in_dim} "
                                    f"(shape {self.in_shape}): encrypt one sample at a time")
        out = np.zeros(self.p_in)
        out[self.in_layout] = v
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
        v = self.pack(x)[: self.p_in][self.in_layout]
        for s in self.steps:
            if isinstance(s, Activation) and s.kind == "chebyshev":
                lo, hi = s.interval
                if v.min() < lo or v.max() > hi:
                    raise ks.ParameterError(
                        f"layer {s.name}: this input gives it values in [{v.min():.4g}, {v.max():.4g}], outside the "
                        f"interval [{lo:.4g}, {hi:.4g}] fitted on the calibration data, where its polynomial is "
                        "garbage: compile with calibration data that covers such inputs (or a larger margin)")
            v = s.forward(v)

    def decrypt(self, ct, key=None) -> np.ndarray:
        key = key if key is not None else self._keys("decrypt").secret
        return np.real(self.ctx.decrypt(ct, key))[self.out_layout]

    def _keys(self, what):
        if self.keys is None:
            raise ks.MissingKeyError(f"{what} needs keys: call plan.keygen() first (or pass key=)")
        return self.keys

    # -- server side
    def use(self, evaluation_keys):
        """Sets the evaluation keys that run() computes with (a server's: keys.evaluation() from the client)."""
        self.evaluator = self.ctx.evaluator(evaluation_keys)

    def run(self, ct, threads=None):
        """The model on an encrypted sample: the logits, encrypted (evaluation keys only)."""
        if self.evaluator is None:
            raise ks.MissingKeyError("run needs the evaluation keys: plan.keygen() (client) or plan.use(keys) (server)")
        ev = self.evaluator
        for s in self.steps:
            if isinstance(s, Affine):
                ct = ev.apply(s.lt, ct, threads=threads)
                for k in s.sums:
                    ct = ev.add(ct, ev.rotate(ct, k, threads=threads))
                if s.bias is not None:
                    ct = ev.add_plain(ct, s.bias)
            elif s.kind == "square":
                ct = ev.square(ct, threads=threads)
            else:
                ct = ev.evaluate_polynomial(ct, s.poly, threads=threads)
        return ct

    def forward_clear(self, x) -> np.ndarray:
        """The plan in plain arithmetic (the affine maps and the polynomials it evaluates): what run() computes
        without the encryption's noise."""
        v = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
        for s in self.steps:
            v = s.forward(v)
        return v


def _first_past(steps, levels: int) -> str:
    """The name of the first step that needs a level beyond `levels`."""
    used = 0
    for st in steps:
        used += st.depth
        if used > levels:
            return st.name
    return steps[-1].name


def _choose_params(steps, depth: int, slots: int, precision_bits, integer_bits: int):
    """Parameters.for_circuit for the plan. precision_bits None: the most precision (up to 20 bits) the smallest ring
    that holds the plan at 8 bits gives with the same number of primes (so at the same speed)."""
    def fit(bits):
        return ks.Parameters.for_circuit(depth, bits, slots=slots, integer_bits=integer_bits)

    try:
        params = fit(precision_bits or 8)
    except ks.ParameterError as e:
        most = next((d for d in range(depth - 1, -1, -1) if _fits(d, precision_bits or 8, slots, integer_bits)), -1)
        raise ks.ParameterError(
            f"layer {_first_past(steps, most)} is past the {most} levels a 128-bit ring holds at {precision_bits or 8} "
            f"bits (the model needs {depth} levels and {slots} slots; {e}): kasoku.nn does not place bootstraps yet, so "
            "use fewer or lower-degree activations (x^2 is one level), or fewer precision_bits") from e
    if precision_bits is None:
        size = (params.log_n, params.levels + 1 + params.special_primes)
        for bits in range(20, 8, -1):
            try:
                p = fit(bits)
            except ks.ParameterError:
                continue
            if (p.log_n, p.levels + 1 + p.special_primes) == size:
                return p
    return params


def _fits(depth: int, bits: int, slots: int, integer_bits: int) -> bool:
    try:
        ks.Parameters.for_circuit(depth, bits, slots=slots, integer_bits=integer_bits)
        return True
    except ks.ParameterError:
        return False


def compile(model, example_input, calibration=None, params=None, precision_bits: int | None = None, device: str = "cpu",
            threads=None, margin: float = 0.25, activation_error: float = 1e-3, max_activation_depth: int = 6):
    """Compiles a PyTorch model (nn.Module) for encrypted inference of one sample shaped like example_input (a batch
    dimension of 1 is dropped). calibration: a batch of inputs whose activations fix the Chebyshev intervals (default:
    the example input), widened by `margin` on each side. params: a ks.Parameters, or None for the smallest 128-bit
    set with the plan's depth and slots at `precision_bits` (Parameters.for_circuit). Raises ks.ParameterError naming
    the layer for what it cannot compile, and when the depth does not fit (bootstrapping is not planned yet)."""
    torch = _torch()
    t0 = time.perf_counter()
    model = copy.deepcopy(model).eval().double()
    x0 = torch.as_tensor(example_input, dtype=torch.float64)
    if x0.dim() >= 2 and x0.shape[0] == 1:
        x0 = x0[0]
    in_shape = tuple(x0.shape)
    gm = _trace(torch, model)
    modules = dict(gm.named_modules())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise ks.ParameterError(f"kasoku.nn compiles models of one input, this one has {len(placeholders)}")
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    prev = placeholders[0]
    for n in nodes:  # a chain: every layer reads the layer before it
        if _tensor_inputs(n) != [prev]:
            raise ks.ParameterError(f"layer {_name(n, modules)}: kasoku.nn compiles chains of layers (each on the one before); "
                                    "branches and residual connections are not supported yet")
        prev = n
    # runs of affine nodes become one group each; every activation is a group of its own
    groups: list[tuple[object, list]] = []
    for n in nodes:
        kind = _classify(torch, n, modules)
        if isinstance(kind, tuple) and kind[0] == "unsupported":
            raise ks.ParameterError(f"layer {_name(n, modules)}: {kind[1]}")
        if kind == "affine" and groups and groups[-1][0] == "affine":
            groups[-1][1].append(n)
        else:
            groups.append((kind, [n]))
    cal = torch.as_tensor(calibration, dtype=torch.float64) if calibration is not None else x0[None]
    cal = cal.reshape(-1, *in_shape)
    steps: list = []
    x_value, cal_value, start = x0[None], cal, placeholders[0]
    peak = float(cal.abs().max())  # the largest value the calibration shows anywhere: q_0 holds it
    dim = int(np.prod(in_shape))
    in_layout = _input_layout(in_shape)
    layout, period = in_layout, _pow2(dim)  # where each value of the current activations sits
    zero = np.ones(period, dtype=bool)  # the slots known to hold 0
    zero[layout] = False
    with torch.no_grad():
        for kind, group in groups:
            if kind == "affine":  # y = W x + b, found by probing the run with 0 and the unit vectors
                shape = tuple(x_value.shape[1:])
                probes = torch.cat([torch.zeros(1, dim, dtype=torch.float64), torch.eye(dim, dtype=torch.float64)])
                out = _run_nodes(torch, gm, group, start, probes.reshape(dim + 1, *shape)).reshape(dim + 1, -1)
                b = out[0].numpy().copy()
                W = (out[1:] - out[0]).T.numpy().copy()
                step = Affine(", ".join(_name(n, modules) for n in group), W, b, layout, period)
                _pack_affine(step, 2 * max(period, _pow2(W.shape[0])), zero)
                steps.append(step)
                dim, layout, period = W.shape[0], step.layout_out, step.p_out
                zero = np.ones(period, dtype=bool)  # the transform writes only its outputs' slots
                zero[layout] = False
            else:
                n = group[0]
                if kind == "square":
                    steps.append(Activation(_name(n, modules), "square"))
                elif kind[0] == "power":
                    steps.append(Activation(_name(n, modules), "power", poly=ks.Polynomial(kind[1]), degree=len(kind[1]) - 1))
                    if kind[1][0] != 0:
                        zero[:] = False
                else:  # Chebyshev on the calibration's range, widened
                    lo, hi = float(cal_value.min()), float(cal_value.max())
                    pad = margin * max(hi - lo, 1e-6)
                    interval = (lo - pad, hi + pad)
                    fn = _SMOOTH[kind[1]]
                    poly = _degree_for(fn, interval, max_activation_depth, activation_error)
                    steps.append(Activation(_name(n, modules), "chebyshev", fn=fn, interval=interval, poly=poly, degree=poly.degree))
                    zero[:] = False  # f(0) != 0 in the slots between the values
            x_value = _run_nodes(torch, gm, group, start, x_value)
            cal_value = _run_nodes(torch, gm, group, start, cal_value)
            peak = max(peak, float(cal_value.abs().max()))
            if not peak < 2.0**30:
                raise ks.ParameterError(
                    f"layer {_name(group[-1], modules)}: the calibration data drives its outputs to {peak:.3g} (2^"
                    f"{math.log2(peak) if math.isfinite(peak) else math.inf:.0f}), beyond the 2^30 CKKS holds above its "
                    "scale: scale the inputs or the weights down (values near 1 keep every level's precision)")
            start = group[-1]
        out_dim = int(np.prod(x_value.shape[1:]))
    depth = sum(s.depth for s in steps)
    slots = max([_pow2(int(np.prod(in_shape)))] + [max(s.p_in, s.p_out) for s in steps if isinstance(s, Affine)])
    if params is None or params == "auto":
        integer_bits = min(30, max(1, math.ceil(math.log2(2 * (1 + margin) * peak + 1e-300)) + 1))
        params = _choose_params(steps, depth, slots, precision_bits, integer_bits)
    ctx = ks.Context(params, threads=threads, device=device)
    if ctx.user_level < depth:
        raise ks.ParameterError(f"layer {_first_past(steps, ctx.user_level)} is past the last of the parameters' "
                                f"{ctx.user_level} levels (the model needs {depth}): pass parameters with more levels, or "
                                "params=None to have them chosen")
    if ctx.slots < slots:
        raise ks.ParameterError(f"the model packs vectors of {slots} values, the parameters have {ctx.slots} slots: "
                                "pass parameters with a larger ring, or params=None")
    level = ctx.user_level
    for s in steps:
        s.level = level
        if isinstance(s, Affine):
            s.lt = ks.LinearTransform(ctx, {r: np.tile(d, ctx.slots // d.size) for r, d in s.diags.items()}, level=level,
                                      threads=threads)
            if np.any(s.b):
                bias = np.zeros(s.p_out)
                bias[s.layout_out] = s.b
                s.bias = np.tile(bias, ctx.slots // s.p_out)
        level -= s.depth
    return CompiledModel(steps, in_shape, in_layout, out_dim, layout, params, ctx, time.perf_counter() - t0)
