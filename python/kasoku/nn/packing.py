"""Where values sit in the slots: the input's layout, and each affine step's packing (hybrid or layout) with its
diagonals."""

from __future__ import annotations

import math

import numpy as np

from .ir import Affine, pow2, SparseMatrix


def _hybrid(W: SparseMatrix, layout_in: np.ndarray, p_in: int, build: bool = True):
    """The hybrid packing: output slots 0..d_out-1, its diagonals (only their entries, offset, slot and value, unless
    `build`) and rotate-and-sum steps. Diagonal r < p holds, at slot s, the weight of output s mod p on the input at
    slot (s + r) mod q (the p_out x p_in matrix's rows repeated every p slots)."""
    d_out = W.shape[0]
    p = pow2(d_out)
    q = max(p, p_in)
    rows, cols, vals = W.nonzero()
    c = layout_in[cols]
    r = (c - rows) % p  # each weight on the one diagonal r < p that meets its input slot c in the block of s
    s = (c - r) % q
    sums = [p << i for i in range(int(math.log2(q // p)))]
    entries = (r, s, vals, q)
    return np.arange(d_out), p, _diagonals(*entries) if build else entries, sums


def _diagonals(offsets: np.ndarray, slots: np.ndarray, values: np.ndarray, length: int) -> dict:
    """{offset: the diagonal over `length` slots}, the values summed at their (offset, slot)."""
    order = np.argsort(offsets, kind="stable")
    offsets, slots, values = offsets[order], slots[order], values[order]
    uniq, starts = np.unique(offsets, return_index=True)
    diags = {}
    for r, a, b in zip(uniq.tolist(), starts, list(starts[1:]) + [len(offsets)]):
        d = np.zeros(length)
        np.add.at(d, slots[a:b], values[a:b])
        diags[int(r)] = d
    return diags


def _offsets(offsets: np.ndarray, slots: np.ndarray, values: np.ndarray, length: int) -> tuple[list, int]:
    """What summarize keeps of _diagonals(offsets, slots, values, length), from the entries alone (no dense diagonal:
    a wide step's are GB): the offsets of its diagonals with a nonzero value, and how many diagonals it makes. The
    values of one (offset, slot) are summed in the order _diagonals sums them, so the same ones are zero."""
    key = offsets.astype(np.int64) * length + slots
    uniq, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=values, minlength=len(uniq))
    r = uniq // length  # each (offset, slot)'s offset, sorted
    return np.unique(r[total != 0]).tolist(), len(np.unique(r))


def _layout(W: SparseMatrix, layout_in: np.ndarray, p_in: int, limit: int, zero: np.ndarray):
    """The layout packing (its output slots, period and its diagonals' entries, as _onto_entries), or None when the
    outputs share no pattern (a dense layer: the hybrid packing is cheaper). zero[s]: slot s of the input is known to
    hold 0 (no value is packed there and the steps before keep it 0)."""
    d_out = W.shape[0]
    rows, cols, _ = W.nonzero()
    starts = W.row_starts()  # the entries are sorted by row
    slots_of = [np.sort(layout_in[cols[starts[o] : starts[o + 1]]]) for o in range(d_out)]
    anchor = np.array([s[0] if s.size else 0 for s in slots_of])
    pattern_of = [tuple((s - s[0]).tolist()) if s.size else () for s in slots_of]
    distinct = sorted(set(pattern_of), key=len, reverse=True)
    if len(distinct) * 4 > d_out:
        return None
    # An output reading part of a larger pattern (a padded convolution's border) reads the larger one's diagonals, with
    # zero weights where its inputs are missing: it joins the larger pattern, its anchor moved back by its place in it.
    # Of the places it fits, the one whose missing inputs fall most on slots known to be 0 (the padding: the right one).
    roots: list[tuple] = []
    fits: dict[tuple, list] = {}  # pattern -> [(root, t, the root's offsets it lacks there)]
    for pat in distinct:
        pat_set = set(pat)
        fits[pat] = []
        for big in roots:
            if len(pat) >= len(big) or not pat:
                continue
            big_set = set(big)
            for t in (q - pat[0] for q in big):
                if all(v + t in big_set for v in pat):
                    fits[pat].append((big, t, np.array([q for q in big if q - t not in pat_set])))
        if not fits[pat]:
            roots.append(pat)
    canon, shift_back = [], np.zeros(d_out, dtype=np.int64)
    for o in range(d_out):
        pat = pattern_of[o]
        root, best = pat, None
        for big, t, missing in fits.get(pat, []):
            misses = int(np.count_nonzero(~zero[(anchor[o] - t + missing) % p_in]))
            if best is None or misses < best:
                root, shift_back[o], best = big, t, misses
        canon.append(root)
    virtual = anchor - shift_back
    # outputs of one pattern, the k-th of each anchor in the k-th group (a convolution's k-th channel)
    groups: dict[tuple, list[int]] = {}
    seen: dict[tuple, int] = {}
    for o in range(d_out):
        key = (canon[o], int(virtual[o]))
        k = seen.get(key, 0)
        seen[key] = k + 1
        groups.setdefault((key[0], k), []).append(o)
    if len(groups) * 4 > d_out:
        return None
    order = sorted(groups.items(), key=lambda kv: -len(kv[1]))

    def correlate(x, marks):  # c[s] = sum_i x[(marks_i + s) mod len(x)], for every s at once (FFT)
        ind = np.zeros(len(x))
        np.add.at(ind, marks % len(x), 1.0)
        return np.rint(np.fft.irfft(np.fft.rfft(x) * np.conj(np.fft.rfft(ind)), len(x)))

    def place(limit: int, fewest: bool):
        """Each group at the first free shift inside `limit` slots, or (fewest) at the free shift that adds the fewest
        diagonals to those of the groups placed before it, the first among equals: an output at virtual + shift reads
        virtual + root, so its offsets are root - shift, and channels whose inputs sit alike (a convolution after a
        convolution) share diagonals. None when a group finds no room."""
        out_slot = np.zeros(d_out, dtype=np.int64)
        used, present = np.zeros(limit), np.zeros(p_in)
        group_of = np.zeros(d_out, dtype=np.int64)
        for g, (_, outs) in enumerate(order):
            group_of[outs] = g
        entry_group = group_of[rows]
        for g, ((root, _), outs) in enumerate(order):
            a = virtual[outs]
            shifts = np.arange(-int(a.min()), limit - int(a.max()))  # those that keep the group inside
            if shifts.size == 0:
                return None
            free = np.flatnonzero(correlate(used, a)[shifts % limit] == 0)
            if free.size == 0:
                return None
            pick = free[0]
            if fewest and root and present.any():
                shared = correlate(present, np.asarray(root, dtype=np.int64))[(-shifts[free]) % p_in]
                pick = free[np.argmax(shared)]
            out_slot[outs] = a + shifts[pick]
            used[out_slot[outs]] = 1.0
            if fewest:
                mine = entry_group == g
                present[(layout_in[cols[mine]] - out_slot[rows[mine]]) % p_in] = 1.0
        return out_slot

    first = place(limit, False)
    if first is None:
        return None
    # the fewest diagonals within the period of the first-free placement (never a wider one: the ring depends on it)
    fewer = place(max(p_in, pow2(int(first.max()) + 1)), True)
    out_slot = first if fewer is None else fewer
    p_out = max(p_in, pow2(int(out_slot.max()) + 1))
    return out_slot, p_out, _onto_entries(W, layout_in, p_in, out_slot, p_out)


def pack_affine(step: Affine, slots: int, zero: np.ndarray) -> None:
    """Chooses the first input's packing with fewer rotations (about 2 sqrt(diagonals) for the BSGS, plus the
    rotate-and-sum), then reads the other inputs onto its output slots (_other_entries). Keeps each input's
    diagonals' offsets and count, not their values: diagonals_of rebuilds them from the weights, bit for bit, where
    they are needed (a large network's diagonals are GB; its weights a fraction)."""
    W, lay_in = step.Ws[0], step.layouts_in[0]
    out, p_out, first, sums = _hybrid(W, lay_in, step.p_in, build=False)
    n_hybrid = len(np.unique(first[0]))
    lay = _layout(W, lay_in, step.p_in, slots, zero)
    n_layout = 0 if lay is None else len(np.unique(lay[2][0]))
    if lay is not None and (2 * math.sqrt(n_layout), n_layout) < (2 * math.sqrt(n_hybrid) + len(sums), n_hybrid):
        step.layout_out, step.p_out, first = lay
        step.sums, step.mode = [], "layout"
    else:
        step.layout_out, step.p_out, step.sums, step.mode = out, p_out, sums, "hybrid"
    kept = [_offsets(*first)] + [_offsets(*_other_entries(step, k)) for k in range(1, len(step.Ws))]
    step.offsets = [offs for offs, _ in kept]
    step.count = sum(n for _, n in kept)
    step.diags = None


def _other_entries(step: Affine, k: int) -> tuple:
    """The entries of input k > 0's diagonals, read onto the output slots the first input chose: a hybrid step's by
    the hybrid packing's own rule (at most p_out diagonals, whatever the input's layout: the rotate-and-sum adds the
    inputs' blocks together), a layout step's onto its output slots (_onto_entries)."""
    if step.mode == "hybrid":
        return _hybrid(step.Ws[k], step.layouts_in[k], step.p_in, build=False)[2]
    return _onto_entries(step.Ws[k], step.layouts_in[k], step.p_in, step.layout_out, max(step.p_out, step.p_in))


def summarize(step: Affine) -> None:
    """Keeps the offsets and count of the step's diagonals (a loaded plan's) and drops their values."""
    step.offsets = [sorted(r for r, d in ds.items() if np.any(d)) for ds in step.diags]
    step.count = sum(len(ds) for ds in step.diags)
    step.diags = None


def _onto_entries(W: SparseMatrix, layout_in: np.ndarray, p_in: int, out_slot: np.ndarray, length: int) -> tuple:
    """The entries (offset, slot, value) and length of the diagonals that put W x (x at layout_in, period p_in) at
    the given output slots of a vector of `length`."""
    rows, cols, vals = W.nonzero()
    return (layout_in[cols] - out_slot[rows]) % p_in, out_slot[rows], vals, length


def _onto(W: SparseMatrix, layout_in: np.ndarray, p_in: int, out_slot: np.ndarray, length: int) -> dict:
    """The diagonals that put W x (x at layout_in, period p_in) at the given output slots of a vector of `length`."""
    return _diagonals(*_onto_entries(W, layout_in, p_in, out_slot, length))


def input_layout(shape) -> np.ndarray:
    """The input's slots: an image (..., H, W) with g empty columns after each row and g empty rows after each plane,
    the largest g in 4, 2, 1 that keeps the same power of two of slots: a padded convolution's border then reads zeros
    and shares the diagonals of the inside (see _layout). Other shapes: in order."""
    dim = int(np.prod(shape))
    if len(shape) >= 2:
        h, w = shape[-2:]
        c = dim // (h * w)
        for g in (4, 2, 1):
            if c * (h + g) * (w + g) <= pow2(dim):
                ci, hi, wi = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
                return (ci * (h + g) * (w + g) + hi * (w + g) + wi).reshape(-1)
    return np.arange(dim)


def diagonals_of(s: Affine) -> list:
    """The step's diagonals per input, rebuilt from its weights where they were dropped (summarize)."""
    return [diagonals_of_input(s, k) for k in range(len(s.Ws))]


def diagonals_of_input(s: Affine, k: int) -> dict:
    """Input k's diagonals: kept, or rebuilt by the packing that made them (_hybrid for a hybrid step's inputs, _onto
    for a layout step's), the same values bit for bit."""
    if s.diags is not None:
        return s.diags[k]
    if s.mode == "hybrid":
        return _hybrid(s.Ws[k], s.layouts_in[k], s.p_in)[2]
    return _onto(s.Ws[k], s.layouts_in[k], s.p_in, s.layout_out, max(s.p_out, s.p_in))
