"""Multiparty key generation through the service (kasoku.multiparty, docs/MULTIPARTY.md): the server draws a session's
CRS, keeps the parties' public key shares and aggregates them into the collective public key, the round-1 sum of the
relinearisation key and the evaluation keys, which become a key set of the caller's for jobs. It never holds a secret:
decryption, refresh and Shamir shares go between the parties, not through it (it would learn the results)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

import kasoku as ks
from kasoku import multiparty as mp

from ... import schemas
from ...core.service import ERRORS_400
from ...schemas import BINARY_BODY, BINARY_RESULT, OCTETS
from ..deps import ClientId, ServiceDep, read_body

router = APIRouter(prefix="/v1/multiparty", tags=["multiparty"])

# The steps the server aggregates, by the protocol name a share carries.
STEPS = {
    "public-key generation (CKG)": "public_key",
    "relinearisation-key generation, round 1 (RKG)": "relin_round1",
    "relinearisation-key generation, round 2 (RKG)": "relin_round2",
    "Galois-key generation (GKG)": "galois",
}


def _session(svc, sid: str) -> tuple[dict, "mp.Session"]:
    rec = svc.store.mp_session(sid)
    if rec is None:
        raise HTTPException(404, f"no multiparty session {sid}")
    return rec, mp.Session(parties=rec["parties"], threshold=rec["threshold"], crs=rec["crs"])


def _status(svc, rec: dict, session: "mp.Session") -> dict:
    steps: dict = {"public_key": [], "relin_round1": [], "relin_round2": [], "galois": {}}
    for step, tag, party in svc.store.mp_shares(rec["session"]):
        if step == "galois":
            steps["galois"].setdefault(str(tag), []).append(party)
        else:
            steps[step].append(party)
    for v in [steps["public_key"], steps["relin_round1"], steps["relin_round2"], *steps["galois"].values()]:
        v.sort()
    return {
        "session": rec["session"],
        "crs": rec["crs"].hex(),
        "parties": rec["parties"],
        "threshold": rec["threshold"],
        "key_id": session.key_id,
        "received": steps,
    }


def _combine(fn, *args):
    """An aggregation of the parties' shares; shares that do not combine (a party's share of the wrong shape) are the
    parties' error, 422."""
    try:
        return fn(*args)
    except ks.ParameterError as e:
        raise HTTPException(422, f"the shares do not combine: {e}") from None


def _load(svc, rec: dict, step: str, tag: int = 0) -> list:
    """Every party's share of a step, or 409 naming the parties still missing."""
    have = sorted(p for s, t, p in svc.store.mp_shares(rec["session"]) if s == step and t == tag)
    missing = [p for p in range(1, rec["parties"] + 1) if p not in have]
    if missing:
        raise HTTPException(409, f"waiting for the {step} shares of parties {missing}")
    return [
        mp.Share.from_bytes(svc.ctx, svc.store.mp_share_path(rec["session"], step, tag, p).read_bytes()) for p in have
    ]


def _aggregated(svc, sid: str, aggregate, step: str) -> Response:
    """The session's shares of a one-round step combined by `aggregate`, as the bytes of what it makes."""
    rec, session = _session(svc, sid)
    return Response(_combine(aggregate, svc.ctx, session, _load(svc, rec, step)).to_bytes(), media_type=OCTETS)


@router.post(
    "",
    summary="Open a multiparty session (the server draws its CRS)",
    status_code=201,
    response_model=schemas.MultipartySession,
)
def open_session(body: schemas.NewMultipartySession, svc: ServiceDep, cid: ClientId):
    try:
        session = mp.Session(parties=body.parties, threshold=body.threshold)
    except ks.ParameterError as e:
        raise HTTPException(422, str(e)) from None
    sid = svc.store.add_mp_session(cid, session.crs, session.parties, session.threshold)
    return _status(svc, svc.store.mp_session(sid), session)


@router.get(
    "/{sid}", summary="A session: its CRS and which parties sent which shares", response_model=schemas.MultipartySession
)
def session_status(sid: str, svc: ServiceDep, _: ClientId):
    return _status(svc, *_session(svc, sid))


@router.put(
    "/{sid}/shares",
    summary="A party's key share (Share.to_bytes): public key, relinearisation rounds, Galois",
    status_code=201,
    response_model=schemas.MultipartySession,
    openapi_extra=BINARY_BODY,
)
async def put_share(sid: str, request: Request, svc: ServiceDep, _: ClientId):
    body = await read_body(request, svc.cfg.max_keys_bytes)
    rec, session = _session(svc, sid)

    def keep():
        try:
            share = mp.Share.from_bytes(svc.ctx, body)
        except ERRORS_400 as e:
            raise HTTPException(400, f"the share cannot be read: {e}") from None
        if share.session != session.key_id:
            raise HTTPException(400, "the share belongs to another session (another CRS)")
        if not 1 <= share.party <= session.parties:
            raise HTTPException(400, f"party {share.party} is not one of the session's {session.parties}")
        step = STEPS.get(share.protocol)
        if step is None:
            raise HTTPException(
                400,
                f"the service aggregates key shares only, not a share of {share.protocol}: decryption, refresh "
                "and Shamir shares go between the parties (the server would learn what they protect)",
            )
        tag = share.tag if step == "galois" else 0
        if not svc.store.add_mp_share(sid, step, tag, share.party, body):
            raise HTTPException(409, f"party {share.party} already sent its {step} share")
        return _status(svc, rec, session)

    return await run_in_threadpool(keep)


@router.get(
    "/{sid}/public_key",
    summary="The collective public key (PublicKey.to_bytes), once every party sent its share",
    response_class=Response,
    responses=BINARY_RESULT,
)
def public_key(sid: str, svc: ServiceDep, _: ClientId):
    return _aggregated(svc, sid, mp.aggregate_public_key, "public_key")


@router.get(
    "/{sid}/relin_round1",
    summary="The sum of the parties' round-1 shares (Share.to_bytes), for round 2",
    response_class=Response,
    responses=BINARY_RESULT,
)
def relin_round1(sid: str, svc: ServiceDep, _: ClientId):
    return _aggregated(svc, sid, mp.aggregate_relin_round1, "relin_round1")


@router.post(
    "/{sid}/keys",
    summary="The collective evaluation keys, kept as a key set of the caller's for jobs",
    status_code=201,
    response_model=schemas.KeySet,
)
async def keys(sid: str, svc: ServiceDep, cid: ClientId):
    rec, session = _session(svc, sid)

    def make():
        total = mp.aggregate_relin_round1(svc.ctx, session, _load(svc, rec, "relin_round1"))
        rlk = mp.aggregate_relin_key(svc.ctx, session, total, _load(svc, rec, "relin_round2"))
        tags = sorted({t for s, t, _ in svc.store.mp_shares(sid) if s == "galois"})
        galois = {g: mp.aggregate_galois_key(svc.ctx, session, g, _load(svc, rec, "galois", g)) for g in tags}
        ek = mp.evaluation_keys(svc.ctx, session, rlk, galois)
        data = ek.to_bytes(compression="zstd")
        kid = svc.store.add_keys(cid, data, True, sorted(galois))
        return svc.store.keys_of(cid, kid)

    return await run_in_threadpool(_combine, make)
