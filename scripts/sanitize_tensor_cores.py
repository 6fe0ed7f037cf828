"""Launch the mma.sync tensor-core kernels (steps 12–13; all steps: scripts/sanitize.sh) once per shape, for
compute-sanitizer: ``compute-sanitizer --tool racecheck python scripts/sanitize_tensor_cores.py three_tf32``.

Shapes: 133×71×45 (ragged: edge kernel only), 257×260×64 (fast kernel on the full tiles, edge on the rest) and
256×512×64 (full 128×256 tiles: fast kernel only). Each output is NaN-poisoned and checked against float64; exit
status 0 only if every launch was written and right (TF32 tolerance 2e-3 for step 12, 1e-5 for step 13).
"""

from __future__ import annotations

import sys

import numpy as np


def main() -> int:
    import gemm_steps  # noqa: F401  (chooses GPU or simulator first)
    from numba import cuda

    from gemm_steps.steps import tensor_cores, three_tf32

    module = {"tensor_cores": tensor_cores, "three_tf32": three_tf32}[sys.argv[1]]
    limit = 2e-3 if module is tensor_cores else 1e-5
    rng = np.random.default_rng(0)
    ok = True
    for m, n, k in [(133, 71, 45), (257, 260, 64), (256, 512, 64)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        module.TUNING.kernels().launch(cuda.to_device(a), cuda.to_device(b), c)
        cuda.synchronize()
        host = c.copy_to_host().astype(np.float64)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        error = float(np.linalg.norm(host - exact) / np.linalg.norm(exact))
        right = not np.isnan(host).any() and error <= limit
        ok &= right
        print(f"{module.TUNING.kernels().name} {m}x{n}x{k}: error {error:.2e} {'ok' if right else 'WRONG'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
