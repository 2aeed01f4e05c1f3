from __future__ import annotations

import asyncio
import math

from fastapi import APIRouter, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ... import schemas, wire
from ...core.service import ERRORS_400, ERRORS_422, Busy
from ..deps import ClientId, JobId, JobRecord, ServiceDep, job_record, read_body
from ...schemas import BINARY_BODY, BINARY_RESULT, OCTETS

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post(
    "",
    status_code=202,
    response_model=schemas.JobAccepted,
    openapi_extra=BINARY_BODY,
    summary="Submit a job (a job envelope: kasoku.service.wire); with an Idempotency-Key header, a repeated "
    "submission returns the job the first one made",
    responses={
        413: {"description": "the body or the graph is larger than the service takes"},
        429: {"model": schemas.Busy, "description": "the queue is full: retry after Retry-After seconds"},
    },
)
async def submit(
    request: Request,
    svc: ServiceDep,
    cid: ClientId,
    idempotency_key: str | None = Header(None, min_length=1, max_length=128),
):
    body = await read_body(request, svc.cfg.max_job_bytes)
    try:
        jid = await run_in_threadpool(svc.submit, cid, body, idempotency_key)
    except Busy as b:
        return JSONResponse(
            {"detail": "the job queue is full: retry later", "retry_after": b.retry_after},
            status_code=429,
            headers={"Retry-After": str(max(1, math.ceil(b.retry_after)))},
        )
    except LookupError as e:
        raise HTTPException(404, str(e)) from None
    except wire.TooLarge as e:
        raise HTTPException(413, str(e)) from None
    except ERRORS_400 as e:
        raise HTTPException(400, str(e)) from None
    except ERRORS_422 as e:
        raise HTTPException(422, f"the job cannot run: {e}") from None
    return {"job": jid, "status": "queued"}


@router.get("/{jid}", summary="A job's status: queued, done or failed", response_model=schemas.JobStatus)
def status(rec: JobRecord):
    return rec


@router.get(
    "/{jid}/result",
    response_class=Response,
    responses={
        **BINARY_RESULT,
        202: {"model": schemas.JobStatus, "description": "not ended yet"},
        422: {"description": "the job failed"},
    },
    summary="A job's outputs (waits up to `wait` seconds for it to end)",
)
async def result(svc: ServiceDep, cid: ClientId, jid: JobId, wait: float = Query(0.0, ge=0, le=300)):
    rec = await run_in_threadpool(job_record, svc, cid, jid)
    if rec["status"] == "queued" and wait > 0:
        waiter = asyncio.ensure_future(svc.wait(jid, wait))
        await asyncio.sleep(0)  # registered before the status is read again
        rec = await run_in_threadpool(job_record, svc, cid, jid)
        if rec["status"] == "queued":
            await waiter
            rec = await run_in_threadpool(job_record, svc, cid, jid)
        else:
            waiter.cancel()
    if rec["status"] == "done":
        return Response(await run_in_threadpool(svc.store.result, jid), media_type=OCTETS)
    if rec["status"] == "failed":
        raise HTTPException(422, f"job {jid} failed: {rec['error']}")
    return JSONResponse(rec, status_code=202)


@router.delete("/{jid}", summary="Forget an ended job and its result", status_code=204, response_class=Response)
def delete(svc: ServiceDep, cid: ClientId, rec: JobRecord):
    if rec["status"] == "queued":
        raise HTTPException(409, f"job {rec['job']} has not ended")
    svc.store.delete(cid, rec["job"])
    return Response(status_code=204)
