"""ks.Client: the client of the encrypted-compute service (python -m kasoku serve; docs/SERVING.md).

    import kasoku as ks
    c = ks.Client.register("http://127.0.0.1:8000", admin_token)      # or ks.Client(url, token)
    ctx = c.context()                                                 # the server's parameters
    keys = ctx.keygen()                                               # the secret key stays here
    kid = c.register_keys(keys.evaluation())                          # uploaded once, compressed
    job = c.submit({"x": ctx.encrypt(x, keys.public)}, keys=kid, computation="exp")
    y = ctx.decrypt(c.result(job, ctx)["exp"], keys.secret)

The server only ever sees evaluation keys and ciphertexts. Needs httpx (pip install 'kasoku[serve]').
"""

from __future__ import annotations

import time
import uuid
from typing import Mapping

from kasoku import sched
from kasoku._kasoku import Ciphertext, Context, Parameters, PublicKey
from kasoku.errors import ParameterError, RetryLater, ServiceError
from kasoku.multiparty import Session, Share

from . import wire


def _httpx():
    try:
        import httpx
    except ImportError as e:
        raise ImportError("ks.Client needs httpx: pip install 'kasoku[serve]' (make venv installs it)") from e
    return httpx


def graph_dict(graph) -> dict:
    """A ks.sched.Graph as the job header's 'graph': each node's op, inputs and its operation's own fields
    (ks.sched.op_schema; constants as [re, im])."""
    schema = sched.op_schema()
    nodes = []
    for n in graph.nodes:
        d = {"op": n["op"], "inputs": list(n["inputs"])}
        for f in schema[n["op"]]["fields"]:
            v = n[f]
            d[f] = [complex(v).real, complex(v).imag] if f == "constant" else v
        nodes.append(d)
    return {"nodes": nodes, "outputs": [[i, name] for i, name in graph.outputs]}


class Client:
    """A client of one kasoku server, with its token. Methods raise ks.ServiceError (HTTP status and the server's
    reason) for a refused request, and ks.RetryLater when the server's queue is full (submit retries by itself
    until `retry_for` seconds have passed)."""

    def __init__(self, url: str, token: str, timeout: float = 60.0):
        httpx = _httpx()
        self.url, self.token = url.rstrip("/"), token
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        self.bytes_sent = self.bytes_received = 0  # request and response bodies
        self.retried_connections = 0

    @classmethod
    def register(cls, url: str, admin_token: str, timeout: float = 60.0) -> "Client":
        """A new client of the server (needs the server's admin token) and its own token (Client.token)."""
        httpx = _httpx()
        r = httpx.post(
            url.rstrip("/") + "/v1/clients", headers={"Authorization": f"Bearer {admin_token}"}, timeout=timeout
        )
        _check(r)
        return cls(url, r.json()["token"], timeout)

    @staticmethod
    def wait_for(url: str, timeout: float = 60.0) -> None:
        """Returns once the server at url answers /health; TimeoutError after `timeout` seconds."""
        httpx = _httpx()
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(url.rstrip("/") + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no kasoku server answers at {url} after {timeout} s")
            time.sleep(0.1)

    def close(self) -> None:
        """Closes the HTTP connection (the client is also a context manager)."""
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _send(self, method: str, path: str, content: bytes | None = None, **kw):
        r = self._http.request(method, path, content=content, **kw)
        self.bytes_sent += len(content or b"")
        self.bytes_received += len(r.content)
        _check(r)
        return r

    # --- the server ---
    def health(self) -> dict:
        """The server's liveness answer (GET /health)."""
        return self._send("GET", "/health").json()

    def metrics(self) -> dict:
        """The server's counters: jobs, latency percentiles, threads, executor (GET /metrics)."""
        return self._send("GET", "/metrics").json()

    def parameters(self):
        """The server's CKKS Parameters (GET /v1/params); context() makes a Context of them."""
        return Parameters.from_bytes(self._send("GET", "/v1/params").content)

    def context(self, threads: int = 0):
        """A context for the server's parameters (to make keys and encrypt here)."""
        return Context(self.parameters(), threads=threads)

    # --- keys and jobs ---
    def register_keys(self, keys, compression: str | None = "zstd") -> str:
        """Uploads an EvaluationKeys (no secret) once; returns the key set's id for submit(). Anything else (a KeyPair,
        a SecretKey) raises ParameterError before a byte is sent: the secret key stays on the client."""
        if not isinstance(keys, (bytes, bytearray)) and type(keys).__name__ != "EvaluationKeys":
            raise ParameterError(
                f"register_keys takes EvaluationKeys (keys.evaluation()) or their bytes, not a {type(keys).__name__}: "
                "the secret key never leaves the client"
            )
        data = keys if isinstance(keys, (bytes, bytearray)) else keys.to_bytes(compression=compression)
        return self._send("POST", "/v1/keys", bytes(data)).json()["keys"]

    def submit(
        self,
        inputs: Mapping,
        keys: str,
        graph=None,
        computation: str | dict | None = None,
        retry_for: float = 60.0,
        model: str | None = None,
    ) -> int:
        """Queues a job on the server: `graph` (a ks.sched.Graph), `computation` ("exp", {"name": "exp", "order":
        6}, {"name": "polynomial", "degree": 31}) or a stored `model` (its id) on `inputs` (name -> Ciphertext or its
        bytes; a model's is "x"). Returns the job's
        id. While the server answers "retry later" or cannot be reached (a restart), waits and tries again, for up
        to retry_for seconds (0: raise at once); every try carries the same Idempotency-Key, so a submission whose
        answer was lost is not accepted twice."""
        blobs = {
            k: (bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else v.to_bytes()) for k, v in inputs.items()
        }
        if isinstance(computation, str):
            computation = {"name": computation}
        body = wire.job_request(keys, blobs, graph_dict(graph) if graph is not None else None, computation, model)
        httpx = _httpx()
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        deadline = time.monotonic() + retry_for
        while True:
            try:
                return int(self._send("POST", "/v1/jobs", body, headers=headers).json()["job"])
            except RetryLater as e:
                if time.monotonic() + e.retry_after > deadline:
                    raise
                time.sleep(e.retry_after)
            except httpx.TransportError:
                if time.monotonic() + 0.5 > deadline:
                    raise
                time.sleep(0.5)
                self.retried_connections += 1

    # --- models (kasoku.nn) ---
    def store_model(self, plan) -> dict:
        """Stores a kasoku.nn plan (a Plan or its to_bytes(): no key in it) on the server, which checks and
        loads it; returns its record ("model": its id, the Galois elements its keys need, its description)."""
        data = plan if isinstance(plan, (bytes, bytearray)) else plan.to_bytes()
        return self._send("POST", "/v1/models", bytes(data)).json()

    def register_model_keys(self, model: str, keys, compression: str | None = "zstd") -> str:
        """Uploads the evaluation keys made for a model's parameters (plan.keygen().evaluation()); returns the key
        set's id for infer()."""
        data = keys if isinstance(keys, (bytes, bytearray)) else keys.to_bytes(compression=compression)
        return self._send("POST", f"/v1/models/{model}/keys", bytes(data)).json()["keys"]

    def infer(self, model: str, sample, keys: str, ctx=None, timeout: float = 300.0):
        """The stored model on an encrypted sample (plan.encrypt(x)): the encrypted logits, a Ciphertext of ctx (the
        plan's context, plan.ctx; plan.decrypt reads it, and plan.decrypt(..., flood=True) for logits to share), or
        their bytes when ctx is None."""
        out = self.result_bytes(self.submit({"x": sample}, keys, model=model), timeout)["logits"]
        return out if ctx is None else Ciphertext.from_bytes(ctx, out)

    # --- multiparty sessions (kasoku.multiparty; the server aggregates key shares, docs/MULTIPARTY.md) ---
    def open_multiparty(self, parties: int, threshold: int = 0):
        """Opens a session of `parties` parties on the server (it draws the CRS); returns (session id,
        ks.multiparty.Session). Every party joins with the id (join_multiparty) and runs its own Party."""
        d = self._send("POST", "/v1/multiparty", json={"parties": parties, "threshold": threshold}).json()
        return d["session"], self._session_of(d)

    def join_multiparty(self, session_id: str):
        """The ks.multiparty.Session of a session opened on the server (its public CRS, N and t)."""
        return self._session_of(self.multiparty_status(session_id))

    def multiparty_status(self, session_id: str) -> dict:
        """The session's CRS, N, t, key id and which parties sent which key shares (GET /v1/multiparty/{id})."""
        return self._send("GET", f"/v1/multiparty/{session_id}").json()

    def send_share(self, session_id: str, share) -> dict:
        """Sends this party's key share (public key, relinearisation round 1 or 2, Galois key) to the session;
        returns the session's status."""
        return self._send("PUT", f"/v1/multiparty/{session_id}/shares", share.to_bytes(compression="zstd")).json()

    def multiparty_public_key(self, session_id: str, ctx):
        """The collective public key, once every party sent its share (ServiceError 409 before, naming who is
        missing)."""
        return PublicKey.from_bytes(ctx, self._send("GET", f"/v1/multiparty/{session_id}/public_key").content)

    def multiparty_relin_round1(self, session_id: str, ctx):
        """The sum of every party's round-1 relinearisation share, which each party's relin_round2 takes."""
        return Share.from_bytes(ctx, self._send("GET", f"/v1/multiparty/{session_id}/relin_round1").content)

    def multiparty_keys(self, session_id: str) -> str:
        """Aggregates the collective relinearisation and Galois keys into a key set of this client's; returns its id
        for submit()."""
        return self._send("POST", f"/v1/multiparty/{session_id}/keys").json()["keys"]

    @staticmethod
    def _session_of(d: dict):
        return Session(parties=d["parties"], threshold=d["threshold"], crs=bytes.fromhex(d["crs"]))

    def status(self, job: int) -> dict:
        """A job's status without waiting for it (GET /v1/jobs/{job}): queued, done or failed."""
        return self._send("GET", f"/v1/jobs/{int(job)}").json()

    def result_bytes(self, job: int, timeout: float = 300.0) -> dict[str, bytes]:
        """The job's outputs as bytes, waiting up to `timeout` seconds for it to end (ServiceError 422 if it
        failed; TimeoutError if it has not ended). Rides over a server restart (the job is kept)."""
        httpx = _httpx()
        deadline = time.monotonic() + timeout
        status = "unknown"
        while True:
            wait = max(0.0, min(30.0, deadline - time.monotonic()))
            try:
                r = self._send(
                    "GET",
                    f"/v1/jobs/{int(job)}/result",
                    params={"wait": wait},
                    timeout=wait + self._http.timeout.read if self._http.timeout.read else None,
                )
                if r.status_code == 200:
                    return wire.parse_result(r.content)
                status = r.json().get("status", status)
            except httpx.TransportError:
                self.retried_connections += 1
                time.sleep(0.5)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job} has not ended after {timeout} s (status {status})")

    def result(self, job: int, ctx, timeout: float = 300.0) -> dict:
        """The job's outputs as Ciphertexts of ctx (the server's parameters)."""
        return {k: Ciphertext.from_bytes(ctx, v) for k, v in self.result_bytes(job, timeout).items()}

    def run(self, inputs: Mapping, keys: str, ctx, graph=None, computation=None, timeout: float = 300.0) -> dict:
        """submit() and result()."""
        return self.result(self.submit(inputs, keys, graph, computation), ctx, timeout)

    def delete(self, job: int) -> None:
        """Forgets an ended job and its result on the server."""
        self._send("DELETE", f"/v1/jobs/{int(job)}")


def _check(r) -> None:
    if r.status_code < 400:
        return
    try:
        body = r.json()
        detail = body.get("detail", r.text)
    except ValueError:
        body, detail = {}, r.text
    if r.status_code == 429:
        raise RetryLater(str(detail), float(body.get("retry_after", r.headers.get("retry-after", 1))))
    raise ServiceError(r.status_code, detail if isinstance(detail, str) else str(detail))


__all__ = ["Client", "graph_dict"]
