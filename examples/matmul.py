"""Encrypted matrix products (Jiang et al., seed 003): four 16 x 16 products in one ciphertext, a rectangular
product, and a plaintext matrix times an encrypted vector. Run: .venv/bin/python examples/matmul.py"""

import time

import numpy as np

import kasoku as ks

ctx = ks.Context(ks.Parameters.named("M14"))  # N = 2^14, 4 levels of 40 bits: a product takes 3
rng = np.random.default_rng(7)

# g = 4 pairs of 16 x 16 matrices, packed V[g*j + i] = M_i[j // d][j % d] (and tiled over the 8192 slots)
d, g = 16, 4
enc = ks.MatrixEncoder(ctx, d, g)
keys = ctx.keygen(matmul=(d, g))  # exactly the Galois keys the product needs
ev = ctx.evaluator(keys.evaluation())
A, B = rng.random((g, d, d)), rng.random((g, d, d))
ca, cb = enc.encrypt(A, keys.public), enc.encrypt(B, keys.public)  # the client encrypts
t0 = time.perf_counter()
cc, counts = ks.matmul(ev, ca, cb, return_counts=True)  # the server multiplies (evaluation keys only)
ms = (time.perf_counter() - t0) * 1e3
C = enc.decrypt(cc, keys.secret)  # the client decrypts: g arrays of d x d
err = max(np.abs(C[i] - A[i] @ B[i]).max() for i in range(g))
print(
    f"{g} products of {d} x {d} in one ciphertext: {ms:.0f} ms (first call encodes the transforms), "
    f"max error {err:.1e}, level {ca.level} -> {cc.level}, counts {counts}"
)

# rectangular: 4 x 16 times 16 x 16 (rows must divide d): 4 of the d steps, then 2 rotations sum the row blocks
renc = ks.MatrixEncoder(ctx, d, 1, rows=4)
rkeys = ctx.keygen(matmul=(d, 1, 4))
rev = ctx.evaluator(rkeys.evaluation())
L, R = rng.random((4, d)), rng.random((d, d))
rc = ks.matmul(rev, renc.encrypt(L, rkeys.public), renc.encrypt(R, rkeys.public))
print(f"rectangular {rc.shape}: max error {np.abs(renc.decrypt(rc, rkeys.secret)[0] - L @ R).max():.1e}")

# a plaintext matrix times an encrypted vector: baby-step giant-step diagonals, hoisted baby steps
n = 64
m = rng.uniform(-1, 1, (n, n))
lt = ks.LinearTransform(ctx, m)  # 127 diagonals, encoded once at the top level
lkeys = ctx.keygen(galois_elements=lt.galois_elements())
x = rng.uniform(-1, 1, n)
y = ctx.evaluator(lkeys.evaluation()).apply(lt, ctx.encrypt(x, lkeys.public))
print(
    f"matrix-vector product: {len(lt.baby_steps)} baby and {len(lt.giant_steps)} giant steps for "
    f"{lt.diagonal_count} diagonals, max error {np.abs(ctx.decrypt(y, lkeys.secret)[:n].real - m @ x).max():.1e}"
)
