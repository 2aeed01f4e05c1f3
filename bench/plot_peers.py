#!/usr/bin/env python3
"""Bar chart of kasoku/peer time ratios from the JSON lines of bench/peers.py --out.

python bench/plot_peers.py docs/data/peers-H16.jsonl docs/peers-H16.png
"""

import argparse
import sys

import harness
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: str, dst: str) -> int:
    rows = harness.read(src)
    summary = [
        r
        for r in rows
        if r.get("lib") == "summary" and r.get("ratio") is not None and r.get("op") != "size" and "what" not in r
    ]
    if not summary:
        raise SystemExit(f"no summary lines with ratios in {src}")
    ops = [r["op"] for r in summary]
    ratios = [r["ratio"] for r in summary]
    params, peer, threads = summary[0]["params"], summary[0]["peer"], summary[0]["threads"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.barh(ops[::-1], ratios[::-1], color=["#2a7" if x <= 1 else "#c44" for x in ratios[::-1]])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.axvline(0.5, color="gray", lw=0.8, ls="--")
    for b, x in zip(bars, ratios[::-1]):
        ax.text(x + 0.01, b.get_y() + b.get_height() / 2, f"{x:.2f}", va="center", fontsize=8)
    ax.set_xlabel(f"kasoku time / {peer} time (median; lower is better)")
    ax.set_title(f"{params}, {threads} thread(s): kasoku vs {peer}")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="JSON lines of bench/peers.py --out")
    ap.add_argument("dst", help="the PNG to write")
    args = ap.parse_args()
    sys.exit(main(args.src, args.dst))
