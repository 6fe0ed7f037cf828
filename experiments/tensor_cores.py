"""Tensor-core steps on a GPU (issue: tensor cores): are the intrinsics right, how fast and how accurate are steps
12 (TF32) and 13 (3xTF32), against cuBLAS SGEMM and cuBLAS TF32 in the same run?

1. ``to_tf32`` against :func:`round_to_tf32` (NumPy) on random, tie and special values; one warp's ``mma_tf32``
   against :func:`mma_tf32_reference` on random tiles — the fragment layout the simulator twin assumes.
2. Every configuration of the tensor-core search space: registers per thread, then ``run_benchmark`` (CUDA events,
   L2 flushed, NaN-poisoned outputs, fresh standard-normal inputs) at 4096³ and 8192³ with cuBLAS SGEMM, cuBLAS
   TF32 and step 11 in the same run.
3. Ragged shapes (edge kernels) against float64.
4. Accuracy against float64 over K = 64 … 16384 (M = N = 512) on standard-normal inputs and on inputs with a wide
   exponent range (each entry times 2^u, u uniform in −20…20): cuBLAS SGEMM, cuBLAS TF32, step 11, steps 12 and 13.

Usage, on a GPU from the repository root: python -m experiments.tensor_cores OUT.json [--quick]
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
from numba import cuda

from gemm_steps.harness.bench import run_benchmark, sampled_fp64_error, save
from gemm_steps.harness.cublas import launch_cublas_tf32
from gemm_steps.steps import stream_k, tensor_cores, three_tf32
from gemm_steps.toolkit.tensor_core_ops import mma_tf32, mma_tf32_reference, round_to_tf32, to_tf32


@cuda.jit
def _round_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = to_tf32(x[i])


@cuda.jit
def one_warp_mma(a, b, c, d):
    """One warp: lane (group, pair) passes A[group][pair], A[group+8][pair], A[group][pair+4], A[group+8][pair+4],
    B[pair][group], B[pair+4][group] and C[group][2·pair], C[group][2·pair+1], C[group+8][2·pair],
    C[group+8][2·pair+1] — the documented layout — does one mma and stores its D (tests/test_tensor_cores.py too)."""
    lane = cuda.threadIdx.x
    group, pair = lane // 4, lane % 4
    d0, d1, d2, d3 = mma_tf32(a[group, pair], a[group + 8, pair], a[group, pair + 4], a[group + 8, pair + 4],
                              b[pair, group], b[pair + 4, group],
                              c[group, 2 * pair], c[group, 2 * pair + 1], c[group + 8, 2 * pair],
                              c[group + 8, 2 * pair + 1])
    d[group, 2 * pair] = d0
    d[group, 2 * pair + 1] = d1
    d[group + 8, 2 * pair] = d2
    d[group + 8, 2 * pair + 1] = d3


def check_intrinsics() -> dict:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(100000).astype(np.float32),
                        (rng.standard_normal(1000) * 2.0 ** rng.integers(-126, 127, 1000)).astype(np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 3.4e38,
                                  1e-45, -1e-45], dtype=np.float32)])
    x_dev = cuda.to_device(x)
    out = cuda.device_array_like(x_dev)
    _round_kernel[(x.size + 255) // 256, 256](x_dev, out)
    rounded = out.copy_to_host()
    expected = round_to_tf32(x)
    same_bits = (rounded.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(rounded) & np.isnan(expected))
    mma_errors = []
    for trial in range(20):
        a = rng.standard_normal((16, 8)).astype(np.float32)
        b = rng.standard_normal((8, 8)).astype(np.float32)
        c = rng.standard_normal((16, 8)).astype(np.float32)
        d = cuda.device_array((16, 8), dtype=np.float32)
        one_warp_mma[1, 32](cuda.to_device(round_to_tf32(a)), cuda.to_device(round_to_tf32(b)),
                               cuda.to_device(c), d)
        expected_d = mma_tf32_reference(a, b, c)
        mma_errors.append(float(np.abs(d.copy_to_host() - expected_d).max() / np.abs(expected_d).max()))
    result = {"to_tf32_bit_exact": int(same_bits.sum()), "to_tf32_values": int(x.size),
              "to_tf32_mismatches": [(float(v), float(g), float(e)) for v, g, e in
                                     zip(x[~same_bits][:5], rounded[~same_bits][:5], expected[~same_bits][:5])],
              "mma_max_rel_error_vs_reference": max(mma_errors)}
    print(json.dumps(result), flush=True)
    return result


def whole_product_errors(launches: dict, a: np.ndarray, b: np.ndarray) -> dict:
    """``{name: ‖C − A·B‖ / ‖A·B‖}`` (float64 reference) for each ``launch(a, b, c)``, each into a NaN-poisoned C."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    errors = {}
    for name, launch in launches.items():
        c = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.float32))
        launch(cuda.to_device(a), cuda.to_device(b), c)
        errors[name] = float(np.linalg.norm(c.copy_to_host().astype(np.float64) - exact) / np.linalg.norm(exact))
    return errors


def accuracy_sweep() -> list:
    from gemm_steps.harness.cublas import launch_cublas

    launches = {"cublas": launch_cublas, "cublas_tf32": launch_cublas_tf32, "stream_k": stream_k.TUNING.kernels().launch,
                "tensor_cores": tensor_cores.TUNING.kernels().launch, "three_tf32": three_tf32.TUNING.kernels().launch}
    rng = np.random.default_rng(11)
    rows = []
    for inputs in ("standard normal", "wide exponent (x 2^u, u in -20..20)"):
        for k in (64, 256, 1024, 4096, 16384):
            a = rng.standard_normal((512, k), dtype=np.float32)
            b = rng.standard_normal((k, 512), dtype=np.float32)
            if inputs.startswith("wide"):
                a = (a * np.exp2(rng.uniform(-20, 20, a.shape))).astype(np.float32)
                b = (b * np.exp2(rng.uniform(-20, 20, b.shape))).astype(np.float32)
            rows.append({"inputs": inputs, "K": k, **whole_product_errors(launches, a, b)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    results_path = sys.argv[1]
    intrinsics = check_intrinsics()
    entries = [SimpleNamespace(name="stream_k", number=11, launch=stream_k.TUNING.kernels().launch,
                               config=asdict(stream_k.TUNING.kernels().config))]
    registers = {}
    configs = tensor_cores.SEARCH_SPACE[:1] if quick else tensor_cores.SEARCH_SPACE
    for module, number in ((tensor_cores, 12), (three_tf32, 13)):
        for config in configs:
            tiled = module.build(config)
            label = (f"{tiled.name} {config.BLOCK_M}x{config.BLOCK_N}x{config.BLOCK_K} "
                     f"{config.THREAD_M}x{config.THREAD_N}/{config.MIN_BLOCKS_PER_SM}")
            try:
                compiled = tiled.kernels["fast"].compile(tiled.signature("fast"))
                registers[label] = {"registers": compiled.regs_per_thread}
                try:
                    sass = compiled.inspect_sass()  # the compiled kernel's SASS (nvdisasm)
                    registers[label]["sass_hmma"] = sum("HMMA" in line for line in sass.splitlines())
                except Exception as exc:  # nvdisasm missing: say so
                    registers[label]["sass_hmma"] = f"unavailable: {exc}"
                print(f"{label}: {registers[label]}", flush=True)
            except Exception as exc:  # recorded, never hidden
                registers[label] = f"{type(exc).__name__}: {exc}"
                print(f"{label}: FAILED {exc}", flush=True)
                continue
            entries.append(SimpleNamespace(name=label, number=number, launch=tiled.launch, config=asdict(config)))
    sizes = [(4096, 4096, 4096)] if quick else [(4096, 4096, 4096), (8192, 8192, 8192)]
    results = run_benchmark(entries, sizes, repeats=20, include_cublas_tf32=True,
                            progress=lambda message: print(message, flush=True))
    # Ragged shapes: the edge kernels, checked against float64.
    ragged = {}
    rng = np.random.default_rng(5)
    for m, n, k in [(1000, 999, 1001), (129, 257, 67), (4095, 4097, 333)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        for module in (tensor_cores, three_tf32):
            c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
            module.TUNING.kernels().launch(cuda.to_device(a), cuda.to_device(b), c)
            host = c.copy_to_host()
            ragged[f"{module.TUNING.kernels().name} {m}x{n}x{k}"] = {"unwritten": int(np.isnan(host).sum()),
                                                           "sampled_rel_error_fp64": sampled_fp64_error(a, b, host)}
    print(json.dumps(ragged, indent=1), flush=True)
    accuracy = accuracy_sweep()
    results.update(experiment="tensor-core steps", intrinsics=intrinsics, registers=registers, ragged=ragged,
                   accuracy=accuracy)
    save(results, results_path)


if __name__ == "__main__":
    main()
