"""Models: kasoku.nn plans stored on the server (Plan.to_bytes; no secret in them), the evaluation keys made
for a plan's parameters, and jobs that run a model on an encrypted sample (POST /v1/jobs with "model": its id)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Path as PathParam, Request
from starlette.concurrency import run_in_threadpool
from typing import Annotated

import kasoku as ks

from ... import schemas
from ...core.models import info
from ...core.service import ERRORS_400
from ..deps import ClientId, ServiceDep, read_body
from ...schemas import BINARY_BODY

router = APIRouter(prefix="/v1/models", tags=["models"])

ModelId = Annotated[
    str, PathParam(pattern=r"^m[0-9a-f]{16}$", description="the model's id, as POST /v1/models answered it")
]


def _own(svc, cid: str, mid: str) -> None:
    if svc.store.model_of(cid, mid) is None:
        raise HTTPException(404, f"no model {mid} of this client")


@router.post(
    "",
    summary="Store a model: a kasoku.nn plan (Plan.to_bytes), checked and loaded",
    status_code=201,
    response_model=schemas.Model,
    openapi_extra=BINARY_BODY,
)
async def add_model(request: Request, svc: ServiceDep, cid: ClientId):
    body = await read_body(request, svc.cfg.max_model_bytes)
    try:
        return await run_in_threadpool(svc.models.add, cid, body)
    except ERRORS_400 as e:
        raise HTTPException(400, f"the model cannot be read: {e}") from None
    except ks.ParameterError as e:
        raise HTTPException(422, f"the model cannot run here: {e}") from None


@router.get(
    "/{mid}", summary="A stored model: its input, outputs, levels and the keys it needs", response_model=schemas.Model
)
def get_model(svc: ServiceDep, cid: ClientId, mid: ModelId):
    _own(svc, cid, mid)
    return info(mid, svc.models.plan(mid))


@router.post(
    "/{mid}/keys",
    summary="Register an evaluation key set made for the model's parameters (plan.keygen().evaluation(), zstd "
    "allowed); checked to hold every key the model needs",
    status_code=201,
    response_model=schemas.KeySet,
    openapi_extra=BINARY_BODY,
)
async def add_model_keys(request: Request, svc: ServiceDep, cid: ClientId, mid: ModelId):
    body = await read_body(request, svc.cfg.max_keys_bytes)
    await run_in_threadpool(_own, svc, cid, mid)
    try:
        return await run_in_threadpool(svc.models.add_keys, cid, mid, body)
    except ERRORS_400 as e:
        raise HTTPException(400, f"the key set cannot be read for this model's parameters: {e}") from None
    except ks.MissingKeyError as e:
        raise HTTPException(422, str(e)) from None
