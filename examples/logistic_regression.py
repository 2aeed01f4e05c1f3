"""Encrypted logistic-regression inference with kasoku.

    .venv/bin/python examples/logistic_regression.py               # scikit-learn's breast-cancer data if present
    .venv/bin/python examples/logistic_regression.py --synthetic   # generated data (no scikit-learn needed)

A client holds patient records; a server holds a trained model (w, b) and must not see the records. The client
encrypts each feature column (slot i = sample i), the server computes sigmoid(w . x_i + b) for every sample at once
(one linear combination with one rescale, then the logistic function as a Chebyshev series), and the client decrypts
the probabilities. Accuracy against the plaintext model is printed.
"""

import argparse
import math
import time

import numpy as np

import kasoku as ks


def load(synthetic: bool, samples: int, features: int, seed: int):
    """(features, labels, name): breast-cancer data from scikit-learn, or two overlapping Gaussian classes."""
    if not synthetic:
        try:
            from sklearn.datasets import load_breast_cancer  # type: ignore[import-untyped]

            data = load_breast_cancer()
            return data.data, data.target.astype(float), "scikit-learn breast cancer (569 samples, 30 features)"
        except ImportError:
            print("scikit-learn is not installed: using generated data (pip install scikit-learn for the real set)")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, samples).astype(float)
    centers = rng.normal(0, 1, (2, features))
    x = centers[y.astype(int)] * 0.6 + rng.normal(0, 1, (samples, features))
    return x, y, f"generated ({samples} samples, {features} features, two Gaussian classes)"


def train(x, y, steps=2000, lr=0.5, l2=1e-2):
    """Plain logistic regression by gradient descent (the model the server holds)."""
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= lr * (x.T @ (p - y) / len(y) + l2 * w)
        b -= lr * float(np.mean(p - y))
    return w, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synthetic", action="store_true", help="generated data instead of scikit-learn's")
    ap.add_argument("--samples", type=int, default=1000, help="generated data: samples")
    ap.add_argument("--features", type=int, default=10, help="generated data: features")
    args = ap.parse_args()

    x, y, name = load(args.synthetic, args.samples, args.features, seed=1)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    split = int(0.7 * len(y))
    train_idx, test_idx = order[:split], order[split:]
    mean, std = x[train_idx].mean(axis=0), x[train_idx].std(axis=0) + 1e-12
    xs = (x - mean) / std  # the model owner's standardisation, part of the model
    w, b = train(xs[train_idx], y[train_idx])
    x_test, y_test = xs[test_idx], y[test_idx]
    plain_prob = 1 / (1 + np.exp(-(x_test @ w + b)))

    # The sigmoid's interval: a bound on |w . x + b| the model owner knows from the training scores (with a margin);
    # wider intervals need a higher degree for the same precision.
    bound = 1.25 * float(np.max(np.abs(xs[train_idx] @ w + b)))
    half = max(8.0, 2.0 ** math.ceil(math.log2(bound)))
    degree = 63 if half <= 16 else 127
    sigmoid_depth = ks.chebyshev(lambda t: 1 / (1 + np.exp(-t)), (-half, half), degree).depth
    params = ks.Parameters.for_circuit(depth=1 + sigmoid_depth, precision_bits=20, slots=len(test_idx))
    print(f"data: {name}; {len(test_idx)} test samples")
    print(f"model: {x.shape[1]} weights; sigmoid on [-{half:g}, {half:g}] at degree {degree} ({sigmoid_depth} levels)")
    print(f"parameters: {params}")

    ctx = ks.Context(params)
    keys = ctx.keygen()  # client side: the secret key stays here
    t0 = time.perf_counter()
    columns = [ctx.encrypt(x_test[:, j], keys.public) for j in range(x_test.shape[1])]
    t_enc = time.perf_counter() - t0

    ev = ctx.evaluator(keys.evaluation())  # server side: evaluation keys only
    t0 = time.perf_counter()
    score = ev.linear_combination(columns, w, constant=b)  # w . x + b for every sample, one rescale
    prob = ev.sigmoid(score, interval=(-half, half), degree=degree)
    t_eval = time.perf_counter() - t0

    enc_prob = ctx.decrypt(prob, keys.secret).real[: len(test_idx)]  # client side
    plain_pred, enc_pred = plain_prob > 0.5, enc_prob > 0.5
    print(
        f"encrypt {len(columns)} columns: {t_enc:.2f} s; encrypted inference (score + sigmoid): {t_eval:.2f} s, "
        f"{prob.level} levels left"
    )
    print(f"max |encrypted - plaintext| probability: {np.max(np.abs(enc_prob - plain_prob)):.2e}")
    print(
        f"accuracy: plaintext model {np.mean(plain_pred == y_test):.4f}, encrypted inference "
        f"{np.mean(enc_pred == y_test):.4f}; predictions that differ: {int(np.sum(plain_pred != enc_pred))}"
    )


if __name__ == "__main__":
    main()
