from __future__ import annotations

from fastapi import APIRouter

import kasoku as ks

from ... import schemas
from ..deps import ClientId, ServiceDep

router = APIRouter(tags=["system"])


@router.get("/health", summary="Liveness: 200 while the server takes requests", response_model=schemas.Health)
async def health():
    return {"status": "ok", "version": ks.__version__}


@router.get(
    "/metrics",
    summary="Queue length, latency percentiles, jobs per second, executor state",
    response_model=schemas.Metrics,
)
def metrics(svc: ServiceDep, _: ClientId):
    return svc.snapshot()
