"""Energy per product: step 18, its ablation builds and cuBLAS under a sustained load at 8192³ (issue 36: 3xTF32 ≥ 2.5×
cuBLAS SGEMM; "explain the difference from the kernel, not from the board").

At 8192³ the H200's tensor-core kernels run at the board's 700 W limit, so their speed is their work per joule.
experiments/presplit_a.py found a build doing ~1.17× step 18's work per clock at 8192³ and no faster: its clock fell.
This measures the joules directly: each kernel back to back for 3 s while NVML samples the SM clock and the board's
power every 20 ms (``gemm_steps.harness.gpu_clock.load_record``: medians after the first second), in one process —
cuBLAS SGEMM, cuBLAS TF32, step 18, and experiments/kernels/step_18_ablation.py's builds without the producer's split
of A, without the consumers' arithmetic, and without all three (a wrong C, times and power only). From the
back-to-back TFLOPS and the power: GFLOP a joule of each, and for the tensor-core kernels TF32 products a joule
(three a 3xTF32 FLOP). What 2.5× cuBLAS SGEMM would need at this power: its TFLOPS over the power.

Prediction: predictions/step-18-energy-before-run.md (committed before this script's first run).

Measured (``experiment-step-18-energy-nvidia-h200.json``, H200, 2026-11-30, one run; every tensor-core kernel at
690–692 W): cuBLAS TF32 343.3 TFLOPS at 1,560 MHz, 496 GFLOP of TF32 products a joule; step 18 104.0 TFLOPS at
1,710 MHz, **0.91×** cuBLAS TF32's products a joule; without the producer's split of A 1.02×, without the consumers'
arithmetic 1.02×, without all three 1.08× (123.5 TFLOPS, 2.42× cuBLAS SGEMM's 51.0 back to back). 2.5× SGEMM at this
power needs **1.12×**. Every range of the prediction held.

Again with the kernels in the opposite order (``--reverse``, ``experiment-step-18-energy-nvidia-h200-2.json``;
prediction ``predictions/step-18-energy-reverse-before-run.md``, written between the runs): step 18 **0.90×**, without
the split of A 1.01×, without the consumers' arithmetic 1.00×, without all three **1.11×** (128.1 TFLOPS at 1,695 MHz,
run first: 2.52× cuBLAS SGEMM back to back) against **1.11×** needed. Every range held, and by the rule written
before it the first run's "not even with its splits free" is withdrawn: with the splits and adds taken away entirely,
this design computes about as many TF32 products a joule as the target needs — short in one run, over in the other.
Step 18, with them, is ~0.90× cuBLAS TF32's in both.

    python -m experiments.step_18_energy [OUT.json] [--reverse]   # default experiments/results/experiment-step-18-energy-<gpu>.json

``--reverse`` runs the kernels in the opposite order (the board warms over the run: the order's own effect).
"""

from __future__ import annotations

import sys

from experiments import output_path, require_gpu

SIZE = 8192
LOAD_SECONDS, SETTLE_SECONDS = 3.0, 1.0
#: TF32 products a FLOP of each kernel's result: cuBLAS SGEMM none, cuBLAS TF32 one, every other kernel three.
PRODUCTS = {"cublas": 0, "cublas_tf32": 1}


def products(name: str) -> int:
    return PRODUCTS.get(name, 3)


def calls(a, b, c) -> dict:
    """name → call, in the order they run (``--reverse``: the opposite)."""
    from experiments.step_18_ablation import builds
    from gemm_steps.harness.cublas import launch_cublas_tf32
    from gemm_steps.harness.step import get_step

    import gemm_steps

    step18 = get_step("warp_specialized_3xtf32")
    ablation = builds()
    found = {"cublas": lambda: gemm_steps.cublas_matmul(a, b, out=c),
             "cublas_tf32": lambda: launch_cublas_tf32(a, b, c),
             "warp_specialized_3xtf32": lambda: step18(a, b, out=c)}
    for name in ("ablation@no_split_a", "ablation@no_split_b_no_fold", "ablation@none"):
        found[name] = lambda built=ablation[name]: built.launch(a, b, c)
    return found


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/step_18_energy.py")
    import json

    from gemm_steps.harness.environment import environment
    from gemm_steps.harness.gpu_clock import load_records

    reverse = "--reverse" in argv
    argv = [arg for arg in argv if arg != "--reverse"]
    out = output_path("step-18-energy", argv[1] if len(argv) > 1 else None)

    def in_order(a, b, c) -> dict:
        found = calls(a, b, c)
        return {name: found[name] for name in (reversed(found) if reverse else found)}

    def per_joule(name: str, record: dict) -> None:  # added to each record as it is made, and said
        record["gflop_per_joule"] = record["tflops_back_to_back"] * 1e3 / record["power_w"]
        if products(name):
            record["tf32_products_gflop_per_joule"] = record["gflop_per_joule"] * products(name)
        print(f"{name:30s} {record['tflops_back_to_back']:7.1f} TFLOPS  {record['sm_clock_mhz']:6.0f} MHz  "
              f"{record['power_w']:5.0f} W  {record['gflop_per_joule']:6.1f} GFLOP/J"
              + (f"  TF32 products {record['tf32_products_gflop_per_joule']:6.1f} GFLOP/J" if products(name) else ""),
              flush=True)

    kernels = load_records(in_order, SIZE, LOAD_SECONDS, SETTLE_SECONDS, each=per_joule)
    sgemm = kernels["cublas"]["tflops_back_to_back"]
    target = 2.5 * sgemm
    power = kernels["warp_specialized_3xtf32"]["power_w"]
    summary = {
        "target_tflops": target,
        "target_gflop_per_joule_at_step_18_power": target * 1e3 / power,
        "target_tf32_products_gflop_per_joule": 3 * target * 1e3 / power,
        "tf32_products_per_joule_over_cublas_tf32": {
            name: kernels[name]["tf32_products_gflop_per_joule"] / kernels["cublas_tf32"]["tf32_products_gflop_per_joule"]
            for name in kernels if products(name)},
        "over_cublas_sgemm_back_to_back": {name: r["tflops_back_to_back"] / sgemm for name, r in kernels.items()},
    }
    summary["target_tf32_products_per_joule_over_cublas_tf32"] = (
        summary["target_tf32_products_gflop_per_joule"] / kernels["cublas_tf32"]["tf32_products_gflop_per_joule"])
    results = {"experiment": "step 18, its ablation builds and cuBLAS under load at 8192³ (experiments/step_18_energy.py)",
               "environment": environment(), "size": SIZE,
               "method": {"load": f"back to back for {LOAD_SECONDS} s a kernel, NVML every 20 ms, medians after "
                                  f"{SETTLE_SECONDS} s (gemm_steps.harness.gpu_clock.load_record); no L2 flush",
                          "inputs": "standard normal float32, seed 0", "products": "TF32 products a FLOP: cuBLAS TF32 "
                          "1, step 18 and its ablation builds 3 (the ablations compute a wrong C)"},
               "order": "reversed" if reverse else "as listed",
               "prediction": "predictions/step-18-energy-before-run.md", "kernels": kernels, "summary": summary}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
