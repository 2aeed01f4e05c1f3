"""OpenFHE's EvalBootstrap at the closest parameters to kasoku's BOOT16, one JSON line per run.

Runs in the CPython 3.10 environment of the ``openfhe`` wheel (bench/.venv-openfhe, made by ``make peers``), in its
own process, with OMP_NUM_THREADS set before the library loads::

    OMP_NUM_THREADS=1 bench/.venv-openfhe/bin/python bench/openfhe_bootstrap.py --threads 1 --reps 3

Parameters: N = 2^16, 2^15 complex slots (full packing), a dense (uniform ternary) secret, level budget (3, 3) (three
CoeffToSlot and three SlotToCoeff levels, as kasoku's default), 9 levels left for the user, hybrid key switching with
3 digits, OpenFHE's own EvalMod (its default for a uniform ternary secret). Scale and first prime: --scale-bits
(default 59, what OpenFHE's bootstrapping examples use: with one prime size its EvalMod runs at the user's scale) and
--first-bits 60. OpenFHE checks log2(QP) against the 128-bit HE Standard table for N; when it refuses N = 2^16 the run
goes on without the check (HEStd_NotSet) and the line says so.

Same inputs and measures as bench/bootstrap.py: uniform complex values in the unit disk, encrypted at the last level,
precision -log2 |error| per slot (mean and worst). Stdlib + numpy + openfhe only.
"""

import argparse
import os
import resource
import sys

import numpy as np
import openfhe as ofhe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (bench/, run with the OpenFHE venv's Python)


def log(msg):
    print("[openfhe bootstrap] " + msg, file=sys.stderr, flush=True)


def build(args, security):
    p = ofhe.CCParamsCKKSRNS()
    p.SetSecretKeyDist(ofhe.UNIFORM_TERNARY)
    p.SetCKKSDataType(ofhe.COMPLEX)  # complex slots, as kasoku's (OpenFHE's default bootstraps real data only)
    p.SetSecurityLevel(security)
    p.SetRingDim(1 << args.log_n)
    p.SetBatchSize(1 << (args.log_n - 1))
    p.SetScalingModSize(args.scale_bits)
    p.SetFirstModSize(args.first_bits)
    p.SetScalingTechnique(ofhe.FLEXIBLEAUTO)
    p.SetKeySwitchTechnique(ofhe.HYBRID)
    p.SetNumLargeDigits(args.dnum)
    budget = [args.cts_levels, args.stc_levels]
    boot_depth = ofhe.CryptoContext.GetBootstrapDepth(budget, ofhe.UNIFORM_TERNARY)
    p.SetMultiplicativeDepth(args.user_levels + boot_depth)
    cc = ofhe.GenCryptoContext(p)
    for feature in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE, ofhe.FHE):
        cc.Enable(feature)
    return cc, budget, boot_depth


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--scale-bits", type=int, default=59)
    ap.add_argument("--first-bits", type=int, default=60)
    ap.add_argument("--user-levels", type=int, default=9)
    ap.add_argument("--cts-levels", type=int, default=3)
    ap.add_argument("--stc-levels", type=int, default=3)
    ap.add_argument("--dnum", type=int, default=3)
    ap.add_argument("--out", help="append the JSON line to this file")
    args = ap.parse_args()
    if os.environ.get("OMP_NUM_THREADS") != str(args.threads):
        log("WARNING: OMP_NUM_THREADS=%r but --threads %d" % (os.environ.get("OMP_NUM_THREADS"), args.threads))

    note = None
    try:
        cc, budget, boot_depth = build(args, ofhe.HEStd_128_classic)
        security = "HEStd_128_classic"
    except RuntimeError as e:
        if "does not comply with HE standards" not in str(e):
            raise
        note = "OpenFHE refuses N=2^%d at HEStd_128_classic for these levels (%s); ran with HEStd_NotSet" % (
            args.log_n,
            str(e).strip().splitlines()[-1][:200],
        )
        log("WARNING: " + note)
        cc, budget, boot_depth = build(args, ofhe.HEStd_NotSet)
        security = "HEStd_NotSet"
    n = cc.GetRingDimension()
    slots = n // 2
    log("N=%d, slots=%d, bootstrap depth %d, %d user levels" % (n, slots, boot_depth, args.user_levels))

    setup_s = harness.timed(lambda: cc.EvalBootstrapSetup(budget, [0, 0], slots))[0]
    keys = cc.KeyGen()
    keygen_s = harness.timed(
        lambda: (cc.EvalMultKeyGen(keys.secretKey), cc.EvalBootstrapKeyGen(keys.secretKey, slots))
    )[0]
    log("setup %.1f s, keygen %.1f s" % (setup_s, keygen_s))

    rng = np.random.default_rng(1)
    z = np.sqrt(rng.uniform(0, 1, slots)) * np.exp(1j * rng.uniform(0, 2 * np.pi, slots))
    depth = args.user_levels + boot_depth
    pt = cc.MakeCKKSPackedPlaintext([complex(v) for v in z], 1, depth - 1, None, slots)
    ct = cc.Encrypt(keys.publicKey, pt)
    times, bits, level_after = [], None, None
    for i in range(args.reps):
        log("bootstrap %d/%d" % (i + 1, args.reps))
        secs, out = harness.timed(lambda: cc.EvalBootstrap(ct))
        times.append(secs)
        dec = cc.Decrypt(keys.secretKey, out)
        dec.SetLength(slots)
        got = np.array(dec.GetCKKSPackedValue())
        bits = -np.log2(np.maximum(np.abs(got - z), 2.0**-60))
        level_after = depth - out.GetLevel()
    rec = {
        "lib": "openfhe",
        "op": "bootstrap",
        "params": "BOOT16-closest",
        "log_n": args.log_n,
        "slots": slots,
        "threads": args.threads,
        **harness.summary(times),  # median_s, min_s, max_s, reps
        "setup_s": setup_s,
        "keygen_s": keygen_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "mean_bits": float(np.mean(bits)),
        "worst_bits": float(np.min(bits)),
        "boot_depth": boot_depth,
        "levels_left": level_after,
        "scale_bits": args.scale_bits,
        "first_bits": args.first_bits,
        "level_budget": budget,
        "dnum": args.dnum,
        "secret": "uniform ternary",
        "security": security,
        "note": note,
    }
    harness.emit(rec, args.out)


if __name__ == "__main__":
    main()
