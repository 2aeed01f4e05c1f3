"""Multiparty CKKS: several data owners, no single secret key, t of N to decrypt (docs/MULTIPARTY.md).

Each party runs a :class:`Party` where its data lives; its secret share never leaves it.  What it sends are
:class:`Share` objects, which the aggregation functions here combine (anyone may run them: a service, one of the
parties).  A session of three parties, the keys a server needs, a computation and a decryption by all three::

    import kasoku as ks
    from kasoku import multiparty as mp

    ctx = ks.Context(ks.Parameters.named("H16"))
    session = mp.Session(parties=3)                      # its crs is public: send it to every party
    parties = [mp.Party(ctx, session, i) for i in (1, 2, 3)]
    pk = mp.aggregate_public_key(ctx, session, [p.public_key_share() for p in parties])
    r1 = mp.aggregate_relin_round1(ctx, session, [p.relin_round1() for p in parties])
    rlk = mp.aggregate_relin_key(ctx, session, r1, [p.relin_round2(r1) for p in parties])
    g = ctx.galois_element(1)
    gk = mp.aggregate_galois_key(ctx, session, g, [p.galois_key_share(g) for p in parties])
    ev = ctx.evaluator(mp.evaluation_keys(ctx, session, rlk, {g: gk}))

    a, b = ctx.encrypt(x, pk), ctx.encrypt(y, pk)       # anyone encrypts under the collective key
    c = ev.rotate(ev.multiply(a, b), 1)                  # the server computes
    z = mp.decrypt(ctx, session, c, [p.decryption_share(c) for p in parties])

Thresholds: ``mp.Session(parties=N, threshold=t)``; each party sends ``p.shamir_shares()`` (one per party,
``share.recipient``) and receives the ones meant for it (``p.receive_shamir_shares(...)``); then any ``group`` of t
or more decrypts (``p.decryption_share(c, group=[1, 3])``).  ``key_switch_share`` / :func:`key_switch` hand a result
to one receiver's public key instead, and ``refresh_share`` / :func:`refresh` bring a ciphertext back to the top level
in one round (no bootstrapping keys).  Decryption and key-switching shares carry smudging noise sized for
``statistical_security`` bits (default 40): it costs precision, which :func:`decryption_precision_bits` states.
"""

from __future__ import annotations

from ._kasoku import multiparty as _m

Session = _m.Session
Share = _m.Share
Party = _m.Party
aggregate_public_key = _m.aggregate_public_key
aggregate_relin_round1 = _m.aggregate_relin_round1
aggregate_relin_key = _m.aggregate_relin_key
aggregate_galois_key = _m.aggregate_galois_key
evaluation_keys = _m.evaluation_keys
decrypt = _m.decrypt
key_switch = _m.key_switch
refresh = _m.refresh
decryption_precision_bits = _m.decryption_precision_bits
default_noise_bound = _m.default_noise_bound

__all__ = [
    "Session",
    "Share",
    "Party",
    "aggregate_public_key",
    "aggregate_relin_round1",
    "aggregate_relin_key",
    "aggregate_galois_key",
    "evaluation_keys",
    "decrypt",
    "key_switch",
    "refresh",
    "decryption_precision_bits",
    "default_noise_bound",
]
