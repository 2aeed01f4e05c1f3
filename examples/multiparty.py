#!/usr/bin/env python3
"""Three hospitals pool a statistic without pooling their data, and no one holds the secret key.

Each hospital runs a ``Party`` (its secret share never leaves it); together they make the collective keys; each
encrypts its patients' values under the collective public key; a server (holding evaluation keys only) computes the
mean and the variance over all hospitals' values; any two of the three decrypt the result (threshold 2 of 3), with
smudging noise sized for 40-bit statistical security (docs/MULTIPARTY.md).

    python examples/multiparty.py [--parties 3] [--threshold 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kasoku as ks
from kasoku import multiparty as mp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, default=3)
    ap.add_argument("--threshold", type=int, default=2)
    args = ap.parse_args()
    # 128-bit parameters whose levels are 55 bits: the smudged decryption needs a large scale (docs/MULTIPARTY.md).
    params = ks.Parameters(log_n=14, first_bits=60, scale_bits=55, levels=3, special_bits=60, special_primes=2)
    ctx = ks.Context(params)
    n_values = 1000  # values per hospital: hospital i's in slots [i * 1000, (i + 1) * 1000)
    rng = np.random.default_rng(7)
    data = [rng.normal(5.5 + 0.3 * i, 1.2, n_values) for i in range(args.parties)]  # e.g. HbA1c in percent

    t0 = time.perf_counter()
    session = mp.Session(parties=args.parties, threshold=args.threshold)
    parties = [mp.Party(ctx, session, i) for i in range(1, args.parties + 1)]
    pk = mp.aggregate_public_key(ctx, session, [p.public_key_share() for p in parties])
    r1 = mp.aggregate_relin_round1(ctx, session, [p.relin_round1() for p in parties])
    rlk = mp.aggregate_relin_key(ctx, session, r1, [p.relin_round2(r1) for p in parties])
    steps = [1 << k for k in range(int(np.log2(ctx.slots)))]  # the rotations of a sum over all slots
    galois = {}
    for step in steps:
        g = ctx.galois_element(step)
        galois[g] = mp.aggregate_galois_key(ctx, session, g, [p.galois_key_share(g) for p in parties])
    inbox = {p.id: [] for p in parties}
    for p in parties:
        for share in p.shamir_shares():
            inbox[share.recipient].append(share)  # each to its recipient only
    for p in parties:
        p.receive_shamir_shares(inbox[p.id])
    print(f"{args.parties} parties, threshold {args.threshold}: collective keys in {time.perf_counter() - t0:.1f} s")

    # Each hospital encrypts its values in its own slots; the server adds the ciphertexts and computes.
    cts = []
    for i, values in enumerate(data):
        v = np.zeros(ctx.slots)
        v[i * n_values : (i + 1) * n_values] = values / 10.0  # values of order 1 in the slots
        cts.append(ctx.encrypt(v, pk))
    ev = ctx.evaluator(mp.evaluation_keys(ctx, session, rlk, galois))
    total = len(data) * n_values
    x = cts[0]
    for c in cts[1:]:
        x = ev.add(x, c)
    mean = ev.multiply_plain(ev.sum_slots(x, count=ctx.slots), 1.0 / total)
    second = ev.multiply_plain(ev.sum_slots(ev.square(x), count=ctx.slots), 1.0 / total)
    var = ev.sub(second, ev.square(mean))

    # Any two hospitals decrypt.
    group = list(range(1, args.threshold + 1))
    out = {}
    for name, ct in (("mean", mean), ("variance", var)):
        shares = [parties[i - 1].decryption_share(ct, group=group) for i in group]
        out[name] = mp.decrypt(ctx, session, ct, shares)[0].real
        bits = mp.decryption_precision_bits(ctx, session, ct.scale, len(group))
        print(f"  {name}: the smudging leaves about {bits:.1f} bits")
    all_values = np.concatenate(data)
    print(f"mean:     encrypted {out['mean'] * 10:.4f}   clear {all_values.mean():.4f}")
    print(f"variance: encrypted {out['variance'] * 100:.4f}   clear {all_values.var():.4f}")
    print(f"decrypted by parties {group} of {args.parties}")


if __name__ == "__main__":
    main()
