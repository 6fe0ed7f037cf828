"""Shapes the copy engine cannot read as they are, on steps 17 and 18's own kernels: copy A or B into rows it can
read, then run the partial-tile build — against the edge kernel (the steps before) and the zero-padded copies of
``matmul``'s ``…+padded`` candidates, in one run with both cuBLAS (issue 37, Deliver 1: "the padded copies only where
[the strides] do not [meet TMA's rule]").

Where K or N is not a multiple of 4, a row of A or B is not a multiple of 16 bytes and no tensor map can describe it.
Until now steps 17 and 18 ran such a shape wholly on an older step's edge kernel (15's, 14's); ``matmul`` could
instead copy A, B and C into buffers padded to whole tiles (``toolkit/padded_tiles.PaddedTiles``), which copies C
twice over (the kernel writes the padded C, a copy takes its corner out). Now the step copies only the matrix the
copy engine cannot read, each row widened to a multiple of 4 floats (``TmaTiles.readable_copy``), and its partial
build stores into C directly. The builds per step:

* ``<step>@edge``: the step as it was for these shapes: full tiles on its fast kernel where K % 32 = N % 4 = 0, the
  rest on the edge kernel (``experiments.without_partial_build``);
* ``<step>``: the step as shipped (readable copies + partial-tile build);
* ``<step>+padded``: the padded candidate (whole-tile copies of A, B and C around the fast kernel).

Shapes: the suite's three ragged ones with K or N not a multiple of 4, three more (a short K, a K-heavy one, a large
one), and 4096³ (the control: whole tiles, nothing copied, one path for all three builds).

Prediction: predictions/readable-copies-before-run.md (written before the run).

    python -m experiments.readable_copies [OUT.json]   # default experiments/results/experiment-readable-copies-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save, without_partial_build

SIZES = [(3001, 2999, 1531), (1531, 3989, 2003), (2777, 1111, 3333), (9000, 9001, 301), (1001, 999, 9999),
         (6001, 5003, 4001), (4096, 4096, 4096)]
STEPS = {"warp_specialized": ("tf32", 17), "warp_specialized_3xtf32": ("3xtf32", 18)}


def summary(results: dict) -> dict:
    """Per shape: each build's TFLOPS, and per step the shipped build over the edge one, over the padded one and over
    its cuBLAS (SGEMM for step 18, TF32 for step 17)."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    out = {}
    for (m, n, k), by in tflops.items():
        row = {"tflops": by}
        for name, (arithmetic, _) in STEPS.items():
            reference = by.get("cublas_tf32" if arithmetic == "tf32" else "cublas")
            row[name] = {"over_edge": ratio(by.get(name), by.get(f"{name}@edge")),
                         "over_padded": ratio(by.get(name), by.get(f"{name}+padded")),
                         "over_cublas": ratio(by.get(name), reference),
                         "padded_over_cublas": ratio(by.get(f"{name}+padded"), reference)}
        out[f"{m}x{n}x{k}"] = row
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/readable_copies.py")
    import gemm_steps
    from gemm_steps.harness.dispatch import candidate

    out = output_path("readable-copies", argv[1] if len(argv) > 1 else None)
    entries = []
    for name, (arithmetic, number) in STEPS.items():
        entries += [SimpleNamespace(name=f"{name}@edge", number=number, arithmetic=arithmetic,
                                    launch=without_partial_build(name, f"{name}@edge").launch),
                    SimpleNamespace(name=name, number=number, arithmetic=arithmetic,
                                    launch=gemm_steps.get_step(name).launch),
                    SimpleNamespace(name=f"{name}+padded", number=number, arithmetic=arithmetic,
                                    launch=candidate(f"{name}+padded").launch)]
    results = run_and_save(entries, SIZES, out, "steps 17 and 18 copying A or B into rows the copy engine can read, "
                           "then their partial-tile builds, against their edge kernels and the whole-tile padded "
                           "copies (experiments/readable_copies.py)", summary, width=34)
    for shape, row in results["summary"].items():
        for name in STEPS:
            r = row[name]
            print(f"{shape} {name}: / edge {r['over_edge'] or float('nan'):.3f}, / padded "
                  f"{r['over_padded'] or float('nan'):.3f}, / cuBLAS {r['over_cublas'] or float('nan'):.3f} "
                  f"(padded / cuBLAS {r['padded_over_cublas'] or float('nan'):.3f})")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
