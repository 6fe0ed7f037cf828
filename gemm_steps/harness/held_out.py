"""The held-out shapes of issue 37: drawn at random once, with a fixed seed, and never tuned on.

The dispatch table (``harness/dispatch.json``) was measured on the shape suite (``harness/shape_suite.py``), so at
those shapes ``matmul`` runs what was fastest there. Whether it generalizes is measured here, on shapes nobody chose:

* :func:`drawn` — :data:`DRAWN` shapes, each side log-uniform in [:data:`SIDE_MIN`, :data:`SIDE_MAX`] (a side of
  64 as likely as one of 16384, per octave), rounded to an integer, kept only if M·N·K ≥ :data:`MIN_PRODUCT` (a
  product worth a tensor core) and A, B and C together fit in :data:`MAX_BYTES` (a run on one 80 GB GPU, with the
  benchmark's copies beside them); a draw that misses either is thrown away and the next one taken, so the set is the
  log-uniform distribution *conditioned on* those two limits.
* :data:`CLASS_SHAPES` — a few shapes named by hand for each class of the suite that a random draw rarely hits (a grid
  just over one or two waves, K-heavy, skinny, small) and for ragged sides, none of them a suite shape or a shape an
  earlier held-out run used (``experiments/matmul_held_out.py``).

The seed and these numbers were committed before any measurement of this set (``git log`` of this file is the proof).
Nothing in the dispatcher may be fitted to these shapes: a rule changed after their results were seen is tuned on
them, and the set must be drawn again with a new seed (and said so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The draw's seed (the date it was drawn, 2026-11-29) and how many shapes it makes.
SEED = 20261129
DRAWN = 24
#: Each side log-uniform in [SIDE_MIN, SIDE_MAX].
SIDE_MIN, SIDE_MAX = 64, 16384
#: M·N·K at least this (2^27: 512³): below it a product is launch overhead more than arithmetic.
MIN_PRODUCT = 2**27
#: A, B and C together (float32) at most this: 6 GiB, so the run's inputs, outputs and copies fit on an 80 GB GPU.
MAX_BYTES = 6 * 2**30

#: Hand-named shapes, two per class of the shape suite (``shape_suite.SHAPE_CLASSES``' meanings; 132 SMs, tiles of
#: 128×256 for the wave counts). None is a suite shape or one of ``experiments/matmul_held_out.py``'s.
CLASS_SHAPES: dict[str, list[tuple[int, int, int]]] = {
    "ragged": [(4999, 3011, 2221), (7121, 5003, 1777)],  # no side a multiple of a tile; K and N odd
    "wave boundary": [(1152, 3840, 2048),  # 9 × 15 = 135 tiles: one wave and 3 tiles
                      (6784, 1280, 3072)],  # 53 × 5 = 265 tiles: two waves and 1 tile
    "K-heavy": [(896, 640, 14336), (1000, 700, 9999)],  # M·N ≤ 1024², K ≥ 8192
    "skinny": [(96, 12288, 6144), (10240, 80, 8192)],  # one of M, N ≤ 128, the others ≥ 4096
    "small": [(720, 480, 400), (448, 576, 544)],  # well under a millisecond at cuBLAS speed
}


@dataclass(frozen=True)
class HeldOutShape:
    """One shape of the set and where it came from: ``"drawn"`` or the class it was named for."""
    m: int
    n: int
    k: int
    kind: str

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def product(self) -> int:
        return self.m * self.n * self.k

    @property
    def bytes(self) -> int:
        """A, B and C in float32."""
        return matrix_bytes(self.m, self.n, self.k)


def matrix_bytes(m: int, n: int, k: int) -> int:
    """A (M×K), B (K×N) and C (M×N) in float32."""
    return 4 * (m * k + k * n + m * n)


def drawn(count: int = DRAWN, seed: int = SEED) -> list[tuple[int, int, int]]:
    """``count`` shapes drawn as the module docstring says (deterministic for a seed)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, int, int]] = []
    while len(shapes) < count:
        m, n, k = (int(round(2 ** x)) for x in rng.uniform(math.log2(SIDE_MIN), math.log2(SIDE_MAX), size=3))
        if m * n * k >= MIN_PRODUCT and matrix_bytes(m, n, k) <= MAX_BYTES:
            shapes.append((m, n, k))
    return shapes


def shapes() -> list[HeldOutShape]:
    """The whole held-out set: the drawn shapes, then the hand-named ones class by class."""
    return ([HeldOutShape(*shape, "drawn") for shape in drawn()]
            + [HeldOutShape(*shape, kind) for kind, named in CLASS_SHAPES.items() for shape in named])
