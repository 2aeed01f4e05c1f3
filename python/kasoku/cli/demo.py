"""`python -m kasoku demo`: encrypted statistics on a data set, side by side with NumPy.

The data set is generated (seeded): 180 days of hourly temperatures from a sensor with a daily and a yearly
cycle plus noise, 4320 readings (180 days). It is encrypted on the "client", the "server" computes the mean, the
variance and a polynomial on the ciphertexts with evaluation keys only, and the client decrypts.
"""

from __future__ import annotations

import time

import numpy as np

import kasoku as ks


def dataset(n: int = 4320, seed: int = 2026) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h = np.arange(n)
    return (
        12.0
        + 9.0 * np.sin(2 * np.pi * (h / 8760.0 - 0.3))
        + 4.0 * np.sin(2 * np.pi * (h % 24) / 24.0)
        + rng.normal(0, 1.5, n)
    )


def main(params_name: str = "default") -> int:
    timings: list[tuple[str, float]] = []

    def timed(label, fn):
        t0 = time.perf_counter()
        out = fn()
        timings.append((label, (time.perf_counter() - t0) * 1e3))
        return out

    x = dataset()
    lo, hi = x.min() - 1, x.max() + 1
    ctx = timed(
        "context",
        lambda: ks.Context(
            ks.Parameters.named("H15")
            if params_name == "H15"
            else ks.Parameters(
                log_n=14, first_bits=60, scale_bits=40, levels=6, special_bits=60, special_primes=2, security=128
            )
        ),
    )
    slots = ctx.slots
    count = len(x)
    if count > slots:
        raise SystemExit(f"data set of {count} values does not fit {slots} slots")
    # normalise to [-1, 1] on the client: the polynomial then works on small values
    z = (x - (lo + hi) / 2) / ((hi - lo) / 2)
    steps = [1 << i for i in range((slots - 1).bit_length())]
    keys = timed("keygen (public, relin, %d rotations)" % len(steps), lambda: ctx.keygen(rotations=steps))
    ev = ctx.evaluator(keys.evaluation())
    ct = timed("encrypt %d values" % count, lambda: ctx.encrypt(z, keys.public))

    def total(c):
        # rotate-and-sum: after log2(slots) steps every slot holds the sum of all slots (zero padding included)
        for s in steps:
            c = ev.add(c, ev.rotate(c, s))
        return c

    enc_sum = timed("encrypted sum (rotate and add)", lambda: total(ct))
    enc_mean = timed("encrypted mean (x 1/n)", lambda: ev.multiply_plain(enc_sum, 1.0 / count))
    sq = timed("encrypted square", lambda: ev.multiply(ct, ct))
    enc_var = timed(
        "encrypted variance E[z^2] - E[z]^2",
        lambda: ev.sub(ev.multiply_plain(total(sq), 1.0 / count), ev.multiply(enc_mean, enc_mean)),
    )
    # p(z) = 0.5 z^3 - z^2 + 0.25 z + 1 (Horner, depth 2)
    poly = timed(
        "encrypted polynomial 0.5 z^3 - z^2 + 0.25 z + 1",
        lambda: ev.add_plain(
            ev.multiply(ev.add_plain(ev.multiply_plain(ct, 0.5), -1.0), sq) + ev.multiply_plain(ct, 0.25), 1.0
        ),
    )
    mean_z = timed("decrypt mean", lambda: ctx.decrypt(enc_mean, keys.secret)[0].real)
    var_z = timed("decrypt variance", lambda: ctx.decrypt(enc_var, keys.secret)[0].real)
    p_dec = timed("decrypt polynomial", lambda: ctx.decrypt(poly, keys.secret)[:count].real)

    scale = (hi - lo) / 2
    mean = mean_z * scale + (lo + hi) / 2
    var = var_z * scale * scale
    p_ref = 0.5 * z**3 - z**2 + 0.25 * z + 1
    print(f"kasoku {ks.__version__} demo  |  SIMD: {ks.simd_active()}  |  threads: {ctx.threads}")
    print(f"parameters: {ctx.params!r}")
    print(
        f"data: {count} hourly temperatures (180 days, generated, seed 2026), "
        f"encrypted in one ciphertext of {slots} slots\n"
    )
    print(f"{'result':<34}{'encrypted':>16}{'plaintext':>16}{'abs error':>12}")
    print(f"{'mean temperature (C)':<34}{mean:>16.6f}{x.mean():>16.6f}{abs(mean - x.mean()):>12.2e}")
    print(f"{'variance (C^2)':<34}{var:>16.6f}{x.var():>16.6f}{abs(var - x.var()):>12.2e}")
    err = np.max(np.abs(p_dec - p_ref))
    print(f"{'p(z), max over all values':<34}{'':>16}{'':>16}{err:>12.2e}")
    print(f"{'p(z[0])':<34}{p_dec[0]:>16.6f}{p_ref[0]:>16.6f}{abs(p_dec[0] - p_ref[0]):>12.2e}\n")
    print("time of each step:")
    for label, ms in timings:
        print(f"  {label:<52}{ms:>10.1f} ms")
    return 0
