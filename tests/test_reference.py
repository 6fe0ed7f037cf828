"""The reference dissection (issue 36): scripts/reference_kernels.py's parsing of Nsight Compute's output, and the
shipped files' facts that lesson 17 states in words (cuBLAS TF32's cluster, multicast, TMA stores, persistent grid,
register operand path; step 17 without them), checked against the files they come from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gemm_steps.course import reference

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import reference_kernels  # noqa: E402

DETAILS = '''==PROF== Connected to process 565
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","565","python3.12","127.0.0.1","sm90_xmma_gemm_tf32","1","7","(384, 1, 1)","(66, 2, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum","Mbyte","348.98"
"0","565","python3.12","127.0.0.1","sm90_xmma_gemm_tf32","1","7","(384, 1, 1)","(66, 2, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","us","439.71"
"0","565","python3.12","127.0.0.1","sm90_xmma_gemm_tf32","1","7","(384, 1, 1)","(66, 2, 1)","0","9.0","Command line profiler metrics","sm__cycles_elapsed.max","cycle","585,905"
"0","565","python3.12","127.0.0.1","sm90_xmma_gemm_tf32","1","7","(384, 1, 1)","(66, 2, 1)","0","9.0","Launch Statistics","Cluster Size","","2"
"0","565","python3.12","127.0.0.1","sm90_xmma_gemm_tf32","1","7","(384, 1, 1)","(66, 2, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","168"
'''
SASS = '''"Kernel Name","sm90_xmma_gemm_tf32",
"Address","Source","Instructions Executed"
"0x1","      HGMMA.64x256x8.F32.TF32 R24, R164, gdesc[UR8], R24, gsb0 ;","16"
"0x2","      @P0 UTMALDG.4D.MULTICAST [UR8], [UR14], UR5, desc[UR16] ;","4"
"0x3","      UTMALDG.4D [UR8], [UR14], desc[UR16] ;","4"
"0x4","      UCGABAR_ARV ;","1"
"0x5","      @!UP1 UTMASTG.4D [UR4], [UR6] ;","2"
"0x6","      LDSM.16.M88.4 R4, [R2] ;","8"
"0x7","      LDS R4, [R2] ;","8"
'''


def test_counters_are_read_in_their_base_units():
    found = reference_kernels.launch_and_counters(DETAILS, "cublas_tf32")
    assert found["counters"]["dram_bytes"] == pytest.approx(348.98e6)  # "Mbyte": the first H200 run read 348.98
    assert found["counters"]["duration_ns"] == pytest.approx(439_710)
    assert found["counters"]["cycles"] == 585_905
    assert found["launch"]["Cluster Size"] == 2 and found["launch"]["Registers Per Thread [register/thread]"] == 168
    assert found["kernel"] == "sm90_xmma_gemm_tf32"


def test_sass_opcodes_families_and_operand_source():
    sass = reference_kernels.sass_opcodes(SASS, "cublas_tf32")
    assert sass["hgmma"] == {"HGMMA.64x256x8.F32.TF32 (A from registers)": 1}
    assert sass["named"]["UTMALDG"] == 2 and sass["multicast_loads"] == 1  # a predicate does not hide the opcode
    assert sass["named"]["UCGABAR"] == 1 and sass["named"]["UTMASTG"] == 1
    assert sass["named"]["LDS"] == 1 and sass["named"]["LDSM"] == 1  # LDSM is not counted as LDS
    assert sass["executed"]["HGMMA"] == 16 and sass["executed"]["UTMALDG"] == 8


def test_an_operand_from_shared_memory_is_told_apart():
    text = SASS.replace("R24, R164, gdesc[UR8]", "R24, gdesc[UR4], gdesc[UR8]")
    assert reference_kernels.sass_opcodes(text, "x")["hgmma"] == {
        "HGMMA.64x256x8.F32.TF32 (A from shared memory)": 1}


references = reference.load_all()
needs_files = pytest.mark.skipif(not references, reason="no results/reference-*.json (a checkout's results)")


@needs_files
@pytest.mark.parametrize("ref", references, ids=[r.gpu for r in references])
def test_what_lesson_17_says_cublas_runs(ref):
    """cuBLAS TF32 at 4096³ and 8192³: persistent (one block an SM), clusters of two, multicast loads, TMA stores,
    384 threads with setmaxnreg, HGMMA 64×256 with A from registers; step 17 has the same instruction and operand
    path and none of the cluster, multicast, persistence or TMA stores."""
    sms = ref.document["environment"]["sm_count"]
    for size in (4096, 8192):
        cublas, step17 = ref.kernel("cublas_tf32", size), ref.kernel("warp_specialized", size)
        assert cublas.grid == sms and cublas.cluster == 2 and cublas.threads == 384
        assert cublas.multicast_loads > 0 and cublas.tma_stores > 0 and cublas.setmaxnreg == 2
        assert cublas.tensor_core == "HGMMA.64x256x8.F32.TF32 (A from registers)" == step17.tensor_core
        assert step17.cluster == 1 and step17.multicast_loads == 0 and step17.tma_stores == 0 and step17.grid > sms


@needs_files
@pytest.mark.parametrize("ref", references, ids=[r.gpu for r in references])
def test_what_lesson_17_says_about_the_clock(ref):
    """At 8192³, under the same board power, step 17 ran at a lower clock than cuBLAS TF32 and executed more warp
    instructions and moved more L2 bytes per FLOP; for each B element it loads from shared memory it executes a
    compare and an add (its TF32 rounding) that cuBLAS's kernel does not, and hundreds of times more 64-bit uniform
    arithmetic."""
    s17, cublas = ref.kernel("warp_specialized", 8192), ref.kernel("cublas_tf32", 8192)
    assert s17.sm_clock_mhz < cublas.sm_clock_mhz and abs(s17.power_w - cublas.power_w) < 0.02 * cublas.power_w
    assert s17.warp_instructions_per_flop > cublas.warp_instructions_per_flop
    assert s17.l2_bytes_per_flop > cublas.l2_bytes_per_flop
    executed = {t: dict(ref.executed(t, 8192, top=10_000)) for t in ("warp_specialized", "cublas_tf32")}
    assert executed["warp_specialized"]["FSETP.GEU.AND"] == executed["warp_specialized"]["LDS"]
    assert executed["warp_specialized"]["IMAD.IADD.U32"] == executed["warp_specialized"]["LDS"]
    assert "FSETP.GEU.AND" not in executed["cublas_tf32"]
    for wide in ("UIADD3.X", "USHF.R.U64"):  # 64-bit uniform arithmetic: "hundreds of times more" in the lesson
        assert executed["warp_specialized"][wide] > 100 * executed["cublas_tf32"].get(wide, 0)


@needs_files
def test_the_tables_render():
    ref = references[0]
    names = ["cublas_tf32", "warp_specialized"]
    assert "cuBLAS TF32" in reference.launch_table(ref, 8192, names)
    rows = reference.energy_table(ref, 8192, names).rows
    assert rows[0]["energy / FLOP vs cuBLAS TF32"] == 1.0 and rows[1]["energy / FLOP vs cuBLAS TF32"] > 1.0
    assert reference.instruction_mix_table(ref, 8192, names).rows


@needs_files
@pytest.mark.parametrize("ref", references, ids=[r.gpu for r in references])
def test_what_lesson_19_says_about_step_19s_clock(ref):
    """Lesson 19: under the same power limit step 19 ran at a higher SM clock than step 17 and cuBLAS TF32 at 8192³,
    while executing more warp instructions per FLOP than either."""
    s19, s17, cublas = (ref.kernel(t, 8192) for t in ("pingpong", "warp_specialized", "cublas_tf32"))
    assert s19.sm_clock_mhz > max(s17.sm_clock_mhz, cublas.sm_clock_mhz)
    assert s19.warp_instructions_per_flop > max(s17.warp_instructions_per_flop, cublas.warp_instructions_per_flop)
