"""Where the service runs its jobs: this machine's cores (LocalBackend, the online executor of ks.sched) or a Ray
cluster (kasoku.distributed.RayBackend). Both take checked jobs and report ended ones with their outputs as bytes."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import kasoku as ks


@dataclass
class Job:
    jid: int
    graph: ks.sched.Graph
    keys_id: str
    keys_path: Path                  # the key set's bytes (a remote backend ships them once per node)
    evaluator: ks.Evaluator          # the key set, loaded here (the job was checked against it)
    inputs: dict                     # name -> ks.Ciphertext
    blobs: dict = field(default_factory=dict)  # name -> the ciphertext's bytes as received


@dataclass
class Ended:
    jid: int
    outputs: dict[str, bytes] | None  # name -> compact bytes; None on error
    error: str | None
    queued_ms: float = 0.0
    run_ms: float = 0.0


class LocalBackend:
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
        done = self.ex.collect(timeout_s=timeout_s)
        out = []
        for d in done:
            with self._lock:
                jid = self._jid.pop(d["id"])
            outs = None if d["outputs"] is None else {k: v.to_bytes() for k, v in d["outputs"].items()}
            out.append(Ended(jid, outs, d["error"], d["queued_ms"], d["run_ms"]))
        return out

    def status(self) -> dict:
        return {"executor": self.name, "threads": self.ex.threads, "busy_threads": self.ex.busy_threads,
                "jobs_in_executor": self.ex.jobs_in_system}

    def close(self) -> None:
        self.ex.close()
