"""Each homomorphic operation vs NumPy, with a precision bound in bits (T12: N = 2^12, scale 2^40)."""

import numpy as np
import pytest

import kasoku as ks
from conftest import bits

FRESH = 24  # fresh public-key encryption at scale 2^40, N = 2^12 (Q*p_0 encryption; measured ~27)
PRODUCT = 19  # after one multiply or rotation


def rand(rng, n, complex_=False):
    x = rng.uniform(-1, 1, n)
    return x + 1j * rng.uniform(-1, 1, n) if complex_ else x


@pytest.mark.parametrize("complex_", [False, True])
def test_encrypt_decrypt(env, rng, complex_):
    ctx, keys, _ = env
    x = rand(rng, ctx.slots, complex_)
    out = ctx.decrypt(ctx.encrypt(x, keys.public), keys.secret)
    assert out.dtype == np.complex128 and out.shape == (ctx.slots,)
    assert bits(out, x) > FRESH
    # secret-key encryption, short input zero padded, lower level
    short = x[:10]
    ct = ctx.encrypt(short, keys.secret, level=1)
    assert ct.level == 1
    out = ctx.decrypt(ct, keys.secret)
    assert bits(out[:10], short) > FRESH and bits(out[10:], 0) > FRESH
    pt = ctx.encode(x)
    assert pt.level == ctx.max_level and pt.scale == ctx.scale_at(ctx.max_level)
    assert bits(ctx.decrypt(ctx.encrypt(pt, keys.public), keys.secret), x) > FRESH


def test_add_sub_negate_and_operators(env, rng):
    ctx, keys, ev = env
    x, y = rand(rng, ctx.slots), rand(rng, ctx.slots)
    a, b = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    d = lambda c: ctx.decrypt(c, keys.secret)
    assert bits(d(ev.add(a, b)), x + y) > FRESH
    assert bits(d(ev.sub(a, b)), x - y) > FRESH
    assert bits(d(ev.negate(a)), -x) > FRESH
    assert bits(d(a + b), x + y) > FRESH
    assert bits(d(a - b), x - y) > FRESH
    assert bits(d(-a), -x) > FRESH
    assert bits(d(a + 2.5), x + 2.5) > FRESH
    assert bits(d(1.5 - a), 1.5 - x) > FRESH
    assert bits(d(a + y), x + y) > FRESH
    assert bits(d(y - a), y - x) > FRESH


def test_plain_and_scalar(env, rng):
    ctx, keys, ev = env
    x, p = rand(rng, ctx.slots, True), rand(rng, ctx.slots, True)
    a = ctx.encrypt(x, keys.public)
    d = lambda c: ctx.decrypt(c, keys.secret)
    assert bits(d(ev.add_plain(a, p)), x + p) > FRESH
    assert bits(d(ev.add_plain(a, 0.5 - 1j)), x + 0.5 - 1j) > FRESH
    m = ev.multiply_plain(a, p)
    assert m.level == a.level - 1
    assert m.scale == ctx.scale_at(m.level)
    assert bits(d(m), x * p) > PRODUCT
    assert bits(d(ev.multiply_plain(a, -3.25)), -3.25 * x) > PRODUCT
    assert bits(d(ev.multiply_plain(a, 2j)), 2j * x) > PRODUCT
    raw = ev.multiply_plain(a, p, rescale=False)
    assert raw.level == a.level
    assert bits(d(ev.rescale(raw)), x * p) > PRODUCT
    assert bits(d(a * p), x * p) > PRODUCT
    assert bits(d(3 * a), 3 * x) > PRODUCT


def test_multiply_relinearize_rescale(env, rng):
    ctx, keys, ev = env
    x, y, z = rand(rng, ctx.slots, True), rand(rng, ctx.slots, True), rand(rng, ctx.slots)
    a, b, c = (ctx.encrypt(v, keys.public) for v in (x, y, z))
    d = lambda ct: ctx.decrypt(ct, keys.secret)
    ab = ev.multiply(a, b)
    assert ab.level == ctx.max_level - 1 and ab.size == 2
    assert bits(d(ab), x * y) > PRODUCT
    assert bits(d(a * b), x * y) > PRODUCT
    # operands at different levels are aligned
    abc = ev.multiply(ab, c)
    assert abc.level == ctx.max_level - 2
    assert bits(d(abc), x * y * z) > PRODUCT - 1
    assert bits(d(ab + c), x * y + z) > PRODUCT
    raw = ev.multiply(a, b, rescale=False)
    assert raw.level == ctx.max_level
    assert bits(d(raw), x * y) > PRODUCT
    assert bits(d(ev.rescale(raw)), x * y) > PRODUCT
    assert bits(d(ev.square(a)), x * x) > PRODUCT
    assert bits(d(ev.relinearize(ab)), x * y) > PRODUCT
    assert bits(d(ev.drop_level(a, 0)), x) > FRESH


@pytest.mark.parametrize("step", [1, -2, 7])
def test_rotate(env, rng, step):
    ctx, keys, ev = env
    x = rand(rng, ctx.slots, True)
    a = ctx.encrypt(x, keys.public)
    # left rotation: slot i of the result is slot i + step of the input
    assert bits(ctx.decrypt(ev.rotate(a, step), keys.secret), np.roll(x, -step)) > PRODUCT
    assert bits(ctx.decrypt(ev.rotate(a, step + ctx.slots), keys.secret), np.roll(x, -step)) > PRODUCT


def test_conjugate(env, rng):
    ctx, keys, ev = env
    x = rand(rng, ctx.slots, True)
    assert bits(ctx.decrypt(ev.conjugate(ctx.encrypt(x, keys.public)), keys.secret), np.conj(x)) > PRODUCT


def test_precision_after_multiply_t13(rng):
    """T13 (128-bit): one MulRelinRescale on inputs in [-1, 1] keeps >= 20 bits."""
    ctx = ks.Context(ks.Parameters.named("T13"))
    keys = ctx.keygen()
    ev = ctx.evaluator(keys.evaluation())
    x, y = rand(rng, ctx.slots), rand(rng, ctx.slots)
    out = ctx.decrypt(ev.multiply(ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)), keys.secret)
    assert bits(out, x * y) >= 20
