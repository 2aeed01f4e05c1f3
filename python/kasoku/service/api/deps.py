"""The routes' dependencies: the service, the calling client (bearer token, checked against the store in FastAPI's
thread pool: it is SQLite), the admin, a job of the client's, and request bodies read within a size limit."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Path as PathParam, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..core.service import Service

bearer = HTTPBearer(
    auto_error=False, description="a client's token (POST /v1/clients makes one); the admin token for POST /v1/clients"
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(service)]


def _unauthorized(what: str) -> HTTPException:
    return HTTPException(401, what, headers={"WWW-Authenticate": "Bearer"})


def current_client(svc: ServiceDep, cred: Credentials) -> str:
    """The client whose token the request carries (401 otherwise)."""
    cid = svc.store.client_of(cred.credentials) if cred else None
    if cid is None:
        raise _unauthorized(
            "missing or unknown token: send 'Authorization: Bearer <token>' (POST /v1/clients with "
            "the admin token makes one)"
        )
    return cid


ClientId = Annotated[str, Depends(current_client)]


def require_admin(svc: ServiceDep, cred: Credentials) -> None:
    if cred is None or not secrets.compare_digest(cred.credentials.encode(), svc.admin.encode()):
        raise _unauthorized("this needs the admin token (in the server's data directory: admin_token)")


JobId = Annotated[int, PathParam(ge=1, le=2**62, description="the job's id, as POST /v1/jobs answered it")]


def job_record(svc: ServiceDep, cid: ClientId, jid: JobId) -> dict:
    """The client's job (404 for another client's or none)."""
    rec = svc.store.job(cid, jid)
    if rec is None:
        raise HTTPException(404, f"no job {jid} of this client")
    return rec


JobRecord = Annotated[dict, Depends(job_record)]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it exceeds `limit` bytes (declared or streamed)."""
    cl = request.headers.get("content-length")
    if cl is not None and (not cl.isdigit() or int(cl) > limit):
        raise HTTPException(413, f"the body exceeds the limit of {limit} bytes")
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise HTTPException(413, f"the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
