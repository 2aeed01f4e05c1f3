"""device="gpu-emulated": the GPU backend's logic on the host, with its device memory counted (Context.device_memory)
and its kernels optionally counted without running (ks.GpuKernelsSkipped): what a plan would take on a GPU, measured on
a machine without one."""

import contextlib

import numpy as np
import pytest
import torch
import torch.nn as nn

import kasoku as ks
import kasoku.nn as ksnn
from conftest import small_boot_params


def _ops(ctx, keys, x):
    ev = ctx.evaluator(keys.evaluation().to(ctx.device))
    ct = ctx.encrypt(x, keys.public.to(ctx.device)) if ctx.device != "cpu" else ctx.encrypt(x, keys.public)
    return ev.rotate(ev.multiply(ct, ct), 1)


def test_the_emulated_gpu_computes_the_cpus_bits_and_counts_its_memory():
    ctx = ks.Context(ks.Parameters.named("T13"), threads=1)
    emu = ctx.on("gpu-emulated")
    assert emu.device == emu.backend == "gpu-emulated"
    keys = ctx.keygen(rotations=[1])
    x = np.linspace(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    ev = ctx.evaluator(keys.evaluation())
    want = ev.rotate(ev.multiply(ct, ct), 1)
    before = emu.device_memory()["held_bytes"]
    eve = emu.evaluator(keys.evaluation().to("gpu-emulated"))
    c = ct.to("gpu-emulated")
    got = eve.rotate(eve.multiply(c, c), 1)
    assert got.device == "gpu-emulated" and got.to("cpu").to_bytes() == want.to_bytes()
    m = emu.device_memory()
    # the evaluation keys and the ciphertexts are on the emulated device now, counted
    assert m["held_bytes"] - before >= keys.evaluation().nbytes and m["peak_bytes"] >= m["held_bytes"]
    assert ctx.device_memory() == {"held_bytes": 0, "peak_bytes": 0}  # host memory: the process's resident memory
    del got, c
    assert emu.device_memory(reset_peak=True)["peak_bytes"] == m["peak_bytes"]
    again = emu.device_memory()
    assert again["peak_bytes"] == again["held_bytes"] <= m["peak_bytes"]  # a new peak from what is held now
    with pytest.raises(ks.ParameterError, match='"cpu", "cuda" or "gpu-emulated"'):
        ks.Context(ks.Parameters.named("T13"), device="tpu")


def test_skipped_kernels_count_the_same_memory_as_run_ones():
    """The counts do not depend on the data: a multiplication and a rotation with their kernels skipped take the
    device memory they take when run (fresh contexts, the same calls)."""
    peaks = []
    for skipped in (False, True):
        ctx = ks.Context(ks.Parameters.named("T13"), threads=1, device="gpu-emulated")
        keys = ctx.keygen(rotations=[1])
        x = np.linspace(-1, 1, ctx.slots)
        with ks.GpuKernelsSkipped() if skipped else contextlib.nullcontext():
            out = _ops(ctx, keys, x)
        if not skipped:  # run: the right values
            assert np.max(np.abs(np.real(ctx.decrypt(out, keys.secret)) - np.roll(x * x, -1))) < 1e-4
        peaks.append(ctx.device_memory()["peak_bytes"])
    assert peaks[0] == peaks[1] > 0


def test_a_plan_on_the_emulated_gpu_takes_the_cpus_decisions_and_counts_its_device_memory():
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(32, 1, 4, 4)
    plan = ksnn.compile(
        model, calibration[:1], calibration=calibration, params=small_boot_params(4), threads=1, device="gpu-emulated"
    )
    assert plan.ctx.device == "gpu-emulated" and plan.bootstraps >= 1
    assert plan.calibration["bootstrap_device_bytes"] > 0  # measured by compile's noise bootstrap
    # compile keeps no throwaway key (the context's operators would hold its measuring evaluator's)
    assert plan.ctx.device_memory(reset_peak=True)["held_bytes"] < plan.key_bytes(compact=False) / 4
    plan.keygen()
    for x in calibration[:2]:
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - plan.forward_clear(x))) < 1e-4
    counted = plan.ctx.device_memory()["peak_bytes"]
    assert counted >= plan.key_bytes(compact=False)  # keys are whole on a GPU
    # plan.memory()'s device estimate (what repr(plan) states) within 10 % of the peak counted from keygen on
    assert abs(plan.memory()["gpu"] / counted - 1) <= 0.10, (plan.memory(), counted)
