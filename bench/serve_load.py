"""Load run of the encrypted-compute service on loopback (docs/SERVING.md): the seed's e^x job at SCHED parameters,
Poisson arrivals at several offered loads (multiples of the measured capacity), local executor vs Ray executor
(a head and a worker node, one CPU each, against the local executor's 2 threads); jobs/s, p50/p95/p99 latency
(arrival to result in the client's hands), bytes on the wire per job. Every result is checked bit for bit against
the client's own computation, and a last phase kills the server (SIGKILL) at 2x load and restarts it: no job may be
lost or run into two results.

    python bench/serve_load.py --json docs/data/serving.jsonl --plot docs/serving.png
"""

from __future__ import annotations

import argparse
import concurrent.futures
import signal
import sys
import tempfile
import threading
import time

import harness
import numpy as np

import kasoku as ks
from kasoku._progress import reporter
from kasoku.service.process import ServerProcess


class Server(ServerProcess):
    def job_rows(self) -> int:
        """Jobs in the server's store (each accepted job is one row, whatever happened to the process)."""
        import sqlite3

        with sqlite3.connect(self.data / "kasoku.db") as db:
            return db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]


def one_level(
    server: Server,
    token: str,
    kid: str,
    bodies,
    want,
    rate: float,
    jobs: int,
    seed: int,
    kill_at: int | None = None,
    label: str = "",
) -> dict:
    """jobs Poisson arrivals at `rate` per second; returns the level's statistics (a bar of the results received on
    a terminal)."""
    arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, jobs))
    admin = ks.Client(server.url, token)
    before = admin.metrics()
    rows_before = server.job_rows()
    lat, ids, sent, recv, errors = [None] * jobs, [None] * jobs, [0] * jobs, [0] * jobs, []
    t0 = time.monotonic() + 0.2
    submitted = threading.Semaphore(0)

    def job(i: int) -> None:
        time.sleep(max(0.0, t0 + arrivals[i] - time.monotonic()))
        with ks.Client(server.url, token, timeout=600) as c:
            try:
                ids[i] = c.submit({"x": bodies[i % len(bodies)]}, keys=kid, computation="exp", retry_for=600)
                submitted.release()
                out = c.result_bytes(ids[i], timeout=600)["exp"]
                lat[i] = time.monotonic() - (t0 + arrivals[i])
                if out != want[i % len(want)]:
                    errors.append(f"job {ids[i]}: result differs from the client's own computation")
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(f"arrival {i}: {type(e).__name__}: {e}")
                submitted.release()
            sent[i], recv[i] = c.bytes_sent, c.bytes_received

    report = reporter(None, label or "load level", unit="job")
    done = [0]
    lock = threading.Lock()

    def finished(_):
        if report:
            with lock:
                done[0] += 1
                report(done[0], jobs)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futs = [pool.submit(job, i) for i in range(jobs)]
        for f in futs:
            f.add_done_callback(finished)
        if kill_at is not None:  # once kill_at jobs are in, the server dies without a word and comes back
            for _ in range(kill_at):
                submitted.acquire()
            server.stop(signal.SIGKILL)
            server.start()
        for f in futs:
            f.result()
    span = time.monotonic() - t0
    after = ks.Client(server.url, token).metrics()
    rows_after = server.job_rows()
    got = [x for x in lat if x is not None]
    a = np.asarray(got) * 1000 if got else np.zeros(1)
    accepted = after["accepted"] - (0 if kill_at is not None else before["accepted"])
    return {
        "jobs": jobs,
        "offered_per_s": rate,
        "achieved_per_s": len(got) / span,
        "p50_ms": float(np.percentile(a, 50)),
        "p95_ms": float(np.percentile(a, 95)),
        "p99_ms": float(np.percentile(a, 99)),
        "results": len(got),
        "distinct_job_ids": len({i for i in ids if i}),
        "rejected_busy": after["rejected_busy"] - (0 if kill_at is not None else before["rejected_busy"]),
        "accepted_by_server": accepted,
        "jobs_stored_by_server": rows_after - rows_before,
        "errors": errors[:5],
        "error_count": len(errors),
        "request_bytes_per_job": float(np.mean(sent)),
        "response_bytes_per_job": float(np.mean(recv)),
        "restarted": kill_at is not None,
        "recovered_after_restart": after.get("recovered_after_restart", 0),
    }


def run_executor(name: str, params: str, loads, jobs: int, capacity: int, restart: bool, out: list, ray_address=None):
    with tempfile.TemporaryDirectory() as d:
        extra = ["--executor", "ray", "--ray-address", ray_address] if name == "ray" else ["--threads", "2"]
        srv = Server(d, "--params", params, "--capacity", str(capacity), "--cost", "measure", *extra).start()
        try:
            c = ks.Client.register(srv.url, srv.admin_token)
            ctx = c.context()
            keys = ctx.keygen()
            kid = c.register_keys(keys.evaluation())
            keys_bytes = c.bytes_sent
            ev = ctx.evaluator(keys.evaluation())
            rng = np.random.default_rng(3)
            cts = [ctx.encrypt(rng.uniform(-1, 1, 64), keys.public) for _ in range(8)]
            g = ks.sched.maclaurin_exp(order=6, level=cts[0].level)
            cm = ks.sched.CostModel.from_paper()
            want = [ks.sched.run(g, ctx, ev, {"x": ct}, threads=1, cost=cm).outputs[0]["exp"].to_bytes() for ct in cts]
            bodies = [ct.to_bytes() for ct in cts]
            # capacity: 4 jobs per thread at once, jobs per second until the last result
            burst = 4 * c.metrics()["threads"]
            t = time.monotonic()
            ids = [c.submit({"x": bodies[i % 8]}, keys=kid, computation="exp") for i in range(burst)]
            for i in ids:
                c.result_bytes(i)
            mu = burst / (time.monotonic() - t)
            print(
                f"[{name}] capacity {mu:.2f} jobs/s ({burst} jobs at once); key set {keys_bytes / 1e6:.1f} MB",
                flush=True,
            )
            levels = [(f, False) for f in loads] + ([(2.0, True)] if restart else [])
            for n, (f, kill) in enumerate(levels):
                r = one_level(
                    srv,
                    c.token,
                    kid,
                    bodies,
                    want,
                    f * mu,
                    jobs,
                    seed=10 + n,
                    kill_at=jobs // 2 if kill else None,
                    label=f"[{name}] load {f:.2f}{' + restart' if kill else ''}",
                )
                r.update(
                    executor=name,
                    params=params,
                    offered_load=f,
                    capacity_per_s=mu,
                    server_capacity=capacity,
                    key_set_bytes=keys_bytes,
                    machine=harness.machine(),
                )
                print(
                    f"[{name}] load {f:.2f}{' + restart' if kill else ''}: offered {r['offered_per_s']:.2f}/s, "
                    f"achieved {r['achieved_per_s']:.2f}/s, p50 {r['p50_ms']:.0f} p95 {r['p95_ms']:.0f} "
                    f"p99 {r['p99_ms']:.0f} ms, {r['results']}/{jobs} results, {r['rejected_busy']} retry-later, "
                    f"{r['error_count']} errors",
                    flush=True,
                )
                out.append(r)
        finally:
            srv.stop()


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for ex, mark in (("local", "o"), ("ray", "s")):
        rs = [r for r in rows if r["executor"] == ex and not r["restarted"]]
        if not rs:
            continue
        x = [r["offered_per_s"] for r in rs]
        for q, ls in (("p50_ms", "-"), ("p95_ms", "--"), ("p99_ms", ":")):
            a1.plot(x, [r[q] / 1000 for r in rs], ls, marker=mark, label=f"{ex} {q[:3]}")
        a2.plot([r["offered_per_s"] for r in rs], [r["achieved_per_s"] for r in rs], marker=mark, label=ex)
    a1.set_xlabel("offered (jobs/s; 0.25 to 2 x each executor's measured capacity)")
    a1.set_ylabel("latency, arrival to result (s)")
    a1.set_yscale("log")
    a1.legend(fontsize=7)
    a1.grid(alpha=0.3)
    top = max(r["offered_per_s"] for r in rows)
    a2.plot([0, top], [0, top], color="gray", lw=0.5)
    a2.set_xlabel("offered (jobs/s)")
    a2.set_ylabel("achieved (jobs/s)")
    a2.legend()
    a2.grid(alpha=0.3)
    fig.suptitle(f"kasoku serve, e^x (order 6) at {rows[0]['params']}, loopback, {rows[0]['machine']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", default="SCHED")
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--loads", default="0.25,0.5,0.75,1.0,1.5,2.0", help="offered loads, x the measured capacity")
    ap.add_argument("--jobs", type=int, default=40, help="jobs per load level")
    ap.add_argument("--capacity", type=int, default=16, help="the server's queue bound (--capacity of serve)")
    ap.add_argument("--no-restart", action="store_true", help="skip the kill-and-restart phase at 2x load")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--from-json", default=None, metavar="JSONL", help="run nothing: plot the rows of an earlier run")
    args = ap.parse_args()
    if args.from_json:
        plot(harness.read(args.from_json), args.plot or "serving.png")
        return
    loads = [float(x) for x in args.loads.split(",")]
    rows: list[dict] = []
    for ex in args.executors.split(","):
        if ex == "ray":
            import ray
            from ray.cluster_utils import Cluster

            cl = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            cl.add_node(num_cpus=1)
            cl.wait_for_nodes()
            try:
                run_executor("ray", args.params, loads, args.jobs, args.capacity, False, rows, cl.address)
            finally:
                ray.shutdown()
                cl.shutdown()
        else:
            run_executor("local", args.params, loads, args.jobs, args.capacity, not args.no_restart, rows)
    if args.json:
        open(args.json, "w").close()
        for r in rows:
            harness.emit(r, args.json, echo=False)
    if args.plot:
        plot(rows, args.plot)
    bad = [
        r
        for r in rows
        if r["error_count"] or not r["results"] == r["distinct_job_ids"] == r["jobs_stored_by_server"] == r["jobs"]
    ]
    if bad:
        sys.exit(f"{len(bad)} level(s) lost, duplicated or miscomputed jobs: {[r['errors'] for r in bad]}")


if __name__ == "__main__":
    main()
