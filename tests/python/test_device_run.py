"""The GPU machine's run (scripts/device_run.py), dry here: the CUDA steps say skipped, the rest run at small sizes, and
every JSON line names the GPU and the host. Also the benchmark's timing waits for the device after its warm-up."""

import json
import pathlib
import subprocess
import sys

import pytest

from kasoku.cli.bench import time_calls

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "cpp"


def test_dry_run_skips_cuda_steps_and_runs_the_rest(tmp_path):
    if not (BUILD / "tests" / "cpp" / "test_gpu_counts").exists():
        pytest.skip("needs the C++ build of make cpp-test (build/cpp)")
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "device_run.py"), "--dry-run", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = {s["step"]: s for s in map(json.loads, (tmp_path / "steps.jsonl").read_text().splitlines())}
    listed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "device_run.py"), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(steps) <= set(listed) and len(steps) == 25
    for name in ("sanitizers", "h16-gpu", "boot16-gpu", "ncu", "m14-gpu", "nn-gpu", "nn-resnet-gpu"):
        assert steps[name]["status"] == "skipped" and "CUDA" in steps[name]["why"], steps[name]
    for name in (
        "gpu-tests",
        "b13-batches",
        "cpu-threads",
        "boot16-threads",
        "keyswitch-threads",
        "thread-ceilings",
        "thread-granularity",
        "boot-ifma",
        "sched-cost",
        "sched-real",
        "sched-sim",
    ):
        assert steps[name]["status"] == "ok", steps[name]
        assert steps[name]["json_lines"] > 0, steps[name]
    lines = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert lines and all(x["gpu"] == "none" and x["host"] and x["commit"] for x in lines)
    tests = {x["test_program"]: x for x in lines if x["step"] == "gpu-tests"}
    assert tests["test_gpu_counts"]["passed"] >= 3 and not any(t["failed"] for t in tests.values())
    assert any(x.get("op") == "MulRelinRescale" and x.get("threads") == 2 for x in lines)
    assert (tmp_path / "machine.txt").read_text().count("lscpu") == 1


def test_steps_run_in_the_order_given_and_limits_are_checked(tmp_path):
    script = [sys.executable, str(ROOT / "scripts" / "device_run.py"), "--dry-run", "--out", str(tmp_path)]
    r = subprocess.run([*script, "--steps", "ncu,h16-gpu", "--limit", "ncu=5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["step"] for x in (tmp_path / "steps.jsonl").read_text().splitlines()] == ["ncu", "h16-gpu"]
    # every line carries the call and the library's commit given (the device's copy of .git may lag the tree)
    r = subprocess.run([*script, "--steps", "h16-gpu", "--call", "7", "--commit", "abc1234"], capture_output=True)
    assert r.returncode == 0
    last = json.loads((tmp_path / "steps.jsonl").read_text().splitlines()[-1])
    assert last["call"] == "7" and last["commit"] == "abc1234"
    for bad in ("nope=5", "ncu=soon"):
        r = subprocess.run([*script, "--steps", "ncu", "--limit", bad], capture_output=True, text=True)
        assert r.returncode == 2 and "STEP=SECONDS" in r.stderr, r.stderr


def test_timing_waits_for_the_device_after_the_warm_up():
    events = []
    times = time_calls(lambda: events.append("call"), 2, lambda: events.append("sync"))
    assert events == ["call", "sync", "call", "sync", "call", "sync"] and len(times) == 2
