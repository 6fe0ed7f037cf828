"""First-call time of every step in a fresh process with empty caches (compile + one small launch), then again in
a second process that finds Numba's on-disk cache. Usage: python scripts/compile_times.py OUT.json [step ...]

Each measurement runs in its own subprocess so nothing compiled earlier helps. Reported per step:
cold_s: first call at 256³ (aligned: fast kernels only) minus a second call (so transfers are not counted);
cold_edge_s: the first call at 257³ after that (the edge kernel compiles); warm_s: cold_s's measurement in a
new process that reuses the on-disk cache from the cold one.
"""
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import gemm_steps
from numba import cuda
imported = time.perf_counter() - t0
step = gemm_steps.get_step(sys.argv[1])
rng = np.random.default_rng(0)
def call(n):
    a = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((n, n), dtype=np.float32))
    c = cuda.device_array((n, n), np.float32)
    cuda.synchronize()
    t = time.perf_counter(); step(a, b, out=c); cuda.synchronize()
    return time.perf_counter() - t
first = call(256); second = call(256); edge = call(257)
print(json.dumps({"import_s": imported, "first_s": first, "second_s": second, "edge_first_s": edge}))
"""


def child(step: str, env: dict) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD, step], env=env, capture_output=True, text=True, timeout=600)
    if run.returncode:
        raise RuntimeError(f"{step}: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    import gemm_steps

    names = sys.argv[2:] or [s.name for s in gemm_steps.steps()]
    report = {}
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": f"{cache}/numba", "GEMM_STEPS_CACHE": f"{cache}/gemm"}
            cold, warm = child(name, env), child(name, env)
        report[name] = {"cold_s": cold["first_s"] - cold["second_s"], "cold_edge_s": cold["edge_first_s"],
                        "warm_s": warm["first_s"] - warm["second_s"], "import_s": cold["import_s"], "raw": [cold, warm]}
        r = report[name]
        print(f"{name:16s} first call {r['cold_s']:6.2f} s  edge kernel {r['cold_edge_s']:6.2f} s  "
              f"with disk cache {r['warm_s']:6.2f} s  (import {r['import_s']:.1f} s)", flush=True)
    from gemm_steps.harness.environment import environment

    with open(sys.argv[1], "w") as f:
        json.dump({"environment": environment(), "compile_times": report}, f, indent=1)


if __name__ == "__main__":
    main()
