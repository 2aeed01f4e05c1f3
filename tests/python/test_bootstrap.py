"""Bootstrapping from Python: the message comes back at a higher level, the keys are the ones it needs, errors say
what to change."""

import numpy as np
import pytest

import kasoku as ks
from conftest import bits, small_boot_params


def boot_params(levels=17, hamming_weight=64):
    """N = 2^10, 2^50 scale, sparse secret: research parameters (no security claim), fast."""
    return ks.Parameters.named("TS10").replace(levels=levels, hamming_weight=hamming_weight)


@pytest.fixture(scope="module")
def boot():
    ctx = ks.Context(boot_params(), threads=2)
    b = ks.Bootstrapper(ctx)
    keys = ctx.keygen(bootstrapping=b)
    return ctx, b, keys, ctx.evaluator(keys.evaluation())


def test_bootstrap_restores_levels_and_message(boot, rng):
    ctx, b, keys, ev = boot
    assert b.depth == ctx.max_level - b.output_level
    z = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    for level in (0, 3):
        ct = ctx.encrypt(z, keys.public, level=level)
        out = ev.bootstrap(ct, b)
        assert out.level == b.output_level and out.scale == ctx.scale_at(out.level)
        assert np.max(np.abs(ctx.decrypt(out, keys.secret) - z)) < 2.0**-17
        # it computes on: one product with the levels it gained
        sq = ev.multiply(out, out)
        assert np.max(np.abs(ctx.decrypt(sq, keys.secret) - z * z)) < 2.0**-15


def test_real_slots_bootstrap_with_one_evalmod(boot, rng):
    """real=True: the same keys, the real parts back (imaginary ones dropped) as precisely (the C++ test counts the
    EvalMod it saves)."""
    ctx, b, keys, ev = boot
    real = ks.Bootstrapper(ctx, real=True)
    assert "real=True" in repr(real) and real.galois_elements() == b.galois_elements()
    z = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(z, keys.public, level=0)
    out = ev.bootstrap(ct, real)
    assert out.level == real.output_level
    got = ctx.decrypt(out, keys.secret)
    assert np.max(np.abs(got - z.real)) < 2.0**-17


def test_bootstrapping_keys_are_compact_by_default_and_whole_keys_give_the_same_bits(boot, rng):
    ctx, b, keys, ev = boot
    whole = ctx.keygen(bootstrapping=b, compact_keys=False)
    assert keys.evaluation().nbytes < 0.55 * whole.evaluation().nbytes
    z = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(z, whole.public, level=0)
    out = ctx.evaluator(whole.evaluation()).bootstrap(ct, b)
    assert np.max(np.abs(ctx.decrypt(out, whole.secret).real - z)) < 2.0**-17
    # loaded compact or whole (by default whole here: these parameters have no encapsulation keys)
    data = whole.evaluation().to_bytes()
    assert ks.EvaluationKeys.from_bytes(ctx, data, compact_keys=True).nbytes == keys.evaluation().nbytes
    assert ks.EvaluationKeys.from_bytes(ctx, data).nbytes == whole.evaluation().nbytes
    # the plan: the transforms' diagonals, most of them periodic and kept in their subring
    slots_words = (b.raise_level + 1 + 3) * ctx.n * 8
    assert 0 < b.plan_nbytes < 20 * slots_words


def test_keys_for_the_default_config_and_the_default_bootstrapper(boot, rng):
    ctx, b, keys, ev = boot
    assert sorted(ctx.keygen(bootstrapping=True).galois.keys()) == sorted(b.galois_elements())
    # each key for the levels a bootstrap uses it at, none above the raise level
    assert keys.evaluation().galois_levels == b.galois_levels()
    assert ctx.keygen(bootstrapping=True).evaluation().galois_levels == b.galois_levels()
    assert sorted(b.galois_levels()) == sorted(b.galois_elements())
    assert max(b.galois_levels().values()) <= b.raise_level
    x = rng.uniform(-1, 1, ctx.slots)
    out = ev.bootstrap(ctx.encrypt(x, keys.public, level=0))  # the default bootstrapper, made on first use
    assert np.max(np.abs(ctx.decrypt(out, keys.secret).real - x)) < 2.0**-17


def test_errors_say_what_to_change(boot):
    ctx, b, keys, ev = boot
    with pytest.raises(ks.ParameterError, match="needs 14 levels"):
        ks.Bootstrapper(ks.Context(boot_params(levels=10), threads=1))
    with pytest.raises(ks.ParameterError, match="sparse secret"):
        ks.Bootstrapper(ks.Context(boot_params(hamming_weight=0), threads=1))
    with pytest.raises(ks.ParameterError):
        ks.Bootstrapper(ctx, cts_levels=-1)
    bare = ctx.evaluator(ctx.keygen().evaluation())
    with pytest.raises(ks.MissingKeyError):
        bare.bootstrap(ctx.encrypt(np.zeros(4), keys.public, level=0), b)
    other = ks.Context(boot_params(), threads=1)
    with pytest.raises(ks.ParameterError):
        ev.bootstrap(ctx.encrypt(np.zeros(4), keys.public, level=0), ks.Bootstrapper(other))


def test_bootstrapping_levels_and_encapsulation(rng):
    """A dense main secret, user levels of 40 bits under bootstrapping levels of 55 bits: fresh data starts at the
    user level, bootstrapping returns there on the user's scale, with the encapsulation keys keygen makes."""
    params = small_boot_params(2)
    assert (params.boot_levels, params.boot_bits, params.boot_secret_weight) == (15, 55, 32)
    assert params.log_qp == 60 + 2 * 40 + 15 * 55 + 3 * 60
    ctx = ks.Context(params, threads=2)
    assert (ctx.user_level, ctx.max_level) == (2, 17)
    assert ctx.scale_at(2) == 2.0**40 and ctx.scale_at(17) == 2.0**55
    plain_keys = ctx.keygen(bootstrapping=False)
    keys = ctx.keygen(bootstrapping=True)
    assert keys.evaluation().nbytes > plain_keys.evaluation().nbytes
    z = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    fresh = ctx.encrypt(z, keys.public)
    assert fresh.level == ctx.user_level and fresh.scale == 2.0**40
    ev = ctx.evaluator(keys.evaluation())
    # what a new user writes: encrypt, drop to level 0, bootstrap (drop_level keeps the canonical scale)
    low = ev.drop_level(fresh, 0)
    assert low.level == 0 and low.scale == ctx.scale_at(0) and ev.drop_limbs(fresh, 0).scale == fresh.scale
    back = ev.bootstrap(low)
    assert back.level == ctx.user_level and np.max(np.abs(ctx.decrypt(back, keys.secret) - z)) < 2.0**-20
    out, stages = ev.bootstrap_profile(ctx.encrypt(z, keys.public, level=0))
    assert set(stages) == {"raise", "coeff_to_slot", "eval_mod", "slot_to_coeff"} and min(stages.values()) > 0
    assert out.level == ctx.user_level and out.scale == 2.0**40
    assert np.max(np.abs(ctx.decrypt(out, keys.secret) - z)) < 2.0**-20
    # keys without the encapsulation keys: the error names what to do
    bare = ctx.evaluator(ctx.keygen(galois_elements=ks.Bootstrapper(ctx).galois_elements()).evaluation())
    with pytest.raises(ks.MissingKeyError, match="bootstrapping=True"):
        bare.bootstrap(ctx.encrypt(z, keys.public, level=0))


def test_default_transform_levels_fill_the_bootstrapping_levels(rng):
    """The default config splits the room beside EvalMod (8 levels here) between CoeffToSlot and SlotToCoeff, up to
    four each: 15 bootstrapping levels take 4 and 3, 16 take 4 and 4, whose transforms hold less than three each, and
    the bootstrap keeps its precision."""
    assert ks.Bootstrapper(ks.Context(small_boot_params(2), threads=2)).depth == 15
    ctx = ks.Context(small_boot_params(2).replace(boot_levels=16), threads=2)
    b = ks.Bootstrapper(ctx, real=True)
    assert b.depth == 16 and b.output_level == ctx.user_level
    assert b.plan_nbytes < ks.Bootstrapper(ctx, real=True, cts_levels=3, stc_levels=3).plan_nbytes
    keys = ctx.keygen(bootstrapping=b)
    x = rng.uniform(-1, 1, ctx.slots)
    out = ctx.evaluator(keys.evaluation()).bootstrap(ctx.encrypt(x, keys.public, level=0), b)
    assert out.level == ctx.user_level and bits(ctx.decrypt(out, keys.secret).real, x) > 20


def test_sparse_slots_and_arcsine(rng):
    """A sparse-slot bootstrapper on values packed with encode/encrypt(slots=s), with the arcsine correction."""
    params = small_boot_params(2)
    ctx = ks.Context(params, threads=2)
    boot = ks.Bootstrapper(ctx, slots=16, arcsine_degree=3)
    assert boot.slots == 16 and "slots=16" in repr(boot) and "arcsine_degree=3" in repr(boot)
    keys = ctx.keygen(bootstrapping=boot)
    ev = ctx.evaluator(keys.evaluation())
    z = rng.uniform(-1, 1, 16) + 1j * rng.uniform(-1, 1, 16)
    ct = ctx.encrypt(z, keys.public, level=0, slots=16)
    assert np.allclose(ctx.decrypt(ct, keys.secret)[16:32], z, atol=1e-6)  # repeated every 16 slots
    out = ev.bootstrap(ct, boot)
    assert out.level == ctx.user_level
    got = ctx.decrypt(out, keys.secret, slots=16)
    assert got.shape == (16,) and np.max(np.abs(got - z)) < 2.0**-22
    assert np.max(np.abs(ctx.decrypt(out, keys.secret)[16:] - np.tile(z, 31))) < 2.0**-22
    # SlotToCoeff first: on the input's levels (both user levels here), then back at the user level.
    first = ks.Bootstrapper(ctx, slots=16, arcsine_degree=3, slot_to_coeff_first=True)
    assert first.input_level == 2 and "slot_to_coeff_first=True" in repr(first)
    keys = ctx.keygen(bootstrapping=first)
    ev = ctx.evaluator(keys.evaluation())
    out = ev.bootstrap(ctx.encrypt(z, keys.public, slots=16), first)
    assert out.level == ctx.user_level
    assert np.max(np.abs(ctx.decrypt(out, keys.secret, slots=16) - z)) < 2.0**-22
    with pytest.raises(ks.LevelError, match="level >= 2"):
        ev.bootstrap(ctx.encrypt(z, keys.public, level=1, slots=16), first)
    with pytest.raises(ks.ParameterError, match="power of two"):
        ks.Bootstrapper(ctx, slots=12)
    with pytest.raises(ks.ParameterError, match="arcsine_degree"):
        ks.Bootstrapper(ctx, arcsine_degree=2)
    with pytest.raises(ks.ParameterError, match="do not fit"):
        ctx.encode(np.zeros(17), slots=16)
    with pytest.raises(ks.ParameterError):
        ctx.decrypt(out, keys.secret, slots=0)


def test_failure_probability_is_stated_and_chosen(boot):
    """Every default bootstrapper fails with probability at most 2^-128 (an I beyond what EvalMod maps: the exact law of
    I, EvalMod's measured reach) and says so; a given k_bound is kept and its probability stated; failure_bits sets
    the target that the chosen k_bound and double_angle meet (the C++ tests count failures against it)."""
    ctx, b, _, _ = boot
    f = b.failure
    assert b.failure_probability <= 2.0**-128 and f["log2_per_bootstrap"] <= -128
    assert f["secret_weight"] == 64 and f["coefficients"] == ctx.n and f["reach"] > b.k_bound
    assert f"failure_probability=2^{f['log2_per_bootstrap']:.1f}" in repr(b)
    assert f"double_angle={b.double_angle}" in repr(b) and f"k_bound={int(b.k_bound)}" in repr(b)
    loose = ks.Bootstrapper(ctx, k_bound=4, double_angle=3)
    assert loose.k_bound == 4 and loose.failure["reach"] < f["reach"] and loose.failure_probability > 2.0**-20
    cheaper = ks.Bootstrapper(ctx, failure_bits=40)
    assert cheaper.k_bound < b.k_bound and 2.0**-128 < cheaper.failure_probability <= 2.0**-40
    # the encapsulated secret of weight 32 (the C++ tests check BOOT15, BOOT16 and BOOT16L without planning them)
    tb10 = ks.Bootstrapper(ks.Context(ks.Parameters.named("TB10")), at_use=True, progress=False)
    assert tb10.failure_probability <= 2.0**-128 and tb10.failure["secret_weight"] == 32
    with pytest.raises(ks.ParameterError, match="failure_bits"):
        ks.Bootstrapper(ctx, failure_bits=0)


def test_bootstrapping_presets():
    for name in ("BOOT15", "BOOT16", "BOOT16L"):
        p = ks.Parameters.named(name)
        assert name in ks.Parameters.names()
        assert p.security == 128 and p.hamming_weight == 0 and p.boot_secret_weight == 32
        assert p.boot_levels > 0 and p.scale_bits == 40
    b16 = ks.Parameters.named("BOOT16")
    assert b16.log_n == 16 and b16.levels >= 9 and b16.log_qp <= 1772
    deep = ks.Parameters.named("BOOT16L")
    assert deep.log_n == 16 and deep.levels >= 14 and deep.log_qp <= 1772
    # the tests' sets, and copies with a field changed (validated, nameless)
    tb10, ts10 = ks.Parameters.named("TB10"), ks.Parameters.named("TS10")
    assert tb10.security is None and tb10.boot_levels == 15 and tb10.boot_secret_weight == 32
    assert ts10.security is None and ts10.hamming_weight == 64 and ts10.boot_levels == 0
    four = tb10.replace(levels=4)
    assert four.levels == 4 and four.name == "" and four.boot_bits == tb10.boot_bits and four.security is None
    assert ks.Parameters.named("T13").replace(security=None, log_n=11).security is None
    with pytest.raises(ks.ParameterError, match="no field 'level'.*levels"):
        tb10.replace(level=4)
    with pytest.raises(ks.ParameterError):
        ks.Parameters.named("T13").replace(log_n=10)  # 128-bit security does not hold at N = 2^10


def test_long_calls_show_progress_on_request(capfd):
    """keygen and a bootstrapper's plan report each step: a tqdm bar on stderr (progress=True; None: on a terminal),
    nothing (False), or the caller's callback (done, total)."""
    ctx = ks.Context(boot_params(), threads=1)
    ctx.keygen(rotations=[1, 2], progress=True)
    ks.Bootstrapper(ctx, progress=True)
    err = capfd.readouterr().err
    assert "kasoku: key generation: 100%" in err and "3/3" in err
    assert "kasoku: bootstrapping plan: 100%" in err and "6/6" in err
    ctx.keygen(rotations=[1], progress=False)
    assert capfd.readouterr().err == ""
    seen = []
    ks.Bootstrapper(ctx, cts_levels=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, seen[-1][1]) for k in range(1, seen[-1][1] + 1)] and len(seen) >= 3
    assert capfd.readouterr().err == ""


def test_ctrl_c_ends_a_long_call_at_its_next_step():
    """Ctrl-C (here: _thread.interrupt_main from the callback, as the signal would) ends key generation at the next
    key with KeyboardInterrupt and returns nothing; an exception of the callback ends it the same way."""
    import _thread
    import signal

    ctx = ks.Context(boot_params(), threads=1)
    calls = []

    def interrupt(done, total):
        calls.append(done)
        if done == 2:
            _thread.interrupt_main()

    # Python's own Ctrl-C handler, whatever the test runs under (a shell's background job inherits SIGINT ignored,
    # and then interrupt_main does nothing)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ctx.keygen(rotations=[1, 2, 3, 4, 5], progress=interrupt)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls == [1, 2]

    def fail(done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ks.Bootstrapper(ctx, progress=fail)
    with pytest.raises(TypeError, match="progress must be"):
        ctx.keygen(rotations=[1], progress="yes")


# The operations of one bootstrap at boot_params(), its budget: a change that adds a key switch (rot), a ModUp
# (decompose), a ModDown or a product fails here. A change that removes some on purpose updates the numbers.
BOOTSTRAP_BUDGET = {
    "full": {"add": 348, "cmult": 188, "decompose": 65, "mod_down": 65, "mult": 54, "rescale": 86, "rot": 47},
    "slots=64": {"add": 172, "cmult": 96, "decompose": 37, "mod_down": 37, "mult": 26, "rescale": 45, "rot": 35},
    "real": {"add": 206, "cmult": 132, "decompose": 39, "mod_down": 39, "mult": 26, "rescale": 45, "rot": 49},
}


@pytest.mark.parametrize("kind", list(BOOTSTRAP_BUDGET))
def test_a_bootstrap_runs_its_budget_of_operations(kind):
    ctx = ks.Context(boot_params(), threads=2)
    kw = {"full": {}, "slots=64": {"slots": 64}, "real": {"real": True}}[kind]
    b = ks.Bootstrapper(ctx, **kw)
    keys = ctx.keygen(bootstrapping=b)
    ev = ctx.evaluator(keys.evaluation())
    z = np.linspace(-0.9, 0.9, b.slots)
    ct = ctx.encrypt(z, keys.public, level=b.input_level, slots=b.slots)
    out, _, counts = ev.bootstrap_profile(ct, b, return_counts=True)
    assert counts == BOOTSTRAP_BUDGET[kind], f"{kind}: {counts}"
    assert np.max(np.abs(ctx.decrypt(out, keys.secret, slots=b.slots).real - z)) < 2.0**-14
