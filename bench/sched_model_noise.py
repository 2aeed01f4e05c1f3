"""How far apart the scheduler's measured cost models come out on this machine: CostModel.measure run several times in
a row (the same parameters, threads and reps), and for every table entry (task kind, nq, threads) the spread of its
times over the models, max / min - 1, and the same for the contention factors (each kind's slowdown with other teams
busy beside it, measured beside the operations of --graph). What the simulator predicts from a model can be no closer
to the real runs than this; docs/SCHEDULING.md (2026-11-28) has the runs that chose interleaved rounds for the
measurement.

    .venv/bin/python bench/sched_model_noise.py --threads 2 --models 3 --out noise.jsonl

One JSON line: the machine, the arguments, each measurement's seconds, the spread's median, 90th percentile and
maximum over all entries and over the key-switching kinds (products, squares, plaintext products, rotations), in %,
and every contention factor of every model (`load`: kind -> "team width/busy threads" -> one factor per model) with
its spread."""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import harness

import kasoku as ks
from kasoku.cli import schedule_cli

HEAVY = ("multiply", "square", "multiply_plain", "rotate")


def spreads(models: list[dict]) -> list[tuple[float, str, int, int]]:
    """(max / min - 1, kind, nq, threads) of every entry of the models' tables (dicts as CostModel.to_dict gives)."""
    out = []
    for kind, table in models[0]["ops"].items():
        for i, row in enumerate(table["ms"]):
            for t in range(len(row)):
                v = [m["ops"][kind]["ms"][i][t] for m in models]
                out.append((max(v) / min(v) - 1, kind, table["nq_min"] + i, t + 1))
    return sorted(out)


def summary(models: list[dict]) -> dict:
    """The spread's median, 90th percentile and maximum in %, over all entries and over the key-switching kinds."""
    res = {}
    for name, keep in (("all", lambda k: True), ("heavy", lambda k: k in HEAVY)):
        s = [x[0] * 100 for x in spreads(models) if keep(x[1])]
        res[f"{name}_median_pct"] = round(statistics.median(s), 2)
        res[f"{name}_p90_pct"] = round(s[int(0.9 * (len(s) - 1))], 2)
        res[f"{name}_max_pct"] = round(s[-1], 2)
    return res


def load_factors(models: list[dict]) -> dict:
    """kind -> "w/busy" -> each model's factor, for every contention point (busy > w) of the models' load tables."""
    out: dict = {}
    for kind, rows in models[0]["load"].items():
        for i, (w, curve) in enumerate(rows):
            for j, (busy, _) in enumerate(curve):
                if busy > w:
                    out.setdefault(kind, {})[f"{w}/{busy}"] = [round(m["load"][kind][i][1][j][1], 4) for m in models]
    return out


def load_spread(factors: dict) -> dict:
    """The contention factors' spread over the models (max / min - 1): median and maximum over the points, in %."""
    s = sorted((max(v) / min(v) - 1) * 100 for per in factors.values() for v in per.values())
    return {"load_median_pct": round(statistics.median(s), 2), "load_max_pct": round(s[-1], 2)} if s else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="SCHED")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=ks.sched.CostModel.DEFAULT_REPS)
    ap.add_argument(
        "--graph",
        default="exp,poly:15,matmul:3",
        help="the stream's graphs, whose operations run beside the measured one",
    )
    ap.add_argument("--models", type=int, default=3, help="measurements in a row (at least 2)")
    ap.add_argument("--out", help="append the JSON line here")
    a = ap.parse_args()
    if a.models < 2:
        ap.error("--models must be at least 2")
    params = ks.Parameters.named(a.params)
    mix = [schedule_cli.make_graph(g, params.levels) for g in a.graph.split(",")]
    models, secs = [], []
    for i in range(a.models):
        t0 = time.perf_counter()
        models.append(ks.sched.CostModel.measure(params, max_threads=a.threads, reps=a.reps, mix=mix).to_dict())
        secs.append(round(time.perf_counter() - t0, 2))
        print(f"model {i + 1}/{a.models}: {secs[-1]} s", file=sys.stderr)
    load = load_factors(models)
    harness.emit(
        {"params": a.params, "threads": a.threads, "reps": a.reps, "graph": a.graph, "seconds": secs}
        | summary(models)
        | load_spread(load)
        | {"load": load},
        a.out,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
