"""Step 15 fed by the copy engine through an mbarrier ring (experiments/kernels/warpgroup_tma.py) and its
warp-specialized form (experiments/kernels/warpgroup_specialized.py) against step 15, cuBLAS SGEMM and cuBLAS TF32 in
one run (issue: Hopper's own GEMM design), on the course benchmark's large squares and
one ragged shape (edge kernel: step 15's), each judged by the TF32 tolerance.

    python -m experiments.warpgroup_tma_bench [OUT.json]   # default: experiments/results/experiment-warpgroup-tma-<gpu>.json

Prediction, written before the run, from a model of where step 15 loses time: per k-tile a block does 2 × 4
``wgmma`` of 64×256×8 = 2.1 MFLOP, ≈ 1,100 clocks of one SM's tensor cores at the dense TF32 rate (≈ 1,900 FLOP per
clock per SM). Between k-tiles each warpgroup waits for its last ``wgmma``, loads and rounds 16 fragment values
(shared-memory latency ≈ 30 clocks, then conversions and moves: ≈ 100 clocks) before issuing the next — a pause of
≈ 9 % of a k-tile. Step 15's ``bar.sync`` per k-tile keeps the two warpgroups in step, so their pauses coincide and
the tensor cores idle through them; the ring lets them drift apart so one computes while the other pauses. The
copies themselves (12 ``cp.async`` per thread per k-tile) cost little issue time. So: +5 to +10 % over step 15 at
4096³ and 8192³, the same gap between the two sizes (the tile order is unchanged), and the ragged shape unchanged
within noise (its border runs step 15's edge kernel).

Measured (H100, experiments/results/experiment-warpgroup-tma-nvidia-h100.json): 238.6 / 233.9 TFLOPS against step
15's 300.0 / 271.8 — 20 % and 14 % *slower*. The model missed what the producer costs: thread 0 is a lane of
consumer warpgroup 0, and a ``wgmma`` needs its whole warpgroup, so each k-tile warpgroup 0 waited while thread 0
waited for warpgroup 1 to release a stage; and with the producer inside a consumer warp the loads could run only 2
k-tiles ahead. Prediction for the warp-specialized build, written before its run: a producer warp of its own removes
both, so at least step 15's speed, and the +5 to +10 % above if the drifting warpgroups pay as modelled.

Measured (H100, experiments/results/experiment-warpgroup-specialized-nvidia-h100.json, one run): 308.0 / 275.7 TFLOPS
against step 15's 304.9 / 271.7 (1.01× / 1.01×, within the ~4 % that runs move; the TMA build 237.7 / 236.9 in the
same run), 81 % / 74 % of cuBLAS TF32's 378.3 / 373.6. The first half held, the second did not.

Then ptxas's own report (nvJitLink ``-v``, on a CPU) showed what the model had missed: it serialised the ``wgmma``
of the TMA build around the barrier wait's divergent branches (C7518), and those of the specialized build for want
of registers (C7512; see the kernels' docstrings). The wait became one block of PTX with uniform branches, and a
third build keeps one k-tile of products in flight with two fragment register sets (then
experiments/kernels/warpgroup_overlap.py; with the grouped tile order it is now step 16, ``tma_pipeline``).
Prediction for those, written before the run: the TMA build at last +5 to +10 % over step 15, as first modelled, and
the overlap build a further few per cent (the pause between k-tiles is now the warpgroup's own, ≈ 100 of ≈ 1,100
clocks a k-tile). Measured (experiments/results/experiment-warpgroup-overlap-nvidia-h100.json): step 15 299.5 /
268.5, TMA 314.6 / 283.7 (1.05× / 1.06×), specialized 304.1 / 277.9 (register-starved, as ptxas said), overlap
323.4 / 294.8 (1.08× / 1.10× step 15; 86 % / 77 % of cuBLAS TF32's 377.3 / 382.9). Both predictions held. The drop
from 4096³ to 8192³ is the same in every build (−9 %), so it is not in the k-loop: the tile order and the
epilogue are what is left to examine.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, print_records, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/warpgroup_tma_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from experiments.kernels import warpgroup_specialized, warpgroup_tma

    out = output_path("warpgroup-tma", argv[1] if len(argv) > 1 else None)
    entries = [gemm_steps.get_step("warpgroup_tf32")]
    entries += [SimpleNamespace(name=module.__name__.rsplit(".", 1)[1], number=16 + i, launch=module.build().launch,
                                arithmetic="tf32")
                for i, module in enumerate((warpgroup_tma, warpgroup_specialized))]
    entries.append(gemm_steps.get_step("tma_pipeline"))  # the overlap build, with the grouped tile order
    sizes = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3001, 2999, 1531)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = ("step 15 fed by TMA through full/empty mbarriers, and warp-specialized "
                             "(experiments/kernels/warpgroup_tma.py, warpgroup_specialized.py)")
    save(results, out)
    print_records(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
