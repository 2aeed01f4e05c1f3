"""Levels, bootstraps and parameters: where bootstraps go, the unit each held value is divided by (a bootstrapped
value must be within [-1, 1]), and the parameters chosen for a plan."""

from __future__ import annotations

import math

import numpy as np

import kasoku as ks

from .ir import Activation, Affine, Bootstrap, ReluJoin, value_levels, unit_of


_STATES = 4096  # the most level assignments place_bootstraps keeps after each step (the cheapest)


def _work(st) -> float:
    """A step's cost per limb of its operand, in key switches or products: what the placement weighs the levels of
    the steps by (an operation at level l works on l + 1 limbs)."""
    if isinstance(st, Affine):
        return 2.0 * math.sqrt(max(st.count, 1)) + len(st.sums)
    if isinstance(st, Activation) and st.kind != "square":
        return math.sqrt(2.0 * st.poly.degree) + math.log2(st.poly.degree + 1)
    return 1.0


def place_bootstraps(steps, top: int) -> tuple[list, int]:
    """The steps with bootstraps placed over the whole graph, and the level to encrypt the input at: the fewest
    bootstraps such that every step finds the levels it needs, then the least work (each step's _work times the limbs
    it runs on; the input is encrypted no higher than it needs to be, which also makes the first transform's keys
    smaller). A dynamic program over the steps in order whose state is the level of every value still to be read (a
    residual branch's input and a ReLU's input with the main line): before a step, any of its inputs may be
    bootstrapped to `top` (once refreshed, a value serves every later reader). At most _STATES states are kept after
    each step, the cheapest."""
    for st in steps:
        if st.depth > top:
            raise ks.ParameterError(
                f"layer {st.name} takes {st.depth} levels, more than the {top} a bootstrap gives "
                "back: use parameters with more user levels, or a lower-degree activation"
            )
    last: dict[int, int] = {}  # value -> the last step that reads it
    for t, st in enumerate(steps):
        for i in st.inputs:
            last[i] = t
    # levels of the live values -> (cost, previous levels, refreshed); the input at any level up to the top
    states: dict[tuple, tuple] = {((0, lv),): ((0, 0.0), None, ()) for lv in range(top + 1)}
    history = []
    for t, st in enumerate(steps):
        ins = sorted(set(st.inputs))
        work = _work(st)
        nxt: dict[tuple, tuple] = {}
        for state, (cost, _, _) in states.items():
            level = dict(state)
            low = [i for i in ins if level[i] < top]
            for mask in range(1 << len(low)):
                fresh = tuple(i for b, i in enumerate(low) if mask >> b & 1)
                at = min(top if i in fresh else level[i] for i in ins)
                if at < st.depth:
                    continue
                after = {v: (top if v in fresh else lv) for v, lv in level.items() if last.get(v, -1) > t}
                if last.get(st.output, -1) > t:
                    after[st.output] = at - st.depth
                key = tuple(sorted(after.items()))
                c = (cost[0] + len(fresh), cost[1] + work * (at + 1))
                if key not in nxt or c < nxt[key][0]:
                    nxt[key] = (c, state, fresh)
        if len(nxt) > _STATES:
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1][0])[:_STATES])
        history.append(nxt)
        states = nxt
    key = min(states, key=lambda k: states[k][0])
    refresh = []
    for t in range(len(steps) - 1, -1, -1):
        _, prev, fresh = history[t][key]
        refresh.append(fresh)
        key = prev
    out = []
    for st, fresh in zip(steps, reversed(refresh)):
        out += [Bootstrap(f"bootstrap before {st.name}", i) for i in fresh]
        out.append(st)
    return out, dict(key)[0]


def units_of(steps, peaks: dict) -> dict:
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
            raise ks.ParameterError(f"{step.name}: a sign stage's output cannot be scaled")  # |sign| <= 1: never asked
        else:
            units[v] = at_least

    for s in steps:
        if isinstance(s, Bootstrap):
            need(s.input, unit_of(peaks[s.input]))
        elif isinstance(s, ReluJoin):  # the sign reads the ReLU's input in [-1, 1]
            need(s.inputs[0], unit_of(peaks[s.inputs[0]]))
    for s in steps:  # the units the steps fix: x^2 squares its input's, a ReLU halves it, a sign stage is 1
        if isinstance(s, Activation) and s.kind == "square":
            units[s.output] = units[s.input] ** 2
        elif isinstance(s, ReluJoin):
            units[s.output] = units[s.inputs[0]] / 2
    for s in steps:  # scale what each step computes to its output's unit, from its inputs'
        if isinstance(s, ReluJoin) or (isinstance(s, Activation) and s.shift):  # a ReLU6's c = clip / unit
            s.s_in = units[s.inputs[0]]
        elif isinstance(s, Affine):
            out = units[s.output]
            for k, i in enumerate(s.inputs):
                f = units[i] / out
                if f != 1.0:  # the diagonals (dropped after packing) are rebuilt from the weights
                    s.Ws[k] = s.Ws[k] * f
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


def flood_bits(flooding, log_n: int) -> int:
    """The bits a flood (ks.Flooding) takes from the outputs over the noise it floods, in a ring of 2^log_n: its
    slots' deviation sigma sqrt(n) / scale against the noise's, where sigma = 8 x the noise's root mean square x
    sqrt(n) sqrt(queries / 2) 2^(statistical_security / 2) (ks.flooding_sigma, docs/SECURITY.md): 29 bits at N = 2^13,
    31 at 2^16, for 40-bit statistical security and one query."""
    return math.ceil(3 + log_n / 2 + math.log2(max(flooding.queries, 1) / 2) / 2 + flooding.statistical_security / 2)


def shareable_params(steps, depth: int, slots: int, bits, flooding, integer_bits: int):
    """Parameters.for_circuit for a plan whose outputs keep `bits` (None: the most, up to 20) after the flood, and
    those bits: the smallest ring N whose parameters at bits + flood_bits(N) of precision are of that ring or a
    smaller one. Raises ks.ParameterError saying what the flood takes where none is."""
    why = None
    for b in [bits] if bits is not None else range(20, 0, -1):
        for log_n in (13, 14, 15, 16):
            if (want := b + flood_bits(flooding, log_n)) > 40:  # for_circuit's most
                why = f"{want} bits of precision, more than for_circuit's 40"
                break
            try:
                p = ks.Parameters.for_circuit(depth, want, slots=slots, integer_bits=integer_bits)
            except ks.ParameterError as e:
                why = e
                continue
            if p.log_n <= log_n:
                return p, b
    raise ks.ParameterError(
        f"shareable: the outputs keep {bits or 1} bits after a flood for {flooding!r} only with "
        f"{flood_bits(flooding, 13)}-{flood_bits(flooding, 16)} bits more scale than the noise, in one chain of "
        f"{depth} levels, which no 128-bit ring holds ({why}): ask for fewer precision_bits, a shallower model, or "
        "share through a multiparty decryption (docs/MULTIPARTY.md)"
    )


def first_past(steps, levels: int) -> str:
    """The name of the first step that needs a level beyond `levels`."""
    at = value_levels(steps, levels)[1]
    return next((st.name for st, level in zip(steps, at) if level < st.depth), steps[-1].name)


BOOT_LEVELS = 16  # what the default ks.Bootstrapper takes there: CoeffToSlot 4, EvalMod 8, SlotToCoeff 4
_MAX_USER_LEVELS = 14


# The widest primes the kernels that will run take on their fast path: below 2^50 for AVX2's double-precision residue
# arithmetic and AVX-512-IFMA's 52-bit products alike (the AVX-512DQ, scalar and GPU bodies take any width, where 50
# bits keep the plan's shape).
_FAST_PRIME_BITS = 50


def prime_bits_for(target: str) -> int:
    """The bootstrapping and special primes' width for the kernels of `target` (ks.simd_active()'s names, or
    "cuda"): 50 for every body kasoku has."""
    return _FAST_PRIME_BITS


def bootstrapping_params(levels: int, bits: int = 50):
    """N = 2^16 parameters with `levels` user levels of 40 bits above q_0 (60 bits), 16 bootstrapping levels of `bits`
    (the default bootstrapper's CoeffToSlot 4, EvalMod 8, SlotToCoeff 4: with ResNet-20's 12 user levels, 4.7 s a
    real-slot bootstrap against 5.5 s with 14 levels and three transforms each, a plan of 0.55 GB against 1.47 GB,
    2 bits less in the worst slot (dnum 4 then fits, not 3); Zen 5, one thread, docs/NN.md) and an ephemeral sparse
    secret of weight 32 (as BOOT16), at 128-bit security, with the smallest keys: the fewest key-switching digits (2,
    then 3, 4, 5, 6) that fit, with special primes of `bits` too (P as large as the largest digit; 2 digits fit up to
    7 user levels, where a key at the top is half the size of one with 4 digits). Every prime but q_0 is then on the
    fast path of the kernels `bits` was chosen for (prime_bits_for): 50, below 2^50, where the AVX-512-IFMA kernels and
    the AVX2 body's double-precision arithmetic take it (a bootstrap 12 % faster than with 53-bit primes, Zen 5, one
    thread, for 17 bits of precision instead of 20: mean; 15 and 18 worst, with 14 bootstrapping levels). None where
    none fits."""
    primes = 1 + levels + BOOT_LEVELS
    for dnum in (2, 3, 4, 5, 6):
        try:
            return ks.Parameters(
                log_n=16,
                first_bits=60,
                scale_bits=40,
                levels=levels,
                special_bits=bits,
                special_primes=-(-primes // dnum),
                dnum=dnum,
                boot_levels=BOOT_LEVELS,
                boot_bits=bits,
                boot_secret_weight=32,
                security=128,
            )
        except ks.ParameterError:
            continue
    return None


# The memory classes params=None tries in turn (a laptop of 8 or 16 GB, a workstation): the fastest parameters whose
# estimated peak fits the smallest class that any fits. A CNN of four ReLUs on 3 x 32 x 32 inputs: 3.7 GB with 2 key-
# switching digits and 7 user levels (7 bootstraps) where 4 digits and 12 levels (3 bootstraps) took 6.2 GB.
_MEMORY_CLASSES = (4 << 30, 8 << 30, 16 << 30)


def memory_class(estimate: int, max_memory_bytes: int | None) -> int | None:
    """The memory a plan of this estimated peak is held to: max_memory_bytes, or the smallest class it fits (None:
    none)."""
    if max_memory_bytes is not None:
        return int(max_memory_bytes)
    return next((c for c in _MEMORY_CLASSES if estimate <= c), None)


def choose_params(
    steps,
    depth: int,
    slots: int,
    precision_bits,
    bootstrap: bool,
    integer_bits: int,
    estimate=None,
    max_memory=None,
    prime_bits: int = 50,
):
    """Parameters.for_circuit for the plan (q_0 integer_bits above the scale: the largest value with the margin, and
    at least 8, the room a product at level 1 needs before its rescale). precision_bits None: the most precision (up
    to 20 bits) that the smallest ring holding the plan at 8 bits gives with the same number of primes (so at the same
    speed). A plan no 128-bit ring holds, or one that would need N = 2^16 and more than 14 levels, when bootstrap is
    on: bootstrapping parameters (bootstrapping_params), for each number of bootstraps those with the fewest user
    levels that give it (fewer levels: smaller keys, cheaper steps, each from the deepest step's depth up to 14). Of
    those, without `estimate` (params -> the peak bytes an inference would take): the fewest bootstraps; with it, the
    fewest bootstraps among those whose estimate fits max_memory bytes, or by default the smallest of _MEMORY_CLASSES
    any fits (else the smallest estimate). prime_bits: the bootstrapping and special primes' width (prime_bits_for)."""

    def fit(bits, d=depth):  # None where no 128-bit ring holds it
        try:
            return ks.Parameters.for_circuit(d, bits, slots=slots, integer_bits=integer_bits)
        except ks.ParameterError:
            return None

    def bootstrapping():  # None where no bootstrapping parameters hold the plan
        fewest: dict[int, ks.Parameters] = {}  # bootstraps -> the parameters of the fewest levels that give them
        for levels in range(max(st.depth for st in steps), _MAX_USER_LEVELS + 1):
            p = bootstrapping_params(levels, prime_bits)
            if p is None or p.slots < slots:
                continue
            fewest.setdefault(sum(isinstance(st, Bootstrap) for st in place_bootstraps(steps, levels)[0]), p)
        if not fewest:
            return None
        if estimate is None:
            return fewest[min(fewest)]
        size = {count: estimate(p) for count, p in fewest.items()}
        limit = memory_class(min(size.values()), max_memory)  # the smallest class any fits
        fits = [count for count in fewest if limit is not None and size[count] <= limit]
        return fewest[min(fits)] if fits else fewest[min(fewest, key=size.get)]

    try:
        params = ks.Parameters.for_circuit(depth, precision_bits or 8, slots=slots, integer_bits=integer_bits)
    except ks.ParameterError as e:
        if bootstrap and (p := bootstrapping()) is not None:
            return p
        most = next((d for d in range(depth - 1, -1, -1) if fit(precision_bits or 8, d)), -1)
        raise ks.ParameterError(
            f"layer {first_past(steps, most)} is past the {most} levels a 128-bit ring holds at {precision_bits or 8} "
            f"bits (the model needs {depth} levels and {slots} slots; {e}) and "
            + ("bootstrap=False" if not bootstrap else "no bootstrapping preset holds its widest step")
            + ": use fewer or lower-degree activations (x^2 is one level), fewer precision_bits, or bootstrap=True"
        ) from e
    # A plan deeper than bootstrapping parameters hold between bootstraps, in the largest ring: one chain of all its
    # levels holds every key over all of them and runs every step on them (a CNN of four ReLUs: 45 levels of 31 bits,
    # dnum 6, 16.7 GB of keys), where bootstrapping runs its steps on a few levels with smaller keys.
    if bootstrap and params.log_n >= 16 and depth > _MAX_USER_LEVELS and (p := bootstrapping()) is not None:
        return p
    if precision_bits is None:
        size = (params.log_n, params.levels + 1 + params.special_primes)
        for bits in range(20, 8, -1):
            p = fit(bits)
            if p is not None and (p.log_n, p.levels + 1 + p.special_primes) == size:
                return p
    return params
