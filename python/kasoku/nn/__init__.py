"""kasoku.nn: encrypted inference of PyTorch models (docs/NN.md).

    import kasoku.nn as ksnn
    plan = ksnn.compile(model, example_input, calibration=train_batch)  # traces, packs, chooses parameters
    print(plan)                                                           # layers, levels, rotations, keys
    keys = plan.keygen()                                                  # client: secret, public, evaluation keys
    ct = plan.encrypt(x)                                                  # client: one sample like example_input
    out = plan.run(ct)                                                    # server: evaluation keys only
    logits = plan.decrypt(out)                                            # client
    shared = plan.decrypt(out, flood=True).values   # safe to share (compile(..., shareable=True))

The model is traced with torch.fx. The affine parts of its graph (Linear, Conv1d/2d with any stride, padding and
groups, BatchNorm in eval mode, AvgPool, AdaptiveAvgPool, Flatten, reshapes, constant scalings and shifts, residual
additions, concatenations) become one map each of the activations they read, found by probing with unit vectors in
float64, so BatchNorm folds into its neighbours for free; each costs one level. Activations: x^2 (and x * x, x ** 2)
exactly, one level; kasoku.nn.Polynomial as written; SiLU, GELU, sigmoid, tanh and softplus by Chebyshev
interpolation on the range the calibration data shows them (with a margin); ReLU by composed sign polynomials.
Bootstraps are placed where the levels run out. PyTorch is needed to compile (pip install 'kasoku[nn]').
"""

from __future__ import annotations

from .compiler import compile
from .ir import Activation, Affine, Bootstrap, ReluJoin  # noqa: F401 (the steps of plan.steps)
from .runtime import FloodedOutput, Plan, load
from .trace import Polynomial, Square

__all__ = ["compile", "load", "FloodedOutput", "Plan", "Polynomial", "Square"]
