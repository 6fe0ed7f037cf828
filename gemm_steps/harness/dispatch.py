"""Which step ``gemm_steps.matmul`` runs for a shape: the one measured fastest at the nearest measured shape.

A library does not run one kernel for every shape: at 256³ the course's step 11 makes 2 tiles of 128×256 for 132
SMs and runs at a quarter of cuBLAS's speed, while step 3's 32×32 tiles fill the GPU and reach 60 % (same run,
H100, ``results/shapes-*.json``). So ``matmul`` looks the shape up in a **dispatch table**: shapes measured on a GPU
(``gemm-steps bench --suite shapes``), each with every measured step's time. The rule:

1. Find the measured shape nearest to (M, N, K), by distance in log₂ of each side (2× off in one side = 1).
2. If it is within :data:`NEAREST_WITHIN` (e.g. every side within about 2×), run the step that was fastest there
   (of the steps within :data:`TIE` of the fastest, the latest: the most general kernel).
3. Beyond the table's large products — a shape larger in every side than a measured product whose C holds at least
   :data:`LARGE_C` elements (12000³ against 4096³) — the step fastest at the nearest such product: more of the same
   tiles on the same kernel paths keep the steps' order.

   In 2 and 3 a tensor-core step is judged where it takes the kernel path it would take here (:func:`_same_path`):
   the nearest such shape within reach; where it would copy A or B into readable rows (steps 17 and 18) and was
   measured doing so nowhere near, at the nearest shape where it read them as they are, with the copy's time added
   (:func:`with_the_copy`, a model); else not at all.
4. Otherwise — no measured shape within reach, or the tensor-core steps measured near only on another kernel path
   than the one they would take here (their edge kernel, or copies to whole tiles) — the rest of the table decides:
   the tensor-core step that ran fastest against the FP32 units where the table measured it on that path, at
   products of this size (:func:`_tensor_core_evidence`), unless it ran slower than them there.
5. Otherwise — or with no table for any GPU — run the course's last step on the FP32 units (stream-K), the fastest
   of them on large squares.

Two rules on step 18's tiles come before and after (:func:`choose_from`; measured on other shapes than the held-out
set's, experiments/small_copies.py): step 18's 64 × 128 variant is left out where its tiles would not fit one wave
of the SMs (:func:`half_tiles_fit`), and where step 18 wins but step 22 would run its own persistent loop
over tiles of at most 8 k-tiles, step 22 runs (:func:`_short_tiles_on_step_22`).

Which steps may be chosen depends on the **precision** asked for (the names of Triton's ``input_precision``):

* ``"ieee"`` — the FP32 units only: every product and sum an IEEE float32 operation (steps 1–11);
* ``"tf32x3"`` (``matmul``'s default) — every kernel that keeps the FP32 contract (docs/fp32_contract.md): the FP32
  steps and the 3xTF32 steps 13, 14, 18 and 22, whichever was measured fastest;
* ``"tf32"`` — any kernel, the TF32 steps (12, 15–17: inputs rounded to TF32, ~3e-4 relative error) included.

Nor is a step this GPU cannot run (steps 14–18 need compute capability 9.0: ``Step.unavailable``), whatever the table
says.

Besides the steps, the table holds other ways to run their kernels (:func:`variants`): step 11 built for smaller
tiles (:data:`TILE_VARIANTS`: where 128×256 tiles leave most SMs idle, in small and skinny products, 64×64 or 128×128
tiles fill the GPU), and steps 17 and 18 on zero-padded copies of a ragged product (:data:`PADDED_VARIANTS`: every
tile on the fast kernel, none on the slower edge kernel, for the price of copying the matrices).

Tables, first match wins: ``$GEMM_STEPS_DISPATCH`` (a file you name), your own (``~/.cache/gemm-steps/dispatch.json``,
written by ``gemm-steps bench --suite shapes --record``), and the one shipped with the package
(``harness/dispatch.json``, made from the course's run of the suite). Each maps a GPU name to its measured shapes.
A GPU in no table uses another GPU's — the newest entry of the first file that has any (said so in :func:`choose`'s
reason): the newest was measured on the kernels as they are now, an older one may predate a kernel path. ``gemm-steps explain M
N K`` prints the choice and why.
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ..steps import COURSE
from ..toolkit.backend import user_cache
from ..toolkit.kernel_tools import ceil_div
from ..toolkit.tile_config import TileConfig
from ..toolkit.kept import Kept
from ..toolkit.tuned import Tuning, current_gpu_name
from .step import Step, all_steps

SHIPPED_TABLE = Path(__file__).resolve().parent / "dispatch.json"
#: The largest log₂ distance at which a measured shape still decides (√3 ≈ every side 2× off).
NEAREST_WITHIN = math.sqrt(3)
DEFAULT_REASON = "the course's last FP32 step: fastest on large squares"
#: Steps this close to the fastest count as tied (between processes the same kernel moves by up to ~3-4 %).
TIE = 0.03
#: What each precision lets ``matmul`` run: the arithmetic of the steps it may choose (a step's ``ARITHMETIC``).
PRECISIONS = {"ieee": ("fp32",), "tf32x3": ("fp32", "3xtf32"), "tf32": ("fp32", "3xtf32", "tf32")}
#: ``matmul``'s precision unless one is named: float32 accuracy by the FP32 contract.
DEFAULT_PRECISION = "tf32x3"


def check_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a ValueError that lists them."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(repr(p) for p in PRECISIONS)} (Triton's "
                         f"input_precision names), not {precision!r}")
    return precision


#: A step's kernel built for other tiles, named ``<step>@<BLOCK_M>x<BLOCK_N>``: more tiles, or fewer empty rows, where
#: the step's own leave most SMs idle or most of a tile empty.
#: * Step 11's, smaller: measured against the shipped tiles on an H100
#:   (experiments/results/experiment-small-tiles-nvidia-h100.json): 64×64 tiles 1.5–3× faster at 256³–640³ and 2.6×
#:   on 4096×64×8192, 128×128 tiles 1.7× on 8192×128×4096; both slower on large and K-heavy products, where the
#:   table keeps the shipped tiles.
#: * Step 17's with 128 rows (``wgmma`` n = 128) instead of 256: measured against the shipped 256 × 128 on an H200
#:   (experiments/results/experiment-hopper-tiles-nvidia-h200.json): 1.57× and 1.59× where M ≤ 128, 1.13× at M =
#:   200, 0.71–0.73× on 2000³ and 4096³.
#: * Step 18's with half its tile, 64 × 128 (two consumer warpgroups of 64 columns, as on 128 × 128): small products,
#:   where 128 × 128 tiles fill half the SMs with a few k-tiles each. Measured against the shipped tile on an H200
#:   (experiments/results/experiment-half-tiles-3xtf32-nvidia-h200.json, one run): 1.10–1.36× at 701×1401×171,
#:   704×1400×172, 1501×251×333, 501×333×703, 256³ and 512³ (0.75–1.16× cuBLAS SGEMM there), 1.06× at 640³,
#:   0.72–0.78× at 2048³ and 4096³; 128 × 64 (one consumer warpgroup) was slower than 64 × 128 at all nine shapes.
TILE_VARIANTS = {
    "stream_k@128x128": TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8, MIN_BLOCKS_PER_SM=2),
    "stream_k@64x64": TileConfig(BLOCK_M=64, BLOCK_N=64, BLOCK_K=16, THREAD_M=4, THREAD_N=4, MIN_BLOCKS_PER_SM=2),
    "warp_specialized@128x128": TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, THREAD_M=8, THREAD_N=8,
                                           MIN_BLOCKS_PER_SM=1),
    "warp_specialized_3xtf32@64x128": TileConfig(BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, THREAD_M=4, THREAD_N=8,
                                                 MIN_BLOCKS_PER_SM=1),
}

def tile_variants() -> list[Step]:
    """A step for each of :data:`TILE_VARIANTS`' configurations: step 11 (stream-K, with step 10's kernel as its
    data-parallel fallback), step 17 or step 18 (their full-tile, partial-tile and split-K builds) on other tiles, named
    ``<step>@…``, that ``matmul`` may choose and the shape suite times beside the course's. Each builds its kernels on
    first use and compiles them on first launch; on the simulator step 17's runs the step's simulator tiles."""
    return [_variant(name) for name in TILE_VARIANTS]


#: The tensor-core steps whose fast kernel ``matmul`` may also run on zero-padded copies of a ragged product
#: (:class:`~gemm_steps.toolkit.padded_tiles.PaddedTiles`): ``{candidate name: step name}``. Their edge kernels are
#: other, slower steps' (K = 3333 sends every tile of step 18 to step 14's), so copying A, B and C into whole tiles
#: can pay; the shape suite measures where.
PADDED_VARIANTS = {"warp_specialized+padded": "warp_specialized",
                   "warp_specialized_3xtf32+padded": "warp_specialized_3xtf32"}


def padded_variants() -> list[Step]:
    """A step for each of :data:`PADDED_VARIANTS`: the step's own kernels (the same build, not a second one:
    ``toolkit.tuned.built``), launched through :class:`~gemm_steps.toolkit.padded_tiles.PaddedTiles` (``pads``)."""
    return [_variant(name) for name in PADDED_VARIANTS]


@functools.lru_cache(maxsize=None)
def _variant(name: str) -> Step:
    """The step of one tile variant or padded candidate, made once per name."""
    if name in PADDED_VARIANTS:
        step = next(s for s in all_steps() if s.name == PADDED_VARIANTS[name])
        return Step(step.number, step.module, name=name, tuning=step.tuning, pads=True)
    base, config = _base_step(name), TILE_VARIANTS[name]
    module = next(s.module for s in all_steps() if s.name == base)
    if base == "stream_k":  # with step 10's kernel where the split leaves nothing to stream-K
        tuning = Tuning(module.build_with_fallback, name, [config])
    else:
        tuning = Tuning(module.build, name, [config], simulator=module.SIMULATOR_CONFIG)
    return Step(COURSE.index(base) + 1, module, name=name, tuning=tuning)


def variants() -> list[Step]:
    """Everything ``matmul`` may choose besides the course's steps (the shape suite times them all)."""
    return tile_variants() + padded_variants()


def _base_step(name: str) -> str:
    """The course step a candidate runs the kernel of (a step's own name for a step)."""
    return PADDED_VARIANTS.get(name, name).split("@")[0]


@functools.lru_cache(maxsize=None)
def candidate(name: str):
    """A step or a tile variant, by name: what :func:`choose` may return (found once per name)."""
    if name in TILE_VARIANTS or name in PADDED_VARIANTS:
        return _variant(name)
    return next(s for s in all_steps() if s.name == name)


@dataclass(frozen=True)
class Choice:
    step_name: str
    reason: str
    nearest: tuple[int, int, int] | None = None  # the measured shape that decided, if one did
    pct_of_cublas: dict | None = None  # {step name: % of cuBLAS} at that shape
    gpu: str | None = None  # the GPU that shape was measured on
    #: {step name: (shape, % of cuBLAS)}: where each step was judged — the nearest shape, or another one where its
    #: kernel path was the one it takes here; a step of ``pct_of_cublas`` missing here was not judged at all
    judged: dict | None = None
    #: the steps of ``judged`` whose % is modelled, not measured: a step that copies A or B into readable rows here,
    #: judged where it read them as they are with the copy's time added (:func:`with_the_copy`)
    modelled: tuple = ()


def user_table() -> Path:
    explicit = os.environ.get("GEMM_STEPS_DISPATCH")
    if explicit:
        return Path(explicit)
    return user_cache() / "dispatch.json"


def table_from_results(results: dict) -> dict:
    """A dispatch table entry from a benchmark results document: {"gpu", "date", "shapes": [[m, n, k, {step:
    median ms}, cuBLAS median ms], …]} — every shape with cuBLAS and at least one successful step (cuBLAS TF32, timed
    beside them, is a baseline, not a candidate: left out)."""
    by_shape: dict = {}
    for r in results["records"]:
        if "error" in r or r.get("median_ms") is None:
            continue
        by_shape.setdefault((r["M"], r["N"], r["K"]), {})[r["step"]] = r["median_ms"]
    shapes = [[*shape, {s: ms for s, ms in times.items() if not s.startswith("cublas")}, times["cublas"]]
              for shape, times in sorted(by_shape.items()) if "cublas" in times and len(times) > 1]
    env = results.get("environment", {})
    return {"gpu": env.get("gpu"), "date": env.get("date"), "shapes": shapes}


def record(results: dict, path: Path | None = None) -> Path:
    """Add a run's table to a dispatch table file (yours by default), under its GPU's name."""
    path = path or user_table()
    entry = table_from_results(results)
    existing = json.loads(path.read_text()) if path.exists() else {}
    existing[entry["gpu"]] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(existing, indent=1) + "\n")
    forget()
    return path


def forget() -> None:
    """Forget the tables read and the decisions made (the next :func:`choose` reads the tables again): what a new
    table (:func:`record`) does, and what a test that changes the tables calls."""
    _CHOICES.clear()
    _TABLE.clear()
    _TABLE_FILE.clear()


_TABLE: dict = {}
_TABLE_FILE: dict = {}  # gpu → the file its entry came from


def table(gpu: str | None) -> dict | None:
    """The table entry for ``gpu`` (or for another GPU, when no table has this one); None without any table."""
    if gpu not in _TABLE:
        found = found_in = None
        for path in (user_table(), SHIPPED_TABLE):
            if not path.exists():
                continue
            try:
                tables = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"the dispatch table {path} cannot be read ({exc}); fix or delete it") from exc
            if gpu in tables:
                found, found_in = tables[gpu], path
                break
            if found is None and tables:
                found = max(tables.values(), key=lambda entry: str(entry.get("date") or ""))  # the newest GPU's,
                found_in = path  # unless a later file has this GPU's
        _TABLE[gpu], _TABLE_FILE[gpu] = found, found_in
    return _TABLE[gpu]


def table_file(gpu: str | None) -> Path | None:
    """The file :func:`table` read ``gpu``'s entry from (None without any table)."""
    table(gpu)
    return _TABLE_FILE.get(gpu)


def distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """How far apart two shapes are: Euclidean distance of (log₂ M, log₂ N, log₂ K)."""
    return math.sqrt(sum(math.log2(x / y) ** 2 for x, y in zip(a, b)))


def fast_share(name: str, m: int, n: int, k: int) -> float:
    """The share of C's elements that step (or tile variant) ``name`` computes on its fast kernel at M×N×K: 1 for a
    step without one; for a tiled step, the full tiles' share where K and N allow the 128-bit path (else 0); for a
    persistent step, 1 or 0 (it runs one variant over every tile); for a step with a partial-tile build (steps 17
    and 18: ``TmaTiles.partial``), 1: every tile runs its fast kernel's loop, after copying A or B into rows the copy
    engine can read where K or N is not a multiple of 4 (:func:`_same_path` tells those apart). A 3xTF32 step's edge
    kernel is several times slower than its fast one, an FP32 step's barely: a measurement says little about a shape
    whose path differs."""
    step = candidate(name)
    tiled = step.tiled
    if tiled is None or name in PADDED_VARIANTS:  # a padded candidate runs the fast kernel on every tile
        return 1.0
    if _has_partial_build(name):
        return 1.0  # whole tiles on the fast kernel, any other shape on its partial-tile build
    from ..toolkit.backend import SIMULATOR
    from ..toolkit.persistent_tiles import PersistentTiles
    from ..toolkit.tuned import default_config

    # The tiles a GPU runs (the table was measured on one), also where the simulator runs smaller ones
    search_space = getattr(getattr(step, "module", None), "SEARCH_SPACE", None)
    config = TILE_VARIANTS.get(name) or (default_config(search_space) if SIMULATOR and search_space else tiled.config)
    if k % config.BLOCK_K or n % 4:
        return 0.0
    if isinstance(tiled, PersistentTiles):
        return float(m % config.BLOCK_M == 0 and n % config.BLOCK_N == 0)
    return (m // config.BLOCK_M * config.BLOCK_M) * (n // config.BLOCK_N * config.BLOCK_N) / (m * n)


#: Tiles in about two waves of one block an SM on an H100/H200 (132 SMs): in a grid this small an edge tile runs
#: beside the full ones, not after many waves of them, so the slowest block — an edge tile on a tensor-core step's
#: edge kernel, several times slower — sets the time.
FEW_TILES = 264


def _mostly_fast(name: str, m: int, n: int, k: int) -> bool:
    """Whether a tensor-core step's time at M×N×K is its fast kernel's: most of C on full tiles, and either no edge
    tile or enough tiles that the edge tiles are a small part of the work. 700×700×12000 has 25 full tiles of 36
    (fast share 0.84), but its 11 edge tiles each run all of K on step 14's edge kernel while step 18's full tiles
    split K five ways: 21 % of cuBLAS SGEMM where 768×768×16384 ran 181 % (H200, held-out run of 2026-11-26)."""
    share = fast_share(name, m, n, k)
    if share >= 1.0:
        return True
    config = TILE_VARIANTS.get(name) or candidate(name).tiled.config
    tiles = ceil_div(m, config.BLOCK_M) * ceil_div(n, config.BLOCK_N)
    return share >= 0.5 and tiles > FEW_TILES


def _same_path(name: str, a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Whether ``name`` takes the same kernel path at shapes a and b (:func:`_mostly_fast`). Only asked of the
    tensor-core steps: the FP32 steps' guarded kernels run nearly as fast as their fast ones (step 11: 87–91 % of
    cuBLAS on the suite's ragged shapes, 90 % at 4096³), so for them the nearest shape says more than the path does."""
    if _step_arithmetic(name) == "fp32":
        return True
    if name in PADDED_VARIANTS:  # the fast kernel everywhere; what differs is whether the matrices are copied
        return _copies(name, *a) == _copies(name, *b)
    if _schedule(name, *a) != _schedule(name, *b):  # steps 21, 22: their own kernel, or step 17's/18's split-K
        return False
    if _has_partial_build(name):  # the same: whether A or B is read as it is, copied into readable rows, or read
        return _row_path(name, *a) == _row_path(name, *b)  # by the producer's threads
    return _mostly_fast(name, *a) == _mostly_fast(name, *b)


#: The SMs of the GPUs the shipped tables were measured on (an H100 SXM, an H200: 132), for a schedule that depends on
#: them (:func:`_schedule`): the same count for the measured shape and for this one, on a GPU or a CPU (``explain``).
TABLE_SMS = 132


def _schedule(name: str, m: int, n: int, k: int) -> str:
    """Which kernel a step that leaves some products to another step's build runs at M×N×K, with the tiles and SMs of
    a GPU: ``"step 17"`` where step 21's ``FALLBACK_RULE`` (``warp_specialized_stream_k.runs_step_17``: step 17
    splits K) hands the product to its ``FALLBACK_STEP``, else ``"own"``. Judged on a product where step 21 ran step
    17, it said nothing of its own kernel: seed 20261213's set (results/held-out-nvidia-h200-2026-11-29-12.json) ran
    step 21's stream-K at 94×13363×1051 at 0.56× cuBLAS TF32, chosen on a skinny suite shape where it had run step
    17's split-K. Step 22 likewise (``"step 18"``). A step without a ``FALLBACK_RULE``: ``"one"``."""
    module = candidate(name).module
    rule = getattr(module, "FALLBACK_RULE", None)
    if rule is None:
        return "one"
    config = _gpu_tiles(name)
    tiles = ceil_div(m, config.BLOCK_M) * ceil_div(n, config.BLOCK_N)
    return f"step {_step_number(module.FALLBACK_STEP)}" if rule(tiles, ceil_div(k, config.BLOCK_K), TABLE_SMS) else "own"


#: The readable copy's pace on an H200, bytes read and written a second, a launch included: the slowest copy of
#: experiments/results/experiment-readable-copy-speed-nvidia-h200-2.json (four floats a thread: 2.3–3.1 TB/s).
READABLE_COPY_BYTES_PER_S = 2.3e12


def readable_copy_seconds(m: int, n: int, k: int) -> float:
    """The modelled time of the readable copies at M×N×K (fresh, 16-byte-aligned arrays): A where K is not a multiple
    of 4, B where N is not, each read and written widened to a multiple of 4 floats, at
    :data:`READABLE_COPY_BYTES_PER_S`."""
    from ..toolkit.tma_tiles import readable_width

    copied_a = 4 * (m * k + m * readable_width(k)) if k % 4 else 0  # read, and written widened
    copied_b = 4 * (k * n + k * readable_width(n)) if n % 4 else 0
    return (copied_a + copied_b) / READABLE_COPY_BYTES_PER_S


def with_the_copy(name: str, row: list, here: tuple[int, int, int]) -> float:
    """The % of cuBLAS a step with a partial-tile build is modelled to reach at ``here``, where it copies A or B into
    readable rows, from a measured ``row`` where it read them as they are: its pace there (FLOPs a second) carried to
    this shape's FLOPs, plus :func:`readable_copy_seconds`, against cuBLAS's % at that row — the nearest-shape rule's
    assumption, with the copy's time added. On the suite of 2026-11-29 (…-29-3.json), from 2500×3000×1500 it gave
    step 17 at the three copy shapes 0.85–1.01× its measured TFLOPS, step 18 0.88–1.07×."""
    kernel_ms = math.prod(here) * row[3][name] / math.prod(row[:3])  # the measured row's time, scaled by the FLOPs
    copy_ms = 1e3 * readable_copy_seconds(*here)
    return 100 * row[4] / row[3][name] * kernel_ms / (kernel_ms + copy_ms)


def _readable_rows(name: str, here: tuple[int, int, int], measured: list, within: float) -> list:
    """The rows within ``within`` of ``here`` where ``name`` read A and B as they are — if it has a partial-tile build
    and copies A or B here (else none: :func:`with_the_copy` models only that)."""
    if not _has_partial_build(name) or _row_path(name, *here) != "copied":
        return []
    return _measured_on(name, "as they are", here, measured, within)


def _copied_rows(name: str, here: tuple[int, int, int], measured: list, within: float) -> list:
    """The rows within ``within`` of ``here`` where ``name`` copied A or B into readable rows first — if it has a
    partial-tile build and reads them as they are here. Its time there bounds its time here from below: the same
    kernel on the same tiles, without the copy. 1527×9584×1592 (K a multiple of 4, odd M and N) had step 17 and 21
    measured near only at 1531×3989×2003 (K odd: A copied), and went to step 20's edge kernel at half their speed
    (held-out seed 20261217, looked at before its run)."""
    if not _has_partial_build(name) or _row_path(name, *here) != "as they are":
        return []
    return _measured_on(name, "copied", here, measured, within)


def _measured_on(name: str, path: str, here: tuple[int, int, int], measured: list, within: float) -> list:
    """The rows within ``within`` of ``here`` where ``name`` was measured reading A and B by ``path``
    (:func:`_row_path`)."""
    return [row for row in measured if name in row[3] and _row_path(name, *row[:3]) == path
            and distance(here, tuple(row[:3])) <= within]


def _has_partial_build(name: str) -> bool:
    """Whether a candidate runs every shape on its own kernel (steps 17, 18: ``TmaTiles.partial``)."""
    return name not in PADDED_VARIANTS and getattr(candidate(name).tiled, "partial", None) is not None


def _copies_rows(m: int, n: int, k: int) -> bool:
    """Whether the copy engine cannot read A or B as they are at M×N×K (K or N not a multiple of 4; fresh arrays are
    16-byte aligned): a step with a partial-tile build then copies them, or reads them with its producer's threads."""
    return k % 4 != 0 or n % 4 != 0


def _row_path(name: str, m: int, n: int, k: int) -> str:
    """How a step with a partial-tile build reads A and B at M×N×K: ``"as they are"`` (the copy engine), ``"copied"``
    (into rows the copy engine can read) or ``"threads"`` (its ``THREAD_COPIES`` build: the step's own policy,
    ``TmaTiles.uses_thread_copies``). The two ways of an unreadable matrix are two paths: the suite of 2026-11-29
    measured the threads' at two skinny shapes (~49 FLOPs a copied byte), where step 18 ran 0.59–0.79× cuBLAS SGEMM,
    and the copy's at the ragged ones (1.7–2.2×); judged as one path, the skinny shapes pulled step 18 below its
    padded copies at compute-bound shapes with an odd K."""
    if not _copies_rows(m, n, k):
        return "as they are"
    tiled = candidate(name).tiled
    return "threads" if tiled.uses_thread_copies(m, n, k, k % 4 != 0, n % 4 != 0) else "copied"


def _reads_b_by_rows(name: str, m: int, n: int, k: int) -> bool:
    """Whether candidate ``name`` reads an unreadable B by its rows mod 4 at M×N×K (step 17's ``B_ROWS_MOD_4`` build,
    its policy) instead of copying it. Judged as the copied path (:func:`_row_path`): the table measured step 17 with
    B copied, and the rows build ran 1.03–2.02× that where its policy takes it (experiments/b_rows_mod_4.py), so a
    judgement from the copied path underrates it there."""
    tiled = candidate(name).tiled
    return hasattr(tiled, "b_by_rows_at") and tiled.b_by_rows_at(m, n, k)


def _copies(name: str, m: int, n: int, k: int) -> bool:
    """Whether padded candidate ``name`` copies any matrix at M×N×K, with the tiles a GPU runs (the table's)."""
    from ..toolkit.padded_tiles import copies

    return any(copies(_gpu_tiles(name), m, n, k))


def _gpu_tiles(name: str) -> TileConfig:
    """The tiles a GPU runs for candidate ``name`` (the table was measured on one), also where the simulator runs
    smaller ones: a tile variant's own, else its step's first candidate."""
    from ..toolkit.tuned import default_config

    return TILE_VARIANTS.get(name) or default_config(candidate(_base_step(name)).module.SEARCH_SPACE)


def _padded_dominated(name: str, steps: set[str], here: tuple[int, int, int]) -> bool:
    """Whether padded candidate ``name`` would copy at ``here`` while its step, which has a partial-tile build (the
    same kernel on the same tiles, without the copies), may be chosen: then the copies are judged only beside the
    step (:func:`_padded_beside_their_step`)."""
    base = PADDED_VARIANTS[name]
    return base in steps and _has_partial_build(base) and _copies(name, *here)


def _padded_beside_their_step(judged: dict, judged_at: dict, measured: list, modelled: list, steps: set[str],
                              here: tuple[int, int, int]) -> None:
    """Judge a padded candidate that would copy here where its step is judged, or not at all. A padded candidate is
    its step's kernel on copies padded to whole tiles; steps 17 and 18 cover partial tiles themselves, and in the
    shape suite of 2026-11-29 (results/shapes-nvidia-h200-2026-11-29-4.json) the copies took 1.17–2.58× the time of
    the step or its 128-row variant at every one of the 17 shapes where they copied. Judged at the nearest shape
    instead, they won on a number from another path: at 230×9851×6277 (seed 20261207's set, seen) their 195 % of
    cuBLAS at 128×8192×4096 beat step 17's 105 % at 100×6001×4003, where the copies ran 68 %; ``matmul(precision=
    "tf32")`` ran them at 0.58× cuBLAS TF32. So where the step is judged at a measured shape (not modelled) at which
    the copies were timed copying as they would here, they are judged there; otherwise not. (A table measured before
    the partial-tile builds, the H100's of 2026-11-26, has the copies faster than the step beside it: they win there.)"""
    for name in [s for s in judged if s in PADDED_VARIANTS and _padded_dominated(s, steps, here)]:
        base = PADDED_VARIANTS[name]
        row = None
        if base in judged and base not in modelled:
            row = next((r for r in measured if tuple(r[:3]) == judged_at[base] and name in r[3]), None)
        if row is not None and _same_path(name, here, judged_at[base]):
            judged[name], judged_at[name] = 100 * row[4] / row[3][name], judged_at[base]
        else:
            del judged[name], judged_at[name]


def choose_from(entry: dict | None, m: int, n: int, k: int, steps: set[str], gpu: str | None = None) -> Choice:
    """The rule of the module docstring, on one table entry; ``steps`` are the names that may be chosen, and the
    default is the latest FP32 one of them.

    One refinement: a tensor-core step whose kernel path at M×N×K (mostly its fast kernel, or mostly its edge kernel:
    :func:`fast_share`) differs from its path at the nearest measured shape is judged at the nearest measured shape
    where its path is the same, if one is within :data:`NEAREST_WITHIN` — step 14 measured at 4096³ says nothing
    of 3000³, where K = 3000 sends every tile to its edge kernel (it ran 76 % of cuBLAS there against step 11's 90 %
    on an H200, experiments/results/experiment-matmul-held-out-nvidia-h200.json); its time at 3001×2999×1531 does.
    Steps are then compared by % of cuBLAS, each at the shape that represents it; a padded candidate that would copy
    where its step has a partial-tile build, only beside its step (:func:`_padded_beside_their_step`).

    And where that leaves an FP32 step — no measured shape within reach, or none of the tensor-core steps measured
    near on the kernel path it would take — the tensor cores are not given up: :func:`_tensor_core_evidence`."""
    if HALF_TILES in steps and not half_tiles_fit(m, n):
        choice = choose_from(entry, m, n, k, steps - {HALF_TILES}, gpu)
        rows, cols = _half_tiles(m, n)
        return replace(choice, reason=f"{choice.reason} ({HALF_TILES} left out: its {rows} × {cols} tiles of 64 × 128 "
                                      f"are more than {HALF_TILES_MAX_TILES}, so they would not fit one wave)")
    choice = _choose_from(entry, m, n, k, steps, gpu)
    if choice.step_name == STEP_18 and STEP_22 in steps and _short_tiles_on_step_22(m, n, k):
        short = candidate(STEP_22).module.SHORT_TILE_K_TILES
        return replace(choice, step_name=STEP_22, reason=(
            f"{choice.reason}; but its tiles here have at most {short} k-tiles, where {STEP_22} runs "
            f"its persistent loop over them, measured faster than {STEP_18} at every such product it ran (step 22's "
            "SHORT_TILE_K_TILES): step 22"))
    return choice


#: Steps 18 and 22 and step 18's 64 × 128 variant, for the two rules of :func:`choose_from`.
STEP_18, STEP_22 = "warp_specialized_3xtf32", "warp_specialized_3xtf32_stream_k"
HALF_TILES = "warp_specialized_3xtf32@64x128"
#: Step 18's 64 × 128 tiles are a candidate only where they fit one wave of the SMs (one block an SM: at most this many
#: of them): halving the tile pays where the halves fill idle SMs, and costs a second wave where they do not. Measured
#: on an H200, none of it on a held-out shape, 54 products where both ran (experiments/results: the half-tiles, small-
#: copies, small-copies-tiles, b-rows-mod-4-step-18, its -small and a-rows-mod-4-2 runs): the variant faster than step
#: 18 at 23 of the 24 that fit one wave (1.01–1.60×; 0.68× at 128×5003×8000, where step 18 splits K three ways), and at
#: 3 of the 30 that do not (1.02–1.07×). Until 2026-11-30 the rule counted twice step 18's 128 × 128 tiles (≤ 66 of
#: them), which is not the variant's count where M mod 128 is 1–64: 300×3001×300 is 3 × 24 = 72 tiles of 128 × 128 but
#: 5 × 24 = 120 of 64 × 128, and the variant ran 1.30× step 18 there, 1.32× at 800×1201×400 (130 tiles)
#: (experiment-b-rows-mod-4-step-18-small-nvidia-h200.json).
HALF_TILES_MAX_TILES = TABLE_SMS


def _half_tiles(m: int, n: int) -> tuple[int, int]:
    """The 64 × 128 variant's tiles over M×N: (tile-rows, tile-columns)."""
    config = _gpu_tiles(HALF_TILES)
    return ceil_div(m, config.BLOCK_M), ceil_div(n, config.BLOCK_N)


def half_tiles_fit(m: int, n: int) -> bool:
    """Whether step 18's 64 × 128 variant may run M×N: at most :data:`HALF_TILES_MAX_TILES` of its own tiles."""
    rows, cols = _half_tiles(m, n)
    return rows * cols <= HALF_TILES_MAX_TILES


def _short_tiles_on_step_22(m: int, n: int, k: int) -> bool:
    """Whether step 22 runs its own persistent loop at M×N×K (not step 18's build: ``_schedule``) over tiles of at most
    its ``SHORT_TILE_K_TILES`` k-tiles, where it was measured faster than step 18 on an H200 at every product timed:
    1.27–1.42× at 2–4 k-tiles a tile and 1.08× at 8 over whole waves (experiment-stream-k-3xtf32-nvidia-h200-4.json),
    1.03–1.12× at eight small products of 2–6 k-tiles (experiment-small-copies-nvidia-h200.json and its -tiles- run)."""
    return (_schedule(STEP_22, m, n, k) == "own"
            and ceil_div(k, _gpu_tiles(STEP_22).BLOCK_K) <= candidate(STEP_22).module.SHORT_TILE_K_TILES)


def _choose_from(entry: dict | None, m: int, n: int, k: int, steps: set[str], gpu: str | None = None) -> Choice:
    """:func:`choose_from` before its two rules on step 18's tiles and step 22's short tiles."""
    last = max(steps, key=lambda name: (_step_arithmetic(name) == "fp32", _step_number(name), name not in TILE_VARIANTS))
    if not entry or not entry.get("shapes"):
        return Choice(last, f"no dispatch table: {DEFAULT_REASON}")
    measured = [row for row in entry["shapes"] if set(row[3]) & steps]
    every_measured = measured
    here = (m, n, k)
    nearest = min(measured, key=lambda row: distance(here, tuple(row[:3])), default=None)
    if nearest is None:
        return Choice(last, f"no step of this package in the dispatch table: {DEFAULT_REASON}")
    shape = tuple(nearest[:3])
    where = entry.get("gpu") or "an unnamed GPU"
    other = "" if gpu is None or gpu == entry.get("gpu") else f" (no table for {gpu}: {where}'s)"
    away = distance(here, shape)
    within, beyond = NEAREST_WITHIN, None
    tensor_cores = {s for s in steps if _step_arithmetic(s) != "fp32"}
    if away > NEAREST_WITHIN:
        beyond = _beyond_the_table(measured, here)
        if beyond is None:
            pct = {s: 100 * nearest[4] / ms for s, ms in sorted(nearest[3].items(), key=lambda item: item[1])
                   if s in steps}
            too_far = (f"the nearest measured shape, {_label(shape)} on {where}{other}, is too far (log₂ distance "
                       f"{away:.1f} > {NEAREST_WITHIN:.1f})")
            evidence = _tensor_core_evidence(measured, here, tensor_cores, steps)
            if evidence is not None:
                return Choice(evidence.name, f"{too_far}; {evidence.reason}", shape, pct, entry.get("gpu"))
            return Choice(last, f"{too_far}: {DEFAULT_REASON}", shape, pct, entry.get("gpu"))
        nearest, shape = beyond, tuple(beyond[:3])
        within = distance(here, shape)  # the steps are judged among the large shapes no farther than it
        measured = [row for row in measured if row[0] * row[1] >= LARGE_C]
    pct = {s: 100 * nearest[4] / ms for s, ms in sorted(nearest[3].items(), key=lambda item: item[1]) if s in steps}
    judged, judged_at, modelled, bounded = dict(pct), {s: shape for s in pct}, [], []
    for s in pct:
        if _same_path(s, here, shape):
            continue
        same = [row for row in measured if s in row[3] and _same_path(s, here, tuple(row[:3]))
                and distance(here, tuple(row[:3])) <= within]
        readable = [] if same else _readable_rows(s, here, measured, within)
        copied = [] if same or readable else _copied_rows(s, here, measured, within)
        if same or copied:  # judged where its kernel path is the one it would take here (or that path and a copy)
            row = min(same or copied, key=lambda r: distance(here, tuple(r[:3])))
            judged[s], judged_at[s] = 100 * row[4] / row[3][s], tuple(row[:3])
            if not same:
                bounded.append(s)
        elif readable:  # it copies A or B here, measured doing so at no shape near: its time where it read them as
            row = min(readable, key=lambda r: distance(here, tuple(r[:3])))  # they are, with the copy added
            judged[s], judged_at[s] = with_the_copy(s, row, here), tuple(row[:3])
            modelled.append(s)
        else:  # no measurement of the path it would take here: not judged at all (5000³ sends every tile of
            del judged[s], judged_at[s]  # step 18 to its edge kernel; its 4096³ time says nothing of that)
    _padded_beside_their_step(judged, judged_at, measured, modelled, steps, here)
    unjudged = {s for s in pct if s not in judged} & tensor_cores
    if not judged:
        evidence = _tensor_core_evidence(every_measured, here, unjudged, steps)
        if evidence is not None:
            return Choice(evidence.name, f"no step was measured near {_label(here)} on the kernel path it would "
                                         f"take; {evidence.reason}", shape, pct, entry.get("gpu"), {})
        return Choice(last, f"no step was measured near {_label(here)} on the kernel path it would take: "
                            f"{DEFAULT_REASON}", shape, pct, entry.get("gpu"), {})
    best_pct = max(judged.values())
    # Within measurement noise of the fastest, the latest step wins: the most general kernel (stream-K balances
    # shapes the table did not measure), and no flip-flopping between steps on a 1 % difference.
    best = max((s for s, p in judged.items() if p >= best_pct / (1 + TIE)),  # the shipped tiles, and no copies,
               key=lambda name: (_step_number(name), name not in TILE_VARIANTS, name not in PADDED_VARIANTS))  # win a tie
    at = judged_at[best]
    note = "" if at == shape else f" (judged at {_label(at)}, where its kernel path is the one it takes here)"
    where_measured = (f"the nearest measured shape, {_label(shape)} on {where}{other}" if beyond is None else
                      f"{_label(shape)} on {where}{other}, the nearest of the table's large products (every side "
                      f"at most this shape's, C of at least {LARGE_C:,} elements: this shape is beyond the table, "
                      f"log₂ distance {away:.1f}, and more of the same tiles on the same kernel paths keep the "
                      f"steps' order)")
    if best in bounded:
        note = (f" (judged at {_label(at)}, where it copied A or B into readable rows first: here the same kernel "
                f"reads them as they are, no slower)")
    if best in modelled:
        note = (f" (modelled: its time at {_label(at)}, where it read A and B as they are, scaled to this shape's "
                f"FLOPs, plus {1e6 * readable_copy_seconds(*here):.0f} µs of readable copies)")
    reason = (f"{'fastest' if judged[best] == best_pct else f'within {TIE:.0%} of the fastest'} at "
              f"{where_measured}: {judged[best]:.0f} % of cuBLAS" + note)
    judgements = {s: (judged_at[s], judged[s]) for s in judged}
    rival = _faster_where_judged(best, judged, judged_at, every_measured, here)
    if rival is not None:  # the step won on a % measured at another shape than the rival's: compared where they can
        at = judged_at[rival]  # be (the rival's shape; for two tensor-core steps, both), the rival is faster
        both = "" if _step_arithmetic(best) == "fp32" else f", and slower at {_label(judged_at[best])} too"
        reason = (f"{reason}; but at {_label(at)}, where {rival} was judged (its kernel path there is the one it takes "
                  f"here), it ran {judged[rival]:.0f} % of cuBLAS and {best} slower{both}: the two compared "
                  + ("at one shape" if not both else "at each one's shape"))
        return Choice(rival, reason, shape, pct, entry.get("gpu"), judgements, tuple(modelled))
    if _step_arithmetic(best) == "fp32":  # the FP32 units won only among the steps measured near on their path
        evidence = _tensor_core_evidence(every_measured, here, unjudged, steps)
        if evidence is not None:
            return Choice(evidence.name, f"{best} was the fastest step measured near on the kernel path it takes "
                                         f"({reason}), but no tensor-core step was measured near on the path it "
                                         f"takes here; {evidence.reason}",
                          shape, pct, entry.get("gpu"), judgements, tuple(modelled))
    return Choice(best, reason, shape, pct, entry.get("gpu"), judgements, tuple(modelled))


def _faster_where_judged(best: str, judged: dict, judged_at: dict, measured: list, here: tuple[int, int, int]):
    """A tensor-core step to run instead of ``best``, or None: one judged at another shape than ``best`` (where its
    kernel path is the one it takes here) and faster than ``best`` where the two can be compared — the fastest such by
    its judged %. Each step's % is measured at the shape that represents it, so where the two shapes differ, a % from
    one is no measure against a % from the other.

    * ``best`` an FP32 step: its path is the same at every shape, so they are compared at the rival's shape. Held-out
      seed 20261220 (results/held-out-nvidia-h200-2026-11-30.json) ran 458×589×1407 on step 11's 64 × 64 tiles, 90 %
      of cuBLAS SGEMM at 640³ (where the tensor-core steps read A as it is), against step 18's 64 × 128 tiles judged
      at 501×333×703 (A or B copied, as here) at 86 %: at 501×333×703 step 11's tiles had run 66 %; the product ran
      0.67×.
    * ``best`` a 3xTF32 step and the rival a TF32 one (``precision="tf32"`` may run either): three products a k-step
      against one, so how far apart they run changes with the shape (2.2–2.6× the time at K = 64–128, 3.3× at 4096³:
      experiments/results/experiment-short-k-nvidia-h200.json), and each may take another path at the other's shape:
      the rival must be faster at both. Held-out seed 20261222 (results/held-out-nvidia-h200-2026-11-30-3.json) ran
      8198×172×2503 at ``precision="tf32"`` on step 22, 183 % of cuBLAS SGEMM at 8000×250×6001, against the TF32 steps
      judged at 9001×99×5003 at 144 %: they had run faster than step 22 at both shapes; the product ran 0.68× cuBLAS
      TF32. Two steps of one arithmetic are not compared so: their order moves less between shapes than the tiles'
      waves do, which neither judged shape shows (184×8484×5855 would have gone from step 23, 2.46× cuBLAS TF32
      there, to step 17's 128-row tiles: 134 tiles for 132 SMs)."""
    fp32 = _step_arithmetic(best) == "fp32"
    rivals = []
    for name, at in judged_at.items():
        if _step_arithmetic(name) == "fp32" or at == judged_at[best]:
            continue
        if not fp32 and not (_step_arithmetic(best) == "3xtf32" and _step_arithmetic(name) == "tf32"):
            continue
        if all(_ran_faster(name, best, shape, measured) for shape in ((at,) if fp32 else (at, judged_at[best]))):
            rivals.append(name)
    return max(rivals, key=lambda name: (judged[name], _step_number(name)), default=None)


def _ran_faster(name: str, other: str, shape: tuple[int, int, int], measured: list) -> bool:
    """Whether the table measured ``name`` faster than ``other`` at ``shape``."""
    row = next((r for r in measured if tuple(r[:3]) == shape), None)
    return row is not None and name in row[3] and other in row[3] and row[3][name] < row[3][other]


#: From this M·N·K on a product counts as large (the issue-37 targets split the held-out set here). A tensor-core
#: step chosen on evidence from afar (:func:`_tensor_core_evidence`) is judged at the table's products of the same
#: size as the one asked: at 256³ a 3xTF32 step runs 1.1× the fastest FP32 step, at 2048³ 2.3× (H100 table).
LARGE_PRODUCT = 2**30


@dataclass(frozen=True)
class Evidence:
    """Why a tensor-core step runs where no measured shape near decided: how much faster than the FP32 units it ran
    where the table measured it on the kernel path it takes here."""
    name: str
    speedup: float  # over the fastest FP32 step of the same row, geometric mean over ``shapes``
    shapes: tuple  # the measured shapes it rests on
    reason: str


#: The smallest product of the shape suite (256³): below it, and below every product a table measured, a product is
#: launch-bound and the table's evidence for the tensor cores (:func:`_tensor_core_evidence`) does not reach it.
TINY_PRODUCT = 256**3


def _tensor_core_evidence(measured: list, here: tuple[int, int, int], candidates: set[str], steps: set[str]):
    """The tensor-core step (of ``candidates``) to run at ``here`` where no measured shape near decided, or None.

    Far from every measured shape, or where the tensor-core steps were measured near only on another kernel path
    (9001×3003×5001: K = 5001 sends every tile to the edge kernel or makes the padded steps copy, as at no measured
    shape within reach), the nearest shape says nothing of them — but the rest of the table does. For each
    candidate, the table's products of here's size (:data:`LARGE_PRODUCT`: large or not) where it took the kernel
    path it takes here (:func:`_same_path`) — for a TF32 step, products of any size where no candidate was measured
    on its path at products of this size — and at each its speed-up over the fastest FP32 step of ``steps`` there; the
    candidate with the largest geometric mean runs unless it is more than :data:`TIE` below 1 — the FP32 units run
    only where the table says they are faster (within the tie the later step wins, as at a measured shape). On an
    H100 the TF32 steps ran 2–7× the FP32 units' speed at most measured shapes, on their edge kernels too (issue 37:
    step 11 at 10–13 % of cuBLAS TF32 where a tensor-core step ran 3–4× faster), so ``precision="tf32"`` keeps to
    the tensor cores; at the default precision a 3xTF32 step runs only where the table measured it faster on products
    of this size (its padded copies cost a small product more: 257×384×384 stays on the FP32 units). A product smaller
    than every measured one and than :data:`TINY_PRODUCT` gets no evidence: the FP32 units run it."""
    fp32 = {s for s in steps if _step_arithmetic(s) == "fp32"}
    large = math.prod(here) >= LARGE_PRODUCT
    rows = [row for row in measured if fp32 & set(row[3])]
    if rows and math.prod(here) < min(TINY_PRODUCT, *(math.prod(row[:3]) for row in rows)):
        return None  # smaller than every measured product and than 256³: launches, not tiles, set its time, and no
        # measurement says how a tensor-core step's two or three launches compare there (5×6×7 had taken step 18's
        # copies and kernel on the word of 150×181×10001 alone)
    same_size = [row for row in rows if (math.prod(row[:3]) >= LARGE_PRODUCT) == large]
    found = _speedups(same_size, here, candidates, fp32)
    size = "large products (M·N·K ≥ 2³⁰)" if large else "products smaller than 2³⁰"
    if not found:  # no candidate measured on its path at products of this size: for a TF32 step (never a 3xTF32
        tf32 = {name for name in candidates if _step_arithmetic(name) == "tf32"}  # one) the other products say
        found, size = _speedups(rows, here, tf32, fp32), f"products (none of them {size} on this path)"
    if not found:
        return None
    speedup, _, name, shapes = max(found)
    if speedup < 1 / (1 + TIE):
        return None
    listed = ", ".join(_label(shape) for shape in shapes[:4]) + (", …" if len(shapes) > 4 else "")
    reason = (f"where the table measured {name} on the kernel path it takes here ({_path_words(name, *here)}), at "
              f"{len(shapes)} of its {size}: {listed}, it ran {speedup:.1f}× the fastest FP32 step there (geometric "
              f"mean): the tensor cores run")
    return Evidence(name, speedup, shapes, reason)


def _tile_sides(name: str) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N) of the tiles a GPU runs for candidate ``name``: :func:`_gpu_tiles` for a tuned step or a
    variant; the steps without a search space from their module's ``DEFAULT_CONFIG`` or ``CONFIG`` (steps 1–2: a
    BLOCK_SIZE square of threads, an element each)."""
    module = candidate(_base_step(name)).module
    if name in TILE_VARIANTS or hasattr(module, "SEARCH_SPACE"):
        config = _gpu_tiles(name)
        return config.BLOCK_M, config.BLOCK_N
    if hasattr(module, "DEFAULT_CONFIG"):  # steps 6–7: one configuration, no search space
        return module.DEFAULT_CONFIG.BLOCK_M, module.DEFAULT_CONFIG.BLOCK_N
    fixed = module.CONFIG
    return fixed.get("BLOCK_M", fixed.get("BLOCK_SIZE")), fixed.get("BLOCK_N", fixed.get("BLOCK_SIZE"))


def tile_efficiency(name: str, m: int, n: int) -> float:
    """The share of a candidate's tiles of C that lies inside C at M×N, with the tiles a GPU runs: M·N over the
    padded area ⌈M/BLOCK_M⌉·BLOCK_M · ⌈N/BLOCK_N⌉·BLOCK_N (a tensor-core tile costs the same full or not)."""
    block_m, block_n = _tile_sides(name)
    return m * n / (ceil_div(m, block_m) * block_m * ceil_div(n, block_n) * block_n)


def _carried(name: str, row: list, here: tuple[int, int, int], fp32: set[str]) -> float:
    """``name``'s speed-up over the fastest FP32 step of a measured ``row``, carried to ``here`` by both kernels' tile
    efficiencies (here over there): the FP32 step's tiles waste part of a small side too."""
    fastest = min((s for s in fp32 if s in row[3]), key=lambda s: row[3][s])
    here_ratio = tile_efficiency(name, *here[:2]) / tile_efficiency(fastest, *here[:2])
    there_ratio = tile_efficiency(name, *row[:2]) / tile_efficiency(fastest, *row[:2])
    return row[3][fastest] / row[3][name] * here_ratio / there_ratio


def _speedups(rows: list, here: tuple[int, int, int], candidates: set[str], fp32: set[str]) -> list:
    """(geometric-mean speed-up over the fastest FP32 step, step number, name, shapes) of each candidate measured in
    ``rows`` on the kernel path it takes at ``here``, each carried to ``here`` by the share of its tiles that lies
    inside C against the FP32 step's (:func:`_carried`): measured where its tiles were full, a 256-row tile says little
    of M = 94, which fills 37 % of it (and 73 % of the FP32 step's 128-row tile). Seed 20261213's and 20261214's held-out sets (results/held-out-nvidia-h200-
    2026-11-29-12.json, -13) ran their slowest ``tf32`` shapes, 94×13363×1051 and 126×3795×14063, on 256-row tiles
    chosen so (0.56× and 0.62× cuBLAS TF32), where the 128-row variant had run 1.6× step 17 at 128×8192×4096."""
    found = []
    for name in sorted(candidates):
        speedups = [(tuple(row[:3]), _carried(name, row, here, fp32)) for row in rows
                    if name in row[3] and _same_path(name, here, tuple(row[:3]))]
        if speedups:
            mean = math.exp(sum(math.log(x) for _, x in speedups) / len(speedups))
            found.append((mean, _step_number(name), name, tuple(shape for shape, _ in speedups)))
    return found


def _path_words(name: str, m: int, n: int, k: int) -> str:
    """The kernel path a tensor-core candidate takes at M×N×K, in words."""
    if name in PADDED_VARIANTS:
        return "its fast kernel on copies padded to whole tiles" if _copies(name, m, n, k) else \
            "its fast kernel, no copies"
    if _has_partial_build(name):
        words = "its fast kernel over every tile (its partial-tile build where tiles are partial)"
        way = _row_path(name, m, n, k)
        if way == "as they are":
            return words + ", no copies"
        if way == "copied" and _reads_b_by_rows(name, m, n, k):
            return words + (", B unreadable by the copy engine as one map: read by its rows mod 4 (four maps)"
                            + (", A copied into rows it can read" if k % 4 else ""))
        if way == "copied":
            return words + ", A or B unreadable by the copy engine: copied into rows it can read"
        return words + (", A or B unreadable by the copy engine and few FLOPs a byte: read by the producer's threads "
                        "(THREAD_COPIES)")
    return "mostly its fast kernel" if _mostly_fast(name, m, n, k) else "its edge kernel"


#: Beyond the table's large products. A product larger in every side than a measured one whose C holds at least this
#: many elements — two waves of the largest tiles (256×128) on 132 SMs — is more of the same tiles on the same kernel
#: paths, and the steps keep their order: in 7 of the 8 course benchmarks in results/ the fastest step of each
#: precision at 4096³ was the fastest at 8192³ too, and in the eighth (H100, 2026-11-23) steps 9–11 swapped within
#: 2 %, inside :data:`TIE` (tests/test_dispatch.py checks this against the files). A step whose path would change
#: there is judged only where its path is the same (:func:`_same_path`).
LARGE_C = 2 * 132 * 256 * 128


def _beyond_the_table(measured: list, here: tuple[int, int, int]):
    """The nearest measured row that ``here`` is beyond: every side at most ``here``'s, C at least :data:`LARGE_C`
    elements; None if there is none (``here`` is not a larger product of a large measured one)."""
    rows = [row for row in measured if row[0] * row[1] >= LARGE_C and all(x <= y for x, y in zip(row[:3], here))]
    return min(rows, key=lambda row: distance(here, tuple(row[:3])), default=None)


_CHOICES = Kept(4096)


def allowed_steps(precision: str = DEFAULT_PRECISION) -> set[str]:
    """The names :func:`choose` may return at ``precision``: steps of an arithmetic it allows that this GPU can run
    (a table recorded on an H100 may name step 14, which needs wgmma), and the tile variants and padded candidates of
    the steps among them."""
    arithmetic = PRECISIONS[check_precision(precision)]
    names = {s.name for s in all_steps() if s.arithmetic in arithmetic and not s.unavailable()}
    return (names | {name for name in TILE_VARIANTS if _base_step(name) in names}
            | {name for name, step in PADDED_VARIANTS.items() if step in names})


def memo_key(m: int, n: int, k: int, precision: str) -> tuple:
    """Under which key :func:`choose` remembers its decision in ``_CHOICES`` (``matmul``'s replayed calls count only
    while it is there: ``harness.api.replay``)."""
    return (m, n, k, precision)


def decided(m: int, n: int, k: int, precision: str) -> Choice | None:
    """The decision :func:`choose` keeps for this shape and precision, or None if it keeps none (it has not decided
    yet, or a new table, :func:`record`, emptied its memo): ``matmul``'s replayed calls count only while it keeps the
    one that chose their step (``harness.api.replay``)."""
    return _CHOICES.get(memo_key(m, n, k, precision))


def choose(m: int, n: int, k: int, precision: str = DEFAULT_PRECISION) -> Choice:
    """What ``matmul`` runs for an M×N×K product at ``precision`` on this GPU (remembered per shape and precision: a
    call costs a dict lookup)."""
    key = memo_key(m, n, k, precision)
    found = _CHOICES.get(key)
    if found is None:
        gpu = current_gpu_name()
        found = choose_from(table(gpu), max(m, 1), max(n, 1), max(k, 1), allowed_steps(precision), gpu)
        _CHOICES.keep(key, found)
    return found


def _step_number(name: str) -> int:
    if name in TILE_VARIANTS:
        return candidate(name).number
    return next((s.number for s in all_steps() if s.name == _base_step(name)), -1)


def _step_arithmetic(name: str) -> str:
    return next((s.arithmetic for s in all_steps() if s.name == _base_step(name)), "fp32")


def _label(shape) -> str:
    m, n, k = shape
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def main(argv: list[str] | None = None) -> int:
    """``python -m gemm_steps.harness.dispatch RESULTS.json [TABLE]``: add a suite run to a table (the shipped one by
    default: how ``harness/dispatch.json`` is made)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    path = record(json.loads(Path(args[0]).read_text()), Path(args[1]) if len(args) > 1 else SHIPPED_TABLE)
    print(f"recorded {args[0]} in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
