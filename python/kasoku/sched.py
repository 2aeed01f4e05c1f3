"""Scheduling streams of HE jobs on many cores (Suzuki, Ishimaki and Yamana, docs/DESIGN.md §3.2).

    import kasoku as ks
    g = ks.sched.maclaurin_exp(order=6)                      # or build one: ks.sched.Graph()
    cm = ks.sched.CostModel.from_paper()                     # or .measure(params, max_threads=2) / .load(path)
    arr = ks.sched.poisson(mean_ms=80, jobs=2300, seed=1)
    r = ks.sched.simulate(g, cm, threads=126, policy="kasoku", arrivals=arr, window=(301, 1900))
    print(r.makespan_ms, r.p95_ms)

Policies: "fixed-1", "fixed-half", "fixed-full", "dynamic" (the source's) and "kasoku" (ours); see
docs/SCHEDULING.md. `run` executes the same stream for real on this machine's threads; `Executor` takes jobs of
any graph, evaluator and inputs as they come (a server's executor: python -m kasoku serve).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ._kasoku import hardware_threads
from ._kasoku import sched as _s
from .errors import ParameterError

Graph = _s.Graph
CostModel = _s.CostModel
Executor = _s.Executor
check_job = _s.check_job
maclaurin_exp = _s.maclaurin_exp
bsgs_polynomial = _s.bsgs_polynomial
matmul_like = _s.matmul_like
random_dag = _s.random_dag
decide_threads = _s.decide_threads
op_schema = _s.op_schema
POLICIES: tuple[str, ...] = tuple(_s.policies())


def poisson(mean_ms: float, jobs: int, seed: int = 1) -> np.ndarray:
    """Arrival times (ms) of `jobs` jobs with exponential inter-arrival times of mean `mean_ms` (seeded)."""
    return np.asarray(_s.poisson_arrivals(float(mean_ms), int(jobs), int(seed)))


class StreamResult:
    """Per-job times of a stream and the statistics of its measured window (1-based, inclusive)."""

    def __init__(self, raw, policy: str, threads: int, executor: str):
        self.policy, self.threads, self.executor = policy, threads, executor
        self.arrival_ms = np.asarray(raw.arrival_ms)
        self.start_ms = np.asarray(raw.start_ms)
        self.finish_ms = np.asarray(raw.finish_ms)
        self.window = (raw.window_first, raw.window_last)
        self.latencies_ms = np.asarray(raw.latencies_ms())
        self.makespan_ms = raw.makespan_ms
        self.p50_ms, self.p95_ms, self.p99_ms, self.mean_ms = raw.p50_ms, raw.p95_ms, raw.p99_ms, raw.mean_ms
        self.busy_thread_ms = raw.busy_thread_ms
        self.span_ms = raw.span_ms
        self.threads_used = list(raw.threads_used)
        # every task in start order: job, node, op, nq, threads, ready/start/end ms and the dispatcher's expected ms
        self.tasks = [
            (t.job, t.node, t.op, t.nq, t.threads, t.ready_ms, t.start_ms, t.end_ms, t.expected_ms) for t in raw.tasks
        ]
        # what the dispatcher learnt: observed / estimated task time per kind and thread count (the kasoku policy
        # multiplies its estimates by it)
        self.corrections: list[dict] = list(raw.corrections)

    @property
    def mean_busy_threads(self) -> float:
        """Threads busy on average from the first arrival to the last finish."""
        return self.busy_thread_ms / self.span_ms if self.span_ms > 0 else 0.0

    @property
    def mean_jobs_in_flight(self) -> float:
        """Jobs started and not finished, on average from the first arrival to the last finish."""
        return float(np.sum(self.finish_ms - self.start_ms)) / self.span_ms if self.span_ms > 0 else 0.0

    def to_dict(self) -> dict:
        """The run's summary as a JSON-ready dict: policy, threads, executor, window, makespan and percentiles."""
        return {
            "policy": self.policy,
            "threads": self.threads,
            "executor": self.executor,
            "jobs": int(self.arrival_ms.size),
            "window": list(self.window),
            "makespan_ms": self.makespan_ms,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
            "mean_ms": self.mean_ms,
            "mean_busy_threads": self.mean_busy_threads,
            "mean_jobs_in_flight": self.mean_jobs_in_flight,
            "threads_used": {str(i): n for i, n in enumerate(self.threads_used) if i and n},
            "corrections": {f"{c['op']}/{c['threads']}": round(c["factor"], 3) for c in self.corrections},
        }

    def __repr__(self) -> str:
        return (
            f"StreamResult({self.executor}, policy={self.policy}, threads={self.threads}, "
            f"makespan={self.makespan_ms:.0f} ms, p50={self.p50_ms:.0f} ms, p95={self.p95_ms:.0f} ms)"
        )


class RunResult(StreamResult):
    """A real run: the stream's statistics plus the outputs of the first `keep_outputs` jobs."""

    def __init__(self, raw, outputs, policy: str, threads: int):
        super().__init__(raw, policy, threads, "real")
        self.outputs: list[dict] = outputs


def _window(window):
    return None if window is None else (int(window[0]), int(window[1]))


def _arrivals(arrivals):
    return None if arrivals is None else [float(a) for a in np.asarray(arrivals, dtype=float).ravel()]


def simulate(
    graph: Graph,
    cost: CostModel,
    threads: int,
    policy: str = "kasoku",
    arrivals: Sequence[float] | None = None,
    window: tuple[int, int] | None = None,
    truth: CostModel | None = None,
) -> StreamResult:
    """Discrete-event simulation of a job stream on `threads` threads, driven by the cost model. With `truth`, the
    tasks take its times while the dispatcher estimates with `cost` (a model that is off, e.g. cost.scaled(1.3)):
    what the kasoku policy's correction learns (StreamResult.corrections)."""
    raw = _s.simulate(graph, cost, int(threads), policy, _arrivals(arrivals), _window(window), truth)
    return StreamResult(raw, policy, int(threads), "simulated")


def median_model(models: Sequence[CostModel]) -> CostModel:
    """The entrywise median of cost models measured with the same parameters and thread count (their tables, alignment,
    load points and overhead): a model is a snapshot of the machine, and on a shared one a single measurement can
    come out a few per cent off the machine's state over a longer run (docs/SCHEDULING.md, "Two real threads").
    Raises ParameterError for no models or models of different shapes, names or machines."""
    if not models:
        raise ParameterError("median_model: no cost models given")
    docs = [m.to_dict() for m in models]

    def med(vals: list, where: str):
        first = vals[0]
        if isinstance(first, float):
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                raise ParameterError(f"median_model: the models differ in kind at {where}")
            return float(np.median(vals))
        if isinstance(first, list):
            if any(not isinstance(v, list) or len(v) != len(first) for v in vals):
                raise ParameterError(
                    f"median_model: the models differ in shape at {where}; measure them with the same parameters "
                    "and threads"
                )
            return [med([v[i] for v in vals], f"{where}[{i}]") for i in range(len(first))]
        if isinstance(first, dict):
            if any(not isinstance(v, dict) or v.keys() != first.keys() for v in vals):
                raise ParameterError(f"median_model: the models have different entries at {where or 'the top'}")
            return {k: med([v[k] for v in vals], f"{where}.{k}" if where else k) for k in first}
        if any(v != first for v in vals):  # names, machines, counts (nq_min, widths, busy threads)
            raise ParameterError(f"median_model: the models differ at {where}: {first!r} and others")
        return first

    return CostModel.from_dict(med(docs, ""))


_measured: dict = {}


def measured_cost_model(
    params, threads: int, reps: int = CostModel.DEFAULT_REPS, mix: Sequence[Graph] = ()
) -> CostModel:
    """CostModel.measure(params, threads, reps, mix), measured once per process, parameter set, rounds and mix."""
    key = (repr(params), threads, reps, tuple(tuple(n["op"] for n in g.nodes) for g in mix))
    if key not in _measured:
        _measured[key] = CostModel.measure(params, max_threads=threads, reps=reps, mix=list(mix))
    return _measured[key]


def run(
    graph: Graph,
    ctx,
    ev,
    inputs: Mapping,
    threads: int | None = None,
    policy: str = "kasoku",
    arrivals: Sequence[float] | None = None,
    window: tuple[int, int] | None = None,
    cost: CostModel | None = None,
    keep_outputs: int = 1,
) -> RunResult:
    """Runs the job stream for real: each job starts at its arrival (ms after the call) on `inputs`, tasks run on
    this machine's threads (None: all cores) with the thread counts the policy gives; a task on several threads has
    them pinned to CPUs that no other running task holds, a one-thread task too. `cost` gives the priorities
    and the kasoku policy's estimates; None measures one for ctx's parameters and the graph's operation mix (once
    per process). `ev` needs the
    relinearisation key for products and the Galois keys of `graph.rotation_steps()` for rotations (MissingKeyError
    names every missing step)."""
    t = hardware_threads() if threads is None else int(threads)
    if cost is None:
        cost = measured_cost_model(ctx.params, t, mix=[graph])
    raw, outputs = _s.run(
        graph, ev, dict(inputs), cost, t, policy, _arrivals(arrivals), _window(window), int(keep_outputs)
    )
    return RunResult(raw, outputs, policy, t)


__all__ = [
    "Graph",
    "CostModel",
    "median_model",
    "Executor",
    "check_job",
    "StreamResult",
    "RunResult",
    "POLICIES",
    "maclaurin_exp",
    "bsgs_polynomial",
    "matmul_like",
    "random_dag",
    "poisson",
    "simulate",
    "run",
    "decide_threads",
    "measured_cost_model",
    "op_schema",
]
