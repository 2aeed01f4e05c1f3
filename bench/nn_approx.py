"""The error of a plan's approximations alone: kasoku.nn's plan evaluated in plain arithmetic (Plan.forward_clear: its
affine maps and the polynomials it evaluates, no encryption) against the PyTorch model, for each ReLU eps asked. This
separates what the activations' approximations cost from what the encryption and its bootstraps add (bench/nn_peers.py
measures the two together).

    .venv/bin/python bench/nn_approx.py --models ResNet20 ResNet32 --eps 1/64 1/256 --images 20 --out run.jsonl

One JSON line per network and eps: bootstraps, the user levels chosen and the keys' bytes, compile seconds, the logit
error max / mean, its largest ratio to an image's logit range, the decisions taken as the clear model's, and for each
other decision the clear model's gap between its two largest logits (a near tie flips under any small error). The
networks and inputs are bench/nn_peers.py's (the same training, seeds and random CIFAR-shaped inputs for the
ResNets)."""

from __future__ import annotations

import argparse
import fractions
import pathlib
import sys
import tempfile

import harness
import nn_networks
import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["ResNet20"], choices=list(nn_networks.ORION_CONFIG))
    ap.add_argument("--eps", nargs="+", default=["1/64", "1/256"], help="ReLU eps values, e.g. 1/64 (fractions)")
    ap.add_argument("--bits", type=int, default=10, help="relu_bits")
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--out", help="append the JSON lines here too")
    a = ap.parse_args()

    import torch

    import kasoku.nn as ksnn

    with tempfile.TemporaryDirectory(prefix="kasoku-nn-") as tmp:
        work = pathlib.Path(tmp)
        nn_networks.train_all(work, a.models, a.epochs)
        for name in a.models:
            net, data = nn_networks.load_trained(work, name)
            x = data["x_test"][: a.images]
            with torch.no_grad():
                want = net(x).numpy()
            top2 = np.sort(want, axis=1)[:, -2:]
            for eps_text in a.eps:
                eps = float(fractions.Fraction(eps_text))
                secs, plan = harness.timed(
                    lambda eps=eps: ksnn.compile(
                        net,
                        x[:1],
                        calibration=data["x_cal"],
                        threads=a.threads,
                        relu_eps=eps,
                        relu_bits=a.bits,
                        max_encoded_bytes=0,  # nothing encoded is needed in plain arithmetic
                    )
                )
                got = np.array([plan.forward_clear(x[i]) for i in range(len(x))])
                err = np.abs(got - want).max(axis=1)
                flipped = np.nonzero(got.argmax(1) != want.argmax(1))[0]
                harness.emit(
                    {
                        "model": name,
                        "relu_eps": eps_text,
                        "relu_bits": a.bits,
                        "images": len(x),
                        "bootstraps": plan.bootstraps,
                        "user_levels": plan.params.levels,
                        "key_bytes": plan.key_bytes(),
                        "compile_s": round(secs, 1),
                        "logit_err_max": float(err.max()),
                        "logit_err_mean": float(err.mean()),
                        "err_per_range_max": float((err / (want.max(axis=1) - want.min(axis=1))).max()),
                        "same_decision": int(len(x) - len(flipped)),
                        "flipped_gaps": [float(top2[i, 1] - top2[i, 0]) for i in flipped],
                    },
                    a.out,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
