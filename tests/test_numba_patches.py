"""The compile-time patches (gemm_steps/toolkit/numba_patches.py) change how long Numba takes, never what it makes:
kernels compiled with and without them give the same PTX. Small tiles keep the unpatched compiles short; they still
have what the patches deal with (unrolled register tiles reassigned in every k-step, branches, loops, phi nodes)."""

import pytest

from ptx_jobs import patches_job

SMALL_TILES = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 8, "THREAD_M": 4, "THREAD_N": 8}
CASES = [("register_2d", None), ("warp_tiling", {**SMALL_TILES, "BLOCK_K": 16, "THREAD_N": 4}),
         ("stream_k", SMALL_TILES)]


#: The comparisons compile in the PTX child process (tests/ptx_jobs.py), after the PTX the other tests need;
#: these tests run late (conftest.py), so this process does not wait for them.
@pytest.mark.parametrize("step, config", [pytest.param(step, config, id=step, marks=pytest.mark.ptx(patches_job(step, config)))
                                          for step, config in CASES])
def test_the_patches_leave_the_ptx_unchanged(ptx, step, config):
    compared = ptx.stats(patches_job(step, config), "patches")
    assert "error" not in compared, compared.get("error")
    assert compared, "no kernel was compiled"
    for label, (same, seconds_with, seconds_without) in compared.items():
        assert same, f"{label}: the PTX differs with the compile-time patches ({seconds_with:.1f} s with, " \
                     f"{seconds_without:.1f} s without)"


def test_a_changed_kernel_gives_different_ptx():
    """The comparison can fail: normalizing Numba's per-process counters must not hide a real difference."""
    from numba_patch_check import _normalized

    two_arrays = "mov.u64 %rd1, _cudapy_smem_3;\nmov.u64 %rd2, _cudapy_smem_4;"
    assert _normalized(two_arrays) == _normalized(two_arrays.replace("_3", "_1").replace("_4", "_2"))
    assert _normalized(two_arrays) != _normalized(two_arrays.replace("_4", "_3"))  # one array where there were two
    assert _normalized(two_arrays) != _normalized(two_arrays.replace("%rd2", "%rd3"))
