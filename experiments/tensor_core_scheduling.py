"""Scheduling on the tensor-core kernel (issue 14, item 4): step 12 (one block per tile) vs the same TF32 tile
computation on step 10's persistent tile loop and on step 11's stream-K hybrid, with cuBLAS SGEMM and cuBLAS TF32 in
the same run, over squares, wave-boundary shapes and K-heavy shapes. The kernel variant is
``experiments/kernels/tensor_cores_stream_k.py`` (step 12's tiles, pipeline and fragment layout; its split rule
chooses the schedule: ``no_stream_k`` is the persistent loop, ``stream_k_split`` step 11's hybrid).

    python -m experiments.tensor_core_scheduling [OUT.json]
        # default: experiments/results/experiment-tensor-core-scheduling-<gpu>.json

Progress goes to stderr, one line per timing (about 70: 14 shapes × 5 entries); a table of the speed-ups over step 12
against the predictions below follows on stdout. Needs a GPU; about 1.5–2 minutes on an H100, most of it the first
compiles (step 12's fast kernel, then the stream-K kernel once: the persistent build loads it from Numba's disk
cache) and making the 8192³ inputs.

Entries (all judged by the TF32 tolerance, ``arithmetic="tf32"``, like step 12):

* ``tensor_cores (step 12)``: the shipped step, one block per tile (``tensor_cores.TUNING.kernels()``);
* ``tc persistent``: the variant with every tile data-parallel (``no_stream_k``): SMs × occupancy blocks
  grid-striding over the tiles in row-major order (step 10 without the GROUP_M swizzle, as in step 11);
* ``tc stream_k (hybrid split)``: the variant with step 11's split (``stream_k_split``): where a tile-per-block
  schedule would keep ≥ 90 % of the block slots busy it runs all tiles data-parallel (= the persistent loop above),
  otherwise whole waves data-parallel and the rest by k-iterations. Step 11 falls back to step 10's kernel there;
  the analogue here (``hybrid_launch``: step 12 where there are no stream-K tiles) is not timed separately — its time
  is step 12's on the shapes whose split has no stream-K tiles and this entry's on the others, and the summary
  prints it as the "hybrid" column.

Shapes (tiles are step 12's 128×256 on an H100; 132 SMs, one 153 KB block per SM, so a wave is 132 tiles):

* squares 2048³ (128 tiles, 0.97 waves), 4096³ (512, 3.88), 8192³ (2048, 15.5): at least 90 % of the slots busy,
  so no stream-K tiles;
* wave boundaries at K = 4096, the tile counts of experiments/scheduling.py: 66 (0.50 waves), 132 (1.00), 133 (1.01),
  144 (1.09), 198 (1.50), 264 (2.00), 265 (2.01), 300 (2.27);
* K-heavy: 512×1024×16384 (16 tiles of 512 k-tiles), 1024×1024×8192 (32 tiles of 256), 256×512×32768 (4 of 1024).

Predictions, written before any GPU run (speed-up = step 12's median time / the entry's; ``PREDICTED`` below):

* **Squares and whole waves (132, 264 tiles):** no stream-K tiles, so "stream_k" is the persistent loop, and the
  persistent loop runs the same waves as step 12's hardware-scheduled grid: 0.95–1.02× (the loop's state costs a few
  registers on top of step 12's 246; if ptxas spills for them, every row of the variant drops by the same factor,
  squares included — the PTX has no local memory, checked on the CPU).
* **Persistent loop everywhere:** 0.95–1.02× of step 12 on every shape: the same tiles in the same order and the same
  number of waves, one block per SM either way.
* **Wave boundaries:** step 12 needs ceil(T / 132) waves, stream-K about T / 132 tile-times plus the fixup (one
  128 KB partial-sum tile written and read per split, small against a tile's 128 k-tiles at K = 4096). 66 tiles:
  ideal 2.0×, predicted 1.6–1.9× (each tile split over 2 blocks); 133: ideal 1.98×, 1.6–1.9×; 144: ideal 1.83×,
  1.5–1.75×; 198: ideal 1.33×, 1.2–1.3×; 265 (132 data-parallel + 133 stream-K): ideal 1.49×, 1.3–1.45×; 300: ideal
  1.32×, 1.2–1.3×.
* **K-heavy:** step 12 keeps only T of the 132 SMs busy — 16, 32 and 4 — at ≈ 1.1 TFLOPS per SM (its 147 TFLOPS at
  8192³ over 132 SMs): ≈ 18, 35 and 4.4 TFLOPS. Stream-K gives every block ≈ 62 k-tiles (31 for 256×512×32768), and
  each tile's finishing block adds the partial sums of the ≈ 8, 4 and 33 blocks sharing it, one after another
  (128 KB each through one SM, a few µs apiece). 1024×1024×8192: ideal 4.1×, predicted 3–4× (100–135 TFLOPS);
  512×1024×16384: ideal 8.25×, 5–8× (90–130 TFLOPS); 256×512×32768: ideal 33×, but ~32 serial partial-sum reads per
  tile cost about as long as the k-loop itself: 10–20× (45–90 TFLOPS).
* **cuBLAS TF32** is ≈ 2.2–2.6× step 12 at 4096³–8192³ (README); on the K-heavy shapes it presumably splits K too, so
  its lead there should be similar, not larger, if stream-K works as predicted.
"""
import sys
from dataclasses import asdict
from types import SimpleNamespace

from experiments import output_path, require_gpu
from gemm_steps.harness import bench
from gemm_steps.harness.verify import tolerance_of
from gemm_steps.steps import tensor_cores
from gemm_steps.toolkit.kernel_tools import ceil_div
from gemm_steps.steps.stream_k import stream_k_split

#: Tile counts at and just past whole waves of 132 (as experiments/scheduling.py), as (tile-rows, tile-cols).
WAVE_TILES = [(6, 11), (12, 11), (7, 19), (12, 12), (18, 11), (24, 11), (5, 53), (20, 15)]
K_HEAVY = [(512, 1024, 16384), (1024, 1024, 8192), (256, 512, 32768)]

#: Predicted speed-up of the stream-K hybrid over step 12, (low, high), by number of tiles (128×256 tiles, 132 SMs);
#: shapes without stream-K tiles (and the persistent loop everywhere): (0.95, 1.02). See the docstring.
PREDICTED = {66: (1.6, 1.9), 133: (1.6, 1.9), 144: (1.5, 1.75), 198: (1.2, 1.3), 265: (1.3, 1.45), 300: (1.2, 1.3),
             32: (3.0, 4.0), 16: (5.0, 8.0), 4: (10.0, 20.0)}
NO_STREAM_K = (0.95, 1.02)

STEP_12, PERSISTENT, STREAM_K = "tensor_cores (step 12)", "tc persistent", "tc stream_k (hybrid split)"


def variants() -> list:
    from experiments.kernels import tensor_cores_stream_k as tc_stream_k

    config = tensor_cores.TUNING.kernels().config
    persistent = tc_stream_k.build(config, split=tc_stream_k.no_stream_k)
    hybrid = tc_stream_k.build(config, split=stream_k_split)  # same source: loads the compiled kernel from disk
    entry = dict(number=12, arithmetic="tf32", config=asdict(config))  # judged by the TF32 tolerance, like step 12
    return [SimpleNamespace(name=STEP_12, launch=tensor_cores.TUNING.kernels().launch, **entry),
            SimpleNamespace(name=PERSISTENT, launch=persistent.launch, **entry),
            SimpleNamespace(name=STREAM_K, launch=hybrid.launch, built=hybrid, **entry)]


def shapes(config=None) -> list[tuple[int, int, int]]:
    """The shapes for step 12's tiles (``config``: those of this backend's build if not given)."""
    config = config or tensor_cores.TUNING.kernels().config
    bm, bn = config.BLOCK_M, config.BLOCK_N
    found = [(s, s, s) for s in (2048, 4096, 8192)]
    found += [(bm * rows, bn * cols, 4096) for rows, cols in WAVE_TILES]
    return found + K_HEAVY


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tensor_core_scheduling.py")
    out = output_path("tensor-core-scheduling", argv[1] if len(argv) > 1 else None)
    config = tensor_cores.TUNING.kernels().config
    entries = variants()
    print(f"tiles {config.BLOCK_M}×{config.BLOCK_N}×{config.BLOCK_K}; {len(shapes())} shapes; writing {out}",
          file=sys.stderr, flush=True)
    res = bench.run_benchmark(entries, shapes(), repeats=20, max_seconds=0.5, include_cublas_tf32=True)
    blocks = entries[2].built.resident_blocks("fast")  # the stream-K grid: SMs × occupancy
    res["tile_config"] = asdict(config)
    res["resident_blocks"] = blocks
    times = {(r["M"], r["N"], r["K"], r["step"]): r.get("median_ms") for r in res["records"]}
    schedules = []
    print(f"\nresident blocks {blocks}; speed-up over step 12 (median times); predicted range for the stream-K entry")
    print(f"{'M×N×K':>19s} {'tiles':>5s} {'waves':>5s} {'dp+sk':>9s} {'persist':>7s} {'stream_k':>8s} {'hybrid':>6s}"
          f" {'predicted':>10s} {'cuBLAS TF32':>11s}  TFLOPS: step 12 / stream_k / cuBLAS TF32")
    for m, n, k in shapes():
        tiles = ceil_div(m, config.BLOCK_M) * ceil_div(n, config.BLOCK_N)
        data_parallel, stream_k = stream_k_split(tiles, blocks)
        step_12 = times.get((m, n, k, STEP_12))
        ratio = {name: (step_12 / times[(m, n, k, name)]) if step_12 and times.get((m, n, k, name)) else None
                 for name in (PERSISTENT, STREAM_K, "cublas_tf32")}
        hybrid = ratio[STREAM_K] if stream_k else (1.0 if step_12 else None)  # step 11's rule: step 12 if no sk
        low, high = PREDICTED.get(tiles, NO_STREAM_K) if stream_k else NO_STREAM_K
        tflops = {r["step"]: r.get("tflops") for r in res["records"] if (r["M"], r["N"], r["K"]) == (m, n, k)}
        schedules.append({"M": m, "N": n, "K": k, "tiles": tiles, "waves": tiles / blocks,
                          "data_parallel_tiles": data_parallel, "stream_k_tiles": stream_k,
                          "speedup_over_step_12": ratio, "hybrid_with_step_12_fallback": hybrid,
                          "predicted_stream_k_speedup": [low, high]})

        def show(x, width):
            return f"{x:{width}.2f}" if x is not None else f"{'—':>{width}s}"

        print(f"{m:5d}×{n:5d}×{k:5d} {tiles:5d} {tiles / blocks:5.2f} {data_parallel:4d}+{stream_k:<4d} "
              f"{show(ratio[PERSISTENT], 7)} {show(ratio[STREAM_K], 8)} {show(hybrid, 6)} {low:4.2f}–{high:<5.2f} "
              f"{show(ratio['cublas_tf32'], 11)}  {show(tflops.get(STEP_12), 6)} / {show(tflops.get(STREAM_K), 6)}"
              f" / {show(tflops.get('cublas_tf32'), 6)}")
    res["schedules"] = schedules
    bench.save(res, out)
    wrong = [r for r in res["records"] if "error" in r or r.get("unwritten")
             or not r.get("sampled_rel_error_fp64", 0) <= tolerance_of(r["arithmetic"], r["K"])]
    print(f"\nwrote {out}" + (f"; {len(wrong)} entries failed, wrong or left elements unwritten" if wrong else ""))


if __name__ == "__main__":
    main()
