"""OpenFHE's threshold CKKS beside bench/multiparty.py: per protocol step, one party's time and share size, and the
aggregation of N shares, at the shapes of kasoku's H15 and H16.

Runs in the CPython 3.10 environment of the ``openfhe`` wheel (bench/.venv-openfhe, made by ``make peers``), in its
own process, with OMP_NUM_THREADS set before the library loads::

    OMP_NUM_THREADS=1 bench/.venv-openfhe/bin/python bench/openfhe_multiparty.py --params H15 H16 --parties 3 10

OpenFHE's protocol (openfhe-development's threshold-fhe examples) is a chain: party 1 makes an ordinary key pair,
each next party derives its key pair from the joint public key so far (``MultipartyKeyGen``); relinearisation keys
take two rounds (``KeySwitchGen`` / ``MultiKeySwitchGen`` shares summed by ``MultiAddEvalKeys``, then
``MultiMultEvalKey`` shares summed by ``MultiAddEvalMultKeys``); rotation keys one (``MultiEvalAtIndexKeyGen`` summed
by ``MultiAddEvalAutomorphismKeys``); decryption shares ``MultipartyDecryptLead`` / ``MultipartyDecryptMain`` joined
by ``MultipartyDecryptFusion``. OpenFHE's default multiparty mode is kept (``FIXED_NOISE_MULTIPARTY``: decryption
shares carry noise of a fixed width, not sized for a statistical security as kasoku's smudging is;
``NOISE_FLOODING_MULTIPARTY`` would add moduli and change the parameters); each line names the mode. Its Python API
has no public-key switch to a receiver and no Shamir thresholding for CKKS, so those rows have no OpenFHE
counterpart.

Parameters: N, the first prime, the 40-bit scaling primes and 3 digits as H15 / H16 (OpenFHE chooses its own 60-bit
special primes); 128-bit HE Standard check as OpenFHE applies it (the line says when it refused and ran without).
Checks, per run: the joint keys decrypt a product and a rotation of fresh inputs within 2^-5 (the line gives the
error). Stdlib + numpy + openfhe only; Python 3.10.
"""

import argparse
import os
import sys

import numpy as np
import openfhe as ofhe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from openfhe_ops import make_context  # noqa: E402  (bench/, run with the OpenFHE venv's Python)

SETS = {  # kasoku's H15 / H16 (docs/PARAMS.md): log2 N, multiplicative depth (levels), first prime, scale, digits
    "H15": {"logn": 15, "depth": 12, "first_bits": 60, "scale_bits": 40, "dnum": 3},
    "H16": {"logn": 16, "depth": 20, "first_bits": 60, "scale_bits": 40, "dnum": 3},
}


def log(msg):
    print("[openfhe multiparty] " + msg, file=sys.stderr, flush=True)


def context(spec):
    """bench/openfhe_ops.py's context for the spec (the same parameters as its H15/H16 runs) with MULTIPARTY enabled;
    (cc, the security level it ran at); OpenFHE's multiparty mode is a fresh parameter object's default."""
    cc, security, note = make_context(spec)
    cc.Enable(ofhe.MULTIPARTY)
    if note:
        log(note)
    return cc, security


MODE = str(ofhe.CCParamsCKKSRNS().GetMultipartyMode()).split(".")[-1]


def chain_sum(add, shares, tags):
    """OpenFHE's aggregation: shares summed one after the other, each addition naming the key tag of the share added."""
    acc = shares[0]
    for share, tag in zip(shares[1:], tags[1:]):
        acc = add(acc, share, tag)
    return acc


def size(obj):
    data = ofhe.Serialize(obj, ofhe.BINARY)
    return len(data)


def run(name, n_parties, threads, out=None):
    """One run's lines, each written as it is measured (harness.emit: printed, and appended to `out`)."""
    spec = SETS[name]
    cc, security = context(spec)
    slots = 1 << (spec["logn"] - 1)
    rows = []

    def row(step, party_times, share_bytes, aggregate_s=None, note=None):
        r = {
            "lib": "openfhe",
            "version": ofhe.__version__ if hasattr(ofhe, "__version__") else "1.6.1",
            "params": name,
            "parties": n_parties,
            "step": step,
            "party_s": harness.median(party_times),
            "share_bytes": share_bytes,
            "threads": threads,
            "security": security,
            "multiparty_mode": MODE,
            "machine": harness.machine(),
        }
        if aggregate_s is not None:
            r["aggregate_s"] = aggregate_s
        if note:
            r["note"] = note
        rows.append(harness.emit(r, out))

    # Public key: a chain of N key generations (each party's on the joint key so far).
    times, kps = [], []
    t, kp = harness.timed(cc.KeyGen)
    times.append(t)
    kps.append(kp)
    for _ in range(1, n_parties):
        t, kp = harness.timed(lambda: cc.MultipartyKeyGen(kps[-1].publicKey))
        times.append(t)
        kps.append(kp)
    joint_pk = kps[-1].publicKey
    row("public key (CKG)", times, size(kps[0].publicKey), 0.0, "sequential: party i derives from party i-1's key")

    # Relinearisation, round 1: party 1's KeySwitchGen, the others' MultiKeySwitchGen on it; summed.
    times, shares = [], []
    t, k1 = harness.timed(lambda: cc.KeySwitchGen(kps[0].secretKey, kps[0].secretKey))
    times.append(t)
    shares.append(k1)
    for kp in kps[1:]:
        t, k = harness.timed(lambda: cc.MultiKeySwitchGen(kp.secretKey, kp.secretKey, k1))
        times.append(t)
        shares.append(k)

    tags = [kp.publicKey.GetKeyTag() for kp in kps]
    agg, joint1 = harness.timed(lambda: chain_sum(cc.MultiAddEvalKeys, shares, tags))
    row("relinearisation round 1 (RKG)", times, size(shares[0]), agg)

    # Round 2: every party's MultiMultEvalKey on the joint round-1 key; summed.
    tag = joint_pk.GetKeyTag()
    times, shares2 = [], []
    for kp in kps:
        t, k = harness.timed(lambda: cc.MultiMultEvalKey(kp.secretKey, joint1, tag))
        times.append(t)
        shares2.append(k)

    agg, relin = harness.timed(lambda: chain_sum(cc.MultiAddEvalMultKeys, shares2, [tag] * len(shares2)))
    row("relinearisation round 2 (RKG)", times, size(shares2[0]), agg)
    cc.InsertEvalMultKey([relin])

    # One rotation key (by 1): party 1's EvalAtIndexKeyGen, the others' MultiEvalAtIndexKeyGen on it; summed.
    times, maps = [], []
    t, _ = harness.timed(lambda: cc.EvalAtIndexKeyGen(kps[0].secretKey, [1]))
    times.append(t)
    m1 = cc.GetEvalAutomorphismKeyMap(kps[0].secretKey.GetKeyTag())
    maps.append(m1)
    for kp in kps[1:]:
        t, m = harness.timed(lambda: cc.MultiEvalAtIndexKeyGen(kp.secretKey, m1, [1], kp.publicKey.GetKeyTag()))
        times.append(t)
        maps.append(m)

    agg, rot = harness.timed(lambda: chain_sum(cc.MultiAddEvalAutomorphismKeys, maps, tags))
    row("Galois key, one element (GKG)", times, size(maps[0]), agg)
    cc.InsertEvalAutomorphismKey(rot, tag)

    # Decryption shares (lead + main) and their fusion, on a product rotated by one.
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, slots), rng.uniform(-1, 1, slots)
    ctx_ = cc.Encrypt(joint_pk, cc.MakeCKKSPackedPlaintext(x.tolist()))
    cty = cc.Encrypt(joint_pk, cc.MakeCKKSPackedPlaintext(y.tolist()))
    ct = cc.EvalRotate(cc.Rescale(cc.EvalMult(ctx_, cty)), 1)
    times, parts = [], []
    t, lead = harness.timed(lambda: cc.MultipartyDecryptLead([ct], kps[0].secretKey))
    times.append(t)
    parts.append(lead[0])
    for kp in kps[1:]:
        t, main = harness.timed(lambda: cc.MultipartyDecryptMain([ct], kp.secretKey))
        times.append(t)
        parts.append(main[0])
    agg, pt = harness.timed(lambda: cc.MultipartyDecryptFusion(parts))
    row("decryption share", times, size(parts[0]), agg)
    pt.SetLength(slots)
    got = np.array(pt.GetRealPackedValue())
    err = float(np.max(np.abs(got - np.roll(x * y, -1))))
    check = harness.emit(
        {"lib": "openfhe", "params": name, "parties": n_parties, "step": "check", "max_error": err}, out
    )
    if not err < 2.0**-5:
        raise SystemExit("OpenFHE's joint keys gave an error of %g" % err)
    return rows + [check]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", nargs="+", default=["H15", "H16"], choices=sorted(SETS))
    ap.add_argument("--parties", nargs="+", type=int, default=[3, 10])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="also append the JSON lines here")
    args = ap.parse_args()
    if os.environ.get("OMP_NUM_THREADS") != str(args.threads):
        log("WARNING: OMP_NUM_THREADS=%r but --threads %d" % (os.environ.get("OMP_NUM_THREADS"), args.threads))
    for name in args.params:
        for n in args.parties:
            log("%s, %d parties" % (name, n))
            run(name, n, args.threads, args.json)


if __name__ == "__main__":
    main()
