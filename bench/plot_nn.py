#!/usr/bin/env python3
"""Encrypted inference beside Orion, from the JSON lines of bench/nn_peers.py: per network, the median inference time
(log scale) and the max logit error of each library, one panel per thread count, and below it the peak resident
memory (the bootstrapping networks' lines carry it; a run's last line for each library, network and thread count).

    .venv/bin/python bench/plot_nn.py docs/data/nn-zen4.jsonl docs/nn-zen4.png
"""

import argparse
import sys

import harness
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"kasoku": "#2a7", "orion": "#c73"}


def main(src: str, dst: str) -> int:
    rows = [r for r in harness.read(src) if "inference_s" in r]
    if not rows:
        raise SystemExit(f"no inference lines in {src}")
    last = {(r["threads"], r["lib"], r["model"]): r for r in rows}
    threads = sorted({r["threads"] for r in rows})
    models = list(dict.fromkeys(r["model"] for r in rows))
    libs = list(dict.fromkeys(r["lib"] for r in rows))
    memory = any(r.get("peak_gb") for r in rows)
    fig, axes = plt.subplots(
        2 if memory else 1, len(threads), figsize=(5.2 * len(threads), 6.6 if memory else 3.6), squeeze=False
    )
    width = 0.8 / len(libs)
    for ax, t in zip(axes[0], threads):
        for k, lib in enumerate(libs):
            labelled = False  # each library once in the legend, at its first bar (not only at the first network)
            for m, model in enumerate(models):
                r = last.get((t, lib, model))
                if r is None:
                    continue
                x = m + (k - (len(libs) - 1) / 2) * width
                ax.bar(x, r["inference_s"], width, color=COLORS.get(lib, "#777"), label=None if labelled else lib)
                labelled = True
                ax.text(
                    x,
                    r["inference_s"] * 1.08,
                    f"{r['inference_s']:.2g} s\nerr {r['logit_max_err']:.0e}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
        ax.set_yscale("log")
        ax.set_xticks(range(len(models)), models)
        ax.set_ylim(top=max(r["inference_s"] for r in rows) * 6)
        ax.set_ylabel("seconds per inference (median)")
        ax.set_title(f"{rows[0]['cpu']}, {t} thread{'s' if t > 1 else ''}", fontsize=9)
        ax.legend(fontsize=8, loc="upper left")
    for ax, t in zip(axes[1] if memory else [], threads):
        for k, lib in enumerate(libs):
            for m, model in enumerate(models):
                r = last.get((t, lib, model))
                if r is None or not r.get("peak_gb"):
                    continue
                x = m + (k - (len(libs) - 1) / 2) * width
                ax.bar(x, r["peak_gb"], width, color=COLORS.get(lib, "#777"))
                ax.text(x, r["peak_gb"] * 1.02, f"{r['peak_gb']:.1f} GB", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(models)), models)
        ax.set_ylabel("peak resident memory (GB)")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="JSON lines of bench/nn_peers.py --out")
    ap.add_argument("dst", help="the PNG to write")
    args = ap.parse_args()
    sys.exit(main(args.src, args.dst))
