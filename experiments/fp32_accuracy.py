"""FP32 accuracy, class by class (issue 25, item 6): what the FP32 contract asks (docs/fp32_contract.md) and what each
kernel gives, on one GPU, in one run.

For every finite class of the contract (``fp32_contract.input_classes``, seeded by K as in tests/test_fp32_contract.py)
at one M × N (default 256 × 256: whole tiles of every tensor-core step) and K = 1 … 16,384, the normwise error
‖C − A·B‖_F / ‖|A|·|B|‖_F against float64 (``fp32_contract.normwise_error``) of

* cuBLAS SGEMM (strict FP32) and the contract's reference, the sequential float32 FMA sum
  (``fp32_contract.sgemm_model``, NumPy, computed in a pool of processes while the GPU works);
* every 3xTF32 step (``ARITHMETIC == "3xtf32"`` in the step registry: a new one joins by existing) and, for contrast,
  every TF32 step;
* ``gemm_steps.matmul`` at each precision (``dispatch.PRECISIONS``; the step it chose is recorded),

each beside the contract's bound, max(2 × the reference's error, 9u) (``fp32_contract.contract_bound``), and whether
it is kept. Then the specials (``fp32_contract.special_inputs``) at K = 64: is each kernel's NaN / +inf / −inf pattern
cuBLAS SGEMM's and the sequential sum's? ("finite overflow" gets B = |B| + 1 first, as in the GPU test, so that the
sum overflows in every order and the pattern does not depend on it.) Every output is NaN-poisoned before its launch.

    python -m experiments.fp32_accuracy [OUT.json]     # experiments/results/experiment-fp32-accuracy-<gpu>.json
    python -m experiments.fp32_accuracy OUT.json --size 8 8 --ks 1 8 --classes "standard normal" --specials "inf in A" \
        --only sequential three_tf32 "matmul tf32x3"      # a smaller run: some classes, specials, entries

On the simulator it runs too, at tiny sizes (tests/test_fp32_accuracy.py): there is no cuBLAS, so its entry is
recorded as unavailable and the specials are compared with the sequential sum only.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from experiments import output_path

DEFAULT_SIZE = (256, 256)
DEFAULT_KS = (1, 4, 32, 256, 1024, 4096, 16384)
SPECIALS_K = 64


def _reference_error(m: int, n: int, k: int, index: int) -> float:
    """The sequential FMA sum's error on class ``index`` at M × N × K (runs in a worker: inputs drawn again there,
    from the same seed, so nothing large crosses the process boundary)."""
    from gemm_steps.harness import fp32_contract as contract

    _, a, b = next(itertools.islice(contract.input_classes(m, n, k, seed=k), index, None))
    return contract.normwise_error(contract.sgemm_model(a, b), a, b)


def entries() -> list[dict]:
    """What is measured, in table order: cuBLAS SGEMM, the sequential sum, the 3xTF32 steps, the TF32 steps, matmul at
    each precision (the default first). ``unavailable``: why an entry cannot run here (absent if it can)."""
    import gemm_steps
    from gemm_steps.harness import dispatch
    from gemm_steps.harness.step import all_steps

    found = [{"name": "cublas", "kind": "cublas", "arithmetic": "fp32"},
             {"name": "sequential", "kind": "model", "arithmetic": "fp32"}]
    if gemm_steps.SIMULATOR:
        found[0]["unavailable"] = "cuBLAS needs a GPU (the kernels run on Numba's CUDA simulator)"
    for arithmetic in ("3xtf32", "tf32"):
        for step in all_steps():
            if step.arithmetic == arithmetic:
                entry = {"name": step.name, "kind": "step", "number": step.number, "arithmetic": arithmetic}
                if step.unavailable():
                    entry["unavailable"] = step.unavailable()
                found.append(entry)
    precisions = sorted(dispatch.PRECISIONS, key=lambda p: p != dispatch.DEFAULT_PRECISION)
    found += [{"name": f"matmul {p}", "kind": "matmul", "precision": p, "default": p == dispatch.DEFAULT_PRECISION,
               "arithmetic": "/".join(dispatch.PRECISIONS[p])} for p in precisions]
    return found


def _runner(entry: dict):
    """A function (A, B on the device) → C on the host, NaN-poisoned before the launch; None for the model."""
    from numba import cuda

    import gemm_steps

    if entry["kind"] == "model":
        return None
    if entry["kind"] == "cublas":
        from gemm_steps.harness.cublas import launch_cublas

        def launch(a, b, c):
            launch_cublas(a, b, c)
    elif entry["kind"] == "step":
        step = gemm_steps.get_step(entry["name"])

        def launch(a, b, c):
            step(a, b, out=c)
    else:
        def launch(a, b, c):
            gemm_steps.matmul(a, b, out=c, precision=entry["precision"])

    def run(a, b):
        c = cuda.to_device(np.full((a.shape[0], b.shape[1]), np.nan, np.float32))
        launch(a, b, c)
        return c.copy_to_host()
    return run


def measure(m: int, n: int, ks, classes=None, specials=None, specials_k: int = SPECIALS_K,
            workers: int | None = None, only=None) -> dict:
    """The whole run as a results document. ``classes`` / ``specials``: names to run (default: all of them);
    ``only``: the entries to run, by name (default: every one of :func:`entries`)."""
    from numba import cuda

    from gemm_steps.harness import bench, dispatch
    from gemm_steps.harness import fp32_contract as contract
    from gemm_steps.harness.environment import environment

    started = time.perf_counter()
    names = [name for name, _, _ in contract.input_classes(1, 1, 1)]
    special_names = [name for name, _, _ in contract.special_inputs(1, 1, 1)]
    classes = list(names if classes is None else classes)
    specials = list(special_names if specials is None else specials)
    unknown = [c for c in classes if c not in names] + [s for s in specials if s not in special_names]
    if unknown:
        raise SystemExit(f"unknown classes {unknown}; the classes are {names} and the specials {special_names}")

    # The reference's sequential sums, in worker processes (NumPy, a loop over k: the slow part at K = 16,384),
    # started before anything else so they run while the GPU works. Workers get one BLAS thread each.
    jobs = [(k, names.index(c)) for k in ks for c in classes]
    workers = workers if workers is not None else min(len(jobs), max(1, (os.cpu_count() or 1) - 1))
    pool, saved = None, {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if workers > 1:
        os.environ.update({v: "1" for v in saved})
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        futures = {job: pool.submit(_reference_error, m, n, *job) for job in jobs}
        for v, value in saved.items():
            if value is None:
                os.environ.pop(v)
            else:
                os.environ[v] = value

    def reference(k, index):
        return futures[(k, index)].result() if pool else _reference_error(m, n, k, index)

    found = entries()
    if only is not None:
        missing = set(only) - {e["name"] for e in found}
        if missing:
            raise SystemExit(f"unknown entries {sorted(missing)}; the entries are {[e['name'] for e in found]}")
        found = [e for e in found if e["name"] in only]
    runners = {e["name"]: _runner(e) for e in found if "unavailable" not in e}
    records = []
    for k in ks:
        for index, (name, a, b) in enumerate(contract.input_classes(m, n, k, seed=k)):
            if name not in classes:
                continue
            exact = a.astype(np.float64) @ b.astype(np.float64)
            ref = reference(k, index)
            bound = contract.contract_bound(ref)
            a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
            for entry in found:
                if entry["name"] not in runners:
                    continue
                run = runners[entry["name"]]
                with np.errstate(all="ignore"):
                    error = ref if run is None else contract.normwise_error(run(a_dev, b_dev), a, b, exact)
                record = {"step": entry["name"], "inputs": name, "M": m, "N": n, "K": k, "error": error,
                          "reference_error": ref, "bound": bound, "kept": bool(error <= bound)}
                if entry["kind"] == "matmul":
                    record["chosen"] = dispatch.choose(m, n, k, entry["precision"]).step_name
                records.append(record)
            print(f"K={k:<6} {name:38s} reference {ref:.2e}  "
                  + "  ".join(f"{r['step']} {r['error'] / bound:.2g}" for r in records[-len(runners):]), flush=True)
    if pool:
        pool.shutdown()

    special_records = []
    sgemm = runners.get("cublas")
    for name, a, b in contract.special_inputs(m, n, specials_k):
        if name not in specials:
            continue
        if name == "finite overflow":
            b = np.abs(b) + np.float32(1)  # every partial sum of row 0 grows: +inf in any order
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = contract.special_pattern(contract.sgemm_model(a, b))
            a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
            theirs = None if sgemm is None else contract.special_pattern(sgemm(a_dev, b_dev))
            for entry in found:
                if entry["name"] not in runners:
                    continue
                run = runners[entry["name"]]
                got = expected if run is None else contract.special_pattern(run(a_dev, b_dev))
                record = {"step": entry["name"], "inputs": name, "M": m, "N": n, "K": specials_k,
                          "elements_off_sequential": int((got != expected).sum()),
                          "same_as_sequential": bool((got == expected).all()),
                          "same_as_cublas": None if theirs is None else bool((got == theirs).all()),
                          "counts": {kind: int((got == code).sum()) for code, kind in ((1, "+inf"), (2, "-inf"),
                                                                                         (3, "nan"))}}
                if entry["kind"] == "matmul":
                    record["chosen"] = dispatch.choose(m, n, specials_k, entry["precision"]).step_name
                special_records.append(record)
        print(f"specials: {name:30s} " + "  ".join(f"{r['step']} {'=' if r['same_as_sequential'] else '≠'}"
                                                   for r in special_records[-len(runners):]), flush=True)

    return {"schema": bench.SCHEMA, "experiment": "fp32-accuracy", "environment": environment(),
            "method": {"error": "normwise: ||C - A.B||_F / || |A|.|B| ||_F, A.B and |A|.|B| in float64 "
                                "(fp32_contract.normwise_error)",
                       "reference": "sequential float32 FMA sum, c = fma(a_ik, b_kj, c) for k = 0 .. K-1 "
                                    "(fp32_contract.sgemm_model, NumPy)",
                       "bound": f"max({contract.FACTOR} x the reference's error, {contract.ONE_PRODUCT!r}) "
                                "(fp32_contract.contract_bound)",
                       "inputs": "fp32_contract.input_classes(M, N, K, seed=K); specials: "
                                 "fp32_contract.special_inputs(M, N, K), 'finite overflow' with B = |B| + 1",
                       "outputs": "NaN-poisoned before every launch", "seconds": time.perf_counter() - started},
            "contract": {"factor": contract.FACTOR, "one_product": contract.ONE_PRODUCT, "u": contract.U32},
            "M": m, "N": n, "ks": list(ks), "specials_k": specials_k, "classes": classes, "entries": found,
            "records": records, "specials": special_records}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.fp32_accuracy", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="where to write the results (default: experiments/results/…)")
    parser.add_argument("--size", nargs=2, type=int, default=DEFAULT_SIZE, metavar=("M", "N"))
    parser.add_argument("--ks", nargs="+", type=int, default=DEFAULT_KS)
    parser.add_argument("--specials-k", type=int, default=SPECIALS_K)
    parser.add_argument("--classes", nargs="+", help="finite classes to run (default: all)")
    parser.add_argument("--specials", nargs="*", help="special inputs to run (default: all; none with no names)")
    parser.add_argument("--workers", type=int, help="processes for the reference sums (default: CPUs − 1)")
    parser.add_argument("--only", nargs="+", help="entries to run, by name (default: all)")
    args = parser.parse_args(argv)
    from gemm_steps.harness.bench import save

    out = output_path("fp32-accuracy", args.out)
    results = measure(*args.size, args.ks, args.classes, args.specials, args.specials_k, args.workers, args.only)
    save(results, out)
    print(f"wrote {out} in {results['method']['seconds']:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
