"""The build: a missing system dependency names the package to install (not CMake's generic message); the Python module
keeps what its static archives bring to itself."""

import ctypes
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_missing_dependency_names_the_package(tmp_path):
    cmake = shutil.which("cmake", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("cmake")
    assert cmake, "cmake is installed with the project's venv (make venv)"
    r = subprocess.run(
        [cmake, "-S", str(ROOT), "-B", str(tmp_path / "build"), "-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=TRUE"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode != 0
    err = " ".join((r.stdout + r.stderr).split())
    assert "apt-get install nlohmann-json3-dev" in err and "make deps" in err, err


def test_the_module_exports_nothing_of_its_static_archives():
    """kasoku's own libraries (and a libstdc++ a toolchain links statically) are not exported from the module: exported,
    they mixed with the libstdc++ the process already held (NumPy's), and repr(Parameters) crashed (GPU machine,
    GCC 13)."""
    import kasoku

    lib = ctypes.CDLL(kasoku._kasoku.__file__)
    assert hasattr(lib, "PyInit__kasoku")
    name = "_ZNK6kasoku4ckks10Parameters8describeB5cxx11Ev"  # kasoku::ckks::Parameters::describe(), from kasoku_ckks.a
    assert not hasattr(lib, name), f"{name} is exported from the module"
    assert "N=2^16" in repr(kasoku.Parameters.named("BOOT16"))
