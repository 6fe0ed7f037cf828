"""The 3xTF32 steps on wide-exponent inputs at the target sizes (issue: tensor cores, the 3xTF32 target: error no
more than 2× cuBLAS SGEMM's on inputs whose entries are scaled by 2^u, u uniform in −20 … 20, at 4096³ and 8192³).

Steps 13 and 14 and cuBLAS SGEMM on the same inputs (``experiments.tensor_core_speed.wide_inputs``), each output
NaN-poisoned first; the error is ``bench.sampled_fp64_error`` (512 sampled elements against a float64 dot product),
the measure of the course benchmark. Standard-normal inputs are measured too, for comparison.

    python -m experiments.three_tf32_wide [OUT.json]   # default: experiments/results/experiment-three-tf32-wide-<gpu>.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

from experiments import output_path, require_gpu


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/three_tf32_wide.py")
    from numba import cuda

    import gemm_steps
    from gemm_steps.harness.bench import sampled_fp64_error, save
    from gemm_steps.harness.cublas import launch_cublas
    from gemm_steps.harness.environment import environment

    from experiments.tensor_core_speed import wide_inputs

    out = output_path("three-tf32-wide", argv[1] if len(argv) > 1 else None)
    launches = {"cublas": launch_cublas, "three_tf32": gemm_steps.get_step("three_tf32").launch,
                "warpgroup_mma": gemm_steps.get_step("warpgroup_mma").launch}
    rows = []
    for size in (4096, 8192):
        for inputs in ("standard normal", "wide exponent (x 2^u, u in -20..20)"):
            rng = np.random.default_rng(size)
            if inputs.startswith("wide"):
                a, b = wide_inputs(rng, size, size, size)
            else:
                a = rng.standard_normal((size, size), dtype=np.float32)
                b = rng.standard_normal((size, size), dtype=np.float32)
            a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
            row = {"size": size, "inputs": inputs}
            for name, launch in launches.items():
                c = cuda.to_device(np.full((size, size), np.nan, np.float32))
                launch(a_dev, b_dev, c)
                host = c.copy_to_host()
                row[name] = {"error": sampled_fp64_error(a, b, host), "unwritten": int(np.isnan(host).sum())}
            for name in ("three_tf32", "warpgroup_mma"):
                row[name]["times_cublas"] = row[name]["error"] / row["cublas"]["error"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    save({"experiment": "3xTF32 steps on wide-exponent inputs", "environment": environment(), "rows": rows}, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
