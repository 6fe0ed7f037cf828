"""Same-run A/B of some steps: a copy of the package from an earlier commit against the working tree.

Times the old and the new kernel of each named step on the same inputs, in one process, with cuBLAS in the same
run, over squares, the scheduling shapes of lessons 10–11, K-heavy shapes and one ragged shape (which runs the edge
kernels). It does that twice, old before new and then new before old, so that neither version always runs second.

Usage (on a GPU, from the repository root):
    git archive COMMIT gemm_steps | tar -x -C DIR && mv DIR/gemm_steps DIR/gemm_steps_old
    python -m experiments.before_after DIR/gemm_steps_old OUT.json STEP [STEP ...] [MxNxK ...]
Writes the results document to OUT.json and prints new/old time ratios (below 1: the new kernel is faster).
"""
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace


def candidates(gemm_steps, gemm_steps_old, names, labels) -> list:
    """Each step twice, old then new, named ``"<step> (<label>)"``; both must use the same tiles."""
    from gemm_steps.harness.verify import arithmetic_of

    found = []
    for name in names:
        new, old = gemm_steps.get_step(name), gemm_steps_old.get_step(name)
        tiles = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N")
        if any(new.config.get(t) != old.config.get(t) for t in tiles):
            raise SystemExit(f"{name}: old and new use different tiles ({old.config} vs {new.config})")
        arithmetic = arithmetic_of(new)  # judged by its own tolerance (a TF32 step by TF32's)
        found += [SimpleNamespace(name=f"{name} ({labels[0]})", number=new.number, launch=old.launch, config=old.config,
                                  arithmetic=arithmetic),
                  SimpleNamespace(name=f"{name} ({labels[1]})", number=new.number, launch=new.launch, config=new.config,
                                  arithmetic=arithmetic)]
    return found


def shapes(gemm_steps) -> list:
    config = gemm_steps.get_step("stream_k").tiled.config
    bm, bn = config.BLOCK_M, config.BLOCK_N
    found = [(s, s, s) for s in (2048, 4096, 8192)]
    found += [(bm * rows, bn * cols, 4096) for rows, cols in [(12, 11), (18, 11), (24, 11)]]  # 1.0/1.5/2.0 waves, 132 SMs
    found += [(512, 1024, 16384), (1024, 1024, 8192)]  # K-heavy
    found += [(3001, 2999, 1531)]  # ragged: K % BLOCK_K != 0 puts the whole product on the edge kernels
    return found


def compare(old_dir: str, out: str, names: list[str], labels=("old", "new"), comparison: str = "",
            sizes: list | None = None) -> float:
    """Run both passes, save the results document, print the ratios; returns the slowest mean new/old time.
    ``sizes``: (M, N, K) shapes to time instead of :func:`shapes`'s."""
    import gemm_steps  # first: picks the GPU before Numba is imported
    from gemm_steps.harness import bench

    old_dir = Path(old_dir).resolve()
    sys.path.insert(0, str(old_dir.parent))
    gemm_steps_old = __import__(old_dir.name)

    entries, sizes = candidates(gemm_steps, gemm_steps_old, names, labels), sizes or shapes(gemm_steps)
    passes = []
    for number, order in enumerate((entries, [e for pair in zip(entries[1::2], entries[::2]) for e in pair]), 1):
        result = bench.run_benchmark(order, sizes, repeats=30, max_seconds=0.5)
        for record in result["records"]:
            record["pass"] = number
        passes.append(result)
    results = {**passes[0], "records": passes[0]["records"] + passes[1]["records"],
               "comparison": (comparison or f"{labels[0]} ({old_dir.name}) vs {labels[1]} (working tree)")
               + "; pass 1 old first, pass 2 new first; same inputs within a pass"}
    bench.save(results, out)
    worst = 0.0
    for m, n, k in sizes:
        for name in names:
            def medians(label):
                return [r["median_ms"] for r in results["records"] if r["step"] == f"{name} ({label})"
                        and (r["M"], r["N"], r["K"]) == (m, n, k) and "median_ms" in r]
            old, new = medians(labels[0]), medians(labels[1])
            if len(old) != 2 or len(new) != 2:
                print(f"{m}x{n}x{k} {name}: missing or failed")
                continue
            ratios = [new[i] / old[i] for i in range(2)]
            ratio = statistics.mean(ratios)
            worst = max(worst, ratio)
            print(f"{m:5d}x{n:5d}x{k:5d} {name:16s} new/old time: pass 1 {ratios[0]:.3f}, pass 2 {ratios[1]:.3f}, "
                  f"mean {ratio:.3f}")
    print(f"slowest mean new/old time ratio: {worst:.3f}")
    return worst


if __name__ == "__main__":
    # Steps by name; a shape MxNxK among them replaces the default shapes.
    chosen = [tuple(int(x) for x in a.split("x")) for a in sys.argv[3:] if a[0].isdigit()]
    compare(sys.argv[1], sys.argv[2], [a for a in sys.argv[3:] if not a[0].isdigit()], sizes=chosen or None)
