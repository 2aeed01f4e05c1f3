#!/usr/bin/env python3
"""A short test of an installed kasoku (scripts/wheel_check.sh runs it on a bare machine after pip install of the
wheel): the kernel body is chosen for this CPU, encryption, products, rotations, serialization and a polynomial give
the right values, and with --bundled the shared libraries beyond the manylinux set (libcrypto, libzstd, libgomp) come
from the wheel.  Exits 1 on any failure.

    python scripts/wheel_smoke.py [--bundled]
"""

from __future__ import annotations

import os
import sys

import numpy as np

import kasoku as ks


def loaded_libraries() -> dict[str, str]:
    """Path of each of libcrypto, libzstd and libgomp this process mapped."""
    found = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            for lib in ("libcrypto", "libzstd", "libgomp"):
                if os.path.basename(path).startswith(lib):
                    found[lib] = path
    return found


def main() -> int:
    failures = []

    def check(ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    print("build:", ks.build_info())
    print("kernel body:", ks.simd_active(), "of", ks.simd_available())
    check(ks.simd_active() in ks.simd_available(), "the kernel body is one this CPU runs")
    cuda = ks.cuda_info()
    print("CUDA:", "compiled" if cuda["compiled"] else "not compiled", "-", cuda["reason"] or "a device")

    ctx = ks.Context(ks.Parameters.named("T12"))
    keys = ctx.keygen(rotations=[1])
    libs = loaded_libraries()
    for lib in ("libcrypto", "libzstd", "libgomp"):
        path = libs.get(lib, "not loaded")
        if "--bundled" in sys.argv:
            check("/site-packages/kasoku.libs/" in path, f"{lib} from the wheel ({path})")
        else:
            print(f"{lib}: {path}")
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    err = lambda ct, want: float(np.max(np.abs(ctx.decrypt(ct, keys.secret).real - want)))  # noqa: E731
    check(err(ev.multiply(a, b), x * y) < 1e-5, "product")
    check(err(ev.rotate(a, 1), np.roll(x, -1)) < 1e-5, "rotation")
    again = ks.Ciphertext.from_bytes(ctx, a.to_bytes(compression="zstd"))
    check(err(again, x) < 1e-5, "serialization with zstd")
    keys_again = ks.EvaluationKeys.from_bytes(ctx, keys.evaluation().to_bytes())
    check(err(ctx.evaluator(keys_again).rotate(a, 1), np.roll(x, -1)) < 1e-5, "evaluation keys through bytes")
    check(err(ev.evaluate_polynomial(a, [0.5, 1.0, 0.25]), 0.5 + x + 0.25 * x * x) < 1e-4, "polynomial")
    print("wheel smoke test:", "passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
