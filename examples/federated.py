#!/usr/bin/env python3
"""Federated statistics through the encrypted-compute service: N hospitals, no one holds the key, t of N decrypt.

The service (`python -m kasoku serve`, started here on loopback) is the aggregator: it draws the session's common
reference string, collects the parties' public key shares and sums them into the collective public, relinearisation
and rotation keys (it never holds a secret), then runs the analysis as a task graph on the hospitals' encrypted
columns: the mean and the variance of a lab value over all patients, and one gradient of a logistic-regression loss
at a public model. The encrypted results come back; any t hospitals decrypt them together (Shamir shares of their
secrets, exchanged between the hospitals, not through the server), with smudging noise sized for 40-bit statistical
security (docs/MULTIPARTY.md). examples/multiparty.py is the same analysis without a server.

    python examples/federated.py [--parties 3] [--threshold 2] [--patients 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

import kasoku as ks
from kasoku import multiparty as mp
from kasoku.service.process import ServerProcess

# sigmoid(z) ~ 0.5 + 0.197 z - 0.004 z^3 on [-8, 8] (a cubic least-squares fit, as in examples/multiparty.py)
SIGMOID = (0.5, 0.197, 0.0, -0.004)
FEATURE_DIVISOR = 32.0  # the features travel divided by this, so that a sum over all patients stays below q_0 / scale


def slot_sum(g: ks.sched.Graph, node: int, slots: int) -> int:
    """The sum of all slots in every slot: log2(slots) rotations and additions (no level)."""
    step = 1
    while step < slots:
        node = g.add(node, g.rotate(node, step))
        step *= 2
    return node


def analysis(parties: int, level: int, slots: int, total: int, w: np.ndarray) -> ks.sched.Graph:
    """The server's task graph. Inputs per hospital i: lab{i} (its lab values / 10 in its own slots), x{i}_{j} (feature
    j / 32) and y{i} (outcomes 0/1). Outputs: mean, variance and, per feature, minus the gradient's sum (the
    client negates it: a subtraction would cost a level here)."""
    g = ks.sched.Graph()

    def pooled(name: str) -> int:  # the hospitals' ciphertexts: each fills its own slots, zeros elsewhere
        node = g.input(f"{name}1", level)
        for i in range(2, parties + 1):
            node = g.add(node, g.input(f"{name}{i}", level))
        return node

    lab = pooled("lab")
    mean = g.multiply_plain(slot_sum(g, lab, slots), 1.0 / total)
    second = g.multiply_plain(slot_sum(g, g.square(lab), slots), 1.0 / total)
    g.output(mean, "mean")
    g.output(g.add(second, g.multiply_plain(g.square(mean), -1.0)), "variance")
    # z = w . x (times 32 back) and, for sigmoid(z) = 0.5 + z (0.197 - 0.004 z^2), zs = sqrt(0.004) z alongside;
    # minus the residual: (0.004 z^2 - 0.197) z + y - 0.5 = y - sigmoid(z).
    cols = [pooled(f"x{j}_") for j in range(len(w))]
    y = pooled("y")
    c3 = np.sqrt(-SIGMOID[3])

    def dot(scale: float) -> int:
        node = g.multiply_plain(cols[0], FEATURE_DIVISOR * w[0] * scale)
        for j in range(1, len(w)):
            node = g.add(node, g.multiply_plain(cols[j], FEATURE_DIVISOR * w[j] * scale))
        return node

    z, zs = dot(1.0), dot(c3)
    neg_r = g.add_plain(g.add(g.multiply(g.add_plain(g.square(zs), -SIGMOID[1]), z), y), -SIGMOID[0])
    for j, c in enumerate(cols):
        g.output(slot_sum(g, g.multiply(neg_r, c), slots), f"neg_grad{j}")
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, default=3)
    ap.add_argument("--threshold", type=int, default=2)
    ap.add_argument("--patients", type=int, default=1000, help="per hospital")
    args = ap.parse_args()
    # 128-bit parameters whose levels are 55 bits: the smudged decryption needs a large scale (docs/MULTIPARTY.md).
    params = ks.Parameters(log_n=14, first_bits=60, scale_bits=55, levels=4, special_bits=60, special_primes=2)
    if args.parties * args.patients > params.n // 2:
        ap.error(f"{args.parties} x {args.patients} patients do not fit the {params.n // 2} slots")
    rng = np.random.default_rng(7)
    # Per hospital: 3 standardized features (age, BMI, HbA1c) and an outcome from a logistic model; a lab value.
    features = [rng.normal(0.1 * i, 1.0, (args.patients, 3)) for i in range(args.parties)]
    truth = np.array([0.8, -0.5, 1.2])
    labels = [(rng.random(args.patients) < 1 / (1 + np.exp(-(f @ truth)))).astype(float) for f in features]
    lab = [5.5 + 1.2 * f[:, 2] for f in features]  # HbA1c in percent
    w = np.array([0.5, -0.2, 0.6])  # the public model of this training step

    with tempfile.TemporaryDirectory() as data:
        path = f"{data}/params.bin"
        with open(path, "wb") as f:
            f.write(params.to_bytes())
        server = ServerProcess(data, "--params-file", path, "--cost", "paper").start()
        try:
            t0 = time.perf_counter()
            # One client per hospital (each would run on its own machine) and one for the analyst.
            hospitals = [ks.Client.register(server.url, server.admin_token) for _ in range(args.parties)]
            analyst = ks.Client.register(server.url, server.admin_token)
            sid, _ = analyst.open_multiparty(parties=args.parties, threshold=args.threshold)
            ctx = analyst.context()
            parties = [mp.Party(ctx, c.join_multiparty(sid), i) for i, c in enumerate(hospitals, 1)]
            session = hospitals[0].join_multiparty(sid)
            for c, p in zip(hospitals, parties):
                c.send_share(sid, p.public_key_share())
                c.send_share(sid, p.relin_round1())
            r1 = analyst.multiparty_relin_round1(sid, ctx)
            steps = [1 << k for k in range(int(np.log2(ctx.slots)))]
            for c, p in zip(hospitals, parties):
                c.send_share(sid, p.relin_round2(r1))
                for s in steps:
                    c.send_share(sid, p.galois_key_share(ctx.galois_element(s)))
            pk = analyst.multiparty_public_key(sid, ctx)
            keys = analyst.multiparty_keys(sid)  # the collective evaluation keys, summed on the server
            inbox: dict[int, list[mp.Share]] = {p.id: [] for p in parties}
            for p in parties:  # Shamir shares, hospital to hospital (never through the server)
                for share in p.shamir_shares():
                    inbox[share.recipient].append(share)
            for p in parties:
                p.receive_shamir_shares(inbox[p.id])
            sent = sum(c.bytes_sent for c in hospitals) / 1e6
            print(
                f"{args.parties} hospitals, threshold {args.threshold}: collective keys through the server in "
                f"{time.perf_counter() - t0:.1f} s ({sent:.0f} MB of shares sent, compressed)"
            )

            # Each hospital encrypts its columns in its own slots under the collective public key.
            def column(i: int, values: np.ndarray) -> ks.Ciphertext:
                v = np.zeros(ctx.slots)
                v[i * args.patients : (i + 1) * args.patients] = values
                return ctx.encrypt(v, pk)

            inputs = {}
            for i in range(args.parties):
                inputs[f"lab{i + 1}"] = column(i, lab[i] / 10.0)
                inputs[f"y{i + 1}"] = column(i, labels[i])
                for j in range(3):
                    inputs[f"x{j}_{i + 1}"] = column(i, features[i][:, j] / FEATURE_DIVISOR)
            total = args.parties * args.patients
            graph = analysis(args.parties, ctx.user_level, ctx.slots, total, w)
            t1 = time.perf_counter()
            out = analyst.run(inputs, keys, ctx, graph=graph)
            print(f"the server's analysis: {len(graph)} tasks in {time.perf_counter() - t1:.1f} s")

            # Any t hospitals decrypt each result together.
            group = list(range(1, args.threshold + 1))

            def decrypt(ct: ks.Ciphertext) -> float:
                shares = [parties[i - 1].decryption_share(ct, group=group) for i in group]
                return float(mp.decrypt(ctx, session, ct, shares)[0].real)

            bits = mp.decryption_precision_bits(ctx, session, out["mean"].scale, len(group))
            print(f"  the smudging leaves about {bits:.1f} bits")
            values = np.concatenate(lab)
            print(f"mean:     encrypted {decrypt(out['mean']) * 10:.4f}   clear {values.mean():.4f}")
            print(f"variance: encrypted {decrypt(out['variance']) * 100:.4f}   clear {values.var():.4f}")
            grad = -np.array([decrypt(out[f"neg_grad{j}"]) for j in range(3)]) * FEATURE_DIVISOR / total
            X, Y = np.concatenate(features), np.concatenate(labels)
            clear = X.T @ (np.polynomial.polynomial.polyval(X @ w, SIGMOID) - Y) / total
            print(f"gradient: encrypted {np.round(grad, 4)}   clear {np.round(clear, 4)}")
            print(f"decrypted by hospitals {group} of {args.parties}; the server held public shares only")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
