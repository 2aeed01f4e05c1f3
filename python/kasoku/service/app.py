"""The encrypted-compute service: python -m kasoku serve (docs/SERVING.md).

A client registers its evaluation keys once, submits jobs (a task graph of ks.sched, or a named computation, with its
input ciphertexts) and fetches their results. Jobs run under kasoku's scheduler (the online executor of seed 001) on
this machine's cores, or on a Ray cluster (--executor ray). Every accepted job is durable (store.py) before the
server answers 202; a full queue answers 429 with Retry-After instead of growing. Each client has its own token and
sees only its own key sets and jobs. The server holds no secret key: it cannot decrypt what it computes on.
"""

from __future__ import annotations

import asyncio
import collections
import math
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import kasoku as ks

from . import wire
from .backends import Ended, Job, LocalBackend
from .store import Store

try:
    from typing import Annotated

    from fastapi import FastAPI, HTTPException, Path as PathParam, Query, Request
    from fastapi.responses import JSONResponse, Response
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("the kasoku service needs FastAPI and uvicorn: pip install 'kasoku[serve]' "
                      "(make venv installs them)") from e

OCTETS = "application/octet-stream"
JobId = Annotated[int, PathParam(ge=1, le=2**62, description="the job's id, as POST /v1/jobs answered it")]
BINARY_BODY = {"requestBody": {"required": True, "content": {OCTETS: {"schema": {"type": "string", "format": "binary"}}}}}
BINARY_RESULT = {200: {"content": {OCTETS: {"schema": {"type": "string", "format": "binary"}}},
                       "description": "the envelope of the outputs (kasoku.service.wire)"}}


@dataclass
class Config:
    data: Path                         # the store: SQLite database, key sets, requests and results
    params: ks.Parameters
    threads: int = 0                   # local executor: 0 = all cores
    policy: str = "kasoku"
    capacity: int = 64                 # accepted jobs not yet ended; beyond it: 429 retry later
    max_job_bytes: int = 256 << 20     # a job request's body
    max_keys_bytes: int = 4 << 30      # a key set's body
    cost: str = "measure"              # measure (cached in data), paper, or a CostModel JSON file
    executor: str = "local"            # local or ray
    ray_address: str | None = None     # executor ray: the cluster ("auto", "ray://...", None: start a local one)
    admin_token: str | None = None     # None: read data/admin_token, or make one there (mode 0600)
    key_cache: int = 16                # key sets kept loaded


ERRORS_400 = (wire.BadRequest, ks.SerializationError)
ERRORS_422 = (ks.ParameterError, ks.LevelError, ks.MissingKeyError, ks.ScaleError)


def admin_token(cfg: Config) -> str:
    if cfg.admin_token:
        return cfg.admin_token
    p = cfg.data / "admin_token"
    if p.exists():
        return p.read_text().strip()
    tok = secrets.token_urlsafe(32)
    cfg.data.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(tok + "\n")
    return tok


def cost_model(cfg: Config, threads: int, progress=None) -> ks.sched.CostModel:
    if cfg.cost == "paper":
        return ks.sched.CostModel.from_paper()
    if cfg.cost != "measure":
        return ks.sched.CostModel.load(cfg.cost)
    import hashlib
    tag = hashlib.sha256(cfg.params.to_bytes()).hexdigest()[:16]
    path = cfg.data / f"cost-{tag}-{threads}.json"
    if path.exists():
        return ks.sched.CostModel.load(str(path))
    cm = ks.sched.CostModel.measure(cfg.params, max_threads=threads, reps=1, progress=progress)
    cm.save(str(path))
    return cm


class Metrics:
    """Counters and the latencies of the last 1000 jobs (acceptance to end, seconds)."""

    def __init__(self):
        self.started = time.time()
        self.accepted = self.completed = self.failed = self.rejected = 0
        self.latency = collections.deque(maxlen=1000)
        self.run_s = collections.deque(maxlen=100)
        self.ends = collections.deque(maxlen=100000)

    def ended(self, e: Ended, latency_s: float) -> None:
        self.completed += e.error is None
        self.failed += e.error is not None
        self.latency.append(latency_s)
        self.run_s.append(e.run_ms / 1000)
        self.ends.append(time.time())

    def jobs_per_second(self, window_s: float = 60.0) -> float:
        now = time.time()
        span = min(window_s, now - self.started)
        return sum(1 for t in self.ends if t >= now - window_s) / span if span > 0 else 0.0

    def latency_ms(self) -> dict:
        if not self.latency:
            return {"count": 0}
        a = np.asarray(self.latency) * 1000
        return {"count": int(a.size), "p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
                "p99": float(np.percentile(a, 99)), "mean": float(a.mean())}


class Service:
    def __init__(self, cfg: Config, backend=None):
        self.cfg = cfg
        self.ctx = ks.Context(cfg.params)
        self.store = Store(cfg.data)
        self.admin = admin_token(cfg)
        self.metrics = Metrics()
        self._lock = threading.Lock()
        self._submitting = threading.Lock()  # submissions with an idempotency key: one at a time
        self.in_flight = 0
        self._evaluators: collections.OrderedDict[str, ks.Evaluator] = collections.OrderedDict()
        self._waiters: dict[int, list[asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._collector: threading.Thread | None = None
        self.backend = backend
        self.recovered = 0

    # --- life cycle ---
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self.backend is None:
            if self.cfg.executor == "ray":
                from kasoku.distributed import RayBackend
                cost = self.cfg.cost if self.cfg.cost in ("measure", "paper") else ks.sched.CostModel.load(self.cfg.cost)
                self.backend = RayBackend(self.cfg.params, address=self.cfg.ray_address, policy=self.cfg.policy,
                                          cost=cost)  # measure: each node times itself
            else:
                threads = ks.hardware_threads() if self.cfg.threads == 0 else self.cfg.threads
                self.backend = LocalBackend(cost_model(self.cfg, threads), threads, self.cfg.policy)
        for jid, client, _ in self.store.unfinished():  # accepted before a restart: run again
            self.in_flight += 1
            self.metrics.accepted += 1
            try:
                self.backend.submit(self._job(jid, client, self.store.request_path(jid).read_bytes()))
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
        if self.backend:
            self.backend.close()
        self.store.close()

    def _collect(self) -> None:
        while not self._stop.is_set():
            for e in self.backend.poll(0.2):
                self._ended(e)

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
        with self._lock:
            if kid in self._evaluators:
                self._evaluators.move_to_end(kid)
                return self._evaluators[kid]
        keys = ks.EvaluationKeys.from_bytes(self.ctx, self.store.key_path(kid).read_bytes())
        ev = self.ctx.evaluator(keys)
        with self._lock:
            self._evaluators[kid] = ev
            while len(self._evaluators) > self.cfg.key_cache:
                self._evaluators.popitem(last=False)
        return ev

    def _job(self, jid: int, client: str, body: bytes) -> Job:
        """The job of a request body, checked against its key set (LookupError: not one of this client's)."""
        spec, blobs = wire.parse_job(body)
        kid = spec.keys
        if self.store.keys_of(client, kid) is None:
            raise LookupError(f"unknown key set {kid!r}: register it first (POST /v1/keys)")
        blobs = {n: bytes(b) for n, b in zip(spec.inputs, blobs)}
        inputs = {n: ks.Ciphertext.from_bytes(self.ctx, b) for n, b in blobs.items()}
        if spec.computation is not None:
            level = inputs["x"].level
            c = spec.computation
            graph = (ks.sched.maclaurin_exp(order=c["order"], level=level) if c["name"] == "exp"
                     else ks.sched.bsgs_polynomial(degree=c["degree"], level=level))
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
            self.backend.submit(job)
        except BaseException:
            if job.jid:
                self.store.discard(job.jid)
            with self._lock:
                self.in_flight -= 1
            raise
        with self._lock:
            self.metrics.accepted += 1
        return job.jid

    def retry_after(self) -> float:
        """Seconds until a slot is likely free: the recent mean run time per job over the executor's threads."""
        run = float(np.mean(self.metrics.run_s)) if self.metrics.run_s else 1.0
        threads = max(1, getattr(self.backend, "threads", 1))
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


async def _body(request: Request, limit: int) -> bytes:
    cl = request.headers.get("content-length")
    if cl is not None and (not cl.isdigit() or int(cl) > limit):
        raise HTTPException(413, f"the body exceeds the limit of {limit} bytes")
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise HTTPException(413, f"the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(cfg: Config, backend=None) -> FastAPI:
    from contextlib import asynccontextmanager
    from starlette.concurrency import run_in_threadpool

    svc = Service(cfg, backend)

    @asynccontextmanager
    async def lifespan(app):
        await run_in_threadpool(svc.start, asyncio.get_running_loop())
        yield
        await run_in_threadpool(svc.stop)

    app = FastAPI(title="kasoku", version=ks.__version__, lifespan=lifespan,
                  description="Encrypted computation (CKKS) as a service: register evaluation keys, submit jobs of "
                              "encrypted inputs, fetch encrypted results. Bodies are kasoku envelopes "
                              "(docs/SERVING.md); every request but /health carries 'Authorization: Bearer <token>'.")
    app.state.service = svc

    def client_of(request: Request) -> str:
        auth = request.headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else ""
        cid = svc.store.client_of(token) if token else None
        if cid is None:
            raise HTTPException(401, "missing or unknown token: send 'Authorization: Bearer <token>' "
                                     "(POST /v1/clients with the admin token makes one)",
                                headers={"WWW-Authenticate": "Bearer"})
        return cid

    @app.get("/health", summary="Liveness: 200 while the server takes requests")
    async def health():
        return {"status": "ok", "version": ks.__version__}

    @app.get("/metrics", summary="Queue length, latency percentiles, jobs per second, executor state")
    async def metrics(request: Request):
        client_of(request)
        m = svc.metrics
        with svc._lock:
            body = {"queue_length": svc.in_flight, "capacity": cfg.capacity, "accepted": m.accepted,
                    "completed": m.completed, "failed": m.failed, "rejected_busy": m.rejected,
                    "recovered_after_restart": svc.recovered, "jobs_per_second_60s": m.jobs_per_second(),
                    "latency_ms": m.latency_ms(), "uptime_s": time.time() - m.started}
        body.update(svc.backend.status())
        return body

    @app.post("/v1/clients", summary="Make a client and its token (admin token required)", status_code=201)
    async def new_client(request: Request):
        auth = request.headers.get("authorization", "")
        if not secrets.compare_digest(auth.encode(), f"Bearer {svc.admin}".encode()):
            raise HTTPException(401, "this needs the admin token (in the server's data directory: admin_token)",
                                headers={"WWW-Authenticate": "Bearer"})
        cid, token = await run_in_threadpool(svc.store.add_client)
        return {"client": cid, "token": token}

    @app.get("/v1/params", summary="The server's CKKS parameters (Parameters.to_bytes)", responses=BINARY_RESULT)
    async def params(request: Request):
        client_of(request)
        return Response(cfg.params.to_bytes(), media_type=OCTETS)

    @app.post("/v1/keys", summary="Register an evaluation key set (EvaluationKeys.to_bytes, zstd allowed)",
              status_code=201, openapi_extra=BINARY_BODY)
    async def add_keys(request: Request):
        cid = client_of(request)
        body = await _body(request, cfg.max_keys_bytes)

        def load():
            keys = ks.EvaluationKeys.from_bytes(svc.ctx, body)
            kid = svc.store.add_keys(cid, body, keys.has_relin, list(keys.galois_elements))
            return svc.store.keys_of(cid, kid)
        try:
            return await run_in_threadpool(load)
        except ERRORS_400 as e:
            raise HTTPException(400, f"the key set cannot be read: {e}") from None

    @app.post("/v1/jobs", status_code=202,
              summary="Submit a job (a job envelope: kasoku.service.wire); with an Idempotency-Key header, a repeated "
                      "submission returns the job the first one made",
              openapi_extra=BINARY_BODY,
              responses={429: {"description": "the queue is full: retry after Retry-After seconds"}})
    async def submit(request: Request):
        cid = client_of(request)
        body = await _body(request, cfg.max_job_bytes)
        key = request.headers.get("idempotency-key")
        if key is not None and not 0 < len(key) <= 128:
            raise HTTPException(400, "the Idempotency-Key header must have 1..128 characters")
        try:
            jid = await run_in_threadpool(svc.submit, cid, body, key)
        except Busy as b:
            return JSONResponse({"detail": "the job queue is full: retry later", "retry_after": b.retry_after},
                                status_code=429, headers={"Retry-After": str(max(1, math.ceil(b.retry_after)))})
        except LookupError as e:
            raise HTTPException(404, str(e)) from None
        except ERRORS_400 as e:
            raise HTTPException(400, str(e)) from None
        except ERRORS_422 as e:
            raise HTTPException(422, f"the job cannot run: {e}") from None
        return {"job": jid, "status": "queued"}

    def job_of(cid: str, jid: int) -> dict:
        rec = svc.store.job(cid, jid)
        if rec is None:
            raise HTTPException(404, f"no job {jid} of this client")
        return rec

    @app.get("/v1/jobs/{jid}", summary="A job's status: queued, done or failed")
    async def status(request: Request, jid: JobId):
        return job_of(client_of(request), jid)

    @app.get("/v1/jobs/{jid}/result", responses={**BINARY_RESULT, 202: {"description": "not ended yet"},
                                                  422: {"description": "the job failed"}},
             summary="A job's outputs (waits up to `wait` seconds for it to end)")
    async def result(request: Request, jid: JobId, wait: float = Query(0.0, ge=0, le=300)):
        cid = client_of(request)
        rec = job_of(cid, jid)
        if rec["status"] == "queued" and wait > 0:
            waiter = asyncio.ensure_future(svc.wait(jid, wait))
            await asyncio.sleep(0)  # registered before the status is read again
            rec = job_of(cid, jid)
            if rec["status"] == "queued":
                await waiter
                rec = job_of(cid, jid)
            else:
                waiter.cancel()
        if rec["status"] == "done":
            return Response(await run_in_threadpool(svc.store.result, jid), media_type=OCTETS)
        if rec["status"] == "failed":
            raise HTTPException(422, f"job {jid} failed: {rec['error']}")
        return JSONResponse(rec, status_code=202)

    @app.delete("/v1/jobs/{jid}", summary="Forget an ended job and its result", status_code=204)
    async def delete(request: Request, jid: JobId):
        cid = client_of(request)
        rec = job_of(cid, jid)
        if rec["status"] == "queued":
            raise HTTPException(409, f"job {jid} has not ended")
        svc.store.delete(cid, jid)
        return Response(status_code=204)

    return app


def openapi() -> dict:
    """The HTTP API's OpenAPI description (the same for every configuration)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        app = create_app(Config(data=Path(d), params=ks.Parameters.named("T12"), admin_token="-"))
        spec = app.openapi()
        app.state.service.store.close()
    return spec


def main(args) -> int:
    """python -m kasoku serve (arguments in __main__.py)."""
    if args.write_openapi:
        import json
        Path(args.write_openapi).write_text(json.dumps(openapi(), indent=1, sort_keys=True) + "\n")
        return 0
    import uvicorn

    params = (ks.Parameters.from_bytes(Path(args.params_file).read_bytes()) if args.params_file
              else ks.Parameters.named(args.params))
    cfg = Config(data=Path(args.data), params=params, threads=args.threads, policy=args.policy, capacity=args.capacity,
                 max_job_bytes=args.max_job_mb << 20, cost=args.cost, executor=args.executor,
                 ray_address=args.ray_address)
    admin_token(cfg)
    print(f"kasoku serve: {params!r}, executor {cfg.executor}, capacity {cfg.capacity} jobs, data in {cfg.data}; "
          f"admin token in {cfg.data / 'admin_token'} (ks.Client.register(url, admin_token) makes a client)", flush=True)
    uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level=args.log_level)
    return 0
