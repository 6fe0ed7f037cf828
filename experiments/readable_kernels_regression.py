"""Same-run check that the readable kernels are as fast as the template-generated kernels they replaced.

Steps 6–11 were rewritten from one text template with flags into one readable kernel per step, expanded by
:mod:`gemm_steps.toolkit.unroll`. The claim to check: nothing got slower. This times the old and the new kernel of
every rewritten step on the same inputs, in one process, with cuBLAS in the same run, over squares, the scheduling
shapes of lessons 10–11, K-heavy shapes and one ragged shape (which runs the edge kernels). It does that twice, old
before new and then new before old, so that neither version always runs second.

Usage (on a GPU, from the repository root): python -m experiments.readable_kernels_regression OLD_PACKAGE OUT.json
OLD_PACKAGE is a copy of the old package directory renamed ``gemm_steps_old`` (``git worktree add /tmp/old 3b036a2``,
then ``cp -r /tmp/old/gemm_steps DIR/gemm_steps_old`` and ``cp /tmp/old/results/tuned.json DIR/results/``: the old
package reads its tuning table from there). Writes the results document to OUT.json and prints new/old ratios.
"""
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

REWRITTEN = ["vectorized", "unrolled", "double_buffered", "warp_tiling", "persistent", "stream_k"]


def candidates(gemm_steps, gemm_steps_old) -> list:
    found = []
    for name in REWRITTEN:
        new, old = gemm_steps.get_step(name), gemm_steps_old.get_step(name)
        tiles = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N")
        if any(new.config.get(t) != old.config.get(t) for t in tiles):
            raise SystemExit(f"{name}: old and new use different tiles ({old.config} vs {new.config})")
        found += [SimpleNamespace(name=f"{name} (old template)", number=new.number, launch=old.launch, config=old.config),
                  SimpleNamespace(name=f"{name} (readable)", number=new.number, launch=new.launch, config=new.config)]
    return found


def shapes(gemm_steps) -> list:
    config = gemm_steps.get_step("stream_k").tiled.config
    bm, bn = config.BLOCK_M, config.BLOCK_N
    found = [(s, s, s) for s in (2048, 4096, 8192)]
    found += [(bm * rows, bn * cols, 4096) for rows, cols in [(12, 11), (18, 11), (24, 11)]]  # 1.0/1.5/2.0 waves, 132 SMs
    found += [(512, 1024, 16384), (1024, 1024, 8192)]  # K-heavy
    found += [(3001, 2999, 1531)]  # ragged: K % BLOCK_K != 0 puts the whole product on the edge kernels
    return found


def main() -> None:
    import gemm_steps  # first: picks the GPU before Numba is imported
    from gemm_steps.harness import bench

    old_dir, out = Path(sys.argv[1]).resolve(), sys.argv[2]
    sys.path.insert(0, str(old_dir.parent))
    import gemm_steps_old

    entries, sizes = candidates(gemm_steps, gemm_steps_old), shapes(gemm_steps)
    passes = []
    for number, order in enumerate((entries, [e for pair in zip(entries[1::2], entries[::2]) for e in pair]), 1):
        result = bench.run_benchmark(order, sizes, repeats=30, max_seconds=0.5)
        for record in result["records"]:
            record["pass"] = number
        passes.append(result)
    results = {**passes[0], "records": passes[0]["records"] + passes[1]["records"],
               "comparison": "old template kernels (gemm_steps_old) vs readable kernels; pass 1 old first, pass 2 "
                             "new first; same inputs within a pass"}
    bench.save(results, out)
    worst = 0.0
    for m, n, k in sizes:
        for name in REWRITTEN:
            def medians(label):
                return [r["median_ms"] for r in results["records"] if r["step"] == f"{name} ({label})"
                        and (r["M"], r["N"], r["K"]) == (m, n, k) and "median_ms" in r]
            old, new = medians("old template"), medians("readable")
            if len(old) != 2 or len(new) != 2:
                print(f"{m}x{n}x{k} {name}: missing or failed")
                continue
            ratios = [new[i] / old[i] for i in range(2)]
            ratio = statistics.mean(ratios)
            worst = max(worst, ratio)
            print(f"{m:5d}x{n:5d}x{k:5d} {name:16s} new/old time: pass 1 {ratios[0]:.3f}, pass 2 {ratios[1]:.3f}, "
                  f"mean {ratio:.3f}")
    print(f"slowest mean new/old time ratio: {worst:.3f}")


if __name__ == "__main__":
    main()
