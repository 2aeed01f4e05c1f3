#!/usr/bin/env python3
"""SASS instructions per NTT butterfly and per base-conversion term of three GPU arithmetics (docs/GPU.md, "Modular
arithmetic in SASS"): the kernels' 64-bit Shoup products today, double-precision FMA products for primes < 2^50, and
32-bit words for primes < 2^30. Needs no GPU: nvcc compiles bench/gpu_sass_variants.cu for the architecture and
cuobjdump reads the machine code back.

    python3 bench/gpu_sass.py [--arch sm_90] [--cuobjdump PATH] [--out sass.jsonl]

cuobjdump (and the nvdisasm it calls) come with a full CUDA toolkit; where the toolkit has only nvcc, the PyPI wheels
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (13.x) have both: unpack them and pass --cuobjdump or put their bin/
on PATH. Each operation's count is its kernel's instructions minus those of a kernel that loads and stores the same
words without the arithmetic (the conversion's over its 8 terms). The issue bound assumes what an H100 SMSP does per
clock: one warp instruction issued, 16 lanes of FP64 and of integer multiply-add (so a warp's DFMA or IMAD holds
its pipe 2 clocks). Prints a markdown table; with --out, one JSON line per variant and operation.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # bench/, also when a test loads this file by its path
import harness  # noqa: E402

ROOT = os.path.dirname(HERE)
SOURCE = os.path.join(HERE, "gpu_sass_variants.cu")
VARIANTS = {  # name: (what, bits of modulus per limb a 60-bit prime's worth of work needs)
    "u64": ("64-bit words, Shoup (today's kernels), primes < 2^61", 60),
    "f64": ("double-precision FMA products, primes < 2^50", 48),
    "u32": ("32-bit words, Shoup (as Cheddar), primes < 2^30", 30),
}
CONV_TERMS = 8


def kind(op: str) -> str:
    """Class of an opcode: imul (integer multiply-add), fp64, mem, ctrl or alu."""
    base = op.split(".")[0]
    if base in ("IMAD", "IMUL", "IMADSP"):
        return "imul"
    if base in ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX") or op.startswith(("FRND.F64", "F2F.F64")):
        return "fp64"
    if base in ("F2I", "I2F") and "64" in op:
        return "fp64"  # conversions to and from double run on the FP64 unit
    if base in ("LDG", "STG", "LDC", "ULDC", "LDS", "STS", "LD", "ST"):
        return "mem"
    if base in ("EXIT", "BRA", "RET", "NOP", "BAR", "S2R", "S2UR", "CS2R"):
        return "ctrl"
    return "alu"


def sass_counts(cuobjdump: str, cubin: str, env: dict | None = None) -> dict[str, collections.Counter]:
    text = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True, env=env).stdout
    out: dict[str, collections.Counter] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = collections.Counter()
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and name:
            op = m.group(1)
            if op == "NOP" or (op == "BRA" and out[name]["EXIT"]):  # padding, and the trap loop after EXIT
                continue
            out[name][op] += 1
            out[name][kind(op)] += 0  # keep every class present
    return out


def classes(c: collections.Counter) -> collections.Counter:
    k = collections.Counter()
    for op, n in c.items():
        if op in ("imul", "fp64", "mem", "ctrl", "alu"):
            continue
        k[kind(op)] += n
        k["all"] += n
    return k


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90", help="GPU architecture (default sm_90: H100, H200)")
    ap.add_argument("--cuobjdump", default=None, help="cuobjdump (default: on PATH)")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--out", default=None, help="append JSON lines here")
    args = ap.parse_args(argv)
    cuobjdump = args.cuobjdump or shutil.which("cuobjdump")
    if not cuobjdump or not os.path.exists(cuobjdump):
        print(
            "no cuobjdump: install a full CUDA toolkit, or unpack the PyPI wheels nvidia-cuda-cuobjdump and "
            "nvidia-cuda-nvdisasm and pass --cuobjdump .../nvidia/cu13/bin/cuobjdump",
            file=sys.stderr,
        )
        return 2
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(cuobjdump)) + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "v.cubin")
        subprocess.run(
            [
                args.nvcc,
                "-cubin",
                f"-arch={args.arch}",
                "-O3",
                "-std=c++20",
                "-I",
                os.path.join(ROOT, "include"),
                "-o",
                cubin,
                SOURCE,
            ],
            check=True,
        )
        counts = {k: classes(v) for k, v in sass_counts(cuobjdump, cubin, env).items()}
    nvcc_version = re.search(
        r"release ([\d.]+)", subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout
    )
    rows = []
    for v, (what, bits) in VARIANTS.items():
        for op, kernel, per in (("butterfly", "bfly", 1), ("conversion term", "conv", CONV_TERMS)):
            full, base = counts[f"{kernel}_{v}"], counts[f"copy_{kernel}_{v}"]
            d = {k: (full[k] - base[k]) / per for k in ("all", "imul", "fp64", "alu")}
            issue = max(d["all"], 2 * d["imul"], 2 * d["fp64"])  # clocks of one SMSP per warp-operation, a bound
            rows.append(
                {
                    "op": op,
                    "variant": v,
                    "what": what,
                    "arch": args.arch,
                    "nvcc": nvcc_version.group(1) if nvcc_version else None,
                    "instructions": d["all"],
                    "integer_multiply": d["imul"],
                    "fp64": d["fp64"],
                    "other_alu": d["alu"],
                    "issue_clocks_bound": issue,
                    "limbs_per_60_bits": 60 / bits,
                    "issue_clocks_per_60_bits": issue * 60 / bits,
                }
            )
    print(
        f"| operation ({args.arch}) | variant | SASS instructions | integer multiply | FP64 | other ALU | "
        "issue bound (SMSP clocks / warp) | per 60 bits of modulus |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['op']} | {r['variant']} | {r['instructions']:g} | {r['integer_multiply']:g} | {r['fp64']:g} | "
            f"{r['other_alu']:g} | {r['issue_clocks_bound']:g} | {r['issue_clocks_per_60_bits']:.1f} |"
        )
    if args.out:  # the table is what this prints
        for r in rows:
            harness.emit(r, args.out, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
