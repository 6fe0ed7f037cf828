"""The mma.sync steps of the tensor-core chapter, 12 and 13 (step 14, on wgmma, has tests/test_warpgroup_ops.py).

* the TF32 rounding (NumPy reference, and ``to_tf32`` inside a kernel) and 3xTF32's split (``split_tf32``): bit
  for bit against its NumPy twin, ``big`` is the nearest TF32 value, ``big + small = x`` exactly, and a NaN
  survives in ``small``;
* one warp's ``mma_tf32`` against the NumPy reference with the documented fragment layout — and a kernel that
  passes the fragments the wrong way round gets a wrong answer (so the twin really checks the layout);
* both kernels, fast and edge, on small products: step 12 must equal float64 on TF32-rounded inputs to float32
  accuracy (which only holds if every fragment is placed right), step 13 must meet the float32 tolerance, and a
  NaN in A (the GPU's own NaN, 0x7FFFFFFF, which add-and-clear carries into the sign) reaches its row of C.
  On the simulator they run a small tile configuration (see ``SIMULATED``) and one full tile of the shipped one;
* their PTX: the tensor-core instructions, the roundings, the copy pipeline, no local memory.

On the simulator (CI) the kernels run through the twins; on a GPU (``pytest -m gpu`` or a plain run there) the same
tests run the real instructions.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from gemm_steps.harness.ptx import ptx_stats
from gemm_steps.steps import tensor_cores, three_tf32
from gemm_steps.toolkit.backend import SIMULATOR
from gemm_steps.toolkit.tile_config import tile_fields
from gemm_steps.toolkit.tensor_core_ops import (load_matrix_x4, mma_tf32, mma_tf32_reference, round_to_tf32,
                                                round_to_tf32_even, split_tf32, split_tf32_parts, to_tf32)
from experiments.tensor_cores import one_warp_mma
from gemm_steps.harness.verify import tf32_tolerance
from helpers import COMPARE, parse_expectation, random_matrices, reference, rel_error, rng_for, tolerance

DROPPED = np.uint32(0x1FFF)  # the 13 mantissa bits TF32 does not keep


# -- TF32 rounding ---------------------------------------------------------------------------------------------

def test_round_to_tf32_keeps_ten_mantissa_bits_and_rounds_to_nearest():
    x = rng_for("tf32").standard_normal(10000).astype(np.float32) * np.float32(1000)
    r = round_to_tf32(x)
    assert not (r.view(np.uint32) & DROPPED).any(), "low 13 bits must be zero"
    ulp = np.spacing(np.abs(r)) * 2 ** 13  # TF32's unit in the last place, at r's binade
    assert np.all(np.abs(r.astype(np.float64) - x) <= ulp / 2 * (1 + 1e-9)), "farther than half a TF32 unit"
    assert np.array_equal(round_to_tf32(r), r), "TF32 values are left alone"


def test_round_to_tf32_ties_go_away_from_zero_and_specials_survive():
    half = np.float32(2.0 ** -11)  # half a TF32 unit at 1.0
    values = np.array([1 + half, -(1 + half), 1 + 3 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    expected = np.array([1 + 2 * half, -(1 + 2 * half), 1 + 4 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    assert np.array_equal(round_to_tf32(values), expected)
    assert np.isnan(round_to_tf32(np.float32(np.nan)))


def test_round_to_tf32_even_breaks_ties_to_the_even_neighbour_and_matches_nearest_elsewhere():
    """The copy engine's rounding through a TFLOAT32 tensor map (measured on an H200: ties to even)."""
    half = np.float32(2.0 ** -11)
    values = np.array([1 + half, -(1 + half), 1 + 3 * half, 1 + 1.5 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    expected = np.array([1.0, -1.0, 1 + 4 * half, 1 + 2 * half, np.inf, -np.inf, 0.0], dtype=np.float32)
    assert np.array_equal(round_to_tf32_even(values), expected)
    assert np.isnan(round_to_tf32_even(np.float32(np.nan)))
    x = rng_for("tf32 even").standard_normal(10000).astype(np.float32)
    tie = (x.view(np.uint32) & DROPPED) == 0x1000  # exactly half a unit dropped: about 1 in 8,192
    assert np.array_equal(round_to_tf32_even(x)[~tie], round_to_tf32(x)[~tie])


@cuda.jit
def _round_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = to_tf32(x[i])


def test_to_tf32_in_a_kernel_rounds_like_the_reference():
    x = (rng_for("to_tf32").standard_normal(64) * 3).astype(np.float32)
    x[:3] = [1 + 2.0 ** -11, -(1 + 2.0 ** -11), 3.0]
    out = cuda.device_array_like(x)
    _round_kernel[1, 64](cuda.to_device(x), out)
    assert np.array_equal(out.copy_to_host().view(np.uint32), round_to_tf32(x).view(np.uint32))


@cuda.jit
def _split_kernel(x, big, small):
    i = cuda.grid(1)
    if i < x.size:
        big[i], small[i] = split_tf32(x[i])


def _awkward_values():
    """Random values, ties, the largest floats, subnormals, infinities, NumPy's NaN and the GPU's NaN."""
    x = (rng_for("cheap roundings").standard_normal(200) * 2.0 ** rng_for("exp").integers(-30, 30, 200))
    specials = [1 + 2.0 ** -11, -(1 + 2.0 ** -11), 1 + 3 * 2.0 ** -11, 3.4e38, -3.4e38, 1e-45, -1e-40, 0.0, -0.0,
                np.inf, -np.inf, np.nan]
    x = np.concatenate([x, specials]).astype(np.float32)
    gpu_nan = np.array([0x7FFFFFFF, 0xFFFFFFFF], dtype=np.uint32).view(np.float32)
    return np.concatenate([x, gpu_nan])


def _top_bits(x):
    """What the tensor core reads of an operand: its low 13 bits cleared."""
    return (np.asarray(x, np.float32).view(np.uint32) & ~DROPPED).view(np.float32)


def test_split_in_a_kernel_matches_its_twin_bit_for_bit():
    x = _awkward_values()
    outs = [cuda.device_array_like(x) for _ in range(2)]
    _split_kernel[1, 256](cuda.to_device(x), *outs)
    for got, want, name in zip((o.copy_to_host() for o in outs), split_tf32_parts(x), ("big", "small")):
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{name} differs from its twin at {x[~same][:4]}"


def test_split_gives_the_nearest_tf32_value_and_an_exact_remainder():
    """big is cvt.rna's rounding of x and big + small = x exactly (finite x below the largest TF32 binade); the
    GPU's NaN carries into big's sign, big is ±0, and the NaN survives in what the tensor core reads of small."""
    x = _awkward_values()
    ordinary = np.isfinite(x) & (np.abs(x) < 3e38)
    big, small = split_tf32_parts(x)
    assert np.array_equal(big[ordinary].view(np.uint32), round_to_tf32(x[ordinary]).view(np.uint32))
    assert np.array_equal(big[ordinary].astype(np.float64) + small[ordinary], x[ordinary].astype(np.float64))
    assert not (big[ordinary].view(np.uint32) & DROPPED).any(), "big must be a TF32 value"
    gpu_nan = np.array([0x7FFFFFFF, 0xFFFFFFFF], dtype=np.uint32).view(np.float32)
    big, small = split_tf32_parts(gpu_nan)
    assert (big == 0).all() and np.isnan(_top_bits(small)).all()


# -- one warp's mma ----------------------------------------------------------------------------------------------

@cuda.jit
def _one_mma_rows_swapped(a, b, c, d):
    """experiments.tensor_cores.one_warp_mma, but passing A's rows group + 8 where rows group belong (a1 ↔ a0): a
    layout mistake."""
    lane = cuda.threadIdx.x
    group, pair = lane // 4, lane % 4
    d0, d1, d2, d3 = mma_tf32(a[group + 8, pair], a[group, pair], a[group + 8, pair + 4], a[group, pair + 4],
                              b[pair, group], b[pair + 4, group],
                              c[group, 2 * pair], c[group, 2 * pair + 1], c[group + 8, 2 * pair],
                              c[group + 8, 2 * pair + 1])
    d[group, 2 * pair] = d0
    d[group, 2 * pair + 1] = d1
    d[group + 8, 2 * pair] = d2
    d[group + 8, 2 * pair + 1] = d3


def _run_one_mma(kernel, rng):
    a = round_to_tf32(rng.standard_normal((16, 8)).astype(np.float32))
    b = round_to_tf32(rng.standard_normal((8, 8)).astype(np.float32))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = cuda.to_device(np.full((16, 8), np.nan, dtype=np.float32))
    kernel[1, 32](cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), d)
    expected = mma_tf32_reference(a, b, c)
    return float(np.abs(d.copy_to_host() - expected).max() / np.abs(expected).max())


def test_one_warp_mma_matches_the_documented_fragment_layout():
    assert _run_one_mma(one_warp_mma, rng_for("mma")) < 1e-6


def test_a_wrong_fragment_layout_gives_a_wrong_product():
    assert _run_one_mma(_one_mma_rows_swapped, rng_for("mma swapped")) > 0.1


_PIECE_STRIDE = 12  # floats per row of the 16×8 A piece in shared memory: padded, and a multiple of 4 (16 bytes)
_PIECE_FLOATS = 16 * _PIECE_STRIDE  # a global constant: on the GPU a shared array's size must be one


@cuda.jit
def _one_matrix_load(piece, out, rows_swapped):
    """One warp: a 16×8 piece (flat, rows padded to _PIECE_STRIDE) into shared memory, then ``load_matrix_x4`` with
    each lane naming row lane % 16 at k 4·(lane // 16), as step 12 does (or rows 0–7 and 8–15 swapped)."""
    tile = cuda.shared.array(_PIECE_FLOATS, np.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, _PIECE_FLOATS, 32):
        tile[i] = piece[i]
    cuda.syncthreads()
    row = (lane + 8) % 16 if rows_swapped else lane % 16
    x0, x1, x2, x3 = load_matrix_x4(tile, row * _PIECE_STRIDE + lane // 16 * 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3


def _matrix_load(rows_swapped: bool) -> tuple[np.ndarray, np.ndarray]:
    a = rng_for("ldmatrix").standard_normal((16, 8), dtype=np.float32)
    padded = np.zeros((16, _PIECE_STRIDE), np.float32)
    padded[:, :8] = a
    out = cuda.to_device(np.full((32, 4), np.nan, np.float32))
    _one_matrix_load[1, 32](cuda.to_device(padded.ravel()), out, rows_swapped)
    lanes = np.arange(32)
    group, pair = lanes // 4, lanes % 4
    expected = np.stack([a[group, pair], a[group + 8, pair], a[group, pair + 4], a[group + 8, pair + 4]], axis=1)
    return out.copy_to_host(), expected


def test_load_matrix_x4_gives_each_lane_its_a_fragment():
    """ldmatrix with step 12's row addresses returns a0 … a3 of the documented mma layout, bit for bit — and the
    same call with the two row halves swapped does not (so the twin really reads the addresses the lanes give)."""
    got, expected = _matrix_load(rows_swapped=False)
    assert np.array_equal(got, expected)
    got, expected = _matrix_load(rows_swapped=True)
    assert not np.array_equal(got, expected)


# -- the two kernels, fast and edge ----------------------------------------------------------------------------------

#: On the simulator every lane of a warp meets its 31 neighbours at each mma, so the shipped 128×256 tiles (8 warps,
#: 1,024 mma per k-tile) take about a minute per product there, and the steps run their ``SIMULATOR_CONFIG`` there
#: (the same kernel source with 4 warps of 2×2 mma pieces); its full-tile product has 4 k-tiles, more than the
#: pipeline's 3 stages, so the stages are reused. The shipped configuration runs one full tile of step 12 here, and
#: every test on a GPU.
SIMULATED = tensor_cores.SIMULATOR_CONFIG
_BUILT = {}


def _tiled(module, shipped: bool):
    """The step as ``get_step`` runs it here (small tiles on the simulator), or built for the shipped tiles."""
    if not (shipped and SIMULATOR):
        return module.TUNING.kernels()
    if module not in _BUILT:
        _BUILT[module] = module.build(module.SEARCH_SPACE[0])
    return _BUILT[module]


def test_on_the_simulator_the_steps_run_small_tiles_of_the_same_kernel():
    for module in (tensor_cores, three_tf32):
        tiles = tile_fields(module.TUNING.kernels().config)
        assert tiles == (tile_fields(SIMULATED) if SIMULATOR else tiles)  # each step's own Config, step 12's tiles
        assert _tiled(module, shipped=True).function is module.TUNING.kernels().function


def _full_tiles(module, shipped=False):
    """One block tile; 4 k-tiles in the small configuration, 1 in the shipped one (a minute otherwise)."""
    config = _tiled(module, shipped).config
    return config.BLOCK_M, config.BLOCK_N, config.BLOCK_K * (1 if shipped and SIMULATOR else 4)


#: name → (shipped configuration on the simulator?, shape or None for full tiles).
SHAPES = {"full_tiles": (False, None), "ragged": (False, (37, 21, 19)), "shipped_full_tile": (True, None)}


def _shape(module, shape):
    shipped, fixed = SHAPES[shape]
    return fixed or _full_tiles(module, shipped)


def _run(module, m, n, k, name, shipped=False, a=None):
    if a is None:
        a, b = random_matrices(rng_for(name), m, n, k)
    else:
        b = random_matrices(rng_for(name), m, n, k)[1]
    c = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
    _tiled(module, shipped).launch(cuda.to_device(a), cuda.to_device(b), c)
    return a, b, c.copy_to_host()


def _fits(module, m, n, shipped=False) -> bool:
    config = _tiled(module, shipped).config
    return m % config.BLOCK_M == 0 and n % config.BLOCK_N == 0


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_tf32_step_is_exact_on_tf32_rounded_inputs(shape):
    """Step 12 computes the float32 sum of exact TF32 products: against float64 on *rounded* inputs its error is
    float32's; against the true product it is TF32's (~3e-4), within verify's ``tf32_tolerance`` — which a wrong
    fragment would exceed by far."""
    m, n, k = _shape(tensor_cores, shape)
    a, b, c = _run(tensor_cores, m, n, k, f"tf32 {shape}", shipped=SHAPES[shape][0])
    assert not np.isnan(c).any(), "unwritten elements"
    on_rounded = rel_error(c, round_to_tf32(a), round_to_tf32(b))
    assert on_rounded <= tolerance(k), f"error {on_rounded:.2e} vs TF32-rounded inputs, tolerance {tolerance(k):.2e}"
    error = rel_error(c, a, b)
    assert max(1e-5, 2 * tolerance(k)) < error <= min(2e-3, tf32_tolerance(k)), \
        f"TF32's own error {error:.2e}: the inputs were rounded"


#: Step 13 at the shipped configuration on the simulator takes a minute per product: on a GPU only.
THREE_TF32_SHAPES = [s if not SHAPES[s][0] else pytest.param(s, marks=pytest.mark.skipif(
    SIMULATOR, reason="the shipped tiles of step 13 take about a minute on the simulator; step 12 covers them"))
    for s in SHAPES]


@pytest.mark.parametrize("shape", THREE_TF32_SHAPES, ids=list(SHAPES))
def test_three_tf32_step_meets_the_float32_tolerance(shape):
    m, n, k = _shape(three_tf32, shape)
    a, b, c = _run(three_tf32, m, n, k, f"3xtf32 {shape}", shipped=SHAPES[shape][0])
    assert not np.isnan(c).any(), "unwritten elements"
    error = rel_error(c, a, b, reference(a, b))
    assert error <= tolerance(k), f"error {error:.2e} > float32 tolerance {tolerance(k):.2e}"


def test_the_shapes_reach_both_kernels():
    for module in (tensor_cores, three_tf32):
        m, n, _ = _shape(module, "full_tiles")
        assert _fits(module, m, n), "the full-tile shape must run the fast kernel"
        m, n, _ = _shape(module, "shipped_full_tile")
        assert _fits(module, m, n, shipped=True)
        m, n, _ = _shape(module, "ragged")
        assert not _fits(module, m, n)
    assert _tiled(tensor_cores, False).config.BLOCK_K * 3 < _shape(tensor_cores, "full_tiles")[2], \
        "more k-tiles than pipeline stages"


@pytest.mark.parametrize("module", [tensor_cores, three_tf32], ids=["tensor_cores", "three_tf32"])
def test_a_gpu_nan_in_a_reaches_its_row_of_c(module):
    """0x7FFFFFFF (what a GPU's arithmetic makes of 0/0) in A[1][2]: row 1 of C is NaN, the other rows are not.
    (Ragged: the edge kernel, whose rounding is the fast kernel's, line for line.)"""
    shape = "ragged"
    m, n, k = _shape(module, shape)
    a = random_matrices(rng_for(f"nan {shape}"), m, n, k)[0]
    a[1, 2] = np.array(0x7FFFFFFF, dtype=np.uint32).view(np.float32)
    _, _, c = _run(module, m, n, k, f"nan {shape}", a=a)
    assert np.isnan(c[1]).all(), "the NaN was lost"
    assert not np.isnan(np.delete(c, 1, axis=0)).any(), "NaN where the inputs had none"


# -- the compiled code -------------------------------------------------------------------------------------------

@pytest.mark.ptx("tensor_cores", "three_tf32")  # the steps' own PTX jobs (tests/test_ptx.py compiles the same)
@pytest.mark.parametrize("module", [tensor_cores, three_tf32], ids=["tensor_cores", "three_tf32"])
def test_ptx_shows_the_tensor_core_pipeline(ptx, module):
    job = module.TUNING.kernels().name  # the step's name: its kernels compiled for the GPU build's tiles
    failures = []
    for label, wanted in module.PTX_EXPECT.items():
        stats = ptx.stats(job, label)
        assert "error" not in stats, f"{label} failed to compile: {stats['error']}"
        for key, spec in wanted.items():
            op, value = parse_expectation(spec)  # an int (exactly) or a string like ">=4", as tests/test_ptx.py reads it
            if not COMPARE[op](stats[key], value):
                failures.append(f"{label}: {key} is {stats[key]}, expected {op} {value}")
    edge = ptx.stats(job, f"{module.TUNING.kernels().name}_edge")
    assert edge["local"] == 0 and edge["cp.async.ca.shared.global"] > 0, "edge kernel: zero-filling 4-byte copies"
    assert not failures, "\n".join(failures)


def test_ptx_claims_name_counts_the_counter_knows():
    known = set(ptx_stats("\tret;\n"))
    for module in (tensor_cores, three_tf32):
        for wanted in module.PTX_EXPECT.values():
            assert set(wanted) <= known
