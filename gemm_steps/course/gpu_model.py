"""Lesson 0b's helpers: a tiny kernel that reports where each thread runs, and the pictures of the GPU model.

* :func:`where_am_i` launches :func:`where_am_i_kernel` and returns, for every thread, its block, thread and warp
  indices — the launch syntax and the hierarchy (grid → block → warp → thread), made visible.
* :func:`hierarchy_figure`, :func:`memory_figure`, :func:`bank_figure` draw the grid/block/warp picture, the memory
  hierarchy with this GPU's measured sizes and bandwidths, and a bank conflict.
* :func:`memory_levels` reads those sizes and bandwidths from one shipped file,
  ``experiments/results/experiment-memory-bandwidth-<gpu>.json`` (``python -m experiments.memory_bandwidth``:
  bandwidths a plain Numba kernel reaches, and the sizes the driver reports, in its environment).

And the model of the tensor cores the later lessons build on: ``mma.sync`` m16n8k8's fragment layout (lesson 12
draws it, lesson 14's ``wgmma`` register operand reuses A's, the ``tensor_cores`` exercise grades it:
:func:`a_element`, :func:`b_element`, :func:`c_element`, :func:`owners`); the TF32 ceiling (:func:`tf32_peak_tflops`,
lessons 12 and 25) and what ``mma.sync`` reaches of it (:func:`mma_sync_ceiling_tflops`, from a profile); the ring of a
Hopper step's stages (:func:`ring_constants`, and :func:`ring_schedule`: which k-tile each stage holds and which parity
each waiter names) and the tensor cores' dense TF32 rate (:data:`TF32_FLOP_PER_CLOCK`, :func:`tensor_clocks`), which
lessons 16–19 build on.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..harness import results_files
from .models import BANKS
from .timings import fp32_peak_tflops

#: What every SM of a Hopper GPU (compute capability 9.0) has — NVIDIA's documented limits, not a measurement.
SM90_PER_SM = {"schedulers": 4, "fp32_lanes": 128, "registers": 65536, "max_threads": 2048, "max_blocks": 32,
               "l1_and_shared_kib": 256, "shared_max_kib": 228}


@cuda.jit
def where_am_i_kernel(block_x, block_y, thread_x, thread_y, warp):
    """Every thread writes its own coordinates into the element of the output arrays that is its own."""
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x  # this thread's column in the whole grid
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y  # and its row
    if row < block_x.shape[0] and col < block_x.shape[1]:
        block_x[row, col] = cuda.blockIdx.x
        block_y[row, col] = cuda.blockIdx.y
        thread_x[row, col] = cuda.threadIdx.x
        thread_y[row, col] = cuda.threadIdx.y
        # Threads are numbered x fastest inside a block, and each run of 32 is one warp.
        warp[row, col] = (cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x) // 32


def kernel_source() -> str:
    """The demo kernel as written (the simulator and the GPU wrap the function differently)."""
    import inspect

    function = getattr(where_am_i_kernel, "py_func", None) or where_am_i_kernel.fn
    return inspect.getsource(function)


def where_am_i(grid: tuple[int, int], block: tuple[int, int]) -> dict[str, np.ndarray]:
    """Launch ``where_am_i_kernel[grid, block]`` over a rows × columns array of threads; return what each wrote."""
    shape = (grid[1] * block[1], grid[0] * block[0])  # (rows, columns): y counts rows, x counts columns
    out = {name: np.full(shape, -1, dtype=np.int32) for name in ("block_x", "block_y", "thread_x", "thread_y", "warp")}
    where_am_i_kernel[grid, block](*out.values())
    return out


def hierarchy_figure(grid=(3, 2), block=(16, 4)):
    """The grid of blocks, one block's threads coloured by warp (what :func:`where_am_i` reports, drawn)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    seen = where_am_i(grid, block)
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
    for bx in range(grid[0]):
        for by in range(grid[1]):
            left.add_patch(Rectangle((bx, by), 0.92, 0.92, color="tab:blue" if (bx, by) != (1, 0) else "tab:orange",
                                     alpha=0.6))
            left.text(bx + 0.46, by + 0.46, f"block\n({bx}, {by})", ha="center", va="center", fontsize=9)
    left.set(xlim=(0, grid[0]), ylim=(grid[1], 0), xticks=[], yticks=[],
             title=f"a grid of {grid[0]}×{grid[1]} blocks\n(blockIdx.x →, blockIdx.y ↓)")
    rows, cols = block[1], block[0]
    one_block = seen["warp"][0:rows, cols:2 * cols]  # block (1, 0)
    right.imshow(one_block, cmap="tab10", vmin=0, vmax=9, aspect="auto")
    for r in range(rows):
        for c in range(cols):
            right.text(c, r, str(c + r * cols), ha="center", va="center", fontsize=7)
    right.set(xticks=range(0, cols, 4), yticks=range(rows), xlabel="threadIdx.x", ylabel="threadIdx.y",
              title=f"block (1, 0): {cols}×{rows} threads, numbered x fastest;\n"
                    f"each colour is one warp of 32 threads ({rows * cols // 32} warps)")
    return fig


def memory_levels() -> dict:
    """Sizes and measured bandwidths of each level, for the picture: all of one GPU's, the one the bandwidths were
    measured on (the bandwidth file's environment), or the newest benchmark's sizes where there is no such file."""
    found = results_files.newest_matching(results_files.EXPERIMENT_MEMORY_BANDWIDTH_ANY)
    measured = found[1] if found else None  # the finders return (path, document): already read
    env = (measured or {}).get("environment") or {}
    if not env.get("sm_count"):
        bench = results_files.newest_benchmark()
        env = bench[1]["environment"] if bench else {}
    return {"gpu": env.get("gpu", "?"), "sm_count": env.get("sm_count"), "l2_bytes": env.get("l2_bytes"),
            "shared_per_block_bytes": env.get("shared_memory_per_block_optin"),
            "bandwidth_tbs": measured["results"] if measured else {},
            # the clock of the GPU the bandwidths were measured on (the peaks are computed from it)
            "sm_clock_mhz": (measured or {}).get("environment", {}).get("sm_clock_max_mhz") or env.get("sm_clock_max_mhz"),
            "bandwidth_file": results_files.display_path(found[0]) if found else None}


def _memory_bytes(gpu: str) -> float:
    """The DRAM size in the GPU's name ("NVIDIA H100 80GB HBM3" → 80e9); 80 GB if the name does not say."""
    import re

    found = re.search(r"(\d+)\s*GB", gpu)
    return float(found.group(1)) * 1e9 if found else 80e9


def memory_figure(levels: dict | None = None):
    """The memory hierarchy as a staircase: size against bandwidth, each level labelled."""
    from matplotlib.figure import Figure

    levels = levels or memory_levels()
    bw = levels["bandwidth_tbs"]
    sm = levels["sm_count"] or 0
    rows = [  # name, total bytes on the GPU, measured TB/s (None: not measured)
        ("registers\n(64 K × 4 B per SM)", sm * SM90_PER_SM["registers"] * 4, None),
        ("shared memory\n(≤ 228 KB per SM)", sm * SM90_PER_SM["shared_max_kib"] * 1024,
         bw.get("shared_conflict_free_tbs")),
        ("L2 cache", levels["l2_bytes"], bw.get("l2_read_tbs")),
        ("HBM (DRAM)", _memory_bytes(levels["gpu"]), bw.get("dram_copy_tbs")),
    ]
    fig = Figure(figsize=(8, 3.8), layout="constrained")
    ax = fig.subplots()
    for i, (name, size, speed) in enumerate(rows):
        ax.barh(i, np.log10(size), color=["tab:green", "tab:blue", "tab:purple", "tab:gray"][i], alpha=0.7)
        label = f"{size / 2**20:,.0f} MiB in all" if size < 1e9 else f"{size / 1e9:,.0f} GB"
        label += f" · measured {speed:.1f} TB/s" if speed else " · fastest of all (no kernel measures it alone)"
        ax.text(np.log10(size) + 0.05, i, label, va="center", fontsize=9)
        ax.text(0.1, i, name, va="center", fontsize=9, color="white", weight="bold")
    ax.set(yticks=[], xlim=(0, 14.5), xlabel="size on the whole GPU (log₁₀ bytes)", ylim=(3.6, -0.6),
           title=f"{levels['gpu']}: {sm} SMs. Closer to the SM (top) is faster, and smaller per SM")
    return fig


def bank_figure(stride_a: int = 1, stride_b: int = 32):
    """Which bank each lane of a warp hits, for a warp reading floats ``stride`` apart, for two strides."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.2), layout="constrained")
    for ax, stride in zip(fig.subplots(1, 2), (stride_a, stride_b)):
        banks = [(lane * stride) % BANKS for lane in range(32)]
        load = np.bincount(banks, minlength=BANKS)
        ax.bar(range(BANKS), load, color=["tab:red" if n > 1 else "tab:green" for n in load])
        ax.set(xlabel="bank", ylabel="lanes asking it", ylim=(0, 33),
               title=f"lane L reads float L·{stride}: {max(load)} request(s) on the busiest bank\n"
                     f"→ {max(load)} wavefront(s) for this warp's load")
    return fig


# -- mma.sync m16n8k8's fragment layout (lesson 12 draws it, lesson 14's wgmma register operand reuses A's) ---------
# One lane's elements of one mma, as the kernels index them (steps 12 and 13, `group = lane // 4`, `pair = lane % 4`;
# register r of a lane's A fragment is step 13's `i * 16 + r % 2 * 8` row and `kk + r // 2 * 4` k, of C the
# epilogue's `r // 2 * 8` row and `pair * 2 + r % 2` column). tests/test_lesson_12.py checks these against the
# kernels' source and against the mma itself.
def a_element(lane: int, r: int) -> tuple[int, int]:
    """(row, k) of A (16×8) that lane ``lane`` passes as its register a_r."""
    group, pair = lane // 4, lane % 4
    return group + r % 2 * 8, pair + r // 2 * 4


def b_element(lane: int, r: int) -> tuple[int, int]:
    """(k, column) of B (8×8) that lane ``lane`` passes as its register b_r."""
    group, pair = lane // 4, lane % 4
    return pair + r * 4, group


def c_element(lane: int, r: int) -> tuple[int, int]:
    """(row, column) of C and D (16×8) that lane ``lane`` holds in its register c_r (d_r)."""
    group, pair = lane // 4, lane % 4
    return group + r // 2 * 8, 2 * pair + r % 2


LAYOUT = {"A": ((16, 8), 4, a_element), "B": ((8, 8), 2, b_element), "C": ((16, 8), 4, c_element)}


def owners(matrix: str) -> np.ndarray:
    """For every element of ``matrix`` ("A", "B" or "C"), the (lane, register) that holds it: an int array of shape
    (rows, cols, 2), -1 where no lane does (there is none: each element belongs to exactly one lane)."""
    shape, registers, element = LAYOUT[matrix]
    out = np.full(shape + (2,), -1, dtype=int)
    for lane in range(32):
        for r in range(registers):
            row, col = element(lane, r)
            assert out[row, col, 0] == -1, f"{matrix}[{row}][{col}] held twice"
            out[row, col] = lane, r
    return out


# -- the TF32 ceiling (lessons 12 and 25) ------------------------------------------------------------------------------
#: Hopper's tensor cores do 1,024 dense TF32 multiply-adds per SM per clock, the FP32 units 128: 8×.
TENSOR_TF32_PER_FP32 = 8
#: FP32 multiply-adds per SM per clock (4 schedulers × 32 lanes), and one HMMA.1688's multiply-adds.
FP32_FMA_PER_SM = 128
HMMA_FMAS = 16 * 8 * 8


def tf32_peak_tflops(results: dict) -> float:
    """8 × the FP32 units' rate (SMs × 128 multiply-adds × 2 FLOP) at the run's *maximum* SM clock: the tensor
    cores' dense TF32 rate at that clock. NVIDIA's H100 SXM datasheet quotes less (≈ 495 TFLOPS dense), at its own,
    lower clock."""
    return TENSOR_TF32_PER_FP32 * fp32_peak_tflops(results)


def clocks_per_hmma() -> float:
    """Clocks a scheduler's share of the tensor pipe (a quarter of the SM's) needs for one HMMA.1688 at the dense
    TF32 rate."""
    return HMMA_FMAS / (TENSOR_TF32_PER_FP32 * FP32_FMA_PER_SM / 4)


def mma_sync_clocks(metrics: dict) -> float:
    """Clocks the tensor pipe of one scheduler was busy per ``mma.sync`` m16n8k8 TF32 (HMMA.1688), inferred from an
    Nsight Compute profile: the pipe's active cycles over the HMMAs each scheduler executed. An inference from the
    counters, not a documented rate."""
    schedulers = metrics["smsp__inst_executed.sum"] / metrics["Avg. Executed Instructions Per Scheduler"]
    hmma_per_scheduler = metrics["smsp__inst_executed_pipe_tensor_op_hmma.sum"] / schedulers
    busy = metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] / 100
    return busy * metrics["SM Active Cycles"] / hmma_per_scheduler


def mma_sync_ceiling_tflops(results: dict, metrics: dict) -> float:
    """The TF32 ceiling with ``mma.sync``: :func:`tf32_peak_tflops` × the dense rate's clocks per HMMA over the
    profile's."""
    return tf32_peak_tflops(results) * clocks_per_hmma() / mma_sync_clocks(metrics)


# -- a Hopper step's ring: which k-tile in which stage, and which parity each waiter names (lessons 16–19) -------------
def ring_constants(step) -> dict:
    """The ring's constants of a step at its GPU tiles (``SEARCH_SPACE[0]``): STAGES, LOAD_AHEAD (step 16; step 17
    has none: its producer runs as far ahead as the ring lets it), BLOCK_M/N/K, STAGE_BYTES, WARPS, threads."""
    config = step.module.SEARCH_SPACE[0]
    constants = step.module.Config.of(config).check().constants()
    return {"STAGES": constants["STAGES"], "LOAD_AHEAD": constants.get("LOAD_AHEAD"),
            "STAGE_BYTES": constants["STAGE_BYTES"], "WARPS": constants["WARPS"], "BLOCK_M": config.BLOCK_M,
            "BLOCK_N": config.BLOCK_N, "BLOCK_K": config.BLOCK_K,
            "threads": config.THREADS + constants.get("PRODUCER_THREADS", 0)}


def ring_schedule(stages: int, k_tiles: int) -> list[dict]:
    """Per k-tile t: its stage (t % STAGES), which fill of that stage it is (t // STAGES), the parity a consumer
    waits on full[stage] with (the fill's phase: fill % 2) and the parity the producer waits on empty[stage] with
    before the fill (the previous fill's release: (fill − 1) % 2; None for the first fill: nothing to wait for) —
    the kernels' formulas."""
    return [{"k_tile": t, "stage": t % stages, "fill": t // stages, "full_parity": t // stages % 2,
             "empty_parity": None if t < stages else (t // stages - 1) % 2} for t in range(k_tiles)]


def newest_k_tiles(stages: int, turn: int) -> list[int | None]:
    """Per stage of a ring of ``stages`` (k-tile t goes to stage t % STAGES, on turn t): the newest k-tile put there
    by turn ``turn`` (None: none yet)."""
    return [max((t for t in range(turn + 1) if t % stages == s), default=None) for s in range(stages)]


def ring_states(stages: int, turn: int, ladder, older: str, empty: str = "free") -> list[tuple[int | None, str]]:
    """Per stage during turn ``turn``: (its newest k-tile (:func:`newest_k_tiles`), its state). The state is the
    first of ``ladder``, ((most turns old, state), …) in order, that the k-tile's age (``turn`` − k-tile) is within;
    ``older`` past them all; ``empty`` for a stage not filled yet."""
    return [(t, empty if t is None else next((state for most, state in ladder if turn - t <= most), older))
            for t in newest_k_tiles(stages, turn)]


# -- the tensor cores' dense TF32 rate (lessons 16–19) -----------------------------------------------------------------
#: Dense TF32 FLOP per clock per SM: 8 × the FP32 units' 128 multiply-adds, 2 FLOP each.
TF32_FLOP_PER_CLOCK = 2 * TENSOR_TF32_PER_FP32 * FP32_FMA_PER_SM


def k_tile_flop(constants: dict) -> int:
    """FLOP of one k-tile of one block: 2 · BLOCK_M · BLOCK_N · BLOCK_K."""
    return 2 * constants["BLOCK_M"] * constants["BLOCK_N"] * constants["BLOCK_K"]


def tensor_clocks(constants: dict) -> float:
    """Clocks one SM's tensor cores need for one k-tile of the block at the dense TF32 rate."""
    return k_tile_flop(constants) / TF32_FLOP_PER_CLOCK
