"""How fast is the readable copy of A or B (``tma_tiles.copy_rows_kernel``), and what did its grid-stride loop cost?

Steps 17 and 18 copy A (K not a multiple of 4) or B (N not) into rows the copy engine can read before their
partial-tile build runs. The shape suite of 2026-11-29 (results/shapes-nvidia-h200-2026-11-29.json) found both steps
slower on that path than the suite of 2026-11-28 (…-28-4.json) by about the same time per product — e.g. +29 µs at
3001×2999×1531 for step 17 and for step 18 — while every other row moved within ±4 %. In between, 9e593d4 gave the
copy a grid-stride loop so the simulator could run it with one block: ``for i in range(cuda.grid(1), rows * width,
cuda.gridsize(1))``. Numba widens that index to 64 bits, so ``i // width`` is a 64-bit division (a long software
routine on the GPU), and the ``range`` divides once more for its trip count.

Three builds of the same copy, each timed alone (CUDA events, L2 flushed, output poisoned, median of 50) on A's and
B's copies at the suite's three shapes with an unreadable matrix, and checked equal to NumPy's:

* ``one element a thread``: the kernel before 9e593d4 (``i = cuda.grid(1)``, ``if i < rows * width``);
* ``range loop``: the kernel from 9e593d4 to this experiment;
* ``32-bit loop``: a ``while`` loop on a 32-bit index, ``divide_u32`` (shipped in the first run's tree);
* ``four a thread``: the shipped kernel — the 32-bit loop over four floats a thread, one 128-bit store (second run);
* ``rows by blocks``: no index to divide — the grid's y walks the rows (striding on by its height), its x the row's
  1024-float chunks, a thread four floats 256 apart, so each load and each store of a warp is 128 consecutive bytes
  (third run, with a large copy of B added: 100×6001×6000, B 144 MB; prediction
  predictions/readable-copy-rows-before-run.md). It took 1.35–1.40× the shipped copy's time; the shipped copy moved
  3.9 TB/s at the large copy.

Prediction: predictions/readable-copy-speed-before-run.md (written before the run).

    python -m experiments.readable_copy_speed [OUT.json]   # default experiments/results/experiment-readable-copy-speed-<gpu>.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

from experiments import output_path, require_gpu

#: The suite's shapes whose A or B the copy engine cannot read (2026-11-29), and which matrices the step copies.
SHAPES = [(3001, 2999, 1531), (1531, 3989, 2003), (2777, 1111, 3333), (100, 6001, 6000)]
#: Floats a block of ``rows by blocks`` covers in a row: 256 threads, four floats each.
CHUNK = 1024
REPEATS = 50


def builds():
    """The three builds of the copy, by label."""
    from numba import cuda, float32, uint32

    from gemm_steps.toolkit.intrinsics import divide_u32
    from gemm_steps.toolkit.tma_tiles import copy_rows_kernel

    @cuda.jit
    def one_element_a_thread(a, b, c, m, n, k, which, width, rows_out):
        rows = m if which == 0 else k
        cols = k if which == 0 else n
        i = cuda.grid(1)
        if i < rows * width:
            row = i // width
            col = i - row * width
            value = float32(0.0)
            if col < cols:
                value = a[row * cols + col] if which == 0 else b[row * cols + col]
            rows_out[i] = value

    @cuda.jit
    def range_loop(a, b, c, m, n, k, which, width, rows_out):
        rows = m if which == 0 else k
        cols = k if which == 0 else n
        for i in range(cuda.grid(1), rows * width, cuda.gridsize(1)):
            row = i // width
            col = i - row * width
            value = float32(0.0)
            if col < cols:
                value = a[row * cols + col] if which == 0 else b[row * cols + col]
            rows_out[i] = value

    @cuda.jit
    def loop_32_bit(a, b, c, m, n, k, which, width, rows_out):
        rows = m if which == 0 else k
        cols = k if which == 0 else n
        total = uint32(rows * width)
        i = uint32(cuda.grid(1))
        stride = uint32(cuda.gridsize(1))
        while i < total:
            row = divide_u32(i, width)
            col = uint32(i - row * width)
            value = float32(0.0)
            if col < cols:
                value = a[row * cols + col] if which == 0 else b[row * cols + col]
            rows_out[i] = value
            i = uint32(i + stride)

    @cuda.jit
    def rows_by_blocks(a, b, c, m, n, k, which, width, rows_out):
        rows = m if which == 0 else k
        cols = k if which == 0 else n
        row = uint32(cuda.blockIdx.y)
        while row < rows:
            col = uint32(cuda.blockIdx.x * CHUNK + cuda.threadIdx.x)
            for j in range(4):
                at = uint32(col + j * (CHUNK // 4))
                if at < width:
                    value = float32(0.0)
                    if at < cols:
                        value = a[row * cols + at] if which == 0 else b[row * cols + at]
                    rows_out[row * width + at] = value
            row = uint32(row + cuda.gridDim.y)

    # label: (kernel, floats a thread)
    return {"one element a thread": (one_element_a_thread, 1), "range loop": (range_loop, 1),
            "32-bit loop": (loop_32_bit, 1), "four a thread": (copy_rows_kernel, 4),
            "rows by blocks": (rows_by_blocks, 0)}


def main(argv: list[str] = sys.argv) -> int:
    require_gpu("experiments/readable_copy_speed.py")
    from numba import cuda

    from gemm_steps.harness.bench import Timer
    from gemm_steps.harness.environment import environment
    from gemm_steps.toolkit.kernel_tools import ceil_div
    from gemm_steps.toolkit.tma_tiles import TmaTiles, readable_width

    out = output_path("readable-copy-speed", argv[1] if len(argv) > 1 else None)
    stream = cuda.stream()
    timer = Timer(stream)
    rng = np.random.default_rng(20261129)
    records = []
    for m, n, k in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        flat = [cuda.to_device(x.ravel(), stream=stream) for x in (a, b, np.zeros(1, np.float32))]
        for which, (rows, cols) in enumerate(((m, k), (k, n))):
            if cols % 4 == 0:
                continue  # the copy engine reads this one as it is: no copy
            width = readable_width(cols)
            expected = np.zeros((rows, width), np.float32)
            expected[:, :cols] = (a, b)[which]
            buffer = cuda.device_array(rows * width, dtype=np.float32, stream=stream)
            arguments = (*flat, np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(which), np.uint32(width), buffer)
            for label, (kernel, per_thread) in builds().items():
                blocks = ((ceil_div(width, CHUNK), min(rows, 65535)) if per_thread == 0 else
                          ceil_div(rows * width // per_thread, TmaTiles.COPY_THREADS))

                def launch():
                    kernel[blocks, TmaTiles.COPY_THREADS, stream](*arguments)
                timing = timer.time(launch, warmup=3, repeats=REPEATS, max_seconds=1.0, c=buffer)
                right = bool(np.array_equal(buffer.copy_to_host(stream=stream).reshape(rows, width), expected))
                moved = 4 * (rows * cols + rows * width)  # bytes read and written
                record = {"M": m, "N": n, "K": k, "matrix": "AB"[which], "rows": rows, "width": width,
                          "build": label, **timing, "GB_per_s": moved / timing["median_ms"] / 1e6, "right": right}
                records.append(record)
                print(f"{m}×{n}×{k} {'AB'[which]} ({rows}×{width}) {label:22s} {timing['median_ms'] * 1000:7.1f} µs "
                      f"{record['GB_per_s']:6.0f} GB/s {'right' if right else 'WRONG'}", flush=True)
    summary = {}
    for m, n, k in SHAPES:
        per = {}
        for r in records:
            if (r["M"], r["N"], r["K"]) == (m, n, k):
                per[r["build"]] = per.get(r["build"], 0.0) + r["median_ms"] * 1000
        summary[f"{m}x{n}x{k}"] = {"copies_us": per,
                                   "range_over_one_element": per["range loop"] / per["one element a thread"],
                                   "loop_32_bit_over_one_element": per["32-bit loop"] / per["one element a thread"],
                                   "four_over_32_bit_loop": per["four a thread"] / per["32-bit loop"],
                                   "rows_by_blocks_over_four": per["rows by blocks"] / per["four a thread"]}
    document = {"experiment": __doc__.split("\n\n")[0], "environment": environment(), "records": records,
                "summary": summary}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1))
    print(json.dumps(summary, indent=1))
    print(f"results: {out}")
    return 0 if all(r["right"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
