"""OpenFHE side of ``bench/peers.py``.

This script is *not* imported by kasoku.  ``peers.py`` runs it as a separate
process inside a CPython 3.10 virtual environment (the only Python for which the
``openfhe`` wheel exists), with ``OMP_NUM_THREADS`` already set in its
environment so that OpenFHE's OpenMP runtime picks the thread count up before
the library is loaded.

It measures the same operations as ``python -m kasoku bench`` on the same CKKS
parameters and writes JSON lines in the same format, with ``"lib": "openfhe"``::

    {"lib": "openfhe", "op": "MulRelinRescale", "params": "H16", "threads": 1,
     "median_ms": ..., "min_ms": ..., "max_ms": ..., "reps": 5}
    {"lib": "openfhe", "op": "size", "what": "ciphertext", "params": "H16", "bytes": ...}

plus one ``"op": "params"`` line (what OpenFHE actually chose) and one
``"op": "check"`` line (decryption errors, so wrong timings of wrong results
cannot go unnoticed).

Usage (normally done by peers.py)::

    OMP_NUM_THREADS=1 python openfhe_ops.py --spec '{"name": "T13", ...}' \
        --threads 1 --reps 5 --out /tmp/openfhe.jsonl

Stdlib + numpy + openfhe only; must stay compatible with Python 3.10.
"""

import argparse
import gc
import json
import math
import os
import re
import sys

import numpy as np
import openfhe as ofhe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (bench/, run with the OpenFHE venv's Python)

# Bits of the special primes OpenFHE chooses for HYBRID key switching
# (AUXMODSIZE in ckksrns-parametergeneration.cpp for 64-bit native integers).
OPENFHE_AUX_BITS = 60


# The Chebyshev series of `--poly`: the same on both sides (python/kasoku/cli/bench.py): uniform in [-1, 1], divided by
# i^2 from i = 2 on (as a smooth function's coefficients decay), seeded by the degree.
POLY_DEGREES = (7, 15, 31, 63, 127, 255)


def poly_coeffs(d):
    c = np.random.default_rng(1000 + d).uniform(-1.0, 1.0, d + 1)
    c[2:] /= np.arange(2, d + 1) ** 2
    return c


def real_values(pt):
    """The decoded real parts: GetRealPackedValueArray (an array, 1.6) or GetRealPackedValue (a list, 1.5)."""
    get = getattr(pt, "GetRealPackedValueArray", None)
    return get() if get else pt.GetRealPackedValue()


def module_folder(module):
    """The module's folder relative to the repository root when it is inside it (a venv of bench/), else its name."""
    folder = os.path.dirname(os.path.abspath(module.__file__))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inside = os.path.commonpath([folder, repo]) == repo
    return os.path.relpath(folder, repo) if inside else os.path.basename(folder)


def log(msg):
    print("[openfhe] " + msg, file=sys.stderr, flush=True)


def timed(fn, reps):
    """Median/min/max wall time of ``fn()`` in ms: one untimed warm-up, then ``reps`` runs (harness.times: the
    result of each call is released only after the clock has stopped, so freeing the output ciphertext is not part
    of the measurement)."""
    fn()  # warm-up
    gc.collect()
    cpus = []
    walls = harness.times(fn, reps, cpu=cpus)
    return summarize(walls, cpus)


def summarize(walls, cpus=None):
    """median_ms, min_ms, max_ms, reps of wall times in seconds; with their CPU times, cpu_per_wall (~1.0 when
    single-threaded, up to `threads` when OpenMP parallelises well)."""
    rec = harness.summary(walls, "ms")
    if cpus is not None:
        rec["cpu_per_wall"] = round(sum(cpus) / max(sum(walls), 1e-12), 2)
    return rec


def make_context(spec):
    """CKKS context mirroring the spec; returns (cc, security_used, security_note)."""

    def build(security):
        p = ofhe.CCParamsCKKSRNS()
        n = 1 << spec["logn"]
        p.SetMultiplicativeDepth(spec["depth"])
        p.SetFirstModSize(spec["first_bits"])
        p.SetScalingModSize(spec["scale_bits"])
        p.SetRingDim(n)
        p.SetBatchSize(n // 2)
        # FIXEDMANUAL: EvalMult relinearizes but does not rescale; Rescale is explicit.
        p.SetScalingTechnique(ofhe.FIXEDMANUAL)
        p.SetKeySwitchTechnique(ofhe.HYBRID)
        p.SetNumLargeDigits(spec["dnum"])
        p.SetSecurityLevel(security)
        p.SetSecretKeyDist(ofhe.UNIFORM_TERNARY)
        cc = ofhe.GenCryptoContext(p)
        for feature in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE):  # ADVANCEDSHE: EvalSum
            cc.Enable(feature)
        return cc

    try:
        return build(ofhe.HEStd_128_classic), "HEStd_128_classic", None
    except RuntimeError as e:
        # OpenFHE sizes its own special primes (P) and checks N against its
        # estimate of log2(Q*P).  For T13 it chooses 2 special primes of 60
        # bits, so log2(QP) ~ 260 > 218 (HE standard limit for N=2^13) and it
        # refuses N=2^13.  Same N and same Q is what we want to compare, so
        # retry without the check and say so loudly.
        if "does not comply with HE standards" not in str(e):
            raise
        wanted = re.search(r"recommendation \((\d+)\)", str(e))
        note = (
            "OpenFHE refuses N=2^%d at HEStd_128_classic (its check wants N >= %s for the Q*P it "
            "builds); ran with HEStd_NotSet: same N and Q as kasoku, but OpenFHE's own Q*P is "
            "beyond the 128-bit bound for this N." % (spec["logn"], wanted.group(1) if wanted else "?")
        )
        log("WARNING: " + note)
        return build(ofhe.HEStd_NotSet), "HEStd_NotSet", note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", required=True, help="parameter set as JSON (from peers.py)")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", required=True, help="append the JSON lines here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--hoisting", action="store_true", help="also EvalSum (all slots) and 16 hoisted rotations (EvalFastRotation)"
    )
    ap.add_argument("--poly", action="store_true", help="also EvalChebyshevSeries of degrees %s" % (POLY_DEGREES,))
    args = ap.parse_args()

    spec = json.loads(args.spec)
    name = spec["name"]
    n = 1 << spec["logn"]
    slots = n // 2
    reps = args.reps
    omp = os.environ.get("OMP_NUM_THREADS")
    if omp != str(args.threads):
        log("WARNING: OMP_NUM_THREADS=%r but --threads %d" % (omp, args.threads))

    lines = []

    def emit(op, **fields):
        """One line, as it is measured: printed (peers.py shows this process's output on its stderr) and appended to
        --out."""
        rec = {"lib": "openfhe", "op": op, "params": name, "threads": args.threads}
        rec.update(fields)
        lines.append(harness.emit(rec, args.out))

    log(
        "context %s: N=2^%d, depth %d, dnum %d, OMP_NUM_THREADS=%s"
        % (name, spec["logn"], spec["depth"], spec["dnum"], omp)
    )
    cc, security, security_note = make_context(spec)

    # --- KeyGen: secret+public, relin (EvalMultKeyGen), one rotation key -----
    # OpenFHE keeps eval keys in process-wide maps keyed by the secret key's
    # tag; they are cleared between repetitions (untimed) so that memory does
    # not grow.  The keys of the last repetition are the working keys.
    log("KeyGen x%d (+1 warm-up)" % reps)
    parts = {"KeyGenSecretPublic": [], "KeyGenRelin": [], "KeyGenRotation": [], "KeyGen": []}
    cpus = []

    def keygen():
        """The three key generations, each timed: (key pair, {part: seconds})."""
        part = {}
        part["KeyGenSecretPublic"], kp = harness.timed(cc.KeyGen)
        part["KeyGenRelin"] = harness.timed(lambda: cc.EvalMultKeyGen(kp.secretKey))[0]
        part["KeyGenRotation"] = harness.timed(lambda: cc.EvalRotateKeyGen(kp.secretKey, [1]))[0]
        return kp, part

    kp = None
    for i in range(reps + 1):
        ofhe.ClearEvalMultKeys()
        ofhe.CryptoContext.ClearEvalAutomorphismKeys()
        kp = None
        gc.collect()
        total, (kp, part) = harness.timed(keygen, cpu=cpus if i else None)  # the first: a warm-up
        if i:
            for op, secs in {**part, "KeyGen": total}.items():
                parts[op].append(secs)
    notes = {
        "KeyGen": "KeyGen (secret+public) + EvalMultKeyGen (relin) + EvalRotateKeyGen([1]) (one rotation key)",
        "KeyGenSecretPublic": "cc.KeyGen(): secret + public key",
        "KeyGenRelin": "cc.EvalMultKeyGen(sk)",
        "KeyGenRotation": "cc.EvalRotateKeyGen(sk, [1])",
    }
    for op, walls in parts.items():
        emit(op, note=notes[op], **summarize(walls, cpus if op == "KeyGen" else None))
    sk, pk = kp.secretKey, kp.publicKey

    # --- data ----------------------------------------------------------------
    rng = np.random.default_rng(args.seed)
    v1 = rng.uniform(-1.0, 1.0, slots)
    v2 = rng.uniform(-1.0, 1.0, slots)
    # numpy float64 arrays take openfhe-python's buffer fast path (no per-element conversion).
    pt1 = cc.MakeCKKSPackedPlaintext(v1)
    pt2 = cc.MakeCKKSPackedPlaintext(v2)
    c1 = cc.Encrypt(pk, pt1)
    c2 = cc.Encrypt(pk, pt2)

    # --- correctness (untimed) -----------------------------------------------
    def err(ct, ref):
        got = np.asarray(real_values(cc.Decrypt(sk, ct)))[:slots]
        return float(np.max(np.abs(got - ref)))

    check = {
        "max_err_decrypt": err(c1, v1),
        "max_err_add": err(cc.EvalAdd(c1, c2), v1 + v2),
        "max_err_mul_relin_rescale": err(cc.Rescale(cc.EvalMult(c1, c2)), v1 * v2),
        "max_err_rotate": err(cc.EvalRotate(c1, 1), np.roll(v1, -1)),
    }
    emit("check", **check)
    log("check: " + ", ".join("%s=%.2e" % kv for kv in check.items()))

    # --- timed ops -----------------------------------------------------------
    ops = [
        (
            "Encode",
            lambda: cc.MakeCKKSPackedPlaintext(v1),
            "MakeCKKSPackedPlaintext(N/2 reals in [-1,1], numpy float64), level 0 (full chain)",
        ),
        ("Encrypt", lambda: cc.Encrypt(pk, pt1), "Encrypt(public key, plaintext)"),
        (
            "DecryptDecode",
            lambda: real_values(cc.Decrypt(sk, c1)),
            "Decrypt(sk, fresh ct) (decodes internally) + GetRealPackedValueArray() (1.5: GetRealPackedValue())",
        ),
        ("Add", lambda: cc.EvalAdd(c1, c2), "EvalAdd of two fresh ciphertexts"),
        (
            "MulRelinRescale",
            lambda: cc.Rescale(cc.EvalMult(c1, c2)),
            "EvalMult (tensor + relinearize, FIXEDMANUAL: no auto rescale) then Rescale, fresh top-level inputs",
        ),
        ("Rotate", lambda: cc.EvalRotate(c1, 1), "EvalRotate(fresh ct, 1)"),
    ]
    for op, fn, note in ops:
        log("%s x%d (+1 warm-up)" % (op, reps))
        emit(op, note=note, **timed(fn, reps))
    if args.hoisting:
        # Sum of all slots and 16 rotations of one ciphertext with one precomputation (Halevi-Shoup hoisting).
        log("EvalSumKeyGen + EvalRotateKeyGen(1..16)")
        cc.EvalSumKeyGen(sk)
        cc.EvalRotateKeyGen(sk, list(range(1, 17)))
        m = 2 * n
        check_h = {
            "max_err_eval_sum": err(cc.EvalSum(c1, slots), np.full(slots, v1.sum())),
            "max_err_fast_rotation": err(
                cc.EvalFastRotation(c1, 5, m, cc.EvalFastRotationPrecompute(c1)), np.roll(v1, -5)
            ),
        }
        emit("check", **check_h)
        log("check: " + ", ".join("%s=%.2e" % kv for kv in check_h.items()))

        def fast16():
            pre = cc.EvalFastRotationPrecompute(c1)
            return [cc.EvalFastRotation(c1, k, m, pre) for k in range(1, 17)]

        for op, fn, note in [
            ("SumSlots", lambda: cc.EvalSum(c1, slots), "EvalSum(ct, batch = N/2): sum of all slots"),
            ("Rotate16Hoisted", fast16, "EvalFastRotationPrecompute + 16 x EvalFastRotation (rotations 1..16)"),
        ]:
            log("%s x%d (+1 warm-up)" % (op, reps))
            emit(op, note=note, **timed(fn, reps))

    if args.poly:
        # Chebyshev series of the same degrees and coefficients as `python -m kasoku bench --poly` (OpenFHE's series
        # convention halves c_0, so c_0 is passed doubled); levels consumed and precision on inputs in [-1, 1].
        for d in [d for d in POLY_DEGREES if math.ceil(math.log2(d + 1)) <= spec["depth"]]:
            c = poly_coeffs(d)
            oc = [2.0 * c[0]] + list(c[1:])
            ref = np.polynomial.chebyshev.chebval(v1, c)
            out = cc.EvalChebyshevSeries(c1, oc, -1.0, 1.0)
            e = err(out, ref)
            log("Chebyshev%d x%d (+1 warm-up)" % (d, reps))
            emit(
                "Chebyshev%d" % d,
                note="EvalChebyshevSeries(ct, %d coefficients, -1, 1)" % (d + 1),
                levels=out.GetLevel() - c1.GetLevel(),
                max_abs_error=e,
                bits=-math.log2(e),
                **timed(lambda: cc.EvalChebyshevSeries(c1, oc, -1.0, 1.0), reps),
            )

    # NTT: openfhe-python does not expose DCRTPoly NTTs (DCRTPoly has no methods
    # in the binding), so no line is written; peers.py shows "n/a".

    # --- sizes (BINARY serialization) ----------------------------------------
    tag = pk.GetKeyTag()
    relin = cc.GetEvalMultKeyVector(tag)[0]
    rot_map = cc.GetEvalAutomorphismKeyMap(tag)  # holds exactly the one key for rotation by 1
    sizes = {
        "ciphertext": len(ofhe.Serialize(c1, ofhe.BINARY)),
        "public_key": len(ofhe.Serialize(pk, ofhe.BINARY)),
        "relin_key": len(ofhe.Serialize(relin, ofhe.BINARY)),
        "galois_key": len(ofhe.Serialize(rot_map, ofhe.BINARY)),
        "secret_key": len(ofhe.Serialize(sk, ofhe.BINARY)),
    }
    for what, nbytes in sizes.items():
        emit("size", what=what, bytes=nbytes, note="openfhe.Serialize(obj, BINARY)")

    # --- what OpenFHE actually chose -----------------------------------------
    # The Python binding exposes Q (GetModulus) but not the special primes P.
    # A HYBRID relin key holds 2 x digits DCRTPolys over Q*P with N 64-bit
    # words per tower, so the number of P towers follows from its size.
    num_q = spec["depth"] + 1
    alpha = math.ceil(num_q / spec["dnum"])
    digits = math.ceil(num_q / alpha)
    towers = sizes["relin_key"] / (2.0 * digits * n * 8)
    num_p = round(towers) - num_q if abs(towers - round(towers)) < 0.1 else None
    log2_q = math.log2(int(cc.GetModulus()))
    emit(
        "params",
        openfhe_version=getattr(ofhe, "__version__", "?"),
        # which build (a wheel or one built from source): its folder, relative to the repository when inside it
        openfhe_module=module_folder(ofhe),
        ring_dim=cc.GetRingDimension(),
        batch_size=cc.GetBatchSize(),
        log2_q=round(log2_q, 2),
        num_q_primes=num_q,
        num_special_primes=num_p,
        special_prime_bits=OPENFHE_AUX_BITS,
        log2_qp=None if num_p is None else round(log2_q + OPENFHE_AUX_BITS * num_p, 1),
        dnum=digits,
        scaling_technique=str(cc.GetScalingTechnique()).split(".")[-1],
        keyswitch_technique=str(cc.GetKeySwitchTechnique()).split(".")[-1],
        security=security,
        security_note=security_note,
        omp_num_threads=omp,
        note=(
            "OpenFHE picks its own special primes; their count is inferred from the "
            "serialized relin key size and log2_qp assumes %d-bit special primes. "
            "NTT is not exposed by openfhe-python." % OPENFHE_AUX_BITS
        ),
    )

    log("wrote %d lines to %s" % (len(lines), args.out))


if __name__ == "__main__":
    main()
