"""First-call time of `matmul` and some steps in a fresh process: with empty Numba and gemm-steps caches ("cold"),
then in a second process that finds Numba's on-disk cache ("warm"). Each child reports import time, first call
(compiles) and second call. Usage, on a GPU from the repository root: python -m experiments.first_call OUT.json
[WHAT:N ...] (default: matmul and six steps; e.g. stream_k:2432 for one). The children import the gemm_steps found
from the current directory, so running from a copy of an older commit measures that commit."""
import json, os, subprocess, sys, tempfile, time
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, gemm_steps
from numba import cuda
imported = time.perf_counter() - t0
what, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32); b = rng.standard_normal((n, n), dtype=np.float32)
cuda.synchronize()
t = time.perf_counter()
c = gemm_steps.matmul(a, b) if what == "matmul" else gemm_steps.get_step(what)(a, b)
first = time.perf_counter() - t
t = time.perf_counter()
c = gemm_steps.matmul(a, b) if what == "matmul" else gemm_steps.get_step(what)(a, b)
second = time.perf_counter() - t
err = float(np.abs(c - a.astype(np.float64) @ b).max())
print(json.dumps({"import_s": imported, "first_s": first, "second_s": second, "max_abs_err": err}))
"""


def main() -> None:
    report = []
    chosen = [(what, int(n)) for what, n in (arg.split(":") for arg in sys.argv[2:])] or [
        ("matmul", 2048), ("matmul", 2047), ("warp_tiling", 2047), ("unrolled", 2047), ("double_buffered", 2048),
        ("vectorized", 2047), ("persistent", 2047), ("stream_k", 2432)]
    for what, n in chosen:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": f"{cache}/numba", "GEMM_STEPS_CACHE": f"{cache}/gemm"}
            for kind in ("cold", "warm"):
                t = time.perf_counter()
                run = subprocess.run([sys.executable, "-c", CHILD, what, str(n)], env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t
                if run.returncode:
                    print(what, kind, "FAILED", run.stderr[-3000:], flush=True); continue
                rec = {"what": what, "n": n, "cache": kind, "process_wall_s": wall, **json.loads(run.stdout.strip().splitlines()[-1]),
                       "stderr": run.stderr}
                report.append(rec)
                print(f"{what:12s} {n} {kind}: import {rec['import_s']:.1f} s, first call {rec['first_s']:.1f} s, "
                      f"second {rec['second_s']*1e3:.0f} ms, process {wall:.1f} s", flush=True)
                print("   " + rec["stderr"].strip().replace("\n", "\n   "), flush=True)
    json.dump(report, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
