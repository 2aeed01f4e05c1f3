"""The compiled model: keys, encryption, the encrypted run, decryption, and the transforms encoded for a context
(kept, or encoded at each use beyond a memory budget)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import kasoku as ks

from .ir import Activation, Affine, Bootstrap, ReluJoin, value_levels, pow2
from .packing import diagonals_of_input, summarize
from .persist import check_plan, read_plan, write_plan


@dataclass(frozen=True)
class FloodedOutput:
    """Plan.decrypt(ct, flood=...): outputs safe to share. precision_bits: -log2 of the standard deviation the flood
    adds to each output, in the outputs' units; sigma and noise_bound: the flood's (ks.FloodedDecryption)."""

    values: np.ndarray
    precision_bits: float
    sigma: float
    noise_bound: float


class Plan:
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
        input_level=None,
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
        # the level the input is encrypted at (a bootstrapping plan's: no higher than its first steps need)
        self.input_level = ctx.user_level if input_level is None else int(input_level)
        self.keys = None
        self.evaluator = None
        # the flood compile(..., shareable=) sized the parameters for (a ks.Flooding), else None, and the bits it
        # leaves the outputs by that sizing
        self.shareable, self.shareable_bits = None, None
        # compile's check of the plan's clear arithmetic on the calibration inputs (None for a loaded plan): inputs,
        # decisions (argmax the model's), logit_error (the largest), smallest_margin (the model's top two), relu
        # (relu_eps, relu_bits) where the model has ReLUs
        self.calibration = None
        # a last softmax, log-softmax or sigmoid of the model (name, dim) that the client applies after decryption
        # when output_kind is "model" (compile's output=), else None
        self.final, self.output_kind = None, "model"
        # the kernels whose fast path compile chose the bootstrapping and special primes for (None: not chosen there)
        self.tuned_for = None
        # the bytes compile let the transforms keep encoded (its max_encoded_bytes, given or chosen for the plan's
        # memory class; None: the default), which load takes again unless told otherwise
        self.max_encoded_bytes = None

    @property
    def depth(self) -> int:
        """The levels the plan takes (between bootstraps, where it has them)."""
        return self.ctx.user_level - min(value_levels(self.steps, self.ctx.user_level, self.input_level)[0].values())

    @property
    def bootstraps(self) -> int:
        """Bootstraps one inference runs."""
        return sum(isinstance(s, Bootstrap) for s in self.steps)

    @property
    def p_in(self) -> int:
        """Slots the input occupies: the power of two at or above its size."""
        return pow2(self.in_dim)

    def galois_elements(self) -> list[int]:
        """The Galois elements of every rotation the plan runs (keygen makes exactly their keys)."""
        return sorted(self.galois_levels())

    def galois_levels(self) -> dict[int, int]:
        """Each Galois element the plan rotates by, with the highest level it rotates at: a transform's baby and giant
        steps at the transform's level, its rotate-and-sum one level below; bootstrapping's where a bootstrap uses them
        (Bootstrapper.galois_levels: CoeffToSlot's at the top, SlotToCoeff's lower). keygen makes each key for those
        levels only (over Q_level * P, with the digits of Q_level)."""
        return galois_levels_of(self.steps, self.ctx, self.bootstrapper)

    def key_bytes(self, compact: bool | None = None) -> int:
        """The memory of the evaluation keys keygen makes, from their shapes (before any is made): the
        relinearisation key, each Galois key over Q_level * P_k with the digits of Q_level and the special primes they
        need (ctx.special_primes_at; its b-parts only where
        keygen makes them compact: bootstrapping key sets on the CPU; compact=True/False: as if so), bootstrapping's
        encapsulation keys."""
        return keys_bytes(self.ctx, self.galois_levels(), self.bootstrapper, compact)

    def memory(self) -> dict[str, int]:
        """What the plan holds and needs, in bytes: the evaluation keys (key_bytes), the bootstrapping plan, the
        transforms kept encoded, the sparse weights, and "gpu": the device memory an inference needs on a GPU, an
        estimate: the keys whole, each allocation at its size in the device's arena (device_block), the bootstrapping
        plan and the kept transforms, two values at the top, and the larger of the working sets of a bootstrap (measured
        on the device at compile with throwaway keys where the plan's context is a GPU's; else 16 ciphertexts over
        Q * P) and of the largest affine step (affine_device_bytes). The runtime gives the arena's free blocks back
        before each step, so one step's working set does not add to the next's."""
        affine = [s for s in self.steps if isinstance(s, Affine)]
        boot = self.bootstrapper.plan_nbytes if self.bootstrapper is not None else 0
        kept = sum(lt.nbytes for s in affine if s.lts is not None for lt in s.lts)
        weights = sum(a.nbytes for s in affine for W in s.Ws for a in W.nonzero())
        p = self.ctx.params
        measured = (self.calibration or {}).get("bootstrap_device_bytes")
        boot_work = 0 if self.bootstrapper is None else int(measured or working_bytes(self.ctx))
        work = max([boot_work] + [affine_device_bytes(s, self.ctx) for s in affine])
        values = 2 * 2 * device_block(8 * (self.ctx.user_level + 1) * p.n)
        keys = keys_bytes(self.ctx, self.galois_levels(), self.bootstrapper, compact=False, block=device_block)
        return {
            "keys": self.key_bytes(),
            "bootstrap_plan": boot,
            "transforms": kept,
            "weights": weights,
            "gpu": keys + boot + kept + values + work,
        }

    def __repr__(self) -> str:
        rot = sum(len(pl[0]) + len(pl[1]) for s in self.steps if isinstance(s, Affine) for pl in s.plans)
        rot += sum(len(s.sums) for s in self.steps if isinstance(s, Affine))
        boots = f"{self.bootstraps or 'no'} bootstrap{'s' if self.bootstraps != 1 else ''}"
        if self.bootstraps:  # Bootstrapper.failure: an I beyond EvalMod's reach, from the law of I
            fail = self.bootstrapper.failure["log2_per_bootstrap"]
            boots += f" (each fails with probability <= {'0' if fail == -math.inf else f'2^{fail:.1f}'})"
        lines = [
            f"Plan({self.in_shape} -> {self.out_dim}; {self.params!r})",
            f"  depth {self.depth} of {self.ctx.user_level} levels (the input at {self.input_level}), "
            f"{boots}; {rot} rotations per inference, "
            f"{len(self.galois_elements())} Galois keys, {self.key_bytes() / 1e9:.2f} GB of evaluation keys; "
            + ("loaded from bytes" if self.compile_s is None else f"compiled in {self.compile_s:.1f} s"),
        ]
        if self.tuned_for is not None:
            lines.append(
                f"  parameters tuned for the {self.tuned_for} kernels: bootstrapping and special primes of "
                f"{self.params.boot_bits} bits, on their fast path (correct on any machine)"
            )
        if self.final is not None:
            dim = "" if self.final[1] is None else f" over dim {self.final[1]}"
            lines.append(
                f"  the model's last {self.final[0]}{dim} is not encrypted: the plan computes its input (the same "
                + (
                    "decisions); decrypt applies it (output='model')"
                    if self.output_kind == "model"
                    else "decisions) and decrypt gives that (output='logits')"
                )
            )
        if self.calibration is not None:
            c = self.calibration
            relu = f"; ReLU's sign within 2^-{c['relu'][1]} beyond {c['relu'][0]:g}" if "relu" in c else ""
            lines.append(
                f"  clear arithmetic on {c['inputs']} calibration inputs: {c['decisions']} of {c['inputs']} decisions "
                f"the model's, outputs within {c['logit_error']:.3g} of its (its smallest top-two margin "
                f"{c['smallest_margin']:.3g}){relu}"
                + (
                    "; the encryption adds its noise"
                    if "noise_error" not in c
                    else "; the encryption's noise (measured at compile: an encryption keeps "
                    + f"{c['encryption_bits']:.1f}, a rotation {c['rotation_bits']:.1f}"
                    + (f", a bootstrap {c['bootstrap_bits']:.1f}" if "bootstrap_bits" in c else "")
                    + f" bits) adds up to {c['noise_error']:.2g}: expected logit error <= {self.expected_error:.3g}"
                )
            )
        if self.shareable is not None:
            f = self.shareable
            left = "" if self.shareable_bits is None else f", sized to keep {self.shareable_bits} bits or more"
            lines.append(
                f"  outputs to share: sized for decrypt(..., flood=...) at {f.statistical_security}-bit statistical "
                f"security over {f.queries} quer{'y' if f.queries == 1 else 'ies'}{left}"
            )
        m = {k: v / 1e9 for k, v in self.memory().items()}
        lines.append(
            f"  memory: {m['keys']:.2f} GB of keys, {m['bootstrap_plan']:.2f} GB bootstrapping plan, "
            f"{m['transforms']:.2f} GB of transforms kept encoded, {m['weights']:.2f} GB of weights; on a GPU about "
            f"{m['gpu']:.1f} GB of device memory"
        )
        lines += ["  " + s.describe() for s in self.steps]
        return "\n".join(lines)

    # -- client side
    def keygen(self, progress=None):
        """Secret, public, relinearisation and exactly the Galois keys the plan needs, each for the levels it is used
        at (galois_levels), kept by the plan too."""
        self.keys = self.ctx.keygen(
            galois_levels=self.galois_levels(), bootstrapping=self.bootstrapper or False, progress=progress
        )
        release_freed(self.ctx)
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
        return at_slots(v / self.in_unit, self.in_layout, self.p_in, self.ctx.slots)

    def encrypt(self, x, key=None, check: bool = True):
        """One sample, encrypted (client side). check: first run the plan in the clear on it and refuse an input that
        takes an approximated activation outside the range it was fitted on (its result would be garbage)."""
        if check:
            self.check(x)
        key = key if key is not None else self._keys("encrypt").public
        return self.ctx.encrypt(self.pack(x), key, level=self.input_level)

    def check(self, x) -> None:
        """Raises ks.ParameterError, naming the layer, when x drives an approximated activation outside its fitted
        interval (the client holds x in the clear; this is the plan's arithmetic without the encryption)."""
        self._clear(self.pack(x)[: self.p_in][self.in_layout], check=True)

    def _clear(self, x: np.ndarray, check: bool, noise=None) -> np.ndarray:
        vals = {0: x if noise is None else noise(None, x)}
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
            if noise is not None and isinstance(s, Affine):  # what its rotations add, before its weights
                ins = [noise(s, v, before=True) for v in ins]
            vals[s.output] = s.forward(ins) if isinstance(s, (Affine, ReluJoin)) else s.forward(ins[0])
            if noise is not None:
                vals[s.output] = noise(s, vals[s.output])
        return vals[self.output]

    def decrypt(self, ct, key=None, flood=None):
        """Client side: the model's outputs (logits) from run's ciphertext, read from the slots the plan put them in,
        with `key` (default: the secret key of keygen). flood None: exact, for the key holder's eyes only (the values
        beside the ciphertext give away the key; docs/SECURITY.md). flood=True or a ks.Flooding: values safe to share,
        noise-flooded for the Flooding's statistical security and queries, returned as a FloodedOutput (values,
        precision_bits in the outputs' units, sigma, noise_bound); a plan compiled with shareable= keeps its bits
        after that flood, others raise ks.ParameterError where it would leave none."""
        key = key if key is not None else self._keys("decrypt").secret
        if flood is None or flood is False:
            return self._finish(np.real(self.ctx.decrypt(ct, key))[self.out_layout] * self.out_unit)
        flooding = ks.Flooding() if flood is True else flood
        try:
            d = self.ctx.decrypt(ct, key, flood=flooding)
        except ks.ParameterError as e:
            hint = (
                "compile(..., shareable=...) with this Flooding sizes the parameters for it"
                if self.shareable is None
                else f"this plan was sized for {self.shareable!r}"
            )
            raise ks.ParameterError(f"{e}; {hint} (docs/NN.md, 'Results to share')") from None
        values = self._finish(np.real(d.values)[self.out_layout] * self.out_unit)
        return FloodedOutput(values, d.precision_bits - math.log2(self.out_unit), d.sigma, d.noise_bound)

    def _finish(self, logits: np.ndarray) -> np.ndarray:
        """The model's last softmax, log-softmax or sigmoid applied to the plan's outputs (output_kind "model")."""
        if self.final is None or self.output_kind == "logits":
            return logits
        if self.final[0] == "sigmoid":
            return 1.0 / (1.0 + np.exp(-logits))
        z = logits - logits.max()
        log_sum = np.log(np.exp(z).sum())
        return np.exp(z - log_sum) if self.final[0] == "softmax" else z - log_sum

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
        if ct.level < self.input_level:
            raise ks.LevelError(
                f"the model reads its input at level {self.input_level} or above (plan.encrypt puts it there), this "
                f"ciphertext is at level {ct.level}"
            )

    def run_many(self, cts, workers=None, threads=1, evaluator=None) -> list:
        """Several encrypted samples, `workers` of them in flight at once (default: one per core), each run on
        `threads` threads: the throughput of a server with many images to do, where one image's operations do not
        fill the cores (their heavy calls release the GIL). The results in the order given, each what run() gives."""
        from concurrent.futures import ThreadPoolExecutor

        cts = list(cts)
        for ct in cts:
            self.check_input(ct)
        workers = max(1, min(len(cts), workers or ks.hardware_threads()))
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda ct: self.run(ct, threads=threads, evaluator=evaluator), cts))

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
        vals = {0: ct if ct.level == self.input_level else ev.drop_level(ct, self.input_level)}
        for k, s in enumerate(self.steps):
            self.ctx.release_device_memory()  # on a GPU, the blocks kept from the last step: see release_freed
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
                # the heap's free blocks back to the system before the largest working set: SmallCNN (6 bootstraps,
                # 2 threads) peaked at 4.5 GB instead of 4.8, in the same time
                release_freed()
                out = ev.bootstrap(ins[0], self.bootstrapper, threads=threads)
            elif isinstance(s, ReluJoin) and s.clip:  # u (s - t) + c (1 + t), c on the value's slots alone
                prod = ev.multiply(ins[0], ev.sub(ins[1], ins[2], threads=threads), threads=threads)
                c = at_slots(s.clip / s.s_in, s.layout, s.period, self.ctx.slots)
                out = ev.add(prod, ev.add_plain(ev.multiply_plain(ins[2], c, threads=threads), c, threads=threads))
            elif isinstance(s, ReluJoin):
                prod = ev.multiply(ins[0], ins[1], threads=threads)
                out = ev.add(ev.drop_level(ins[0], prod.level), prod)
            elif s.kind == "square":
                out = ev.square(ins[0], threads=threads)
            else:
                x = ins[0] if not s.shift else ev.add_plain(ins[0], -s.shift / s.s_in, threads=threads)
                out = ev.evaluate_polynomial(x, s.poly, threads=threads)
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
        return write_plan(self)

    def forward_clear(self, x) -> np.ndarray:
        """The plan in plain arithmetic (the affine maps and the polynomials it evaluates): what run() computes
        without the encryption's noise, read as decrypt reads it."""
        return self._finish(self.clear_outputs(x))

    def clear_outputs(self, x, noise=None) -> np.ndarray:
        """The plan's outputs in plain arithmetic (before the model's last softmax or sigmoid, as forward_clear
        applies). noise: None, or a callable(step, values, before=False) -> values applied to the input (step None),
        to each affine step's inputs (before=True) and to each step's output (noise.carried: the encryption's
        noise)."""
        v = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
        return self._clear(v / self.in_unit, check=False, noise=noise) * self.out_unit

    @property
    def expected_error(self) -> float | None:
        """The largest logit error to expect from an encrypted run (the model's units): the clear arithmetic's on the
        calibration inputs plus what the encryption's noise, measured at compile, adds (kasoku.nn.noise); None for a
        plan compiled with noise=False."""
        c = self.calibration
        return None if c is None or "noise_error" not in c else c["logit_error"] + c["noise_error"]


ENCODED_BYTES = 4 << 30  # the most host memory a plan's transforms keep encoded; the others are encoded at each use


def at_slots(values, layout: np.ndarray, period: int, slots: int) -> np.ndarray:
    """`values` at the slots `layout` of a vector of `period`, 0 in the others, repeated over the ring's slots (a
    value's layout: the input, a bias, a ReLU6's constant)."""
    out = np.zeros(period)
    out[layout] = values
    return np.tile(out, slots // period)


def load(
    data: bytes, device: str = "cpu", threads=None, max_bytes: int = 4 << 30, max_encoded_bytes: int | None = None
) -> Plan:
    """A plan saved by Plan.to_bytes, its transforms encoded for a context of its parameters on `device`
    (PyTorch is not needed). Raises ks.SerializationError, saying what is wrong, for bytes that are not such a plan
    (truncated, corrupted: each part is checked against its CRC, or inconsistent), or whose parts would take more
    than max_bytes once decompressed. The weights stay sparse (row, column, value), as they were saved.
    max_encoded_bytes: as for compile; None: on the CPU what compile took (for a plan whose parameters it chose, within
    the memory class it chose them for), so that the loaded plan holds what the compiled one held; on a GPU its
    default."""
    f = read_plan(data, max_bytes)
    if max_encoded_bytes is None and device == "cpu":
        max_encoded_bytes = f["max_encoded_bytes"]
    steps, output, in_layout, out_layout = f["steps"], f["output"], f["in_layout"], f["out_layout"]
    ctx = ks.Context(f["params"], threads=threads, device=device)
    check_plan(steps, output, f["in_shape"], in_layout, f["out_dim"], out_layout, ctx, f["input_level"])
    boot, budget = None, encoding_budget(ctx, max_encoded_bytes)
    if any(isinstance(st, Bootstrap) for st in steps):
        boot, budget = plan_bootstrapper(ctx, int(f["boot_slots"]), threads, budget)
    encode(steps, ctx, threads, budget)
    release_freed(ctx)
    plan = Plan(
        steps,
        output,
        f["in_shape"],
        in_layout,
        f["in_unit"],
        f["out_dim"],
        out_layout,
        f["out_unit"],
        f["params"],
        ctx,
        boot,
        None,
        f["input_level"],
    )
    plan.calibration, plan.final, plan.output_kind = f["calibration"], f["final"], f["output_kind"]
    plan.tuned_for, plan.max_encoded_bytes = f["tuned_for"], max_encoded_bytes
    if f["shareable"] is not None:
        plan.shareable, plan.shareable_bits = f["shareable"]
    return plan


def galois_levels_of(steps, ctx, bootstrapper, at=None, elements=None) -> dict[int, int]:
    """Plan.galois_levels of these steps and this bootstrapper: each Affine step at its level with its transforms'
    plans, or (at) at at[i] for steps[i] with the Galois elements of plans made for ctx at that level, kept in
    `elements` by step (an estimate for other levels: a plan's split between baby and giant steps depends on its
    level, and making ResNet-20's takes 13 s)."""
    levels: dict[int, int] = {}
    elements = {} if elements is None else elements
    for i, s in enumerate(steps):
        if isinstance(s, Affine):
            level = s.level if at is None else at[i]
            if at is None:
                gs = [g for plan in s.plans for g in plan[2]]
            else:
                if id(s) not in elements:
                    elements[id(s)] = [g for o in s.offsets for g in ks.LinearTransform.plan(ctx, o, level=level)[2]]
                gs = elements[id(s)]
            uses = [(g, level) for g in gs]
            uses += [(ctx.galois_element(k), level - 1) for k in s.sums]
            for g, lv in uses:
                levels[g] = max(lv, levels.get(g, -1))
    if bootstrapper is not None:
        for g, lv in bootstrapper.galois_levels().items():
            levels[g] = max(lv, levels.get(g, -1))
    return levels


def keys_bytes(ctx, galois_levels: dict, bootstrapper, compact: bool | None = None, block=None) -> int:
    """Plan.key_bytes for these Galois keys' levels and this bootstrapper; block: what an allocation of so many bytes
    takes (device_block on a GPU)."""
    p = ctx.params
    block = block or (lambda b: b)
    if compact is None:
        compact = bootstrapper is not None and ctx.device == "cpu"
    top = ctx.max_level
    total = switch_key_bytes(ctx, top, 2, whole=True, block=block) + sum(
        switch_key_bytes(ctx, lv, 1 if compact else 2, block=block) for lv in galois_levels.values()
    )
    if bootstrapper is not None and p.boot_secret_weight > 0:
        # to the sparse secret (q_0 * p_0, one digit), and back
        total += 2 * block(8 * 2 * p.n) + switch_key_bytes(ctx, top, 2, whole=True, block=block)
    return total


def switch_key_bytes(ctx, level: int, parts: int, whole: bool = False, block=None) -> int:
    """The memory of a key switching key for levels up to `level` (over Q_level * P_k, one pair of parts per digit of
    Q_level, P_k the special primes those levels need: ctx.special_primes_at; a compact key: its b-parts, one part).
    whole: a key for every level, over all of P (the relinearisation key). block: as keys_bytes (each part one
    allocation)."""
    p = ctx.params
    special = p.special_primes if whole else ctx.special_primes_at(level)
    part = 8 * (level + 1 + special) * p.n
    return -(-(level + 1) // p.alpha) * parts * (block(part) if block else part)


def working_bytes(ctx) -> int:
    """A bootstrap's hoisted baby steps: 16 ciphertexts over Q * P at the top, the most an inference holds at once
    beyond its values on the CPU (an estimate)."""
    p = ctx.params
    return 16 * 2 * (ctx.max_level + 1 + p.special_primes) * p.n * 8


def device_block(nbytes: int) -> int:
    """The bytes a device allocation of nbytes takes from the GPU's arena: its size class, m * 2^e words with m in
    5..8 (src/kasoku/gpu/device_memory.hpp, DeviceMemory::size_class)."""
    words = -(-nbytes // 8)
    if words <= 8:
        return 8 * words
    e = (words - 1).bit_length() - 3
    return 8 * (((words + (1 << e) - 1) >> e) << e)


def bootstrap_device_bytes(ctx, ev, ct, bootstrapper, threads=None):
    """One bootstrap of ct on a GPU context, and the device memory it took beyond what was held before (its working
    set, its output and what it leaves kept for the context: Context.device_memory's peak, the arena released
    first)."""
    ctx.release_device_memory()
    before = ctx.device_memory(reset_peak=True)["held_bytes"]
    out = ev.bootstrap(ct, bootstrapper, threads=threads)
    return out, ctx.device_memory()["peak_bytes"] - before


def measure_bootstrap_device_bytes(ctx, bootstrapper, threads=None) -> int:
    """bootstrap_device_bytes with keys made for it and dropped (a ciphertext of zeros; the memory does not depend
    on the values)."""
    keys = ctx.keygen(relin=True, bootstrapping=bootstrapper, threads=threads, progress=False)
    s = bootstrapper.slots
    ct = ctx.encrypt(np.zeros(s), keys.public, level=bootstrapper.input_level, slots=s if s < ctx.slots else None)
    nbytes = bootstrap_device_bytes(ctx, ctx.evaluator(keys.evaluation()), ct, bootstrapper, threads)[1]
    del keys, ct
    ctx.evaluator(None)  # the context's operators' evaluator would otherwise keep the keys alive
    ctx.release_device_memory()
    return nbytes


def affine_device_bytes(s: Affine, ctx) -> int:
    """An affine step's working set on a GPU (an estimate): per transform (they run one after another), its baby
    steps' ciphertexts, one per giant step and two more over its product basis (Q_level * P_k extended, else
    Q_level), and its diagonals encoded at use (at most LinearTransform's 512 MiB batch at once; kept encoded: held
    by the plan already)."""
    p = ctx.params
    words = min(p.n, 2 * max(s.p_out, s.p_in))  # a diagonal's, a limb (_encoded_bytes)
    worst = 0
    for offs, plan in zip(s.offsets, s.plans):
        limbs = s.level + 1 + (ctx.special_primes_at(s.level) if plan[4] == "extended" else 0)
        ct = 2 * device_block(8 * limbs * p.n)
        at_use = 0 if s.lts is not None else min(512 << 20, len(offs) * device_block(8 * limbs * words))
        worst = max(worst, (len(plan[0]) + len(plan[1]) + 2) * ct + at_use)
    return worst


def release_freed(ctx=None) -> None:
    """Returns the memory the process has freed to the system (glibc's malloc_trim; elsewhere nothing): compiling a
    large network frees hundreds of MB of small objects, which would otherwise stay resident under what comes next.
    With a context on a GPU, also the device memory its arena keeps for reuse (Context.release_device_memory): a
    plan's steps work at different sizes, and blocks kept from one step would add to the next one's (ResNet-20 on the
    emulated GPU: 13.0 GB kept across steps, 11.6 released before each)."""
    if ctx is not None:
        ctx.release_device_memory()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _encoded_bytes(s: Affine, ctx) -> int:
    """The memory of the step's transforms encoded: each diagonal over Q_level * P or Q_level (its plan's product
    basis), in its subring where its period is below the slots (2 period words a limb)."""
    p = ctx.params
    words = min(p.n, 2 * max(s.p_out, s.p_in))
    return sum(
        len(offs) * 8 * words * (s.level + 1 + (p.special_primes if plan[4] == "extended" else 0))
        for offs, plan in zip(s.offsets, s.plans)
    )


def _transforms(s: Affine, ctx, threads, at_use: bool = False) -> list:
    """The step's transforms for the context at its level (its diagonals tiled to the slots): encoded, or (at_use)
    holding the values and encoding each giant step's diagonals when apply reaches it. One input's diagonals at a
    time, each released once its transform holds them (a large transform's are hundreds of MB)."""
    out = []
    for k, plan in enumerate(s.plans or [None] * len(s.Ws)):
        diags = {
            r: d if d.size == ctx.slots else np.tile(d, ctx.slots // d.size)
            for r, d in diagonals_of_input(s, k).items()
        }
        out.append(
            ks.LinearTransform(
                ctx,
                diags,
                level=s.level,
                baby=(plan[3] or None) if plan else None,  # the split found when the plan was made
                threads=threads,
                at_use=at_use,
            )
        )
        del diags
    return out


def encoding_budget(ctx, budget: int | None) -> int:
    """The bytes a plan's transforms may keep encoded: `budget`, or by default 4 GiB on the CPU (a laptop's 16 GB also
    holds the keys), half the device's memory on a GPU (encoding at use there is host work and a copy per diagonal,
    which would cost more than the GPU's arithmetic)."""
    if budget is None:
        budget = (ctx.device == "cuda" and ks.cuda_info().get("memory_bytes", 0) // 2) or ENCODED_BYTES
    return max(0, int(budget))


def plan_bootstrapper(ctx, slots: int, threads, budget: int):
    """The real-slot bootstrapper of `slots` slots with its transforms kept encoded where they fit in `budget` bytes,
    else encoded at each bootstrap (at_use: a plan of their values, a tenth of the size; the same results), and the
    budget left for the layers' transforms. The bootstrapping plan comes first: it runs at every bootstrap."""
    if budget > 0:
        b = ks.Bootstrapper(ctx, slots=slots, real=True, threads=threads)
        if b.plan_nbytes <= budget:
            return b, budget - b.plan_nbytes
        del b
    return ks.Bootstrapper(ctx, slots=slots, real=True, at_use=True, threads=threads), budget


def encode(steps, ctx, threads, budget: int | None = None) -> None:
    """The affine steps' transform plans and biases for the context; their transforms encoded (at each step's level)
    while they fit in `budget` bytes (encoding_budget), the smallest first, and encoded at each use beyond it, a giant
    step's diagonals at a time: a diagonal over Q_level * P at N = 2^16 is up to 9 MB; ResNet-20's 21 transforms hold
    about 10,000. The diagonals' values are then dropped (rebuilt from the weights where needed)."""
    budget = encoding_budget(ctx, budget)
    affine = [s for s in steps if isinstance(s, Affine)]
    for s in affine:
        if s.offsets is None:  # a loaded plan's
            summarize(s)
        s.plans = [ks.LinearTransform.plan(ctx, offs, level=s.level) for offs in s.offsets]
    size = {id(s): _encoded_bytes(s, ctx) for s in affine}
    for s in sorted(affine, key=lambda s: size[id(s)]):
        s.lts = None
        if size[id(s)] <= budget:
            budget -= size[id(s)]
            s.lts = _transforms(s, ctx, threads)
    for s in affine:
        s.bias = None
        if np.any(s.b):
            s.bias = at_slots(s.b, s.layout_out, s.p_out, ctx.slots)
