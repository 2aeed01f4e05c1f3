#!/usr/bin/env python3
"""Multiparty CKKS, per protocol step: one party's time and share size, and the aggregation of N shares.

    .venv/bin/python bench/multiparty.py --params H15 H16 --parties 3 10 50 --json run.jsonl
    OMP_NUM_THREADS=1 bench/.venv-openfhe/bin/python bench/openfhe_multiparty.py \
        --params H15 H16 --parties 3 10 50 --json run.jsonl       # the peer, OpenFHE's threshold CKKS

Every party does the same work, so one party's step is timed (median of --reps) and the aggregation is timed on N
shares (the parties' shares made once: their count, not their values, sets the aggregation's cost).  The threshold
rows deal Shamir shares with t = N // 2 + 1.  Decryption and key-switching shares are timed with
statistical_security=0: the named sets' 2^40 scale leaves no bit to the default 40-bit smudging (docs/MULTIPARTY.md),
and the flood's width does not change the cost (one Gaussian draw per coefficient either way).
"""

from __future__ import annotations

import argparse
import statistics
import time

import harness
import numpy as np

import kasoku as ks
from kasoku import multiparty as mp


def median_s(fn, reps: int) -> tuple[float, object]:
    """The median time of fn over reps calls (harness.times) and the last call's result: the share measured."""
    last = [None]

    def call():
        last[0] = fn()

    return harness.median(call, reps), last[0]


def run(params: str, n_parties: int, reps: int, threads: int) -> list[dict]:
    ctx = ks.Context(ks.Parameters.named(params), threads=threads)
    t = n_parties // 2 + 1
    session = mp.Session(parties=n_parties, threshold=t)
    parties = [mp.Party(ctx, session, i) for i in range(1, n_parties + 1)]
    rows = []

    def step(name, party_fn, agg_fn=None, shares_fn=None):
        s, share = median_s(party_fn, reps)
        share0 = share[0] if isinstance(share, list) else share
        row = {
            "lib": "kasoku",
            "params": params,
            "parties": n_parties,
            "step": name,
            "party_s": s,
            "threads": threads,
            "share_bytes": share0.nbytes * (len(share) if isinstance(share, list) else 1),
        }
        if agg_fn:
            shares = shares_fn() if shares_fn else [share] * 0
            a, _ = median_s(lambda: agg_fn(shares), max(1, reps // 2))
            row["aggregate_s"] = a
        rows.append(row)
        harness.emit(row)
        return share

    g = ctx.galois_element(1)
    step(
        "public key (CKG)",
        parties[0].public_key_share,
        lambda sh: mp.aggregate_public_key(ctx, session, sh),
        lambda: [p.public_key_share() for p in parties],
    )
    r1 = [p.relin_round1() for p in parties]
    step(
        "relinearisation round 1 (RKG)",
        lambda: parties[0].relin_round1(),
        lambda sh: mp.aggregate_relin_round1(ctx, session, sh),
        lambda: r1,
    )
    r1 = [p.relin_round1() for p in parties]
    s1 = mp.aggregate_relin_round1(ctx, session, r1)
    r2 = [p.relin_round2(s1) for p in parties]

    def round2():  # round 1 first (it draws the ephemeral secret round 2 needs), outside the time
        parties[0].relin_round1()
        t0 = time.perf_counter()
        share = parties[0].relin_round2(s1)
        round2.seconds.append(time.perf_counter() - t0)
        return share

    round2.seconds = []
    step("relinearisation round 2 (RKG)", round2, lambda sh: mp.aggregate_relin_key(ctx, session, s1, sh), lambda: r2)
    rows[-1]["party_s"] = statistics.median(round2.seconds)
    step(
        "Galois key, one element (GKG)",
        lambda: parties[0].galois_key_share(g),
        lambda sh: mp.aggregate_galois_key(ctx, session, g, sh),
        lambda: [p.galois_key_share(g) for p in parties],
    )
    pk = mp.aggregate_public_key(ctx, session, [p.public_key_share() for p in parties])
    ct = ctx.encrypt(np.random.default_rng(1).uniform(-1, 1, ctx.slots), pk)
    flood = dict(statistical_security=0)
    step(
        "decryption share",
        lambda: parties[0].decryption_share(ct, **flood),
        lambda sh: mp.decrypt(ctx, session, ct, sh),
        lambda: [p.decryption_share(ct, **flood) for p in parties],
    )
    receiver = ctx.keygen(relin=False)
    step(
        "key switch to a receiver (PCKS)",
        lambda: parties[0].key_switch_share(ct, receiver.public, **flood),
        lambda sh: mp.key_switch(ctx, session, ct, receiver.public, sh),
        lambda: [p.key_switch_share(ct, receiver.public, **flood) for p in parties],
    )
    low = ctx.encrypt(np.random.default_rng(2).uniform(-1, 1, ctx.slots), pk, level=3)
    step(
        "refresh from level 3 (one round)",
        lambda: parties[0].refresh_share(low, **flood),
        lambda sh: mp.refresh(ctx, session, low, sh),
        lambda: [p.refresh_share(low, **flood) for p in parties],
    )
    step(f"Shamir dealing (t = {t}, all N shares)", parties[0].shamir_shares)
    for r in rows:
        r["machine"] = f"{harness.machine()}, simd {ks.simd_active()}"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", nargs="+", default=["H15", "H16"])
    ap.add_argument("--parties", nargs="+", type=int, default=[3, 10, 50])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for p in args.params:
        for n in args.parties:
            rows += run(p, n, args.reps, args.threads)
    if args.json:
        open(args.json, "w").close()
        for r in rows:
            harness.emit(r, args.json, echo=False)


if __name__ == "__main__":
    main()
