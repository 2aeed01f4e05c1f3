"""Where the service runs its jobs: the contract (JobExecutor) and this machine's cores (LocalExecutor, the online
executor of ks.sched); a Ray cluster is ray_executor.RayExecutor. Both take checked jobs and report ended ones
with their outputs as bytes. This module imports neither the service nor Ray, so both can import it."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import kasoku as ks


@dataclass
class Job:
    jid: int
    graph: ks.sched.Graph
    keys_id: str
    keys_path: Path  # the key set's bytes (a remote executor ships them once per node)
    evaluator: ks.Evaluator  # the key set, loaded here (the job was checked against it)
    inputs: dict  # name -> ks.Ciphertext
    blobs: dict = field(default_factory=dict)  # name -> the ciphertext's bytes as received


@dataclass
class Ended:
    jid: int
    outputs: dict[str, bytes] | None  # name -> compact bytes; None on error
    error: str | None
    queued_ms: float = 0.0
    run_ms: float = 0.0


def cost_model(
    params: ks.Parameters, threads: int, spec, cache: Path | None = None, progress=None
) -> ks.sched.CostModel:
    """The scheduler's cost model an executor runs with: spec "paper", "measure" (timed on this machine; kept in
    `cache` per parameter set and thread count when given), a CostModel file's path, or a CostModel's dict (a Ray
    node's copy of the driver's)."""
    if isinstance(spec, dict):
        return ks.sched.CostModel.from_dict(spec)
    if spec == "paper":
        return ks.sched.CostModel.from_paper()
    if spec != "measure":
        return ks.sched.CostModel.load(str(spec))
    path = None
    if cache is not None:
        tag = hashlib.sha256(params.to_bytes()).hexdigest()[:16]
        path = cache / f"cost-{tag}-{threads}.json"
        if path.exists():
            return ks.sched.CostModel.load(str(path))
    cm = ks.sched.CostModel.measure(params, max_threads=threads, reps=1, progress=progress)
    if path is not None:
        cm.save(str(path))
    return cm


def ended(
    executor: ks.sched.Executor, timeout_s: float
) -> list[tuple[int, dict[str, bytes] | None, str | None, float, float]]:
    """The jobs the executor ended (waiting up to timeout_s for one): (its executor id, outputs as compact bytes or
    None, error or None, queued_ms, run_ms), as both executors report them."""
    out = []
    for d in executor.collect(timeout_s=timeout_s):
        outs = None if d["outputs"] is None else {k: v.to_bytes() for k, v in d["outputs"].items()}
        out.append((d["id"], outs, d["error"], d["queued_ms"], d["run_ms"]))
    return out


class JobExecutor(Protocol):
    """What the service asks of an executor (kasoku.service.core.make_executor chooses one)."""

    name: str

    @property
    def threads(self) -> int:
        """The threads jobs run on (the wait a full queue advises scales with them)."""

    def submit(self, job: Job) -> None:
        """Queues a checked job; raises ParameterError / LevelError / MissingKeyError for one that cannot run."""

    def poll(self, timeout_s: float) -> list[Ended]:
        """The jobs that ended since the last poll, waiting up to timeout_s for one."""

    def status(self) -> dict:
        """The executor's part of GET /metrics."""

    def close(self) -> None:
        """Stops the executor (jobs not ended are lost; the store runs them again at the next start)."""


class LocalExecutor:
    """The jobs' tasks on this machine's threads under a scheduling policy (ks.sched.Executor)."""

    name = "local"

    def __init__(self, cost: ks.sched.CostModel, threads: int = 0, policy: str = "kasoku"):
        self.ex = ks.sched.Executor(cost, threads, policy)
        self._lock = threading.Lock()
        self._jid: dict[int, int] = {}  # executor id -> job id

    @property
    def threads(self) -> int:
        return self.ex.threads

    def submit(self, job: Job) -> None:
        """Raises ParameterError / LevelError / MissingKeyError for a job that cannot run."""
        with self._lock:
            self._jid[self.ex.submit(job.graph, job.evaluator, job.inputs)] = job.jid

    def poll(self, timeout_s: float) -> list[Ended]:
        out = []
        for eid, outs, error, queued_ms, run_ms in ended(self.ex, timeout_s):
            with self._lock:
                jid = self._jid.pop(eid)
            out.append(Ended(jid, outs, error, queued_ms, run_ms))
        return out

    def status(self) -> dict:
        return {
            "executor": self.name,
            "threads": self.ex.threads,
            "busy_threads": self.ex.busy_threads,
            "jobs_in_executor": self.ex.jobs_in_system,
        }

    def close(self) -> None:
        self.ex.close()
