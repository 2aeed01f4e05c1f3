"""The encrypted-compute service end to end, on this machine: start `python -m kasoku serve` on loopback, make a
client, register its evaluation keys, submit e^x jobs on encrypted data and decrypt the results here. The server
never holds the secret key.

    python examples/service.py [--params SCHED] [--jobs 4]
"""

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import kasoku as ks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", default="SCHED")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as data, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        # --cost paper: the scheduler's priorities from seed 001's tables (measure: time this machine, once)
        server = subprocess.Popen([sys.executable, "-m", "kasoku", "serve", "--params", args.params, "--port", str(port),
                                   "--data", data, "--cost", "paper"])
        try:
            url = f"http://127.0.0.1:{port}"
            ks.Client.wait_for(url, timeout=120)
            client = ks.Client.register(url, (Path(data) / "admin_token").read_text().strip())
            ctx = client.context()                       # the server's parameters
            keys = ctx.keygen()                          # secret key: here only
            kid = client.register_keys(keys.evaluation())
            print(f"registered evaluation keys {kid} ({client.bytes_sent / 1e6:.1f} MB uploaded, compressed)")
            xs = [np.linspace(-1, 1, 8) * (k + 1) / args.jobs for k in range(args.jobs)]
            t = time.perf_counter()
            jobs = [client.submit({"x": ctx.encrypt(x, keys.public)}, keys=kid, computation="exp") for x in xs]
            for job, x in zip(jobs, xs):
                got = ctx.decrypt(client.result(job, ctx)["exp"], keys.secret)[:8].real
                print(f"job {job}: max |e^x - result| = {np.max(np.abs(got - np.exp(x))):.1e}")
            m = client.metrics()
            print(f"{args.jobs} jobs in {time.perf_counter() - t:.2f} s; server latency p50 {m['latency_ms']['p50']:.0f} ms, "
                  f"{m['threads']} threads, executor {m['executor']}")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
