"""The GPU machine's steps (scripts/device_run.py runs them): for each, its name, time limit, what it measures, the
commands of a full run and of a dry run here, what it needs (a CUDA device, DESILO, Orion) and, where its programs print
no JSON line, the summary lines read from their output. `scripts/device_run.sh --list` prints them."""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Step:
    name: str
    limit_s: int
    what: str
    commands: Callable[["Run"], list[list[str]]]  # full run
    dry: Callable[["Run"], list[list[str]]] | None = None  # dry run here (None: skipped in a dry run)
    cuda: bool = False  # needs a CUDA device
    desilo: bool = False  # needs desilofhe
    orion: bool = False  # needs orion-fhe (and PyTorch)
    summary: Callable[["Run"], list[dict]] | None = None  # JSON lines of a step whose programs print none


@dataclass
class Run:
    out: Path
    build: Path
    dry: bool
    python: str
    env: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    has_cuda: bool = False
    has_desilo: bool = False
    has_orion: bool = False

    def py(self, *args: str) -> list[str]:
        return [self.python, *args]

    def kasoku(self, *args: str) -> list[str]:
        return [self.python, "-m", "kasoku", *args]

    def test(self, name: str) -> str:
        return str(self.build / "tests" / "cpp" / name)


THREADS = [1, 2, 4, 8, 16]
GPU_TESTS = ["test_gpu_device", "test_gpu_bodies", "test_gpu_backend", "test_gpu_counts"]


def gpu_tests(r: Run) -> list[list[str]]:
    return [[r.test(t), f"--gtest_output=json:{r.out / ('gtest-' + t + '.json')}"] for t in GPU_TESTS]


def gtest_summary(r: Run) -> list[dict]:
    recs = []
    for t in GPU_TESTS:
        path = r.out / f"gtest-{t}.json"
        if not path.exists():
            recs.append({"test_program": t, "result": "did not finish"})
            continue
        cases = [c for suite in json.loads(path.read_text()).get("testsuites", []) for c in suite.get("testsuite", [])]
        skipped = [c["name"] for c in cases if c.get("result") == "SKIPPED"]
        failed = [c["name"] for c in cases if c.get("failures")]
        recs.append(
            {
                "test_program": t,
                "tests": len(cases),
                "passed": len(cases) - len(skipped) - len(failed),
                "failed": failed,
                "skipped": skipped,
            }
        )
    return recs


def sanitizer_summary(r: Run) -> list[dict]:
    """One line per tool and program from compute-sanitizer's summaries (in the step's output, in run order)."""
    found = []
    for name in ("sanitizers.out", "sanitizers.log"):  # compute-sanitizer reports on stdout; stderr in case
        if not found and (r.out / name).exists():
            text = (r.out / name).read_text(errors="replace")
            found = re.findall(r"========= (ERROR|RACECHECK|SYNCCHECK) SUMMARY: (\d+) (\w+)", text)
    recs = []
    for i, cmd in enumerate(sanitizer_runs(r)):
        recs.append(
            {
                "tool": cmd[2],
                "test_program": " ".join([Path(cmd[5]).name, *cmd[6:]]),
                "summary": " ".join(found[i][1:]) if i < len(found) else "did not finish",
            }
        )
    return recs


def sanitizer_runs(r: Run) -> list[list[str]]:
    cmds = []
    for tool in ("memcheck", "racecheck", "synccheck"):
        cmds.append(["compute-sanitizer", "--tool", tool, "--error-exitcode", "9", r.test("test_gpu_device")])
        cmds.append(
            [
                "compute-sanitizer",
                "--tool",
                tool,
                "--error-exitcode",
                "9",
                r.test("test_gpu_backend"),
                "--gtest_filter=*Cuda*",
            ]
        )
    return cmds


LATTIGO = ROOT / "bench" / ".lattigo" / "lattigo-bootstrap"


def boot_ifma(r: Run, params: str, reps: str) -> list[list[str]]:
    """kasoku's bootstrap at 2^15 and 2^14 slots, then Lattigo's (when its binary was carried; one bootstrap each, its
    times vary little), one thread each."""
    cmds = [
        r.py("bench/bootstrap.py", "--params", params, "--threads", "1", "--reps", reps),
        r.py("bench/bootstrap.py", "--params", params, "--slots", "16384", "--threads", "1", "--reps", reps),
    ]
    if LATTIGO.exists():
        lattigo = ["bench/lattigo_bootstrap.py", "--binary", str(LATTIGO), "--cases", "dense", "--threads", "1"]
        cmds.append(r.py(*lattigo, "--reps", "1"))
        cmds.append(r.py(*lattigo, "--log-slots", "14", "--reps", "1"))
    return cmds


SCHED_GRAPHS = "exp,poly:15,matmul:3"  # seed 001's e^x and two graphs it was not written for (one rotates)


def sched_study(r: Run, d_values: str, seeds: int, jobs: int, window: str, threads: int, cost: str) -> list[list[str]]:
    # dynamic twice per seed: the A/A interval of the comparison (schedule --compare).
    return [
        r.kasoku(
            "schedule",
            "--executor",
            "real",
            "--graph",
            SCHED_GRAPHS,
            "--threads",
            str(threads),
            "--cost",
            cost,
            "--D",
            d_values,
            "--jobs",
            str(jobs),
            "--window",
            window,
            "--seeds",
            str(seeds),
            "--policy",
            "dynamic,kasoku,dynamic,fixed-1,fixed-half,fixed-full",
            "--json",
            str(r.out / "sched-real.jsonl"),
            "--trace",
            str(r.out / "sched-real-trace.jsonl"),
        )
    ]


def sched_sim(r: Run, threads: str, d_values: str, jobs: str, window: str, seeds: str) -> list[list[str]]:
    """The simulator with the cost model of sched-cost on the streams of sched-real, then the comparison of the real
    runs (policies against dynamic and its A/A, each real p95 against the simulated one) and the report of where real
    and simulated traces first diverge."""
    return [
        r.kasoku(
            "schedule",
            "--executor",
            "sim",
            "--graph",
            SCHED_GRAPHS,
            "--threads",
            threads,
            "--cost",
            str(r.out / "sched-cost.json"),
            "--D",
            d_values,
            "--jobs",
            jobs,
            "--window",
            window,
            "--seeds",
            seeds,
            "--policy",
            "all",
            "--json",
            str(r.out / "sched-sim.jsonl"),
            "--trace",
            str(r.out / "sched-sim-trace.jsonl"),
        ),
        r.kasoku(
            "schedule",
            "--compare",
            str(r.out / "sched-real.jsonl"),
            "--baseline",
            "dynamic",
            "--simulated",
            str(r.out / "sched-sim.jsonl"),
            "--table",
            str(r.out / "sched-compare.md"),
        ),
        r.kasoku(
            "schedule", "--trace-report", str(r.out / "sched-real-trace.jsonl"), str(r.out / "sched-sim-trace.jsonl")
        ),
    ]


def thread_pairs_step(name: str, limit: int, what: str, mode: str, h16_reps: str, boot_reps: str) -> Step:
    """A bench_thread_pairs step in `mode`: the H16 rotation and multiplication, then BOOT16's bootstrap, on 16
    threads; its dry run T12's rotation and TB10's bootstrap on 4."""

    def pairs(r: Run, *args: str) -> list[str]:
        return [str(r.build / "bench" / "bench_thread_pairs"), *args, mode]

    return Step(
        name,
        limit,
        what,
        lambda r: [
            ["cmake", "-DKASOKU_BUILD_BENCH=ON", str(r.build)],  # the build step leaves the benchmarks out
            ["cmake", "--build", str(r.build), "--target", "bench_thread_pairs"],
            *[
                pairs(r, "--params", "H16", "--op", op, "--threads", "16", "--reps", h16_reps)
                for op in ("rotate", "multiply")
            ],
            pairs(r, "--threads", "16", "--reps", boot_reps),
        ],
        dry=lambda r: [
            pairs(r, "--params", "T12", "--op", "rotate", "--iters", "3", "--threads", "4", "--reps", "2"),
            pairs(r, "--params", "TB10", "--threads", "4", "--reps", "2"),
        ],
    )


STEPS = [
    Step(
        "build",
        300,
        "configure and build the GPU tests and the Python module (then the other targets)",
        lambda r: [
            [
                "cmake",
                "-S",
                str(ROOT),
                "-B",
                str(r.build),
                "-G",
                "Ninja",
                "-DCMAKE_BUILD_TYPE=Release",
                "-DKASOKU_BUILD_TESTS=ON",
                "-DKASOKU_BUILD_PYTHON=ON",
                "-DKASOKU_CUDA=ON",
                "-DCMAKE_CUDA_ARCHITECTURES=90",
                f"-DPython_EXECUTABLE={r.python}",
                *shlex.split(os.environ.get("KASOKU_CMAKE_ARGS", "")),
            ],
            ["cmake", "--build", str(r.build), "--target", *GPU_TESTS, "_kasoku"],
            r.py(str(ROOT / "scripts" / "device_run.py"), "--package", str(r.build)),
        ],
    ),
    Step(
        "gpu-tests", 240, "the GPU test programs (CUDA cases included)", gpu_tests, dry=gpu_tests, summary=gtest_summary
    ),
    Step(
        "sanitizers",
        540,
        "compute-sanitizer memcheck, racecheck and synccheck on the CUDA tests",
        sanitizer_runs,
        cuda=True,
        summary=sanitizer_summary,
    ),
    Step(
        "h16-gpu",
        240,
        "python -m kasoku bench at H16 on the GPU (with hoisting: 16 rotations, SumSlots)",
        lambda r: [r.kasoku("bench", "--params", "H16", "--device", "cuda", "--hoisting", "--reps", "10")],
        cuda=True,
    ),
    Step(
        "desilo-h16-gpu",
        240,
        "DESILO's GPU engine at H16's shape, same run",
        lambda r: [r.py("bench/desilo_ops.py", "--mode", "gpu", "--max-level", "20", "--reps", "10")],
        cuda=True,
        desilo=True,
    ),
    Step(
        "b13-batches",
        300,
        "B13 batches of 10, 100 and 1000 against loops on the GPU",
        lambda r: [
            r.py(
                "bench/batch.py",
                "--params",
                "B13",
                "--device",
                "cuda",
                "--d",
                "10,100,1000",
                "--ops",
                "MulRelinRescale,Rotate",
                "--reps",
                "5",
            )
        ],
        dry=lambda r: [
            r.py("bench/batch.py", "--params", "T12", "--device", "cpu", "--d", "2", "--ops", "Rotate", "--reps", "1")
        ],
    ),
    Step(
        "boot16-gpu",
        300,
        "BOOT16 bootstrapping on the GPU",
        lambda r: [r.py("bench/bootstrap.py", "--params", "BOOT16", "--device", "cuda", "--reps", "5")],
        cuda=True,
    ),
    Step(
        "ncu",
        240,
        "every kernel of one H16 multiply, one H16 rotate and one B13 batch of 100 multiplies (ncu, CSV: time, "
        "DRAM bytes read and written, SM and DRAM throughput)",
        lambda r: [
            [
                "ncu",
                "--profile-from-start",
                "off",
                "--csv",
                "--print-units",
                "base",
                "--metrics",
                # time, measured DRAM bytes (read, written) and SM throughput per kernel: the counted bytes' ratio
                # to the measured ones, and which kernels are bound by instructions rather than memory
                "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
                "sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed",
                "--log-file",
                str(r.out / f"ncu-{op}.csv"),
                r.python,
                "bench/gpu_profile.py",
                "--op",
                op,
            ]
            for op in ("mul", "rot", "batch")
        ],
        cuda=True,
    ),
    Step(
        "nn-gpu",
        240,
        "kasoku.nn on the GPU: Orion's MLP, LoLA and LeNet-5 on the digits (bench/nn_peers.py, needs PyTorch)",
        lambda r: [
            r.py("bench/nn_peers.py", "--models", "MLP", "LoLA", "LeNet5", "--device", "cuda", "--images", "5"),
        ],
        cuda=True,
    ),
    Step(
        "nn-resnet-gpu",
        540,
        'kasoku.nn\'s ResNet-20 end to end on the GPU (ksnn.compile(..., device="cuda")): latency of 3 images, '
        "bootstraps, device memory peak (bench/nn_peers.py, CIFAR-shaped random inputs, host work on every core)",
        lambda r: [
            r.py(
                "bench/nn_peers.py",
                "--models",
                "ResNet20",
                "--libs",
                "kasoku",
                "--device",
                "cuda",
                "--images",
                "3",
                "--threads",
                str(os.cpu_count() or 1),  # the host's share: compile, encoding, decoding
            )
        ],
        cuda=True,
    ),
    Step(
        "nn-peers",
        300,
        "kasoku.nn beside Orion on one CPU thread: MLP and LoLA (LeNet-5: the step nn-peers-lenet)",
        lambda r: [r.py("bench/nn_peers.py", "--models", "MLP", "LoLA", "--orion-python", r.python, "--images", "5")],
        orion=True,
    ),
    Step(
        "nn-peers-lenet",
        420,
        "kasoku.nn beside Orion on one CPU thread: LeNet-5",
        lambda r: [r.py("bench/nn_peers.py", "--models", "LeNet5", "--orion-python", r.python, "--images", "3")],
        orion=True,
    ),
    Step(
        "desilo-boot-gpu",
        420,
        "DESILO's GPU bootstrapping, same run",
        lambda r: [r.py("bench/desilo_ops.py", "--mode", "gpu", "--bootstrap", "--reps", "3")],
        cuda=True,
        desilo=True,
    ),
    Step(
        "m14-gpu",
        300,
        "the M14 matrix products on the GPU",
        lambda r: [r.kasoku("bench", "matmul", "--params", "M14", "--device", "cuda", "--reps", "5", "--blocked", "0")],
        cuda=True,
    ),
    Step(
        "cpu-threads",
        420,
        "H16 operations on 1, 2, 4, 8, 16 threads",
        lambda r: [r.kasoku("bench", "--params", "H16", "--threads", str(t), "--reps", "5") for t in THREADS],
        dry=lambda r: [r.kasoku("bench", "--params", "T12", "--threads", str(t), "--reps", "2") for t in (1, 2)],
    ),
    Step(
        "desilo-cpu-threads",
        540,
        "DESILO's CPU engine at H16's shape on 1, 2, 4, 8, 16 threads",
        lambda r: [
            r.py(
                "bench/desilo_ops.py",
                "--mode",
                "cpu",
                "--threads",
                str(t),
                "--max-level",
                "20",
                "--reps",
                "3",
                "--no-hoisting",
            )
            for t in THREADS
        ],
        dry=lambda r: [
            r.py(
                "bench/desilo_ops.py",
                "--mode",
                "cpu",
                "--threads",
                "1",
                "--max-level",
                "2",
                "--reps",
                "2",
                "--no-hoisting",
            )
        ],
        desilo=True,
    ),
    Step(
        "keyswitch-threads",
        300,
        "issue 64: an H16 key switch phase by phase (ModUp, inner product, ModDown; bench_keyswitch) on 1, 2, 4, 8, "
        "16 threads: where each phase stops scaling",
        lambda r: [
            ["cmake", "-DKASOKU_BUILD_BENCH=ON", str(r.build)],  # the build step leaves the benchmarks out
            ["cmake", "--build", str(r.build), "--target", "bench_keyswitch"],
            *[[str(r.build / "bench" / "bench_keyswitch"), "--threads", str(t), "--reps", "5"] for t in THREADS],
        ],
        dry=lambda r: [
            [str(r.build / "bench" / "bench_keyswitch"), "--params", "T12", "--threads", str(t), "--reps", "2"]
            for t in (1, 2)
        ],
    ),
    thread_pairs_step(
        "thread-ceilings",
        300,
        "issue 64: the H16 rotation and multiplication and BOOT16's bootstrap on 1 thread, then 16, in pairs, beside "
        "16 one-thread copies at once in processes that share the keys (bench_thread_pairs --copies): how much of 16x "
        "the memory system allows work that needs no barrier, against what the team gets",
        "--copies",
        h16_reps="4",
        boot_reps="3",
    ),
    thread_pairs_step(
        "thread-granularity",
        360,
        "issue 64: the H16 rotation and multiplication and BOOT16's bootstrap with each parallel region's jobs timed "
        "one after another on one thread and spread over 2-16 threads as the team spreads them "
        "(bench_thread_pairs --granularity): the speed-up the split of the work into jobs leaves, and the loops that "
        "lose most, beside what thread-ceilings measures",
        "--granularity",
        h16_reps="5",
        boot_reps="1",
    ),
    Step(
        "boot16-threads",
        540,
        "BOOT16 bootstrapping on 1, 2, 4, 8, 16 threads",
        lambda r: [
            r.py("bench/bootstrap.py", "--params", "BOOT16", "--threads", str(t), "--reps", "2") for t in THREADS
        ],
        dry=lambda r: [r.py("bench/bootstrap.py", "--log-n", "10", "--threads", str(t), "--reps", "1") for t in (1, 2)],
    ),
    Step(
        "boot-ifma",
        420,
        "issue 62 on the host's AVX-512 IFMA, one thread, same call: kasoku's BOOT16 bootstrap (2^15 slots and 2^14 "
        "sparse slots) beside Lattigo v6's dense-secret set (the same slot counts; its static binary from "
        "bench/lattigo_bootstrap.py --setup, carried as bench/.lattigo/lattigo-bootstrap)",
        lambda r: boot_ifma(r, "BOOT16", "2"),
        dry=lambda r: [r.py("bench/bootstrap.py", "--log-n", "10", "--threads", "1", "--reps", "1")],
    ),
    Step(
        "sched-cost",
        300,
        "seed 001: the cost model measured on all threads, saved",
        lambda r: [
            r.kasoku(
                "schedule",
                "--executor",
                "sim",
                "--graph",
                SCHED_GRAPHS,  # the contention is measured beside these graphs' operations
                "--cost",
                "measure",
                "--threads",
                "16",
                "--D",
                "80",
                "--jobs",
                "300",
                "--window",
                "51,250",
                "--save-cost",
                str(r.out / "sched-cost.json"),
            )
        ],
        dry=lambda r: [
            r.kasoku(
                "schedule",
                "--executor",
                "sim",
                "--graph",
                SCHED_GRAPHS,
                "--cost",
                "paper",
                "--threads",
                "2",
                "--D",
                "80",
                "--jobs",
                "30",
                "--window",
                "5,25",
                "--save-cost",
                str(r.out / "sched-cost.json"),
            )
        ],
    ),
    Step(
        "sched-real",
        570,
        "seed 001: e^x, poly:15 and matmul:3 streams on 16 real threads at three loads, every policy, dynamic twice "
        "(A/A), traced",
        lambda r: sched_study(r, "60,80,120", 1, 60, "11,50", 16, str(r.out / "sched-cost.json")),
        dry=lambda r: sched_study(r, "60", 1, 4, "1,4", 2, str(r.out / "sched-cost.json")),
    ),
    Step(
        "sched-sim",
        240,
        "seed 001: the simulator with the measured cost model, same streams, the comparisons (policies against "
        "dynamic, each real p95 against the simulated one) and the trace report (measured against expected per task "
        "kind, first divergence per stream)",
        lambda r: sched_sim(r, "16", "60,80,120", "60", "11,50", "1"),
        dry=lambda r: sched_sim(r, "2", "60", "4", "1,4", "1"),
    ),
    Step(
        "ctest",
        420,
        "every other C++ test",
        lambda r: [
            ["cmake", "--build", str(r.build)],
            ["ctest", "--test-dir", str(r.build), "-j", str(os.cpu_count() or 1), "--output-on-failure"],
        ],
    ),
]
