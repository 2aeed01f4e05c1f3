"""Multiparty CKKS from Python: collective keys, a computation, decryption by all and by t of N, a result switched
to one receiver, and the errors that bind shares to their session, party and protocol."""

import numpy as np
import pytest

import kasoku as ks
from kasoku import multiparty as mp


@pytest.fixture(scope="module")
def ctx():
    """N = 2^10, a 55-bit scale (room for the smudging noise), research parameters (no security claim)."""
    p = ks.Parameters(
        log_n=10, first_bits=60, scale_bits=55, levels=2, special_bits=60, special_primes=2, dnum=2, security=None
    )
    return ks.Context(p, threads=2)


def keys_of(ctx, session, parties, steps=(1,)):
    pk = mp.aggregate_public_key(ctx, session, [p.public_key_share() for p in parties])
    r1 = mp.aggregate_relin_round1(ctx, session, [p.relin_round1() for p in parties])
    rlk = mp.aggregate_relin_key(ctx, session, r1, [p.relin_round2(r1) for p in parties])
    galois = {}
    for s in steps:
        g = ctx.galois_element(s)
        galois[g] = mp.aggregate_galois_key(ctx, session, g, [p.galois_key_share(g) for p in parties])
    return pk, mp.evaluation_keys(ctx, session, rlk, galois)


def bits(got, want):
    return -np.log2(np.max(np.abs(np.asarray(got)[: len(want)] - want)))


def test_three_parties_compute_and_decrypt_together(ctx):
    session = mp.Session(parties=3)
    parties = [mp.Party(ctx, session, i) for i in (1, 2, 3)]
    pk, ek = keys_of(ctx, session, parties)
    ev = ctx.evaluator(ek)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    c = ev.rotate(ev.multiply(ctx.encrypt(x, pk), ctx.encrypt(y, pk)), 1)
    z = mp.decrypt(ctx, session, c, [p.decryption_share(c) for p in parties])
    left = mp.decryption_precision_bits(ctx, session, c.scale, 3)
    assert left - 4 < bits(z.real, np.roll(x * y, -1)) < left + 1  # the smudging is there, and only it
    # A session rebuilt from its public CRS is the same session.
    again = mp.Session(parties=3, crs=session.crs)
    assert again.key_id == session.key_id


def test_t_of_n_and_a_receiver(ctx):
    session = mp.Session(parties=4, threshold=2)
    parties = [mp.Party(ctx, session, i) for i in (1, 2, 3, 4)]
    pk, _ = keys_of(ctx, session, parties, steps=())
    inbox = {p.id: [] for p in parties}
    for p in parties:
        for share in p.shamir_shares():
            inbox[share.recipient].append(share)
    for p in parties:
        p.receive_shamir_shares(inbox[p.id])
        assert p.has_threshold_share
    x = np.random.default_rng(2).uniform(-1, 1, ctx.slots)
    c = ctx.encrypt(x, pk)
    for group in ([1, 3], [2, 4], [1, 2, 3]):
        z = mp.decrypt(ctx, session, c, [parties[i - 1].decryption_share(c, group=group) for i in group])
        assert bits(z.real, x) > mp.decryption_precision_bits(ctx, session, c.scale, len(group)) - 4
    with pytest.raises(ks.ParameterError, match="below the threshold"):
        parties[0].decryption_share(c, group=[1])
    # Switched to a receiver's key by a group of two: the receiver alone decrypts.
    receiver = ctx.keygen()
    out = mp.key_switch(
        ctx,
        session,
        c,
        receiver.public,
        [parties[i - 1].key_switch_share(c, receiver.public, group=[2, 3]) for i in (2, 3)],
    )
    assert bits(ctx.decrypt(out, receiver.secret).real, x) > 8


def test_shares_are_checked(ctx):
    session = mp.Session(parties=2)
    a, b = mp.Party(ctx, session, 1), mp.Party(ctx, session, 2)
    sa = a.public_key_share()
    with pytest.raises(ks.ParameterError, match="party 1 sent two shares"):
        mp.aggregate_public_key(ctx, session, [sa, sa])
    with pytest.raises(ks.ParameterError, match="every one of the 2"):
        mp.aggregate_public_key(ctx, session, [sa])
    with pytest.raises(ks.ParameterError, match="another session"):
        mp.aggregate_public_key(ctx, mp.Session(parties=2), [sa, b.public_key_share()])
    with pytest.raises(ks.ParameterError, match="not of public-key generation"):
        mp.aggregate_public_key(ctx, session, [sa, b.relin_round1()])
    with pytest.raises(ks.ParameterError, match="must be in 1..2"):
        mp.Party(ctx, session, 3)
    with pytest.raises(ks.ParameterError, match="crs must be 32 bytes"):
        mp.Session(parties=2, crs=b"short")
    other = ks.Context(ks.Parameters.named("T12"))
    with pytest.raises(ks.ParameterError, match="another context"):
        mp.aggregate_public_key(other, session, [sa, b.public_key_share()])


def test_shares_travel_as_bytes(ctx):
    """Parties in other processes send bytes: a share survives to_bytes/from_bytes, damaged bytes are refused."""
    session = mp.Session(parties=2)
    parties = [mp.Party(ctx, session, i) for i in (1, 2)]
    sent = [p.public_key_share().to_bytes(compression="zstd") for p in parties]
    pk = mp.aggregate_public_key(ctx, session, [mp.Share.from_bytes(ctx, b) for b in sent])
    x = np.linspace(-1, 1, ctx.slots)
    c = ctx.encrypt(x, pk)
    shares = [mp.Share.from_bytes(ctx, p.decryption_share(c).to_bytes()) for p in parties]
    assert shares[0].party == 1 and "decryption" in shares[0].protocol
    z = mp.decrypt(ctx, session, c, shares)
    assert bits(z.real, x) > mp.decryption_precision_bits(ctx, session, c.scale, 2) - 4
    bad = bytearray(sent[0])
    bad[len(bad) // 2] ^= 1
    with pytest.raises(ks.SerializationError):
        mp.Share.from_bytes(ctx, bytes(bad))
    with pytest.raises(ks.SerializationError):
        mp.Share.from_bytes(ctx, c.to_bytes())


def test_refresh_replaces_a_bootstrap(ctx):
    """One round of shares brings a level-1 product back to the top level; level 0 has no room for the masks."""
    session = mp.Session(parties=3)
    parties = [mp.Party(ctx, session, i) for i in (1, 2, 3)]
    pk, ek = keys_of(ctx, session, parties, steps=())
    ev = ctx.evaluator(ek)
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    sq = ev.square(ctx.encrypt(x, pk))
    fresh = mp.refresh(ctx, session, sq, [p.refresh_share(sq) for p in parties])
    assert fresh.level == ctx.max_level and sq.level == ctx.max_level - 1
    z = mp.decrypt(ctx, session, fresh, [p.decryption_share(fresh) for p in parties])
    assert bits(z.real, x * x) > mp.decryption_precision_bits(ctx, session, sq.scale, 3) - 4
    with pytest.raises(ks.ParameterError, match="leaves the mask"):
        parties[0].refresh_share(ev.square(sq))
