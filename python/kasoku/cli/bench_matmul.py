"""`python -m kasoku bench matmul`: the experiment of Manabe et al. (Jiang et al.'s product), reproduced and extended.

For d in 2..64 with g = 1 and g = 8 (g = 2 at d = 64) at parameter set M14: the operations actually executed
(Add, CMult, Rot, Mult: the shape of Manabe et al. Table 5), the time per product (median of --reps) at 1 thread and
at all threads, and the max and min element-wise absolute error against NumPy (means over --pairs random pairs in
[0, 1)). The schoolbook baseline (one ciphertext per element) runs up to d = 16, and a blocked 256 x 256 product
closes the table. JSON lines on stdout (and --json), a markdown table (--table) and a log-log plot (--plot).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

import kasoku as ks
from kasoku._progress import Steps
from kasoku.cli.bench import time_calls  # a warm-up call first (the first product encodes its level's transforms)


def _errors(got: list[np.ndarray], want: list[np.ndarray]) -> tuple[float, float]:
    diff = np.abs(np.stack(got) - np.stack(want))
    return float(diff.max()), float(diff.min())


def run(
    params_name: str = "M14",
    dims=(2, 4, 8, 16, 32, 64),
    reps: int = 10,
    pairs: int = 10,
    schoolbook_max: int = 16,
    blocked: int = 256,
    threads: int | None = None,
    json_path: str | None = None,
    table_path: str | None = None,
    plot_path: str | None = None,
    progress=sys.stderr,
    device: str = "cpu",
) -> list[dict]:
    params = ks.Parameters.named(params_name)
    ctx = ks.Context(params, threads=threads, device=device)
    all_threads = ctx.threads
    thread_counts = sorted({1, all_threads})
    rng = np.random.default_rng(2026)
    lines: list[dict] = []
    steps = Steps(f"kasoku bench matmul {params_name}", progress)

    def emit(rec):
        rec = {"lib": "kasoku", "params": params_name, "simd": ks.simd_active(), "device": ctx.device, **rec}
        lines.append(rec)
        steps.write(json.dumps(rec))

    step = steps.step

    shapes = [(d, 1) for d in dims] + [(d, 8 if d < 64 else 2) for d in dims]
    if blocked:
        shapes.append((blocked, 1))
    for d, g in shapes:
        enc = ks.MatrixEncoder(ctx, d, g)
        big = enc.grid > 1
        step(f"d = {d}, g = {g}: keys" + (f" ({enc.grid} x {enc.grid} blocks of {enc.block})" if big else ""))
        t0 = time.perf_counter()
        keys = ctx.keygen(matmul=(d, g))
        keygen_s = time.perf_counter() - t0
        ev = ctx.evaluator(keys.evaluation())
        n_pairs, n_reps = (max(1, pairs // 5), max(3, reps // 3)) if big else (pairs, reps)
        step(f"d = {d}, g = {g}: {n_pairs} random pairs for the error")
        maxes, mins, counts = [], [], None
        for _ in range(n_pairs):
            A, B = rng.random((g, d, d)), rng.random((g, d, d))
            c, counts = ks.matmul(ev, enc.encrypt(A, keys.public), enc.encrypt(B, keys.public), return_counts=True)
            mx, mn = _errors(enc.decrypt(c, keys.secret), [a @ b for a, b in zip(A, B)])
            maxes.append(mx)
            mins.append(mn)
        ca, cb = enc.encrypt(rng.random((g, d, d)), keys.public), enc.encrypt(rng.random((g, d, d)), keys.public)
        for t in thread_counts:
            step(f"d = {d}, g = {g}: {n_reps} timed products, {t} thread(s)")
            ts = time_calls(lambda: ks.matmul(ev, ca, cb, threads=t), n_reps, ctx.synchronize)  # noqa: F821 (del below)
            emit(
                {
                    "op": "MatMul",
                    "d": d,
                    "g": g,
                    "threads": t,
                    "median_ms": statistics.median(ts),
                    "min_ms": min(ts),
                    "max_ms": max(ts),
                    "reps": len(ts),
                    "per_matrix_ms": statistics.median(ts) / g,
                    "max_abs_error": float(np.mean(maxes)),
                    "min_abs_error": float(np.mean(mins)),
                    "pairs": n_pairs,
                    "counts": counts,
                    "galois_keys": len(keys.galois),
                    "keygen_s": keygen_s,
                    "block": enc.block,
                    "grid": enc.grid,
                }
            )
        del keys, ev, ca, cb
        if g == 1 and d <= schoolbook_max:
            skeys = ctx.keygen()
            sev = ctx.evaluator(skeys.evaluation())
            s_pairs, s_reps = (pairs, reps) if d <= 4 else (max(1, pairs // 5), 3)
            step(f"d = {d}: schoolbook ({d**3} products), {s_pairs} pairs")
            maxes, mins = [], []
            for _ in range(s_pairs):
                A, B = rng.random((d, d)), rng.random((d, d))
                ca = [ctx.encrypt([x], skeys.public) for x in A.ravel()]
                cb = [ctx.encrypt([x], skeys.public) for x in B.ravel()]
                out, scounts = ks.matmul_schoolbook(sev, ca, cb, d, return_counts=True)
                got = np.array([ctx.decrypt(x, skeys.secret)[0].real for x in out]).reshape(d, d)
                mx, mn = _errors([got], [A @ B])
                maxes.append(mx)
                mins.append(mn)
            for t in thread_counts:
                step(f"d = {d}: schoolbook, {s_reps} timed products, {t} thread(s)")
                ts = time_calls(lambda: ks.matmul_schoolbook(sev, ca, cb, d, threads=t), s_reps, ctx.synchronize)
                emit(
                    {
                        "op": "MatMulSchoolbook",
                        "d": d,
                        "g": 1,
                        "threads": t,
                        "median_ms": statistics.median(ts),
                        "min_ms": min(ts),
                        "max_ms": max(ts),
                        "reps": len(ts),
                        "max_abs_error": float(np.mean(maxes)),
                        "min_abs_error": float(np.mean(mins)),
                        "pairs": s_pairs,
                        "counts": scounts,
                    }
                )
            del skeys, sev
    steps.close()
    if json_path:
        with open(json_path, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec) + "\n")
    if table_path:
        with open(table_path, "w") as f:
            f.write(table(lines))
    if plot_path:
        plot(lines, plot_path)
    return lines


def table(lines: list[dict]) -> str:
    """Markdown: one row per (op, d, g) with the counts, the times per thread count and the errors."""
    rows: dict[tuple, dict] = {}
    threads = sorted({r["threads"] for r in lines if "threads" in r})
    for r in lines:
        if r.get("op") not in ("MatMul", "MatMulSchoolbook"):
            continue
        key = (r["op"], r["d"], r["g"])
        rows.setdefault(key, dict(r))[f"t{r['threads']}"] = r["median_ms"]
    head = (
        "| method | d | g | Add | CMult | Rot | Mult | "
        + " | ".join(f"ms, {t} thr" for t in threads)
        + " | ms per matrix, 1 thr | max error | min error |\n"
    )
    out = head + "|" + " --- |" * (9 + len(threads)) + "\n"
    for (op, d, g), r in sorted(rows.items(), key=lambda kv: (kv[0][0] != "MatMul", kv[0][2] != 1, kv[0][1])):
        c = r["counts"]
        name = (
            "schoolbook"
            if op == "MatMulSchoolbook"
            else ("blocked " + f"{r['grid']}x{r['grid']}" if r.get("grid", 1) > 1 else "Jiang et al.")
        )
        t1 = r.get("t1", float("nan"))
        out += (
            f"| {name} | {d} | {g} | {c['add']} | {c['cmult']} | {c['rot']} | {c['mult']} | "
            + " | ".join(f"{r.get(f't{t}', float('nan')):.1f}" for t in threads)
            + f" | {t1 / g:.1f} | {r['max_abs_error']:.2e} | {r['min_abs_error']:.2e} |\n"
        )
    return out


def plot(lines: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series: dict[str, list[tuple[int, float]]] = {}
    for r in lines:
        if r.get("op") not in ("MatMul", "MatMulSchoolbook"):
            continue
        label = (
            "schoolbook"
            if r["op"] == "MatMulSchoolbook"
            else f"Jiang et al., g = {'8 (2 at d=64)' if r['g'] > 1 else 1}"
        )
        if r["op"] == "MatMul" and r.get("grid", 1) > 1:
            label = "blocked (g = 1)"
        series.setdefault(f"{label}, {r['threads']} thread(s)", []).append((r["d"], r["median_ms"]))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix dimension d")
    ax.set_ylabel("time per encrypted product (ms, median)")
    params = next((r["params"] for r in lines if "params" in r), "")
    ax.set_title(f"Encrypted d x d matrix product, {params}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
