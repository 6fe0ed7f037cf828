"""Fewer instructions in step 17's k-loop, one change at a time, timed in one run with cuBLAS TF32 (issue 36, Deliver
5: explain the gap to the reference from the kernel — instructions per FLOP).

The reference (results/reference-nvidia-h200-2026-11-28.json, Nsight Compute at 4096³) executed 64.5 M warp
instructions for the same 2.10 M HGMMAs and 8.40 M LDSs as step 17's 106.8 M, and ran at a higher SM clock under load
(1,605 against 1,470 MHz at 4096³; both at the board's power limit). Step 17's executed opcodes show where its extra
instructions were: ``FSETP.GEU``, ``IMAD.IADD`` and ``LOP3`` once per fragment element (``cvt.rna.tf32.f32``), and
64-bit uniform arithmetic (``UIADD3.X``, ``USHF.R.U64``, ``USEL``…) in the ring's stage/phase and the descriptors.
experiments/kernels/warp_specialized_loop_instructions.py takes them out one by one (its docstring counts the SASS of
each build's loop). The builds, each one change more than the one before:

* ``before``: step 17 as it was at b8f1457;
* ``ring_32``: the ring's k-tile number, stage and phase in 32-bit unsigned arithmetic;
* ``stage_descriptor``: + the A descriptor built once per stage, a k-step adding 32 bytes;
* ``rounding_2``: + the TF32 rounding in two instructions (``rounded_operand_bits``);
* ``warp_specialized``: step 17 as shipped now (the three changes; should time as ``rounding_2``).

cuBLAS TF32 and SGEMM are timed in the same run. Shapes: 4096³ and 8192³ (full tiles), 3001×3000×1532 (the partial
build), 1024×1024×8192 (split-K). Then, at 8192³, the SM clock and board power while ``before``, ``rounding_2`` and
cuBLAS TF32 each run back to back for 3 s (NVML, as scripts/reference_kernels.py measures them), and whether every
build's C is bit for bit ``before``'s (random inputs with inf, NaN, the largest float and subnormals in A and B).

``--profile NAME`` launches one build twice at 4096³ and exits: for Nsight Compute (``ncu --launch-skip 1
--launch-count 1 --kernel-name regex:loop_instructions_NAME --metrics smsp__inst_executed.sum …``), which counts the
warp instructions each build executes.

Prediction: predictions/loop-instructions-before-run.md (written before the run).

    python -m experiments.loop_instructions [OUT.json]   # default experiments/results/experiment-loop-instructions-<gpu>.json
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from experiments import output_path, ratio, require_gpu, run_and_save

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (3001, 3000, 1532), (1024, 1024, 8192)]
SHIPPED = "warp_specialized"
#: Seconds each kernel runs back to back for the clock and power readings, and the part at the start left out.
LOAD_SECONDS, SETTLE_SECONDS = 3.0, 1.0


def builds() -> dict:
    """``{name: built}``: the four switch builds and step 17 as shipped."""
    import gemm_steps
    from gemm_steps.steps import warp_specialized
    from gemm_steps.toolkit.tuned import default_config

    from experiments.kernels import warp_specialized_loop_instructions as variant

    config = default_config(warp_specialized.SEARCH_SPACE)
    found = {name: variant.build(config, **switches) for name, switches in variant.SWITCHES.items()}
    found[SHIPPED] = gemm_steps.get_step(SHIPPED)
    return found


def ptx_kernels() -> dict:
    """Every switch build's fast kernel at the GPU's tiles, ``{label: (dispatcher, signature)}``: for reading its PTX
    and SASS on a machine without a GPU (the kernel module's docstring counts them)."""
    return {f"{name}_fast": (built.kernel("fast"), built.signature("fast"))
            for name, built in builds().items() if name != SHIPPED}


def summary(results: dict) -> dict:
    """Per shape ``"MxNxK"``: each build's TFLOPS and both cuBLAS', each build over the one before it, over ``before``
    and over cuBLAS TF32."""
    from experiments.kernels.warp_specialized_loop_instructions import SWITCHES

    chain = list(SWITCHES)
    tflops: dict = {}
    for r in results["records"]:
        tflops.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r.get("tflops")
    return {f"{m}x{n}x{k}": {
        "tflops": {name: by.get(name) for name in (*chain, SHIPPED, "cublas_tf32", "cublas")},
        "over_previous": {name: ratio(by.get(name), by.get(before)) for before, name in zip(chain, chain[1:])},
        "over_before": {name: ratio(by.get(name), by.get("before")) for name in (*chain[1:], SHIPPED)},
        "over_tf32": {name: ratio(by.get(name), by.get("cublas_tf32")) for name in (*chain, SHIPPED)}}
        for (m, n, k), by in tflops.items()}


def special_inputs(m: int, n: int, k: int, seed: int = 7):
    """Standard-normal A (m×k) and B (k×n) with inf, −inf, NaN, the largest float32 and subnormals placed in a few
    rows of A and columns of B (the rest of C stays finite)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    big, tiny = np.finfo(np.float32).max, np.float32(1e-40)
    a[3, 5], a[9, 100], a[17, 7], a[40, 33] = np.inf, -np.inf, np.nan, big
    b[11, 4], b[200, 8], b[5, 12], b[70, 30], b[71, 31] = np.inf, np.nan, big, tiny, -big
    a[50, :64] *= np.float32(1e-39)  # a row of subnormals
    return a, b


def bit_identity(found: dict, shapes) -> dict:
    """``{"MxNxK": {name: True/False}}``: whether each build's C is bit for bit the ``before`` build's (NaN where it
    has NaN), on :func:`special_inputs`."""
    import numpy as np
    from numba import cuda

    answer = {}
    for m, n, k in shapes:
        a, b = special_inputs(m, n, k)
        da, db = cuda.to_device(a), cuda.to_device(b)
        outputs = {}
        for name, built in found.items():
            c = cuda.device_array((m, n), np.float32)
            built.launch(da, db, c)
            outputs[name] = c.copy_to_host()
        first = outputs["before"]
        answer[f"{m}x{n}x{k}"] = {name: bool(np.array_equal(c.view(np.uint32), first.view(np.uint32)))
                                  for name, c in outputs.items() if name != "before"}
        answer[f"{m}x{n}x{k}"]["nan_elements"] = int(np.isnan(first).sum())
    return answer


def under_load(found: dict, names, size: int) -> dict:
    """SM clock (MHz) and board power (W) while each of ``names`` (builds, or ``cublas_tf32``) runs back to back for
    :data:`LOAD_SECONDS` at size³: medians over the samples after :data:`SETTLE_SECONDS`
    (:func:`gemm_steps.harness.gpu_clock.load_record`)."""
    from gemm_steps.harness.cublas import launch_cublas_tf32
    from gemm_steps.harness.gpu_clock import load_records

    def calls_of(a, b, c):
        return {name: (lambda: launch_cublas_tf32(a, b, c)) if name == "cublas_tf32" else
                (lambda built=found[name]: built.launch(a, b, c)) for name in names}
    return load_records(calls_of, size, LOAD_SECONDS, SETTLE_SECONDS)


def profile(name: str) -> None:
    """Two launches of build ``name`` at 4096³ (the first compiles), for Nsight Compute."""
    import numpy as np
    from numba import cuda

    built = builds()[name]
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.standard_normal((4096, 4096), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((4096, 4096), dtype=np.float32))
    c = cuda.device_array((4096, 4096), dtype=np.float32)
    for _ in range(2):
        built.launch(a, b, c)
    cuda.synchronize()


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/loop_instructions.py")
    if len(argv) > 2 and argv[1] == "--profile":
        profile(argv[2])
        return
    import json

    from gemm_steps.harness.bench import save

    out = output_path("loop-instructions", argv[1] if len(argv) > 1 else None)
    found = builds()
    entries = [SimpleNamespace(name=name, number=17, arithmetic="tf32", launch=built.launch)
               for name, built in found.items()]
    results = run_and_save(entries, SIZES, out, "step 17's k-loop with fewer instructions, one change at a time: "
                           "32-bit ring arithmetic, the A descriptor once per stage, the TF32 rounding in two "
                           "instructions (experiments/loop_instructions.py)", summary, width=20)
    results["bit_identical_to_before"] = bit_identity(found, [(512, 256, 320), (300, 260, 1000), (256, 128, 4096)])
    results["under_load_8192"] = under_load(found, ["before", "rounding_2", "cublas_tf32"], 8192)
    save(results, out)
    print(json.dumps({"bit_identical_to_before": results["bit_identical_to_before"],
                      "under_load_8192": results["under_load_8192"]}, indent=1))
    for shape, row in results["summary"].items():
        print(shape, {name: round(x, 3) for name, x in row["over_before"].items() if x},
              {name: round(x, 3) for name, x in row["over_tf32"].items() if x})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
