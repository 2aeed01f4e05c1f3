"""The service's settings (Config: pydantic-settings, so that a deployment sets them as KASOKU_* environment variables,
python -m kasoku serve from its options) and the admin token derived from them."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings

import kasoku as ks


class Config(BaseSettings):
    model_config = ConfigDict(env_prefix="KASOKU_", arbitrary_types_allowed=True)

    data: Path = Field(description="the store: SQLite database, key sets, requests and results")
    params: ks.Parameters = Field(
        description="the CKKS parameters: a ks.Parameters, a preset's name (T12, H16, ...) or "
        "the path of a Parameters.to_bytes file"
    )
    threads: int = Field(0, ge=0, description="local executor: 0 = all cores")
    policy: str = "kasoku"
    capacity: int = Field(64, ge=1, description="accepted jobs not yet ended; beyond it: 429 retry later")
    max_job_bytes: int = Field(256 << 20, ge=1, description="a job request's body")
    max_keys_bytes: int = Field(4 << 30, ge=1, description="a key set's body")
    max_model_bytes: int = Field(1 << 30, ge=1, description="a model's body (a kasoku.nn plan)")
    cost: str = Field("measure", description="measure (cached in data), paper, or a CostModel JSON file")
    executor: str = Field("local", pattern="^(local|ray)$")
    ray_address: str | None = Field(
        None, description="executor ray: the cluster ('auto', 'ray://...', None: a local one)"
    )
    admin_token: str | None = Field(None, description="None: read data/admin_token, or make one there (mode 0600)")
    key_cache: int = Field(16, ge=1, description="key sets kept loaded")
    model_cache: int = Field(4, ge=1, description="models kept loaded (their transforms encoded)")

    @field_validator("params", mode="before")
    @classmethod
    def _parameters(cls, v):
        if isinstance(v, str):
            return ks.Parameters.from_bytes(Path(v).read_bytes()) if Path(v).is_file() else ks.Parameters.named(v)
        return v


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
