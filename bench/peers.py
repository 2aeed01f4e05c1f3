#!/usr/bin/env python3
"""Side-by-side CKKS benchmark: kasoku vs OpenFHE (or SEAL) on the same parameters.

    python bench/peers.py --params H16 --threads 1 [--reps 5] [--out results.jsonl]

1. kasoku is measured by ``python -m kasoku bench`` (a subprocess of the current
   interpreter), which writes JSON lines.
2. The peer is OpenFHE (PyPI ``openfhe`` 1.6.x).  Its wheel only exists for
   CPython 3.10, so this script finds a python3.10, keeps a virtual environment
   for it in ``bench/.venv-openfhe`` (created and filled on first use) and runs
   ``bench/openfhe_ops.py`` there with ``OMP_NUM_THREADS=<threads>``.
   Without any python3.10 it says so and compares against Microsoft SEAL
   (``seal-python``, in ``bench/.venv-seal``) instead.
3. The two runs happen one after the other, never at the same time, and the
   script prints a table of medians with the ratio kasoku/peer per operation,
   the serialized sizes, the machine and the date.  ``--out`` appends every JSON
   line (both libraries, one summary line per operation, one meta line).

``--peer-only`` runs only the peer; ``--kasoku-json PATH`` reuses an existing
kasoku results file instead of running kasoku.

This file only needs the standard library: numpy and the peer libraries are
imported inside the peer workers, which run in their own virtual environments.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

BENCH_DIR = Path(__file__).resolve().parent
OPENFHE_WORKER = BENCH_DIR / "openfhe_ops.py"
OPENFHE_REQUIREMENT = "openfhe>=1.6,<1.7"

# The parameter sets of docs/PARAMS.md.  dnum is the number of key-switching digits
# (HYBRID); special_bits are kasoku's special primes.  OpenFHE chooses its own
# special primes (60-bit, as many as its security/noise logic wants) and SEAL
# supports exactly one, so only N, Q and dnum are imposed on the peers.
PARAMS = {
    "T13": {"logn": 13, "depth": 2, "first_bits": 60, "scale_bits": 40, "special_bits": [60], "dnum": 3},
    "H15": {"logn": 15, "depth": 12, "first_bits": 60, "scale_bits": 40, "special_bits": [48] * 5, "dnum": 3},
    "H16": {"logn": 16, "depth": 20, "first_bits": 60, "scale_bits": 40, "special_bits": [48] * 7, "dnum": 3},
}

# Rows of the table, in order.  Indented rows are shown only when a library reports them.
MAIN_OPS = ["KeyGen", "Encode", "Encrypt", "DecryptDecode", "Add", "MulRelinRescale", "Rotate", "NTT"]
SUB_OPS = {"KeyGen": ["KeyGenSecretPublic", "KeyGenRelin", "KeyGenRotation"]}
SIZES = ["ciphertext", "public_key", "relin_key", "galois_key", "secret_key"]


def progress(msg: str) -> None:
    print("[peers] " + msg, file=sys.stderr, flush=True)


def spec_for(name: str) -> dict:
    spec = dict(PARAMS[name], name=name)
    spec["log2_q"] = spec["first_bits"] + spec["depth"] * spec["scale_bits"]
    spec["log2_qp"] = spec["log2_q"] + sum(spec["special_bits"])
    return spec


# --------------------------------------------------------------------------
# Peer environments
# --------------------------------------------------------------------------


def python_version_of(exe: str) -> tuple[tuple[int, int], str] | None:
    """((major, minor), real sys.executable) of an interpreter, or None if it does not run.

    pyenv shims exist for every installed version but fail unless that version
    is activated, so a path found on PATH must be tried, not trusted.
    """
    try:
        out = subprocess.run(
            [exe, "-c", "import sys; print(sys.version_info[0], sys.version_info[1]); print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    lines = out.stdout.split("\n")
    major, minor = (int(x) for x in lines[0].split())
    return (major, minor), lines[1].strip()


def find_python310(explicit: str | None = None) -> str | None:
    """A working CPython 3.10 interpreter: --python310, python3.10 on PATH, pyenv, usual places."""
    candidates = []
    if explicit:
        candidates.append(explicit)
    on_path = shutil.which("python3.10")
    if on_path:
        candidates.append(on_path)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))

    def patch_level(path: str) -> int:
        m = re.search(r"/3\.10\.(\d+)", path)
        return int(m.group(1)) if m else -1

    candidates += sorted(
        glob.glob(os.path.join(pyenv_root, "versions", "3.10*", "bin", "python3.10")), key=patch_level, reverse=True
    )
    candidates += ["/usr/bin/python3.10", "/usr/local/bin/python3.10"]
    seen = set()
    for cand in candidates:
        if cand in seen or not os.path.exists(cand):
            continue
        seen.add(cand)
        info = python_version_of(cand)
        if info and info[0] == (3, 10):
            return info[1]
    if explicit:
        progress(f"--python310 {explicit} is not a working CPython 3.10")
    return None


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path, base_python: str, want: tuple[int, int], modules: str, packages: list[str]) -> Path:
    """Create ``venv`` with ``base_python`` if needed and pip-install ``packages`` if ``import modules`` fails."""
    py = venv_python(venv)
    info = python_version_of(str(py)) if py.exists() else None
    if info is None or info[0] != want:
        progress(f"creating venv {venv} with {base_python}...")
        subprocess.run([base_python, "-m", "venv", "--clear", str(venv)], check=True, stdout=sys.stderr)
    check = subprocess.run([str(py), "-c", f"import {modules}"], capture_output=True, text=True, env=clean_env())
    if check.returncode != 0:
        progress(f"installing {' '.join(packages)} into {venv}...")
        subprocess.run(
            [str(py), "-m", "pip", "install", "--disable-pip-version-check", *packages],
            check=True,
            stdout=sys.stderr,
            env=clean_env(),
        )
        subprocess.run([str(py), "-c", f"import {modules}"], check=True, env=clean_env())
    return py


def clean_env(threads: int | None = None) -> dict:
    """Environment for a peer process: no PYTHONPATH/PYTHONHOME leaking in from this interpreter."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    if threads is not None:
        # Must be in the environment before the peer library (and its OpenMP runtime) loads.
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def run_worker(cmd: list[str], threads: int, out_path: Path) -> list[dict]:
    progress("running: " + " ".join(cmd[:2]) + " ...")
    secs, proc = harness.timed(lambda: subprocess.run(cmd, env=clean_env(threads), stdout=sys.stderr))
    if proc.returncode != 0:
        raise RuntimeError(f"peer worker failed with exit code {proc.returncode} (see its output above)")
    progress(f"peer done in {secs:.1f} s")
    return harness.read(out_path)


# --------------------------------------------------------------------------
# SEAL fallback worker (runs inside bench/.venv-seal via `peers.py --_seal-worker`)
# --------------------------------------------------------------------------


def seal_worker(spec: dict, threads: int, reps: int, out: str, seed: int = 1) -> None:
    """Same ops as openfhe_ops.py with Microsoft SEAL (seal-python).

    SEAL has one special prime only (the last modulus), so its key switching
    uses digits of one prime each (dnum = L+1) and a 60-bit P.
    """
    import gc
    import importlib.metadata

    import numpy as np
    import seal

    n = 1 << spec["logn"]
    slots = n // 2
    scale = 2.0 ** spec["scale_bits"]
    name = spec["name"]

    def emit(op, **fields):
        """One line, as it is measured: printed (on the parent's stderr) and appended to `out`."""
        rec = {"lib": "seal", "op": op, "params": name, "threads": threads}
        rec.update(fields)
        harness.emit(rec, out)

    def timed(fn):
        """median_ms, min_ms, max_ms, reps of fn after one warm-up (each result released after its clock stops)."""
        fn()  # warm-up
        gc.collect()
        return harness.summary(harness.times(fn, reps), "ms")

    bits = [spec["first_bits"]] + [spec["scale_bits"]] * spec["depth"] + [60]
    parms = seal.EncryptionParameters(seal.scheme_type.ckks)
    parms.set_poly_modulus_degree(n)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(n, bits))
    security, security_note = "tc128", None
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
    if not ctx.parameters_set():
        security_note = f"SEAL rejected tc128 ({ctx.parameter_error_message()}); ran with sec_level none"
        security = "none"
        ctx = seal.SEALContext(parms, True, seal.sec_level_type.none)

    def keygen():
        """The keys, each part timed: ((sk, pk, rk, gk), {part: seconds})."""
        part = {}

        def secret_public():
            gen = seal.KeyGenerator(ctx)
            return gen, gen.secret_key(), gen.create_public_key()

        def galois():
            gk = seal.GaloisKeys()
            kg.create_galois_keys([1], gk)  # only the key for rotation by 1
            return gk

        part["KeyGenSecretPublic"], (kg, sk, pk) = harness.timed(secret_public)
        part["KeyGenRelin"], rk = harness.timed(kg.create_relin_keys)
        part["KeyGenRotation"], gk = harness.timed(galois)
        return (sk, pk, rk, gk), part

    walls = {"KeyGen": [], "KeyGenSecretPublic": [], "KeyGenRelin": [], "KeyGenRotation": []}
    for i in range(reps + 1):
        total, ((sk, pk, rk, gk), part) = harness.timed(keygen)
        if i:  # the first: a warm-up
            for op, secs in {**part, "KeyGen": total}.items():
                walls[op].append(secs)
    emit(
        "KeyGen",
        note="KeyGenerator (secret) + public + relin + galois key for step 1",
        **harness.summary(walls.pop("KeyGen"), "ms"),
    )
    for op, w in walls.items():
        emit(op, **harness.summary(w, "ms"))

    encoder = seal.CKKSEncoder(ctx)
    encryptor = seal.Encryptor(ctx, pk)
    decryptor = seal.Decryptor(ctx, sk)
    ev = seal.Evaluator(ctx)
    rng = np.random.default_rng(seed)
    v1 = rng.uniform(-1.0, 1.0, slots)
    v2 = rng.uniform(-1.0, 1.0, slots)
    pt1 = encoder.encode(v1, scale)
    c1 = encryptor.encrypt(pt1)
    c2 = encryptor.encrypt(encoder.encode(v2, scale))

    def mul_relin_rescale():
        ct = ev.multiply(c1, c2)
        ev.relinearize_inplace(ct, rk)
        ev.rescale_to_next_inplace(ct)
        return ct

    def err(ct, ref):
        return float(np.max(np.abs(encoder.decode(decryptor.decrypt(ct))[:slots] - ref)))

    emit(
        "check",
        max_err_decrypt=err(c1, v1),
        max_err_add=err(ev.add(c1, c2), v1 + v2),
        max_err_mul_relin_rescale=err(mul_relin_rescale(), v1 * v2),
        max_err_rotate=err(ev.rotate_vector(c1, 1, gk), np.roll(v1, -1)),
    )
    for op, fn in [
        ("Encode", lambda: encoder.encode(v1, scale)),
        ("Encrypt", lambda: encryptor.encrypt(pt1)),
        ("DecryptDecode", lambda: encoder.decode(decryptor.decrypt(c1))),
        ("Add", lambda: ev.add(c1, c2)),
        ("MulRelinRescale", mul_relin_rescale),
        ("Rotate", lambda: ev.rotate_vector(c1, 1, gk)),
    ]:
        print(f"[seal] {op} x{reps} (+1 warm-up)", file=sys.stderr, flush=True)
        emit(op, **timed(fn))

    sizes = {
        "ciphertext": len(c1.to_string(seal.compr_mode_type.none)),
        "public_key": len(pk.to_string()),
        "relin_key": len(rk.to_string()),
        "galois_key": len(gk.to_string()),
        "secret_key": len(sk.to_string()),
    }
    for what, nbytes in sizes.items():
        emit(
            "size",
            what=what,
            bytes=nbytes,
            note="to_string(); ciphertext uncompressed, keys in SEAL's default compression mode",
        )
    emit(
        "params",
        seal_version=importlib.metadata.version("seal-python"),
        ring_dim=n,
        log2_q=spec["first_bits"] + spec["scale_bits"] * spec["depth"],
        num_q_primes=spec["depth"] + 1,
        num_special_primes=1,
        special_prime_bits=60,
        log2_qp=sum(bits),
        dnum=spec["depth"] + 1,
        security=security,
        security_note=security_note,
        note="SEAL supports one special prime: key switching uses one digit per prime (dnum = L+1); "
        "SEAL is single-threaded; NTT is not measured.",
    )


# --------------------------------------------------------------------------
# kasoku side
# --------------------------------------------------------------------------


def run_kasoku(params: str, threads: int, reps: int, path: Path, extra: list[str]) -> list[dict]:
    cmd = [
        sys.executable,
        "-m",
        "kasoku",
        "bench",
        "--params",
        params,
        "--threads",
        str(threads),
        "--reps",
        str(reps),
        "--json",
        str(path),
    ] + extra
    progress("running: " + " ".join(cmd[1:]))
    secs, proc = harness.timed(lambda: subprocess.run(cmd, stdout=sys.stderr))
    if proc.returncode != 0:
        raise RuntimeError(f"`python -m kasoku bench` failed with exit code {proc.returncode}")
    progress(f"kasoku done in {secs:.1f} s")
    return harness.read(path)


def kasoku_info(max_lines: int = 8) -> list[str]:
    try:
        out = subprocess.run([sys.executable, "-m", "kasoku", "info"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [f"(python -m kasoku info failed: {e})"]
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"(python -m kasoku info failed: {last})"]
    return [line.rstrip() for line in out.stdout.splitlines() if line.strip()][:max_lines]


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def index(recs: list[dict], lib: str, params: str) -> tuple[dict, dict, dict]:
    """(timings by op, sizes by what, other records by op) of one library."""
    times, sizes, other = {}, {}, {}
    for r in recs:
        if r.get("lib") != lib or r.get("params", params) != params:
            continue
        if r.get("op") == "size":
            sizes[r["what"]] = r
        elif "median_ms" in r:
            times[r["op"]] = r
        else:
            other[r["op"]] = r
    return times, sizes, other


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.4f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.1f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def build_report(args, spec, peer, kasoku_recs, peer_recs, meta, notes) -> tuple[str, list[dict]]:
    p = args.params
    k_times, k_sizes, _ = index(kasoku_recs, "kasoku", p)
    p_times, p_sizes, p_other = index(peer_recs, peer, p)
    pp = p_other.get("params", {})  # what the peer actually chose
    peer_version = pp.get("openfhe_version") or pp.get("seal_version") or "?"
    summary = []

    rows = []
    extra = sorted((set(k_times) | set(p_times)) - set(MAIN_OPS) - {s for v in SUB_OPS.values() for s in v})
    for op in MAIN_OPS + extra:
        rows.append((op, op))
        for sub in SUB_OPS.get(op, []):
            if sub in k_times or sub in p_times:
                rows.append(("  " + sub, sub))

    out = []
    width = 22
    out.append(
        f"kasoku vs {peer} {peer_version} | CKKS {p}: N=2^{spec['logn']}, depth {spec['depth']}, "
        f"dnum {spec['dnum']}, scale 2^{spec['scale_bits']} | threads {args.threads} | "
        f"median of {args.reps} reps after 1 warm-up"
    )
    out.append(f"date:    {meta['date']}")
    out.append(f"machine: {meta['machine']} ({meta['usable_cores']} usable); {meta['platform']}")
    info = meta["kasoku_info"]
    out.append("kasoku:  " + (info[0] if info else "(no info)"))
    out += ["         " + line for line in info[1:]]
    out.append("")
    out.append(f"{'op':<{width}}{'kasoku ms':>12}{peer + ' ms':>14}{'kasoku/' + peer:>16}")
    for label, op in rows:
        k = k_times.get(op, {}).get("median_ms")
        q = p_times.get(op, {}).get("median_ms")
        out.append(f"{label:<{width}}{fmt_ms(k):>12}{fmt_ms(q):>14}{fmt_ratio(k, q):>16}")
        if k is not None or q is not None:
            summary.append(
                {
                    "lib": "summary",
                    "op": op,
                    "params": p,
                    "threads": args.threads,
                    "peer": peer,
                    "kasoku_median_ms": k,
                    "peer_median_ms": q,
                    "ratio": None if k is None or not q else k / q,
                }
            )
    out.append("")
    out.append(f"{'size':<{width}}{'kasoku bytes':>14}{peer + ' bytes':>16}{'kasoku/' + peer:>16}")
    for what in SIZES:
        k = k_sizes.get(what, {}).get("bytes")
        q = p_sizes.get(what, {}).get("bytes")
        out.append(
            f"{what:<{width}}{(f'{k:,}' if k is not None else 'n/a'):>14}"
            f"{(f'{q:,}' if q is not None else 'n/a'):>16}{fmt_ratio(k, q):>16}"
        )
        if k is not None or q is not None:
            summary.append(
                {
                    "lib": "summary",
                    "op": "size",
                    "what": what,
                    "params": p,
                    "threads": args.threads,
                    "peer": peer,
                    "kasoku_bytes": k,
                    "peer_bytes": q,
                    "ratio": None if k is None or not q else k / q,
                }
            )

    cheb = sorted((op for op in set(k_times) | set(p_times) if op.startswith("Chebyshev")), key=lambda o: int(o[9:]))
    if cheb:
        out.append("")
        out.append(f"{'Chebyshev series':<{width}}{'levels':>14}{'bits (worst slot)':>22}{'products':>10}")
        for op in cheb:
            k, q = k_times.get(op, {}), p_times.get(op, {})
            out.append(
                f"{'degree ' + op[9:]:<{width}}{str(k.get('levels', '-')) + ' / ' + str(q.get('levels', '-')):>14}"
                f"{format(k.get('bits', float('nan')), '.1f') + ' / ' + format(q.get('bits', float('nan')), '.1f'):>22}"
                f"{str(k.get('products', '-')):>10}"
            )
        notes.append(
            "Chebyshev series: the same coefficients on both sides (uniform in [-1, 1] divided by i^2, seeded "
            "by the degree) on a fresh top-level ciphertext of values in [-1, 1]; levels and bits are "
            f"kasoku / {peer}; products: kasoku's ciphertext products."
        )

    # Notes: everything a reader needs to trust (or distrust) the ratios.
    notes = list(notes)
    notes.append(
        f"kasoku parameters: N=2^{spec['logn']}, log2 Q = {spec['log2_q']} "
        f"({spec['depth'] + 1} primes), {len(spec['special_bits'])} special prime(s) of "
        f"{spec['special_bits'][0]} bits, log2 QP = {spec['log2_qp']}, dnum {spec['dnum']}."
    )
    if pp:
        qp = pp.get("log2_qp")
        notes.append(
            f"{peer} parameters: ring dim {pp.get('ring_dim')}, log2 Q = {pp.get('log2_q')} "
            f"({pp.get('num_q_primes')} primes), {pp.get('num_special_primes', '?')} special prime(s) "
            f"of ~{pp.get('special_prime_bits')} bits, log2 QP {'~ ' + str(qp) if qp else 'unknown'}, "
            f"dnum {pp.get('dnum')}"
            + (
                f", {pp.get('scaling_technique')}, {pp.get('keyswitch_technique')}"
                if pp.get("scaling_technique")
                else ""
            )
            + f", security {pp.get('security')}. {pp.get('note', '')}"
        )
        if pp.get("security_note"):
            notes.append("WARNING: " + pp["security_note"])
    for lib, t in (("kasoku", k_times), (peer, p_times)):
        if t.get("KeyGen", {}).get("note"):
            notes.append(f"KeyGen ({lib}): {t['KeyGen']['note']}.")
    if "NTT" not in p_times:
        notes.append(f"NTT: not measured for {peer} (not exposed by its Python API).")
    chk = p_other.get("check")
    if chk:
        errs = {k: v for k, v in chk.items() if k.startswith("max_err")}
        worst = max(errs.values()) if errs else 0.0
        notes.append(
            f"{peer} decryption check: max abs error {worst:.1e} over "
            f"{', '.join(e[8:] for e in errs)}" + ("" if worst < 1e-3 else "  <-- SUSPICIOUS")
        )
    for lib, s in (("kasoku", k_sizes), (peer, p_sizes)):
        if s:
            n = next(iter(s.values())).get("note")
            if n:
                notes.append(f"sizes ({lib}): {n}.")
    notes.append(
        f"ratio = kasoku median / {peer} median: below 1 means kasoku is faster (or smaller). "
        "Expect ~10-15% run-to-run noise on a shared 2-core machine; use --reps >= 5."
    )

    out.append("")
    out.append("notes:")
    out += ["- " + n for n in notes]
    return "\n".join(out), summary


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="kasoku vs OpenFHE (or SEAL) CKKS benchmark, side by side.")
    ap.add_argument("--params", choices=sorted(PARAMS), required=True, help="parameter set (docs/PARAMS.md)")
    ap.add_argument("--threads", type=int, default=1, help="threads for both libraries (default 1)")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per op, after 1 warm-up (default 5)")
    ap.add_argument("--out", help="append all JSON lines (both libraries, summaries, meta) to this file")
    ap.add_argument("--peer-only", action="store_true", help="run only the peer library")
    ap.add_argument(
        "--hoisting",
        action="store_true",
        help="also the sum of all slots (kasoku sum_slots vs OpenFHE EvalSum) and 16 hoisted rotations "
        "(rotate_hoisted vs EvalFastRotationPrecompute + 16 EvalFastRotation); OpenFHE only",
    )
    ap.add_argument(
        "--poly",
        action="store_true",
        help="also Chebyshev series of degree 7..255 (evaluate_polynomial vs EvalChebyshevSeries), with "
        "the levels each takes and its precision; OpenFHE only",
    )
    ap.add_argument("--kasoku-json", metavar="PATH", help="use this kasoku results file instead of running kasoku")
    ap.add_argument(
        "--peer",
        choices=["auto", "openfhe", "seal"],
        default="auto",
        help="auto (default): OpenFHE if a python3.10 exists, else SEAL",
    )
    ap.add_argument("--python310", metavar="PATH", help="CPython 3.10 interpreter for the OpenFHE venv")
    ap.add_argument("--venv", metavar="DIR", help="peer venv (default bench/.venv-openfhe or bench/.venv-seal)")
    ap.add_argument("--_seal-worker", dest="seal_worker", metavar="OUT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reps < 1 or args.threads < 1:
        ap.error("--reps and --threads must be >= 1")
    spec = spec_for(args.params)

    if args.seal_worker:  # internal: we are the SEAL worker inside bench/.venv-seal
        seal_worker(spec, args.threads, args.reps, args.seal_worker)
        return 0

    notes = []
    # 1. Choose and prepare the peer before timing anything.
    peer = args.peer
    py310 = find_python310(args.python310) if peer in ("auto", "openfhe") else None
    if peer == "auto":
        peer = "openfhe" if py310 else "seal"
        if not py310:
            msg = (
                "NO python3.10 FOUND (looked on PATH and under ~/.pyenv/versions/3.10*): the openfhe "
                "wheel needs CPython 3.10, so this run compares against Microsoft SEAL instead of OpenFHE."
            )
            progress(msg)
            notes.append(msg)
    if peer == "openfhe" and not py310:
        progress("no working CPython 3.10 found; cannot run OpenFHE (use --python310 PATH or --peer seal)")
        return 2
    if peer == "openfhe":
        venv = Path(args.venv) if args.venv else BENCH_DIR / ".venv-openfhe"
        peer_py = ensure_venv(venv, py310, (3, 10), "openfhe, numpy", [OPENFHE_REQUIREMENT, "numpy"])
    else:
        venv = Path(args.venv) if args.venv else BENCH_DIR / ".venv-seal"
        peer_py = ensure_venv(venv, sys.executable, sys.version_info[:2], "seal, numpy", ["seal-python", "numpy"])
        if args.threads > 1:
            notes.append("SEAL is single-threaded: its timings do not use --threads.")

    meta = {
        "lib": "meta",
        "params": args.params,
        "threads": args.threads,
        "reps": args.reps,
        "peer": peer,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": harness.machine(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "kasoku_info": kasoku_info(),
        "peer_python": os.path.relpath(peer_py, BENCH_DIR.parent),
    }

    rc = 0
    extra = (["--hoisting"] if args.hoisting else []) + (["--poly"] if args.poly else [])
    with tempfile.TemporaryDirectory(prefix="kasoku-peers-") as tmp:
        tmp = Path(tmp)
        # 2. kasoku (never concurrently with the peer).
        kasoku_recs = []
        if args.kasoku_json:
            kasoku_recs = harness.read(args.kasoku_json)
            mine = [r for r in kasoku_recs if r.get("lib") == "kasoku"]
            if not any(r.get("params") == args.params for r in mine):
                notes.append(f"WARNING: {args.kasoku_json} has no kasoku lines for {args.params}.")
            if any(r.get("threads") not in (None, args.threads) for r in mine if r.get("params") == args.params):
                notes.append(f"WARNING: {args.kasoku_json} was measured with a different thread count.")
            notes.append(f"kasoku numbers read from {args.kasoku_json}.")
        elif not args.peer_only:
            try:
                kasoku_recs = run_kasoku(args.params, args.threads, args.reps, tmp / "kasoku.jsonl", extra)
            except (RuntimeError, OSError) as e:
                progress(f"ERROR: {e}")
                notes.append(f"ERROR: kasoku was not measured: {e}.")
                rc = 1
        else:
            notes.append("--peer-only: kasoku was not run.")

        # 3. The peer, in its own venv and process.
        peer_out = tmp / f"{peer}.jsonl"
        if peer == "openfhe":
            cmd = [
                str(peer_py),
                str(OPENFHE_WORKER),
                "--spec",
                json.dumps(spec),
                "--threads",
                str(args.threads),
                "--reps",
                str(args.reps),
                "--out",
                str(peer_out),
            ] + extra
        else:
            cmd = [
                str(peer_py),
                str(Path(__file__).resolve()),
                "--params",
                args.params,
                "--threads",
                str(args.threads),
                "--reps",
                str(args.reps),
                "--_seal-worker",
                str(peer_out),
            ]
        try:
            peer_recs = run_worker(cmd, args.threads, peer_out)
        except (RuntimeError, OSError) as e:
            progress(f"ERROR: {e}")
            notes.append(f"ERROR: {peer} was not measured: {e}.")
            peer_recs, rc = [], 1

    report, summary = build_report(args, spec, peer, kasoku_recs, peer_recs, meta, notes)
    print(report)
    if args.out:  # every line was shown (on stderr) as it came; the report is what this prints
        for rec in [meta] + kasoku_recs + peer_recs + summary:
            harness.emit(rec, args.out, echo=False)
        progress(f"appended {1 + len(kasoku_recs) + len(peer_recs) + len(summary)} JSON lines to {args.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
