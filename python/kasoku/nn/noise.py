"""The logit error a plan states before keygen: its clear arithmetic's (the approximations, measured on the
calibration inputs) plus what the encryption's noise adds. The noise is measured on the plan's own context with a
throwaway key (an encryption, a rotation and, for a plan that bootstraps, one bootstrap, of random values in [-1, 1],
the range its bootstrapped values are held in) and carried through the plan's clear arithmetic: Gaussian noise of
KEY_SPREAD times the measured deviations, an encryption's on the input, a rotation's (a key switch's, with a rescale's)
on each affine step's inputs (where its weights scale it, as they scale its rotations' noise) and on every step's
output but a bootstrap's, which gets a bootstrap's; on some calibration inputs, a few draws each. The clear
arithmetic's error and this add (the triangle inequality). The statement is an estimate of the worst case, not a
guarantee: Plan.expected_error."""

from __future__ import annotations

import math

import numpy as np

from .ir import Bootstrap
from .runtime import bootstrap_device_bytes

NOISE_INPUTS = 16  # calibration inputs the noise is carried through
NOISE_DRAWS = 4  # draws of the noise on each
# A bootstrap's noise depends on the key: 12 keys of the same parameters (tests' small_boot_params(4), 8 real slots)
# gave deviations from 1.24e-8 to 3.06e-8, median 2.0e-8; the plan's user's key is not the throwaway one.
KEY_SPREAD = 2.0


def measure(ctx, bootstrapper, input_level: int, threads=None, seed: int = 0) -> dict:
    """The standard deviation and the largest error, in slot units, of an encryption at input_level (public key), of
    that ciphertext rotated by one slot (its largest error bounded by the encryption's plus the rotation's own) and of
    one bootstrap by `bootstrapper` (None: none), of uniform values in [-1, 1], with keys made for them and dropped; on
    a GPU, the device memory the bootstrap took too (bootstrap_device_bytes)."""
    rng = np.random.default_rng(seed)
    boot = bootstrapper is not None
    keys = ctx.keygen(rotations=[1], relin=boot, bootstrapping=bootstrapper or False, threads=threads, progress=False)
    x = rng.uniform(-1.0, 1.0, ctx.slots)
    ct = ctx.encrypt(x, keys.public, level=input_level)
    held = np.real(ctx.decrypt(ct, keys.secret))
    err = held - x
    out = {"encryption_sigma": float(err.std()), "encryption_max": float(np.abs(err).max())}
    rotated = np.real(ctx.decrypt(ctx.evaluator(keys.evaluation()).rotate(ct, 1, threads=threads), keys.secret))
    err = rotated - np.roll(x, -1)
    # the largest error: the encryption's plus the largest the key switch added (a bound on the rotated ciphertext's
    # own, which falls below the encryption's where the two noises cancel at its largest slot)
    added = float(np.abs(rotated - np.roll(held, -1)).max())
    out |= {"rotation_sigma": float(err.std()), "rotation_max": out["encryption_max"] + added}
    if bootstrapper is not None:
        s = bootstrapper.slots
        x = rng.uniform(-1.0, 1.0, s)
        ct = ctx.encrypt(x, keys.public, level=bootstrapper.input_level, slots=s if s < ctx.slots else None)
        ev = ctx.evaluator(keys.evaluation())
        if ctx.device == "cpu":
            y = ev.bootstrap(ct, bootstrapper, threads=threads)
        else:  # the device memory a bootstrap takes, for Plan.memory
            y, out["bootstrap_device_bytes"] = bootstrap_device_bytes(ctx, ev, ct, bootstrapper, threads)
        err = np.real(ctx.decrypt(y, keys.secret)) - np.tile(x, ctx.slots // s)  # every copy of a sparse packing
        out |= {"bootstrap_sigma": float(err.std()), "bootstrap_max": float(np.abs(err).max())}
    ctx.evaluator(None)  # the context's operators' evaluator would otherwise keep the throwaway keys alive
    return out


def carried(plan, xs: np.ndarray, noise: dict, seed: int = 1) -> float:
    """The largest change in the plan's outputs (the model's units) that noise of the measured deviations makes on
    the inputs xs (NOISE_INPUTS of them, NOISE_DRAWS draws each), against the plan's clear arithmetic."""
    rng = np.random.default_rng(seed)
    enc, rot = KEY_SPREAD * noise["encryption_sigma"], KEY_SPREAD * noise["rotation_sigma"]
    boot = KEY_SPREAD * noise.get("bootstrap_sigma", 0.0)

    def add(step, v, before=False):
        sigma = rot if before or not isinstance(step, Bootstrap) else boot
        return v + rng.normal(0.0, enc if step is None else sigma, np.shape(v))

    worst = 0.0
    for x in xs[:NOISE_INPUTS]:
        clear = plan.clear_outputs(x)
        for _ in range(NOISE_DRAWS):
            worst = max(worst, float(np.abs(plan.clear_outputs(x, noise=add) - clear).max()))
    return worst


def statement(plan, xs: np.ndarray, threads=None) -> dict:
    """What compile adds to plan.calibration: the measured noise (its bits: -log2 of the largest error) and what it
    carries to the outputs (noise_error); Plan.expected_error is logit_error + noise_error."""
    noise = measure(plan.ctx, plan.bootstrapper, plan.input_level, threads)
    out = {
        "noise_error": carried(plan, xs, noise),
        "encryption_bits": -math.log2(noise["encryption_max"]),
        "rotation_bits": -math.log2(noise["rotation_max"]),
    }
    if "bootstrap_max" in noise:
        out["bootstrap_bits"] = -math.log2(noise["bootstrap_max"])
    if "bootstrap_device_bytes" in noise:
        out["bootstrap_device_bytes"] = noise["bootstrap_device_bytes"]
    return out
