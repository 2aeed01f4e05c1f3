"""Tabulates a hw/flow.sh output folder: cycles (Verilator vs model vs the seed), Yosys cells, nextpnr-ecp5 Fmax.

    python hw/summary.py OUTDIR [--json FILE] [--plot PNG]
FILE gets one JSON object a run, PNG cycles against points (the designs beside the seed's method (8)); Markdown
tables go to stdout.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SEED_METHOD8 = {4096: 22072, 8192: 45695, 16384: 94924, 32768: 197398, 65536: 410480, 1024: 5291, 16: 178}


def cells(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    stat = json.loads(path.read_text())
    by_type = stat.get("design", {}).get("num_cells_by_type")
    if by_type is None:  # one module: the top
        by_type = next(iter(stat["modules"].values()))["num_cells_by_type"]
    return {k: int(v) for k, v in by_type.items()}


def ecp5_resources(c: dict[str, int]) -> dict[str, int]:
    return {
        "LUT4": c.get("LUT4", 0),
        "CCU2C": c.get("CCU2C", 0),
        "FF": c.get("TRELLIS_FF", 0),
        "MULT18X18D": c.get("MULT18X18D", 0),
        "DP16KD": c.get("DP16KD", 0),
        "LUTRAM": c.get("TRELLIS_DPR16X4", 0),
    }


def xilinx_resources(c: dict[str, int]) -> dict[str, int]:
    return {
        "LUT": sum(v for k, v in c.items() if k.startswith("LUT") and k[3:].isdigit()),
        "FF": sum(v for k, v in c.items() if k in ("FDRE", "FDSE", "FDCE", "FDPE")),
        "DSP48E1": c.get("DSP48E1", 0),
        "RAMB36E1": c.get("RAMB36E1", 0),
        "RAMB18E1": c.get("RAMB18E1", 0),
        "LUTRAM": sum(v for k, v in c.items() if k.startswith("RAM") and not k.startswith("RAMB")),
        "SRL": sum(v for k, v in c.items() if k.startswith("SRL")),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    rows = []
    for d in sorted(args.outdir.iterdir()):
        params = (
            dict(line.split("=", 1) for line in (d / "params.txt").read_text().split() if "=" in line)
            if (d / "params.txt").exists()
            else None
        )
        if params is None:
            continue
        row: dict = {
            "run": d.name,
            "design": params["DESIGN"],
            "m": int(params["M_LOG"]),
            "points": 1 << int(params["M_LOG"]),
            "bits": int(params["W"]),
            "lanes": 2 if params["DESIGN"] == "fig7" else 1 << int(params["LANES_LOG"]),
            "model_transform": int(params["MODEL_TRANSFORM"]),
        }
        if (d / "sim.json").exists():
            row["sim"] = json.loads((d / "sim.json").read_text().strip().splitlines()[-1])
        if (d / "ecp5_stat.json").exists():
            row["ecp5"] = ecp5_resources(cells(d / "ecp5_stat.json"))
        if (d / "xilinx_stat.json").exists():
            row["xilinx"] = xilinx_resources(cells(d / "xilinx_stat.json"))
        if (d / "pnr.json").exists():
            rep = json.loads((d / "pnr.json").read_text())
            row["fmax_mhz"] = {k: round(v["achieved"], 1) for k, v in rep.get("fmax", {}).items()}
            row["ecp5_used"] = {k: v["used"] for k, v in rep.get("utilization", {}).items() if v.get("used")}
        rows.append(row)
    rows.sort(key=lambda r: (r["design"], r["m"], r["lanes"]))
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows))

    if args.plot:
        plot(rows, args.plot)

    print("| design | points | lanes | load | transform | model | unload | total | seed (8) | seed / total | equal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        s = r.get("sim")
        if not s:
            continue
        seed = SEED_METHOD8.get(r["points"])
        ratio = f"{seed / s['total']:.2f}x" if seed else ""
        print(
            f"| {r['design']} | {r['points']} | {r['lanes']} | {s['load']} | {s['transform']} | "
            f"{s['model_transform']} | {s['unload']} | {s['total']} | {seed or ''} | {ratio} | {s['equal']} |"
        )
    print()
    print(
        "| design | points | lanes | ECP5 LUT4 / CCU2C / FF / MULT18 / DP16KD | Xilinx LUT / FF / DSP48E1 / RAMB36 / "
        "RAMB18 / SRL | nextpnr-ecp5 Fmax (MHz) |"
    )
    print("|---|---:|---:|---|---|---|")
    for r in rows:
        if "ecp5" not in r and "xilinx" not in r:
            continue
        e, x = r.get("ecp5", {}), r.get("xilinx", {})
        ecp5 = " / ".join(str(e[k]) for k in ("LUT4", "CCU2C", "FF", "MULT18X18D", "DP16KD")) if e else ""
        xil = " / ".join(str(x[k]) for k in ("LUT", "FF", "DSP48E1", "RAMB36E1", "RAMB18E1", "SRL")) if x else ""
        fmax = ", ".join(f"{v}" for v in r.get("fmax_mhz", {}).values())
        print(f"| {r['design']} | {r['points']} | {r['lanes']} | {ecp5} | {xil} | {fmax} |")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for design, label in (
        ("fig7", "seed's method (8) as RTL (2 butterflies)"),
        ("lanes", "kasoku lanes (16 butterflies; 4 at 16 points)"),
    ):
        pts = sorted((r["points"], r["sim"]["total"]) for r in rows if r["design"] == design and "sim" in r)
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label + ", Verilator")
    seed = sorted(SEED_METHOD8.items())
    ax.plot(*zip(*seed), marker="s", linestyle="--", label="seed's Vivado-HLS method (8), Tables 3-5")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("points M")
    ax.set_ylabel("cycles (load + transform + unload)")
    ax.set_title("M-point NTT over the seed's prime")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
