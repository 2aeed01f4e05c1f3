"""The service's settings (Config) and what is derived from them once: the admin token, the scheduler's cost model."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import kasoku as ks


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


def admin_token(cfg: Config) -> str:
    """The admin token: the configured one, or data/admin_token (made there, mode 0600, on first use)."""
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
    """The scheduler's cost model: the paper's, a file's, or measured on this machine (cached in the data directory
    per parameter set and thread count)."""
    if cfg.cost == "paper":
        return ks.sched.CostModel.from_paper()
    if cfg.cost != "measure":
        return ks.sched.CostModel.load(cfg.cost)
    tag = hashlib.sha256(cfg.params.to_bytes()).hexdigest()[:16]
    path = cfg.data / f"cost-{tag}-{threads}.json"
    if path.exists():
        return ks.sched.CostModel.load(str(path))
    cm = ks.sched.CostModel.measure(cfg.params, max_threads=threads, reps=1, progress=progress)
    cm.save(str(path))
    return cm
