"""bench/nn_peers.py's Orion child: the same network in Orion's own modules (orion-fhe), fitted, compiled and run
as its repository does, its HDF5 offload for the ResNets (one JSON line)."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pathlib
import re
import sys

import harness
from nn_networks import (
    ORION_BOOT,
    ORION_CLASS,
    ORION_CONFIG,
    ORION_SPARSE_PACKING,
    RESNET_BLOCKS,
    data_file,
    peak_gb,
    progress,
    record,
)


class _Tee(io.StringIO):
    """Orion's reports kept (the bootstrap count is read from them) and shown on stderr as they come: stdout is where
    the parent reads this child's result."""

    def write(self, text: str) -> int:
        sys.stderr.write(text)
        return super().write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _orion_net(work: pathlib.Path, name: str):
    """Orion's module of the network with this run's weights, in eval mode."""
    import torch

    import orion.models

    net = getattr(orion.models, ORION_CLASS[name])()
    state = torch.load(work / f"{name}.pt")
    if name in RESNET_BLOCKS:  # our blocks are one Sequential, Orion's 3 stages of n: layers.{n i + j} -> layers.i.j
        n = RESNET_BLOCKS[name]
        state = {
            re.sub(r"^layers\.(\d+)\.", lambda m: f"layers.{int(m[1]) // n}.{int(m[1]) % n}.", k): v
            for k, v in state.items()
        }
    missing, unexpected = net.load_state_dict(state, strict=False)
    # Orion's own buffers (BatchNorm's counter, its average pooling's fixed kernel) are not weights of the model
    if unexpected or [k for k in missing if not (k.endswith("num_batches_tracked") or k.startswith("avgpool."))]:
        raise SystemExit(
            f"Orion's {ORION_CLASS[name]} does not take these weights: missing {missing}, unexpected {unexpected}"
        )
    if isinstance(getattr(net, "pool", None), torch.nn.Identity):
        # ResNet's CIFAR stem holds a torch Identity, on which orion.fit with a DataLoader fails (it sets batch sizes on
        # every module it traced: AttributeError 'input_shape'); a plain function is the same and is traced through
        del net._modules["pool"]
        net.pool = lambda t: t
    net.eval()  # Orion's Module.eval returns None
    return net


def _orion_fit(net, data) -> None:
    import torch

    import orion

    # a loader of batch 1: Orion fits on batches of 128 and packs for the loader's batch size (a tensor's batch of 256
    # would make it pack 256 images per transform); sequential, so that a second process fits the same ranges (io_mode
    # load checks them against the saved ones)
    cal = torch.utils.data.TensorDataset(data["x_cal"], torch.zeros(len(data["x_cal"])))
    orion.fit(net, torch.utils.data.DataLoader(cal, batch_size=1))


def _orion_params(name: str) -> dict:
    c = ORION_CONFIG[name]
    boot = ORION_BOOT.get(name)
    return {
        "params": f"N=2^{c['LogN']} {c['RingType']}, {len(c['LogQ']) - 1} levels, scale 2^{c['LogScale']}, "
        f"H {c['H']}, log2(QP) {sum(c['LogQ']) + sum(c['LogP'])}"
        + (f"; bootstrapping LogP {boot['LogP']}" if boot else ""),
        "orion_config": {"ckks_params": c, **({"boot_params": boot} if boot else {})},
    }


def _sparse_diagonals(packing) -> None:
    """Orion's diagonal extraction (orion.core.packing.diagonalize) replaced by one that reads the same diagonals from
    the sparse matrix. Orion's builds dense index arrays of block height x slots int64, three at once: at N = 2^16, 13
    GB for a stage-1 convolution of ResNet-20 and 26 GB for its last linear layer (packed square), which kills its
    compile on a 24 GB machine. Here, as there: blocks of slots columns and block height h rows (h the power of two
    above the rows for a hybrid-packed layer of one block row, not the last; else slots, then 0 output rotations),
    diagonal i of a block holding M[c mod h, (i + c) mod slots] at slot c, kept where it has a nonzero float32 value,
    in increasing i; a block without one as {0: zeros}. An entry M[r, col] is at i = (col - r) mod h, slot
    c = r + h floor(((col - r) mod slots) / h). Checked equal to Orion's (values, order, empty blocks) on random
    sparse matrices and a convolution's, hybrid and square, last layer or not."""
    import math

    import numpy as np

    def diagonalize(matrix, num_slots, embed_method, is_last_layer):
        height, width = matrix.shape
        rows, cols = math.ceil(height / num_slots), math.ceil(width / num_slots)
        if rows == 1 and embed_method == "hybrid" and not is_last_layer:
            h = 2 ** math.ceil(math.log2(height))
            output_rotations = int(math.log2(num_slots // h))
        else:
            h, output_rotations = num_slots, 0
        matrix.resize(rows * h, cols * num_slots)
        print(
            f"├── matrix {height} x {width}, blocks {(rows, cols)} of {h} x {num_slots}, {output_rotations} rotations"
        )
        blocks, total = {}, 0
        for i in range(rows):
            for j in range(cols):
                block = matrix[i * h : (i + 1) * h, j * num_slots : (j + 1) * num_slots].tocoo()
                block.sum_duplicates()
                values = block.data.astype(np.float32)
                keep = values != 0
                r, values = block.row[keep].astype(np.int64), values[keep]
                q = (block.col[keep].astype(np.int64) - r) % num_slots
                diag, slot = q % h, r + (q // h) * h
                order = np.argsort(diag, kind="stable")
                diag, slot, values = diag[order], slot[order], values[order]
                starts = np.flatnonzero(np.diff(diag, prepend=-1)).tolist() + [len(diag)]
                diagonals = {}
                for a, b in zip(starts[:-1], starts[1:]):
                    d = np.zeros(num_slots, dtype=np.float32)
                    d[slot[a:b]] = values[a:b]
                    diagonals[int(diag[a])] = d.tolist()
                total += len(diagonals)
                blocks[(i, j)] = diagonals or {0: [0.0] * num_slots}
        print(f"├── # diagonals = {total} (read from the sparse matrix: nn_peers)")
        return blocks, output_rotations

    packing.diagonalize = diagonalize


def _emptied(layer, generate):
    """Orion's generate_diagonals of a layer, its diagonals' values dropped after (their indices kept)."""

    def call(last):
        generate(last)
        for diags in layer.diagonals.values():
            for k in diags:
                diags[k] = []

    return call


def child_orion(
    work: pathlib.Path, name: str, threads: int, images: int, stage: str | None = None, files: str | None = None
) -> dict:
    """One process of Orion: the whole run (stage None, io_mode none), or the compile that writes its diagonals and
    rotation keys to HDF5 files in the folder `files` (stage "save") or the run that reads them back ("load")."""
    import numpy as np
    import torch

    import orion
    from orion.core import scheme  # the Scheme that orion.init_scheme fills
    from orion.nn.linear import LinearTransform

    torch.set_num_threads(threads)
    data = torch.load(work / data_file(name))
    net = _orion_net(work, name)
    x = data["x_test"][:images]
    with torch.no_grad():
        want = net(x).numpy()  # the model in the clear, before Orion fits and fuses it
    if name in ORION_SPARSE_PACKING:
        import orion.core.packing

        _sparse_diagonals(orion.core.packing)
    io_mode = stage or "none"
    config = {
        "ckks_params": ORION_CONFIG[name],
        **({"boot_params": ORION_BOOT[name]} if name in ORION_BOOT else {}),
        "orion": {
            "margin": 2,
            "embedding_method": "hybrid",
            "backend": "lattigo",
            "fuse_modules": True,
            "debug": False,
            "diags_path": str(pathlib.Path(files) / "diagonals.h5") if stage else "",
            "keys_path": str(pathlib.Path(files) / "keys.h5") if stage else "",
            "io_mode": io_mode,
        },
    }
    # Lattigo's parameters and the secret (save: written; load: read), public and relin keys
    keygen_s = harness.timed(lambda: orion.init_scheme(config))[0]
    _orion_fit(net, data)

    # the rotation keys are made in orion.compile (save: and written to the HDF5 file): timed apart
    rot = {"s": 0.0}
    make_rotation_keys = scheme.lt_evaluator.generate_rotation_keys

    def timed_rotation_keys(transform_id):
        rot["s"] += harness.timed(lambda: make_rotation_keys(transform_id))[0]

    scheme.lt_evaluator.generate_rotation_keys = timed_rotation_keys
    make_bootstrapper = scheme.bootstrapper.generate_bootstrapper
    boot_slots = []
    if stage == "load":
        # compile packs every layer again and, in load mode, keeps all their diagonals as Python lists until it reads
        # them back from the file (ResNet-20: about 11,000 of 32768 floats, some 12 GB); the save mode empties each
        # layer's once written, keeping their indices (the bootstrap placement counts them): the same here
        for m in net.modules():
            if isinstance(m, LinearTransform):
                m.generate_diagonals = _emptied(m, m.generate_diagonals)
    if stage:
        # one bootstrapper at N = 2^16 is about 12.7 GB of keys: the save process needs none (they are not written),
        # the load process makes each when the network reaches it, below, and drops the one before
        scheme.bootstrapper.generate_bootstrapper = boot_slots.append
    said = _Tee()
    with contextlib.redirect_stdout(said):  # Orion reports on stdout, where the parent reads this child's result
        # packing, levels, diagonals, bootstrap placement and the keys they need
        compile_s, level = harness.timed(lambda: orion.compile(net))
    boots = re.search(r"Network requires (\d+) bootstrap", said.getvalue())
    common = {
        **({"orion_patch": "diagonals read from the sparse matrix"} if name in ORION_SPARSE_PACKING else {}),
        "bootstraps": int(boots[1]) if boots else 0,
        "rotation_keygen_s": rot["s"],
        **_orion_params(name),
    }
    if stage == "save":
        return {
            "compile_s": compile_s,
            "keygen_s": keygen_s,
            "bootstrapper_slots": boot_slots,
            "diagonals_file_gb": os.path.getsize(config["orion"]["diags_path"]) / 1e9,
            "keys_file_gb": os.path.getsize(config["orion"]["keys_path"]) / 1e9,
            "peak_gb": peak_gb(),
            **common,
        }
    if stage == "load":
        # the layers' diagonals (packed again by compile, then read back to check them against the saved ones) are not
        # used in the run: the encoded ones are read from the file at each transform
        for m in net.modules():
            if isinstance(m, LinearTransform):
                m.diagonals = {}
        gc.collect()

    # what a run spends on the offload: the HDF5 reads of rotation keys and encoded diagonals, and the bootstrappers'
    # keys made when the network reaches a bootstrap of another slot count (one held at a time); and its bootstraps
    spent = {"io": 0.0, "boot_keygen": 0.0, "boot": 0.0, "boots": 0}
    boot_keygen = []  # (slots, seconds) of each bootstrapper made

    def accounted(fn, key):
        def call(*args):
            secs, out = harness.timed(lambda: fn(*args))
            spent[key] += secs
            return out

        return call

    if stage == "load":
        lt = scheme.lt_evaluator
        lt.load_rotation_keys = accounted(lt.load_rotation_keys, "io")
        lt.load_plaintext_diagonals = accounted(lt.load_plaintext_diagonals, "io")
        bootstrap = scheme.bootstrapper.bootstrap
        held = [None]

        def one_bootstrapper(ctxt, slots):
            if held[0] != slots:
                # the old ones: garbage for Go's collector, which GOMEMLIMIT keeps at work
                secs = harness.timed(lambda: (scheme.backend.DeleteBootstrappers(), make_bootstrapper(slots)))[0]
                held[0] = slots
                boot_keygen.append((slots, secs))
                spent["boot_keygen"] += secs
                progress(f"orion {name}: bootstrapper for {slots} slots made in {secs:.1f} s")
            secs, out = harness.timed(lambda: bootstrap(ctxt, slots))
            spent["boot"] += secs
            spent["boots"] += 1
            return out

        scheme.bootstrapper.bootstrap = one_bootstrapper

    net.he()
    enc, inf, wall, got, per_image = [], [], [], [], []
    for i in range(len(x)):
        secs, ct = harness.timed(lambda: orion.encrypt(orion.encode(x[i : i + 1], level)))
        enc.append(secs)
        before = dict(spent)
        secs, out = harness.timed(lambda: net(ct))
        wall.append(secs)
        d = {k: spent[k] - before[k] for k in spent}
        inf.append(wall[-1] - d["io"] - d["boot_keygen"])
        per_image.append(d)
        got.append(np.asarray(out.decrypt().decode(), dtype=float).reshape(-1)[: want.shape[1]])
        progress(
            f"orion {name}: image {i + 1}/{len(x)}: {inf[-1]:.3f} s"
            + (
                f" ({wall[-1]:.1f} s with {d['io']:.1f} s of HDF5 reads and {d['boot_keygen']:.1f} s of bootstrapper"
                f" keys; {d['boots']} bootstraps, {d['boot']:.1f} s)"
                if stage
                else ""
            )
        )
    rec = {**record(compile_s, keygen_s, enc, inf, got, want), **common}
    if stage == "load":
        first = {}  # each slot count's first bootstrapper: the keys a run needs once
        for slots, sec in boot_keygen:
            first.setdefault(slots, sec)
        rec.update(
            load_compile_s=compile_s,
            load_keygen_s=keygen_s,
            boot_keygen_s=sum(first.values()),
            bootstrappers_made=[[slots, sec] for slots, sec in boot_keygen],
            inference_wall_s=wall,
            hdf5_read_s=[d["io"] for d in per_image],
            bootstrap_s=[d["boot"] for d in per_image],
            bootstraps_run=[d["boots"] for d in per_image],
            gomemlimit=os.environ.get("GOMEMLIMIT"),
        )
    return rec
