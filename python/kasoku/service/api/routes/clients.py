from __future__ import annotations

from fastapi import APIRouter, Depends

from ... import schemas
from ..deps import ServiceDep, require_admin

router = APIRouter(prefix="/v1", tags=["clients"])


@router.post(
    "/clients",
    summary="Make a client and its token (admin token required)",
    status_code=201,
    response_model=schemas.NewClient,
    dependencies=[Depends(require_admin)],
)
def new_client(svc: ServiceDep):
    cid, token = svc.store.add_client()
    return {"client": cid, "token": token}
