#!/usr/bin/env python3
"""Serialized sizes in Microsoft SEAL (seal-python: uncompressed, zstd, and seeded where SEAL seeds) and TenSEAL, for
the primes of a named kasoku parameter set, beside kasoku's (bench/sizes.py) in docs/SERIALIZATION.md.

    .venv/bin/python bench/peer_sizes.py --params H15 --out docs/data/sizes.jsonl

SEAL and TenSEAL run in bench/.venv-seal (made and filled on first use, as bench/peers.py does), in a subprocess.
Both take one special prime (the last of the list), so their key-switching keys have one digit per prime of Q, where
kasoku's have dnum digits: the table says so. TenSEAL refuses N = 2^16.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent

# first prime, scale primes, special primes (bits), as docs/PARAMS.md has them
SETS = {"H15": (15, 60, [40] * 12, 60), "H16": (16, 60, [40] * 20, 60), "M14": (14, 60, [40] * 4, 60)}


def worker(name: str, out: str) -> None:
    from importlib.metadata import version

    import numpy as np
    import seal

    log_n, first, scale_bits, special = SETS[name]
    n = 1 << log_n
    bits = [first, *scale_bits, special]
    recs = []

    def emit(lib, what, nbytes, mode, note=""):
        recs.append(
            {"lib": lib, "op": "size", "params": name, "what": what, "bytes": nbytes, "mode": mode, "note": note}
        )

    parms = seal.EncryptionParameters(seal.scheme_type.ckks)
    parms.set_poly_modulus_degree(n)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(n, bits))
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
    kg = seal.KeyGenerator(ctx)
    sk, pk = kg.secret_key(), kg.create_public_key()
    rk, gk = kg.create_relin_keys(), seal.GaloisKeys()
    kg.create_galois_keys([1], gk)
    enc = seal.CKKSEncoder(ctx)
    pt = enc.encode(np.random.default_rng(3).uniform(-1, 1, n // 2), 2.0 ** scale_bits[0])
    ct_pk = seal.Encryptor(ctx, pk).encrypt(pt)
    modes = dict(seal.compr_mode_type.__members__)  # the PyPI wheel: none only (built without zlib / zstd)
    recs.append(
        {
            "lib": "seal",
            "op": "note",
            "params": name,
            "note": f"seal-python {version('seal-python')} compression modes: {', '.join(modes)}",
        }
    )
    for what, obj in (
        ("ciphertext (public-key encryption)", ct_pk),
        ("public key", pk),
        ("secret key", sk),
        ("relinearisation key", rk),
        ("one Galois key (step 1)", gk),
    ):
        emit("seal", what, len(obj.to_string()), "none")
    # seal-python returns SEAL's objects materialised (no Serializable): its secret-key ciphertexts and keys are
    # written in full, where SEAL's C++ API can write their uniform halves as seeds.
    sym = seal.Encryptor(ctx, pk)
    sym.set_secret_key(sk)
    ct_sk = sym.encrypt_symmetric(pt)
    emit(
        "seal",
        "ciphertext (secret-key encryption)",
        len(ct_sk.to_string()),
        "none",
        "seal-python's encrypt_symmetric returns the ciphertext, not SEAL's seeded Serializable",
    )
    if log_n <= 15:
        import tenseal as ts

        tctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=n, coeff_mod_bit_sizes=bits)
        tctx.global_scale = 2.0 ** scale_bits[0]
        tctx.generate_galois_keys()
        tctx.generate_relin_keys()
        recs.append({"lib": "tenseal", "op": "note", "params": name, "note": f"tenseal {version('tenseal')}"})
        v = ts.ckks_vector(tctx, list(np.random.default_rng(3).uniform(-1, 1, n // 2)))
        emit("tenseal", "ciphertext (public-key encryption)", len(v.serialize()), "default")
        pub = tctx.copy()
        pub.make_context_public()
        try:
            emit(
                "tenseal",
                "public context: public, relin and Galois keys (all power-of-2 steps)",
                len(
                    pub.serialize(
                        save_public_key=True, save_secret_key=False, save_galois_keys=True, save_relin_keys=True
                    )
                ),
                "default",
                "TenSEAL serializes keys inside its context",
            )
        except ValueError as e:  # a protobuf message is limited to 2 GiB
            recs.append(
                {
                    "lib": "tenseal",
                    "op": "note",
                    "params": name,
                    "note": f"serializing the context with its Galois keys failed: {e}",
                }
            )
        emit("tenseal", "public context without Galois keys", len(pub.serialize(save_galois_keys=False)), "default")
    for r in recs:
        harness.emit(r, out, echo=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="H15", choices=sorted(SETS))
    ap.add_argument("--out", help="append the JSON lines here")
    ap.add_argument("--_worker", dest="worker", metavar="OUT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.params, args.worker)
        return 0
    sys.path.insert(0, str(HERE))
    from peers import clean_env, ensure_venv

    py = ensure_venv(
        HERE / ".venv-seal",
        sys.executable,
        sys.version_info[:2],
        "seal, tenseal, numpy",
        ["seal-python", "tenseal", "numpy"],
    )
    tmp = HERE / f".peer-sizes-{args.params}.jsonl"
    tmp.unlink(missing_ok=True)  # the worker appends
    subprocess.run([str(py), __file__, "--params", args.params, "--_worker", str(tmp)], check=True, env=clean_env(1))
    recs = harness.read(tmp)
    tmp.unlink()
    for r in recs:
        if r["op"] == "size":
            print(f"{r['lib']:<8}{r['what']:<72}{r['mode']:>8}{r['bytes']:>16,}")
        else:
            print(f"{r['lib']:<8}{r['note']}")
        if args.out:  # the table is what this prints
            harness.emit(r, args.out, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
