"""Polynomials and functions of encrypted values against NumPy's evaluation of the same polynomial."""

import math

import numpy as np
import pytest

import kasoku as ks


@pytest.fixture(scope="module")
def deep():
    """N = 2^12 (2048 slots), 2^40 scale, 11 levels: research parameters (no security claim), fast."""
    p = ks.Parameters(
        log_n=12, first_bits=60, scale_bits=40, levels=11, special_bits=60, special_primes=3, security=None
    )
    ctx = ks.Context(p, threads=2)
    keys = ctx.keygen()
    return ctx, keys, ctx.evaluator(keys.evaluation())


def numpy_value(coeffs, basis, x, interval=(-1.0, 1.0)):
    a, b = interval
    t = (2 * x - a - b) / (b - a)
    return (
        np.polynomial.polynomial.polyval(t, coeffs) if basis == "power" else np.polynomial.chebyshev.chebval(t, coeffs)
    )


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
@pytest.mark.parametrize("degree", [1, 3, 4, 7, 15, 16, 31, 63, 127, 255])
def test_polynomial_matches_numpy(deep, rng, basis, degree):
    ctx, keys, ev = deep
    coeffs = rng.uniform(-1, 1, degree + 1)
    if degree > 16:
        # max|p'| times the noise of one product (~2^-30) bounds any evaluation, even an exact one of the noisy input;
        # unit coefficients make |p'| up to sum i (power) or sum i^2 (Chebyshev) near +-1, so the high degrees use
        # coefficients that decay like those of smooth functions.
        coeffs[2:] /= np.arange(2, degree + 1) ** 2
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    poly = ks.Polynomial(coeffs, basis)
    assert poly.depth == math.ceil(math.log2(degree + 1))
    out = ev.evaluate_polynomial(ct, coeffs, basis=basis)
    assert out.level == ct.level - poly.depth
    assert out.scale == pytest.approx(ctx.scale_at(out.level), rel=1e-9)
    err = np.max(np.abs(ctx.decrypt(out, keys.secret) - numpy_value(coeffs, basis, x)))
    assert err <= 2.0**-20


def test_complex_coefficients_and_interval(deep, rng):
    ctx, keys, ev = deep
    coeffs = (rng.uniform(-1, 1, 40) + 1j * rng.uniform(-1, 1, 40)) / np.arange(1, 41) ** 2
    x = rng.uniform(-2, 6, ctx.slots)
    poly = ks.Polynomial(coeffs, "chebyshev", interval=(-2, 6))
    assert poly.depth == 6 + 1
    out = ev.evaluate_polynomial(ctx.encrypt(x, keys.public), poly)
    assert out.level == ctx.max_level - 7
    want = numpy_value(coeffs, "chebyshev", x, (-2, 6))
    assert np.max(np.abs(ctx.decrypt(out, keys.secret) - want)) <= 2.0**-20
    assert np.allclose(poly(x[:5]), want[:5])


def test_too_few_levels_names_the_depth_and_leaves_the_operand(deep, rng):
    ctx, keys, ev = deep
    ct = ev.drop_level(ctx.encrypt(rng.uniform(-1, 1, 8), keys.public), 5)
    before = ct.to_bytes()
    with pytest.raises(ks.LevelError, match="needs 7 levels"):
        ev.evaluate_polynomial(ct, np.ones(64), basis="chebyshev", interval=(-8, 8))
    with pytest.raises(ks.LevelError, match="needs 21 levels"):
        ev.sign(ct)
    assert ct.to_bytes() == before
    with pytest.raises(ks.ParameterError):
        ev.evaluate_polynomial(ct, [1.0])  # a constant
    with pytest.raises(ks.ParameterError):
        ev.evaluate_polynomial(ct, [1.0, 2.0], basis="legendre")
    with pytest.raises(ks.ParameterError):
        ks.Polynomial([0.0, 1.0], "chebyshev", interval=(1, -1))


def test_chebyshev_matches_numpy_interpolation():
    ours = np.zeros(21)
    coeffs = ks.chebyshev(np.exp, (-1, 1), 20).coeffs.real  # the terms below 2^-50 of the largest are dropped
    ours[: coeffs.size] = coeffs
    assert np.allclose(ours, np.polynomial.chebyshev.chebinterpolate(np.exp, 20), atol=1e-14)
    # a function that only takes floats is called once per node
    scalar_only = ks.chebyshev(lambda v: math.exp(float(v)), (-1, 1), 20).coeffs.real
    assert np.allclose(scalar_only, coeffs, atol=1e-14)
    assert len(ks.chebyshev_nodes((0, 2), 7)) == 8


def test_sigmoid_degree_63_within_1e_4_on_10000_points():
    p = ks.Parameters(
        log_n=13, first_bits=60, scale_bits=40, levels=7, special_bits=60, special_primes=2, security=None
    )
    ctx = ks.Context(p, threads=2)
    keys = ctx.keygen()
    ev = ctx.evaluator(keys.evaluation())
    x = np.linspace(-8, 8, 10_000)
    worst = 0.0
    for part in np.array_split(x, math.ceil(x.size / ctx.slots)):
        out = ev.sigmoid(ctx.encrypt(part, keys.public))
        assert out.level == 0
        got = ctx.decrypt(out, keys.secret)[: part.size].real
        worst = max(worst, float(np.max(np.abs(got - 1 / (1 + np.exp(-part))))))
    assert worst <= 1e-4


def test_functions(deep, rng):
    ctx, keys, ev = deep
    enc = lambda v: ctx.encrypt(v, keys.public)  # noqa: E731
    dec = lambda c: ctx.decrypt(c, keys.secret).real  # noqa: E731
    x = rng.uniform(-1, 1, ctx.slots)
    assert np.max(np.abs(dec(ev.exp(enc(x))) - np.exp(x))) < 1e-6
    assert np.max(np.abs(dec(ev.evaluate_function(enc(x), np.tanh, (-1, 1), 31)) - np.tanh(x))) < 1e-6
    xp = rng.uniform(-3, 3, ctx.slots)
    assert np.max(np.abs(dec(ev.sin(enc(xp))) - np.sin(xp))) < 1e-6
    assert np.max(np.abs(dec(ev.cos(enc(xp))) - np.cos(xp))) < 1e-6
    xs = rng.uniform(0.5, 4, ctx.slots)
    inv = ev.inverse(enc(xs), (0.5, 4))
    assert inv.level == ctx.max_level - ks.inverse_depth((0.5, 4))
    assert np.max(np.abs(dec(inv) - 1 / xs)) < 1e-6
    assert np.max(np.abs(dec(ev.sqrt(enc(xs), (0.5, 4))) - np.sqrt(xs))) < 1e-5
    d = rng.uniform(-1, 1, ctx.slots)
    d = np.where(d >= 0, np.maximum(d, 0.3), np.minimum(d, -0.3))
    assert ks.sign_depth(0.3, 10) <= ctx.max_level
    s = ev.sign(enc(d), eps=0.3, precision_bits=10)
    assert np.max(np.abs(dec(s) - np.sign(d))) < 2.0**-10 + 1e-5
    c = ev.compare(enc(d), enc(np.zeros(ctx.slots)), eps=0.3, precision_bits=10)
    assert np.max(np.abs(dec(c) - (d > 0))) < 2.0**-10 + 1e-5


def test_linear_combination(deep, rng):
    ctx, keys, ev = deep
    a, b = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    ca, cb = ctx.encrypt(a, keys.public), ev.square(ctx.encrypt(b, keys.public))
    out = ev.linear_combination([ca, cb], [0.5 + 0.25j, -2.0], constant=1.0)
    assert out.level == cb.level - 1
    want = (0.5 + 0.25j) * a - 2.0 * b * b + 1.0
    assert np.max(np.abs(ctx.decrypt(out, keys.secret) - want)) < 2.0**-25


def test_linear_combination_at_a_level_and_multiply_add(deep, rng):
    ctx, keys, ev = deep
    a, b = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    ca, cb = ctx.encrypt(a, keys.public), ctx.encrypt(b, keys.public)
    level = ca.level - 3
    out = ev.linear_combination([ca, cb], [0.5, -2j], constant=1.0, level=level)
    assert out.level == level and out.scale == ctx.scale_at(level)
    assert np.max(np.abs(ctx.decrypt(out, keys.secret) - (0.5 * a - 2j * b + 1.0))) < 2.0**-25
    odd = ev.linear_combination([ca], [1.0], level=level, scale=2.0**30)
    assert odd.scale == 2.0**30 and np.max(np.abs(ctx.decrypt(odd, keys.secret) - a)) < 2.0**-15  # noise at 2^30
    with pytest.raises(ks.ParameterError, match="level="):
        ev.linear_combination([ca], [1.0], scale=2.0**30)
    # k a b + sum + constant, one relinearisation and one rescale
    fused = ev.multiply_add(ca, cb, k=2, cts=[ca], coeffs=[0.25], constant=-1.0)
    assert fused.level == ca.level - 1
    assert np.max(np.abs(ctx.decrypt(fused, keys.secret) - (2 * a * b + 0.25 * a - 1.0))) < 2.0**-25
    assert np.max(np.abs(ctx.decrypt(ev.multiply_add(ca, cb), keys.secret) - a * b)) < 2.0**-25
    with pytest.raises(ks.ParameterError):
        ev.multiply_add(ca, ev.drop_level(cb, cb.level - 1))  # factors at two levels
    with pytest.raises(ks.ParameterError):
        ev.multiply_add(ca, cb, k=0)


@pytest.mark.parametrize("depth,bits", [(3, 20), (6, 16), (12, 8)])
def test_for_circuit_runs_its_depth_with_its_precision(depth, bits, rng):
    params = ks.Parameters.for_circuit(depth=depth, precision_bits=bits)
    assert params.security == 128 and params.levels == depth
    assert params.log_qp <= {13: 218, 14: 438, 15: 881, 16: 1772}[params.log_n]
    assert "N = 2^" in repr(params) and "dnum" in repr(params)
    ctx = ks.Context(params, threads=2)
    keys = ctx.keygen()
    ev = ctx.evaluator(keys.evaluation())
    # depth products of unit-modulus values: the magnitude stays 1 and the noise adds up along the chain
    xs = np.exp(2j * np.pi * rng.uniform(0, 1, (depth + 1, ctx.slots)))
    acc = ctx.encrypt(xs[0], keys.public)
    for k in range(1, depth + 1):
        acc = ev.multiply(acc, ctx.encrypt(xs[k], keys.public))
    assert acc.level == 0
    got = ctx.decrypt(acc, keys.secret)
    assert -np.log2(np.max(np.abs(got - np.prod(xs, axis=0)))) >= bits


@pytest.mark.parametrize("degree,total", [(31, 1.0), (31, 16.0), (63, 2.0)])
def test_for_polynomial_delivers_its_bits_at_the_output(degree, total, rng):
    """for_circuit promises its bits for each product of values up to 1; a series whose coefficients sum to 16 keeps
    about 16.6 of 20 there. for_polynomial adds the bits the coefficients cost, and the output has the bits asked."""
    coeffs = rng.uniform(-1, 1, degree + 1)
    coeffs *= total / np.sum(np.abs(coeffs))
    poly = ks.Polynomial(coeffs, basis="chebyshev")
    params = ks.Parameters.for_polynomial(poly, precision_bits=20)
    assert params.levels == poly.depth and params.security == 128
    ctx = ks.Context(params, threads=2)
    keys = ctx.keygen()
    x = rng.uniform(-1, 1, ctx.slots)
    out = ctx.evaluator(keys.evaluation()).evaluate_polynomial(ctx.encrypt(x, keys.public), poly)
    err = np.max(np.abs(ctx.decrypt(out, keys.secret).real - np.polynomial.chebyshev.chebval(x, coeffs)))
    assert -np.log2(err) >= 20


def test_for_circuit_says_what_cannot_be_had():
    with pytest.raises(ks.ParameterError, match="bootstrapping"):
        ks.Parameters.for_circuit(depth=40, precision_bits=20)
    research = ks.Parameters.for_circuit(depth=40, precision_bits=20, security=None)
    assert research.security is None and research.levels == 40
    assert ks.Parameters.for_circuit(depth=4, slots=2**14).slots >= 2**14
    assert ks.Parameters.for_circuit(depth=4, slots=5000).slots == 8192
    with pytest.raises(ks.ParameterError):
        ks.Parameters.for_circuit(depth=4, slots=2**17)
