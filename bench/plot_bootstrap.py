#!/usr/bin/env python3
"""Stacked bars of one bootstrap's time by stage (kasoku) beside the peers' totals, from the JSON lines of
bench/bootstrap.py, bench/openfhe_bootstrap.py and bench/desilo_ops.py (its "Bootstrap" line) in one file.

    .venv/bin/python bench/plot_bootstrap.py docs/data/bootstrap-BOOT16.jsonl docs/bootstrap-BOOT16.png
"""

import argparse
import sys

import harness
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAGES = ("raise", "coeff_to_slot", "eval_mod", "slot_to_coeff")
COLORS = ("#999", "#37a", "#c73", "#2a7")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="JSON lines of bench/bootstrap.py, openfhe_bootstrap.py, desilo_ops.py")
    ap.add_argument("dst", help="the PNG to write")
    args = ap.parse_args(argv)
    src = args.src
    rows = []
    for r in harness.read(src):
        if r.get("lib") == "desilo" and r.get("op") == "Bootstrap":  # bench/desilo_ops.py's own line
            r = dict(
                r,
                op="bootstrap",
                median_s=r["median_ms"] / 1000,
                params=r.get("version", "desilo"),
                threads=r.get("threads", 1),
            )
        if r.get("op") == "bootstrap":
            rows.append(r)
    if not rows:
        raise SystemExit(f"no bootstrap lines in {src}")
    fig, ax = plt.subplots(figsize=(9.5, 1.3 + 0.5 * len(rows)))
    labels = []
    for y, r in enumerate(rows):
        label = f"{r['lib']} {r['params']}, {r['threads']} thr"
        if r.get("log_n") and r.get("slots", 0) < 2 ** (r["log_n"] - 1):
            label += f", {r['slots']} slots"
        if r.get("stc_first"):
            label += ", StC first"
        if r.get("arcsine_degree"):
            label += f", arcsin {r['arcsine_degree']}"
        if r.get("real"):
            label += ", real slots"
        labels.append(label)
        if "stages_s" in r:
            left = 0.0
            for stage, color in zip(STAGES, COLORS):
                w = r["stages_s"][stage]
                ax.barh(y, w, left=left, color=color, label=stage)
                left += w
        else:
            ax.barh(y, r["median_s"], color="#777", hatch="//", label="total (no stages)")
        left_text = f", {r['levels_left']} levels left" if "levels_left" in r else ""
        ax.text(
            r["median_s"] * 1.01,
            y,
            f"{r['median_s']:.1f} s, {r['mean_bits']:.1f}/{r['worst_bits']:.1f} bits{left_text}",
            va="center",
            fontsize=8,
        )
    seen = {}  # one legend entry per stage
    for h, n in zip(*ax.get_legend_handles_labels()):
        seen.setdefault(n, h)
    ax.legend(seen.values(), seen.keys(), fontsize=8, loc="upper right")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per bootstrap (median); text: mean / worst precision")
    ax.set_xlim(0, max(r["median_s"] for r in rows) * 1.6)
    fig.tight_layout()
    fig.savefig(args.dst, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
