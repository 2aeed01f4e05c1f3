"""python -m kasoku schedule: the source's job-stream experiment (Suzuki, Ishimaki and Yamana §7), simulated or real.

For every mean inter-arrival time D and policy it runs a stream of e^x jobs (Poisson arrivals), prints one JSON line
per run, and writes the table over D (makespan as in the source's Table 6, p95 latency) and the latency-per-job plot
(like its Fig. 4-7).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import kasoku as ks
from kasoku import sched

# The source's Table 6 (ms from the first measured job's start to the last one's end; Xeon Phi 7230F, 126 threads).
PAPER_TABLE6 = {
    "fixed-1": {60: 143354, 70: 146066, 80: 134036, 90: 146159, 100: 161897, 120: 196799},
    "fixed-half": {60: 126634, 70: 126979, 80: 133520, 90: 145248, 100: 160605, 120: 195600},
    "fixed-full": {60: 153122, 70: 153039, 80: 153146, 90: 146915, 100: 160532, 120: 195467},
    "dynamic": {60: 145761, 70: 147913, 80: 146059, 90: 145560, 100: 160513, 120: 195519},
}


def cpu_times() -> tuple[int, int] | None:
    """(steal, total) clock ticks of all CPUs from /proc/stat (Linux), or None: the time a hypervisor gave this VM's
    CPUs to others, against all of it."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    return fields[7], sum(fields[:8])  # user nice system idle iowait irq softirq steal


def _steal_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def _cost_model(spec: str, params, threads: int, save: str | None, reps: int = sched.CostModel.DEFAULT_REPS, mix=()):
    if spec == "paper":
        cm = sched.CostModel.from_paper()
    elif spec == "measure":
        print(
            f"measuring the cost model at {params.name or 'the parameters'} on {threads} threads ...", file=sys.stderr
        )
        cm = sched.CostModel.measure(
            params,
            max_threads=threads,
            reps=reps,
            progress=lambda d, t: print(f"  {d}/{t}", end="\r", file=sys.stderr),
            mix=list(mix),  # contention measured beside the streams' own operations
        )
        print(file=sys.stderr)
    else:
        cm = sched.CostModel.load(spec)
    if save:
        cm.save(save)
    return cm


GRAPH_HELP = (
    "task graphs, comma separated: exp[:ORDER] (the source's e^x, order 6), poly[:DEGREE] (baby-step "
    "giant-step polynomial, degree 31), matmul[:D] (one d x d matrix product's tasks, d = 4), "
    "random[:TASKS[:SEED]] (a random DAG, 24 tasks, seed 1); each with @LEVEL for its input level "
    "(default 7 for the source's tables, the parameter set's top level otherwise)"
)


_BUILDERS = {
    "exp": (sched.maclaurin_exp, 1),
    "poly": (sched.bsgs_polynomial, 1),
    "matmul": (sched.matmul_like, 1),
    "random": (sched.random_dag, 2),
}  # builder, its most positional arguments


def _parse_graph(spec: str) -> tuple[str, list[int], int | None]:
    """A spec of GRAPH_HELP as (name, arguments, level or None); ParameterError for anything else."""
    body, _, level = spec.partition("@")
    name, *args = body.split(":")
    try:
        lv = int(level) if level else None
        nums = [int(a) for a in args]
    except ValueError:
        raise ks.ParameterError(f"graph '{spec}': arguments and @LEVEL must be integers ({GRAPH_HELP})") from None
    if name not in _BUILDERS or len(nums) > _BUILDERS[name][1]:
        raise ks.ParameterError(f"graph '{spec}' is not one of: {GRAPH_HELP}")
    return name, nums, lv


def make_graph(spec: str, default_level: int):
    """A task graph from a spec of GRAPH_HELP, e.g. "poly:15", "matmul:3@4", "random:24:5"."""
    name, nums, level = _parse_graph(spec)
    return _BUILDERS[name][0](*nums, level=default_level if level is None else level)


def expected_output(spec: str, x: np.ndarray):
    """The value a graph's output decrypts to for input x, where the graph computes a known function (e^x to its
    order, the polynomial sum_j x^j / (j + 1)); None for the others."""
    name, nums, _ = _parse_graph(spec)
    if name == "exp":
        order = nums[0] if nums else 6
        return sum(x**k / np.prod(np.arange(1, k + 1)) for k in range(order + 1))
    if name == "poly":
        degree = nums[0] if nums else 31
        return sum(x**j / (j + 1) for j in range(degree + 1))
    return None


def _real_setup(params, graphs):
    """Context, keys (with the Galois keys of every graph's rotations), evaluator, input values and their ciphertext."""
    ctx = ks.Context(params)
    steps = sorted({s for g in graphs for s in g.rotation_steps()})
    keys = ctx.keygen(rotations=steps)
    ev = ctx.evaluator(keys.evaluation())
    x = np.random.default_rng(7).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    return ctx, keys, ev, x, ct


def run(
    policies: list[str],
    ds: list[float],
    jobs: int,
    window: tuple[int, int],
    threads: int,
    executor: str,
    cost: str,
    params_name: str,
    seeds: int,
    graphs: list[str],
    json_path: str | None,
    table_path: str | None,
    plot_path: str | None,
    save_cost: str | None,
    reps: int = sched.CostModel.DEFAULT_REPS,
    job_slowdown: float | None = None,
    first_seed: int = 1,
    trace_path: str | None = None,
    cost_scale: float | None = None,
    remeasure: bool = False,
) -> list[dict]:
    params = ks.Parameters.named(params_name)
    built = {spec: make_graph(spec, 7 if cost == "paper" else params.levels) for spec in graphs}
    cm = _cost_model(cost, params, threads, save_cost, reps, built.values())
    measured = [cm]  # with remeasure: every measurement so far; the streams use, and save_cost keeps, their median
    if job_slowdown is not None:
        cm = cm.with_job_slowdown(job_slowdown)
    if cost_scale is not None:  # after --save-cost: the file keeps the model as measured or loaded
        cm = cm.scaled(cost_scale)
    real = _real_setup(params, built.values()) if executor == "real" else None
    rows, curves = [], {}
    out = open(json_path, "a") if json_path else None
    trace = open(trace_path, "a") if trace_path else None
    total, done = len(graphs) * len(ds) * len(policies) * seeds, 0
    for gi, (spec, g) in enumerate(built.items()):
        for di, d in enumerate(ds):
            for seed in range(first_seed, first_seed + seeds):
                arr = sched.poisson(d, jobs, seed=seed)
                # Real runs drift on a shared machine (in four three-graph studies of one seed and one order,
                # `dynamic` run third had a p95 2.3-3.9 % below its run in first place, on average over the streams).
                # Each stream (graph, D, seed) starts the policies at a different one, so that no policy always runs
                # first or last.
                k = (gi * len(ds) + di + seed - 1) % len(policies)
                for pol in policies[k:] + policies[:k]:
                    t0 = time.time()
                    err = steal = None
                    if real is None:
                        r = sched.simulate(g, cm, threads, pol, arr, window)
                    else:
                        ctx, keys, ev, x, ct = real
                        names = [n["name"] for n in g.nodes if n["op"] == "input"]
                        ticks = cpu_times()
                        r = sched.run(
                            g,
                            ctx,
                            ev,
                            {n: ct for n in names},
                            threads=threads,
                            policy=pol,
                            arrivals=arr,
                            window=window,
                            cost=cm,
                        )
                        steal = _steal_pct(ticks, cpu_times())
                        want = expected_output(spec, x)
                        if want is not None:
                            got = ctx.decrypt(r.outputs[0][g.outputs[0][1]], keys.secret).real
                            err = float(np.max(np.abs(got - want)))
                    row = {
                        "graph": spec,
                        "D_ms": d,
                        "seed": seed,
                        "cost_model": cm.name,
                        "machine": cm.machine,
                        **r.to_dict(),
                    }
                    if steal is not None:
                        # a team of several threads waits at each barrier for a CPU the hypervisor took
                        row["cpu_steal_pct"] = round(steal, 3)
                    if remeasure:
                        row["cost_measurements"] = len(measured)
                    if cm.job_slowdown:
                        row["job_slowdown"] = cm.job_slowdown
                    if cost_scale is not None:
                        row["cost_scale"] = cost_scale
                    if err is not None:
                        row["max_error_first_job"] = err
                    rows.append(row)
                    if seed == first_seed:
                        curves[(spec, pol, d)] = r.latencies_ms
                    line = json.dumps(row)
                    print(line, flush=True)
                    if out:
                        out.write(line + "\n")
                        out.flush()
                    if trace:
                        trace.write(
                            json.dumps(
                                {
                                    "graph": spec,
                                    "D_ms": d,
                                    "seed": seed,
                                    "policy": pol,
                                    "executor": r.executor,
                                    "threads": threads,
                                    "cost_model": cm.name,
                                    "columns": list(TRACE_COLUMNS),
                                    "tasks": r.tasks,
                                }
                            )
                            + "\n"
                        )
                        trace.flush()
                    done += 1
                    print(
                        f"[{done}/{total}] {spec} D={d:g} seed={seed} {pol}: makespan {r.makespan_ms / 1000:.1f} s, "
                        f"p95 {r.p95_ms:.0f} ms ({time.time() - t0:.1f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
                if remeasure:  # after each stream's runs, so that the measurements span the study
                    measured.append(_cost_model("measure", params, threads, None, reps, built.values()))
                    cm = sched.median_model(measured)
                    if save_cost:
                        cm.save(save_cost)
                    print(f"the cost model: the median of {len(measured)} measurements", file=sys.stderr)
    for f in (out, trace):
        if f:
            f.close()
    unique = list(dict.fromkeys(policies))  # a policy listed twice (an A/A pass) is one row
    if table_path:
        with open(table_path, "w") as f:
            for spec in graphs:
                if len(graphs) > 1:
                    f.write(f"Graph `{spec}`:\n\n")
                f.write(
                    table(
                        [r for r in rows if r["graph"] == spec],
                        unique,
                        ds,
                        paper=(cost == "paper" and spec in ("exp", "exp:6")),
                    )
                )
            if "kasoku" in unique and len(unique) > 1:
                f.write("\n" + versus_best(rows, graphs, ds))
    if plot_path:
        for spec in graphs:
            path = (
                plot_path
                if len(graphs) == 1
                else plot_path.replace(".png", "") + "-" + spec.replace(":", "-").replace("@", "-L") + ".png"
            )
            plot(
                {(p, d): v for (gs, p, d), v in curves.items() if gs == spec},
                unique,
                ds,
                path,
                title=f"{executor}, {cm.name}, {threads} threads, graph {spec}",
            )
    return rows


def versus_best(rows: list[dict], graphs: list[str], ds: list[float]) -> str:
    """Markdown: kasoku's makespan and p95 against the best of the other policies per graph and D (means over
    seeds), in %, with the policy that was best."""
    lines = [
        "| kasoku vs best of the others: makespan / p95 | " + " | ".join(f"D = {d:g}" for d in ds) + " |",
        "| --- |" + " --- |" * len(ds),
    ]
    for spec in graphs:
        sub = [r for r in rows if r["graph"] == spec]
        mk, p95 = _means(sub, "makespan_ms"), _means(sub, "p95_ms")
        cells = []
        for d in ds:
            others = [p for (p, dd) in mk if dd == d and p != "kasoku"]
            if ("kasoku", d) not in mk or not others:
                cells.append("")
                continue
            bm = min(others, key=lambda p: mk[(p, d)])
            bq = min(others, key=lambda p: p95[(p, d)])
            cells.append(
                f"{_pct(np.log(mk[('kasoku', d)] / mk[(bm, d)])):+.1f}% ({bm}) / "
                f"{_pct(np.log(p95[('kasoku', d)] / p95[(bq, d)])):+.1f}% ({bq})"
            )
        lines.append(f"| `{spec}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _means(rows: list[dict], key: str) -> dict:
    acc: dict = {}
    for r in rows:
        acc.setdefault((r["policy"], r["D_ms"]), []).append(r[key])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def table(rows: list[dict], policies: list[str], ds: list[float], paper: bool = False) -> str:
    """Markdown: makespan (s) and p95 latency (ms) per policy and D, means over seeds; best per column in bold."""
    mk, p95 = _means(rows, "makespan_ms"), _means(rows, "p95_ms")
    seeds = len({r["seed"] for r in rows})
    lines = []
    for title, vals, scale, fmt in (("makespan, s", mk, 1e-3, "{:.1f}"), ("p95 latency, ms", p95, 1.0, "{:.0f}")):
        lines.append(
            f"| {title} (mean of {seeds} seed{'s' if seeds > 1 else ''}) | "
            + " | ".join(f"D = {d:g}" for d in ds)
            + " |"
        )
        lines.append("| --- |" + " --- |" * len(ds))
        for pol in policies:
            cells = []
            for d in ds:
                v = vals[(pol, d)]
                best = min(vals[(p, d)] for p in policies)
                s = fmt.format(v * scale)
                cells.append(f"**{s}**" if v == best else s)
            lines.append(f"| {pol} | " + " | ".join(cells) + " |")
        if paper and title.startswith("makespan"):
            for pol in PAPER_TABLE6:
                if pol in policies:
                    lines.append(
                        f"| source's Table 6: {pol} | "
                        + " | ".join(f"{PAPER_TABLE6[pol].get(int(d), float('nan')) / 1000:.1f}" for d in ds)
                        + " |"
                    )
        lines.append("")
    return "\n".join(lines)


def plot(curves: dict, policies: list[str], ds: list[float], path: str, title: str) -> None:
    """Latency per job (the measured window), one panel per policy, one line per D (like the source's Fig. 4-7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(policies), figsize=(4 * len(policies), 3.6), sharey=True, squeeze=False)
    for ax, pol in zip(axes[0], policies):
        for d in ds:
            lat = curves.get((pol, d))
            if lat is not None:
                ax.plot(np.arange(lat.size), lat / 1000, lw=0.8, label=f"D = {d:g} ms")
        ax.set_title(pol)
        ax.set_xlabel("job (measured window)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("latency, s")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def paired(rows: list[dict], baseline: str = "fixed-1", key: str = "makespan_ms") -> dict:
    """Paired comparison of runs of the same streams: per stream (graph, D, seed), the log ratio of each policy's
    `key` to the baseline's (their geometric mean when the baseline ran more than once). When the baseline ran twice,
    its second run against its first is the A/A row, "<baseline> (A/A)": the spread of identical runs on this machine.
    Returns {name: {D: [log ratios, one per stream]}}."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((str(r.get("graph", "")), r["D_ms"], r["seed"]), []).append(r)
    out: dict = {}
    for (_, d, _), g in sorted(groups.items()):
        base = [r[key] for r in g if r["policy"] == baseline]
        if not base:
            continue
        ref = float(np.mean(np.log(base)))
        if len(base) == 2:
            out.setdefault(f"{baseline} (A/A)", {}).setdefault(d, []).append(float(np.log(base[1] / base[0])))
        for r in g:
            if r["policy"] != baseline:
                out.setdefault(r["policy"], {}).setdefault(d, []).append(float(np.log(r[key])) - ref)
    return out


def _pct(log_ratio):
    """A log ratio as a percentage difference."""
    return 100 * np.expm1(log_ratio)


def _boot_ci(x: np.ndarray, reps: int = 10000, seed: int = 1) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the mean."""
    means = np.random.default_rng(seed).choice(x, size=(reps, x.size)).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def paired_table(rows: list[dict], baseline: str = "fixed-1") -> str:
    """Markdown: per policy and D the mean ratio to the baseline in % (per seed in brackets), and over all D the
    mean with its 95% bootstrap interval; makespan and p95."""
    lines = []
    for key, title in (("makespan_ms", "makespan"), ("p95_ms", "p95 latency")):
        res = paired(rows, baseline, key)
        ds = sorted({d for per in res.values() for d in per})
        lines.append(
            f"| {title} vs {baseline}, % (per stream) | "
            + " | ".join(f"D = {d:g}" for d in ds)
            + " | all D: mean [95% CI] |"
        )
        lines.append("| --- |" + " --- |" * (len(ds) + 1))
        for name, per in res.items():
            cells = [
                f"{_pct(np.mean(per[d])):+.1f} ({' / '.join(f'{_pct(v):+.0f}' for v in per[d])})" if d in per else ""
                for d in ds
            ]
            every = np.concatenate([per[d] for d in ds if d in per])
            lo, hi = _boot_ci(every)
            cells.append(f"{_pct(every.mean()):+.1f} [{_pct(lo):+.1f}, {_pct(hi):+.1f}]")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def paired_plot(rows: list[dict], path: str, baseline: str = "fixed-1") -> None:
    """Each seed's ratio to the baseline by D, one panel per metric; the A/A pairs show the machine's own spread."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), squeeze=False)
    for ax, (key, title) in zip(axes[0], (("makespan_ms", "makespan"), ("p95_ms", "p95 latency"))):
        res = paired(rows, baseline, key)
        for i, (name, per) in enumerate(res.items()):
            off = (i - (len(res) - 1) / 2) * 1.5
            for d, v in per.items():
                ax.scatter(
                    np.full(len(v), d + off),
                    _pct(np.asarray(v)),
                    s=14,
                    color=f"C{i}",
                    label=name if d == min(per) else None,
                )
                ax.hlines(_pct(np.mean(v)), d + off - 1, d + off + 1, color=f"C{i}")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_xlabel("D, ms")
        ax.set_ylabel(f"% against {baseline}")
        ax.set_title(f"{title}: each seed (dot) and the mean (bar)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


SIM_TOLERANCES = (0.10, 0.15, 0.20)


def run_key(r: dict) -> tuple:
    """A run's stream and policy: (graph, D, seed, policy)."""
    return (str(r.get("graph", "")), r["D_ms"], r["seed"], r["policy"])


def simulated_versus_real(rows: list[dict], sims: list[dict]) -> str:
    """Markdown: each real run's p95 beside the simulator's for the same stream (graph, D, seed) and policy, as
    simulated / real, a row per stream; then how many runs are within 10, 15 and 20 %, over all and per policy. A
    policy that ran twice on a stream (an A/A pair) shows both ratios, and the spread of those pairs is given beside:
    a real p95 that moves that much between identical runs bounds how close any model can come in one run."""
    sim = {run_key(r): r["p95_ms"] for r in sims}
    streams: dict = {}
    for r in rows:
        streams.setdefault(run_key(r)[:3], {}).setdefault(r["policy"], []).append(r["p95_ms"])
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    lines = [
        "| graph | D | seed | " + " | ".join(f"{p}: real p95 ms, sim / real" for p in policies) + " |",
        "| --- | --- | --- |" + " --- |" * len(policies),
    ]
    ratios: dict = {p: [] for p in policies}
    aa = []
    missing = 0
    for (graph, d, seed), per in sorted(streams.items()):
        cells = []
        for p in policies:
            real = per.get(p, [])
            key = (graph, d, seed, p)
            if not real:
                cells.append("")
            elif key not in sim:
                missing += len(real)
                cells.append(" / ".join(f"{v:.0f}" for v in real) + ", not simulated")
            else:
                rs = [sim[key] / v for v in real]
                ratios[p] += rs
                cells.append(" / ".join(f"{v:.0f}" for v in real) + ", " + " / ".join(f"{x:.2f}" for x in rs))
            if len(real) >= 2:
                aa.append(abs(np.log(real[1] / real[0])))
        lines.append(f"| {graph} | {d:g} | {seed} | " + " | ".join(cells) + " |")
    every = [x for rs in ratios.values() for x in rs]
    if not every:
        raise ks.ParameterError("no real run has a simulated run of the same graph, D, seed and policy")

    def within(xs: list[float]) -> str:
        return ", ".join(
            f"{sum(abs(x - 1) <= t + 1e-12 for x in xs)} within {round(100 * t)} %" for t in SIM_TOLERANCES
        )

    lines += ["", f"- All {len(every)} runs: {within(every)} (simulated / real {min(every):.2f}-{max(every):.2f})."]
    lines += [f"- {p}, {len(rs)} runs: {within(rs)}." for p, rs in ratios.items() if rs]
    if aa:
        lines.append(
            f"- The {len(aa)} repeated runs (the same policy twice on a stream): their real p95 apart by "
            f"{100 * np.expm1(np.median(aa)):.1f} % (median), up to {100 * np.expm1(max(aa)):.1f} %."
        )
    if missing:
        lines.append(f"- {missing} real runs have no simulated run of their stream and policy.")
    return "\n".join(lines) + "\n"


def read_runs(path: str) -> list[dict]:
    """The runs of a JSON-lines file of `schedule --json`, checked; ParameterError says what is wrong."""
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        raise ks.ParameterError(f"cannot read the runs to compare from {path}: {e}") from e
    need = ("D_ms", "seed", "policy", "makespan_ms", "p95_ms")
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict) or any(k not in r for k in need):
            raise ks.ParameterError(f"{path}, line {i}: not a run of `schedule` (it needs {', '.join(need)})")
    return rows


def compare(
    json_path: str, baseline: str, table_path: str | None, plot_path: str | None, simulated: str | None = None
) -> str:
    """The paired comparison of a JSON-lines file from earlier runs (--compare); with the simulator's runs of the same
    streams (--simulated), each real run's p95 against the simulated one as well."""
    rows = read_runs(json_path)
    if not any(r["policy"] == baseline for r in rows):
        raise ks.ParameterError(
            f"{json_path} has no runs of the baseline policy '{baseline}'; choose one with --baseline"
        )
    text = paired_table(rows, baseline)
    if simulated:
        text += "\n" + simulated_versus_real(rows, read_runs(simulated))
    if table_path:
        with open(table_path, "w") as f:
            f.write(text)
    if plot_path:
        paired_plot(rows, plot_path, baseline)
    return text


# ---------------------------------------------------------------- traces: where real time goes that the model misses

TRACE_COLUMNS = ("job", "node", "op", "nq", "threads", "ready_ms", "start_ms", "end_ms", "expected_ms")


def _read_traces(path: str) -> list[dict]:
    try:
        with open(path) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise ks.ParameterError(f"cannot read the traces from {path}: {e}") from e
    for i, r in enumerate(runs, 1):
        if not {"graph", "D_ms", "seed", "policy", "tasks"} <= r.keys():
            raise ks.ParameterError(f"{path}, line {i}: not a trace of `schedule --trace`")
    return runs


def trace_report(real_path: str, sim_path: str | None = None, slack_ms: float = 1.0) -> str:
    """Where a traced stream's time went (`schedule --trace`): per task kind and thread count, the measured duration
    against the dispatcher's expected one (the cost model under the load it saw) and the wait from ready to start;
    with a second trace of the same streams (the simulator's, same D, seed and policy), the first task whose start
    differs by more than `slack_ms` plus 10 % of its expected time, per stream."""
    real = _read_traces(real_path)
    lines = [
        f"# Trace report: {real_path}" + (f" against {sim_path}" if sim_path else ""),
        "",
        "| op | threads | tasks | measured ms (mean) | expected ms (mean) | measured / expected "
        "| wait ms (mean, p95) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    groups: dict = {}
    for r in real:
        for t in r["tasks"]:
            job, node, op, nq, th, ready, start, end, exp = t
            g = groups.setdefault((op, th), [[], [], []])
            g[0].append(end - start)
            g[1].append(exp)
            g[2].append(start - ready)
    for (op, th), (dur, exp, wait) in sorted(groups.items()):
        lines.append(
            f"| {op} | {th} | {len(dur)} | {np.mean(dur):.2f} | {np.mean(exp):.2f} | "
            f"{np.mean(dur) / max(np.mean(exp), 1e-9):.2f} | {np.mean(wait):.2f}, {np.percentile(wait, 95):.2f} |"
        )
    if sim_path:
        sims = {(s["graph"], s["D_ms"], s["seed"], s["policy"]): s for s in _read_traces(sim_path)}
        lines += [
            "",
            "| stream (graph, D, seed, policy) | first divergence (real start order) | real start | simulated start |",
            "| --- | --- | ---: | ---: |",
        ]
        seen = set()
        for r in real:
            key = (r["graph"], r["D_ms"], r["seed"], r["policy"])
            if key in seen or key not in sims:
                continue
            seen.add(key)
            sim = {(t[0], t[1]): t for t in sims[key]["tasks"]}
            first = None
            for t in r["tasks"]:
                s = sim.get((t[0], t[1]))
                if s is None or abs(t[6] - s[6]) > slack_ms + 0.1 * t[8]:
                    first = (t, s)
                    break
            if first is None:
                lines.append(f"| {', '.join(map(str, key))} | none (every start within the slack) | | |")
            else:
                t, s = first
                lines.append(
                    f"| {', '.join(map(str, key))} | job {t[0]} node {t[1]} ({t[2]}, {t[4]} threads) | "
                    f"{t[6]:.1f} | {'-' if s is None else f'{s[6]:.1f}'} |"
                )
    return "\n".join(lines) + "\n"
