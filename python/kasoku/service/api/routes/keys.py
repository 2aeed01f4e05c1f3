from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

import kasoku as ks

from ... import schemas
from ...core.service import ERRORS_400
from ..deps import ClientId, ServiceDep, read_body
from ...schemas import BINARY_BODY, BINARY_RESULT, OCTETS

router = APIRouter(prefix="/v1", tags=["keys"])


@router.get(
    "/params",
    summary="The server's CKKS parameters (Parameters.to_bytes)",
    response_class=Response,
    responses=BINARY_RESULT,
)
def params(svc: ServiceDep, _: ClientId):
    return Response(svc.cfg.params.to_bytes(), media_type=OCTETS)


@router.post(
    "/keys",
    summary="Register an evaluation key set (EvaluationKeys.to_bytes, zstd allowed)",
    status_code=201,
    response_model=schemas.KeySet,
    openapi_extra=BINARY_BODY,
)
async def add_keys(request: Request, svc: ServiceDep, cid: ClientId):
    body = await read_body(request, svc.cfg.max_keys_bytes)

    def load():
        keys = ks.EvaluationKeys.from_bytes(svc.ctx, body)
        kid = svc.store.add_keys(cid, body, keys.has_relin, list(keys.galois_elements))
        return svc.store.keys_of(cid, kid)

    try:
        return await run_in_threadpool(load)
    except ERRORS_400 as e:
        raise HTTPException(400, f"the key set cannot be read: {e}") from None
