"""What the benchmark programs share (bench/README.md): one way to time a call, one machine label for every JSON line,
one way to write the lines and to read them back. Standard library only, so that the peers' scripts, which run in
virtual environments of their own without kasoku, import it too (a script in bench/ has this folder on its path).

    import harness
    secs = harness.times(fn, reps=5, warmup=1)          # every repetition, in seconds
    rec = {"op": "...", **harness.summary(secs, "ms")}  # median_ms, min_ms, max_ms, reps
    harness.emit(rec, args.out)                         # + machine, date, commit, command; printed, appended to --out
    rows = harness.read("run.jsonl")                    # the lines of a file, as dicts

Each timed call's result is kept until its clock has stopped, so that freeing it is not part of the measurement.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Hashable


@functools.lru_cache(maxsize=1)
def machine() -> str:
    """The CPU every line names: its model, family and model numbers (which tell a Zen 3 from a Zen 5 where the
    model name is only "AMD EPYC"), its logical CPUs and its widest vector extension."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "flags") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    isa = (
        "AVX-512 IFMA"
        if "avx512ifma" in flags
        else "AVX-512"
        if "avx512f" in flags
        else "AVX2"
        if "avx2" in flags
        else platform.machine()
    )
    name = fields.get("model name") or platform.processor() or platform.machine()
    family = f" family {fields['cpu family']} model {fields['model']}" if "cpu family" in fields else ""
    return f"{name}{family}, {os.cpu_count()} CPUs, {isa}"


def timed(
    fn: Callable[[], Any], sync: Callable[[], Any] | None = None, cpu: list[float] | None = None
) -> tuple[float, Any]:
    """One call of fn: its seconds (up to sync(), e.g. a device's synchronize, when given) and its result. With a list
    `cpu`, the call's CPU seconds (all threads of this process) are appended to it."""
    c = time.process_time()
    t = time.perf_counter()
    result = fn()
    if sync:
        sync()
    secs = time.perf_counter() - t
    if cpu is not None:
        cpu.append(time.process_time() - c)
    return secs, result


def times(
    fn: Callable[[], Any],
    reps: int,
    warmup: int = 0,
    sync: Callable[[], Any] | None = None,
    cpu: list[float] | None = None,
) -> list[float]:
    """Seconds of each of `reps` calls of fn after `warmup` untimed ones; sync (e.g. a device's synchronize) is called
    after each call inside the timing. With a list `cpu`, each timed call's CPU seconds are appended to it."""
    for _ in range(warmup):
        timed(fn, sync)
    out = []
    for _ in range(reps):
        secs, result = timed(fn, sync, cpu)
        out.append(secs)
        del result
    return out


def interleaved(
    fns: dict[Hashable, Callable[[], Any]], reps: int, warmup: int = 1, sync: Callable[[], Any] | None = None
) -> dict[Hashable, list[float]]:
    """Seconds of `reps` rounds of every fn in turn (after `warmup` untimed rounds), in the given order and reversed
    every other round, so that a machine's drift falls on all alike: {key: [seconds per round]}. sync (a device's
    synchronize) is called before each call and, inside its timing, after it."""
    out: dict[Hashable, list[float]] = {k: [] for k in fns}
    for r in range(warmup + reps):
        keys = list(fns) if (r - warmup) % 2 == 0 else list(fns)[::-1]
        for k in keys:
            if sync:
                sync()
            secs, result = timed(fns[k], sync)
            del result
            if r >= warmup:
                out[k].append(secs)
    return out


def median(fn_or_values: Callable[[], Any] | list[float], reps: int = 1, warmup: int = 0) -> float:
    """The median of a list of values, or of times(fn, reps, warmup) in seconds."""
    if callable(fn_or_values):
        return statistics.median(times(fn_or_values, reps, warmup))
    return statistics.median(fn_or_values)


def summary(secs: list[float], unit: str = "s") -> dict:
    """median, min, max and the count (reps) of a list of times in seconds, in `unit` ("s" or "ms"): median_s, min_s,
    max_s, reps (or median_ms, min_ms, max_ms, reps)."""
    scale = {"s": 1.0, "ms": 1e3}[unit]
    return {
        f"median_{unit}": statistics.median(secs) * scale,
        f"min_{unit}": min(secs) * scale,
        f"max_{unit}": max(secs) * scale,
        "reps": len(secs),
    }


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """The repository's commit (short hash), with "+dirty" when tracked files differ from it; "" outside git."""
    root = _ROOT
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD"], capture_output=True).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+dirty" if dirty else "")


def _script() -> str:
    """The running script as the repository names it (bench/x.py) wherever it ran from (a child in a work folder),
    else its own path."""
    path = os.path.abspath(sys.argv[0])
    return os.path.relpath(path, _ROOT) if path.startswith(_ROOT + os.sep) else path


def emit(record: dict, out: str | os.PathLike | None = None, echo: bool = True) -> dict:
    """The record with the machine, the date, the commit and the command (unless it has them) as one JSON line,
    printed (unless echo is False: a script whose output is a table) and appended to `out` when given."""
    rec = {**record}
    rec.setdefault("machine", machine())
    rec.setdefault("date", datetime.date.today().isoformat())
    rec.setdefault("commit", commit())
    rec.setdefault("command", shlex.join([_script() if sys.argv[0] else "python", *sys.argv[1:]]))
    line = json.dumps(rec)
    if echo:
        print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    return rec


def read(path: str | os.PathLike) -> list[dict]:
    """The JSON lines of a file (emit's, or any benchmark's), blank lines skipped."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
