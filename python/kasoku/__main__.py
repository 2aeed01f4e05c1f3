"""Command line: python -m kasoku {info, demo, bench}."""

from __future__ import annotations

import argparse
import os
import sys

import kasoku as ks


def info() -> int:
    print(f"kasoku {ks.__version__}")
    print(f"SIMD body in use: {ks.simd_active()} (KASOKU_SIMD={os.environ.get('KASOKU_SIMD', 'auto')})")
    print(f"SIMD bodies runnable here: {', '.join(ks.simd_available())}")
    print(f"CPU supports: {', '.join(ks.simd_cpu_supports())}")
    print(f"threads (all cores): {ks.hardware_threads()}")
    for k, v in sorted(ks.build_info().items()):
        print(f"build {k}: {v}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kasoku", description="kasoku: fast CKKS homomorphic encryption")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, SIMD bodies, threads, build options")
    d = sub.add_parser("demo", help="encrypted mean, variance and a polynomial on a data set")
    d.add_argument("--params", default="default", choices=["default", "H15"],
                   help="default: N=2^14, 6 levels, 128-bit; or the named set H15")
    b = sub.add_parser("bench", help="time the core operations at a named parameter set (JSON lines)")
    b.add_argument("--params", default="T13", help="named parameter set (T12, T13, H15, H16, ...)")
    b.add_argument("--threads", type=int, default=None, help="thread count (default: all cores)")
    b.add_argument("--reps", type=int, default=5, help="timed repetitions per operation (median reported)")
    b.add_argument("--json", default=None, help="also write the JSON lines to this file")
    b.add_argument("--hoisting", action="store_true",
                   help="also sum_slots (all slots, default h) and 16 hoisted rotations (their keys take memory: "
                        "about 40 Galois keys at H16, ~3.5 GB)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "info":
            return info()
        if args.cmd == "demo":
            from kasoku import demo
            return demo.main(args.params)
        if args.cmd == "bench":
            from kasoku import bench
            bench.run(args.params, args.threads, args.reps, args.json, hoisting=args.hoisting)
            return 0
    except ks.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
