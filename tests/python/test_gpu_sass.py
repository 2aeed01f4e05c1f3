"""bench/gpu_sass.py reads cuobjdump's SASS: instructions per function, by class, padding and the trap loop left out."""

import importlib.util
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gpu_sass", ROOT / "bench" / "gpu_sass.py")
gpu_sass = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_sass)

SASS = """
	code for sm_90
		Function : bfly_u32
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
        /*0010*/                   IMAD.WIDE.U32 R2, R7, 0x4, R2 ;            /* 0x0000000407027825 */
        /*0020*/                   IMAD.HI.U32 R5, R4, R6, RZ ;               /* 0x0000000604057227 */
        /*0030*/               @P0 IADD3 R4, R4, -R9, RZ ;                    /* 0x8000000904040210 */
        /*0040*/                   DFMA R12, R12, R16, -R18 ;                 /* 0x000000100c0c722b */
        /*0050*/                   FRND.F64 R20, R20 ;                        /* 0x0000001400147313 */
        /*0060*/                   STG.E desc[UR4][R2.64], R5 ;               /* 0x0000000502007986 */
        /*0070*/                   EXIT ;                                     /* 0x000000000000794d */
        /*0080*/                   BRA 0x80;                                  /* 0xfffffffc00fc7947 */
        /*0090*/                   NOP;                                       /* 0x0000000000007918 */
"""


def test_sass_is_counted_by_class(monkeypatch):
    monkeypatch.setattr(
        gpu_sass.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=SASS, stderr="")
    )
    counts = gpu_sass.sass_counts("cuobjdump", "x.cubin")
    c = gpu_sass.classes(counts["bfly_u32"])
    assert c["all"] == 8  # the BRA trap loop after EXIT and the NOP padding are not instructions of the kernel
    assert (c["imul"], c["fp64"], c["alu"], c["mem"], c["ctrl"]) == (2, 2, 1, 2, 1)


@pytest.mark.skipif(not shutil.which("cuobjdump") or not shutil.which("nvcc"), reason="needs nvcc and cuobjdump")
def test_the_variants_compile_and_count(capsys):
    assert gpu_sass.main([]) == 0
    out = capsys.readouterr().out
    assert "| butterfly | u32 |" in out and "| conversion term | u64 |" in out
