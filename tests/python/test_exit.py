"""How a script that uses kasoku ends: nothing printed by the binding layer. With KASOKU_LEAK_WARNINGS set, nanobind
reports every kasoku object still alive at exit: a script that computes and ends must leave none (a reference leaked
in the bindings would show here). By default the report is off: with a daemon thread alive at exit Python leaves the
main module's globals uncollected, and the report would name objects that nothing leaked."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import threading, time
import kasoku as ks
ctx = ks.Context(ks.Parameters.named("T12"), threads=1)
keys = ctx.keygen(rotations=[1])
ev = ctx.evaluator(keys.evaluation())
ct = ev.rotate(ev.multiply(ctx.encrypt([1.0, 2.0], keys.public), ctx.encrypt([3.0, 4.0], keys.public)), 1)
assert abs(ctx.decrypt(ct, keys.secret)[0] - 8.0) < 1e-3
if DAEMON:
    threading.Thread(target=lambda: time.sleep(60), daemon=True).start()
"""


def run(daemon: bool, warnings: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KASOKU_LEAK_WARNINGS"}
    if warnings:
        env["KASOKU_LEAK_WARNINGS"] = "1"
    code = f"DAEMON = {daemon}\n" + SCRIPT
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_script_ends_without_leaks():
    done = run(daemon=False, warnings=True)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr, done.stderr


def test_a_daemon_thread_at_exit_prints_nothing_by_default():
    done = run(daemon=True, warnings=False)
    assert done.returncode == 0, done.stderr
    assert "nanobind" not in done.stderr, done.stderr
    # the report the default keeps off: the globals left alive by the daemon thread
    assert "leaked" in run(daemon=True, warnings=True).stderr
