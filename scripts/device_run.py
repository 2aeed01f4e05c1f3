#!/usr/bin/env python3
"""The GPU machine's run (docs/GPU.md "Running on the GPU machine"): build there, then measure everything in order,
each step with its own time limit, its log and its JSON lines written as it goes, so that a run cut short still
returns what it did. Started by scripts/device_run.sh, which unpacks the carried Debian packages and DESILO's wheel.

    scripts/device_run.sh                                   # every step (longer than one device call: use --steps)
    scripts/device_run.sh --steps build,gpu-tests,h16-gpu   # some steps, in the order given
    scripts/device_run.sh --steps build,h16-gpu --limit h16-gpu=60   # another limit for a step
    scripts/device_run.sh --dry-run                         # here: CUDA steps skipped, the rest at small sizes

Every JSON line of a step (what its benchmark prints) is copied into $OUT/<step>.jsonl and $OUT/all.jsonl with the
GPU and host that ran it (nvidia-smi, lscpu), the commit, the date and the step; $OUT/steps.jsonl has one line per step
(ok, failed, skipped with the reason, or timed out, and its seconds); $OUT/<step>.log has its output.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
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


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout
    except (subprocess.SubprocessError, OSError):
        return ""


def machine(out: Path) -> dict:
    """GPU and host labels for every JSON line; machine.txt keeps the full nvidia-smi, lscpu and nvcc output."""
    text = "\n".join(f"$ {c}\n{sh(c)}" for c in ("nvidia-smi", "lscpu", "nvcc --version", "git log -1 --oneline"))
    (out / "machine.txt").write_text(text)
    gpu = "none"
    q = sh("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader").strip().splitlines()
    if q:
        name, _, driver = q[0].partition(",")
        cuda = re.search(r"CUDA Version:\s*([\d.]+)", sh("nvidia-smi"))
        gpu = f"{name.strip()} (driver {driver.strip()}" + (f", CUDA {cuda.group(1)})" if cuda else ")")
    lscpu = sh("lscpu")
    model = re.search(r"Model name:\s*(.+)", lscpu)
    flags = re.search(r"Flags:\s*(.+)", lscpu)
    isa = (
        "AVX-512 IFMA"
        if flags and "avx512ifma" in flags.group(1)
        else "AVX-512"
        if flags and "avx512f" in flags.group(1)
        else "AVX2"
        if flags and "avx2" in flags.group(1)
        else ""
    )
    host = f"{model.group(1).strip() if model else 'unknown CPU'}, {os.cpu_count()} vCPU" + (f" ({isa})" if isa else "")
    commit = sh(f"git -C {ROOT} rev-parse --short HEAD").strip() or "unknown"
    return {"gpu": gpu, "host": host, "commit": commit, "date": datetime.date.today().isoformat()}


def json_lines(path: Path) -> list[dict]:
    recs = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return recs


def run_step(step: Step, r: Run, log) -> tuple[str, str]:
    """Runs a step's commands within its limit; its stdout goes to <step>.out and its stderr to <step>.log as it
    comes."""
    cmds = (step.dry(r) if step.dry else []) if r.dry else step.commands(r)
    deadline = time.monotonic() + step.limit_s
    status, why = "ok", ""
    with open(r.out / f"{step.name}.out", "ab") as out, open(r.out / f"{step.name}.log", "ab") as err:
        for cmd in cmds:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timed out", f"limit {step.limit_s} s reached before: {' '.join(cmd)}"
            err.write(f"$ {' '.join(cmd)}\n".encode())
            err.flush()
            print(f"[device run] {step.name}: {' '.join(cmd)}", file=log, flush=True)
            try:
                p = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env=r.env, start_new_session=True)
            except OSError as e:
                return "failed", f"{cmd[0]}: {e}"
            try:
                rc = p.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return "timed out", f"limit {step.limit_s} s reached in: {' '.join(cmd)}"
            if rc != 0:
                status, why = "failed", f"exit status {rc}: {' '.join(cmd)}"
    return status, why


def package(build: Path) -> int:
    """The Python package from the source tree and the module just built, under <build>/pkg (PYTHONPATH)."""
    dst = build / "pkg" / "kasoku"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(ROOT / "python" / "kasoku", dst)
    mods = sorted((build / "src" / "kasoku" / "python").rglob("_kasoku*.so"))
    if not mods:
        print(f"no _kasoku module under {build}", file=sys.stderr)
        return 1
    shutil.copy2(mods[0], dst)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--steps",
        default="all",
        help="comma separated steps to run, in the order given (default all, in this order): "
        + ", ".join(s.name for s in STEPS),
    )
    ap.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="STEP=SECONDS",
        help="another time limit for a step (repeatable), to fit a run into one device call",
    )
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="here, without a GPU: CUDA steps skipped, the rest at small sizes with the installed kasoku "
        "and the build in --build-dir",
    )
    ap.add_argument("--out", default=os.environ.get("OUT", "out"), help="folder of the results (default $OUT or out)")
    ap.add_argument("--build-dir", default=None, help="build folder (default build/device; dry run: build/cpp)")
    ap.add_argument("--list", action="store_true", help="print the steps and exit")
    ap.add_argument("--call", default=None, help="the device call's label, on every line (e.g. 1, 2)")
    ap.add_argument(
        "--commit",
        default=os.environ.get("KASOKU_COMMIT"),
        help="the library's commit on every line (default $KASOKU_COMMIT, else git's HEAD there, which the device's "
        "copy of the tree may not have moved)",
    )
    ap.add_argument("--package", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.package:
        return package(Path(args.package))
    if args.list:
        for s in STEPS:
            print(f"{s.name:20s} {s.limit_s:4d} s  {s.what}" + ("  [CUDA]" if s.cuda else ""))
        return 0
    names = [s.name for s in STEPS]
    wanted = names if args.steps == "all" else args.steps.split(",")
    unknown = [w for w in wanted if w not in names]
    if unknown:
        ap.error(f"unknown steps {', '.join(unknown)}; the steps are {', '.join(names)}")
    by_name = {s.name: s for s in STEPS}
    for item in args.limit:
        name, _, secs = item.partition("=")
        if name not in by_name or not secs.isdigit():
            ap.error(f"--limit {item}: expected STEP=SECONDS with STEP one of {', '.join(names)}")
        by_name[name].limit_s = int(secs)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    build = (ROOT / (args.build_dir or ("build/cpp" if args.dry_run else "build/device"))).resolve()
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", OMP_WAIT_POLICY="PASSIVE")
    if not args.dry_run:
        env["PYTHONPATH"] = f"{build / 'pkg'}:{env.get('PYTHONPATH', '')}"
    r = Run(out=out, build=build, dry=args.dry_run, python=sys.executable, env=env)
    r.labels = machine(out)
    if args.commit:
        r.labels["commit"] = args.commit
    if args.call:
        r.labels["call"] = args.call
    print(f"[device run] {r.labels['gpu']} | {r.labels['host']} | commit {r.labels['commit']} -> {out}", flush=True)
    r.has_desilo = subprocess.run([r.python, "-c", "import desilofhe"], env=env, capture_output=True).returncode == 0
    r.has_orion = subprocess.run([r.python, "-c", "import orion, torch"], env=env, capture_output=True).returncode == 0
    failed = 0
    for step in (by_name[w] for w in wanted):
        t0 = time.monotonic()
        if step.cuda and r.dry:
            status, why = "skipped", "dry run: no CUDA device here"
        elif step.desilo and not r.has_desilo:
            status, why = "skipped", "desilofhe is not installed (scripts/device_run.sh installs the carried wheel)"
        elif step.orion and not r.has_orion:
            status, why = "skipped", "orion-fhe or PyTorch is missing (scripts/device_run.sh installs Orion's wheel)"
        elif r.dry and step.dry is None:
            status, why = "skipped", "dry run: make test builds and runs it here"
        else:
            status, why = run_step(step, r, sys.stdout)
        secs = time.monotonic() - t0
        recs = json_lines(out / f"{step.name}.out")
        if step.summary and status != "skipped":
            recs += step.summary(r)
        tagged = [{**rec, **r.labels, "step": step.name} for rec in recs]
        with open(out / f"{step.name}.jsonl", "w") as f, open(out / "all.jsonl", "a") as a:
            for rec in tagged:
                f.write(json.dumps(rec) + "\n")
                a.write(json.dumps(rec) + "\n")
        line = {
            "step": step.name,
            "status": status,
            "seconds": round(secs, 1),
            "why": why,
            "json_lines": len(tagged),
            **r.labels,
        }
        with open(out / "steps.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        print(f"[device run] {step.name}: {status} in {secs:.0f} s" + (f" ({why})" if why else ""), flush=True)
        failed += status in ("failed", "timed out")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
