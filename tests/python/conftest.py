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


def bits(got, want):
    """Precision in bits: -log2 of the max absolute error."""
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return 60.0 if err == 0 else -np.log2(err)
