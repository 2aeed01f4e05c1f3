"""The tutorials in notebooks/ run end to end (nbclient, a fresh kernel each): every cell, every assertion in them."""

import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="make venv installs nbformat, nbclient and ipykernel")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_tutorials():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    t = time.perf_counter()
    # a failing cell raises CellExecutionError with the cell's source and traceback
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    print(f"{path.name}: {time.perf_counter() - t:.1f} s")
    assert all(c.get("outputs") is not None for c in nb.cells if c.cell_type == "code")
