"""The command line, python -m kasoku {info, demo, bench, schedule, serve}: the top floor of the package. Its commands
are modules here (bench, bench_matmul, demo, schedule_cli); they may import any floor below (the library, kasoku.nn,
kasoku.service) and nothing imports them but kasoku/__main__.py."""

from __future__ import annotations

import argparse
import os
import sys

import kasoku as ks
from kasoku.cli import bench, bench_matmul, demo, schedule_cli


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}" if v else "none"


def info() -> int:
    print(f"kasoku {ks.__version__}")
    print(f"SIMD body in use: {ks.simd_active()} (KASOKU_SIMD={os.environ.get('KASOKU_SIMD', 'auto')})")
    print(f"SIMD bodies runnable here: {', '.join(ks.simd_available())}")
    print(f"CPU supports: {', '.join(ks.simd_cpu_supports())}")
    print(f"threads (all cores): {ks.hardware_threads()}")
    cuda = ks.cuda_info()
    if cuda["available"]:
        print(
            f"CUDA device: {cuda['name']}, {cuda['memory_bytes'] / 2**30:.1f} GiB, compute capability "
            f"{cuda['compute_capability']} ({cuda['devices']} device(s)); "
            f"CUDA runtime {_cuda_version(cuda['runtime_version'])}, "
            f"driver {_cuda_version(cuda['driver_version'])}; kernels for {cuda['architectures']}"
        )
    else:
        print(f"CUDA: {'compiled in' if cuda['compiled'] else 'not compiled in'}; no device: {cuda['reason']}")
    for k, v in sorted(ks.build_info().items()):
        print(f"build {k}: {v}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kasoku", description="kasoku: fast CKKS homomorphic encryption")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, SIMD bodies, threads, build options")
    d = sub.add_parser("demo", help="encrypted mean, variance and a polynomial on a data set")
    d.add_argument(
        "--params",
        default="default",
        choices=["default", "H15"],
        help="default: N=2^14, 6 levels, 128-bit; or the named set H15",
    )
    b = sub.add_parser(
        "bench", help="time the core operations (or the matrix products) at a named parameter set (JSON lines)"
    )
    b.add_argument(
        "suite",
        nargs="?",
        default="core",
        choices=["core", "matmul"],
        help="core: the basic operations; matmul: the encrypted matrix products of Manabe et al. (M14 by default)",
    )
    b.add_argument(
        "--params", default=None, help="named parameter set (T12, T13, H15, H16, M14, ...); default T13, M14 for matmul"
    )
    b.add_argument("--threads", type=int, default=None, help="thread count (default: all cores)")
    b.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cpu, or cuda: the first CUDA GPU (each timing waits for the device's work)",
    )
    b.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed repetitions per operation (median reported; default 5, 10 for matmul)",
    )
    b.add_argument("--json", default=None, help="also write the JSON lines to this file")
    b.add_argument(
        "--hoisting",
        action="store_true",
        help="also sum_slots (all slots, default h) and 16 hoisted rotations (their keys take memory: "
        "about 40 Galois keys at H16, ~3.5 GB)",
    )
    b.add_argument(
        "--poly",
        action="store_true",
        help="also Chebyshev series of degree 7, 15, 31, 63, 127, 255 (evaluate_polynomial)",
    )
    b.add_argument("--dims", default="2,4,8,16,32,64", help="matmul: matrix dimensions d")
    b.add_argument("--pairs", type=int, default=10, help="matmul: random pairs per shape for the error means")
    b.add_argument("--blocked", type=int, default=256, help="matmul: dimension of the blocked product (0: none)")
    b.add_argument("--table", default=None, help="matmul: write the markdown table here")
    b.add_argument("--plot", default=None, help="matmul: write the log-log plot of time vs d here (PNG)")
    s = sub.add_parser(
        "schedule",
        help="job streams of task graphs (e^x, Suzuki, Ishimaki and Yamana) on the task scheduler, simulated or real: "
        "JSON lines, a table over D and a latency-per-job plot",
    )
    s.add_argument(
        "--executor",
        default="sim",
        choices=["sim", "real"],
        help="sim: discrete-event simulation from the cost model; real: this machine's threads",
    )
    s.add_argument(
        "--cost",
        default=None,
        help="paper (the source's Xeon Phi tables), measure (time this machine), or a JSON file from "
        "--save-cost; default paper for sim, measure for real",
    )
    s.add_argument(
        "--policy",
        default="all",
        help="policies, comma separated (fixed-1, fixed-half, fixed-full, dynamic, kasoku), or 'all'",
    )
    s.add_argument("--D", default="60,70,80,90,100,120", help="mean inter-arrival times (ms), comma separated")
    s.add_argument("--jobs", type=int, default=2300, help="jobs per stream (the source: 2300)")
    s.add_argument("--window", default="301,1900", help="measured jobs, 1-based inclusive (the source: 301,1900)")
    s.add_argument("--threads", type=int, default=None, help="threads (default 126 for sim, all cores for real)")
    s.add_argument("--seeds", type=int, default=1, help="streams per D (seeds 1..n; the table shows means)")
    s.add_argument(
        "--first-seed",
        type=int,
        default=1,
        help="number the streams from this seed (--seeds 4 --first-seed 5: seeds 5..8), to extend a pass",
    )
    s.add_argument("--params", default="SCHED", help="parameter set for real runs and --cost measure (default SCHED)")
    s.add_argument("--graph", default="exp", help=schedule_cli.GRAPH_HELP)
    s.add_argument("--json", default=None, help="append the JSON lines to this file")
    s.add_argument("--table", default=None, help="write the markdown table over D here")
    s.add_argument("--plot", default=None, help="write the latency-per-job plot here (PNG)")
    s.add_argument("--save-cost", default=None, help="save the cost model used to this JSON file")
    s.add_argument(
        "--reps",
        type=int,
        default=ks.sched.CostModel.DEFAULT_REPS,
        help=f"rounds of timings for --cost measure (medians; default {ks.sched.CostModel.DEFAULT_REPS})",
    )
    s.add_argument(
        "--remeasure",
        action="store_true",
        help="with --executor real and --cost measure: measure the cost model again after each stream (graph, D, "
        "seed); the streams after it and --save-cost take the median of every measurement so far (one model is a "
        "snapshot of a shared machine)",
    )
    s.add_argument(
        "--job-slowdown",
        type=float,
        default=None,
        help="what-if for the simulation: tasks also slow by 1 + S * (jobs in flight) (default: the model's, 0)",
    )
    s.add_argument(
        "--cost-scale",
        type=float,
        default=None,
        metavar="F",
        help="what-if: every task of the cost model takes F times its time (how far each stream's p95 moves when "
        "the model is a few per cent off: run the simulation at 0.97, 1 and 1.03)",
    )
    s.add_argument(
        "--compare",
        default=None,
        metavar="JSONL",
        help="run nothing: compare the runs in this JSON-lines file with --baseline, stream by stream "
        "(ratios per seed, means with 95%% bootstrap intervals; an A/A row when the baseline ran twice "
        "per seed, e.g. --policy fixed-1,kasoku,fixed-1,dynamic); --table and --plot as usual",
    )
    s.add_argument("--baseline", default="fixed-1", help="the policy --compare measures against (default fixed-1)")
    s.add_argument(
        "--simulated",
        default=None,
        metavar="JSONL",
        help="with --compare: the simulator's runs of the same streams (--executor sim --json); adds each real "
        "run's p95 against the simulated one and how many are within 10, 15 and 20 %%",
    )
    s.add_argument(
        "--trace",
        default=None,
        metavar="JSONL",
        help="append every run's tasks (ready, start, end, threads, expected ms) to this file, one line per run",
    )
    s.add_argument(
        "--trace-report",
        nargs="+",
        default=None,
        metavar="JSONL",
        help="run nothing: report where a traced run's time went (measured against expected per task kind "
        "and thread count, waits); with a second trace of the same streams (e.g. --executor sim), the "
        "first task whose start differs, per stream",
    )
    v = sub.add_parser(
        "serve",
        help="the encrypted-compute service: an HTTP server (FastAPI + uvicorn) clients reach "
        "with ks.Client (docs/SERVING.md)",
    )
    v.add_argument("--params", default="SCHED", help="named parameter set the server computes at (default SCHED)")
    v.add_argument("--params-file", default=None, help="or a Parameters.to_bytes() file (custom parameters)")
    v.add_argument(
        "--data",
        default="kasoku-data",
        help="directory of the server's state: clients, key sets, accepted jobs, results, admin_token",
    )
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    v.add_argument("--port", type=int, default=8000)
    v.add_argument(
        "--executor",
        default="local",
        choices=["local", "ray"],
        help="local: this machine's cores under the scheduler; ray: a Ray cluster (kasoku.service.ray_executor)",
    )
    v.add_argument(
        "--ray-address",
        default=None,
        help="executor ray: the cluster to join ('auto', host:port); default: start a local one",
    )
    v.add_argument("--threads", type=int, default=0, help="local executor's threads (0: all cores)")
    v.add_argument(
        "--policy", default="kasoku", help="scheduling policy (fixed-1, fixed-half, fixed-full, dynamic, kasoku)"
    )
    v.add_argument(
        "--capacity",
        type=int,
        default=64,
        help="accepted jobs not yet ended; beyond this the server answers 429 retry later",
    )
    v.add_argument(
        "--cost",
        default="measure",
        help="cost model: measure (timed once, cached in --data), paper, or a CostModel JSON file",
    )
    v.add_argument("--max-job-mb", type=int, default=256, help="largest job request body (MiB)")
    v.add_argument("--log-level", default="warning", help="uvicorn's log level")
    v.add_argument(
        "--write-openapi",
        default=None,
        metavar="FILE",
        help="write the HTTP API's OpenAPI description to FILE and exit (docs/openapi.json)",
    )
    args = ap.parse_args(argv)
    try:
        if args.cmd == "info":
            return info()
        if args.cmd == "serve":
            from kasoku.service import app  # here: it needs FastAPI and uvicorn (kasoku[serve]), the other commands not

            return app.main(args)
        if args.cmd == "demo":
            return demo.main(args.params)
        if args.cmd == "schedule":
            if args.simulated and not args.compare:
                print("error: --simulated goes with --compare REAL.jsonl", file=sys.stderr)
                return 2
            if args.compare:
                print(schedule_cli.compare(args.compare, args.baseline, args.table, args.plot, args.simulated))
                return 0
            if args.trace_report:
                if len(args.trace_report) > 2:
                    print("error: --trace-report takes one trace, or a real and a simulated one", file=sys.stderr)
                    return 2
                print(schedule_cli.trace_report(*args.trace_report), end="")
                return 0
            pols = list(ks.sched.POLICIES) if args.policy == "all" else args.policy.split(",")
            unknown = [p for p in pols if p not in ks.sched.POLICIES]
            if unknown:
                print(
                    f"error: unknown policy {', '.join(unknown)}; choose from {', '.join(ks.sched.POLICIES)} or 'all'",
                    file=sys.stderr,
                )
                return 2
            if args.seeds < 1 or args.first_seed < 1:
                print(
                    f"error: --seeds and --first-seed must be >= 1, got {args.seeds} and {args.first_seed}",
                    file=sys.stderr,
                )
                return 2
            cost = args.cost or ("paper" if args.executor == "sim" else "measure")
            if args.remeasure and (
                args.executor != "real"
                or cost != "measure"
                or args.job_slowdown is not None
                or args.cost_scale is not None
            ):
                print(
                    "error: --remeasure goes with --executor real --cost measure, without the what-ifs "
                    "--job-slowdown and --cost-scale",
                    file=sys.stderr,
                )
                return 2
            w = tuple(int(v) for v in args.window.split(","))
            threads = args.threads or (126 if args.executor == "sim" else ks.hardware_threads())
            schedule_cli.run(
                pols,
                [float(v) for v in args.D.split(",")],
                args.jobs,
                w,
                threads,
                args.executor,
                cost,
                args.params,
                args.seeds,
                args.graph.split(","),
                args.json,
                args.table,
                args.plot,
                args.save_cost,
                reps=args.reps,
                job_slowdown=args.job_slowdown,
                first_seed=args.first_seed,
                trace_path=args.trace,
                cost_scale=args.cost_scale,
                remeasure=args.remeasure,
            )
            return 0
        if args.cmd == "bench":
            if args.suite == "matmul":
                bench_matmul.run(
                    args.params or "M14",
                    [int(x) for x in args.dims.split(",")],
                    args.reps or 10,
                    args.pairs,
                    blocked=args.blocked,
                    threads=args.threads,
                    json_path=args.json,
                    table_path=args.table,
                    plot_path=args.plot,
                    device=args.device,
                )
                return 0
            bench.run(
                args.params or "T13",
                args.threads,
                args.reps or 5,
                args.json,
                hoisting=args.hoisting,
                device=args.device,
                poly=args.poly,
            )
            return 0
    except ks.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 1
