"""The encrypted-compute service end to end, on this machine: start `python -m kasoku serve` on loopback, make a
client, register its evaluation keys, submit e^x jobs on encrypted data and decrypt the results here. The server
never holds the secret key.

    python examples/service.py [--params SCHED] [--jobs 4]
"""

import argparse
import tempfile
import time

import numpy as np

import kasoku as ks
from kasoku.service.process import ServerProcess


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", default="SCHED")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as data:
        # --cost paper: the scheduler's priorities from seed 001's tables (measure: time this machine, once)
        server = ServerProcess(data, "--params", args.params, "--cost", "paper").start()
        try:
            client = ks.Client.register(server.url, server.admin_token)
            ctx = client.context()  # the server's parameters
            keys = ctx.keygen()  # secret key: here only
            kid = client.register_keys(keys.evaluation())
            print(f"registered evaluation keys {kid} ({client.bytes_sent / 1e6:.1f} MB uploaded, compressed)")
            xs = [np.linspace(-1, 1, 8) * (k + 1) / args.jobs for k in range(args.jobs)]
            t = time.perf_counter()
            jobs = [client.submit({"x": ctx.encrypt(x, keys.public)}, keys=kid, computation="exp") for x in xs]
            for job, x in zip(jobs, xs):
                got = ctx.decrypt(client.result(job, ctx)["exp"], keys.secret)[:8].real
                print(f"job {job}: max |e^x - result| = {np.max(np.abs(got - np.exp(x))):.1e}")
            m = client.metrics()
            print(
                f"{args.jobs} jobs in {time.perf_counter() - t:.2f} s; "
                f"server latency p50 {m['latency_ms']['p50']:.0f} ms, "
                f"{m['threads']} threads, executor {m['executor']}"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
