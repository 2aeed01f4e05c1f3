"""Trace grid S15 (seed 000 Tables 5.3-5.14): repeated doubling (h = M) vs the unrolled trace (h < M).

For N = 2^15, a 60-bit first prime, l 40-bit primes and k 60-bit special primes (alpha = k), times
ev.trace(ct, ks.trace_doubling_steps(params, M), h) for M in {2, 7, 15} (rotations by 1, 2, ..., 2^(M-1); M = 15 =
log2 N is the source's full trace: rotations by 2^0..2^13, then conjugation), l in {1, 4, 9}, k in {1, 5, 10},
h in 1..M, at the given thread counts, with the SIMD body of this process (KASOKU_SIMD). Keys are made per h
and released; an h whose keys exceed --max-keys (400) or --max-gib (8 GiB) is skipped (N/A), as in the source,
where h = 1 at M = 15 and some h = 2 did not fit in memory.
Also records the h that the cost model picks (Evaluator.model_trace_h) and its modelled time.

    KASOKU_SIMD=ifma python bench/trace_grid.py --threads 1 2 --out docs/data/trace-grid.jsonl
    python bench/trace_grid.py --summary docs/data/trace-grid.jsonl [--plot docs/trace-grid.png]
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
from collections import defaultdict

import harness
import numpy as np

import kasoku as ks


def params_for(l: int, k: int) -> ks.Parameters:
    return ks.Parameters(
        log_n=15, first_bits=60, scale_bits=40, levels=l, special_bits=60, special_primes=k, security=None
    )


def run_grid(Ms, ls, ks_, threads_list, reps, out, max_keys, max_gib):
    for l in ls:
        for k in ks_:
            params = params_for(l, k)
            ctx = ks.Context(params)
            rng = np.random.default_rng(1)
            x = rng.uniform(-1, 1, ctx.slots)
            for M in Ms:
                steps = ks.trace_doubling_steps(params, M)  # M = 15 = log2 N: 14 rotations, then conjugation
                count = 1 << min(M, params.log_n - 1)
                want = np.full(ctx.slots, x.sum()) if count == ctx.slots else sum(np.roll(x, -j) for j in range(count))
                if M == params.log_n:
                    want = 2 * want  # the conjugation step doubles the (real) sum
                for h in range(M, 0, -1):
                    nkeys = sum((1 << m) - 1 for m in ks.trace_group_sizes(M, h))
                    digits = -(-(l + 1) // k)
                    key_gib = nkeys * digits * 2 * (l + 1 + k) * ctx.n * 8 / 2**30  # dnum pairs over Q*P
                    if nkeys > max_keys or key_gib > max_gib:
                        print(
                            f"[trace-grid] M={M} l={l} k={k} h={h}: {nkeys} keys, {key_gib:.1f} GiB: skipped (N/A)",
                            file=sys.stderr,
                            flush=True,
                        )
                        continue
                    galois = ks.trace_galois_elements(params, M, h)
                    keygen_s, keys = harness.timed(lambda: ctx.keygen(relin=False, galois_elements=galois))
                    ev = ctx.evaluator(keys.evaluation())
                    ct = ctx.encrypt(x, keys.public)
                    err = float(np.max(np.abs(ctx.decrypt(ev.trace(ct, steps, h=h), keys.secret).real - want)))
                    for threads in threads_list:
                        secs = harness.times(functools.partial(ev.trace, ct, steps, h=h, threads=threads), reps, 1)
                        rec = {
                            "M": M,
                            "l": l,
                            "k": k,
                            "h": h,
                            "threads": threads,
                            "simd": ks.simd_active(),
                            **harness.summary(secs, "ms"),
                            "keys": nkeys,
                            "keygen_s": round(keygen_s, 2),
                            "max_abs_error": err,
                            "model_h": ev.model_trace_h(M, threads=threads),
                            "model_ms": ev.model_trace_ms(M, h, threads=threads),
                            "costs": ev.keyswitch_costs(threads=threads),
                        }
                        harness.emit(rec, out)
                    del keys, ev, ct
                    gc.collect()


def summary(path, plot=None):
    recs = harness.read(path)
    groups = defaultdict(dict)
    for r in recs:
        groups[(r["simd"], r["threads"], r["M"], r["l"], r["k"])][r["h"]] = r
    lines = [
        "| body | threads | M | l | k | doubling (h=M) ms | best h | best ms | speedup | model h | model h ms "
        "| model h / best |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (simd, th, M, l, k), hs in sorted(groups.items()):
        if M not in hs:
            continue
        base = hs[M]["median_ms"]
        best_h = min(hs, key=lambda h: hs[h]["median_ms"])
        best = hs[best_h]["median_ms"]
        mh = hs[M]["model_h"]
        mt = hs[mh]["median_ms"] if mh in hs else float("nan")
        lines.append(
            f"| {simd} | {th} | {M} | {l} | {k} | {base:.1f} | {best_h} | {best:.1f} | {base / best:.2f} | "
            f"{mh} | {mt:.1f} | {mt / best:.2f} |"
        )
    print("\n".join(lines))
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        keys = sorted({(M, l, k) for (_, _, M, l, k) in groups if M > 2})
        cols = 3
        rows = (len(keys) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
        series = sorted({(simd, th) for (simd, th, _, _, _) in groups})
        colors = {s: plt.cm.tab10(i) for i, s in enumerate(series)}  # one colour per (body, threads) everywhere
        for ax, (M, l, k) in zip(axes.flat, keys):
            for (simd, th, M2, l2, k2), hs in sorted(groups.items()):
                if (M2, l2, k2) != (M, l, k):
                    continue
                hh = sorted(hs)
                ax.plot(
                    hh,
                    [hs[h]["median_ms"] for h in hh],
                    marker="o",
                    ms=3,
                    color=colors[(simd, th)],
                    label=f"{simd}, {th} thr",
                )
            ax.set_title(f"M={M}, l={l}, k={k}", fontsize=9)
            ax.set_xlabel("h (iterations)")
            ax.set_ylabel("ms")
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(keys) :]:
            ax.axis("off")
        handles = [
            plt.Line2D([], [], color=colors[s], marker="o", ms=3, label=f"{s[0]}, {s[1]} thread(s)") for s in series
        ]
        fig.legend(handles=handles, loc="lower center", ncol=len(series), fontsize=8)
        fig.suptitle("Unrolled trace at N = 2^15: time vs h (h = M is repeated doubling)")
        fig.tight_layout(rect=(0, 0.03, 1, 0.97))
        fig.savefig(plot, dpi=110)
        print(f"wrote {plot}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--M", type=int, nargs="+", default=[2, 7, 15])
    ap.add_argument("--l", type=int, nargs="+", default=[1, 4, 9])
    ap.add_argument("--k", type=int, nargs="+", default=[1, 5, 10])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, ks.hardware_threads()])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-keys", type=int, default=400, help="skip an h that needs more Galois keys than this")
    ap.add_argument("--max-gib", type=float, default=8.0, help="skip an h whose Galois keys take more memory (GiB)")
    ap.add_argument("--out", help="append JSON lines here")
    ap.add_argument("--summary", metavar="JSONL", help="only print the table of an existing run")
    ap.add_argument("--plot", help="with --summary: write the time-vs-h plot (PNG)")
    args = ap.parse_args(argv)
    if args.summary:
        summary(args.summary, args.plot)
        return 0
    run_grid(args.M, args.l, args.k, args.threads, args.reps, args.out, args.max_keys, args.max_gib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
