"""A kasoku server in a child process on a loopback port (examples, tests, the load run): start, stop, restart."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .client import Client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`python -m kasoku serve --data DATA --port PORT ARGS...` with its output in DATA/server.log. The port is chosen
    once, so a restart (stop, then start) comes back at the same url on the same data."""

    def __init__(self, data: str | os.PathLike, *args: str):
        self.data, self.args, self.port = Path(data), args, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 600) -> "ServerProcess":
        """Starts it and returns once it answers /health (TimeoutError with its log otherwise)."""
        self.data.mkdir(parents=True, exist_ok=True)
        with open(self.data / "server.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kasoku",
                    "serve",
                    "--data",
                    str(self.data),
                    "--port",
                    str(self.port),
                    *self.args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            try:
                Client.wait_for(self.url, timeout=1.0)
                return self
            except TimeoutError:
                if time.monotonic() > deadline:
                    self.stop(signal.SIGKILL)
                    break
        raise RuntimeError(f"the server did not come up at {self.url}:\n" + self.log())

    @property
    def admin_token(self) -> str:
        return (self.data / "admin_token").read_text().strip()

    def log(self) -> str:
        return (self.data / "server.log").read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: a clean stop; SIGKILL: the process dies without a word (a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=120)
