"""Step 17's partial-tile build: its kernel over every tile of C in one launch, the copy engine's out-of-bounds zeros
standing for the border (``PARTIAL_TILES``, ``toolkit/tma_tiles.TmaTiles``' ``partial``; timed by experiments/tma_edges.py,
first as a copy of step 17's kernel, experiments/kernels/warp_specialized_tma_edges.py at 6108cad).

On the simulator (the copy engine's twin fills zeros outside the matrix and completes the whole box's bytes; one
consumer warpgroup on step 17's 32 × 64 simulator tile): on ragged shapes — M and N not multiples of the tile, K a
multiple of 4 but not of 32 (one, two, four and ten k-tiles, the last partial; ten wrap the ring of four stages),
shapes smaller than one tile — and on full tiles, the product equals float64 on the inputs the tensor core reads (A
truncated to TF32, B rounded) to float32 rounding and meets the TF32 tolerance; ONE launch made it (the fast kernel,
on a grid of every tile); nothing around C was written (C sits in a NaN buffer with a margin on either side); on full
tiles the bits are step 17's. Shapes the copy engine cannot read as they are (N or K not a multiple of 4, A or B
not 16-byte aligned) run the THREAD_COPIES build — the producer's threads copy each stage with 4-byte cp.async — on A
and B as they are: no copy, one launch, right; on full tiles its bits are step 17's. The fast kernel's PTX at the GPU's tiles
(compiled on a CPU): step 17's wgmma count, no local memory, and ptxas keeps step 17's register hand-off (≤ 168
registers at entry, no spills, no serialised wgmma). The bench's summary on made-up records.

On a GPU of compute capability 9.0 the same tests run the GPU's tiles (256 × 128, two consumer warpgroups) on shapes
ragged against them: ``python -m pytest tests/test_tma_edges.py`` there checks the build before it is timed.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from numba import cuda

import gemm_steps
from gemm_steps.harness.verify import relative_error, tf32_tolerance
from gemm_steps.steps import warp_specialized
from gemm_steps.toolkit.kernel_tools import ceil_div
from gemm_steps.toolkit.tuned import default_config
from helpers import (REPO, nan_c_with_margin, only_c_written, random_matrices, run_in_nan_margin, spy_launches,
                     spy_row_copies, tf32_product)

pytestmark = pytest.mark.skipif(
    not (gemm_steps.SIMULATOR or tuple(cuda.get_current_device().compute_capability) == (9, 0)),
    reason="wgmma and the copy engine need compute capability 9.0")

GPU_CONFIG = default_config(warp_specialized.SEARCH_SPACE)
CONFIG = warp_specialized.SIMULATOR_CONFIG if gemm_steps.SIMULATOR else GPU_CONFIG


def _grid(kernels, m: int, n: int, k: int) -> tuple[int, int, int]:
    """The partial build's grid for M×N×K: every tile, and the slices of K its split-K policy gives."""
    cols, rows = ceil_div(n, CONFIG.BLOCK_N), ceil_div(m, CONFIG.BLOCK_M)
    return cols, rows, kernels.slice_count(m, n, k, rows * cols)


def _spied_launch(monkeypatch, kernels, a_dev, b_dev) -> tuple[list, list, np.ndarray]:
    """``kernels`` launched on device A and B into a NaN-poisoned C inside a NaN margin: (the launches it configured,
    the matrices it copied into readable rows first, C — checked that nothing around it was written)."""
    m, n = a_dev.shape[0], b_dev.shape[1]
    launched = spy_launches(monkeypatch, kernels)
    copies = spy_row_copies(monkeypatch)
    buffer, c = nan_c_with_margin(m, n)
    kernels.launch(a_dev, b_dev, c)
    return launched, copies, only_c_written(buffer, m, n)


def _check_product(got: np.ndarray, a: np.ndarray, b: np.ndarray, copy_engine: bool = True) -> None:
    """C is the float64 product of the TF32 inputs as the kernel reads them: loaded by the copy engine through
    TFLOAT32 maps (``TF32_COPIES``), A and B rounded to nearest, ties to even; loaded by the producer's threads
    (``copy_engine=False``: the THREAD_COPIES build, float32 in shared memory), A truncated by the tensor core and B
    rounded by the consumers (ties away)."""
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    assert np.isfinite(got).all(), f"{int((~np.isfinite(got)).sum())} elements of C not written (or not finite)"
    fed = tf32_product(a, b, copy_engine and CONFIG.TF32_COPIES)
    assert np.abs(got - fed).max() <= 1e-5 * np.abs(fed).max(), f"{m}×{n}×{k}: not the TF32 inputs' product"
    assert relative_error(got, a, b) <= tf32_tolerance(k)


#: (M, N, K) on the simulator's 32 × 64 tile, and on the GPU's 256 × 128 tile.
#: * ragged M and N, one partial k-tile (K = 20): 2 × 2 tiles, three of them partial;
#: * two k-tiles, the second with 4 of 32 columns (K = 36);
#: * four k-tiles (K = 100), N below one tile-column (one tile-column, partial), M just past one tile-row;
#: * ten k-tiles (K = 292; the ring of 4 stages wraps twice, both phases of every barrier; the consumers' last pass
#:   of two k-tiles full), the last k-tile 4 columns, one partial tile;
#: * smaller than a tile in every dimension (5 × 12 × 8): one block, a box mostly zeros;
#: * a full-tile shape whose B box reads past N at its last tile-column (B_STRIDE = BLOCK_N + 8): zeros there too.
RAGGED = [pytest.param((45, 68, 20), (300, 200, 20), id="2x2_tiles-K20"),
          pytest.param((40, 100, 36), (500, 300, 36), id="2x2_tiles-K36"),
          pytest.param((33, 60, 100), (260, 100, 100), id="2x1_tiles-K100"),
          pytest.param((20, 40, 292), (100, 100, 292), id="1_tile-K292-ring_wraps"),
          pytest.param((5, 12, 8), (5, 12, 8), id="tiny-5x12x8")]


@pytest.mark.parametrize("sim_shape, gpu_shape", RAGGED)
def test_a_ragged_shape_takes_one_launch_and_writes_only_c(sim_shape, gpu_shape, monkeypatch):
    """The fast kernel alone, on a grid of ⌈N / BLOCK_N⌉ × ⌈M / BLOCK_M⌉ tiles (× the slices of K split-K's policy
    gives: one at these K; tests/test_split_k.py splits partial tiles): the product right (float64 on the TF32
    inputs, and the TF32 tolerance), every element of C written, nothing around it."""
    m, n, k = sim_shape if gemm_steps.SIMULATOR else gpu_shape
    assert k % 4 == 0 and n % 4 == 0 and (m % CONFIG.BLOCK_M or n % CONFIG.BLOCK_N) and k % CONFIG.BLOCK_K
    a, b = random_matrices(np.random.default_rng(m * n + k), m, n, k)
    kernels = warp_specialized.build(CONFIG)
    launched = spy_launches(monkeypatch, kernels)
    got = run_in_nan_margin(kernels, a, b)
    assert launched == [("fast", _grid(kernels.partial, m, n, k))], launched
    _check_product(got, a, b)


def test_full_tiles_take_one_launch_and_give_step_17s_bits(monkeypatch):
    """The partial-tile build on 2 × 2 full tiles over 3 k-tiles (K a multiple of 32): one launch, nothing around C
    written, and the same bits as step 17's full-tile build, which step 17 runs such shapes on (the same main loop
    and the same boxes; only the store's guard, always true here, differs). The second tile-column's B box reads
    B_STRIDE − BLOCK_N = 8 columns past N: zeros, as in the full-tile build."""
    m, n, k = 2 * CONFIG.BLOCK_M, 2 * CONFIG.BLOCK_N, 3 * CONFIG.BLOCK_K
    a, b = random_matrices(np.random.default_rng(17), m, n, k)
    kernels = warp_specialized.build(CONFIG).partial
    launched = spy_launches(monkeypatch, kernels)
    got = run_in_nan_margin(kernels, a, b)
    assert launched == [("fast", (2, 2, 1))], launched
    _check_product(got, a, b)
    step_17 = cuda.to_device(np.full((m, n), np.nan, np.float32))
    warp_specialized.build(CONFIG).launch(cuda.to_device(a), cuda.to_device(b), step_17)
    differ = got.view(np.uint32) != step_17.copy_to_host().view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} elements differ from step 17's"


#: Shapes the copy engine cannot read as they are: N or K not a multiple of 4 (a row pitch not a multiple of 16
#: bytes), A or B one float off 16-byte alignment, both at once, and K long enough that the ring wraps (131: five
#: k-tiles, the last of 3 columns). Step 17 runs its THREAD_COPIES build on A and B as they are where its policy says
#: so (since 2026-11-29 nowhere by default: the tests below raise THREAD_COPIES_BELOW): the producer's threads copy
#: each stage with 4-byte cp.async.
UNREADABLE = [pytest.param((20, 30, 20), "", (False, True), id="N30"),
              pytest.param((20, 24, 18), "", (True, False), id="K18"),
              pytest.param((20, 24, 20), "A", (True, False), id="A_misaligned"),
              pytest.param((20, 24, 20), "B", (False, True), id="B_misaligned"),
              pytest.param((45, 67, 37), "", (True, True), id="K37_N67"),
              pytest.param((33, 65, 131), "", (True, True), id="K131_ring_wraps"),
              pytest.param((5, 3, 1), "", (True, True), id="tiny-5x3x1")]


@pytest.mark.parametrize("shape, misaligned, copies", UNREADABLE)
def test_a_shape_the_copy_engine_cannot_read_runs_on_the_thread_copies_build(shape, misaligned, copies,
                                                                             monkeypatch):
    """Where the policy sends a product to the threads (every product, with THREAD_COPIES_BELOW raised): no copy of
    A or B, one launch of the THREAD_COPIES build over every tile (× the slices of K its policy gives), the product
    right and nothing around C written."""
    monkeypatch.setattr(warp_specialized, "THREAD_COPIES_BELOW", float("inf"))
    m, n, k = shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    kernels = warp_specialized.build(CONFIG)

    def on_device(x, off):
        if not off:
            return cuda.to_device(x)
        buffer = cuda.to_device(np.concatenate([np.zeros(1, np.float32), x.ravel()]))
        return buffer[1:].reshape(x.shape)

    a_dev, b_dev = on_device(a, misaligned == "A"), on_device(b, misaligned == "B")
    assert kernels.copies(a_dev, b_dev) == copies
    launched, copied, result = _spied_launch(monkeypatch, kernels, a_dev, b_dev)
    assert copied == [], copied
    assert launched == [("thread copies: fast", _grid(kernels.thread_copies, m, n, k))], launched
    _check_product(result, a, b, copy_engine=False)


@pytest.mark.parametrize("shape, copied", [((20, 30, 20), "B"), ((20, 24, 18), "A"), ((45, 67, 37), "AB")])
def test_where_the_policy_says_copy_the_unreadable_matrix_is_copied_then_runs_on_the_partial_build(shape, copied,
                                                                                                  monkeypatch):
    """With no product below the threads' threshold (THREAD_COPIES_BELOW = 0, shipped since 2026-11-29), step 17
    takes the other way: one copy of each matrix the copy engine cannot read (rows widened to a multiple of 4
    floats), then one launch of the partial build over every tile; the product right and nothing around C written."""
    monkeypatch.setattr(warp_specialized, "B_BY_ROWS_MAX_M", 0)  # B copied too (B_ROWS_MOD_4: the tests below)
    m, n, k = shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    kernels = warp_specialized.build(CONFIG)
    launched, copies, result = _spied_launch(monkeypatch, kernels, cuda.to_device(a), cuda.to_device(b))
    assert copies == list(copied), copies
    assert launched == [("fast", _grid(kernels.partial, m, n, k))], launched
    _check_product(result, a, b)


#: Shapes whose B the copy engine cannot read as one map (N not a multiple of 4: every residue (r·N) % 4 occurs),
#: with A readable or copied, K a few k-tiles or one partial, one with more rows than the policy reads so.
B_BY_ROWS = [pytest.param((40, 70, 45), "A", id="N70_K45"), pytest.param((33, 131, 100), "", id="N131"),
             pytest.param((64, 65, 37), "A", id="N65_K37"), pytest.param((20, 7, 9), "A", id="N7_K9"),
             pytest.param((20, 129, 4), "", id="K4")]


@pytest.mark.parametrize("shape, a_copied", B_BY_ROWS)
def test_b_read_by_its_rows_mod_4_gives_the_copy_paths_bits(shape, a_copied, monkeypatch):
    """Where N is not a multiple of 4 and M is at most B_BY_ROWS_MAX_M: no copy of B, one launch of the B_ROWS_MOD_4
    build (four maps, one a residue of B's rows mod 4), the same bits as the copy path and nothing around C written."""
    m, n, k = shape
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    kernels = warp_specialized.build(CONFIG)
    launched, copies, by_rows = _spied_launch(monkeypatch, kernels, cuda.to_device(a), cuda.to_device(b))
    assert copies == list(a_copied), copies
    assert launched == [("B by rows mod 4: fast", _grid(kernels.b_rows, m, n, k))], launched
    _check_product(by_rows, a, b)
    copied = run_in_nan_margin(warp_specialized.build(CONFIG, b_rows_when=None), a, b)
    assert np.array_equal(by_rows.view(np.uint32), copied.view(np.uint32)), "not the copy path's bits"


def test_b_is_read_by_rows_only_where_the_run_saw_it_pay():
    """experiments/b_rows_mod_4.py (H200): the rows build 1.03–2.02× the copy path at M = 64–1000, 0.89–1.02× at
    3001 and 4096: M ≤ 1024 reads B by rows, more rows copy it."""
    assert warp_specialized.reads_b_by_rows(1000, 3001, 2000) and warp_specialized.reads_b_by_rows(64, 6001, 6000)
    assert not warp_specialized.reads_b_by_rows(3001, 2999, 1531)
    assert warp_specialized.build(CONFIG).b_rows.config.B_ROWS_MOD_4


@pytest.mark.skipif(not gemm_steps.SIMULATOR, reason="the simulator's twin (on a GPU the copy stops the launch)")
def test_a_box_that_does_not_start_on_16_bytes_is_refused():
    """The copy engine's rule (an H200 stopped a box at column 2 of a map, ran one at column 4): the twin refuses it."""
    from gemm_steps.toolkit import mbarrier_ops

    with pytest.raises(ValueError, match="16 bytes"):
        mbarrier_ops.copy_tile(np.zeros(64, np.float32), 0, mbarrier_ops.tensor_map_2d(
            cuda.to_device(np.zeros((8, 8), np.float32)), 2, 4), 0, 2, np.zeros(1, np.uint64), 0)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(69, 1001, 700), (130, 2003, 1555), (1000, 3001, 300), (256, 130, 64)])
def test_on_the_gpu_b_read_by_rows_gives_the_copy_paths_bits(m, n, k):
    """On a GPU, step 17's tiles: the B_ROWS_MOD_4 build against the copy path, bit for bit, nothing around C
    written (N ≡ 1, 3, 1, 2 mod 4; one product split along K)."""
    a, b = random_matrices(np.random.default_rng(m + n + k), m, n, k)
    config = warp_specialized.SEARCH_SPACE[0]
    by_rows = run_in_nan_margin(warp_specialized.build(config), a, b)
    _check_product(by_rows, a, b)
    copied = run_in_nan_margin(warp_specialized.build(config, b_rows_when=None), a, b)
    assert np.array_equal(by_rows.view(np.uint32), copied.view(np.uint32)), "not the copy path's bits"


@pytest.mark.parametrize("step, run", [("warp_specialized", "experiment-thread-copies-nvidia-h200-8.json")])
def test_the_threads_take_a_product_only_where_they_beat_the_copy(step, run):
    """The policy against experiments/thread_copies.py's last run of each step (H200, the readable copy four floats a
    thread): at every shape where the step as timed (its old threshold, 100) ran the threads and the copy was timed
    beside it, the policy picks the threads exactly where they were faster — with the copy of 2026-11-28 (~1.6×
    slower) that was 12941×112×7341 and 103×1933×12403, now none. Fails on THREAD_COPIES_BELOW = 100."""
    import json

    from gemm_steps.harness.step import get_step
    from gemm_steps.toolkit.tma_tiles import flops_per_copied_byte

    module = get_step(step).module
    summary = json.loads((REPO / "experiments" / "results" / run).read_text())["summary"]
    judged = 0
    for shape, row in summary.items():
        m, n, k = map(int, shape.split("x"))
        copy_a, copy_b = k % 4 != 0, n % 4 != 0
        if not (copy_a or copy_b) or flops_per_copied_byte(m, n, k, copy_a, copy_b) >= 100 or not row["new_over_old"]:
            continue  # readable, or the step as timed copied: the two records are one path
        judged += 1
        assert module.copies_by_threads(m, n, k, copy_a, copy_b) == (row["new_over_old"] > 1.0), (shape, row)
    assert judged >= 3


def test_the_thread_copies_build_gives_step_17s_bits():
    """On 2 × 2 full tiles over 3 k-tiles, the THREAD_COPIES build launched directly (A and B readable, so the
    choice is the test's) gives step 17's bits: the same stages in shared memory, the same loop and store — only who
    copies differs."""
    m, n, k = 2 * CONFIG.BLOCK_M, 2 * CONFIG.BLOCK_N, 3 * CONFIG.BLOCK_K
    a, b = random_matrices(np.random.default_rng(5), m, n, k)
    kernels = warp_specialized.build(replace(CONFIG, TF32_COPIES=False))  # float32 maps: A truncated, as the threads'
    by_copy_engine = run_in_nan_margin(kernels, a, b)
    by_threads = run_in_nan_margin(kernels.thread_copies, a, b)
    differ = by_copy_engine.view(np.uint32) != by_threads.view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} elements differ from step 17's"


def test_the_partial_build_rule_is_the_copy_engines():
    """Whole tiles that the copy engine can read (K and N multiples of 4, A and B 16-byte aligned) and C aligned for
    the fast kernel's rule: the fast kernel. Anything else: the partial build, copying A where K % 4 or A's address
    is off, B where N % 4 or B's address is off (C takes scalar stores there)."""
    kernels = warp_specialized.build(CONFIG)
    zeros = lambda rows, cols: cuda.to_device(np.zeros((rows, cols), np.float32))  # noqa: E731
    m, n, k = CONFIG.BLOCK_M, CONFIG.BLOCK_N, CONFIG.BLOCK_K
    assert not kernels.partial_applies(zeros(m, k), zeros(k, n), zeros(m, n))
    c_buffer = cuda.to_device(np.zeros(m * n + 1, np.float32))
    assert kernels.partial_applies(zeros(m, k), zeros(k, n), c_buffer[1:].reshape(m, n))  # C misaligned
    assert kernels.partial_applies(zeros(5, 8), zeros(8, 12), zeros(5, 12))
    assert kernels.copies(zeros(5, 8), zeros(8, 12)) == (False, False)
    assert kernels.copies(zeros(5, 6), zeros(6, 12)) == (True, False)
    assert kernels.copies(zeros(5, 8), zeros(8, 10)) == (False, True)
    b_buffer = cuda.to_device(np.zeros(8 * 12 + 1, np.float32))
    assert kernels.copies(zeros(5, 8), b_buffer[1:].reshape(8, 12)) == (False, True)


PTX_JOB = "kernels:experiments.tma_edges:ptx_kernels"
LABEL = "warp_specialized_partial_fast"


@pytest.mark.ptx(PTX_JOB)
def test_the_fast_kernel_keeps_step_17s_main_loop_and_registers(ptx):
    """At the GPU's tiles (256 × 128, two consumer warpgroups), compiled for sm_90a on a CPU: step 17's wgmma count
    (one per k-step, two k-tiles a pass) and waits, its TF32 roundings (two instructions each, no ``cvt.rna``), its
    tensor copies and one block-wide barrier;
    one scalar store an accumulator (guarded; into C, or split-K's workspace); no local memory; ptxas (nvJitLink, LTO) keeps step 17's hand-off:
    ≤ 168 registers at entry, no spills, no wgmma serialised (step 17's PTXAS_EXPECT)."""
    stats = ptx.stats(PTX_JOB, LABEL)
    assert "error" not in stats, stats.get("error")
    expect = warp_specialized.PTX_EXPECT["warp_specialized_fast"]
    for name in ("wgmma.mma_async.tf32", "wgmma.wait_group", "cvt.rna.tf32.f32", "setp.num.f32", "setmaxnreg",
                 "bar.sync", "fence.proxy.tensormap.acquire.sys"):
        assert stats[name] == expect[name], (name, stats[name], expect[name])
    assert stats["cp.async.bulk.tensor"] >= 2 and stats["mbarrier.arrive.expect_tx"] >= 1
    assert stats["local"] == 0 and stats["fma.rn.f32"] == 0 and stats["wgmma.written_after_fence"] == 0
    # one guarded scalar store an accumulator, into C or split-K's workspace (the array picked once: a generic st.f32,
    # NVVM no longer sees a global pointer; the first split-K kernel's branch between two st.global cost 5.5 %)
    assert stats["st.global.f32"] + stats["opcodes"].get("st.f32", 0) == GPU_CONFIG.ACCUMULATORS
    info = stats.get("ptxas") or {}
    assert info.get("wgmma_serialized") is not None, f"ptxas did not answer ({info})"
    assert info["spill_bytes"] == 0 and info["wgmma_serialized"] == 0 and info["registers"] <= 168, info


COPY_JOB = "kernels:ptx_jobs:readable_copy_kernels"


@pytest.mark.ptx(COPY_JOB)
def test_the_readable_copy_divides_in_32_bits_and_stores_128_bits(ptx):
    """The readable copy (``tma_tiles.copy_rows_kernel``), compiled on a CPU: one ``div.u32`` and no 64-bit division
    or remainder (9e593d4's grid-stride ``range`` loop divided a 64-bit index per float, and the copy moved ~1.6× slower
    on an H200: experiments/readable_copy_speed.py), one 128-bit store of four floats a thread, no local memory."""
    stats = ptx.stats(COPY_JOB, "copy")
    assert "error" not in stats, stats.get("error")
    opcodes = stats["opcodes"]
    wide = {op: count for op, count in opcodes.items() if op.startswith(("div.", "rem.")) and op.endswith("64")}
    assert not wide, f"64-bit divisions in the copy: {wide}"
    assert opcodes.get("div.u32") == 1, {op: c for op, c in opcodes.items() if op.startswith(("div", "rem"))}
    assert stats["st.global.v4.f32"] + opcodes.get("st.v4.f32", 0) == 1
    assert stats["st.global.f32"] + opcodes.get("st.f32", 0) == 0 and stats["local"] == 0


def test_the_bench_summary_divides_the_variant_by_step_17_and_cublas_tf32():
    """experiments/tma_edges.py's stored ratios, on made-up records (None where a record is missing or failed), and
    its shapes: the ragged ones are one launch for the variant (K % 4 = N % 4 = 0) and all edge kernel for step 17
    (K % 32 ≠ 0); the control is full tiles for both."""
    from experiments import tma_edges

    def rec(step, tflops, shape=(3001, 3000, 1532)):
        return {"step": step, "M": shape[0], "N": shape[1], "K": shape[2], **({"tflops": tflops} if tflops else {})}

    full = (4096, 4096, 4096)
    records = [rec("warp_specialized", 100.0), rec(tma_edges.VARIANT, 300.0), rec("cublas_tf32", 400.0),
               rec("warp_specialized", 360.0, full), rec(tma_edges.VARIANT, None, full)]
    summary = tma_edges.summary({"records": records})
    row = summary["3001x3000x1532"]
    assert row["tflops"]["cublas"] is None and row["tflops"][tma_edges.VARIANT] == 300.0
    assert row["variant_over_step_17"] == pytest.approx(3.0)
    assert row["variant_over_cublas_tf32"] == pytest.approx(0.75)
    assert row["step_17_over_cublas_tf32"] == pytest.approx(0.25)
    assert row["step_17_launches"] == ["edge"]
    control = summary["4096x4096x4096"]
    assert control["variant_over_step_17"] is None and control["step_17_over_cublas_tf32"] is None
    assert control["step_17_launches"] == ["fast"]
    assert tma_edges.step_17_launches(1000, 1100, 512) == ["fast", "edge"]
    *ragged, control_shape = tma_edges.SIZES
    assert control_shape == full and len(ragged) == 7
    for m, n, k in ragged:  # the variant's one launch; step 17: the border on the edge kernel, or all of it
        assert k % 4 == 0 and n % 4 == 0 and (m % 256 or n % 128 or k % 32)
        assert tma_edges.step_17_launches(m, n, k) == (["edge"] if k % 32 else ["fast", "edge"]), (m, n, k)
    gpu = GPU_CONFIG
    assert (tma_edges.BLOCK_M, tma_edges.BLOCK_N, tma_edges.BLOCK_K) == (gpu.BLOCK_M, gpu.BLOCK_N, gpu.BLOCK_K)


def test_the_thread_copies_summary_divides_the_builds():
    """experiments/thread_copies.py's stored ratios, on made-up records (None where a record is missing), and its
    shapes: the held-out set's odd-pitch ones and 4096³, the control."""
    from experiments import thread_copies as tc

    def rec(step, tflops, shape=(12941, 112, 7341)):
        return {"step": step, "M": shape[0], "N": shape[1], "K": shape[2], **({"tflops": tflops} if tflops else {})}

    records = [rec(tc.NEW, 60.0), rec(tc.OLD, 24.0), rec(tc.PADDED, 30.0), rec("cublas_tf32", 80.0),
               rec(tc.FORCED, 100.0, (4096, 4096, 4096)), rec(tc.NEW, 400.0, (4096, 4096, 4096))]
    summary = tc.summary({"records": records})
    row = summary["12941x112x7341"]
    assert row["new_over_old"] == pytest.approx(2.5) and row["new_over_padded"] == pytest.approx(2.0)
    assert row["new_over_cublas_tf32"] == pytest.approx(0.75) and row["old_over_cublas_tf32"] == pytest.approx(0.3)
    assert row["forced_over_step_17"] is None
    assert summary["4096x4096x4096"]["forced_over_step_17"] == pytest.approx(0.25)
    assert summary["4096x4096x4096"]["new_over_old"] is None
    assert tc.SIZES[-1] == (4096, 4096, 4096)
    assert all(k % 4 or n % 4 for m, n, k in tc.SIZES[:-1])  # every other shape has a matrix to copy


REDUCE_JOB = "kernels:ptx_jobs:split_k_reduce_kernels"


@pytest.mark.ptx(REDUCE_JOB)
def test_the_kernels_launched_early_wait_for_the_kernel_before(ptx):
    """A launch plan launches a kernel after the first as a programmatic dependent launch only if the kernel waits
    for the one before (``wait_for_previous_grid``: ``griddepcontrol.wait``) — steps 17 and 18's kernels (after a
    readable copy) and their split-K reductions (after the kernel) do, before any global access; the readable copy
    does too, after its copying (a second copy, B's after A's, starts beside the first, and its end waits for the
    first's), and lets the kernel after it start at once (``let_next_grid_start``: ``griddepcontrol.launch_dependents``).
    Compiled on a CPU, the reductions hold exactly one ``griddepcontrol.wait``, the copy one of each, the launch's
    first."""
    from gemm_steps.steps import warp_specialized_3xtf32
    from gemm_steps.toolkit.launch_plans import waits_for_previous_grid
    from gemm_steps.toolkit.tma_tiles import copy_rows_kernel

    built = warp_specialized.build(CONFIG)
    for kernels in (built, built.partial, warp_specialized_3xtf32.build(warp_specialized_3xtf32.SIMULATOR_CONFIG
                                                                         if gemm_steps.SIMULATOR else
                                                                         default_config(
                                                                             warp_specialized_3xtf32.SEARCH_SPACE))):
        assert waits_for_previous_grid(kernels.kernel("fast")), kernels.name
        assert waits_for_previous_grid(kernels.reduce), kernels.name
    assert waits_for_previous_grid(copy_rows_kernel)
    for label in ("17", "18", "copy"):
        stats = ptx.stats(REDUCE_JOB, label)
        assert "error" not in stats, stats.get("error")
        grid = {op: c for op, c in stats["opcodes"].items() if op.startswith("grid")}
        assert grid.get("griddepcontrol.wait") == 1, grid
        assert grid.get("griddepcontrol.launch_dependents") == (1 if label == "copy" else None), grid
    body = ast.parse(textwrap.dedent(inspect.getsource(getattr(copy_rows_kernel, "py_func", copy_rows_kernel)))).body[0].body
    calls = [ast.unparse(statement.value) for statement in (body[1], body[-1]) if isinstance(statement, ast.Expr)]
    assert calls == ["let_next_grid_start()", "wait_for_previous_grid()"], calls  # first (after the docstring), last


@pytest.mark.parametrize("shape, widened", [((45, 68, 36), "A"), ((20, 30, 42), "AB"), ((33, 60, 100), "A")])
def test_a_copied_onto_128_byte_rows_gives_the_same_bits(shape, widened, monkeypatch):
    """Where K is a multiple of 4 but not of 32 and the build's ``aligned_a_when`` says so, A is copied first into rows
    of a multiple of 32 floats (128-byte lines, ``tma_tiles.aligned_a_pays``) — also where it is copied anyway (N or
    K not a multiple of 4: B copied too) — and the product has the same bits as without the copy: the zeros past K
    in the widened rows are those the copy engine fills in past A's end. Where K is a multiple of 32 nothing is
    copied: the rows are on lines already."""
    from gemm_steps.toolkit.tma_tiles import LINE_FLOATS, copy_rows_kernel

    monkeypatch.setattr(warp_specialized, "B_BY_ROWS_MAX_M", 0)  # an unreadable B copied, not read by rows mod 4
    m, n, k = shape
    a, b = random_matrices(np.random.default_rng(m * k + n), m, n, k)
    plain = run_in_nan_margin(warp_specialized.build(CONFIG), a, b)
    kernels = warp_specialized.build(CONFIG)
    kernels.aligned_a_when = lambda m, n, k: True
    widths = []
    original = kernels.launch_or_record

    def spy(function, signature, blocks, threads, stream, arguments, launches=None):
        if function is copy_rows_kernel:
            widths.append(("AB"[int(arguments[6])], int(arguments[7])))
        return original(function, signature, blocks, threads, stream, arguments, launches)

    monkeypatch.setattr(kernels, "launch_or_record", spy)
    got = run_in_nan_margin(kernels, a, b)
    assert [which for which, _ in widths] == list(widened), widths
    assert widths[0][1] == ceil_div(k, LINE_FLOATS) * LINE_FLOATS, widths
    differ = got.view(np.uint32) != plain.view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} elements differ from the build that reads A as it is"
    _check_product(got, a, b)
    widths.clear()
    run_in_nan_margin(kernels, *random_matrices(np.random.default_rng(1), m, n, 64))
    assert [which for which, _ in widths] == (["B"] if n % 4 else []), widths  # B only where unreadable


def test_a_is_aligned_only_by_the_tf32_steps_and_where_the_run_saw_it_pay():
    """``aligned_a_pays`` against experiments/aligned_rows.py's H200 run: at every shape where it copied (K a multiple
    of 4, not of 32) and steps 17 and 21 ran more than 3 % faster for it, the rule copies; where they ran slower, it
    does not (within ±3 %: either). Steps 18 and 22, which gained nothing, do not ask."""
    import json

    from gemm_steps.steps import warp_specialized_3xtf32, warp_specialized_3xtf32_stream_k, warp_specialized_stream_k
    from gemm_steps.toolkit.tma_tiles import aligned_a_pays

    run = json.loads((REPO / "experiments" / "results" / "experiment-aligned-rows-nvidia-h200.json").read_text())
    judged = 0
    for shape, row in run["summary"].items():
        m, n, k = (int(x) for x in shape.split("x"))
        if k % 4 or k % 32 == 0:
            continue
        for step in ("warp_specialized", "warp_specialized_stream_k"):
            gain = row["aligned_over_shipped"][step]
            if abs(gain - 1) > 0.03:
                judged += 1
                assert aligned_a_pays(m, n, k) == (gain > 1), (shape, step, gain)
    assert judged >= 8, judged
    for module in (warp_specialized, warp_specialized_stream_k):
        assert module.build(module.SIMULATOR_CONFIG).aligned_a_when is aligned_a_pays
    for module in (warp_specialized_3xtf32, warp_specialized_3xtf32_stream_k):
        assert module.build(module.SIMULATOR_CONFIG).aligned_a_when is None
