"""Batches (Takao et al.): element i of every *_many equals the single operation's result, byte for byte; out= writes
into given ciphertexts; bad lists are ParameterErrors."""

import numpy as np
import pytest

import kasoku as ks


@pytest.fixture(scope="module")
def env():
    ctx = ks.Context(ks.Parameters.named("T12"), threads=2)
    keys = ctx.keygen(rotations=[2])
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(3)
    xs = [rng.uniform(-1, 1, ctx.slots) for _ in range(5)]  # more than the 2 threads: the parallel path
    return ctx, keys, ev, [ctx.encrypt(x, keys.public) for x in xs], xs


def same(batch, singles):
    assert len(batch) == len(singles)
    for got, want in zip(batch, singles):
        assert got.to_bytes() == want.to_bytes()


@pytest.mark.parametrize("size", [1, 5])
def test_every_batch_equals_its_single_operations(env, size):
    ctx, keys, ev, cts, xs = env
    a, b = cts[:size], cts[::-1][:size]
    same(ev.add_many(a, b), [ev.add(x, y) for x, y in zip(a, b)])
    same(ev.sub_many(a, b), [ev.sub(x, y) for x, y in zip(a, b)])
    same(ev.multiply_many(a, b), [ev.multiply(x, y) for x, y in zip(a, b)])
    same(ev.multiply_many(a, b, rescale=False), [ev.multiply(x, y, rescale=False) for x, y in zip(a, b)])
    t = ev.tensor_many(a, b)
    same(t, [ev.tensor(x, y) for x, y in zip(a, b)])
    same(ev.multiply_many(a, b, relinearize=False), [ev.rescale(ev.tensor(x, y)) for x, y in zip(a, b)])
    r = ev.relinearize_many(t)
    same(r, [ev.relinearize(x) for x in t])
    same(ev.rescale_many(r), [ev.rescale(x) for x in r])
    same(ev.rotate_many(a, 2), [ev.rotate(x, 2) for x in a])
    same(ev.multiply_plain_many(a, xs[:size]), [ev.multiply_plain(x, v) for x, v in zip(a, xs)])
    same(ev.multiply_plain_many(a, [0.5] * size), [ev.multiply_plain(x, np.full(ctx.slots, 0.5)) for x in a])
    got = ctx.decrypt(ev.multiply_many(a, b)[0], keys.secret).real
    assert np.max(np.abs(got - xs[0] * xs[-1])) < 1e-3  # a[0] * b[0]


def test_out_writes_into_the_given_ciphertexts(env):
    ctx, keys, ev, cts, xs = env
    out = [ctx.encrypt(np.zeros(ctx.slots), keys.public) for _ in cts]
    assert ev.rotate_many(cts, 2, out=out) is None
    same(out, [ev.rotate(x, 2) for x in cts])
    with pytest.raises(ks.ParameterError, match="out has"):
        ev.add_many(cts, cts, out=out[:2])


def test_bad_lists_say_what_is_wrong(env):
    ctx, keys, ev, cts, xs = env
    with pytest.raises(ks.ParameterError, match="different lengths"):
        ev.add_many(cts, cts[:2])
    with pytest.raises(ks.ParameterError, match="not a ciphertext"):
        ev.add_many(cts, [None] * len(cts))
    with pytest.raises(ks.MissingKeyError):
        ev.rotate_many(cts, 3)
    assert ev.add_many([], []) == []
