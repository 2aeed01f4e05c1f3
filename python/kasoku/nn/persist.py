"""A plan as bytes: its steps, weights, diagonals, polynomials and layouts (no key, nothing of PyTorch), written and
read back with every part checked."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np

import kasoku as ks

from .ir import Activation, Affine, Bootstrap, ReluJoin, value_levels, pow2, SparseMatrix
from .packing import diagonals_of

_PLAN_MAGIC = b"KASOKU-NN-PLAN\n"
_PLAN_VERSION = 1


def _calibration_from(c):
    """Plan.calibration read back from its JSON (None where the plan was saved without it)."""
    if c is None:
        return None
    out = {
        "inputs": int(c["inputs"]),
        "decisions": int(c["decisions"]),
        "logit_error": float(c["logit_error"]),
        "smallest_margin": float(c["smallest_margin"]),
    }
    if "relu" in c:
        out["relu"] = (float(c["relu"][0]), int(c["relu"][1]))
    for k in ("noise_error", "encryption_bits", "rotation_bits", "bootstrap_bits"):  # kasoku.nn.noise.statement
        if k in c:
            out[k] = float(c[k])
    if "bootstrap_device_bytes" in c:  # for Plan.memory on a GPU
        out["bootstrap_device_bytes"] = int(c["bootstrap_device_bytes"])
    return out


def write_plan(plan) -> bytes:
    """A Plan's bytes (Plan.to_bytes): its parameters, steps, layouts and units as NumPy arrays and
    one JSON part, in a compressed NumPy archive after a magic line."""
    meta = {
        "format": _PLAN_VERSION,
        "in_shape": list(plan.in_shape),
        "in_unit": plan.in_unit,
        "out_dim": plan.out_dim,
        "out_unit": plan.out_unit,
        "output": plan.output,
        "bootstrap_slots": None if plan.bootstrapper is None else plan.bootstrapper.slots,
        "input_level": plan.input_level,
        "calibration": plan.calibration,
        "final": plan.final,
        "tuned_for": plan.tuned_for,
        "max_encoded_bytes": plan.max_encoded_bytes,
        "output_kind": plan.output_kind,
        "shareable": None
        if plan.shareable is None
        else {
            "statistical_security": plan.shareable.statistical_security,
            "queries": plan.shareable.queries,
            "noise_bound": plan.shareable.noise_bound,
            "min_precision_bits": plan.shareable.min_precision_bits,
            "bits": plan.shareable_bits,
        },
        "steps": [],
    }
    arrays = {
        "params": np.frombuffer(plan.params.to_bytes(), dtype=np.uint8),
        "in_layout": plan.in_layout,
        "out_layout": plan.out_layout,
    }
    for i, st in enumerate(plan.steps):
        d = {"type": type(st).__name__, "name": st.name, "inputs": list(st.inputs), "level": st.level}
        if isinstance(st, Affine):
            d.update(output=st.output, p_in=st.p_in, p_out=st.p_out, mode=st.mode, sums=list(st.sums))
            arrays[f"{i}.b"], arrays[f"{i}.layout_out"] = st.b, np.asarray(st.layout_out)
            for k, (W, lay, diags) in enumerate(zip(st.Ws, st.layouts_in, diagonals_of(st))):
                rows, cols, values = W.nonzero()
                arrays[f"{i}.W{k}.shape"] = np.array(W.shape, dtype=np.int64)
                arrays[f"{i}.W{k}.rows"], arrays[f"{i}.W{k}.cols"] = rows, cols
                arrays[f"{i}.W{k}.values"], arrays[f"{i}.layout_in{k}"] = values, lay
                arrays[f"{i}.offsets{k}"] = np.array(list(diags), dtype=np.int64)
                arrays[f"{i}.diags{k}"] = np.array(list(diags.values()), dtype=np.float64)
        elif isinstance(st, Activation):
            d.update(output=st.output, kind=st.kind, degree=st.degree, interval=list(st.interval), s_in=st.s_in)
            d.update(shift=st.shift)
            if st.poly is not None:
                d.update(basis=st.poly.basis, poly_interval=list(st.poly.interval))
                arrays[f"{i}.coeffs"] = np.asarray(st.poly.coeffs, dtype=np.complex128)
        elif isinstance(st, ReluJoin):
            d.update(output=st.output, clip=st.clip, s_in=st.s_in, period=st.period)
            if st.clip:
                arrays[f"{i}.layout"] = np.asarray(st.layout)
        meta["steps"].append(d)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return _PLAN_MAGIC + buf.getvalue()


def read_plan(data: bytes, max_bytes: int) -> dict:
    """The parts of a plan's bytes (write_plan): parameters, steps, layouts, units. Raises ks.SerializationError for
    bytes that are not such a plan, damaged ones, or ones whose parts take more than max_bytes decompressed."""
    data = bytes(data)
    if not data.startswith(_PLAN_MAGIC):
        raise ks.SerializationError("these bytes are not a kasoku.nn plan (Plan.to_bytes makes one)")
    body = io.BytesIO(data[len(_PLAN_MAGIC) :])
    try:
        with zipfile.ZipFile(body) as zf:  # the sizes it declares bound what reading it decompresses
            total = sum(i.file_size for i in zf.infolist())
    except Exception as e:
        raise ks.SerializationError(f"the plan's bytes are damaged or incomplete ({type(e).__name__}: {e})") from None
    if total > max_bytes:
        raise ks.SerializationError(
            f"the plan's parts take {total} bytes decompressed, more than max_bytes = {max_bytes}: load it with a "
            "larger max_bytes if it is one you trust"
        )
    try:
        with np.load(body, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("meta").tobytes())
        if meta.get("format") != _PLAN_VERSION:
            raise ks.SerializationError(
                f"plan format {meta.get('format')!r}: this kasoku reads format {_PLAN_VERSION} (save it again "
                "with this version)"
            )
        params = ks.Parameters.from_bytes(arrays.pop("params").tobytes())
        steps = [_step_from(d, i, arrays) for i, d in enumerate(meta["steps"])]
        in_layout, out_layout = arrays["in_layout"].astype(np.int64), arrays["out_layout"].astype(np.int64)
        in_shape, output = [int(v) for v in meta["in_shape"]], int(meta["output"])
        boot_slots = meta["bootstrap_slots"]
        input_level = None if meta.get("input_level") is None else int(meta["input_level"])
        in_unit, out_unit, out_dim = float(meta["in_unit"]), float(meta["out_unit"]), int(meta["out_dim"])
        calibration, shareable = _calibration_from(meta.get("calibration")), meta.get("shareable")
        final = meta.get("final")
        if final is not None:
            if final[0] not in ("softmax", "log_softmax", "sigmoid"):
                raise ks.SerializationError(f"the plan's last operation {final[0]!r} is none kasoku.nn applies")
            final = (str(final[0]), None if final[1] is None else int(final[1]))
        output_kind = str(meta.get("output_kind", "model"))
        tuned_for = meta.get("tuned_for")
        tuned_for = None if tuned_for is None else str(tuned_for)
        max_encoded = meta.get("max_encoded_bytes")  # plans saved before it was kept: None, the default
        max_encoded = None if max_encoded is None else max(0, int(max_encoded))
        if shareable is not None:
            bits = shareable["bits"]
            shareable = (
                ks.Flooding(
                    statistical_security=int(shareable["statistical_security"]),
                    queries=int(shareable["queries"]),
                    noise_bound=float(shareable["noise_bound"]),
                    min_precision_bits=float(shareable["min_precision_bits"]),
                ),
                None if bits is None else int(bits),
            )
    except ks.SerializationError:
        raise
    except Exception as e:  # zip, zlib, JSON, NumPy and field errors alike: untrusted bytes, one kind of error
        raise ks.SerializationError(f"the plan's bytes are damaged or incomplete ({type(e).__name__}: {e})") from None
    return dict(
        tuned_for=tuned_for,
        max_encoded_bytes=max_encoded,
        final=final,
        output_kind=output_kind,
        calibration=calibration,
        shareable=shareable,
        params=params,
        steps=steps,
        in_layout=in_layout,
        out_layout=out_layout,
        in_shape=in_shape,
        output=output,
        boot_slots=boot_slots,
        input_level=input_level,
        in_unit=in_unit,
        out_unit=out_unit,
        out_dim=out_dim,
    )


def _step_from(d: dict, i: int, arrays: dict):
    kind, name, inputs, level = d["type"], str(d["name"]), [int(v) for v in d["inputs"]], int(d["level"])
    if kind == "Affine":
        n = len(inputs)
        diags = []
        for k in range(n):
            offsets, values = arrays[f"{i}.offsets{k}"], arrays[f"{i}.diags{k}"]
            if values.ndim != 2 or len(offsets) != len(values):
                raise ks.SerializationError(f"step {name}: {len(offsets)} offsets for {len(values)} diagonals")
            diags.append({int(r): v for r, v in zip(offsets, values)})
        st = Affine(
            name,
            inputs,
            int(d["output"]),
            [SparseMatrix.from_arrays(arrays, f"{i}.W{k}") for k in range(n)],
            arrays[f"{i}.b"],
            [arrays[f"{i}.layout_in{k}"].astype(np.int64) for k in range(n)],
            int(d["p_in"]),
            layout_out=arrays[f"{i}.layout_out"].astype(np.int64),
            p_out=int(d["p_out"]),
            mode=str(d["mode"]),
            diags=diags,
            sums=[int(r) for r in d["sums"]],
        )
    elif kind == "Activation":
        st = Activation(name, str(d["kind"]), interval=tuple(map(float, d["interval"])), degree=int(d["degree"]))
        st.input, st.output, st.s_in = inputs[0], int(d["output"]), float(d["s_in"])
        st.shift = float(d.get("shift", 0.0))
        if f"{i}.coeffs" in arrays:
            st.poly = ks.Polynomial(arrays[f"{i}.coeffs"], str(d["basis"]), tuple(map(float, d["poly_interval"])))
        elif st.kind != "square":
            raise ks.SerializationError(f"step {name}: a {st.kind} activation without its polynomial")
    elif kind == "Bootstrap":
        st = Bootstrap(name, inputs[0])
    elif kind == "ReluJoin":
        st = ReluJoin(name, inputs, int(d["output"]), clip=float(d.get("clip", 0.0)), s_in=float(d.get("s_in", 1.0)))
        if len(inputs) != (3 if st.clip else 2):
            raise ks.SerializationError(f"step {name}: a {'ReLU6' if st.clip else 'ReLU'} join of {len(inputs)} inputs")
        if st.clip:
            st.layout, st.period = arrays[f"{i}.layout"].astype(np.int64), int(d["period"])
    else:
        raise ks.SerializationError(f"step {i}: unknown kind {kind!r}")
    st.level = level
    return st


def check_plan(steps, output, in_shape, in_layout, out_dim, out_layout, ctx, input_level=None) -> None:
    """A loaded plan's steps read only values made before them, at levels the context has (the input at input_level,
    default the top user level), with slots and layouts within the ring: what run() and the transforms' encoding
    assume."""

    def bad(what):
        raise ks.SerializationError(f"the plan is inconsistent: {what}")

    made, p_in, slots = {0}, pow2(int(np.prod(in_shape))), ctx.slots
    if p_in > slots or in_layout.size != int(np.prod(in_shape)) or in_layout.min(initial=0) < 0:
        bad("the input layout does not fit the ring")
    if in_layout.max(initial=0) >= p_in:
        bad("the input layout does not fit its period")
    if input_level is not None and not 0 <= input_level <= ctx.user_level:
        bad(f"the input is read at level {input_level}, outside 0..{ctx.user_level}")
    for st, level in zip(steps, value_levels(steps, ctx.user_level, input_level)[1]):
        if any(i not in made for i in st.inputs):
            bad(f"step {st.name} reads a value no earlier step makes")
        if st.level != level or not 0 <= level <= ctx.user_level:
            bad(f"step {st.name} is at level {st.level}, its inputs put it at {level}")
        if isinstance(st, Affine):
            for v in (st.p_in, st.p_out):
                if v < 1 or v & (v - 1) or v > slots:
                    bad(f"step {st.name}: period {v} is not a power of two within the {slots} slots")
            length = max(st.p_in, st.p_out)
            if len(st.Ws) != len(st.inputs) or len(st.diags) != len(st.inputs):
                bad(f"step {st.name}: {len(st.inputs)} inputs, {len(st.Ws)} weight matrices")
            if st.layout_out.size != st.Ws[0].shape[0] or st.layout_out.min(initial=0) < 0:
                bad(f"step {st.name}: the output layout does not match its {st.Ws[0].shape[0]} outputs")
            if st.layout_out.max(initial=0) >= st.p_out or st.b.shape != (st.Ws[0].shape[0],):
                bad(f"step {st.name}: the output layout or bias does not fit its period")
            for diags in st.diags:
                for r, v in diags.items():
                    if v.shape != (length,) or not 0 <= r < st.p_in:
                        bad(f"step {st.name}: a diagonal of {v.shape} values at offset {r} (period {length})")
            if any(not 0 < abs(r) < slots for r in st.sums):
                bad(f"step {st.name}: a rotate-and-sum by {st.sums}")
        if isinstance(st, ReluJoin) and st.clip:
            p = st.period
            if p < 1 or p & (p - 1) or p > slots or st.layout.min(initial=0) < 0 or st.layout.max(initial=0) >= p:
                bad(f"step {st.name}: its slots do not fit its period {p} within the {slots} slots")
        made.add(st.output)
    if output not in made or out_layout.size != out_dim or out_layout.min(initial=0) < 0:
        bad("the output is not made by a step, or its layout does not match")
    if out_layout.max(initial=0) >= slots:
        bad("the output layout does not fit the ring")
