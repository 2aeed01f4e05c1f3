"""The simulator against real runs over several studies: for each stream (graph, D, seed) and policy, every real run's
p95 over the simulated p95 of the same stream in the same study (each study has its own cost model, so its own
simulation), then per (stream, policy) their geometric mean and range over the studies. One study's ratio moves with
the machine's state during that run (identical runs of a policy differ by up to 10-20 % in p95 on a 2-thread VM);
the mean over studies shows what is left: the model's bias.

    .venv/bin/python bench/sched_sim_vs_real.py real-1.jsonl:sim-1.jsonl real-2.jsonl:sim-2.jsonl ... [--table t.md]

Each pair: the JSON lines of `python -m kasoku schedule --executor real ... --json` and of `--executor sim` with the
same streams and the cost model that run saved (`--save-cost`). docs/SCHEDULING.md (2026-11-29) has the studies."""

from __future__ import annotations

import argparse
import math
import sys

import kasoku as ks
from kasoku.cli import schedule_cli


def ratios(pairs: list[tuple[list[dict], list[dict]]]) -> dict:
    """{(graph, D, policy): [simulated / real p95, one per real run with a simulated run of its stream]}."""
    out: dict = {}
    for real, sims in pairs:
        sim = {schedule_cli.run_key(r): r["p95_ms"] for r in sims}
        for r in real:
            key = schedule_cli.run_key(r)
            if key in sim:
                out.setdefault((key[0], key[1], key[3]), []).append(sim[key] / r["p95_ms"])
    return out


def table(res: dict, tolerance: float = 0.10) -> str:
    """Markdown: per (graph, D, policy) the runs, the geometric mean of simulated / real and its range; then how many
    means and how many single runs are within `tolerance`."""
    lines = [
        "| graph | D | policy | runs | simulated / real p95: geometric mean | range |",
        "| --- | ---: | --- | ---: | ---: | --- |",
    ]
    means, single, n = 0, 0, 0
    for (graph, d, policy), rs in sorted(res.items()):
        gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
        means += abs(gm - 1) <= tolerance + 1e-12
        single += sum(abs(x - 1) <= tolerance + 1e-12 for x in rs)
        n += len(rs)
        lines.append(f"| {graph} | {d:g} | {policy} | {len(rs)} | {gm:.3f} | {min(rs):.2f}-{max(rs):.2f} |")
    pct = round(100 * tolerance)
    lines += [
        "",
        f"Geometric means within {pct} %: {means} of {len(res)}; single runs within {pct} %: {single} of {n}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", metavar="REAL:SIM", help="a study's real and simulated runs (JSON lines)")
    ap.add_argument("--tolerance", type=float, default=0.10, help="the counts' tolerance (default 0.10)")
    ap.add_argument("--table", default=None, help="also write the table here")
    args = ap.parse_args(argv)
    try:
        pairs = []
        for p in args.pairs:
            real, sep, sim = p.partition(":")
            if not sep:
                raise ks.ParameterError(f"'{p}': give each study as REAL.jsonl:SIM.jsonl")
            pairs.append((schedule_cli.read_runs(real), schedule_cli.read_runs(sim)))
        res = ratios(pairs)
        if not res:
            raise ks.ParameterError("no real run has a simulated run of the same graph, D, seed and policy")
    except ks.ParameterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = table(res, args.tolerance)
    print(text, end="")
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
