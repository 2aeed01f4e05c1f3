"""Typed errors (operands left unchanged), parameter validation, serialization round trips and rejections."""

import subprocess
import sys

import numpy as np
import pytest

import kasoku as ks
from conftest import bits


def unchanged(ct, before):
    return ct.to_bytes() == before


def test_error_classes_are_exported():
    for name in ["ParameterError", "LevelError", "ScaleError", "MissingKeyError", "SerializationError", "DeviceError"]:
        assert issubclass(getattr(ks, name), ks.Error)
    assert issubclass(ks.ParameterError, ValueError)


def test_bad_values(env):
    ctx, keys, ev = env
    with pytest.raises(ks.ParameterError, match="too many values"):
        ctx.encrypt(np.zeros(ctx.slots + 1), keys.public)
    with pytest.raises(ks.ParameterError, match="NaN or infinite"):
        ctx.encrypt(np.array([1.0, np.nan]), keys.public)
    with pytest.raises(ks.ParameterError, match="NaN or infinite"):
        ctx.encrypt(np.array([np.inf]), keys.public)
    with pytest.raises(ks.ParameterError, match="numbers"):
        ctx.encrypt(["a", "b"], keys.public)
    with pytest.raises(ks.ParameterError, match="one-dimensional"):
        ctx.encrypt(np.zeros((2, 2)), keys.public)
    with pytest.raises(ks.ScaleError, match="do not fit"):
        ctx.encrypt(np.array([1e30]), keys.public)
    a = ctx.encrypt(np.ones(4), keys.public)
    before = a.to_bytes()
    with pytest.raises(ks.ParameterError):
        ev.add_plain(a, np.zeros(ctx.slots + 3))
    with pytest.raises(ks.ParameterError):
        ev.multiply_plain(a, np.array([np.nan]))
    assert unchanged(a, before)


def test_level_and_scale_errors(env):
    ctx, keys, ev = env
    a = ctx.encrypt(np.ones(4), keys.public)
    low = ev.drop_level(a, 0)
    before = low.to_bytes()
    with pytest.raises(ks.LevelError, match="level 0"):
        ev.multiply(low, low)
    with pytest.raises(ks.ScaleError, match="no longer fits"):
        ev.multiply(low, low, rescale=False)
    with pytest.raises(ks.LevelError):
        ev.rescale(low)
    with pytest.raises(ks.LevelError):
        ev.multiply_plain(low, 2.0)
    with pytest.raises(ks.LevelError):
        ev.drop_level(low, 1)
    assert unchanged(low, before)
    # same level, different scales
    b = ctx.encrypt(np.ones(4), keys.public, scale=2.0**35)
    with pytest.raises(ks.ScaleError, match="different scales"):
        ev.add(a, b)


def test_missing_keys(env):
    ctx, keys, ev = env
    a = ctx.encrypt(np.ones(4), keys.public)
    before = a.to_bytes()
    with pytest.raises(ks.MissingKeyError, match=r"step 3 .*rotations=\[3\]"):
        ev.rotate(a, 3)
    bare = ctx.evaluator(None)
    with pytest.raises(ks.MissingKeyError, match="relinearisation"):
        bare.multiply(a, a)
    with pytest.raises(ks.MissingKeyError, match="conjugation"):
        bare.conjugate(a)
    assert unchanged(a, before)
    ctx.evaluator(keys.evaluation())  # restore the operators' evaluator for other tests


def test_other_context_is_refused(env):
    ctx, keys, ev = env
    other = ks.Context(ks.Parameters.named("T12"))
    okeys = other.keygen()
    a = ctx.encrypt(np.ones(4), keys.public)
    b = other.encrypt(np.ones(4), okeys.public)
    before = a.to_bytes()
    with pytest.raises(ks.ParameterError, match="another context"):
        ev.add(a, b)
    with pytest.raises(ks.ParameterError, match="another context"):
        ctx.decrypt(b, keys.secret)
    with pytest.raises(ks.ParameterError, match="another context"):
        ctx.encrypt(np.ones(2), okeys.public)
    with pytest.raises(ks.ParameterError, match="another context"):
        ctx.evaluator(okeys.evaluation())
    assert unchanged(a, before)


def test_parameter_validation():
    p = ks.Parameters(log_n=13, first_bits=60, scale_bits=40, levels=2, special_bits=60, special_primes=1, security=128)
    assert p.n == 8192 and p.slots == 4096 and p.dnum == 3
    with pytest.raises(ks.ParameterError, match="insecure"):
        ks.Parameters(log_n=13, levels=5)
    assert ks.Parameters(log_n=13, levels=5, security=None).levels == 5
    with pytest.raises(ks.ParameterError):
        ks.Parameters(log_n=13, scale_bits=62, security=None)
    with pytest.raises(ks.ParameterError, match="unknown parameter set"):
        ks.Parameters.named("X99")
    h16 = ks.Parameters.named("H16")
    assert (h16.log_n, h16.levels, h16.special_primes, h16.special_bits, h16.dnum, h16.log_qp) == (
        16,
        20,
        7,
        48,
        3,
        1196,
    )
    assert ks.Parameters.from_bytes(h16.to_bytes()).levels == 20
    with pytest.raises(ks.ParameterError):
        ks.Context(ks.Parameters.named("T13"), threads=-1)


def test_serialization_round_trips(env, rng):
    ctx, keys, ev = env
    x = rng.uniform(-1, 1, ctx.slots)
    a = ctx.encrypt(x, keys.public)
    b = ks.Ciphertext.from_bytes(ctx, a.to_bytes())
    assert b.level == a.level and b.scale == a.scale
    assert bits(ctx.decrypt(b, keys.secret), x) > 21
    pk = ks.PublicKey.from_bytes(ctx, keys.public.to_bytes())
    sk = ks.SecretKey.from_bytes(ctx, keys.secret.to_bytes())
    ek = ks.EvaluationKeys.from_bytes(ctx, keys.evaluation().to_bytes())
    assert sorted(ek.galois_elements) == sorted(keys.evaluation().galois_elements) and ek.has_relin
    ev2 = ctx.evaluator(ek)
    c = ctx.encrypt(x, pk)
    out = ctx.decrypt(ev2.rotate(ev2.multiply(c, c), 1), sk)
    assert bits(out, np.roll(x * x, -1)) > 19
    assert len(keys.relin.to_bytes()) > 0 and keys.relin.digits == 3
    ctx.evaluator(keys.evaluation())


def test_serialization_rejects_bad_bytes(env):
    ctx, keys, _ = env
    data = ctx.encrypt(np.ones(4), keys.public).to_bytes()
    for pos in [0, 4, 7, 12, 40, len(data) // 2, len(data) - 1]:
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(ks.SerializationError):
            ks.Ciphertext.from_bytes(ctx, bytes(bad))
    with pytest.raises(ks.SerializationError, match="truncated|short"):
        ks.Ciphertext.from_bytes(ctx, data[:-3])
    with pytest.raises(ks.SerializationError, match="expected a PublicKey"):
        ks.PublicKey.from_bytes(ctx, data)
    t13 = ks.Context(ks.Parameters.named("T13"))
    with pytest.raises(ks.SerializationError, match="other parameters"):
        ks.Ciphertext.from_bytes(t13, data)
    with pytest.raises(ks.SerializationError):
        ks.Parameters.from_bytes(b"KSKU")


def test_compact_and_compressed_forms(env, rng):
    ctx, keys, _ = env
    x = rng.uniform(-1, 1, ctx.slots)
    sym, pub = ctx.encrypt(x, keys.secret), ctx.encrypt(x, keys.public)
    # a secret-key ciphertext travels as its first part and the seed of the second
    assert len(sym.to_bytes()) < 0.51 * len(pub.to_bytes())
    back = ks.Ciphertext.from_bytes(ctx, sym.to_bytes())
    assert back.to_bytes() == sym.to_bytes() and bits(ctx.decrypt(back, keys.secret), x) > 21
    # the secret key as 2 bits per coefficient (plus header and digest)
    assert len(keys.secret.to_bytes()) == ctx.params.n // 4 + 24 + 9 + 32
    for obj, cls in [(pub, ks.Ciphertext), (keys.public, ks.PublicKey), (keys.evaluation(), ks.EvaluationKeys)]:
        z = obj.to_bytes(compression="zstd")
        assert cls.from_bytes(ctx, z).to_bytes() == obj.to_bytes()
    z = ctx.params.to_bytes(compression="zstd")
    assert ks.Parameters.from_bytes(z).levels == ctx.params.levels
    with pytest.raises(ks.ParameterError, match="compression"):
        pub.to_bytes(compression="gzip")


def test_cli_info_and_bench(tmp_path):
    out = subprocess.run([sys.executable, "-m", "kasoku", "info"], capture_output=True, text=True, check=True).stdout
    assert "SIMD body in use" in out and ks.__version__ in out
    cuda = ks.cuda_info()
    assert ("CUDA device:" in out) == cuda["available"]
    if not cuda["available"]:
        assert cuda["reason"] and cuda["reason"] in out  # says why there is no GPU
    path = tmp_path / "b.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kasoku",
            "bench",
            "--params",
            "T12",
            "--threads",
            "1",
            "--reps",
            "1",
            "--json",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    import json

    ops = {json.loads(l)["op"] for l in path.read_text().splitlines()}
    assert {"KeyGen", "Encode", "Encrypt", "DecryptDecode", "Add", "MulRelinRescale", "Rotate", "NTT", "size"} <= ops


def test_bench_hoisting_rows():
    """`python -m kasoku bench --hoisting` (the GPU machine's h16-gpu step) gives its SumSlots, hoisted-rotation and
    check rows, within the precision of T12."""
    import io

    from kasoku.cli import bench

    lines = bench.run("T12", 1, 1, None, progress=io.StringIO(), hoisting=True)
    by_op = {r["op"]: r for r in lines}
    assert {"SumSlots", "Rotate16Hoisted", "check"} <= set(by_op)
    assert by_op["SumSlots"]["M"] == 11 and 1 <= by_op["SumSlots"]["h"] <= 11
    assert by_op["check"]["max_err_sum_slots"] < 1e-2 and by_op["check"]["max_err_rotate_hoisted"] < 1e-3


def test_demo_runs():
    out = subprocess.run([sys.executable, "-m", "kasoku", "demo"], capture_output=True, text=True, check=True).stdout
    assert "mean temperature" in out and "variance" in out


@pytest.mark.parametrize("body", ["scalar", "auto"])
def test_simd_override(body):
    """KASOKU_SIMD picks the kernel body; results are the same computation either way."""
    import os

    code = (
        "import numpy as np, kasoku as ks; ctx = ks.Context(ks.Parameters.named('T12'), threads=1); "
        "k = ctx.keygen(rotations=[1]); ev = ctx.evaluator(k.evaluation()); x = np.linspace(-1, 1, ctx.slots); "
        "c = ctx.encrypt(x, k.public); y = ctx.decrypt(ev.rotate(c * c, 1), k.secret).real; "
        "print(ks.simd_active(), float(np.max(np.abs(y - np.roll(x * x, -1)))))"
    )
    env = dict(os.environ, KASOKU_SIMD=body)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out[0] == (ks.simd_available()[-1] if body == "auto" else "scalar")
    assert float(out[1]) < 2.0**-19


def test_simd_override_rejects_unknown_body():
    import os

    env = dict(os.environ, KASOKU_SIMD="sse9")
    r = subprocess.run(
        [sys.executable, "-c", "import kasoku as ks; ks.Context(ks.Parameters.named('T12'))"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode != 0 and "unknown SIMD body 'sse9'" in r.stderr


def test_cuda_device_or_its_reason():
    """device="cuda" computes on the GPU where there is one; elsewhere it is a DeviceError that says why."""
    params = ks.Parameters.named("T12")
    cuda = ks.cuda_info()
    assert ks.Context(params, threads=1).device == "cpu"
    assert cuda["compiled"] == bool(cuda["architectures"])  # what the kernels were compiled for, when they were
    with pytest.raises(ks.ParameterError, match="device must be"):
        ks.Context(params, threads=1, device="tpu")
    cpu = ks.Context(params, threads=1)
    keys = cpu.keygen(rotations=[1])
    x = np.linspace(-1, 1, cpu.slots)
    ct = cpu.encrypt(x, keys.public)
    assert ct.device == "cpu" and ct.to("cpu").to_bytes() == ct.to_bytes()
    with pytest.raises(ks.ParameterError, match="device must be"):
        ct.to("tpu")
    if not cuda["available"]:
        with pytest.raises(ks.DeviceError, match="CUDA"):
            ks.Context(params, threads=1, device="cuda")
        with pytest.raises(ks.DeviceError, match="CUDA"):
            ct.to("cuda")
        return
    ctx = ks.Context(params, threads=1, device="cuda")
    assert ctx.device == "cuda" and ctx.backend == "cuda"
    gkeys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(gkeys.evaluation())
    g = ev.rotate(ev.multiply(ctx.encrypt(x, gkeys.public), ctx.encrypt(x, gkeys.public)), 1)
    assert np.max(np.abs(ctx.decrypt(g, gkeys.secret).real - np.roll(x * x, -1))) < 1e-4
    # a CPU context's ciphertext and keys to the GPU and back: the same bits, computed there, decrypted here
    gpu = cpu.on("cuda")
    assert gpu.device == "cuda" and cpu.on("cuda").on("cpu").device == "cpu"
    on_gpu = ct.to("cuda")
    assert on_gpu.device == "cuda" and on_gpu.to("cpu").to_bytes() == ct.to_bytes()
    gev = gpu.evaluator(keys.evaluation().to("cuda"))
    cev = cpu.evaluator(keys.evaluation())
    assert gev.multiply(on_gpu, on_gpu).to("cpu").to_bytes() == cev.multiply(ct, ct).to_bytes()
    assert np.max(np.abs(cpu.decrypt(gev.rotate(on_gpu, 1).to("cpu"), keys.secret).real - np.roll(x, -1))) < 1e-4
