"""How does each TF32 kernel read its float32 operands — truncated, or rounded to nearest — and how does it add up
over K? cuBLAS TF32 against the course's TF32 steps, at 4096³ (issue 36: explain the gap from the reference).

At 4096³ cuBLAS TF32's error is 3.05e-4 and steps 17, 21 and 23's 4.68e-4 (results/bench-nvidia-h200-2026-11-29-2.json).
docs/tensor_cores.md said "the tensor core truncates A, where cuBLAS rounds it"; nothing had measured cuBLAS.

Probes, each one call of every kernel on 4096 × 4096 × 4096 device arrays (the shape picks cuBLAS's kernel; the
values do not), C poisoned with NaN first:

* ``A`` / ``B``: every C element is one product of an exact 1.0 and a probe value, the rest of A and B zero — in A's
  column 0 (B's row 0 all ones) or in B's row 0 (A's column 0 all ones). The values: 1 + 3·2⁻¹² (truncated: 1;
  rounded to nearest: 1 + 2⁻¹⁰), 1 + 2⁻¹¹ (a tie: away from zero 1 + 2⁻¹⁰, to even 1), 1 + 2⁻¹¹ + 2⁻²⁰ (nearest:
  1 + 2⁻¹⁰) and the negatives. Each result is named by the rounding that gives it.
* ``sum``: A all ones, B's column 1 then 2⁻²⁰ in the other K − 1 rows: the exact sum 1 + 4095·2⁻²⁰ (float32 adds it
  exactly, in order); the result's distance from it in units of 2⁻²⁰.
* ``error``: standard-normal A and B, the relative error against float64 (``harness.verify.relative_error``).

Prediction: predictions/tf32-operand-rounding-before-run.md (written before the run).

    python -m experiments.tf32_operand_rounding [OUT.json]
"""

from __future__ import annotations

import json
import sys

import numpy as np

from experiments import output_path, require_gpu

SIZE = 4096
KERNELS = ["cublas_tf32", "warp_specialized", "warp_specialized_stream_k", "cluster_stream_k_tma_store",
           "warpgroup_tf32", "tensor_cores", "cublas"]
#: value → what each rounding to TF32 (10 mantissa bits) makes of it
PROBES = {1 + 3 * 2.0 ** -12: {"truncated": 1.0, "nearest": 1 + 2.0 ** -10},
          1 + 2.0 ** -11: {"truncated": 1.0, "nearest, ties away": 1 + 2.0 ** -10, "nearest, ties even": 1.0},
          1 + 2.0 ** -11 + 2.0 ** -20: {"truncated": 1.0, "nearest": 1 + 2.0 ** -10}}


def classify(value: float, got: float) -> str:
    """Which rounding of ``value`` gave ``got`` (a sign-symmetric table: |value|, |got|)."""
    if got == abs(value) and abs(value) == value:
        return "exact (float32)"
    names = [name for name, result in PROBES[abs(value)].items() if result == abs(got)]
    if abs(got) == abs(value):
        names.append("exact (float32)")
    return " or ".join(names) or f"other ({got!r})"


#: The probe values and their negatives, in the order the probe's rows (A) or columns (B) cycle through them.
VALUES = np.array([v for p in PROBES for v in (p, -p)], dtype=np.float32)


def probe_inputs(operand: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A and B (n × n) whose product's first column (operand "A") or first row ("B") is 1.0 times the probe values,
    row i (column j) ``VALUES[i % 6]``; every other element 0."""
    a, b = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    lane = np.resize(VALUES, n)
    if operand == "A":
        a[:, 0], b[0, :] = lane, 1.0
    else:
        a[:, 0], b[0, :] = 1.0, lane
    return a, b


def read_as(c: np.ndarray, operand: str) -> dict:
    """What a kernel made of each probe value in A or B, by name (:func:`classify`), from its C."""
    got = c[:len(VALUES), 0] if operand == "A" else c[0, :len(VALUES)]
    return {f"{v!r}": classify(float(v), float(g)) for v, g in zip(VALUES, got)}


def main(argv: list[str] = sys.argv) -> None:
    require_gpu("experiments/tf32_operand_rounding.py")
    from numba import cuda

    from gemm_steps.harness.environment import environment
    from gemm_steps.harness.verify import relative_error
    from scripts.profile_steps import call_of

    out = output_path("tf32-operand-rounding", argv[1] if len(argv) > 1 else None)
    n = SIZE
    cases = {operand: probe_inputs(operand, n) for operand in ("A", "B")}
    a, b = np.ones((n, n), np.float32), np.full((n, n), 2.0 ** -20, np.float32)
    b[0, :] = 1.0
    cases["sum"] = (a, b)
    rng = np.random.default_rng(0)
    cases["error"] = (rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32))

    results: dict = {"environment": environment(), "size": n, "probes": {}}
    for case, (host_a, host_b) in cases.items():
        d_a, d_b = cuda.to_device(host_a), cuda.to_device(host_b)
        row: dict = {}
        for name in KERNELS:
            d_c = cuda.to_device(np.full((n, n), np.nan, np.float32))
            call_of(name, d_a, d_b, d_c)()
            cuda.synchronize()
            c = d_c.copy_to_host()
            if case in ("A", "B"):
                got = read_as(c, case)
            elif case == "sum":
                exact = 1 + (n - 1) * 2.0 ** -20
                got = {"value": float(c[0, 0]), "exact": exact,
                       "short_by_2^-20": (exact - float(c[0, 0])) / 2.0 ** -20,
                       "all_equal": bool(np.all(c == c[0, 0]))}
            else:
                got = {"relative_error": float(relative_error(c, host_a, host_b))}
            got["unwritten"] = int(np.isnan(c).sum())
            row[name] = got
            print(f"{case:5} {name:28} {json.dumps(got)}")
        results["probes"][case] = row
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
