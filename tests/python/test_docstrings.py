"""Every public name of kasoku and of its modules kasoku.sched, kasoku.multiparty, kasoku.nn and
kasoku.service.ray_executor (their __all__ where they have one), and every public method and property of their
classes, says what it does: a docstring beyond the signature line nanobind writes for a compiled function. And the
index of docs/data is current."""

import __future__
import importlib
import inspect
import pathlib
import subprocess
import sys

import pytest


def _described(obj) -> bool:
    obj = getattr(obj, "__ray_actor_class__", obj)  # a Ray actor: the class it wraps
    doc = (getattr(obj, "__doc__", None) or "").strip()
    if type(obj).__name__ in ("nb_func", "nb_method"):
        # nanobind writes the signature first; a description follows a blank line
        parts = doc.split("\n\n", 1)
        return len(parts) > 1 and parts[1].strip() != ""
    return doc != ""


def _undescribed(module) -> list[str]:
    missing = []
    for name in getattr(module, "__all__", None) or dir(module):
        obj = getattr(module, name)
        if name.startswith("_") or inspect.ismodule(obj) or isinstance(obj, __future__._Feature):
            continue
        if not _described(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for member, value in vars(getattr(obj, "__ray_actor_class__", obj)).items():
                if member.startswith("_"):
                    continue
                if isinstance(value, property):
                    ok = bool((value.__doc__ or "").strip()) or _described(value.fget)
                else:
                    ok = _described(value)
                if not ok:
                    missing.append(f"{name}.{member}")
    return missing


@pytest.mark.parametrize(
    "name", ["kasoku", "kasoku.sched", "kasoku.multiparty", "kasoku.nn", "kasoku.service.ray_executor"]
)
def test_every_public_name_has_a_docstring(name):
    module = importlib.import_module(name)
    assert _undescribed(module) == []


def test_every_cpp_header_is_in_the_reference():
    """docs/api/cpp.rst shows every public header under include/kasoku (make docs fails on a header it names that
    does not exist; this fails on one it leaves out)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/api/cpp.rst").read_text()
    headers = sorted(p.relative_to(root).as_posix() for p in (root / "include/kasoku").rglob("*.hpp"))
    assert headers, "no headers found"
    missing = [h for h in headers if f".. literalinclude:: ../../{h}" not in page]
    assert not missing, f"add these headers to docs/api/cpp.rst: {missing}"


def test_the_data_index_lists_every_file_as_it_is():
    """docs/data/README.md is what scripts/data_index.py makes of docs/data now: every file listed, with the machines,
    dates, commits and commands its lines name and the documents that cite it (run the script after adding data)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    check = subprocess.run([sys.executable, str(root / "scripts" / "data_index.py"), "--check"], capture_output=True)
    assert check.returncode == 0, check.stderr.decode()


def test_the_data_index_reads_file_patterns_as_citations():
    """A document that names files by a pattern (`...-ncu-{mul,rot}.csv`, `...-ncu-*.csv`) cites each file it matches,
    and only those."""
    import importlib.util

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("data_index", root / "scripts" / "data_index.py")
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    braces = "the kernels (`docs/data/gpu-x-ncu-{mul,rot}.csv`) and"
    assert index._cites(braces, "gpu-x-ncu-mul.csv") and index._cites(braces, "gpu-x-ncu-rot.csv")
    assert not index._cites(braces, "gpu-x-ncu-batch.csv")
    star = "every kernel (`docs/data/gpu-y-ncu-*.csv`)"
    assert index._cites(star, "gpu-y-ncu-Rotate.csv") and not index._cites(star, "gpu-z-ncu-Rotate.csv")
    assert index._cites("see `a.jsonl`", "a.jsonl") and not index._cites("see `a.jsonl`", "b.jsonl")
