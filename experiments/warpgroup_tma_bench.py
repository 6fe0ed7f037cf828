"""Step 15 fed by the copy engine through an mbarrier ring (experiments/kernels/warpgroup_tma.py) against step 15,
cuBLAS SGEMM and cuBLAS TF32 in one run (issue: Hopper's own GEMM design), on the course benchmark's large squares and
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
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/warpgroup_tma_bench.py")
    import gemm_steps
    from gemm_steps.harness.bench import run_benchmark, save

    from experiments.kernels import warpgroup_tma

    out = output_path("warpgroup-tma", argv[1] if len(argv) > 1 else None)
    kernels = warpgroup_tma.build()
    entries = [gemm_steps.get_step("warpgroup_tf32"),
               SimpleNamespace(name="warpgroup_tma", number=16, launch=kernels.launch, arithmetic="tf32")]
    sizes = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3001, 2999, 1531)]
    results = run_benchmark(entries, sizes, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "step 15 fed by TMA through full/empty mbarriers (experiments/kernels/warpgroup_tma.py)"
    save(results, out)
    for r in results["records"]:
        print(f"{r['M']}×{r['N']}×{r['K']} {r['step']:16s} {r.get('tflops', 0):7.1f} TFLOPS "
              f"{r.get('pct_of_cublas') or 0:6.1f} % error {r.get('sampled_rel_error_fp64', float('nan')):.1e}"
              f"{' ' + r['error'] if 'error' in r else ''}", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
