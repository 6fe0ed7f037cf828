"""A's rows on 128-byte lines: does copying A into rows of a multiple of 32 floats pay, where K is not one?

    python -m experiments.aligned_rows [OUT.json] [MxNxK ...]

Where K is a multiple of 4 but not of 32, the copy engine can read A as it is (a row pitch of a multiple of 16 bytes),
but each 128-byte row of an A box then starts inside a sector and spans two L2 lines. The tf32 minimum of held-out seed
20261216 came from there (experiments/results/experiment-tf32-minimum-shape-nvidia-h200-2.json: step 21 at
3072×16128×14460 ran 0.78× itself at ×14464). One change a build: each of steps 17, 21, 18 and 22 as shipped, and the
same step copying A first into rows of a multiple of 32 floats (``TmaTiles.aligned_a_when`` always true; the copy is
timed with the kernel: it is part of the launch), both cuBLAS beside. Prediction: predictions/aligned-rows-before-run.md.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(2858, 16012, 14460), (3072, 16128, 14460), (4096, 4096, 4100), (2048, 8192, 2044), (4096, 1024, 4100),
         (1000, 700, 9999)]
STEPS = [("warp_specialized", 17, "tf32"), ("warp_specialized_stream_k", 21, "tf32"),
         ("warp_specialized_3xtf32", 18, "3xtf32"), ("warp_specialized_3xtf32_stream_k", 22, "3xtf32")]
ALIGNED = "+aligned A"


def entries() -> list:
    """Each step as shipped and the same step's build with A's rows copied onto 128-byte lines wherever K is not a
    multiple of 32."""
    import gemm_steps
    from gemm_steps.toolkit.tuned import default_config

    found = []
    for name, number, arithmetic in STEPS:
        step = gemm_steps.get_step(name)
        aligned = step.module.build(default_config(step.module.SEARCH_SPACE))
        aligned.aligned_a_when = lambda m, n, k: True
        found += [SimpleNamespace(name=name, number=number, arithmetic=arithmetic, launch=step.launch),
                  SimpleNamespace(name=name + ALIGNED, number=number, arithmetic=arithmetic, launch=aligned.launch)]
    return found


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each entry's TFLOPS, each aligned build over its step, each entry over its cuBLAS."""
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    out = {}
    for (m, n, k), by in tflops.items():
        out[f"{m}x{n}x{k}"] = {
            "tflops": by,
            "aligned_over_shipped": {name: ratio(by.get(name + ALIGNED), by.get(name)) for name, _, _ in STEPS},
            "over_cublas": {name + suffix: ratio(by.get(name + suffix), by.get("cublas_tf32" if a == "tf32" else
                                                                               "cublas"))
                            for name, _, a in STEPS for suffix in ("", ALIGNED)}}
    return out


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/aligned_rows.py")
    out = output_path("aligned-rows", argv[1] if len(argv) > 1 else None)
    sizes = [tuple(int(x) for x in shape.split("x")) for shape in argv[2:]] or SIZES
    results = run_and_save(entries(), sizes, out, "steps 17, 21, 18, 22 as shipped and with A copied onto 128-byte "
                           "rows where K is not a multiple of 32 (experiments/aligned_rows.py)", summary, width=44)
    nan = float("nan")
    for shape, row in results["summary"].items():
        print(f"{shape}: aligned / shipped " + ", ".join(f"{name} {value or nan:.3f}"
                                                         for name, value in row["aligned_over_shipped"].items()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
