"""A circuit deeper than the parameters' levels, run to the end with bootstrapping.

    .venv/bin/python examples/deep_circuit.py [--steps 30] [--log-n 12]

sign(x) by the iteration y <- (3 y - y^3) / 2 (each step a degree-3 polynomial: 2 levels), 30 steps = 60 levels on
parameters that have 21: whenever fewer than 2 levels are left, Evaluator.bootstrap brings the ciphertext back to
the bootstrapper's output level. Each bootstrap's own error and the result against the same iteration in plain
arithmetic are printed (the client can check them: it holds the secret key).

The parameters are a small research set (security=None: N = 2^12 with this many primes is not 128-bit secure); they
show the mechanics in seconds. Sparse secret (hamming_weight=64): ModRaise's overflow stays small.
"""

import argparse
import time

import numpy as np

import kasoku as ks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--log-n", type=int, default=12)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()

    params = ks.Parameters.named("TS10").replace(log_n=args.log_n, levels=21)
    ctx = ks.Context(params, threads=args.threads)
    t0 = time.perf_counter()
    boot = ks.Bootstrapper(ctx)
    keys = ctx.keygen(bootstrapping=boot)
    ev = ctx.evaluator(keys.evaluation())
    print(f"N = 2^{args.log_n}, {ctx.slots} slots, {ctx.max_level} levels; {boot}")
    print(f"setup (transforms and keys): {time.perf_counter() - t0:.1f} s")

    rng = np.random.default_rng(7)
    x = rng.uniform(0.05, 1.0, ctx.slots) * rng.choice([-1.0, 1.0], ctx.slots)
    step = [0.0, 1.5, 0.0, -0.5]  # (3 y - y^3) / 2
    ct = ctx.encrypt(x, keys.public)
    plain = x.copy()
    boots, boot_time = 0, 0.0
    for i in range(args.steps):
        if ct.level < 2:
            before = ctx.decrypt(ct, keys.secret)
            t = time.perf_counter()
            ct = ev.bootstrap(ct, boot)
            boot_time += time.perf_counter() - t
            boots += 1
            boot_err = np.max(np.abs(ctx.decrypt(ct, keys.secret) - before))
            print(
                f"  bootstrap {boots}: level {ct.level}, its own error {boot_err:.2e} ({-np.log2(boot_err):.1f} bits)"
            )
        ct = ev.evaluate_polynomial(ct, step)
        plain = np.polynomial.polynomial.polyval(plain, step)
        err = np.max(np.abs(ctx.decrypt(ct, keys.secret).real - plain))
        print(f"step {i + 1:2d}: level {ct.level:2d}, max error {err:.2e} ({-np.log2(err):.1f} bits)")
    got = ctx.decrypt(ct, keys.secret).real
    print(
        f"{args.steps} steps ({2 * args.steps} levels) with {boots} bootstraps ({boot_time / max(boots, 1):.2f} s each)"
    )
    print(
        f"max error against the plain iteration: {np.max(np.abs(got - plain)):.2e}; "
        f"signs right: {np.mean(np.sign(got) == np.sign(x)) * 100:.1f} %"
    )


if __name__ == "__main__":
    main()
