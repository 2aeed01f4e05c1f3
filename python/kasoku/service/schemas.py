"""The JSON bodies of the HTTP API (pydantic models: FastAPI validates the answers against them and describes them in
the OpenAPI document). Binary bodies are kasoku envelopes (wire.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

OCTETS = "application/octet-stream"
BINARY_BODY = {
    "requestBody": {"required": True, "content": {OCTETS: {"schema": {"type": "string", "format": "binary"}}}}
}
BINARY_RESULT = {
    200: {
        "content": {OCTETS: {"schema": {"type": "string", "format": "binary"}}},
        "description": "the envelope of the outputs (kasoku.service.wire)",
    }
}


class Health(BaseModel):
    status: str = Field(description="'ok' while the server takes requests")
    version: str = Field(description="kasoku's version")


class Latency(BaseModel):
    count: int = Field(description="jobs measured (the last 1000)")
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None


class Metrics(BaseModel):
    model_config = ConfigDict(extra="allow")  # and the executor's own fields (executor, threads, nodes, ...)

    queue_length: int = Field(description="accepted jobs not yet ended")
    capacity: int = Field(description="the most accepted jobs not yet ended; beyond it 429")
    accepted: int
    completed: int
    failed: int
    rejected_busy: int
    recovered_after_restart: int
    jobs_per_second_60s: float
    latency_ms: Latency = Field(description="acceptance to end, milliseconds")
    uptime_s: float
    executor: str = Field(description="local or ray")
    threads: int
    model_jobs_waiting: int = Field(0, description="model jobs queued behind the one running (models run one by one)")


class NewClient(BaseModel):
    client: str = Field(description="the client's id")
    token: str = Field(description="its bearer token (shown once: the server keeps only its hash)")


class KeySet(BaseModel):
    keys: str = Field(description="the key set's id, named by the jobs that use it")
    bytes: int
    relin: bool = Field(description="whether it holds the relinearisation key")
    galois_elements: list[int] = Field(description="the Galois elements of its rotation keys")


class Model(BaseModel):
    model: str = Field(description="the model's id, named by its key sets and jobs")
    input_shape: list[int] = Field(description="the sample's shape (plan.encrypt takes one sample)")
    outputs: int = Field(description="the logits' count")
    depth: int = Field(description="levels taken between bootstraps")
    bootstraps: int
    galois_elements: list[int] = Field(description="the Galois elements of the rotation keys it needs")
    plan: str = Field(description="the plan as repr(plan) describes it: its steps, levels and rotations")


class JobAccepted(BaseModel):
    job: int = Field(description="the job's id")
    status: str = Field(description="'queued'")


class JobStatus(BaseModel):
    job: int
    status: str = Field(description="queued, done or failed")
    submitted: float = Field(description="Unix time of acceptance")
    finished: float | None = Field(description="Unix time of the end (null while queued)")
    error: str | None = Field(description="why it failed (null unless failed)")
    request_bytes: int
    result_bytes: int | None
    runs: int = Field(description="1, more when a restart ran it again")


class Busy(BaseModel):
    detail: str
    retry_after: float = Field(description="seconds after which a slot is likely free (also the Retry-After header)")


class NewMultipartySession(BaseModel):
    parties: int = Field(description="N, the number of parties (2 or more)")
    threshold: int = Field(0, description="t: any t parties decrypt (2..N); 0: all N must")


class MultipartySession(BaseModel):
    session: str = Field(description="the session's id, which every party names")
    crs: str = Field(description="the common reference string (32 bytes, hex): public; ks.multiparty.Session(crs=...)")
    parties: int
    threshold: int
    key_id: int = Field(description="the key id of the collective keys and of every ciphertext under them")
    received: dict = Field(
        description="the parties whose shares the server holds, by step: public_key, relin_round1, relin_round2, "
        "and galois (by Galois element)"
    )
