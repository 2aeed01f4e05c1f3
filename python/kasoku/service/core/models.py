"""Models on the service: kasoku.nn plans (Plan.to_bytes) a client stores, evaluation keys made for a plan's
parameters, and the worker that runs a model on an encrypted sample. A plan holds no secret; the server loads it with
kasoku.nn.load (no PyTorch), which checks it and encodes its transforms, and keeps a few loaded."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import kasoku as ks
import kasoku.nn as ksnn

from ..executors import Ended
from ..store import Store
from .lru import Lru


@dataclass
class ModelJob:
    jid: int
    keys_id: str
    plan: ksnn.Plan
    evaluator: ks.Evaluator  # the key set, loaded for the plan's context
    sample: ks.Ciphertext
    queued: float = 0.0


def info(mid: str, plan: ksnn.Plan) -> dict:
    """What a client needs to know of a stored model (POST /v1/models answers it)."""
    return {
        "model": mid,
        "input_shape": list(plan.in_shape),
        "outputs": plan.out_dim,
        "depth": plan.depth,
        "bootstraps": plan.bootstraps,
        "galois_elements": plan.galois_elements(),
        "plan": repr(plan),
    }


def missing_keys(plan: ksnn.Plan, keys) -> str | None:
    """What the key set lacks for the plan (None: nothing)."""
    have = keys.galois_levels
    gone = sorted(g for g, level in plan.galois_levels().items() if have.get(g, -1) < level)
    if gone:
        return (
            f"the key set lacks {len(gone)} of the model's Galois keys, or has them for lower levels only (elements "
            f"{gone[:8]}): plan.keygen() makes every key the model needs"
        )
    if not keys.has_relin and any(not isinstance(s, ksnn.Affine) for s in plan.steps):
        return "the key set has no relinearisation key, which the model's activations need"
    return None


class Models:
    """The stored models, a few kept loaded, and evaluators per (model, key set)."""

    def __init__(self, store: Store, threads: int, cache: int, key_cache: int):
        self.store, self.threads = store, threads or None
        self._plans: Lru[str, ksnn.Plan] = Lru(cache)
        self._evaluators: Lru[tuple[str, str], ks.Evaluator] = Lru(key_cache)

    def add(self, client: str, body: bytes) -> dict:
        """Checks and stores a plan; raises ks.SerializationError for bytes that are not one."""
        plan = ksnn.load(body, threads=self.threads)
        mid = self.store.add_model(client, body)
        return info(mid, self._plans.put(mid, plan))

    def plan(self, mid: str) -> ksnn.Plan:
        plan = self._plans.get(mid)
        if plan is None:
            plan = self._plans.put(mid, ksnn.load(self.store.model_path(mid).read_bytes(), threads=self.threads))
        return plan

    @staticmethod
    def _keys(plan: ksnn.Plan, data: bytes):
        """A key set's bytes for the plan's context, checked to hold every key the plan needs."""
        keys = ks.EvaluationKeys.from_bytes(plan.ctx, data)
        why = missing_keys(plan, keys)
        if why:
            raise ks.MissingKeyError(why)
        return keys

    def add_keys(self, client: str, mid: str, body: bytes) -> dict:
        """Registers an evaluation key set for the model's parameters, checked to hold every key the model needs."""
        plan = self.plan(mid)
        keys = self._keys(plan, body)
        kid = self.store.add_keys(client, body, keys.has_relin, list(keys.galois_elements))
        self._evaluators.put((mid, kid), plan.ctx.evaluator(keys))
        return self.store.keys_of(client, kid)

    def job(self, jid: int, mid: str, kid: str, sample: bytes) -> ModelJob:
        """A checked job of the model on the sample's bytes (SerializationError, LevelError, MissingKeyError)."""
        plan = self.plan(mid)
        ev = self._evaluators.get((mid, kid))
        if ev is None:
            keys = self._keys(plan, self.store.key_path(kid).read_bytes())
            ev = self._evaluators.put((mid, kid), plan.ctx.evaluator(keys))
        ct = ks.Ciphertext.from_bytes(plan.ctx, sample)
        plan.check_input(ct)
        return ModelJob(jid, kid, plan, ev, ct)


class ModelRunner:
    """Runs model jobs one after the other on a thread of its own (each on the configured threads), reporting their
    ends as the executors do (the collector polls it beside the executor)."""

    def __init__(self, threads: int):
        self.threads = threads or None
        self._todo: queue.Queue[ModelJob | None] = queue.Queue()
        self._done: queue.Queue[Ended] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="kasoku-models", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        return self._todo.qsize()

    def submit(self, job: ModelJob) -> None:
        job.queued = time.perf_counter()
        self._todo.put(job)

    def _work(self) -> None:
        while (job := self._todo.get()) is not None:
            start = time.perf_counter()
            try:
                out = job.plan.run(job.sample, threads=self.threads, evaluator=job.evaluator)
                outputs, error = {"logits": out.to_bytes()}, None
            except Exception as e:  # the job fails, the service goes on
                outputs, error = None, f"{type(e).__name__}: {e}"
            end = time.perf_counter()
            self._done.put(Ended(job.jid, outputs, error, (start - job.queued) * 1e3, (end - start) * 1e3))

    def poll(self, timeout_s: float = 0.0) -> list[Ended]:
        out = []
        try:
            out.append(self._done.get(timeout=timeout_s) if timeout_s > 0 else self._done.get_nowait())
            while True:
                out.append(self._done.get_nowait())
        except queue.Empty:
            pass
        return out

    def close(self) -> None:
        self._todo.put(None)
        self._thread.join()
