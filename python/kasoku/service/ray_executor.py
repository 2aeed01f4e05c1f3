"""kasoku.service.ray_executor: kasoku jobs on a Ray cluster (docs/SERVING.md).

    import kasoku as ks
    from kasoku.service import ray_executor
    cl = ray_executor.Cluster(ctx, address="auto")             # or None: a Ray instance on this machine
    kid = cl.add_keys(keys.evaluation())                       # sent to each node once, when a job first needs it
    outs = cl.map(ks.sched.maclaurin_exp(), [{"x": ct} for ct in cts], keys=kid)   # list of {name: Ciphertext}

One actor per node holds the context, the key sets sent to that node and an online executor (ks.sched.Executor) with
the node's CPUs as threads: within a node the scheduler's cost model and policy give each task its thread count.
Jobs go to the node with the fewest outstanding jobs per thread; ciphertexts travel as compact bytes. The results are
the local executor's, bit for bit (the operations are deterministic). Needs Ray (pip install 'kasoku[distributed]').
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from typing import Iterable, Mapping

import kasoku as ks
from .executors import Ended, Job, cost_model, ended

try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "kasoku.service.ray_executor needs Ray: pip install 'kasoku[distributed]' (make venv installs it)"
    ) from e


@ray.remote
class NodeWorker:
    """A node's share of the cluster: the context, the key sets sent here and the node's online executor."""

    def __init__(self, params: bytes, threads: int, policy: str, cost):
        self.ctx = ks.Context(ks.Parameters.from_bytes(params))
        self.threads = threads or ks.hardware_threads()
        self.ex = ks.sched.Executor(cost_model(self.ctx.params, self.threads, cost), self.threads, policy)
        self.evaluators: dict[str, asyncio.Future] = {}  # key set id -> its evaluator (loading or loaded)
        self.waiting: dict[int, asyncio.Future] = {}
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.collector: threading.Thread | None = None

    def node(self) -> tuple[str, int]:
        return ray.get_runtime_context().get_node_id(), self.threads

    async def _evaluator(self, kid: str, keys_ref: list) -> ks.Evaluator:
        """The key set's evaluator: fetched from the object store and loaded at the node's first job needing it."""
        if kid not in self.evaluators:
            self.evaluators[kid] = asyncio.ensure_future(self._load(keys_ref[0]))
        return await self.evaluators[kid]

    async def _load(self, ref) -> ks.Evaluator:
        data = await ref
        return self.ctx.evaluator(ks.EvaluationKeys.from_bytes(self.ctx, data))

    def _collect(self) -> None:
        while True:
            for eid, *result in ended(self.ex, 0.5):
                with self.lock:
                    fut = self.waiting.pop(eid)
                self.loop.call_soon_threadsafe(fut.set_result, tuple(result))

    async def run(self, kid: str, keys_ref: list, nodes: list, outputs: list, inputs: dict):
        """One job: (outputs as bytes or None, error or None, queued_ms, run_ms). keys_ref: [the key set's object
        reference] (in a list, so that Ray passes the reference, not the keys)."""
        if self.collector is None:
            self.loop = asyncio.get_running_loop()
            self.collector = threading.Thread(target=self._collect, daemon=True)
            self.collector.start()
        try:
            ev = await self._evaluator(kid, keys_ref)
            graph = ks.sched.Graph.from_nodes(nodes, [tuple(o) for o in outputs])
            cts = {k: ks.Ciphertext.from_bytes(self.ctx, v) for k, v in inputs.items()}
            fut = self.loop.create_future()
            with self.lock:  # recorded before the collector can see the job end
                self.waiting[self.ex.submit(graph, ev, cts)] = fut
        except ks.Error as e:
            return None, f"{type(e).__name__}: {e}", 0.0, 0.0
        return await fut


class Cluster:
    """Kasoku's executors on the alive nodes of a Ray cluster (one NodeWorker actor per node)."""

    def __init__(
        self,
        ctx: ks.Context,
        address: str | None = None,
        policy: str = "kasoku",
        cost="measure",
        threads_per_node: int | None = None,
    ):
        """ctx: the context whose parameters the nodes compute at and whose Ciphertexts map/stream return.
        address: Ray's (None: the running instance or a new one on this machine). cost: "measure" (each node times
        itself), "paper" or a CostModel."""
        params = ctx.params
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, logging_level="warning", log_to_driver=False)
        self.params = params
        blob = params.to_bytes()
        cost = cost.to_dict() if isinstance(cost, ks.sched.CostModel) else cost
        self.workers, self.threads = [], []
        for n in ray.nodes():
            if not n["Alive"]:
                continue
            threads = threads_per_node or max(1, int(n["Resources"].get("CPU", 1)))
            w = NodeWorker.options(
                num_cpus=0,
                max_concurrency=10000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            ).remote(blob, threads, policy, cost)
            self.workers.append(w)
            self.threads.append(threads)
        if not self.workers:
            raise ks.ParameterError("the Ray cluster has no alive node")
        ray.get([w.node.remote() for w in self.workers])  # every actor up (its cost model made)
        self._ctx = ctx
        self._keys: dict[str, ray.ObjectRef] = {}
        self._outstanding = [0] * len(self.workers)
        self.submitted = [0] * len(self.workers)  # jobs sent to each node so far
        self._where: dict[ray.ObjectRef, int] = {}
        self._lock = threading.Lock()

    @property
    def nodes(self) -> int:
        """Nodes (NodeWorker actors) in the cluster."""
        return len(self.workers)

    def add_keys(self, keys) -> str:
        """An EvaluationKeys (or its bytes) for later jobs; returns its id. Stored once in Ray's object store; a
        node fetches it at its first job that needs it and keeps the evaluator."""
        data = keys if isinstance(keys, (bytes, bytearray)) else keys.to_bytes()
        kid = "k" + hashlib.sha256(data).hexdigest()[:16]
        if kid not in self._keys:
            self._keys[kid] = ray.put(bytes(data))
        return kid

    def submit(self, graph: ks.sched.Graph, inputs: Mapping, keys: str) -> ray.ObjectRef:
        """Queues one job on the least loaded node; the reference resolves to (outputs as bytes or None, error or
        None, queued_ms, run_ms). `inputs`: name -> Ciphertext or its bytes."""
        if keys not in self._keys:
            raise ks.ParameterError(f"unknown key set {keys!r}: add it with add_keys first")
        blobs = {k: v if isinstance(v, bytes) else v.to_bytes() for k, v in inputs.items()}
        with self._lock:
            i = min(range(len(self.workers)), key=lambda j: self._outstanding[j] / self.threads[j])
            self._outstanding[i] += 1
            self.submitted[i] += 1
            ref = self.workers[i].run.remote(keys, [self._keys[keys]], graph.nodes, list(graph.outputs), blobs)
            self._where[ref] = i
        return ref

    def done(self, ref: ray.ObjectRef):
        """The job's result (blocks until it ends); frees its slot in the load balance."""
        try:
            return ray.get(ref)
        finally:
            with self._lock:
                i = self._where.pop(ref, None)
                if i is not None:
                    self._outstanding[i] -= 1

    def _ciphertexts(self, res, what: str) -> dict:
        outs, err = res[0], res[1]
        if err is not None:
            raise ks.ParameterError(f"{what} failed: {err}")
        return {k: ks.Ciphertext.from_bytes(self._ctx, v) for k, v in outs.items()}

    def map(self, graph: ks.sched.Graph, inputs: Iterable[Mapping], keys: str) -> list[dict]:
        """The graph on each input set, spread over the nodes; outputs in input order as {name: Ciphertext}."""
        refs = [self.submit(graph, i, keys) for i in inputs]
        return [self._ciphertexts(self.done(r), f"job {n}") for n, r in enumerate(refs)]

    def stream(self, graph: ks.sched.Graph, inputs: Iterable[Mapping], keys: str, window: int = 64):
        """Yields (index, {name: Ciphertext}) as jobs end, keeping at most `window` jobs in flight."""
        it = enumerate(inputs)
        pending: dict[ray.ObjectRef, int] = {}
        for n, i in it:
            pending[self.submit(graph, i, keys)] = n
            if len(pending) >= window:
                break
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for r in ready:
                n = pending.pop(r)
                yield n, self._ciphertexts(self.done(r), f"job {n}")
                nxt = next(it, None)
                if nxt is not None:
                    pending[self.submit(graph, nxt[1], keys)] = nxt[0]

    def shutdown(self) -> None:
        """Ends every node's actor; the cluster takes no more jobs."""
        for w in self.workers:
            ray.kill(w)
        self.workers = []


class RayExecutor:
    """The service's executor on a Ray cluster (python -m kasoku serve --executor ray): a
    kasoku.service.executors.JobExecutor."""

    name = "ray"

    def __init__(self, params: ks.Parameters, address: str | None = None, policy: str = "kasoku", cost="measure"):
        self.cluster = Cluster(ks.Context(params), address=address, policy=policy, cost=cost)
        self._jid: dict[ray.ObjectRef, int] = {}
        self._kid: dict[str, str] = {}  # the service's key set id -> the cluster's
        self._lock = threading.Lock()

    @property
    def threads(self) -> int:
        """Threads of all nodes together."""
        return sum(self.cluster.threads)

    def submit(self, job: Job) -> None:
        """Sends a service job to the cluster (its key set first, once per node that needs it)."""
        if job.keys_id not in self._kid:
            self._kid[job.keys_id] = self.cluster.add_keys(job.keys_path.read_bytes())
        kid = self._kid[job.keys_id]
        ref = self.cluster.submit(job.graph, job.blobs, kid)
        with self._lock:
            self._jid[ref] = job.jid

    def poll(self, timeout_s: float) -> list[Ended]:
        """The jobs that ended, waiting up to timeout_s for the first."""
        with self._lock:
            refs = list(self._jid)
        if not refs:
            threading.Event().wait(timeout_s)
            return []
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        out = []
        for r in ready:
            with self._lock:
                jid = self._jid.pop(r)
            try:
                outs, err, q, run = self.cluster.done(r)
            except ray.exceptions.RayError as e:
                outs, err, q, run = None, f"the Ray task failed: {e}", 0.0, 0.0
            out.append(Ended(jid, outs, err, q, run))
        return out

    def status(self) -> dict:
        """Executor, nodes, threads and jobs in flight, for the service's /metrics."""
        return {
            "executor": self.name,
            "nodes": self.cluster.nodes,
            "threads": self.threads,
            "jobs_in_executor": len(self._jid),
        }

    def close(self) -> None:
        """Shuts the cluster down."""
        self.cluster.shutdown()


__all__ = ["Cluster", "NodeWorker", "RayExecutor"]
