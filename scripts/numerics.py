"""How the error of every step (and cuBLAS) grows with K: relative error against float64 for M = N = 256 and
K = 64 … 16384, on a GPU. Prints a table and writes JSON.

    python scripts/numerics.py OUT.json [--mn 256] [--ks 64 256 1024 4096 16384] [--seed 0] [--steps ...]

Method: one standard-normal float32 draw per K (the same A and B for every step and cuBLAS), each product
computed on the device into a NaN-poisoned output, compared with ``A @ B`` in float64 by
:func:`gemm_steps.harness.verify.relative_error`. The table also shows the error in units of eps32·√K: a float32
sum with random rounding errors has a relative error that grows like √K, so this column should stay roughly flat
(~0.1–0.3) for a correct kernel, and the tests' tolerance is 4 in these units. cuBLAS in strict FP32 lands in the
same range; TF32 would be ~2e-4 whatever K is.

The simulator can run it with tiny sizes only (``--mn 16 --ks 8 32``), and has no cuBLAS (that row then says so).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import gemm_steps  # first: it chooses GPU or simulator before Numba is imported
import numpy as np
from gemm_steps.harness.environment import environment
from gemm_steps.harness.verify import EPS32, relative_error, tolerance
from numba import cuda


def measure(mn: int, ks: list[int], seed: int, step_names: list[str] | None) -> dict:
    chosen = gemm_steps.steps() if not step_names else [
        gemm_steps.get_step(int(s) if s.isdigit() else s) for s in step_names]
    entries = [("cublas", 0, gemm_steps.cublas_matmul)] + [(s.name, s.number, s) for s in chosen]
    rng = np.random.default_rng(seed)
    rows = []
    for k in ks:
        a = rng.standard_normal((mn, k), dtype=np.float32)
        b = rng.standard_normal((k, mn), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
        for name, number, fn in entries:
            row = {"step": name, "number": number, "M": mn, "N": mn, "K": k, "tolerance": tolerance(k)}
            out = cuda.to_device(np.full((mn, mn), np.nan, dtype=np.float32))
            try:
                fn(a_dev, b_dev, out=out)
                c = out.copy_to_host()
            except Exception as exc:  # recorded (cuBLAS on the simulator, a failing step), never hidden
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                rows.append(row)
                continue
            row["unwritten"] = int(np.isnan(c).sum())
            row["rel_error"] = relative_error(c, a, b, ref)
            row["in_eps_sqrt_k"] = row["rel_error"] / (EPS32 * math.sqrt(k))
            row["max_abs_error"] = float(np.nanmax(np.abs(c - ref)))
            row["passed"] = row["unwritten"] == 0 and row["rel_error"] <= row["tolerance"]
            rows.append(row)
            print(f"K={k:6d} {name:16s} {row['rel_error']:.2e}", file=sys.stderr, flush=True)
    return {"environment": environment(), "method": {
        "inputs": f"standard normal float32, M = N = {mn}, one draw per K (seed {seed}), shared by all entries",
        "reference": "A @ B in float64 (NumPy)",
        "error": "gemm_steps.harness.verify.relative_error: ||C - ref|| / ||ref|| (Frobenius), cancellation-guarded",
        "output": "device arrays, output poisoned with NaN before each product",
        "tolerance": "4 * eps32 * sqrt(K), the test suite's (gemm_steps.harness.verify.tolerance)",
    }, "rows": rows}


def table(result: dict) -> str:
    rows = result["rows"]
    ks = sorted({r["K"] for r in rows})
    names = list(dict.fromkeys(r["step"] for r in rows))
    cell = {(r["step"], r["K"]): r for r in rows}

    def fmt(r):
        if r is None:
            return "—"
        if "error" in r:
            return "error"
        mark = "" if r["passed"] else " FAIL"
        return f"{r['rel_error']:.2e} ({r['in_eps_sqrt_k']:.2f}){mark}"

    header = "| step | " + " | ".join(f"K = {k}" for k in ks) + " |"
    lines = [header, "|---|" + "---|" * len(ks)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(fmt(cell.get((name, k))) for k in ks) + " |")
    lines.append("| tolerance | " + " | ".join(f"{tolerance(k):.2e} (4.00)" for k in ks) + " |")
    env = result["environment"]
    notes = [f"Relative error vs float64 (in parentheses: in units of eps32·√K), M = N = {rows[0]['M']}.",
             f"Measured on {env.get('gpu')} · driver {env.get('driver_cuda_version', env.get('smi_driver_version'))}"
             f" · numba-cuda {env.get('numba_cuda')} · NumPy {env.get('numpy')} · {env.get('date')}."]
    errors = [f"{r['step']} K={r['K']}: {r['error']}" for r in rows if "error" in r]
    return "\n".join(lines + [""] + notes + ([""] + ["Errors:"] + errors if errors else [])) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="where to write the JSON")
    parser.add_argument("--mn", type=int, default=256, help="M = N (default 256)")
    parser.add_argument("--ks", type=int, nargs="+", default=[64, 256, 1024, 4096, 16384])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", nargs="*", help="step names or numbers (default: all)")
    args = parser.parse_args()
    if gemm_steps.SIMULATOR and args.mn * max(args.ks) > 4096:
        print(f"refusing {args.mn}×{args.mn}×{max(args.ks)} on {gemm_steps.backend()}: it would take hours. "
              "Run on a GPU, or try e.g. --mn 16 --ks 8 32", file=sys.stderr)
        return 2
    result = measure(args.mn, args.ks, args.seed, args.steps)
    result["table_markdown"] = table(result)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(result["table_markdown"])
    failed = [r for r in result["rows"] if r["step"] != "cublas" and not r.get("passed")]
    cublas_failed = [r for r in result["rows"] if r["step"] == "cublas" and "error" not in r and not r["passed"]]
    return 1 if failed or cublas_failed else 0


if __name__ == "__main__":
    sys.exit(main())
