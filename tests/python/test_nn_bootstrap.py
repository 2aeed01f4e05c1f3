"""kasoku.nn: where bootstraps go and which parameters a plan gets (placement over the graph, the memory asked for,
ReLU's sign stages between bootstraps)."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn as nn

import kasoku as ks
import kasoku.nn as ksnn
from kasoku.nn.ir import Bootstrap
from kasoku.nn.activations import sign_stages
from conftest import small_boot_params


def test_bootstraps_are_placed_where_the_levels_run_out():
    """Layers of 8 or more levels on parameters with four user levels between bootstraps (research parameters at
    N = 2^10, no security claim: fast): a bootstrap before each layer that would fall below level 0, the bootstrapped
    values held in [-1, 1]."""
    torch.manual_seed(9)
    model = nn.Sequential(
        nn.Flatten(),
        nn.Linear(16, 8),
        ksnn.Square(),
        nn.Linear(8, 8),
        nn.SiLU(),
        nn.Linear(8, 8),
        ksnn.Square(),
        nn.Linear(8, 4),
    ).eval()
    params = small_boot_params(4)
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, threads=2)
    kinds = [type(s).__name__ for s in plan.steps]
    silu = next(s for s in plan.steps if isinstance(s, ksnn.Activation) and s.kind == "chebyshev")
    assert silu.depth <= 4
    # linear, x^2, linear: level 4 -> 1; SiLU needs its depth: a bootstrap first; ... every step at or above level 0
    assert plan.bootstraps == kinds.count("Bootstrap") >= 2 and kinds[0] == "Affine"
    level = plan.ctx.user_level
    for s in plan.steps:
        level = plan.ctx.user_level if isinstance(s, ksnn.Bootstrap) else s.level - s.depth
        assert level >= 0
    assert "bootstraps" in repr(plan)
    # each bootstrap's failure probability is the default bootstrapper's, and the plan states the inference's
    assert plan.bootstrapper.failure_probability <= 2.0**-128
    assert re.search(r"each fails with probability <= 2\^-1[2-9]\d\.\d", repr(plan)), repr(plan)
    with pytest.raises(ks.ParameterError, match=r"layer 4 \(SiLU\) is past the last .*bootstrap=False"):
        ksnn.compile(model, calibration[:1], calibration=calibration, params=params, bootstrap=False)
    keys = plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - want)) < 1e-2
    # saved and loaded, bootstraps included: the same bytes out
    loaded = ksnn.load(plan.to_bytes(), threads=2)
    assert loaded.bootstraps == plan.bootstraps and loaded.bootstrapper.slots == plan.bootstrapper.slots
    loaded.use(ks.EvaluationKeys.from_bytes(loaded.ctx, keys.evaluation().to_bytes()))
    ct = plan.encrypt(calibration[0])
    out = loaded.run(ks.Ciphertext.from_bytes(loaded.ctx, ct.to_bytes()))
    assert out.to_bytes() == plan.run(ct).to_bytes()
    # a plan compiled to keep nothing encoded (as params=None does for a memory class with no room left) loads so:
    # the bootstrapping plan and the transforms encoded at each use, not within load's default 4 GiB
    lean = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, max_encoded_bytes=0)
    held = {k: v for k, v in lean.memory().items() if k in ("bootstrap_plan", "transforms")}
    assert held["transforms"] == 0 and held["bootstrap_plan"] < plan.memory()["bootstrap_plan"]
    for again in (ksnn.load(lean.to_bytes()), ksnn.load(ksnn.load(lean.to_bytes()).to_bytes())):
        assert again.max_encoded_bytes == 0
        assert {k: v for k, v in again.memory().items() if k in held} == held
    assert ksnn.load(lean.to_bytes(), max_encoded_bytes=1 << 30).memory()["transforms"] > 0


def test_bootstrapping_parameters_are_chosen_for_the_plan():
    """A plan no 128-bit ring holds gets N = 2^16 bootstrapping parameters with the fewest user levels that give the
    fewest bootstraps: every set 128-bit secure, every prime but q_0 below 2^50 (every body's fast path), the fewest
    key-switching digits that fit; a chain of ReLU blocks of 11 levels takes 11 (one bootstrap a block), not 14."""
    from kasoku.nn.ir import Activation, Affine, ReluJoin
    from kasoku.nn.placement import BOOT_LEVELS, bootstrapping_params, choose_params, prime_bits_for

    for levels in range(6, 15):
        p = bootstrapping_params(levels)
        assert p.levels == levels and p.security == 128 and p.log_qp <= 1772
        assert p.boot_bits == p.special_bits == 50 and max(p.scale_bits, p.boot_bits, p.special_bits) <= 50
        fewer = p.dnum - 1
        if fewer >= 2:  # one digit fewer leaves no room for 50-bit bootstrapping primes
            alpha = -(-(1 + levels + BOOT_LEVELS) // fewer)
            assert 60 + 40 * levels + BOOT_LEVELS * 50 + alpha * 50 > 1772
    assert bootstrapping_params(7).dnum == 2 and bootstrapping_params(8).dnum == 3
    assert bootstrapping_params(10).dnum == 3 and bootstrapping_params(12).dnum == 4

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    steps, v = [], 0
    for block in range(6):  # affine, ReLU (sign stages of 4 and 5 levels, the join): 11 levels a block
        a = Affine(f"a{block}", [v], v + 1, [], np.zeros(1), [], 1, diags=[{0: np.ones(1)}])
        steps += [a, sign(15, v + 1, v + 2), sign(31, v + 2, v + 3), ReluJoin(f"r{block}", [v + 1, v + 3], v + 4)]
        v += 4
    p = choose_params(steps, 66, 1 << 15, None, True, 20)
    assert p.levels == 11 and p.log_n == 16
    # three blocks (33 levels) fit one N = 2^16 chain at 8 bits, with every key over its 34 primes: bootstrapped too
    assert ks.Parameters.for_circuit(33, 8, slots=1 << 15, integer_bits=20).log_n == 16
    assert choose_params(steps[:12], 33, 1 << 15, None, True, 20).boot_levels == BOOT_LEVELS
    assert choose_params(steps[:12], 33, 1 << 15, None, False, 20).boot_levels == 0
    # every body's fast path takes primes below 2^50 (AVX2's double-precision arithmetic too): the same primes for each
    # target; a narrower width (prime_bits) keeps the plan's shape, 128-bit
    assert all(prime_bits_for(t) == 50 for t in ("scalar", "avx2", "avx512", "ifma", "cuda"))
    p48 = choose_params(steps, 66, 1 << 15, None, True, 20, prime_bits=48)
    assert p48.boot_bits == p48.special_bits == 48 and p48.levels == 11 and p48.log_qp <= 1772
    for levels in range(6, 15):
        assert bootstrapping_params(levels, 48).log_qp <= 1772
    with pytest.raises(ks.ParameterError, match="simd must be one of"):
        ksnn.compile(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), torch.rand(1, 2, 2), simd="neon")


def test_bootstrapping_parameters_fit_the_memory_asked():
    """With an estimate of each candidate's peak, params=None takes the fewest bootstraps among the parameters that fit
    max_memory, or the smallest memory class any fits (4, 8, 16 GiB), or else the smallest estimate; without one, the
    fewest bootstraps. Candidates: for each number of bootstraps, the fewest user levels that give it."""
    from kasoku.nn.ir import Activation, Affine, ReluJoin
    from kasoku.nn.placement import choose_params, place_bootstraps

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    steps, v = [], 0
    for block in range(6):  # 11 levels a block, as above
        a = Affine(f"a{block}", [v], v + 1, [], np.zeros(1), [], 1, diags=[{0: np.ones(1)}])
        steps += [a, sign(15, v + 1, v + 2), sign(31, v + 2, v + 3), ReluJoin(f"r{block}", [v + 1, v + 3], v + 4)]
        v += 4

    def boots(p):
        return sum(isinstance(st, Bootstrap) for st in place_bootstraps(steps, p.levels)[0])

    gib = 1 << 30
    seen = []

    def estimate(p):  # a peak growing with the levels: 3 GiB at 5 levels, 0.5 GiB more a level
        seen.append(p.levels)
        return 3 * gib + (p.levels - 5) * gib // 2

    def choose(*memory):
        return choose_params(steps, 66, 1 << 15, None, True, 20, *memory)

    # candidates (levels: bootstraps): 5: 17, 6: 11, 9: 9, 10: 7, 11: 5 (7 and 8 give 11 too, with larger keys)
    assert choose().levels == 11 and boots(choose()) == 5
    lean = choose(estimate)
    assert sorted(seen) == [5, 6, 9, 10, 11]  # one estimate per candidate
    assert lean.levels == 6 and boots(lean) == 11  # 3.5 GiB: the 4 GiB class
    assert choose(estimate, 6 * gib).levels == 11
    assert choose(estimate, 5 * gib + gib // 4).levels == 9
    assert choose(estimate, gib).levels == 5  # none fits: the smallest


def test_the_memory_estimate_counts_the_keys_keygen_makes():
    """The estimate compile makes of each candidate's keys (runtime.galois_levels_of with the steps' levels given and
    their transforms' plans made for it) is the compiled plan's: the same Galois elements at the same levels."""
    from kasoku.nn.runtime import galois_levels_of

    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(
        model, calibration[:1], calibration=calibration, params=small_boot_params(4), threads=2, relu_eps=1 / 16
    )
    assert plan.bootstraps > 0
    at = [getattr(s, "level", None) for s in plan.steps]
    assert galois_levels_of(plan.steps, plan.ctx, plan.bootstrapper, at, {}) == plan.galois_levels()


def test_relu_by_sign_stages_with_bootstraps_between_them():
    """ReLU is u (1 + sign u) / 2 on its input held in [-1, 1], the sign a composite of minimax polynomials: on four
    levels between bootstraps, stages of at most four levels each (eps 1/16: degrees 3, 7, 7), three bootstraps (the
    fewest); the encrypted result is the plan's arithmetic, within relu_eps times the input's unit of the exact
    ReLU."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    params = small_boot_params(4)
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, threads=2, relu_eps=1 / 16)
    signs = [s for s in plan.steps if isinstance(s, ksnn.Activation) and s.kind == "sign"]
    assert [s.poly.degree for s in signs] == [len(c) - 1 for c in sign_stages(1 / 16, 10, 4)] == [3, 7, 7]
    assert plan.bootstraps == 3 and "u (1 + sign u)" in repr(plan)
    plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        clear = plan.forward_clear(x)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - clear)) < 1e-5
        assert np.max(np.abs(got - want)) < 0.05


def test_the_expected_logit_error_holds_in_an_encrypted_run():
    """compile measures the encryption's noise with a throwaway key (an encryption, a rotation, a bootstrap) and
    carries it through the plan's clear arithmetic: repr(plan) states the logit error to expect before keygen, and
    encrypted runs with another key stay within it; the noise part is no looser than 20 times what the runs show (not
    vacuous).
    The statement is kept by to_bytes/load; noise=False leaves it out."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    model = model.eval()
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=small_boot_params(4), threads=2)
    c = plan.calibration
    assert plan.bootstraps >= 2 and 20 < c["bootstrap_bits"] < c["rotation_bits"] <= c["encryption_bits"]
    assert plan.expected_error == c["logit_error"] + c["noise_error"] and c["noise_error"] > 0
    assert f"expected logit error <= {plan.expected_error:.3g}" in repr(plan)
    plan.keygen()
    error = noise = 0.0
    for x in calibration[:8]:
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        error = max(error, np.abs(got - model(x[None]).detach().numpy().reshape(-1)).max())
        noise = max(noise, np.abs(got - plan.forward_clear(x)).max())
    assert error <= plan.expected_error and noise <= c["noise_error"] <= 20 * noise, (error, noise, c)
    assert ksnn.load(plan.to_bytes(), threads=2).expected_error == plan.expected_error
    quiet = ksnn.compile(model, calibration[:1], calibration=calibration, params=small_boot_params(4), noise=False)
    assert quiet.expected_error is None and "the encryption adds its noise" in repr(quiet)


def test_a_zero_encoding_budget_encodes_every_transform_and_the_bootstraps_at_use():
    """max_encoded_bytes=0: no transform kept encoded and the bootstrapper's transforms encoded at each bootstrap (a
    plan of their values, a fraction of the encodings), in compile and in load; the same results, within the
    encryption's noise."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(64, 1, 4, 4)
    options = dict(calibration=calibration, params=small_boot_params(4), threads=2, relu_eps=1 / 16)
    kept = ksnn.compile(model, calibration[:1], **options)
    lean = ksnn.compile(model, calibration[:1], max_encoded_bytes=0, **options)
    assert kept.memory()["transforms"] > 0 and lean.memory()["transforms"] == 0
    assert 4 * lean.memory()["bootstrap_plan"] < kept.memory()["bootstrap_plan"]
    loaded = ksnn.load(lean.to_bytes(), threads=2, max_encoded_bytes=0)
    assert loaded.memory()["bootstrap_plan"] == lean.memory()["bootstrap_plan"]
    keys = lean.keygen()
    loaded.use(ks.EvaluationKeys.from_bytes(loaded.ctx, keys.evaluation().to_bytes()))
    x = calibration[3]
    clear = lean.forward_clear(x)
    ct = lean.encrypt(x)
    assert np.max(np.abs(lean.decrypt(lean.run(ct)) - clear)) < 1e-5
    out = loaded.run(ks.Ciphertext.from_bytes(loaded.ctx, ct.to_bytes()))
    assert np.max(np.abs(lean.decrypt(ks.Ciphertext.from_bytes(lean.ctx, out.to_bytes())) - clear)) < 1e-5


@pytest.mark.parametrize("eps, bits, levels", [(1 / 64, 10, 9), (1 / 16, 10, 8), (1 / 128, 12, 11), (0.25, 12, 5)])
def test_sign_stages_are_within_their_bound_in_the_fewest_levels(eps, bits, levels):
    """The composite minimax sign: within 2^-bits of sign(x) where eps <= |x| <= 1, never above 1 + 2^-bits in
    magnitude, odd, in the levels found (Cheon, Kim and Kim's f_3 takes 3 levels a step: 21 levels for 1/64 and 10
    bits, ks.sign_depth); one level fewer does not reach the bound with any stages."""
    from numpy.polynomial import chebyshev

    stages = sign_stages(eps, bits)
    assert sum(math.ceil(math.log2(len(c))) for c in stages) == levels <= ks.sign_depth(eps, bits)
    x = np.linspace(-1, 1, 200001)
    y = x.copy()
    for c in stages:
        assert np.all(c[0::2] == 0)  # odd
        y = chebyshev.chebval(y, c)
    far = np.abs(x) >= eps
    assert np.max(np.abs(y[far] - np.sign(x[far]))) <= 2.0**-bits
    assert np.max(np.abs(y)) <= 1 + 2.0**-bits
    # no sequence of stages (each the minimax polynomial of degree 2^k - 1 on what the ones before leave) in one
    # level fewer reaches the bound
    from kasoku.nn.activations import minimax_stage

    def reach(a, depths):  # the error of the composite of these stage depths
        for j, k in enumerate(depths):
            _, lo, hi = minimax_stage(round(a, 12), (1 << k) - 1)
            if j == len(depths) - 1:
                return max(1 - lo, hi - 1)
            a = lo / hi

    def sequences(total):
        if total == 0:
            yield ()
        for k in range(2, min(6, total) + 1):
            for rest in sequences(total - k):
                yield (k, *rest)

    assert all(reach(eps, s) > 2.0**-bits for d in range(2, levels) for s in sequences(d))
    with pytest.raises(ks.ParameterError, match="at least 2"):
        sign_stages(eps, bits, 1)


def test_bootstraps_placed_over_the_graph_are_the_fewest():
    """Bootstrap placement against an exhaustive search on small random graphs of squares, sign stages and joins
    (each step may refresh any of its inputs first; a refreshed value serves every later reader): the fewest
    bootstraps every time, and never more than placing them at the last moment, which a fan-out defeats."""
    from kasoku.nn.ir import Activation, ReluJoin, value_levels
    from kasoku.nn.placement import place_bootstraps

    def greedy(steps, top):  # at the last moment: a value is refreshed where a reader needs more than it has
        level, count = {0: top}, 0
        for st in steps:
            for i in st.inputs:
                if level[i] < st.depth:
                    level[i], count = top, count + 1
            level[st.output] = min(level[i] for i in st.inputs) - st.depth
        return count

    def fewest(steps, top):
        pairs = [(t, i) for t, st in enumerate(steps) for i in sorted(set(st.inputs))]
        best = None
        for mask in range(1 << len(pairs)):
            level, ok, count = {0: top}, True, 0
            chosen = {pairs[b] for b in range(len(pairs)) if mask >> b & 1}
            for t, st in enumerate(steps):
                for i in sorted(set(st.inputs)):
                    if (t, i) in chosen:
                        level[i], count = top, count + 1
                at = min(level[i] for i in st.inputs)
                if at < st.depth:
                    ok = False
                    break
                level[st.output] = at - st.depth
            if ok and (best is None or count < best):
                best = count
        return best

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    # a fan-out: v at level 2 of 3 feeds two squares each followed by a two-level sign; at the last moment both
    # squares' outputs are refreshed, where refreshing v once serves both branches
    fan = [Activation("v", "square", input=0, output=2), Activation("b", "square", input=2, output=3), sign(3, 3, 4)]
    fan += [Activation("c", "square", input=2, output=5), sign(3, 5, 6)]
    assert greedy(fan, 3) == 2 and fewest(fan, 3) == 1
    assert sum(type(s).__name__ == "Bootstrap" for s in place_bootstraps(fan, 3)[0]) == 1
    rng = np.random.default_rng(7)
    for trial in range(40):
        top = int(rng.integers(3, 6))
        steps, values = [], [0]
        for o in range(1, 8):
            if len(values) > 1 and rng.random() < 0.3:
                a, b = rng.choice(values, 2, replace=False)
                steps.append(ReluJoin(f"j{o}", [int(a), int(b)], o))
            else:
                i = int(rng.choice(values))
                steps.append(
                    sign(int(rng.choice([1, 3, 7])), i, o)
                    if rng.random() < 0.6
                    else Activation(f"q{o}", "square", input=i, output=o)
                )
            values.append(o)
        placed, start = place_bootstraps(steps, top)
        count = sum(type(s).__name__ == "Bootstrap" for s in placed)
        assert count == fewest(steps, top) <= greedy(steps, top)
        level, at = value_levels(placed, top, start)
        assert all(a >= s.depth for s, a in zip(placed, at))
