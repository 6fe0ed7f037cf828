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
import sys

from .before_after import compare

REWRITTEN = ["vectorized", "unrolled", "double_buffered", "warp_tiling", "persistent", "stream_k"]

if __name__ == "__main__":
    compare(sys.argv[1], sys.argv[2], REWRITTEN, labels=("old template", "readable"),
            comparison="old template kernels (gemm_steps_old) vs readable kernels")
