"""Concurrency of the Python API: heavy calls release the GIL, and the ciphertext operators stay correct while
another thread replaces the context's evaluator (Context.evaluator) under them."""

import threading

import numpy as np
import pytest

import kasoku as ks
from conftest import bits


def test_operators_while_the_evaluator_is_replaced():
    ctx = ks.Context(ks.Parameters.named("T12"), threads=1)
    keys = ctx.keygen()
    ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    want = {"mul": x * y, "add": x + y, "sub": x - y, "neg": -x, "scalar": 2.0 * x + 0.5, "array": x * y}

    stop = threading.Event()
    replaced = [0]

    def replacer():
        while not stop.is_set():
            ctx.evaluator(keys.evaluation())  # drops the previous evaluator, which operators may be using
            replaced[0] += 1

    results: list[tuple[str, ks.Ciphertext]] = []
    failures: list[BaseException] = []

    def worker():
        try:
            for _ in range(12):
                results.append(("mul", a * b))
                results.append(("add", a + b))
                results.append(("sub", a - b))
                results.append(("neg", -a))
                results.append(("scalar", 2.0 * a + 0.5))
                results.append(("array", a * y))
        except BaseException as e:  # noqa: BLE001: reported below
            failures.append(e)

    swap = threading.Thread(target=replacer)
    workers = [threading.Thread(target=worker) for _ in range(3)]
    swap.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    swap.join()
    assert not failures, failures
    assert replaced[0] > 0
    assert len(results) == 3 * 12 * 6
    for what, ct in results:
        assert bits(ctx.decrypt(ct, keys.secret).real, want[what]) > 14, what


def test_heavy_calls_run_in_parallel_threads():
    ctx = ks.Context(ks.Parameters.named("T12"), threads=1)
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    x = np.arange(ctx.slots) / ctx.slots
    a = ctx.encrypt(x, keys.public)
    out: dict[int, ks.Ciphertext] = {}

    def job(i):
        out[i] = ev.rotate(ev.multiply(a, a), 1)

    ts = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in range(4):
        assert bits(ctx.decrypt(out[i], keys.secret).real, np.roll(x * x, -1)) > 15


def test_memory_pool_limit_changes_memory_not_results():
    ctx = ks.Context(ks.Parameters.named("T12"), threads=2)
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    x = np.random.default_rng(5).uniform(-1, 1, ctx.slots)
    a = ctx.encrypt(x, keys.public)
    default = ks.memory_pool_limit()
    assert default == 256 << 20
    outs = []
    try:
        for limit in (0, 1 << 30, default):  # nothing kept, plenty kept, the default
            ks.set_memory_pool_limit(limit)
            assert ks.memory_pool_limit() == limit
            outs.append([ev.rotate(ev.multiply(a, a), 1) for _ in range(3)])
        with pytest.raises(TypeError):
            ks.set_memory_pool_limit(-1)
    finally:
        ks.set_memory_pool_limit(default)
    assert len({c.to_bytes() for run in outs for c in run}) == 1
    assert bits(ctx.decrypt(outs[0][0], keys.secret), np.roll(x * x, -1)) > 20
