"""Does ``matmul``'s choice hold away from the shapes its table was measured on (issue: fast at every shape)?

The dispatch table (gemm_steps/harness/dispatch.json) comes from the shape suite, so at the suite's own shapes
``matmul`` runs what was measured fastest there. This times ``matmul`` (the step or tile variant it chooses, launched
directly) against step 11 as shipped and cuBLAS, in one run, on shapes that are *not* in the suite: every class,
sides off the suite's by factors up to about 1.5. ``matmul`` at its default precision (``"tf32x3"``: any kernel that
keeps the FP32 contract, 3xTF32 steps included where the table measured them). Usage, on a GPU from the repository
root:
python -m experiments.matmul_held_out OUT.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import gemm_steps
from gemm_steps.harness.bench import run_benchmark, save
from gemm_steps.harness.dispatch import candidate, choose

HELD_OUT = [(300, 300, 300), (448, 448, 448), (768, 768, 768), (1536, 1536, 1536), (3000, 3000, 3000),
            (2500, 900, 3001), (1999, 2501, 1499), (4000, 96, 6000), (6000, 100, 4000), (96, 6000, 3000),
            (700, 700, 12000), (1500, 1000, 10000), (2600, 1900, 2048)]


def drawn(count: int = 10, seed: int = 20261126) -> list[tuple[int, int, int]]:
    """Shapes drawn at random (each side log-uniform in 96 … 8192, M·N·K at most 2^36), never used to tune: the
    held-out set of issue 25, separate from the hand-picked HELD_OUT above."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, int, int]] = []
    while len(shapes) < count:
        shape = tuple(int(round(2 ** x)) for x in rng.uniform(np.log2(96), 13, size=3))
        if shape[0] * shape[1] * shape[2] <= 2 ** 36:
            shapes.append(shape)
    return shapes


def main() -> None:
    stream_k = gemm_steps.get_step("stream_k")
    results = {"records": [], "drawn": drawn()}
    for shape in HELD_OUT + drawn():
        choice = choose(*shape)
        chosen = candidate(choice.step_name)
        entries = [SimpleNamespace(name="matmul", number=12, launch=chosen.launch, config={},
                                   arithmetic=chosen.arithmetic),
                   SimpleNamespace(name="stream_k", number=11, launch=stream_k.launch, config={})]
        run = run_benchmark(entries, [shape], repeats=20, progress=lambda message: None)
        for record in run["records"]:
            if record["step"] == "matmul":
                record["chose"] = choice.step_name
        results["environment"] = run["environment"]
        results["method"] = run.get("method")
        results["records"] += run["records"]
        row = {r["step"]: r for r in run["records"]}
        print(shape, choice.step_name, f"matmul {row['matmul'].get('pct_of_cublas', 0):.0f} %, "
              f"step 11 {row['stream_k'].get('pct_of_cublas', 0):.0f} % of cuBLAS", flush=True)
    results["schema"] = 1
    results["experiment"] = "matmul's choice on shapes outside its table"
    save(results, sys.argv[1])


if __name__ == "__main__":
    main()
