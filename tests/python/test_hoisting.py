"""Hoisted rotations, lazy ModDown, trace and sum_slots through the Python API, against NumPy."""

import numpy as np
import pytest

import kasoku as ks

from conftest import bits


@pytest.fixture(scope="module")
def small():
    """N = 2^10 (512 slots), two key-switching digits; keys for sum_slots' default h and a few rotations."""
    params = ks.Parameters(
        log_n=10, first_bits=50, scale_bits=32, levels=2, special_bits=50, special_primes=2, security=None
    )
    ctx = ks.Context(params, threads=2)
    M = 9
    extra = sorted(
        {g for h in range(1, 5) for g in ks.trace_galois_elements(params, 4, h)}
        | set(ks.trace_galois_elements(params, M, 3))
        | set(ks.trace_galois_elements(params, M, M))
    )
    keys = ctx.keygen(rotations=[1, -2, 5], conjugation=True, galois_elements=extra, sum_slots=True)
    return params, ctx, keys, ctx.evaluator(keys.evaluation())


def test_rotate_hoisted_equals_rotations(small, rng):
    _, ctx, keys, ev = small
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    outs = ev.rotate_hoisted(ct, [1, -2, 5], conjugate=True)
    assert len(outs) == 4
    for c, k in zip(outs, [1, -2, 5]):
        assert bits(ctx.decrypt(c, keys.secret), np.roll(x, -k)) > 20
        assert bits(ctx.decrypt(ev.rotate(ct, k), keys.secret), np.roll(x, -k)) > 20
    assert bits(ctx.decrypt(outs[3], keys.secret), np.conj(x)) > 20


def test_sum_form_and_split_steps(small, rng):
    _, ctx, keys, ev = small
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    want = np.roll(x, -1) + np.roll(x, 2) + np.roll(x, -5) + x  # + conj(x) = x for real x
    got = ctx.decrypt(ev.rotate_sum_hoisted(ct, [1, -2, 5], conjugate=True), keys.secret)
    assert bits(got, want) > 18
    elts = [ctx.galois_element(k) for k in (1, -2, 5)] + [ctx.conjugation_element]
    assert (
        ev.apply_galois_sum_hoisted(ct, elts).to_bytes()
        == ev.rotate_sum_hoisted(ct, [1, -2, 5], conjugate=True).to_bytes()
    )
    d = ev.decompose(ct)
    lazy = ev.inner_product_lazy(d, ctx.galois_element(1)) + ev.inner_product_lazy(d, ctx.galois_element(-2))
    assert bits(ctx.decrypt(ev.mod_down(lazy), keys.secret), np.roll(x, -1) + np.roll(x, 2)) > 18


@pytest.mark.parametrize("h", [1, 2, 3, 4])
def test_partial_sum_every_h(small, rng, h):
    _, ctx, keys, ev = small
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    want = sum(np.roll(x, -j) for j in range(16))
    assert bits(ctx.decrypt(ev.sum_slots(ct, count=16, h=h), keys.secret), want) > 16


def test_total_sum_default_h_and_trace(small, rng):
    params, ctx, keys, ev = small
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    steps = [ctx.galois_element(1 << i) for i in range(9)]
    h = ev.choose_trace_h(steps)
    assert 1 <= h <= 9
    assert bits(ctx.decrypt(ev.sum_slots(ct), keys.secret), np.full(ctx.slots, x.sum())) > 12
    for h in (3, 9):
        assert bits(ctx.decrypt(ev.trace(ct, steps, h=h), keys.secret), np.full(ctx.slots, x.sum())) > 12
    costs = ev.keyswitch_costs()
    assert costs["inner_product_ms"] > 0 and costs["decompose_ms"] > 0


def test_trace_galois_elements_exact(small):
    params = small[0]
    assert ks.trace_galois_elements(params, 3, 3) == [5, 25, 625]
    assert ks.trace_galois_elements(params, 3, 1) == sorted(pow(5, r, 2048) for r in range(1, 8))
    assert ks.trace_group_sizes(7, 3) == [3, 2, 2]


def test_missing_key_names_element(small, rng):
    _, ctx, keys, ev = small
    ct = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public)
    # sum_slots=True adds the keys of the h the cost model picks (measured, so it varies): find steps without a key
    missing = [k for k in range(1, ctx.slots) if ctx.galois_element(k) not in keys.galois]
    assert len(missing) >= 2
    g3, g = ctx.galois_element(missing[0]), ctx.galois_element(missing[1])
    with pytest.raises(ks.MissingKeyError, match=str(g3)):
        ev.rotate_hoisted(ct, [missing[0]])
    with pytest.raises(ks.MissingKeyError, match=str(g)):
        ev.rotate_sum_hoisted(ct, galois_elements=[g])
    with pytest.raises(ks.ParameterError):
        ev.sum_slots(ct, count=12)


def test_keys_for_low_levels_hold_fewer_special_primes(rng):
    """A Galois key made for levels up to l (keygen's galois_levels) holds the special primes a digit of Q_l needs
    (ctx.special_primes_at(l): as many as their product takes; a key for every level has them all): smaller, and its
    rotations, hoisted ones and sums beside keys for every level (other special primes) still right."""
    params = ks.Parameters(
        log_n=10, first_bits=60, scale_bits=40, levels=4, special_bits=60, special_primes=4, security=None
    )
    ctx = ks.Context(params, threads=1)
    counts = [ctx.special_primes_at(lv) for lv in range(ctx.max_level + 1)]
    assert counts == sorted(counts) and counts[1] < counts[-1] <= len(ctx.p_primes)
    with pytest.raises(ks.LevelError):
        ctx.special_primes_at(ctx.max_level + 1)
    steps = [1, -2, 5]
    elts = [ctx.galois_element(s) for s in steps]
    whole = ctx.keygen(galois_elements=elts)
    low = ctx.keygen(galois_elements=elts[2:], galois_levels={elts[0]: 1, elts[1]: 1})  # the third for every level
    assert low.evaluation().nbytes < whole.evaluation().nbytes
    ev = ctx.evaluator(low.evaluation())
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ev.drop_level(ctx.encrypt(x, low.public), 1)
    want = sum(np.roll(x, -s) for s in steps)
    assert bits(ctx.decrypt(ev.rotate_sum_hoisted(ct, steps), low.secret), want) > 20
    for c, s in zip(ev.rotate_hoisted(ct, steps), steps):
        assert bits(ctx.decrypt(c, low.secret), np.roll(x, -s)) > 20
