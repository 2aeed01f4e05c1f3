"""Hoisted rotations and trace-type functions with kasoku.

    .venv/bin/python examples/trace.py

1. rotate_hoisted: several rotations of one ciphertext share one decomposition (ModUp);
2. rotate_sum_hoisted: their sum is taken before ModDown, so one ModDown serves all of them;
3. sum_slots: partial and total slot sums, as repeated doubling (h = M) or unrolled (h < M, one hoisted sum
   per group of doubling steps), with h picked by the measured cost model when not given;
4. the three key-switching steps by hand: decompose -> inner_product_lazy -> mod_down.
"""

import time

import numpy as np

import kasoku as ks

params = ks.Parameters(
    log_n=13, first_bits=60, scale_bits=40, levels=3, special_bits=60, special_primes=1, security=None
)  # small and fast; use ks.Parameters.named("H16") for 128-bit security
ctx = ks.Context(params)
M = params.log_n - 1  # doubling steps of a total sum: log2(slots)

# Keys: a few rotations, the keys sum_slots needs with its default h, and those of repeated doubling (h = M).
keys = ctx.keygen(
    rotations=[1, 2, 3, 4], conjugation=True, sum_slots=True, galois_elements=ks.trace_galois_elements(params, M, M)
)
ev = ctx.evaluator(keys.evaluation())

x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
ct = ctx.encrypt(x, keys.public)


def err(ct, want):
    return float(np.max(np.abs(ctx.decrypt(ct, keys.secret).real - want)))


# 1. list form
outs = ev.rotate_hoisted(ct, [1, 2, 3, 4])
print("rotate_hoisted, max error per step:", ["%.1e" % err(c, np.roll(x, -k)) for c, k in zip(outs, [1, 2, 3, 4])])

# 2. sum form (also with the conjugate: for real slots it adds x once more)
s = ev.rotate_sum_hoisted(ct, [1, 2, 3, 4], conjugate=True)
print("rotate_sum_hoisted error: %.1e" % err(s, sum(np.roll(x, -k) for k in [1, 2, 3, 4]) + x))

# 3. sums of slots
print(
    "sum_slots(count=8, h=3) error: %.1e" % err(ev.sum_slots(ct, count=8, h=3), sum(np.roll(x, -j) for j in range(8)))
)
steps = [ctx.galois_element(1 << i) for i in range(M)]
h = ev.choose_trace_h(steps)
print("cost model (ms):", {k: round(v, 3) if isinstance(v, float) else v for k, v in ev.keyswitch_costs().items()})
print(
    f"h chosen for the total sum: {h} of M = {M} (modelled {ev.model_trace_ms(M, h):.1f} ms vs "
    f"{ev.model_trace_ms(M, M):.1f} ms for repeated doubling)"
)
for label, hh in [("repeated doubling", M), ("unrolled, chosen h", None)]:
    t = time.perf_counter()
    total = ev.sum_slots(ct, h=hh)
    ms = (time.perf_counter() - t) * 1e3
    print(f"sum_slots, {label}: {ms:.1f} ms, error {err(total, x.sum()):.1e}")

# 4. the split steps
d = ev.decompose(ct)
lazy = ev.inner_product_lazy(d, ctx.galois_element(1)) + ev.inner_product_lazy(d, ctx.conjugation_element)
print("decompose -> inner_product_lazy (x2) -> mod_down error: %.1e" % err(ev.mod_down(lazy), np.roll(x, -1) + x))
