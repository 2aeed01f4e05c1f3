#!/usr/bin/env python3
"""Bootstrapping: time (total and per stage), precision, key size and peak memory, one JSON line per run.

    .venv/bin/python bench/bootstrap.py --params BOOT15 BOOT16 --threads 1 --reps 3 [--out results.jsonl]
    .venv/bin/python bench/bootstrap.py --log-n 10 12 14 --threads 1 --reps 3
    .venv/bin/python bench/bootstrap.py --params BOOT16 --slots 4096 [--arcsine-degree 3]
    .venv/bin/python bench/bootstrap.py --params BOOT16 --whole-keys   # default: compact keys, as ctx.keygen makes them
    .venv/bin/python bench/bootstrap.py --params BOOT16 --real --at-use   # the transforms encoded at each bootstrap
    .venv/bin/python bench/bootstrap.py --params BOOT16 --device cuda --reps 5
    .venv/bin/python bench/bootstrap.py --params BOOT16 --k-bound 10 --double-angle 3 --cos-degree 31   # EvalMod given
    .venv/bin/python bench/bootstrap.py --nn 12x50 12x48 --slots 16384 --real --at-use   # kasoku.nn's sets

--params: named sets (docs/PARAMS.md). --nn LxB: the set kasoku.nn.compile makes for a plan of L user levels with
B-bit bootstrapping and special primes (kasoku.nn.placement.bootstrapping_params). --log-n: research parameters
(security=None) of one prime size: q_0 60 bits, 17 levels of 50 bits, 3 special primes of 60 bits, sparse secret
(h = 64). The default Bootstrapper in every case, or with --slots s (sparse packing, s < n/2), --arcsine-degree and
--stc-first.
Inputs: uniform complex values in the unit disk (s of them, repeated, with --slots), encrypted at the lowest level the
bootstrapper takes (0; SlotToCoeff first: its stc_levels). Precision: -log2 of the error per slot, its
mean and its worst. Peak memory: the process's maximum resident set so far (run one set per process to read it per
set).
"""

import argparse
import resource
import statistics
import sys
import time

import harness
import numpy as np

import kasoku as ks


def research(log_n: int) -> ks.Parameters:
    return ks.Parameters.named("TS10").replace(log_n=log_n)


def progress(msg: str) -> None:
    print(f"[bootstrap bench] {msg}", file=sys.stderr, flush=True)


def run(
    params: ks.Parameters,
    threads: int,
    reps: int,
    log_message_ratio: int,
    slots: int,
    arcsine_degree: int,
    stc_first: bool,
    device: str = "cpu",
    compact_keys: bool | None = None,
    real: bool = False,
    at_use: bool = False,
    evalmod: dict | None = None,
    label: str | None = None,
) -> dict:
    ctx = ks.Context(params, threads=threads, device=device)
    progress(f"{params!r}: planning")
    t = time.perf_counter()
    boot = ks.Bootstrapper(
        ctx,
        log_message_ratio=log_message_ratio,
        slots=slots,
        arcsine_degree=arcsine_degree,
        slot_to_coeff_first=stc_first,
        real=real,
        at_use=at_use,
        **(evalmod or {}),
    )
    plan_s = time.perf_counter() - t
    plan_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the process's peak so far: context and plan
    t = time.perf_counter()
    progress(f"{boot!r}: key generation")
    keys = ctx.keygen(bootstrapping=boot, compact_keys=compact_keys)
    keys_s = time.perf_counter() - t
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(1)
    if real:  # real values in [-1, 1] (as DESILO's engine takes)
        z = rng.uniform(-1, 1, boot.slots)
    else:  # complex values in the unit disk
        r, phi = np.sqrt(rng.uniform(0, 1, boot.slots)), rng.uniform(0, 2 * np.pi, boot.slots)
        z = r * np.exp(1j * phi)
    ct = ctx.encrypt(z, keys.public, level=boot.input_level, slots=boot.slots)
    times, sys_times, stages, bits = [], [], [], None
    for i in range(reps):
        progress(f"bootstrap {i + 1}/{reps}")
        t, sys0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
        out, stage, counts = ev.bootstrap_profile(ct, boot, return_counts=True)
        ctx.synchronize()
        times.append(time.perf_counter() - t)
        sys_times.append(resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0)
        stages.append(stage)
        err = np.abs(ctx.decrypt(out, keys.secret, slots=boot.slots) - z)
        bits = -np.log2(np.maximum(err, 2.0**-60))
    return {
        "lib": "kasoku",
        "op": "bootstrap",
        "params": params.name or label or "research",
        "log_n": params.log_n,
        "slots": boot.slots,
        "arcsine_degree": arcsine_degree,
        "stc_first": stc_first,
        "real": real,
        "compact_keys": compact_keys is not False,  # None: keygen's default for bootstrapping keys, compact
        "input_level": boot.input_level,
        "threads": ctx.threads,
        "device": ctx.device,
        "reps": reps,
        "median_s": statistics.median(times),
        "min_s": min(times),
        # each bootstrap's wall time and the system time in it (the kernel clearing fresh pages: the first
        # bootstraps of a process, and any whose temporaries the memory pool does not keep)
        "times_s": times,
        "sys_s": sys_times,
        "memory_pool_limit": ks.memory_pool_limit(),
        "stages_s": {k: statistics.median(s[k] for s in stages) for k in stages[0]},
        "counts": counts,  # the operations of one bootstrap: rot (key switches), decompose (ModUps), mod_down, ...
        "plan_s": plan_s,
        "plan_bytes": getattr(boot, "plan_nbytes", None),
        "at_use": at_use,
        "plan_peak_rss_bytes": plan_rss,
        "keygen_s": keys_s,
        "eval_key_bytes": keys.evaluation().nbytes,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "mean_bits": float(np.mean(bits)),
        "worst_bits": float(np.min(bits)),
        "depth": boot.depth,
        "output_level": boot.output_level,
        "user_level": ctx.user_level,
        "scale_bits": params.scale_bits,
        "cos_degree": boot.cos_degree,
        "k_bound": boot.k_bound,
        "double_angle": boot.double_angle,
        "failure_log2": boot.failure["log2_per_bootstrap"],  # -inf: never (JSON -Infinity)
        "reach": boot.failure["reach"],
        "message_ratio": boot.message_ratio,
        "galois_keys": len(boot.galois_elements()),
        "log_qp": params.log_qp,
        "dnum": params.dnum,
        "machine": harness.machine(),
        "simd": ks.simd_active(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", nargs="+", default=[], help="named sets, e.g. BOOT15 BOOT16")
    ap.add_argument("--log-n", type=int, nargs="+", default=[], help="research sets of these ring sizes")
    ap.add_argument(
        "--nn", nargs="+", default=[], metavar="LxB", help="kasoku.nn's sets: L user levels, B-bit bootstrapping primes"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--pool-mb",
        type=int,
        default=0,
        help="ks.set_memory_pool_limit in MiB (0: the library's default, 256): freed buffers kept per thread",
    )
    ap.add_argument("--log-message-ratio", type=int, default=0, help="log2 K (0: the bootstrapper's choice)")
    ap.add_argument("--slots", type=int, default=0, help="sparse packing: this many slots (default: all)")
    ap.add_argument("--arcsine-degree", type=int, default=0, help="arcsine correction (odd degree 3..15; 0: off)")
    ap.add_argument("--stc-first", action="store_true", help="the order SlotToCoeff, ModRaise, CoeffToSlot, EvalMod")
    ap.add_argument(
        "--real", action="store_true", help="real inputs in [-1, 1] and the real-slot bootstrap (one EvalMod)"
    )
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cpu, or cuda: the first CUDA GPU")
    ap.add_argument("--at-use", action="store_true", help="the transforms encoded at each bootstrap (a smaller plan)")
    ap.add_argument("--k-bound", type=float, default=0, help="EvalMod's bound on |I| (0: chosen for --failure-bits)")
    ap.add_argument("--double-angle", type=int, default=None, help="EvalMod's double-angle steps (default: chosen)")
    ap.add_argument("--cos-degree", type=int, default=0, help="the cosine interpolant's degree (0: chosen)")
    ap.add_argument("--failure-bits", type=int, default=128, help="the chosen EvalMod fails at most 2^-this")
    ap.add_argument(
        "--special",
        metavar="BITSxCOUNT",
        help="the named sets with these special primes instead (e.g. 50x10; their digits kept)",
    )
    keys = ap.add_mutually_exclusive_group()
    keys.add_argument(
        "--compact-keys",
        action="store_const",
        const=True,
        dest="compact_keys",
        help="keys whose a-parts each key switch draws from their seed (half the memory; keygen's default here)",
    )
    keys.add_argument(
        "--whole-keys",
        action="store_const",
        const=False,
        dest="compact_keys",
        help="keys held whole (faster, twice the memory)",
    )
    ap.add_argument("--out", help="append the JSON lines to this file")
    args = ap.parse_args()
    sets = [(ks.Parameters.named(n), None) for n in args.params] + [(research(n), None) for n in args.log_n]
    for spec in args.nn:
        from kasoku.nn.placement import bootstrapping_params

        levels, bits = map(int, spec.lower().split("x"))
        sets.append((bootstrapping_params(levels, bits), f"kasoku.nn {levels} levels, {bits}-bit primes"))
    if args.special:
        bits, count = map(int, args.special.lower().split("x"))
        sets = [(p.replace(special_bits=bits, special_primes=count), label) for p, label in sets]
    if not sets:
        ap.error("give --params, --nn and/or --log-n")
    if args.pool_mb:
        ks.set_memory_pool_limit(args.pool_mb << 20)
    for params, label in sets:
        harness.emit(
            run(
                params,
                args.threads,
                args.reps,
                args.log_message_ratio,
                args.slots,
                args.arcsine_degree,
                args.stc_first,
                args.device,
                args.compact_keys,
                args.real,
                args.at_use,
                {
                    "k_bound": args.k_bound,
                    "double_angle": args.double_angle,
                    "cos_degree": args.cos_degree,
                    "failure_bits": args.failure_bits,
                },
                label,
            ),
            args.out,
        )


if __name__ == "__main__":
    main()
