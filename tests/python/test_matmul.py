"""Linear transforms and encrypted matrix products (Manabe et al.) against NumPy."""

import numpy as np
import pytest

import kasoku as ks

BOUND = 1e-6  # max absolute error of a product of matrices with entries in [0, 1) at scale 2^40


@pytest.fixture(scope="module")
def mm():
    """N = 2^10 (512 slots), four 40-bit levels (tests only: no security claim); keys for the shapes below."""
    p = ks.Parameters(
        log_n=10, first_bits=60, scale_bits=40, levels=4, special_bits=60, special_primes=2, security=None
    )
    ctx = ks.Context(p, threads=2)
    elts = set()
    for d, g, rows in [(2, 1, None), (3, 1, None), (4, 2, None), (4, 4, None), (8, 1, 2), (3, 2, None), (40, 1, None)]:
        elts |= set(ks.MatrixEncoder(ctx, d, g, rows).galois_elements())
    keys = ctx.keygen(galois_elements=sorted(elts))
    return ctx, keys, ctx.evaluator(keys.evaluation())


def sigma(a):
    d = a.shape[0]
    return np.array([[a[i, (i + j) % d] for j in range(d)] for i in range(d)])


def tau(a):
    d = a.shape[0]
    return np.array([[a[(i + j) % d, j] for j in range(d)] for i in range(d)])


def phi(a, k):
    return np.roll(a, -k, axis=1)


def psi(a, k):
    return np.roll(a, -k, axis=0)


@pytest.mark.parametrize("d,g", [(4, 2), (3, 2)])
def test_each_transform_matches_its_definition(mm, rng, d, g):
    ctx, keys, ev = mm
    enc = ks.MatrixEncoder(ctx, d, g)
    mats = rng.random((g, d, d))
    ct = enc.encrypt(mats, keys.public)
    cases = [("sigma", 0, sigma), ("tau", 0, tau)] + [
        (w, k, f) for k in range(1, d) for w, f in (("phi", phi), ("psi", psi))
    ]
    for which, k, ref in cases:
        lt = enc.transform(which, k)
        out = ev.apply(lt, ct.ciphertexts[0])
        slots = ctx.decrypt(out, keys.secret).real
        # unpack: V[g*j + i] = M_i[j // d][j % d]
        for i in range(g):
            got = slots[i : g * d * d : g].reshape(d, d)
            want = ref(mats[i], k) if which in ("phi", "psi") else ref(mats[i])
            assert np.max(np.abs(got - want)) < BOUND, (which, k, i)


@pytest.mark.parametrize("d,g", [(2, 1), (3, 1), (4, 2), (4, 4), (3, 2)])
def test_products(mm, rng, d, g):
    ctx, keys, ev = mm
    enc = ks.MatrixEncoder(ctx, d, g)
    A, B = rng.random((g, d, d)), rng.random((g, d, d))
    c, counts = ks.matmul(ev, enc.encrypt(A, keys.public), enc.encrypt(B, keys.public), return_counts=True)
    assert c.level == ctx.max_level - 3 and c.shape == (d, d) and c.g == g
    got = enc.decrypt(c, keys.secret)
    for i in range(g):
        assert np.max(np.abs(got[i] - A[i] @ B[i])) < BOUND
    assert counts["mult"] == d


def test_rectangular_and_blocked(mm, rng):
    ctx, keys, ev = mm
    enc = ks.MatrixEncoder(ctx, 8, 1, rows=2)
    A, B = rng.random((2, 8)), rng.random((8, 8))
    c = ks.matmul(ev, enc.encrypt(A, keys.public), enc.encrypt(B, keys.public))
    assert c.shape == (2, 8)
    assert np.max(np.abs(enc.decrypt(c, keys.secret)[0] - A @ B)) < BOUND
    big = ks.MatrixEncoder(ctx, 40)  # 40 x 40 > 512 slots: 3 x 3 blocks of 16 x 16
    assert (big.block, big.grid) == (16, 3)
    A, B = rng.random((40, 40)), rng.random((40, 40))
    steps = []
    c = ks.matmul(ev, big.encrypt(A, keys.public), big.encrypt(B, keys.public), progress=lambda *s: steps.append(s))
    assert steps == [(k, 3 * 16) for k in range(1, 3 * 16 + 1)]  # grid x block steps
    assert len(c.ciphertexts) == 9
    assert np.max(np.abs(big.decrypt(c, keys.secret)[0] - A @ B)) < BOUND


def test_linear_transform_dense_and_diagonals(mm, rng):
    ctx, keys, ev = mm
    n = 16
    m = rng.uniform(-1, 1, (n, n))
    m[np.abs(np.subtract.outer(np.arange(n), np.arange(n))) > 2] = 0  # banded: offsets -2..2
    lt = ks.LinearTransform(ctx, m)
    k2 = ctx.keygen(galois_elements=lt.galois_elements())
    ev2 = ctx.evaluator(k2.evaluation())
    x = rng.uniform(-1, 1, ctx.slots)
    y = ctx.decrypt(ev2.apply(lt, ctx.encrypt(x, k2.public)), k2.secret).real
    assert np.max(np.abs(y[:n] - m @ x[:n])) < 1e-6 and np.max(np.abs(y[n:])) < 1e-6
    # diagonals form: out[s] = sum_r d_r[s] x[(s + r) mod slots]
    d = {1: rng.uniform(-1, 1, ctx.slots), -3: rng.uniform(-1, 1, ctx.slots)}
    lt = ks.LinearTransform(ctx, d)
    k3 = ctx.keygen(galois_elements=lt.galois_elements())
    y = ctx.decrypt(ctx.evaluator(k3.evaluation()).apply(lt, ctx.encrypt(x, k3.public)), k3.secret).real
    assert np.max(np.abs(y - (d[1] * np.roll(x, -1) + d[-3] * np.roll(x, 3)))) < 1e-6


def test_errors(mm, rng):
    ctx, keys, ev = mm
    with pytest.raises(ks.ParameterError, match="g\\*d\\*d = 1024"):
        ks.MatrixEncoder(ctx, 16, 4)
    enc = ks.MatrixEncoder(ctx, 4, 1)
    with pytest.raises(ks.ParameterError):
        enc.encrypt(rng.random((4, 3)), keys.public)
    nokeys = ctx.keygen()
    ev0 = ctx.evaluator(nokeys.evaluation())
    a = enc.encrypt(rng.random((4, 4)), nokeys.public)
    before = a.ciphertexts[0].to_bytes()
    with pytest.raises(ks.MissingKeyError, match="Galois key for element"):
        ks.matmul(ev0, a, a)
    assert a.ciphertexts[0].to_bytes() == before
    with pytest.raises(ks.LevelError):
        enc.encrypt(rng.random((4, 4)), keys.public, level=2)
    ctx.evaluator(keys.evaluation())  # restore the operators' evaluator for the other tests


def test_schoolbook(mm, rng):
    ctx, keys, ev = mm
    d = 2
    A, B = rng.random((d, d)), rng.random((d, d))
    ca = [ctx.encrypt([x], keys.public) for x in A.ravel()]
    cb = [ctx.encrypt([x], keys.public) for x in B.ravel()]
    out, counts = ks.matmul_schoolbook(ev, ca, cb, d, return_counts=True)
    assert counts["mult"] == d**3
    got = np.array([ctx.decrypt(c, keys.secret)[0].real for c in out]).reshape(d, d)
    assert np.max(np.abs(got - A @ B)) < BOUND


def test_keygen_matmul_makes_exactly_the_keys(mm):
    ctx, _, _ = mm
    keys = ctx.keygen(matmul=(4, 2))
    assert sorted(keys.galois) == sorted(ks.MatrixEncoder(ctx, 4, 2).galois_elements())
