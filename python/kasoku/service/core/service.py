"""The service's logic, apart from HTTP: key sets, jobs checked and made durable before they are queued, the executor
that runs them and the collector of their ends. The routes (routes/) call it; it raises the library's errors and
Busy, which the routes turn into status codes."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

import kasoku as ks

from .. import wire
from ..executors import Ended, JobExecutor, Job, LocalExecutor, cost_model
from ..store import Store
from .config import Config, admin_token
from .lru import Lru
from .metrics import Metrics
from .models import ModelJob, ModelRunner, Models

ERRORS_400 = (wire.BadRequest, ks.SerializationError)
ERRORS_422 = (ks.ParameterError, ks.LevelError, ks.MissingKeyError, ks.ScaleError)


def make_executor(cfg: Config) -> JobExecutor:
    """The executor the configuration names: this machine's cores, or a Ray cluster (kasoku.service.ray_executor)."""
    if cfg.executor == "ray":
        from ..ray_executor import RayExecutor  # here: it needs Ray (kasoku[distributed]), the local executor not

        cost = cfg.cost if cfg.cost in ("measure", "paper") else ks.sched.CostModel.load(cfg.cost)
        return RayExecutor(cfg.params, address=cfg.ray_address, policy=cfg.policy, cost=cost)  # measure: per node
    threads = ks.hardware_threads() if cfg.threads == 0 else cfg.threads
    return LocalExecutor(cost_model(cfg.params, threads, cfg.cost, cache=cfg.data), threads, cfg.policy)


class Service:
    def __init__(self, cfg: Config, executor=None):
        self.cfg = cfg
        self.ctx = ks.Context(cfg.params)
        self.store = Store(cfg.data)
        self.admin = admin_token(cfg)
        self.metrics = Metrics()
        self._lock = threading.Lock()
        self._submitting = threading.Lock()  # submissions with an idempotency key: one at a time
        self.in_flight = 0
        self._evaluators: Lru[str, ks.Evaluator] = Lru(cfg.key_cache)
        self._waiters: dict[int, list[asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._collector: threading.Thread | None = None
        self.executor = executor
        self.models = Models(self.store, cfg.threads, cfg.model_cache, cfg.key_cache)
        self.runner: ModelRunner | None = None
        self.recovered = 0

    # --- life cycle ---
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self.executor is None:
            self.executor = make_executor(self.cfg)
        self.runner = ModelRunner(self.cfg.threads)
        for jid, client, _ in self.store.unfinished():  # accepted before a restart: run again
            self.in_flight += 1
            self.metrics.accepted += 1
            try:
                self._queue(self._job(jid, client, self.store.request_path(jid).read_bytes()))
                self.store.rerun(jid)
                self.recovered += 1
            except (*ERRORS_400, *ERRORS_422, LookupError, OSError) as e:
                self._ended(Ended(jid, None, f"could not run after a restart: {e}"))
        self._collector = threading.Thread(target=self._collect, name="kasoku-collector", daemon=True)
        self._collector.start()

    def stop(self) -> None:
        self._stop.set()
        if self._collector:
            self._collector.join()
        if self.executor:
            self.executor.close()
        if self.runner:
            self.runner.close()
        self.store.close()

    def _collect(self) -> None:
        while not self._stop.is_set():
            for e in self.executor.poll(0.2) + self.runner.poll():
                self._ended(e)

    def _queue(self, job: Job | ModelJob) -> None:
        if isinstance(job, ModelJob):
            self.runner.submit(job)
        else:
            self.executor.submit(job)

    def _ended(self, e: Ended) -> None:
        result = None if e.outputs is None else wire.result_body(e.outputs)
        latency = self.store.finish(e.jid, result, e.error)
        with self._lock:
            if latency is not None:
                self.in_flight -= 1
                self.metrics.ended(e, latency)
            waiters = self._waiters.pop(e.jid, [])
        if self._loop:
            for ev in waiters:
                self._loop.call_soon_threadsafe(ev.set)

    # --- key sets and jobs ---
    def evaluator(self, kid: str) -> ks.Evaluator:
        ev = self._evaluators.get(kid)
        if ev is None:
            keys = ks.EvaluationKeys.from_bytes(self.ctx, self.store.key_path(kid).read_bytes())
            ev = self._evaluators.put(kid, self.ctx.evaluator(keys))
        return ev

    def _job(self, jid: int, client: str, body: bytes) -> Job | ModelJob:
        """The job of a request body, checked against its key set and model (LookupError: not this client's)."""
        spec, blobs = wire.parse_job(body)
        kid = spec.keys
        if self.store.keys_of(client, kid) is None:
            raise LookupError(f"unknown key set {kid!r}: register it first (POST /v1/keys, or a model's keys)")
        blobs = {n: bytes(b) for n, b in zip(spec.inputs, blobs)}
        if spec.model is not None:
            if self.store.model_of(client, spec.model) is None:
                raise LookupError(f"unknown model {spec.model!r}: store it first (POST /v1/models)")
            return self.models.job(jid, spec.model, kid, blobs["x"])
        inputs = {n: ks.Ciphertext.from_bytes(self.ctx, b) for n, b in blobs.items()}
        if spec.computation is not None:
            level = inputs["x"].level
            c = spec.computation
            graph = (
                ks.sched.maclaurin_exp(order=c["order"], level=level)
                if c["name"] == "exp"
                else ks.sched.bsgs_polynomial(degree=c["degree"], level=level)
            )
        else:
            graph = ks.sched.Graph.from_nodes(spec.nodes, spec.outputs)
        ev = self.evaluator(kid)
        ks.sched.check_job(graph, ev, inputs)
        return Job(jid, graph, kid, self.store.key_path(kid), ev, inputs, blobs)

    def submit(self, client: str, body: bytes, key: str | None = None) -> int:
        """Checks, persists and queues a job; returns its id (a job already accepted under the client's idempotency
        key: that job's id). Raises BadRequest, SerializationError, the scheduler's checks (ParameterError,
        LevelError, MissingKeyError), LookupError (not this client's key set) or Busy."""
        if key is not None:
            with self._submitting:
                return self._submit_once(client, body, key)
        return self._submit(client, body, None)

    def _submit_once(self, client: str, body: bytes, key: str) -> int:
        jid = self.store.job_with_key(client, key)
        return jid if jid is not None else self._submit(client, body, key)

    def _submit(self, client: str, body: bytes, key: str | None) -> int:
        job = self._job(0, client, body)  # everything checked before the job is accepted
        with self._lock:
            if self.in_flight >= self.cfg.capacity:
                self.metrics.rejected += 1
                raise Busy(self.retry_after())
            self.in_flight += 1
        try:
            job.jid = self.store.accept(client, job.keys_id, body, key)
            self._queue(job)
        except BaseException:
            if job.jid:
                self.store.discard(job.jid)
            with self._lock:
                self.in_flight -= 1
            raise
        with self._lock:
            self.metrics.accepted += 1
        return job.jid

    def snapshot(self) -> dict:
        """GET /metrics: the queue, the counters, the latencies and the executor's state."""
        m = self.metrics
        with self._lock:
            body = {
                "queue_length": self.in_flight,
                "capacity": self.cfg.capacity,
                "accepted": m.accepted,
                "completed": m.completed,
                "failed": m.failed,
                "rejected_busy": m.rejected,
                "recovered_after_restart": self.recovered,
                "jobs_per_second_60s": m.jobs_per_second(),
                "latency_ms": m.latency_ms(),
                "uptime_s": time.time() - m.started,
            }
        body.update(self.executor.status())
        body["model_jobs_waiting"] = self.runner.pending if self.runner else 0
        return body

    def retry_after(self) -> float:
        """Seconds until a slot is likely free: the recent mean run time per job over the executor's threads."""
        run = float(np.mean(self.metrics.run_s)) if self.metrics.run_s else 1.0
        threads = max(1, self.executor.threads)
        return max(0.05, run * max(1, self.in_flight - self.cfg.capacity + 1) / threads)

    async def wait(self, jid: int, timeout_s: float) -> None:
        ev = asyncio.Event()
        with self._lock:
            self._waiters.setdefault(jid, []).append(ev)
        try:
            await asyncio.wait_for(ev.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._lock:
                lst = self._waiters.get(jid, [])
                if ev in lst:
                    lst.remove(ev)
                if not lst:
                    self._waiters.pop(jid, None)


class Busy(Exception):
    def __init__(self, retry_after: float):
        super().__init__("the job queue is full")
        self.retry_after = retry_after
