"""Bootstrapping from Python: the message comes back at a higher level, the keys are the ones it needs, errors say
what to change."""

import numpy as np
import pytest

import kasoku as ks


def boot_params(levels=17, hamming_weight=64):
    """N = 2^10, 2^50 scale, sparse secret: research parameters (no security claim), fast."""
    return ks.Parameters(log_n=10, first_bits=60, scale_bits=50, levels=levels, special_bits=60, special_primes=3,
                         security=None, hamming_weight=hamming_weight)


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
        assert np.max(np.abs(ctx.decrypt(out, keys.secret) - z)) < 2.0 ** -17
        # it computes on: one product with the levels it gained
        sq = ev.multiply(out, out)
        assert np.max(np.abs(ctx.decrypt(sq, keys.secret) - z * z)) < 2.0 ** -15


def test_keys_for_the_default_config_and_the_default_bootstrapper(boot, rng):
    ctx, b, keys, ev = boot
    assert sorted(ctx.keygen(bootstrapping=True).galois.keys()) == sorted(b.galois_elements())
    x = rng.uniform(-1, 1, ctx.slots)
    out = ev.bootstrap(ctx.encrypt(x, keys.public, level=0))  # the default bootstrapper, made on first use
    assert np.max(np.abs(ctx.decrypt(out, keys.secret).real - x)) < 2.0 ** -17


def test_errors_say_what_to_change(boot):
    ctx, b, keys, ev = boot
    with pytest.raises(ks.ParameterError, match="needs 15 levels"):
        ks.Bootstrapper(ks.Context(boot_params(levels=10), threads=1))
    with pytest.raises(ks.ParameterError, match="sparse secret"):
        ks.Bootstrapper(ks.Context(boot_params(hamming_weight=0), threads=1))
    with pytest.raises(ks.ParameterError):
        ks.Bootstrapper(ctx, cts_levels=0)
    bare = ctx.evaluator(ctx.keygen().evaluation())
    with pytest.raises(ks.MissingKeyError):
        bare.bootstrap(ctx.encrypt(np.zeros(4), keys.public, level=0), b)
    other = ks.Context(boot_params(), threads=1)
    with pytest.raises(ks.ParameterError):
        ev.bootstrap(ctx.encrypt(np.zeros(4), keys.public, level=0), ks.Bootstrapper(other))
