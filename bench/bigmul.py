"""ks.bigmul against GMP (gmpy2's mpz, i.e. mpz_mul) and Python's int, 10^3 to 10^7 decimal digits (docs/HARDWARE.md).

    python bench/bigmul.py --json bigmul.jsonl --plot docs/bigmul.png

Per size: two random operands of that many decimal digits; medians of --reps timings of each multiplication (the
Python-int product only up to --python-max digits, it is quadratic-ish); every kasoku product is checked exactly
(against gmpy2's, which is also checked against Python's int where that ran).
"""

from __future__ import annotations

import argparse
import math
import random
import sys

import harness

import kasoku as ks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--digits", default="1000,10000,100000,1000000,10000000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--python-max", type=int, default=1000000, help="largest size timed with Python's int")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    args = ap.parse_args(argv)
    try:
        import gmpy2
    except ImportError:
        print("gmpy2 is missing: pip install gmpy2 (make bench-bigmul does)", file=sys.stderr)
        return 2
    rng = random.Random(1)
    rows = []
    if args.json:
        open(args.json, "w").close()  # a fresh file: the table below is of this run's lines
    for d in [int(x) for x in args.digits.split(",")]:
        bits = int(d * math.log2(10))
        a, b = rng.getrandbits(bits) | (1 << (bits - 1)), rng.getrandbits(bits) | (1 << (bits - 1))
        ga, gb = gmpy2.mpz(a), gmpy2.mpz(b)
        want = ga * gb
        exact = {}
        for t in (1, 2):
            exact[t] = ks.bigmul(a, b, threads=t) == want
        row = {
            "digits": d,
            "bits": bits,
            "kasoku_1t_s": harness.median(lambda: ks.bigmul(a, b, threads=1), args.reps),
            "kasoku_2t_s": harness.median(lambda: ks.bigmul(a, b, threads=2), args.reps),
            "gmp_s": harness.median(lambda: ga * gb, args.reps),
            "exact": all(exact.values()),
        }
        if d <= args.python_max:
            row["python_s"] = harness.median(lambda: a * b, max(1, args.reps // 2))
            row["gmp_equals_python"] = int(want) == a * b
        row["kasoku_1t_over_gmp"] = row["kasoku_1t_s"] / row["gmp_s"]
        rows.append(row)
        harness.emit(row, args.json)
    print(
        "| digits | kasoku 1 thread, s | kasoku 2 threads, s | GMP (gmpy2), s | Python int, s "
        "| kasoku 1t / GMP | exact |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        py = f"{r['python_s']:.4g}" if "python_s" in r else "-"
        print(
            f"| {r['digits']:,} | {r['kasoku_1t_s']:.4g} | {r['kasoku_2t_s']:.4g} | {r['gmp_s']:.4g} | {py} | "
            f"{r['kasoku_1t_over_gmp']:.2f} | {'yes' if r['exact'] else 'NO'} |"
        )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for key, label in (
            ("kasoku_1t_s", "kasoku, 1 thread"),
            ("kasoku_2t_s", "kasoku, 2 threads"),
            ("gmp_s", "GMP mpz_mul (gmpy2)"),
            ("python_s", "Python int"),
        ):
            pts = [(r["digits"], r[key]) for r in rows if key in r]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("decimal digits per operand")
        ax.set_ylabel("time per product, s (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
