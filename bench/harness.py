"""What the benchmark programs share (bench/README.md): one way to time a call, one machine label for every JSON line,
one way to write the lines. Standard library only, so that the peers' scripts, which run in virtual environments of
their own without kasoku, import it too (a script in bench/ has this folder on its path).

    import harness
    secs = harness.times(fn, reps=5, warmup=1)          # every repetition, in seconds
    rec = {"op": "...", **harness.summary(secs)}        # median_s, min_s, reps
    harness.emit(rec, args.out)                         # + machine and date; printed, and appended to --out
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import time
from typing import Any, Callable


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


def times(fn: Callable[[], Any], reps: int, warmup: int = 0, sync: Callable[[], Any] | None = None) -> list[float]:
    """Seconds of each of `reps` calls of fn after `warmup` untimed ones; sync (e.g. a device's synchronize) is called
    after each call inside the timing."""
    for _ in range(warmup):
        fn()
        if sync:
            sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        out.append(time.perf_counter() - t)
    return out


def median(fn: Callable[[], Any], reps: int, warmup: int = 0) -> float:
    """The median of times(fn, reps, warmup), in seconds."""
    return statistics.median(times(fn, reps, warmup))


def summary(secs: list[float]) -> dict:
    """median_s, min_s and reps of a list of times."""
    return {"median_s": statistics.median(secs), "min_s": min(secs), "reps": len(secs)}


def emit(record: dict, out: str | None = None) -> dict:
    """The record with the machine and the date (unless it has them), printed as one JSON line and appended to `out`
    when given."""
    rec = {**record}
    rec.setdefault("machine", machine())
    rec.setdefault("date", datetime.date.today().isoformat())
    line = json.dumps(rec)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    return rec
