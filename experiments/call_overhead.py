"""What a call of `gemm_steps.matmul` costs on the host, beyond the kernel (issue 25 item 4: from 32–58 µs toward
the launch floor).

On device arrays, per shape, the time per call of:

* ``matmul``          — ``gemm_steps.matmul(a, b, out=c)`` repeated: after the first call, a replay (harness/api.py:
  the call was checked and its step chosen once; the step's launch plan is called with the three addresses);
* ``matmul_checked``  — the same call with the memo of checked calls emptied before each: validation, step choice and
  the Python layers every time (what every call cost before the memo, plus filing the call);
* ``matmul_new_out``  — ``gemm_steps.matmul(a, b)`` repeated: a replay plus a new result array each time;
* ``step_launch``     — the chosen step's own ``launch(a, b, c, 0)`` (no checks);
* ``plan``            — the step's recorded launch plan called directly (``toolkit/launch_plans.LaunchPlan``);
* ``configured``      — the plan's launches (the same kernels, grids and arguments) through Numba's dispatcher,
  configured once: ``kernel[grid, block, stream, shared](...)``;
* ``empty_kernel``    — for each of those launches an empty kernel with the same parameter list, through Numba's
  dispatcher: Numba's own floor;
* ``direct_empty_kernel`` — those empty kernels through ``cuda.core.launch``, arguments bound once
  (``DirectLaunch.bind``, as the plans launch): the floor of the call's launches from Python;
* ``driver_empty_kernel`` / ``matmul_driver`` — the same through the driver's ``cuLaunchKernel`` on parameters packed
  once (``DirectLaunch.bind_driver``; ``launch_plans.DRIVER_LAUNCHES``, off by default), measured last and checked
  bitwise against the ``cuda.core`` replay.

Three numbers each (µs per call, median of ROUNDS rounds, after a warm-up):
``<name>_us`` — wall time of CALLS back-to-back calls with one synchronize (the earlier runs' measure: the larger of
host and GPU time); ``<name>_host_us`` — host time of HOST_CALLS calls while a spinning kernel holds the GPU, so no
launch waits for the GPU (``held``: whether the hold outlasted every round); ``<name>_gpu_us`` — the GPU time of those
calls, back to back once the hold ends (CUDA events). Rows: three small squares where the host sets the pace, 1024³
(the H200 table sends it to step 14, a tensor-core step), and one row with the 3xTF32 tensor-core step this GPU runs
named by ``step=`` (step 14 on compute capability 9.0, else step 13: TENSOR_CORE_STEPS).

A cProfile of replayed and of checked ``matmul`` calls at 64³ goes beside the JSON
(``experiment-call-overhead-X.json`` → ``experiment-call-overhead-profile-X.txt``). The JSON is rewritten after each
stage, so a failure late in the run keeps the rest.
Usage, on a GPU from the repository root: python -m experiments.call_overhead OUT.json
"""

from __future__ import annotations

import cProfile
import inspect
import io
import json
import platform
import pstats
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

import gemm_steps
from gemm_steps.harness import api, dispatch
from gemm_steps.harness.environment import environment
from gemm_steps.harness.gpu_clock import hold_gpu
from gemm_steps.toolkit import launch_plans
from gemm_steps.toolkit.kernel_tools import DirectLaunch, device_pointer, quiet_small_grids
from numba import cuda

CALLS, HOST_CALLS, ROUNDS, WARMUP = 500, 200, 7, 20
#: Shapes matmul dispatches itself; then TENSOR_CORE_SHAPE with the 3xTF32 tensor-core step named (main)
SHAPES = [(64, 64, 64), (512, 512, 512), (640, 640, 640), (1024, 1024, 1024)]
TENSOR_CORE_SHAPE = (1024, 1024, 1024)
PROFILED_CALLS = 2000


def per_call(call) -> dict:
    """{us, host_us, gpu_us, held}: see the module docstring."""
    for _ in range(WARMUP):
        call()
    cuda.synchronize()
    wall = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        cuda.synchronize()
        wall.append((time.perf_counter() - start) / CALLS * 1e6)
    wall_us = statistics.median(wall)
    # A hold three times longer than the host could possibly take (host time ≤ wall time per call), at least 2 ms
    hold_ns = int(min(3 * HOST_CALLS * wall_us * 1e3 + 2e6, 5e8))
    host, gpu, held = [], [], True
    start_event, end_event = cuda.event(), cuda.event()
    for _ in range(ROUNDS):
        hold_gpu(0, hold_ns)
        start_event.record(0)
        start = time.perf_counter()
        for _ in range(HOST_CALLS):
            call()
        spent = time.perf_counter() - start
        end_event.record(0)
        end_event.synchronize()
        host.append(spent / HOST_CALLS * 1e6)
        gpu.append(start_event.elapsed_time(end_event) * 1e3 / HOST_CALLS)
        held = held and spent * 1e9 < hold_ns
    return {"us": wall_us, "host_us": statistics.median(host), "gpu_us": statistics.median(gpu), "held": held}


def add(row: dict, name: str, call) -> None:
    for key, value in per_call(call).items():
        row[f"{name}_{key}" if key != "us" else f"{name}_us"] = value


def recorded_launches(tiled, a, b, c) -> list:
    """The launches a plan of ``tiled`` makes for these arrays, as Numba launches them: (dispatcher, signature, grid,
    threads, shared bytes, stream, arguments, cluster) each (what ``LaunchPlan.record`` writes down)."""
    return launch_plans.recorded_launches(tiled, a, b, c, 0)


_EMPTY: dict = {}


def empty_twin(dispatcher, signature: str):
    """An empty kernel with the parameters of ``dispatcher``'s kernel, compiled for ``signature``."""
    if signature not in _EMPTY:
        function = getattr(dispatcher, "py_func", None)
        names = list(inspect.signature(function).parameters)
        namespace: dict = {}
        exec(f"def empty({', '.join(names)}):\n    pass\n", namespace)
        _EMPTY[signature] = cuda.jit(signature)(namespace["empty"])
    return _EMPTY[signature]


def relative_error(c, a, b) -> float:
    exact = a.astype(np.float64) @ b
    return float(np.linalg.norm(c - exact) / np.linalg.norm(np.abs(a).astype(np.float64) @ np.abs(b)))


def profile_text(calls: dict) -> str:
    parts = []
    for title, call in calls.items():
        for _ in range(WARMUP):
            call()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(PROFILED_CALLS):
            call()
        cuda.synchronize()
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
        parts.append(f"==== {title}: {PROFILED_CALLS} calls ====\n{text.getvalue()}")
    return "\n".join(parts)


#: The 3xTF32 tensor-core steps the shipped dispatch table measures, preferred first (step 14 needs compute capability
#: 9.0, step 13 8.0).
TENSOR_CORE_STEPS = ["warpgroup_mma", "three_tf32"]


def tensor_core_step():
    """The first of TENSOR_CORE_STEPS this GPU runs, or None."""
    found = [gemm_steps.get_step(name) for name in TENSOR_CORE_STEPS]
    return next((step for step in found if not step.unavailable()), None)


def measure_row(m: int, n: int, k: int, step, rng) -> tuple[dict, dict]:
    """One shape's row (cuda.core launches), and what the driver pass needs."""
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    a_dev, b_dev = cuda.to_device(a), cuda.to_device(b)
    c_dev = cuda.to_device(np.full((m, n), np.nan, np.float32))
    if step is None:
        choice = dispatch.choose(m, n, k)
        chosen, reason = dispatch.candidate(choice.step_name), choice.reason
    else:
        chosen, reason = step, "named with step="
    gemm_steps.matmul(a_dev, b_dev, step=step, out=c_dev)
    result = c_dev.copy_to_host()
    row = {"shape": [m, n, k], "chose": chosen.name, "step_number": chosen.number, "arithmetic": chosen.arithmetic,
           "named_step": step is not None, "reason": reason,
           "max_abs_err": float(np.abs(result - a.astype(np.float64) @ b).max()),
           "rel_err": relative_error(result, a, b)}

    def matmul():
        gemm_steps.matmul(a_dev, b_dev, step=step, out=c_dev)  # step=None: matmul's own choice
    row["remembered"] = api.is_remembered(a_dev, b_dev, c_dev, step, dispatch.DEFAULT_PRECISION)
    add(row, "matmul", matmul)
    add(row, "matmul_checked", lambda: (api.forget_calls(), matmul()))
    add(row, "matmul_new_out", lambda: gemm_steps.matmul(a_dev, b_dev, step=step))
    add(row, "step_launch", lambda: chosen.launch(a_dev, b_dev, c_dev, 0))
    tiled = chosen.tiled
    pointers = (device_pointer(a_dev), device_pointer(b_dev), device_pointer(c_dev))
    plan = tiled.thread_plans().get(tiled.plan_key(a_dev, b_dev, pointers, 0)) if tiled is not None else None
    extra = {"a": a, "b": b, "a_dev": a_dev, "b_dev": b_dev, "c_dev": c_dev, "matmul": matmul, "result": result}
    if plan is None:
        row["plan"] = None
        return row, extra
    launches = recorded_launches(tiled, a_dev, b_dev, c_dev)
    row["launches"] = len(launches)
    row["launch_grids"] = [str(grid) for _, _, grid, *_ in launches]
    add(row, "plan", lambda: plan(*pointers))
    configured = [(dispatcher[grid, threads, stream, shared] if shared else dispatcher[grid, threads, stream], args)
                  for dispatcher, _, grid, threads, shared, stream, args in launches]

    def through_numba():
        with quiet_small_grids():
            for kernel, args in configured:
                kernel(*args)
    add(row, "configured", through_numba)
    twins = [(empty_twin(dispatcher, signature), signature, args) for dispatcher, signature, *_, args in launches]
    numba_empty = [(kernel[1, 32, 0], args) for kernel, _, args in twins]

    def empty_through_numba():
        with quiet_small_grids():
            for kernel, args in numba_empty:
                kernel(*args)
    add(row, "empty_kernel", empty_through_numba)
    direct = [DirectLaunch(kernel, signature, 1, 32, 0, 0) for kernel, signature, _ in twins]
    bound = [launch.bind(*launch_plans.direct_arguments(args)) for launch, (_, _, args) in zip(direct, twins)]

    def empty_direct():
        for launch in bound:
            launch()
    add(row, "direct_empty_kernel", empty_direct)
    extra.update(direct=direct, twins=twins)
    return row, extra


def driver_pass(row: dict, extra: dict) -> None:
    """The driver's cuLaunchKernel: empty kernels, then matmul's replays with DRIVER_LAUNCHES on (checked bitwise
    against the cuda.core replay's result)."""
    if "direct" in extra:
        bound = [launch.bind_driver(*launch_plans.direct_arguments(args))
                 for launch, (_, _, args) in zip(extra["direct"], extra["twins"])]

        def empty_driver():
            for launch in bound:
                launch()
        add(row, "driver_empty_kernel", empty_driver)
    row["driver_launches_apply"] = "direct" in extra  # a step without a launch plan launches through Numba
    launch_plans.DRIVER_LAUNCHES = True
    try:
        c_dev = extra["c_dev"]
        c_dev.copy_to_device(np.full(c_dev.shape, np.nan, np.float32))
        extra["matmul"]()
        result = c_dev.copy_to_host()
        row["driver_matches_bitwise"] = bool(np.array_equal(result.view(np.uint32), extra["result"].view(np.uint32)))
        add(row, "matmul_driver", extra["matmul"])
    finally:
        launch_plans.DRIVER_LAUNCHES = False


def main() -> None:
    out_path = Path(sys.argv[1])
    stem = out_path.stem
    prefix = "experiment-call-overhead-"
    profile_path = out_path.with_name(stem.replace(prefix, prefix + "profile-", 1) + ".txt"
                                      if stem.startswith(prefix) else stem + "-profile.txt")
    env = environment()
    env.update({"cuda_core": _version("cuda-core"), "cuda_bindings": _version("cuda-bindings"),
                "cpu": _cpu_model(), "driver_launches_default": launch_plans.DRIVER_LAUNCHES})
    document = {"environment": env, "calls_per_round": CALLS, "host_calls_per_round": HOST_CALLS, "rounds": ROUNDS,
                "profile": profile_path.name, "rows": []}

    def write():
        out_path.write_text(json.dumps(document, indent=1) + "\n")

    rng = np.random.default_rng(0)
    cases = [(*shape, None) for shape in SHAPES]
    tensor_core = tensor_core_step()
    if tensor_core is not None:
        cases.append((*TENSOR_CORE_SHAPE, tensor_core))
    else:
        document["tensor_core_step"] = "none: this GPU runs no 3xTF32 step"
    extras = []
    for m, n, k, step in cases:
        row, extra = measure_row(m, n, k, step, rng)
        document["rows"].append(row)
        extras.append(extra)
        print(json.dumps({key: value for key, value in row.items() if key != "reason"}), flush=True)
        write()
    small = extras[0]
    profile_path.write_text(profile_text({
        "replayed matmul(a, b, out=c) at 64³": small["matmul"],
        "checked matmul(a, b, out=c) at 64³ (memo emptied before each call)":
            lambda: (api.forget_calls(), small["matmul"]()),
    }))
    write()
    for row, extra in zip(document["rows"], extras):  # last: a launch path not yet run on a GPU
        driver_pass(row, extra)
        print(json.dumps({key: row[key] for key in row if "driver" in key}), flush=True)
        write()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
