"""The package ships type stubs (nanobind stubgen) and py.typed, and mypy accepts the examples."""

import pathlib
import subprocess
import sys

import kasoku as ks

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_stubs_and_marker_are_installed():
    pkg = pathlib.Path(ks.__file__).parent
    assert (pkg / "py.typed").is_file()
    stub = (pkg / "_kasoku" / "__init__.pyi").read_text()
    assert "class Evaluator:" in stub and "def rotate_hoisted(" in stub
    assert (pkg / "_kasoku" / "sched.pyi").is_file()


def test_mypy_accepts_the_examples(tmp_path):
    examples = sorted(str(p) for p in (ROOT / "examples").glob("*.py"))
    assert examples
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), *examples],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
