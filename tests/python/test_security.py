"""Decryptions safe to share: ctx.decrypt(..., flood=) (the attack it stops is tests/cpp/ckks/test_security.cpp)."""

import numpy as np
import pytest

import kasoku as ks


@pytest.fixture(scope="module")
def setup():
    # N = 2^12 at a scale of 2^55: flooding for 40 bits costs about 39 bits here (docs/SECURITY.md)
    p = ks.Parameters(
        log_n=12, first_bits=60, scale_bits=55, levels=2, special_bits=60, special_primes=1, security=None
    )
    ctx = ks.Context(p, threads=1)
    keys = ctx.keygen()
    x = np.random.default_rng(7).uniform(-1, 1, ctx.slots)
    return ctx, keys, x, ctx.encrypt(x, keys.public)


def test_exact_decryption_is_the_default(setup):
    ctx, keys, x, ct = setup
    exact = ctx.decrypt(ct, keys.secret)
    assert isinstance(exact, np.ndarray)
    assert np.array_equal(exact, ctx.decrypt(ct, keys.secret, flood=False))
    assert np.max(np.abs(exact - x)) < 2**-30


def test_flooded_decryption_states_its_precision(setup):
    ctx, keys, x, ct = setup
    exact = ctx.decrypt(ct, keys.secret)
    d = ctx.decrypt(ct, keys.secret, flood=True)
    assert isinstance(d, ks.FloodedDecryption)
    assert d.values.shape == exact.shape and not np.array_equal(d.values, exact)
    assert 5 < d.precision_bits < 30  # about 55 - 39 bits
    assert np.max(np.abs(d.values - exact)) < 2 ** -(d.precision_bits - 4)
    assert d.sigma == pytest.approx(ks.flooding_sigma(ctx.params.n, d.noise_bound))
    assert d.precision_bits == pytest.approx(ks.flooding_precision_bits(ctx.params.n, d.sigma, ct.scale))
    assert d.noise_bound == pytest.approx(ctx.estimate_noise_bound(ct, keys.secret))
    assert "precision_bits" in repr(d)
    # each flood is fresh
    assert not np.array_equal(d.values, ctx.decrypt(ct, keys.secret, flood=True).values)
    assert len(ctx.decrypt(ct, keys.secret, flood=True, slots=8).values) == 8


def test_a_noise_bound_from_the_computation(setup):
    ctx, keys, x, ct = setup
    noise = ctx.noise(ct, keys.secret, x)  # the noise of this ciphertext, its values being known
    assert 0 < noise < ctx.estimate_noise_bound(ct, keys.secret)
    zero = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    assert ctx.noise(zero, keys.secret) > 0  # OpenFHE's way: the computation run once on zero
    f = ks.Flooding(statistical_security=30, queries=16, noise_bound=4 * noise)
    d = ctx.decrypt(ct, keys.secret, flood=f)
    assert d.noise_bound == 4 * noise
    assert d.sigma == pytest.approx(ks.flooding_sigma(ctx.params.n, 4 * noise, 30, 16))
    assert "queries=16" in repr(f)


def test_floods_that_drown_the_values_are_refused(setup):
    ctx, keys, x, ct = setup
    with pytest.raises(ks.ParameterError, match="compute to a scale of 2"):
        ctx.decrypt(ct, keys.secret, flood=ks.Flooding(statistical_security=128, queries=2**20))
    for bad in (ks.Flooding(noise_bound=-1.0), ks.Flooding(queries=0), ks.Flooding(statistical_security=200)):
        with pytest.raises(ks.ParameterError):
            ctx.decrypt(ct, keys.secret, flood=bad)
    with pytest.raises(ks.ParameterError, match="flood must be"):
        ctx.decrypt(ct, keys.secret, flood="yes")


def test_multiparty_shares_use_the_same_sizing(setup):
    ctx, *_ = setup
    from kasoku import multiparty as mp

    session = mp.Session(parties=3)
    sigma = ks.flooding_sigma(ctx.params.n, mp.default_noise_bound(ctx, session), 40, 1)
    assert mp.decryption_precision_bits(ctx, session, 2.0**55, 3) == pytest.approx(
        ks.flooding_precision_bits(ctx.params.n, sigma, 2.0**55, 3)
    )


def test_the_client_never_sends_a_secret_key(setup):
    ctx, keys, *_ = setup
    c = ks.Client("http://127.0.0.1:9", "token")  # nothing listens there: a request would fail differently
    for wrong in (keys, keys.secret):
        with pytest.raises(ks.ParameterError, match="never leaves the client"):
            c.register_keys(wrong)
    assert c.bytes_sent == 0
