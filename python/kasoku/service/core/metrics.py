"""The service's counters and latencies (GET /metrics)."""

from __future__ import annotations

import collections
import time

import numpy as np

from ..executors import Ended


class Metrics:
    """Counters and the latencies of the last 1000 jobs (acceptance to end, seconds)."""

    def __init__(self):
        self.started = time.time()
        self.accepted = self.completed = self.failed = self.rejected = 0
        self.latency = collections.deque(maxlen=1000)
        self.run_s = collections.deque(maxlen=100)
        self.ends = collections.deque(maxlen=100000)

    def ended(self, e: Ended, latency_s: float) -> None:
        self.completed += e.error is None
        self.failed += e.error is not None
        self.latency.append(latency_s)
        self.run_s.append(e.run_ms / 1000)
        self.ends.append(time.time())

    def jobs_per_second(self, window_s: float = 60.0) -> float:
        now = time.time()
        span = min(window_s, now - self.started)
        return sum(1 for t in self.ends if t >= now - window_s) / span if span > 0 else 0.0

    def latency_ms(self) -> dict:
        if not self.latency:
            return {"count": 0}
        a = np.asarray(self.latency) * 1000
        return {
            "count": int(a.size),
            "p50": float(np.percentile(a, 50)),
            "p95": float(np.percentile(a, 95)),
            "p99": float(np.percentile(a, 99)),
            "mean": float(a.mean()),
        }
