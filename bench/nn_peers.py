#!/usr/bin/env python3
"""Encrypted inference of the networks Orion ships, kasoku.nn beside Orion (orion-fhe) in one run: the same weights,
the same images, the same thread count, each library and network in a process of its own (its peak memory).

    .venv/bin/python bench/nn_peers.py --models MLP LoLA LeNet5 --threads 1 --images 5 \\
        --orion-python bench/.venv-orion/bin/python --out docs/data/nn-zen4.jsonl
    .venv/bin/python bench/nn_peers.py --models MLP --all-digits        # kasoku only: every digits test image
    .venv/bin/python bench/nn_peers.py --models ResNet20 ResNet32 ResNet44 --threads 1 --images 1 \\
        --orion-python bench/.venv-orion/bin/python                     # 3 x 32 x 32, bootstrapping
    .venv/bin/python bench/nn_peers.py --models ResNet20-trained --libs kasoku --images 50 --threads 2 \
        --data nn-work        # the weights kept there: --first-image 30 --images 20 goes on where a run stopped

The networks (examples/nn/models.py, Orion's orion.models shapes, x^2 activations) are trained here in the clear on
scikit-learn's digits upsampled to 28 x 28 (fixed seeds), and their weights loaded into Orion's own modules (same
attribute names). kasoku compiles with its defaults (kasoku.nn.compile: parameters chosen for the plan); Orion with its
repository's configs (MLP, LoLA: configs/mlp.yml and lola.yml, N = 2^13, 26-bit scale; LeNet-5: the same shape at
N = 2^14 with 7 levels, as it has no config of its own; the ResNets: configs/resnet.yml of its main branch, N = 2^16
with bootstrapping). Both fit their ranges on the same 256 training images (the ResNets: 64 random CIFAR-shaped
images, see CIFAR_SHAPED). Per network and library: compile (trace, pack, parameters, encoded transforms), key
generation, encryption, inference (median over the images), logit error against the clear model (max and mean over the
images), argmax agreement, and the process's peak resident memory. One JSON line each, tagged with the CPU.

Orion's ResNets do not fit 24 GB in one process (ResNet-20 is killed in orion.compile with io_mode none), so they run
with its own disk offload in two processes (ORION_SPLIT): the first compiles with io_mode save (diagonals and rotation
keys written to HDF5 files under --orion-work), the second loads them (io_mode load) and runs the images, its
bootstrappers made one at a time as the network reaches them, under GOMEMLIMIT (--orion-gomemlimit). The HDF5 reads
and the bootstrappers' key generation during a run are timed apart and left out of inference_s (inference_wall_s has
them); compile_peak_gb and inference_peak_gb are the two processes' peaks, peak_gb the larger. Their layers' diagonals
are read from the sparse matrices by the bench (the same values as Orion's packing, ORION_SPARSE_PACKING): Orion's
dense index arrays alone are 26 GB for the last layer at N = 2^16.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

import harness
from nn_kasoku import child_kasoku
from nn_networks import KASOKU_ONLY, ORION_CONFIG, ORION_SPLIT, TRAINED, progress, train_all
from nn_orion import child_orion


def run_child(
    python: str,
    lib: str,
    work: pathlib.Path,
    name: str,
    threads: int,
    images: int,
    device: str = "cpu",
    params: str | None = None,
    extra: list[str] | None = None,
    env_extra: dict | None = None,
) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), GOMAXPROCS=str(threads), MKL_NUM_THREADS=str(threads))
    env.update(env_extra or {})
    cmd = (
        [
            python,
            str(pathlib.Path(__file__).resolve()),
            "--child",
            lib,
            "--work",
            str(work),
            "--models",
            name,
            "--threads",
            str(threads),
            "--images",
            str(images),
            "--device",
            device,
        ]
        + (["--params", params] if params else [])
        + (extra or [])
    )
    # the child's stderr shown as it comes (a ResNet runs for tens of minutes), its last lines kept for an error
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(work))
    tail: list[str] = []

    def relay() -> None:
        for ln in p.stderr:
            sys.stderr.write(ln)
            tail[:] = (tail + [ln.rstrip()])[-3:]

    relaying = threading.Thread(target=relay, daemon=True)
    relaying.start()
    out = p.stdout.read()
    p.wait()
    relaying.join()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": f"exit {p.returncode}: " + " | ".join((out.strip().splitlines() + tail)[-3:])}
    return json.loads(lines[-1])


def run_orion_split(
    python: str, work: pathlib.Path, name: str, threads: int, images: int, files_root: str | None, gomemlimit: str
) -> dict:
    """Orion in two processes with its HDF5 offload (ORION_SPLIT): compile and write, then read and run; one record of
    both, with each process's peak memory. The files (tens of GB, useless without this run's secret key) are removed
    after."""
    files = pathlib.Path(tempfile.mkdtemp(prefix=f"orion-{name}-", dir=files_root or work))

    def stage(mode: str) -> dict:
        extra = ["--orion-stage", mode, "--orion-files", str(files)]
        return run_child(
            python, "orion", work, name, threads, images, extra=extra, env_extra={"GOMEMLIMIT": gomemlimit}
        )

    try:
        progress(f"orion {name}: compile, io_mode save (files in {files}) ...")
        first = stage("save")
        if "error" in first:
            return {"error": "compile process (io_mode save): " + first["error"]}
        progress(f"orion {name}: inference, io_mode load ...")
        second = stage("load")
        if "error" in second:
            return {
                "error": "inference process (io_mode load): " + second["error"],
                "compile_s": first["compile_s"],
                "compile_peak_gb": first["peak_gb"],
                "bootstraps": first["bootstraps"],
            }
    finally:
        shutil.rmtree(files, ignore_errors=True)
    return {
        **second,
        # compile: the first process's orion.compile (its rotation keys made and written in it: rotation_keygen_s);
        # keys: its secret, public and relinearisation keys, and one bootstrapper of each slot count in the second
        "compile_s": first["compile_s"],
        "keygen_s": first["keygen_s"] + second["boot_keygen_s"],
        "rotation_keygen_s": first["rotation_keygen_s"],
        "bootstraps": first["bootstraps"],
        "bootstrapper_slots": first["bootstrapper_slots"],
        "diagonals_file_gb": first["diagonals_file_gb"],
        "keys_file_gb": first["keys_file_gb"],
        "compile_peak_gb": first["peak_gb"],
        "inference_peak_gb": second["peak_gb"],
        "peak_gb": max(first["peak_gb"], second["peak_gb"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--models", nargs="+", default=["MLP", "LoLA", "LeNet5"], choices=[*ORION_CONFIG, *KASOKU_ONLY, *TRAINED]
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--images", type=int, default=5, help="test images per network and library")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--orion-python", help="the interpreter of a venv with orion-fhe (none: kasoku only)")
    ap.add_argument("--libs", nargs="+", default=["kasoku", "orion"], choices=["kasoku", "orion"])
    ap.add_argument("--all-digits", action="store_true", help="kasoku on all 360 test images (decisions and errors)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="kasoku's device (Orion runs on the CPU)")
    ap.add_argument("--params", help="kasoku's parameters by name (default: chosen by kasoku.nn.compile)")
    ap.add_argument(
        "--orion-work", help="where Orion's HDF5 files go for the ResNets (default: the run's temporary folder)"
    )
    ap.add_argument(
        "--orion-gomemlimit",
        default="16GiB",
        help="GOMEMLIMIT of Orion's two processes for the ResNets: Go's collector at work before the machine is full",
    )
    ap.add_argument(
        "--first-image", type=int, default=0, help="kasoku's first test image (a run that goes on where one stopped)"
    )
    ap.add_argument(
        "--data", help="keep the networks' weights and data in this folder; weights already there are not trained again"
    )
    ap.add_argument("--out", help="append the JSON lines here too")
    ap.add_argument("--child", choices=["kasoku", "orion"], help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--orion-stage", choices=["save", "load"], help=argparse.SUPPRESS)
    ap.add_argument("--orion-files", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.child == "kasoku":
            rec = child_kasoku(
                pathlib.Path(a.work), a.models[0], a.threads, a.images, a.device, a.params, a.first_image
            )
        else:
            rec = child_orion(pathlib.Path(a.work), a.models[0], a.threads, a.images, a.orion_stage, a.orion_files)
        harness.emit(rec)  # the line the parent reads
        return 0

    cpu = harness.machine()
    progress(f"{cpu}, {a.threads} thread(s)")
    images = 360 if a.all_digits else a.images
    failed = False
    with contextlib.ExitStack() as stack:
        if a.data:
            work = pathlib.Path(a.data).resolve()
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kasoku-nn-")))
        train_all(work, a.models, a.epochs)
        for name in a.models:
            libs = [("kasoku", sys.executable)] if "kasoku" in a.libs else []
            if a.orion_python and not a.all_digits and "orion" in a.libs and name in ORION_CONFIG:
                libs.append(("orion", os.path.abspath(a.orion_python)))
            for lib, python in libs:
                progress(f"{lib} {name} ...")
                if lib == "orion" and name in ORION_SPLIT:
                    got = run_orion_split(python, work, name, a.threads, images, a.orion_work, a.orion_gomemlimit)
                else:
                    got = run_child(
                        python,
                        lib,
                        work,
                        name,
                        a.threads,
                        images,
                        *((a.device, a.params) if lib == "kasoku" else ()),
                        extra=["--first-image", str(a.first_image)] if lib == "kasoku" else None,
                    )
                got.pop("command", None)  # the child's names its work folder: the line carries this run's
                rec = {"lib": lib, "model": name, "threads": a.threads, "cpu": cpu, **got}
                failed |= "error" in rec
                harness.emit(rec, a.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
