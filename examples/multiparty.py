#!/usr/bin/env python3
"""Three hospitals pool statistics and a model's training step without pooling their data, and no one holds the key.

Each hospital runs a ``Party`` (its secret share never leaves it); together they make the collective keys; each
encrypts its patients' features and outcomes under the collective public key; a server (holding evaluation keys only)
computes the mean and the variance of a feature over all hospitals and the gradient of a logistic-regression loss at
the current (public) model; any two of the three decrypt the results (threshold 2 of 3), with smudging noise sized for
40-bit statistical security (docs/MULTIPARTY.md).

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
    params = ks.Parameters(log_n=14, first_bits=60, scale_bits=55, levels=4, special_bits=60, special_primes=2)
    ctx = ks.Context(params)
    n_values = 1000  # patients per hospital: hospital i's in slots [i * 1000, (i + 1) * 1000)
    rng = np.random.default_rng(7)
    # Per hospital: 3 standardized features (age, BMI, HbA1c) and an outcome (0/1) from a logistic model.
    features = [rng.normal(0.1 * i, 1.0, (n_values, 3)) for i in range(args.parties)]
    truth = np.array([0.8, -0.5, 1.2])
    labels = [(rng.random(n_values) < 1 / (1 + np.exp(-(f @ truth)))).astype(float) for f in features]
    data = [5.5 + 1.2 * f[:, 2] for f in features]  # HbA1c in percent, for the mean and variance

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
    inbox: dict[int, list[mp.Share]] = {p.id: [] for p in parties}
    for p in parties:
        for share in p.shamir_shares():
            inbox[share.recipient].append(share)  # each to its recipient only
    for p in parties:
        p.receive_shamir_shares(inbox[p.id])
    print(f"{args.parties} parties, threshold {args.threshold}: collective keys in {time.perf_counter() - t0:.1f} s")

    # Each hospital encrypts its columns in its own slots (zeros elsewhere); the server adds the hospitals' ciphertexts.
    def encrypt_column(i: int, column: np.ndarray) -> ks.Ciphertext:
        v = np.zeros(ctx.slots)
        v[i * n_values : (i + 1) * n_values] = column
        return ctx.encrypt(v, pk)

    ev = ctx.evaluator(mp.evaluation_keys(ctx, session, rlk, galois))

    def pooled(columns: list[np.ndarray]) -> ks.Ciphertext:
        cts = [encrypt_column(i, c) for i, c in enumerate(columns)]
        x = cts[0]
        for c in cts[1:]:
            x = ev.add(x, c)
        return x

    total = len(data) * n_values
    x = pooled([d / 10.0 for d in data])  # values of order 1 in the slots
    mean = ev.multiply_plain(ev.sum_slots(x, count=ctx.slots), 1.0 / total)
    second = ev.multiply_plain(ev.sum_slots(ev.square(x), count=ctx.slots), 1.0 / total)
    var = ev.sub(second, ev.square(mean))

    # One gradient step of logistic regression at the public model w: sum_k (sigmoid(w . x_k) - y_k) x_k, with
    # sigmoid(z) ~ 0.5 + 0.197 z - 0.004 z^3 (a cubic approximation on [-8, 8]); the server sees no x, y or result.
    # The features travel divided by 32, so that the sum of 3000 products stays far below the last level's modulus
    # (q_0 = 2^60 at a 2^55 scale holds values below 2^4); z takes w times 32.
    w = np.array([0.5, -0.2, 0.6])
    cols = [pooled([f[:, j] / 32 for f in features]) for j in range(3)]
    y = pooled(labels)
    z = ev.add(
        ev.add(ev.multiply_plain(cols[0], 32 * w[0]), ev.multiply_plain(cols[1], 32 * w[1])),
        ev.multiply_plain(cols[2], 32 * w[2]),
    )
    sigmoid = [0.5, 0.197, 0.0, -0.004]
    r = ev.sub(ev.evaluate_polynomial(z, sigmoid), y)
    grads = [ev.sum_slots(ev.multiply(r, c), count=ctx.slots) for c in cols]

    # Any two hospitals decrypt.
    group = list(range(1, args.threshold + 1))

    def decrypt(ct: ks.Ciphertext) -> float:
        shares = [parties[i - 1].decryption_share(ct, group=group) for i in group]
        return float(mp.decrypt(ctx, session, ct, shares)[0].real)

    out = {"mean": decrypt(mean), "variance": decrypt(var)}
    print(f"  the smudging leaves about {mp.decryption_precision_bits(ctx, session, mean.scale, len(group)):.1f} bits")
    all_values = np.concatenate(data)
    print(f"mean:     encrypted {out['mean'] * 10:.4f}   clear {all_values.mean():.4f}")
    print(f"variance: encrypted {out['variance'] * 100:.4f}   clear {all_values.var():.4f}")
    grad = np.array([decrypt(g) for g in grads]) * 32 / total
    X, Y = np.concatenate(features), np.concatenate(labels)
    clear = X.T @ (np.polynomial.polynomial.polyval(X @ w, sigmoid) - Y) / total
    print(f"gradient: encrypted {np.round(grad, 4)}   clear {np.round(clear, 4)}")
    print(f"decrypted by parties {group} of {args.parties}")


if __name__ == "__main__":
    main()
