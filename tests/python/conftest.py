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


def batchnorm(c: int, dims: int = 2):
    """A torch BatchNorm in eval mode with statistics and affine parameters away from the identity (the kasoku.nn
    tests)."""
    import torch
    import torch.nn as nn

    bn = nn.BatchNorm2d(c) if dims == 2 else nn.BatchNorm1d(c)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
    return bn.eval()


def small_boot_params(levels: int) -> ks.Parameters:
    """A small ring with bootstrapping (tests only: N = 2^10, `levels` user levels of 40 bits under 15 bootstrapping
    levels of 55 bits, encapsulation of weight 32): bootstraps in seconds."""
    return ks.Parameters.named("TB10").replace(levels=levels)


def bits(got, want):
    """Precision in bits: -log2 of the max absolute error."""
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return 60.0 if err == 0 else -np.log2(err)
