"""A build that lacks a system dependency says which package to install (not CMake's generic message)."""
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_missing_dependency_names_the_package(tmp_path):
    cmake = shutil.which("cmake", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("cmake")
    assert cmake, "cmake is installed with the project's venv (make venv)"
    r = subprocess.run([cmake, "-S", str(ROOT), "-B", str(tmp_path / "build"), "-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=TRUE"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    err = " ".join((r.stdout + r.stderr).split())
    assert "apt-get install nlohmann-json3-dev" in err and "make deps" in err, err
