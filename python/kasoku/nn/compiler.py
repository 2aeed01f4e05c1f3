"""compile: a PyTorch model traced, its affine parts probed and packed, its activations approximated, its parameters
chosen and its bootstraps placed, into a Plan."""

from __future__ import annotations

import copy
import math
import os
import time

import numpy as np

import kasoku as ks

from .activations import SMOOTH, STAGE_DEPTH, degree_for, sign_polynomials
from .ir import Activation, Affine, Bootstrap, ReluJoin, plan_depth, value_levels, pow2, unit_of
from .packing import input_layout, pack_affine
from .placement import (
    choose_params,
    first_past,
    flood_bits,
    memory_class,
    place_bootstraps,
    prime_bits_for,
    shareable_params,
    units_of,
)
from .noise import statement
from .probe import probe_affine
from .runtime import (
    ENCODED_BYTES,
    Plan,
    encoding_budget,
    encode,
    galois_levels_of,
    switch_key_bytes,
    keys_bytes,
    measure_bootstrap_device_bytes,
    plan_bootstrapper,
    release_freed,
    working_bytes,
)
from .trace import (
    classify,
    lower_max_pools,
    mark_shapes,
    layer_name,
    affine_region,
    run_nodes,
    strip_final,
    tensor_inputs,
    import_torch,
    trace_model,
    source_line,
)


def _bootstrapper(ctx, held: int, threads):
    """The real-slot bootstrapper (one EvalMod for real values) of the fewest bytes, plan and keys (compact, each for
    the levels it serves), among those of `held` slots (the widest period a bootstrapped value has) up to all slots: a
    value of period p is also periodic in any multiple of p. Fewer slots are not always smaller: at N = 2^16 with 12
    user levels (and 16 bootstrapping levels, dnum 4), 8192 real slots take 2.99 GB (a 0.28 GB plan, 45 keys, some of
    them SlotToCoeff's own at levels 13-16), 16384 take 3.43 GB (0.56 GB, 50 keys) and 32768 take 3.54 GB (0.55 GB, 48
    keys)."""
    best = None
    for slots in (held << i for i in range(ctx.slots.bit_length()) if held << i <= ctx.slots):
        b = ks.Bootstrapper(ctx, slots=slots, real=True, threads=threads)
        cost = b.plan_nbytes + sum(switch_key_bytes(ctx, level, 1) for level in b.galois_levels().values())
        if best is None or cost < best[0]:
            best = (cost, b)
    return best[1]


_POOL_BYTES = 256 << 20  # the free blocks each thread's pool may hold (src/kasoku/support/memory.cpp)
# The heap's free blocks between live ones, beside what an inference holds: 0.6-0.7 GB (15-20 %) at SmallCNN's peaks
# on 2 threads with 3 to 7 bootstraps (bench/nn_memory.py, Zen 5, docs/NN.md).
_FREE_HEAP = 0.2


def _resident_bytes() -> int:
    """The process's resident memory now, after returning what it has freed (Linux; elsewhere 0)."""
    release_freed()
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _inference_bytes(steps, where, params, threads, elements: dict) -> int:
    """What an inference under these bootstrapping parameters would add to the process on the CPU, estimated before
    anything is encoded: the evaluation keys (compact, each for the levels it serves, the bootstrapper's for the widest
    period bootstrapped; the layers' with the Galois elements of their first estimate's plans, kept in `elements`), the
    bootstrapping plan with its transforms encoded at use, a bootstrap's hoisted working set, the block pool of each
    thread, and the heap's free blocks (_FREE_HEAP). The layers' transforms are encoded at use here too (their budget
    comes after)."""
    ctx = ks.Context(params)
    placed, input_level = place_bootstraps(steps, ctx.user_level)
    at = value_levels(placed, ctx.user_level, input_level)[1]
    boots = [s for s in placed if isinstance(s, Bootstrap)]
    boot = None
    if boots:
        held = min(ctx.slots, max(where[s.input][1] for s in boots))
        boot = ks.Bootstrapper(ctx, slots=held, real=True, at_use=True)
    keys = keys_bytes(ctx, galois_levels_of(placed, ctx, boot, at, elements), boot)
    plan = boot.plan_nbytes if boot is not None else 0
    total = keys + plan + working_bytes(ctx) + (threads or os.cpu_count() or 1) * _POOL_BYTES
    return int(total * (1 + _FREE_HEAP))


def _check_one_sample(torch, model, x0) -> None:
    """The model runs on example_input as one sample (a batch of one), or ks.ParameterError says what to pass instead:
    the mistake a new user makes first is a batch of samples as the example, which PyTorch reports deep inside a
    layer ("mat1 and mat2 shapes cannot be multiplied")."""
    with torch.no_grad():
        try:
            model(x0[None])
            return
        except Exception as e:  # noqa: BLE001 (any failure of the model on this input is reported below)
            error = f"{type(e).__name__}: {e}"
        if x0.dim() >= 2:
            try:
                model(x0)
            except Exception:  # noqa: BLE001, S110 (not a batch either: the general message follows)
                pass
            else:
                raise ks.ParameterError(
                    f"example_input has shape {tuple(x0.shape)}, which the model takes as a batch of {x0.shape[0]} "
                    f"samples: compile wants one sample, e.g. example_input[0] (shape {tuple(x0.shape[1:])}); pass the "
                    "batch as calibration=... to fix the activations' ranges from it"
                )
    raise ks.ParameterError(
        f"the model does not run on example_input (shape {tuple(x0.shape)}) as one sample ({error}); pass one input "
        "sample, without a batch dimension or with a batch dimension of 1"
    )


# ReLU's sign approximations compile tries in turn, coarsest first: (relu_eps, relu_bits). On a ResNet-32 of random
# weights (64 random CIFAR-shaped calibration images): the clear arithmetic within 0.034 of the logits (range 2.0) and
# 63 of 64 decisions with 30 bootstraps; 0.0099 and 64 of 64 with 31; 0.0036 with 46 (docs/NN.md).
_RELU_CHOICES = ((1 / 64, 10), (1 / 128, 12), (1 / 256, 14))


def _relu_steps(name, src: int, out: int, choice, stage_depth: int, peaks: dict, where: dict, clip: float = 0.0):
    """ReLU of value `src` into value `out`: the sign's stages for choice = (eps, bits) on new values, then the join.
    A ReLU6 (clip: min(max(x, 0), clip)) takes a second chain of the same stages on x - clip, its first stage reading
    src's ciphertext minus clip / unit (no level), and the join of the three (ReluJoin); src's peak must then cover
    x - clip too (the caller's)."""
    steps, signs = [], []
    stages = sign_polynomials(choice[0], choice[1], stage_depth)
    unit = unit_of(peaks[src])
    lay, per, z = where[src]
    for shift in (0.0, clip) if clip else (0.0,):
        prev = src
        for i, poly in enumerate(stages):
            sid = max(peaks) + 1
            peaks[sid] = 1.0
            what = f"sign of x - {shift:g}, stage" if shift else "sign stage"
            steps.append(
                Activation(
                    f"{name} {what} {i + 1}/{len(stages)}",
                    "sign",
                    poly=poly,
                    degree=poly.degree,
                    input=prev,
                    output=sid,
                    shift=shift if i == 0 else 0.0,
                    s_in=unit if i == 0 and shift else 1.0,
                )
            )
            where[sid] = (lay, per, z if not shift else np.zeros_like(z))  # odd: p(0) = 0; not so of x - clip
            prev = sid
        signs.append(prev)
    join = ReluJoin(name, [src, *signs], out, clip=clip, s_in=unit)
    if clip:
        join.layout, join.period = lay, per
    return steps + [join]


def _with_relu(steps: list, choice, stage_depth: int, peaks: dict, where: dict) -> list:
    """The steps with every ReLU's sign stages made again for choice = (eps, bits)."""
    out = []
    for s in steps:
        if isinstance(s, Activation) and s.kind == "sign":
            continue
        if isinstance(s, ReluJoin):
            out += _relu_steps(s.name, s.inputs[0], s.output, choice, stage_depth, peaks, where, s.clip)
        else:
            out.append(s)
    return out


def _clear_check(steps: list, peaks: dict, out_id: int, xs: np.ndarray, want: np.ndarray) -> dict:
    """The steps' arithmetic in the model's own units (a ReLU's sign reads its input divided by its unit, as the plan
    holds it) on the inputs xs (one a row) against the model's outputs: how many decisions (argmax) agree, the largest
    output error, and the smallest margin between the model's top two outputs."""
    sign_outputs = {s.output for s in steps if isinstance(s, Activation) and s.kind == "sign"}
    got = []
    for x in xs:
        vals = {0: x}
        for s in steps:
            if isinstance(s, Affine):
                vals[s.output] = s.forward([vals[i] for i in s.inputs])
            elif isinstance(s, ReluJoin):
                unit = unit_of(peaks[s.inputs[0]])
                vals[s.output] = s.forward([vals[s.inputs[0]] / unit] + [vals[i] for i in s.inputs[1:]]) * unit / 2
            elif isinstance(s, Activation) and s.kind == "sign" and s.input not in sign_outputs:
                vals[s.output] = s.forward(vals[s.input] / unit_of(peaks[s.input]))
            else:
                vals[s.output] = s.forward(vals[s.input])
        got.append(vals[out_id])
    got = np.asarray(got)
    top2 = np.sort(want, axis=1)[:, -2:] if want.shape[1] > 1 else np.zeros((len(want), 2))
    return {
        "inputs": len(xs),
        "decisions": int((got.argmax(axis=1) == want.argmax(axis=1)).sum()),
        "logit_error": float(np.abs(got - want).max()),
        "smallest_margin": float((top2[:, 1] - top2[:, 0]).min()),
    }


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
    relu_eps: float | None = None,
    relu_bits: int | None = None,
    max_encoded_bytes: int | None = None,
    max_memory_bytes: int | None = None,
    shareable=False,
    output: str = "model",
    simd: str | None = None,
    noise: bool = True,
):
    """Compiles a PyTorch model (nn.Module) for encrypted inference of one sample shaped like example_input (a batch
    dimension of 1 is dropped). calibration: a batch of inputs whose activations fix the Chebyshev intervals
    (default: the example input), widened by `margin` on each side. params: a ks.Parameters, or None for the
    smallest 128-bit set with the plan's depth and slots at `precision_bits` (Parameters.for_circuit; precision_bits
    None: the most the smallest ring gives), or a bootstrapping preset when none holds the depth. bootstrap: place
    bootstraps where the levels run out (parameters that can bootstrap), or refuse such a model. relu_eps,
    relu_bits: ReLU is u (1 + sign u) / 2 on its input divided by its unit (the power of two above its peak, with
    the margin), the sign a composite of minimax polynomials within 2^-relu_bits of it where abs(u) >= relu_eps, in
    the fewest levels (activations.sign_stages: 9 levels for 1/64 and 10 bits): within relu_eps times the unit below
    relu_eps, within 2^-relu_bits times abs(x) above it. Both None: chosen, the first of (1/64, 10), (1/128, 12),
    (1/256, 14) with which the plan's clear arithmetic takes the model's decision on every calibration input (else
    the one that takes the most); plan.calibration and repr(plan) say what it gave. max_encoded_bytes: the memory
    the transforms may keep encoded (the bootstrapping plan first, then the layers' smallest first; default 4 GiB on
    the CPU, half the device's memory on a GPU); the others are encoded at each use, for a few seconds each at N =
    2^16 (a large network's diagonals over Q * P would take tens of GB; ResNet-20 on one Zen 5 thread: 134.5 s and
    7.8 GB peak with 0, 121.5 s and 9.1 GB with 1 GiB); by default, where params=None chose bootstrapping parameters
    on the CPU, at most half of what their estimated peak leaves in its memory class. max_memory_bytes (params=None,
    bootstrapping on the CPU): the peak an inference may take, estimated before compiling (the process's resident
    memory, the keys, the bootstrapping plan, a bootstrap's working set and each thread's block pool): the
    parameters of the fewest bootstraps that fit it (more user levels between bootstraps cost larger keys); by
    default the smallest of 4, 8 and 16 GiB that any fits (a CNN of four ReLUs on 3 x 32 x 32 inputs on 2 threads: 7
    bootstraps in 3.6 GB, where the fewest, 3, took 6.2 GB with no transform kept). shareable: True or a
    ks.Flooding: outputs meant to be shared, flooded (plan.decrypt(ct, flood=...)): params=None chooses parameters
    whose scale keeps precision_bits after that flood, which costs about 31 bits over the noise at 40-bit
    statistical security (docs/NN.md, 'Results to share'); such a plan does not bootstrap (a bootstrap keeps about
    20 bits, fewer than the flood takes); precision_bits None: the most the smallest ring gives. output: a model
    ending with a softmax, log-softmax or sigmoid has the plan compute what it reads (the logits: the same
    decisions, no approximation) and the client apply it after decryption ("model", the default: plan.decrypt gives
    the model's outputs) or not ("logits"). simd: the kernels the plan will run on, "scalar", "avx2", "avx512",
    "ifma" or "cuda" (None: this machine's, ks.simd_active(), or "cuda" with device="cuda"): params=None picks
    bootstrapping and special primes on their fast path (below 2^50 for every body today); the plan runs
    correctly anywhere and repr(plan) says what it was tuned for. noise: measure the encryption's noise on the
    plan's context with a throwaway key (an encryption, and one bootstrap for a plan that bootstraps: some seconds
    and the bootstrapping keys' memory at N = 2^16) and carry it through the plan's clear arithmetic, so that
    plan.expected_error and repr(plan) state the logit error to expect before keygen (kasoku.nn.noise). Raises
    ks.ParameterError naming the layer for what it cannot compile."""
    torch = import_torch()
    t0 = time.perf_counter()
    shareable_bits = None  # what params=None sized the outputs to keep after the flood
    flooding = None if shareable is False or shareable is None else ks.Flooding() if shareable is True else shareable
    if flooding is not None and not isinstance(flooding, ks.Flooding):
        raise ks.ParameterError(f"shareable must be True, False or a ks.Flooding, not {shareable!r}")
    model = copy.deepcopy(model).eval().double()
    x0 = torch.as_tensor(example_input, dtype=torch.float64)
    if x0.dim() >= 2 and x0.shape[0] == 1:
        x0 = x0[0]
    _check_one_sample(torch, model, x0)
    in_shape = tuple(x0.shape)
    if output not in ("model", "logits"):
        raise ks.ParameterError(f'output must be "model" or "logits", not {output!r}')
    targets = ("scalar", "avx2", "avx512", "ifma", "cuda")
    if simd is not None and simd not in targets:
        raise ks.ParameterError(f"simd must be one of {', '.join(targets)} (or None: this machine's), not {simd!r}")
    target = simd or ("cuda" if device != "cpu" else ks.simd_active())
    gm = trace_model(torch, model)
    final = strip_final(torch, gm)  # a last softmax, log-softmax or sigmoid: applied by the client after decryption
    lower_max_pools(torch, gm, x0)
    mark_shapes(torch, gm, x0)
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
        kinds[n] = classify(torch, n, modules)
        if isinstance(kinds[n], tuple) and kinds[n][0] == "unsupported":
            raise ks.ParameterError(f"layer {layer_name(n, modules)}{source_line(n)}: {kinds[n][1]}")
        if kinds[n] != "affine" and len(tensor_inputs(n)) != 1:
            raise ks.ParameterError(f"layer {layer_name(n, modules)}{source_line(n)}: an activation reads one tensor")
    # The values the plan holds as ciphertexts: the input, every activation's output, and the tensors activations and
    # the output read (affine ones: each is computed from the activations before it in one transform, so that every
    # run of affine layers, branches and joins included, costs one level).
    acts = [n for n in nodes if kinds[n] != "affine"]
    held = [placeholders[0]] + acts
    held += [m for m in [tensor_inputs(a)[0] for a in acts] + outputs if m not in held]
    held = [n for n in gm.graph.nodes if n in held]  # in graph order: every value after the ones it reads
    vid = {n: i for i, n in enumerate(held)}
    cal = torch.as_tensor(calibration, dtype=torch.float64) if calibration is not None else x0[None]
    cal = cal.reshape(-1, *in_shape)
    with torch.no_grad():
        ex = run_nodes(torch, gm, nodes, {placeholders[0]: x0[None]})
        calv = run_nodes(torch, gm, nodes, {placeholders[0]: cal})
    absmax = {n: float(t.abs().max()) for n, t in calv.items() if isinstance(t, torch.Tensor)}
    for n in nodes:  # the largest value the calibration shows anywhere: q_0 holds it
        if n not in absmax or n.meta.get("kasoku_const"):
            continue
        peak = absmax[n]
        if not peak < 2.0**30:
            raise ks.ParameterError(
                f"layer {layer_name(n, modules)}: the calibration data drives its outputs to {peak:.3g} (2^"
                f"{math.log2(peak) if math.isfinite(peak) else math.inf:.0f}), beyond the 2^30 CKKS holds above its "
                "scale: scale the inputs or the weights down (values near 1 keep every level's precision)"
            )
    in_layout = input_layout(in_shape)
    dim0 = int(np.prod(in_shape))
    peaks = {vid[m]: absmax[m] * (1 + margin) for m in held}  # with the margin
    # where each held value sits: index i at slot layout[i] of a vector of `period`; zero: slots known to hold 0
    where = {0: (in_layout, pow2(dim0), ~np.isin(np.arange(pow2(dim0)), in_layout))}
    steps: list = []
    if relu_eps is None and relu_bits is None:
        relu_choices = list(_RELU_CHOICES)
    else:
        relu_choices = [(1 / 64 if relu_eps is None else relu_eps, 10 if relu_bits is None else relu_bits)]
    # a sign stage fits between two bootstraps of the parameters given (the presets params=None picks hold 6 levels)
    stage_depth = STAGE_DEPTH if params is None or params == "auto" else max(2, min(STAGE_DEPTH, params.levels))
    with torch.no_grad():
        for n in held[1:]:
            step: Affine | Activation
            if kinds[n] == "affine":
                region, ins = affine_region(n, held, kinds)
                step = probe_affine(torch, gm, region, ins, ex, ", ".join(layer_name(m, modules) for m in region))
                step.inputs, step.output = [vid[m] for m in ins], vid[n]
                step.layouts_in = [where[i][0] for i in step.inputs]
                step.p_in = max(where[i][1] for i in step.inputs)
                main = where[step.inputs[0]]
                zero = np.tile(main[2], step.p_in // main[1])
                pack_affine(step, 2 * max(step.p_in, pow2(step.Ws[0].shape[0])), zero)
                z = np.ones(step.p_out, dtype=bool)  # the transform writes only its outputs' slots
                z[step.layout_out] = False
                where[vid[n]] = (step.layout_out, step.p_out, z)
            else:
                src = tensor_inputs(n)[0]
                kind, name = kinds[n], layer_name(n, modules)
                lay, per, z = where[vid[src]]
                if kind[0] == "relu":  # u (1 + p_m(...p_1(u))): the sign's stages, then the join
                    clip = kind[1] if len(kind) > 1 else 0.0
                    if clip and absmax[src] * (1 + margin) <= clip:  # never clipped where the plan is meant to run
                        name, clip = f"{name}, as ReLU: below {clip:g} on the calibration data", 0.0
                    if clip:  # the sign of x - clip reads x in the same unit
                        peaks[vid[src]] = max(peaks[vid[src]], absmax[src] * (1 + margin) + clip)
                    steps += _relu_steps(name, vid[src], vid[n], relu_choices[0], stage_depth, peaks, where, clip)
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
                    fn = SMOOTH[kind[1]]
                    poly = degree_for(fn, interval, max_activation_depth, activation_error)
                    step = Activation(name, "chebyshev", fn=fn, interval=interval, poly=poly, degree=poly.degree)
                    z = np.zeros_like(z)  # f(0) != 0 in the slots between the values
                step.input, step.output = vid[src], vid[n]
                where[vid[n]] = (lay, per, z)
            steps.append(step)
    out_id = vid[outputs[0]]
    if final is not None and final[0] != "sigmoid" and (ex[outputs[0]].dim() != 2 or final[1] not in (None, 1, -1)):
        raise ks.ParameterError(
            f"the model ends with {final[0]} over dim {final[1]} of outputs shaped {tuple(ex[outputs[0]].shape)}: "
            "kasoku.nn takes a last softmax over the classes of a flat output (one dimension a sample), applied "
            "after decryption; end the model before it"
        )
    # The plan's clear arithmetic on the calibration inputs against the model's outputs; ReLU's approximation made
    # finer (relu_choices) until every decision is the model's.
    cal_x = cal.reshape(len(cal), -1).numpy()
    cal_want = calv[outputs[0]].reshape(len(cal), -1).numpy()
    relu, check = relu_choices[0], _clear_check(steps, peaks, out_id, cal_x, cal_want)
    for choice in relu_choices[1:]:
        if check["decisions"] == check["inputs"]:
            break
        finer = _with_relu(steps, choice, stage_depth, peaks, where)
        finer_check = _clear_check(finer, peaks, out_id, cal_x, cal_want)
        if finer_check["decisions"] > check["decisions"]:
            steps, relu, check = finer, choice, finer_check
    if any(isinstance(s, ReluJoin) for s in steps):
        check["relu"] = relu
    out_dim = int(np.prod(ex[outputs[0]].shape[1:]))
    depth = plan_depth(steps)
    slots = max([pow2(dim0)] + [max(s.p_in, s.p_out) for s in steps if isinstance(s, Affine)])
    chosen = params is None or params == "auto"
    if chosen:
        integer_bits = min(30, max(8, math.ceil(math.log2(2 * max(peaks.values()) + 1e-300)) + 1))
        estimate = None
        if bootstrap and device == "cpu":
            base, elements, sizes = _resident_bytes(), {}, {}

            def estimate(p):  # each candidate's once (the chosen one is asked again below)
                if p.levels not in sizes:
                    sizes[p.levels] = base + _inference_bytes(steps, where, p, threads, elements)
                return sizes[p.levels]

        if flooding is None:
            params = choose_params(
                steps,
                depth,
                slots,
                precision_bits,
                bootstrap,
                integer_bits,
                estimate,
                max_memory_bytes,
                prime_bits_for(target),
            )
        else:  # one chain of levels whose scale keeps precision_bits after the flood, whose cost grows with N
            params, shareable_bits = shareable_params(steps, depth, slots, precision_bits, flooding, integer_bits)
        if estimate is not None and params.boot_levels > 0 and max_encoded_bytes is None:
            peak = estimate(params)
            if (limit := memory_class(peak, max_memory_bytes)) is not None:
                # half of what the estimate leaves (its free blocks are a measured share, not a bound)
                max_encoded_bytes = min(ENCODED_BYTES, max(0, limit - peak) // 2)
    ctx = ks.Context(params, threads=threads, device=device)
    if ctx.slots < slots:
        raise ks.ParameterError(
            f"the model packs vectors of {slots} values, the parameters have {ctx.slots} slots: "
            "pass parameters with a larger ring, or params=None"
        )
    bootstrapper, input_level = None, ctx.user_level
    if ctx.user_level < depth:
        p = ctx.params
        if not bootstrap or not (p.boot_levels > 0 or p.hamming_weight > 0 or p.boot_secret_weight > 0):
            why = (
                "bootstrap=False"
                if not bootstrap
                else "the parameters cannot bootstrap (no sparse secret, no bootstrapping levels)"
            )
            raise ks.ParameterError(
                f"layer {first_past(steps, ctx.user_level)} is past the last of the parameters' "
                f"{ctx.user_level} levels (the model needs {depth}) and {why}: pass parameters "
                "with more levels or bootstrapping (e.g. BOOT16), or params=None to have them "
                "chosen"
            )
        if flooding is not None:
            raise ks.ParameterError(
                f"shareable: the model needs {depth} levels and bootstraps, and a bootstrapped output keeps about 20 "
                f"bits, fewer than the {flood_bits(flooding, 16)} a flood for {flooding!r} takes: share it with "
                "shareable=False through a multiparty decryption (docs/MULTIPARTY.md), or use a shallower model"
            )
        steps, input_level = place_bootstraps(steps, ctx.user_level)
        held = min(ctx.slots, max(where[s.input][1] for s in steps if isinstance(s, Bootstrap)))
        bootstrapper = _bootstrapper(ctx, held, threads)
    units = units_of(steps, peaks)
    for s, level in zip(steps, value_levels(steps, ctx.user_level, input_level)[1]):
        s.level = level
    budget = encoding_budget(ctx, max_encoded_bytes)
    if bootstrapper is not None:
        bootstrapper, budget = plan_bootstrapper(ctx, bootstrapper.slots, threads, budget)
    encode(steps, ctx, threads, budget)
    release_freed(ctx)
    plan = Plan(
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
        input_level,
    )
    plan.calibration = check
    if noise or (ctx.device != "cpu" and bootstrapper is not None):  # measured on the plan's context, with keys
        if noise:
            check.update(statement(plan, cal_x, threads))
        else:  # a bootstrap's device memory, for plan.memory() (statement measures it with the noise)
            check["bootstrap_device_bytes"] = measure_bootstrap_device_bytes(ctx, bootstrapper, threads)
        release_freed(ctx)
        plan.compile_s = time.perf_counter() - t0
    plan.final, plan.output_kind, plan.max_encoded_bytes = final, output, max_encoded_bytes
    if params.boot_levels > 0 and chosen:  # bootstrapping parameters chosen for the kernels of `target`
        plan.tuned_for = target
    if flooding is not None:
        plan.shareable, plan.shareable_bits = flooding, shareable_bits
    return plan
