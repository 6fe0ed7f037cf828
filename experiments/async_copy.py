"""cp.async (global → shared without registers) and cheaper stage arithmetic in step 9, timed in one run.

Variants of step 9's tile kernel (same 128×256×8 tiles, 8×16 per thread), from ``experiments/kernels/
warp_tiling_async.py``:
* ``ASYNC_B``: B's k-tile is copied with 16-byte ``cp.async`` straight into the next shared stage (``LDGSTS.128``);
* ``ASYNC_A`` too: A's four floats per thread with 4-byte ``cp.async`` into their transposed places (``LDGSTS``);
* ``uint32 stage``: the stage index ``k_tile % 2`` in unsigned 32-bit arithmetic (step 9 computes it from the
  signed 64-bit loop counter, which ``ptxas`` turns into a sign test and 64-bit adds every k-tile).
Prediction: the k-loop is bound by instruction issue (lesson 9), so each variant moves time by about its change in
instructions per k-tile; ``ptxas`` 13.0 for sm_90 counted 1,164 (shipped), 1,152 (uint32 stage), 1,193 (both
copies async — 1,200 with today's ptxas 13.0.88, lesson 9's deep dive; their address arithmetic costs more than the
loads and stores they replace): within ±3 %, and the
async copies a little slower unless fewer registers (229 vs 253) or the missing STS/barrier waits matter more.
The shipped kernel runs first and again last.

    python -m experiments.async_copy [OUT.json]    # default: experiments/results/experiment-async-copy-<gpu>.json
"""
import sys

from experiments import kernel_name, output_path, require_gpu
from experiments.kernels import warp_tiling_async
from gemm_steps.harness import bench
from gemm_steps.steps import warp_tiling

SIZES = (4096, 8192)


def variants() -> list:
    """``(label, TiledKernels)`` pairs, in the order they are timed."""
    config = warp_tiling.TUNING.kernels().config
    specs = [("uint32 stage", {"uint32_stage": True}),
             ("async B", {"async_b": True}),
             ("async A+B", {"async_a": True, "async_b": True}),
             ("async A+B, uint32 stage", {"async_a": True, "async_b": True, "uint32_stage": True})]
    return ([("step9 shipped", warp_tiling.build(config))]
            + [(label, warp_tiling_async.build(config, **flags, name=kernel_name("x", label)))
               for label, flags in specs]
            + [("step9 shipped again", warp_tiling.build(config))])


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/async_copy.py")
    bench.time_variants(variants(), SIZES, output_path("async-copy", argv[1] if len(argv) > 1 else None))


if __name__ == "__main__":
    main()
