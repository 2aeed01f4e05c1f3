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
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from device_steps import ROOT, STEPS, Run, Step  # scripts/, this program's directory


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
