import numpy as np
import pytest

import kasoku as ks


@pytest.fixture(scope="session")
def env():
    """T12 context (tests only: no security claim), keys with a few rotations and conjugation, an evaluator."""
    ctx = ks.Context(ks.Parameters.named("T12"), threads=2)
    keys = ctx.keygen(rotations=[1, -2, 7], conjugation=True)
    ev = ctx.evaluator(keys.evaluation())
    return ctx, keys, ev


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def small_boot_params(levels: int) -> ks.Parameters:
    """A small ring with bootstrapping (tests only: N = 2^10, `levels` user levels of 40 bits under 15 bootstrapping
    levels of 55 bits, encapsulation of weight 32): bootstraps in seconds."""
    return ks.Parameters.named("TB10").replace(levels=levels)


def bits(got, want):
    """Precision in bits: -log2 of the max absolute error."""
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return 60.0 if err == 0 else -np.log2(err)
