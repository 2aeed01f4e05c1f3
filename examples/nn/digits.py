"""Encrypted inference of a PyTorch network with kasoku.nn (docs/NN.md): Orion's MLP (or LoLA, LeNet5) trained in the
clear on scikit-learn's digits, compiled, and run on encrypted test images, the client and the server apart.

    .venv/bin/python examples/nn/digits.py [MLP|LoLA|LeNet5] [images]
"""

import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import kasoku as ks  # noqa: E402
import kasoku.nn as ksnn  # noqa: E402
from examples.nn import models  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "MLP"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
(x_train, y_train), (x_test, y_test) = models.digits()
net = models.train(getattr(models, name)(), x_train, y_train, epochs=10)
print(f"{name}: accuracy in the clear {models.accuracy(net, x_test, y_test):.3f}")

# The client compiles the model (its calibration data fixes the ranges); the plan holds no secret and travels as
# bytes, which the server loads without PyTorch (the encrypted-compute service stores it the same way: POST /v1/models).
client = ksnn.compile(net, x_test[:1], calibration=x_train[:256])
print(client)
keys = client.keygen()  # secret, public, relinearisation and exactly the rotation keys the plan needs

server = ksnn.load(client.to_bytes())
server.use(ks.EvaluationKeys.from_bytes(server.ctx, keys.evaluation().to_bytes()))  # what the client sends

worst, agree = 0.0, 0
for i in range(count):
    request = client.encrypt(x_test[i]).to_bytes()  # client -> server
    t = time.perf_counter()
    reply = server.run(ks.Ciphertext.from_bytes(server.ctx, request)).to_bytes()  # server -> client
    seconds = time.perf_counter() - t
    logits = client.decrypt(ks.Ciphertext.from_bytes(client.ctx, reply))
    clear = net(x_test[i : i + 1]).detach().numpy().reshape(-1)
    worst = max(worst, float(np.max(np.abs(logits - clear))))
    agree += int(logits.argmax() == clear.argmax())
    print(
        f"image {i}: label {int(y_test[i])}, encrypted says {logits.argmax()}, clear says {clear.argmax()} "
        f"({seconds:.3f} s)"
    )
print(f"{agree}/{count} decisions as in the clear; logits within {worst:.2e} of the clear model")
