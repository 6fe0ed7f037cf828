"""Launching a kernel that reads its tiles through the copy engine (TMA): :class:`TmaTiles`.

A TMA kernel does not take A and B only as arrays: the copy engine reads them through *tensor maps*, 128-byte
descriptors made on the host (``mbarrier_ops.tensor_map_2d``: the matrix's address, shape and row pitch, the box
one copy brings, and the swizzle it writes). Numba has no ``__grid_constant__`` parameters, so each map lives in a
small device array and the kernel takes two more arguments, A's map and B's. A map holds its matrix's address: it
is made once per buffer and shape, kept, and a recorded launch plan is keyed by A's and B's addresses.

Everything else is :class:`~gemm_steps.toolkit.tiles.TiledKernels`' (full tiles on the fast kernel, the rest on an
edge kernel that a TMA build takes from another build, ``edge=``).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, uint32

from .backend import SIMULATOR
from .intrinsics import divide_u32, let_next_grid_start, store_float4, wait_for_previous_grid
from .kernel_tools import ceil_div, device_pointer, kernel, quiet_small_grids
from .mbarrier_ops import tensor_map_2d, tensor_maps_rows_mod_4
from .kernel_builds import SIGNATURE
from .kept import Kept
from .tiles import SIMULATED_RESIDENT_BLOCKS, TiledKernels, flat_operands
from .workspaces import Workspaces


@kernel
def copy_rows_kernel(a, b, c, m, n, k, which, width, rows_out):
    """``rows_out`` = A (``which`` 0: M rows of K floats) or B (``which`` 1: K rows of N floats), each row widened to
    ``width`` floats with zeros past its end: a row pitch the copy engine can read (a multiple of 16 bytes). A thread
    four consecutive floats of a row of ``rows_out`` (``width`` is a multiple of 4: one 128-bit store; four scalar
    loads, as A's or B's rows are not 16-byte aligned), striding on by the grid's size where the grid is smaller (the
    simulator's: one block); consecutive threads, consecutive columns. (C is not read: the launch's first three
    arguments are always A, B and C.)

    The index is 32-bit (the launch keeps ``rows_out`` under 2³² bytes) and divided with ``div.u32``: Numba widens
    integer arithmetic to 64 bits, and a 64-bit division is a long software routine. On an H200 (2026-11-29,
    experiments/readable_copy_speed.py) a thread an element with a Python ``range`` loop — a 64-bit division per
    element and one more for the trip count — moved ~1.0 TB/s; a 32-bit ``while`` loop 1.6–1.9 TB/s.

    In a launch plan the kernel after a copy is a programmatic dependent launch (``launch_plans``): each block of the
    copy first lets it start (``let_next_grid_start``), so its blocks are placed and set up while the copy runs — the
    next kernel still reads the copy only after its own ``wait_for_previous_grid``, which waits for the whole copy.
    The copy's own ``wait_for_previous_grid``, last, orders two copies: B's copy, launched early beside A's (it reads
    neither A nor A's copy), does not finish before A's, so the kernel that waits for B's copy has A's too."""
    let_next_grid_start()
    rows = m if which == 0 else k
    cols = k if which == 0 else n
    quads = uint32(width >> 2)
    total = uint32(rows * quads)
    i = uint32(cuda.grid(1))
    stride = uint32(cuda.gridsize(1))
    while i < total:
        row = divide_u32(i, quads)
        col = uint32((i - row * quads) << 2)
        start = row * cols + col
        source = a if which == 0 else b
        x0 = source[start] if col < cols else float32(0.0)
        x1 = source[start + 1] if col + 1 < cols else float32(0.0)
        x2 = source[start + 2] if col + 2 < cols else float32(0.0)
        x3 = source[start + 3] if col + 3 < cols else float32(0.0)
        store_float4(rows_out, i << 2, x0, x1, x2, x3)
        i = uint32(i + stride)
    wait_for_previous_grid()  # the copy before this one (if any) has finished: see above


def readable_width(cols: int, floats: int = 4) -> int:
    """The floats a row of A or B is widened to by :meth:`TmaTiles.readable_copy`: the next multiple of 4 (a row pitch
    of a multiple of 16 bytes, the copy engine's rule), or of ``floats`` (32: rows on 128-byte lines, see
    :func:`aligned_a_pays`)."""
    return ceil_div(cols, floats) * floats


#: Floats in a 128-byte L2 line: a row pitch of a multiple of them starts every row of A's boxes on a line.
LINE_FLOATS = 32


#: Where :func:`aligned_a_pays` copies A: N at least this (the copy moves 8·M·K bytes, the kernel's time grows with
#: M·N·K) and a product of at least this many multiply-adds (the copy is one more launch).
ALIGNED_A_MIN_N, ALIGNED_A_MIN_PRODUCT = 2048, 2 ** 32


def aligned_a_pays(m: int, n: int, k: int) -> bool:
    """Whether a TF32 product (steps 17 and 21) copies A first into rows of a multiple of 32 floats
    (:data:`LINE_FLOATS`) where K is not one — also where A is readable as it is (K a multiple of 4).

    Such a row pitch is a multiple of 16 bytes, the copy engine's rule, but not of 32 or 128: every 128-byte row of an
    A box then starts inside a sector and spans two L2 lines. On an H200 that cost step 21 a fifth of its speed at
    3072×16128×14460 against ×14464 (experiments/results/experiment-tf32-minimum-shape-nvidia-h200-2.json; B's rows,
    512 bytes a box row, cost about 7 %). The copy, timed with the kernel (experiments/aligned_rows.py, an H200):
    steps 17 / 21 1.14–1.25× themselves at N = 4096–16012, 0.94× at N = 1024 (the copy, 8·M·K bytes at ~4 TB/s,
    costs about what it saves there; the break-even this gives is near N = 1,400), 1.00× where A is copied anyway.
    Steps 18 and 22 (three products a k-step on the same bytes) gained nothing (0.97–1.01×, 0.88× at N = 1024): they
    do not ask."""
    return n >= ALIGNED_A_MIN_N and m * n * k >= ALIGNED_A_MIN_PRODUCT


class TmaTiles(TiledKernels):
    """A tiled build whose fast kernel takes tensor maps of A (``BLOCK_M × BLOCK_K`` boxes, 128-byte swizzled: the
    layout ``wgmma`` reads) and B (``BLOCK_K × B_STRIDE`` boxes: ``B_STRIDE − BLOCK_N`` columns wider than the tile,
    so each row lands padded, zeros past B's last column).

    ``partial``: a second build of the same kernel for every other shape (its ``PARTIAL_TILES`` build: its grid
    covers every tile, partial ones included, and its k-loop every k-tile; the copy engine fills with zeros whatever
    of a box lies outside A or B, and its store keeps to C). A product of whole tiles that the copy engine can read —
    row pitches of A and B multiples of 16 bytes (K and N multiples of 4), A and B 16-byte aligned — runs on the fast
    kernel as before; any other runs on ``partial`` (:meth:`partial_applies`): in one launch where the copy engine
    can read A and B as they are, else after copying the one it cannot into rows it can (:meth:`readable_copy`: A
    when K is not a multiple of 4, B when N is not, either when it is not 16-byte aligned; C is never copied, its
    stores are scalar) — or, where the step's policy ``thread_copies_when`` says so, on ``thread_copies``, a build
    whose producer threads copy A and B as they are (its kernel takes two blank maps). A build without ``partial``
    runs the fast kernel's full tiles and the edge kernel."""

    signature_fast = SIGNATURE[:-1] + ", uint64[::1], uint64[::1])"
    #: Maps kept at most (a map holds its matrix's address; old ones are dropped, not freed one by one).
    MAPS_KEPT = 16

    def __init__(self, *args, partial: "TmaTiles | None" = None, thread_copies: "TmaTiles | None" = None,
                 thread_copies_when=None, aligned_a_when=None, b_rows: "TmaTiles | None" = None, b_rows_when=None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.partial = partial
        self.thread_copies = thread_copies
        self.thread_copies_when = thread_copies_when
        self.b_rows = b_rows  # a B_ROWS_MOD_4 build: B read by its rows' residues mod 4, not copied
        self.b_rows_when = b_rows_when  # (m, n, k) → read B so rather than copy it (the step's policy), or None
        self.aligned_a_when = aligned_a_when  # (m, n, k) → copy A into 128-byte rows first (aligned_a_pays), or None
        self._maps = Kept(self.MAPS_KEPT)
        self._copies = Workspaces()  # A's and B's rows widened for the copy engine (readable_copy)

    def signature(self, variant: str) -> str:
        return self.signature_fast if variant == "fast" else SIGNATURE

    def plan_key(self, a, b, pointers, stream) -> tuple:
        return (*super().plan_key(a, b, pointers, stream), *pointers[:2])  # the plan holds A's and B's tensor maps

    def sm_count(self) -> int:
        """The SMs a launch plans for (split-K's slices, stream-K's fallback rule): the GPU's, or the simulator's grid."""
        return SIMULATED_RESIDENT_BLOCKS if SIMULATOR else cuda.get_current_device().MULTIPROCESSOR_COUNT

    def k_tiles(self, k: int) -> int:
        """The k-tiles the kernel walks: whole ones, or every one with a partial last (a ``PARTIAL_TILES`` build)."""
        block_k = self.config.BLOCK_K
        return ceil_div(k, block_k) if getattr(self.config, "PARTIAL_TILES", False) else k // block_k

    def tensor_maps(self, a, b) -> tuple:
        """A's and B's tensor maps (device arrays), made on first use for these buffers and shapes; a
        ``THREAD_COPIES`` build's kernel reads A and B itself and takes two blank maps it never reads."""
        config = self.config
        if self.constants.get("THREAD_COPIES"):
            blank = self._maps.made("blank", lambda: cuda.to_device(np.zeros(16, np.uint64)))
            return blank, blank
        a_rows = self.constants.get("A_BOX_ROWS", config.BLOCK_M)  # a cluster build loads part of A's tile
        tf32 = bool(self.constants.get("TF32_COPIES"))  # the copy engine rounds A and B to TF32 as it loads them
        b_stride = self.constants["B_STRIDE"]

        def b_map():  # a B_ROWS_MOD_4 build reads B through four maps, one a residue of its rows mod 4
            if self.constants.get("B_ROWS_MOD_4"):
                return tensor_maps_rows_mod_4(b, config.BLOCK_K // 4, b_stride, tf32=tf32)
            return tensor_map_2d(b, config.BLOCK_K, b_stride, tf32=tf32)
        return self._maps.made((device_pointer(a), a.shape, device_pointer(b), b.shape), lambda: (
            tensor_map_2d(a, a_rows, config.BLOCK_K, swizzle_128=True, tf32=tf32), b_map()))

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        self.configured("fast", (full_cols, full_rows), stream, launches)(*flat, *sizes,
                                                                           *self.tensor_maps(*matrices))

    def labelled_variants(self) -> list:
        """The fast and edge kernels, and the ``partial``, ``thread_copies`` and ``b_rows`` builds' fast kernels if
        any and of this kernel (step 22's ``b_rows`` is step 18's build: step 18 lists it)."""
        return super().labelled_variants() + [(f"{built.name}_fast", built, "fast")
                                              for built in (self.partial, self.thread_copies, self.b_rows)
                                              if built is not None and built.function is self.function]

    def generated_source(self) -> str:
        """The fast and edge kernels as compiled, and the ``partial``, ``thread_copies`` and ``b_rows`` builds' fast
        kernels (if any)."""
        source = super().generated_source()
        if self.partial is not None:
            source += ("\n# ---- partial-tile build (PARTIAL_TILES) of the fast kernel: every tile and k-tile, the "
                       "store kept to C ----\n" + self.partial.generated("fast"))
        if self.thread_copies is not None:
            source += ("\n# ---- THREAD_COPIES build of the fast kernel: the producer's threads copy A and B with "
                       "cp.async ----\n" + self.thread_copies.generated("fast"))
        if self.b_rows is not None and self.b_rows.function is self.function:
            source += ("\n# ---- B_ROWS_MOD_4 build of the fast kernel: B read through four maps, one a residue of "
                       "its rows mod 4 ----\n" + self.b_rows.generated("fast"))
        return source

    @staticmethod
    def copies(a, b) -> tuple[bool, bool]:
        """Whether A and B must be copied before the copy engine can read them: a row pitch that is not a multiple of
        16 bytes (K, resp. N, not a multiple of 4), or an address that is not 16-byte aligned."""
        k, n = a.shape[1], b.shape[1]
        return k % 4 != 0 or device_pointer(a) % 16 != 0, n % 4 != 0 or device_pointer(b) % 16 != 0

    def partial_applies(self, a, b, c) -> bool:
        """Whether this product runs on the ``partial`` build: there is one, and the shape is not whole tiles that the
        copy engine can read as they are (C takes scalar stores: its alignment does not matter)."""
        m, k = a.shape
        n = b.shape[1]
        if self.partial is None or not (m > 0 and n > 0 and k > 0):
            return False
        cfg = self.config
        whole = m % cfg.BLOCK_M == 0 and n % cfg.BLOCK_N == 0 and k % cfg.BLOCK_K == 0
        return not whole or any(self.copies(a, b)) or device_pointer(c) % 16 != 0

    def uses_thread_copies(self, m: int, n: int, k: int, copy_a: bool, copy_b: bool) -> bool:
        """Whether a product whose A (``copy_a``) or B the copy engine cannot read runs on the ``thread_copies``
        build — the producer's threads copying A and B as they are — rather than copying them into readable rows
        for ``partial``: the step's policy, ``thread_copies_when(m, n, k, copy_a, copy_b)``."""
        return self.thread_copies is not None and bool(self.thread_copies_when(m, n, k, copy_a, copy_b))

    def launch_through_numba(self, a, b, c, stream=0, launches: list | None = None) -> None:
        (m, n, k), flat = flat_operands(a, b, c)
        if not self.partial_applies(a, b, c) or max(m * readable_width(k, LINE_FLOATS), k * readable_width(n)) >= 2 ** 32:
            super().launch_through_numba(a, b, c, stream, launches)  # (a copy's indices must stay in 32 bits)
            return
        cfg = self.partial.config
        copy_a, copy_b = self.copies(a, b)
        if (copy_a or copy_b) and self.uses_thread_copies(m, n, k, copy_a, copy_b):  # A and B read as they are
            build, matrices = self.thread_copies, (a, b)
        else:
            build = self.partial
            if copy_b and self.reads_b_by_rows(m, n, k, b):  # B by its rows' residues mod 4: not copied
                build, copy_b = self.b_rows, False
            aligned_a = self.aligns_a(m, n, k)  # A's rows onto 128-byte lines, readable or not
            matrices = (self.readable_copy(0, flat, (m, n, k), stream, launches, LINE_FLOATS if aligned_a else 4)
                        if copy_a or aligned_a else a,
                        self.readable_copy(1, flat, (m, n, k), stream, launches) if copy_b else b)
        rows, cols = ceil_div(m, cfg.BLOCK_M), ceil_div(n, cfg.BLOCK_N)
        sizes = (np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(rows), np.uint32(cols))
        with quiet_small_grids():  # a small product is a small grid on purpose
            build.launch_full_tiles(flat, sizes, rows, cols, stream, matrices, launches)

    def reads_b_by_rows(self, m: int, n: int, k: int, b) -> bool:
        """Whether the ``b_rows`` build reads B instead of a readable copy: B is 16-byte aligned (only its pitch is
        unreadable) and :meth:`b_by_rows_at` says so."""
        return device_pointer(b) % 16 == 0 and self.b_by_rows_at(m, n, k)

    def b_by_rows_at(self, m: int, n: int, k: int) -> bool:
        """Whether a fresh (16-byte-aligned) B of K × N is read by its rows mod 4: N is not a multiple of 4, there is
        a ``b_rows`` build, B has at least 4 rows, and the step's policy ``b_rows_when(m, n, k)`` says so."""
        return (n % 4 != 0 and k >= 4 and self.b_rows is not None and self.b_rows_when is not None
                and bool(self.b_rows_when(m, n, k)))

    def aligns_a(self, m: int, n: int, k: int) -> bool:
        """Whether A is copied into rows of a multiple of 32 floats before the ``partial`` build runs: K is not such a
        multiple (A's rows off the L2 lines) and ``aligned_a_when(m, n, k)`` says the copy pays."""
        return k % LINE_FLOATS != 0 and self.aligned_a_when is not None and bool(self.aligned_a_when(m, n, k))

    #: Threads a block of :func:`copy_rows_kernel`.
    COPY_THREADS = 256

    def readable_copy(self, which: int, flat: tuple, sizes: tuple[int, int, int], stream,
                      launches: list | None = None, floats: int = 4):
        """A (``which`` 0) or B (1) copied into rows the copy engine can read — each row widened to a multiple of
        ``floats`` (4, or 32 for rows on 128-byte lines), zeros past its end, in a buffer kept per shape and stream
        (16-byte aligned) — as a 2-D array the kernel's tensor map is made of. The kernel still takes A and B
        themselves (step 18 reads them for its specials) and M, N, K as they are; the widened rows' zeros, like the
        copy engine's, add nothing."""
        m, n, k = sizes
        rows, cols = (m, k) if which == 0 else (k, n)
        width = readable_width(cols, floats)
        buffer = self._copies.get(("AB"[which], rows, width), stream,
                                  lambda: cuda.device_array(rows * width, dtype=np.float32, stream=stream))
        arguments = (*flat, np.uint32(m), np.uint32(n), np.uint32(k), np.uint32(which), np.uint32(width), buffer)
        # on a GPU a thread four floats; on the simulator, where every thread is a Python thread started and joined,
        # one block whose threads stride over the rest (the same kernel and copy)
        blocks = 1 if SIMULATOR else ceil_div(rows * width // 4, self.COPY_THREADS)
        self.launch_or_record(copy_rows_kernel, self.rows_signature, blocks, self.COPY_THREADS, stream, arguments,
                              launches)
        return buffer.reshape(rows, width)

    #: The argument types of :func:`copy_rows_kernel` (and of split-K's reduction kernel): a, b, c, m, n, k, two more
    #: sizes, a float32 array.
    rows_signature = SIGNATURE[:-1] + ", float32[::1])"

    @staticmethod
    def launch_or_record(function, signature: str, blocks: int, threads: int, stream, arguments: tuple,
                         launches: list | None = None) -> None:
        """Launch a kernel of (A, B, C, …) over ``blocks`` blocks — or, given a list of ``launches`` (a launch plan
        being recorded), write the launch down there."""
        if launches is not None:
            if not SIMULATOR and not function.overloads:
                function.compile(signature)
            launches.append((function, signature, blocks, threads, 0, stream, arguments, None))
            return
        function[blocks, threads, stream](*arguments)


class PersistentTmaTiles(TmaTiles):
    """A TMA build whose fast kernel is persistent: a grid of as many blocks as the GPU holds at once (at most one per
    full tile), each walking tiles blockIdx.x, blockIdx.x + gridDim.x, … itself (step 19)."""

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        blocks = min(full_rows * full_cols, self.resident_blocks("fast"))
        self.configured("fast", blocks, stream, launches)(*flat, *sizes, *self.tensor_maps(*matrices))


class ClusterTmaTiles(TmaTiles):
    """A TMA build whose fast kernel runs in clusters of ``CLUSTER`` blocks along the grid's columns (step 20): the
    blocks of a cluster compute tiles side by side in one tile-row, each loads ``A_BOX_ROWS`` rows of the A tile they
    share and multicasts them to all. Full tile-columns come in whole clusters; a last odd one runs on the edge
    kernel. (The cluster is the build's ``CLUSTER`` constant: :attr:`TiledKernels.cluster`.)"""


def flops_per_copied_byte(m: int, n: int, k: int, copy_a: bool, copy_b: bool) -> float:
    """The product's FLOPs (2·M·N·K) per byte of the matrices a readable copy would move (A where ``copy_a``, B where
    ``copy_b``): what a step's ``thread_copies_when`` weighs — the copy costs those bytes, a THREAD_COPIES build's
    slower producer costs time per FLOP."""
    copied_bytes = 4 * ((m * k if copy_a else 0) + (k * n if copy_b else 0))
    return 2 * m * n * k / copied_bytes if copied_bytes else float("inf")


def launched_slices(policy, tiles: int, k_tiles: int, sms: int) -> int:
    """How many slices of K a split-K launch runs: what ``policy(tiles, k_tiles, sms)`` asks for, none of them empty —
    the kernel gives each slice ⌈k-tiles / slices⌉ k-tiles, so 17 k-tiles asked in 8 slices of 3 run in 6 (8 would
    leave the last two past K)."""
    slices = max(1, int(policy(tiles, k_tiles, sms)))
    return ceil_div(k_tiles, ceil_div(k_tiles, slices)) if k_tiles > 0 else slices


class SplitKTmaTiles(TmaTiles):
    """A TMA build whose fast kernel may split K (split-K; steps 17 and 18): where a product has fewer full tiles than
    the GPU has SMs, a launch's grid gets a third dimension of ``slices`` — slice z computes its share of every full
    tile's k-tiles into a workspace (``partials``: slices × M × N floats, slice z at z·M·N) — and a second kernel,
    ``reduce``, adds the slices in order into C. One slice: the fast kernel writes C itself, as a :class:`TmaTiles`
    build's does.

    ``slices(tiles, k_tiles, sms)`` is the step's policy (how many slices for so many full tiles and k-tiles on so
    many SMs); ``reduce`` a kernel of (a, b, c, m, n, k, rows, cols, partials) over C's first rows × cols elements.
    The fast kernel takes ``partials`` as its last argument (a one-float placeholder when it does not split), so a
    recorded launch plan replays both launches with only A, B and C changed (the workspace is the plan's own)."""

    signature_fast = TmaTiles.signature_fast[:-1] + ", float32[::1])"
    REDUCE_THREADS = 256

    def __init__(self, *args, slices, reduce, **kwargs):
        super().__init__(*args, **kwargs)
        self.slices = slices
        self.reduce = reduce
        self._partials = Workspaces()

    def workspace(self, floats: int, stream):
        """``floats`` float32 of device memory for the partial tiles, kept per context, size and stream."""
        return self._partials.get(floats, stream, lambda: cuda.device_array(floats, dtype=np.float32, stream=stream))

    def slice_count(self, m: int, n: int, k: int, tiles: int) -> int:
        """How many slices the policy gives this product (:func:`launched_slices`; 1 where the workspace's indices
        would pass 2^32)."""
        slices = launched_slices(self.slices, tiles, self.k_tiles(k), self.sm_count())
        return slices if slices * m * n < 2 ** 32 else 1

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        m, n, k = (int(size) for size in sizes[:3])
        slices = self.slice_count(m, n, k, full_rows * full_cols)
        partials = self.workspace(slices * m * n if slices > 1 else 1, stream)
        self.configured("fast", (full_cols, full_rows, slices), stream, launches)(
            *flat, *sizes, *self.tensor_maps(*matrices), partials)
        if slices > 1:
            rows = min(full_rows * self.config.BLOCK_M, m)  # C's part the tiles cover (a partial build's: all C)
            cols = min(full_cols * self.config.BLOCK_N, n)
            arguments = (*flat, *sizes[:3], np.uint32(rows), np.uint32(cols), partials)
            # the reduction kernel: a, b, c, m, n, k, C's rows and columns the tiles cover, the partials
            self.launch_or_record(self.reduce, self.rows_signature, ceil_div(rows * cols, self.REDUCE_THREADS),
                                  self.REDUCE_THREADS, stream, arguments, launches)


def stream_k_grid(tiles: int, k_tiles: int, blocks: int, split, min_share: int) -> tuple[int, int, int]:
    """(blocks, data-parallel tiles, stream-K tiles) of a :class:`StreamKTmaTiles` launch of ``tiles`` tiles of
    ``k_tiles`` k-tiles on at most ``blocks`` blocks: ``split(tiles, blocks)``'s, except that nothing is split where
    whole waves run beside the split and a tile is shorter than ``min_share`` k-tiles; where nothing is split, no block
    without a tile (the persistent tile loop); where everything is (a small product), no block with fewer than
    ``min_share`` k-tiles, but a block a tile."""
    data_parallel, stream_k = split(tiles, blocks)
    if data_parallel and k_tiles < min_share:  # a whole tile is shorter than a share: nothing to split
        data_parallel, stream_k = tiles, 0
    if stream_k == 0:
        blocks = min(blocks, tiles)
    elif data_parallel == 0:
        blocks = min(blocks, max(tiles, stream_k * k_tiles // min_share))
    return blocks, data_parallel, stream_k


class StreamKTmaTiles(TmaTiles):
    """A TMA build whose fast kernel runs step 11's schedule on a persistent grid of one block an SM (step 21):
    ``split(tiles, blocks)`` gives (data-parallel, stream-K) tiles, and the kernel takes the partial sums' workspace
    (a tile a block), the flags (one a consumer thread: ``THREADS`` a block) and the two counts after the tensor maps.
    Where nothing is split the grid has no more blocks than tiles (the persistent tile loop); where everything is
    (a small product), no more than give each block ``min_share`` k-tiles, or one tile; where a tile has fewer than
    ``min_share`` k-tiles and whole waves run beside the split, nothing is split. Where
    ``fallback_when(tiles, k_tiles, sms)`` says so, the ``fallback`` build (step 17's) runs the launch instead.
    Workspace and flags are kept per stream (:class:`Workspaces`); every launch leaves the flags at 0 (each raised flag
    is lowered by the thread that read it). A build in clusters (a ``CLUSTER`` constant: :attr:`TiledKernels.cluster`;
    step 23) schedules clusters over groups of tiles side by side instead of blocks over tiles."""

    schedule = "stream-K"
    signature_fast = TmaTiles.signature_fast[:-1] + ", float32[::1], int32[::1], uint32, uint32)"

    def __init__(self, *args, split, min_share: int = 1, fallback: TmaTiles | None = None, fallback_when=None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.split = split
        self.min_share = min_share
        self.fallback = fallback
        self.fallback_when = fallback_when
        self._stream_k = Workspaces()

    def runs_fallback(self, tiles: int, k: int) -> bool:
        """Whether the ``fallback`` build runs a launch of so many full tiles and this K: ``fallback_when`` says so."""
        return self.fallback is not None and bool(self.fallback_when(tiles, self.k_tiles(k), self.sm_count()))

    def launch_full_tiles(self, flat, sizes, full_rows: int, full_cols: int, stream, matrices: tuple,
                          launches: list | None = None) -> None:
        tiles = full_rows * full_cols
        if self.runs_fallback(tiles, int(sizes[2])):
            self.fallback.launch_full_tiles(flat, sizes, full_rows, full_cols, stream, matrices, launches)
            return
        # A build in clusters (``cluster``) schedules its clusters over groups of that many tiles side by side (full
        # tile-columns come in whole clusters); every other build, its blocks over tiles.
        # A partial-tile build's last tile-column may be odd: its cluster's last block computes a tile past C (the copy
        # engine reads zeros there, and a clipping store writes nothing), so the kernel is told whole groups.
        group = self.cluster[0] if self.cluster else 1
        if full_cols % group:
            full_cols = ceil_div(full_cols, group) * group
            sizes = (*sizes[:4], np.uint32(full_cols))
        units, data_parallel, stream_k = stream_k_grid(full_rows * full_cols // group, self.k_tiles(int(sizes[2])),
                                                       max(1, self.resident_blocks("fast") // group), self.split,
                                                       self.min_share)
        blocks, config = units * group, self.config
        workspace, flags = self._stream_k.get(blocks, stream, lambda: (
            cuda.device_array(blocks * config.BLOCK_M * config.BLOCK_N, dtype=np.float32, stream=stream),
            cuda.to_device(np.zeros(blocks * config.THREADS, dtype=np.int32), stream=stream)))
        self.configured("fast", blocks, stream, launches)(*flat, *sizes, *self.tensor_maps(*matrices), workspace,
                                                          flags, np.uint32(data_parallel), np.uint32(stream_k),
                                                          *self.more_arguments(flat, sizes))

    def more_arguments(self, flat, sizes) -> tuple:
        """What the fast kernel takes after the two counts: nothing here (:class:`ClusterStreamKTmaTiles`: C's tensor
        map)."""
        return ()


class ClusterStreamKTmaTiles(StreamKTmaTiles):
    """Step 23's launch: :class:`StreamKTmaTiles` in clusters of ``CLUSTER`` blocks (its units are groups of
    ``CLUSTER`` tiles side by side in one tile-row, its grid the clusters the GPU holds), whose fast kernel stores C
    through the copy engine — a third tensor map after the two counts: C's, boxes of ``C_CHUNK_ROWS`` ×
    ``C_BOX_COLS`` in the 128-byte swizzle, clipped to C by the copy engine. The map holds C's address, so a recorded
    launch plan is keyed by C's address too. Tile-columns that do not come in whole clusters run on the ``partial``
    build (its last block computes a tile past C), never on the edge kernel.

    The copy engine writes C only where its row pitch is a multiple of 16 bytes (N a multiple of 4) and C is 16-byte
    aligned; any other product runs on ``scalar_stores`` (step 21's build: scalar stores), whole."""

    signature_fast = StreamKTmaTiles.signature_fast[:-1] + ", uint64[::1])"

    def __init__(self, *args, scalar_stores: TmaTiles | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.scalar_stores = scalar_stores
        self._c_maps = Kept(self.MAPS_KEPT)

    @staticmethod
    def c_writable(b, c) -> bool:
        """Whether the copy engine can write C: its row pitch a multiple of 16 bytes (N, B's columns, a multiple of
        4), its address 16-byte aligned."""
        return b.shape[1] % 4 == 0 and device_pointer(c) % 16 == 0

    def launch_through_numba(self, a, b, c, stream=0, launches: list | None = None) -> None:
        if self.scalar_stores is not None and not self.c_writable(b, c):
            self.scalar_stores.launch_through_numba(a, b, c, stream, launches)
            return
        super().launch_through_numba(a, b, c, stream, launches)

    def partial_applies(self, a, b, c) -> bool:
        """:meth:`TmaTiles.partial_applies`, and whole tiles whose tile-columns do not come in whole clusters: the
        ``partial`` build covers them all in one launch (its last cluster's last block on a tile past C), where the
        full-tile build would leave the last tile-column to the edge kernel."""
        return super().partial_applies(a, b, c) or (self.partial is not None and b.shape[1] > 0
                                                   and (b.shape[1] // self.config.BLOCK_N) % self.cluster[0] != 0)

    def plan_key(self, a, b, pointers, stream) -> tuple:
        return (*super().plan_key(a, b, pointers, stream), pointers[2])  # the plan holds C's tensor map too

    def more_arguments(self, flat, sizes) -> tuple:
        """C's tensor map (a device array), made on first use for this buffer and shape. ``flat[2]``: C, flat."""
        m, n = int(sizes[0]), int(sizes[1])
        return (self._c_maps.made((device_pointer(flat[2]), m, n), lambda: tensor_map_2d(
            flat[2].reshape(m, n), self.constants["C_CHUNK_ROWS"], self.constants["C_BOX_COLS"], swizzle_128=True)),)


__all__ = ["ClusterStreamKTmaTiles", "ClusterTmaTiles", "LINE_FLOATS",
           "PersistentTmaTiles", "SplitKTmaTiles", "StreamKTmaTiles", "TmaTiles",
           "ALIGNED_A_MIN_N", "ALIGNED_A_MIN_PRODUCT", "aligned_a_pays",
           "flops_per_copied_byte", "launched_slices", "stream_k_grid"]
