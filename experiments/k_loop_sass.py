"""Step 9's k-tile loop in SASS, beside its experiments' variants: registers, instructions, FFMAs and FFMAs with a
``.reuse`` operand, compiled on a CPU (NVVM → PTX, the ``ptxas`` binary → sm_90 cubin, ``nvdisasm``; no GPU).
Lesson 9's deep dive reads the file this writes; tests/test_lesson_09.py recomputes its shipped-step row.

    NUMBA_ENABLE_CUDASIM=0 python -m experiments.k_loop_sass [OUT.json]
        # default: experiments/results/experiment-k-loop-sass-sm90.json; needs ptxas and nvdisasm (pip install
        # nvidia-cuda-nvdisasm), not a GPU

The driver's JIT on a GPU host may schedule and allocate differently (``scripts/sass_report.py`` reads that SASS).
"""
import json
import sys
from datetime import date

import gemm_steps
from experiments import RESULTS, kernel_name
from experiments.kernels import warp_tiling_async, warp_tiling_fma_order, warp_tiling_pipelined
from gemm_steps.course.sass import k_loop_counts
from gemm_steps.steps import warp_tiling

#: The kernels, by the names their experiments' records use: ``(module or None for the shipped step, options)``.
KERNELS = {
    "step9 shipped": (None, {}),
    "row_order": (warp_tiling_fma_order, {"order": "row"}),
    "step9 pipelined": (warp_tiling_pipelined, {}),
    "uint32 stage": (warp_tiling_async, {"uint32_stage": True}),
    "async B": (warp_tiling_async, {"async_b": True}),
    "async A+B": (warp_tiling_async, {"async_a": True, "async_b": True}),
    "async A+B, uint32 stage": (warp_tiling_async, {"async_a": True, "async_b": True, "uint32_stage": True}),
}


def main(argv: list[str] = sys.argv) -> None:
    if gemm_steps.SIMULATOR:
        raise SystemExit("compiling needs Numba in GPU mode: NUMBA_ENABLE_CUDASIM=0 python -m experiments.k_loop_sass")
    config = warp_tiling.TUNING.kernels().config
    built = {label: warp_tiling.build(config) if module is None
             else module.build(config, **options, name=kernel_name("x_sass", label))
             for label, (module, options) in KERNELS.items()}
    found = k_loop_counts(built)
    if found is None:
        raise SystemExit("this machine lacks the ptxas binary or nvdisasm (pip install nvidia-cuda-nvdisasm)")
    found = {"experiment": "k-tile loop of step 9 and its variants in SASS for sm_90, compiled on a CPU",
             "date": date.today().isoformat(), "config": dict(config.__dict__), **found}
    out = argv[1] if len(argv) > 1 else RESULTS / "experiment-k-loop-sass-sm90.json"
    with open(out, "w") as f:
        json.dump(found, f, indent=1)
        f.write("\n")
    for label, k in found["kernels"].items():
        print(f"{label:26s} registers {k['registers']:3d}  loop {k['instructions']:5d}  FFMA {k['ffma']} "
              f"(.reuse {k['reuse']})")
    print(f"wrote {out} ({found['tools']['ptxas']}, {found['tools']['nvdisasm']})")


if __name__ == "__main__":
    main()
