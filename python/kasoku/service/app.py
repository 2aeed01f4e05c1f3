"""The encrypted-compute service: python -m kasoku serve (docs/SERVING.md).

A client registers its evaluation keys once, submits jobs (a task graph of ks.sched, or a named computation, with its
input ciphertexts) and fetches their results. Jobs run under kasoku's scheduler (the online executor after Suzuki,
Ishimaki and Yamana's study) on this machine's cores, or on a Ray cluster (--executor ray). Every accepted job is
durable (store.py) before the server answers 202; a full queue answers 429 with Retry-After instead of growing. Each
client has its own token and sees only its own key sets and jobs. The server holds no secret key: it cannot decrypt what
it computes on.

Laid out as FastAPI projects are: settings (config.py), the service's logic apart from HTTP (core.py, metrics.py), the
JSON bodies (schemas.py), the dependencies (deps.py: the service, the calling client, the admin), the routes (routes/,
one module per resource), and here the application, the OpenAPI document and the command line.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

import kasoku as ks

from .core.config import Config, admin_token
from .core.service import Service

try:
    from fastapi import FastAPI
    from starlette.concurrency import run_in_threadpool

    from .api.routes import clients, jobs, keys, models, multiparty, system
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "the kasoku service needs FastAPI and uvicorn: pip install 'kasoku[serve]' (make venv installs them)"
    ) from e

__all__ = ["Config", "create_app", "from_env", "main", "openapi"]


def create_app(cfg: Config, executor=None) -> FastAPI:
    """The application of a configuration (executor: a JobExecutor to use instead of the configured one)."""
    svc = Service(cfg, executor)

    @asynccontextmanager
    async def lifespan(app):
        await run_in_threadpool(svc.start, asyncio.get_running_loop())
        yield
        await run_in_threadpool(svc.stop)

    app = FastAPI(
        title="kasoku",
        version=ks.__version__,
        lifespan=lifespan,
        description="Encrypted computation (CKKS) as a service: register evaluation keys, submit jobs of "
        "encrypted inputs, fetch encrypted results. Bodies are kasoku envelopes "
        "(docs/SERVING.md); every request but /health carries 'Authorization: Bearer <token>'.",
    )
    app.state.service = svc
    for r in (system.router, clients.router, keys.router, models.router, jobs.router, multiparty.router):
        app.include_router(r)
    return app


def from_env() -> FastAPI:
    """The application configured by KASOKU_* environment variables (KASOKU_DATA, KASOKU_PARAMS, KASOKU_THREADS, ...:
    the fields of Config), for a deployment that starts uvicorn itself: uvicorn --factory kasoku.service.app:from_env.
    Raises ks.ParameterError naming the variables that are missing or wrong."""
    from pydantic import ValidationError

    try:
        cfg = Config()
    except ValidationError as e:
        wrong = "; ".join(f"KASOKU_{str(x['loc'][0]).upper()}: {x['msg']}" for x in e.errors())
        raise ks.ParameterError(f"the service's settings from the environment: {wrong}") from None
    admin_token(cfg)
    return create_app(cfg)


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

    params = (
        ks.Parameters.from_bytes(Path(args.params_file).read_bytes())
        if args.params_file
        else ks.Parameters.named(args.params)
    )
    cfg = Config(
        data=Path(args.data),
        params=params,
        threads=args.threads,
        policy=args.policy,
        capacity=args.capacity,
        max_job_bytes=args.max_job_mb << 20,
        cost=args.cost,
        executor=args.executor,
        ray_address=args.ray_address,
    )
    admin_token(cfg)
    print(
        f"kasoku serve: {params!r}, executor {cfg.executor}, capacity {cfg.capacity} jobs, data in {cfg.data}; "
        f"admin token in {cfg.data / 'admin_token'} (ks.Client.register(url, admin_token) makes a client)",
        flush=True,
    )
    uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level=args.log_level)
    return 0
