"""The shapes people multiply, by class: what ``gemm-steps bench --suite shapes`` times, and what the any-shape work
is measured on. The course's own benchmark uses powers of two, where its kernels are at their best; a learner's
first ``matmul`` rarely is one.

Each class names what makes it hard for a tiled kernel:

* **square** — the reference points (the course benchmark's sizes);
* **ragged** — no side a multiple of any tile, 1,000–4,000 per side: partial tiles in every direction; in three of
  them K or N is not a multiple of 4, so neither 128-bit loads nor the copy engine's tensor maps can be used, in the
  fourth (2500 × 3000 × 1500) K and N are (the copy engine reads A and B: steps 17 and 18 run their partial-tile
  builds);
* **wave boundary** — just over one wave of tiles on a 132-SM GPU (133 tiles of 128×256): the second wave is
  nearly empty;
* **K-heavy** — M·N ≤ 1024², K ≥ 8192: few tiles, long k-loops; the last two have C of one or two tiles
  (128 × 128 × 16384, and 150 × 181 × 10001 with K and N odd: A and B copied into readable rows), where only split-K
  fills the SMs (added 2026-11-29 after held-out seed 20261207's slowest shape, 101 × 116 × 13918, was of the kind
  and steps 17 and 18 lost their cap of 8 slices);
* **skinny** — one of M, N ≤ 128, the others ≥ 4096: most of a 128×256 tile is outside C; in the last two K and the
  long side are odd, so the big operand's rows are unreadable by the copy engine and few FLOPs share each of its bytes
  (about 50): steps 17 and 18 read it with their producer's threads (``THREAD_COPIES``; added 2026-11-29, first run
  in results/shapes-nvidia-h200-2026-11-29.json) — since their threshold went to 0 the same day, they copy it; in
  8000 × 250 × 6001 K and N are odd with ~121 FLOPs a copied
  byte, so steps 17 and 18 copy A and B into readable rows: a skinny product on that path (added 2026-11-29 after
  held-out seed 20261206's slowest shapes were of the kind, which the dispatch rule then judged by a model,
  ``dispatch.with_the_copy``; not yet in a suite run);
* **small** — under a millisecond at cuBLAS speed: a few tiles for 132 SMs, and the call's own overhead shows; in
  the last three K or N is not a multiple of 4, so steps 17 and 18 copy A and B (701 × 1401 × 171, 1501 × 251 × 333)
  or B (501 × 333 × 703) into readable rows first, a launch each (added 2026-11-30 after held-out seed 20261219's
  slowest small product, 689 × 1463 × 169, was of the kind; the three were timed first in
  experiments/results/experiment-half-tiles-3xtf32-nvidia-h200.json).
"""

from __future__ import annotations

SHAPE_CLASSES: dict[str, list[tuple[int, int, int]]] = {
    "square": [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)],
    "ragged": [(3001, 2999, 1531), (1531, 3989, 2003), (2777, 1111, 3333), (2500, 3000, 1500)],
    "wave boundary": [(2432, 1792, 4096), (2432, 1792, 1024)],
    "K-heavy": [(1024, 1024, 16384), (768, 768, 16384), (1024, 512, 8192), (128, 128, 16384), (150, 181, 10001)],
    "skinny": [(128, 8192, 4096), (4096, 64, 8192), (8192, 128, 4096), (100, 6001, 4003), (9001, 99, 5003),
               (8000, 250, 6001)],
    "small": [(256, 256, 256), (512, 512, 512), (640, 640, 640), (701, 1401, 171), (1501, 251, 333), (501, 333, 703)],
}


def suite_shapes() -> list[tuple[int, int, int]]:
    """Every shape of the suite, class by class."""
    return [shape for shapes in SHAPE_CLASSES.values() for shape in shapes]


def shape_class(m: int, n: int, k: int) -> str | None:
    """The suite class a shape belongs to (None for a shape not in the suite)."""
    for name, shapes in SHAPE_CLASSES.items():
        if (m, n, k) in shapes:
            return name
    return None
