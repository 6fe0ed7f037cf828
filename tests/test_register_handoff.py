"""The register hand-off of steps 17–19 (``setmaxnreg``) is checked against the block's pool, not the SM's file.

``setmaxnreg.inc`` draws from a pool kept per CTA (the block's threads × its registers at entry) and waits — no error,
no trap — until the pool has enough (PTX ISA, setmaxnreg). The layout used to check the roles against the SM's 65,536
registers, so 32 / 240 (128 × 32 + 256 × 240 = 65,536) passed and would have left the consumers waiting forever in a
pool of 384 × 168 = 64,512.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gemm_steps.steps import warp_specialized
from gemm_steps.toolkit.tile_config import TileConfig
from gemm_steps.toolkit.warpgroup_ops import check_register_handoff, registers_at_entry

CONFIG = TileConfig(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, THREAD_M=16, THREAD_N=8, MIN_BLOCKS_PER_SM=1)


def test_three_warpgroups_start_at_168_registers():
    assert registers_at_entry(384) == 168
    assert registers_at_entry(256) == 255  # a thread never gets more than 255
    assert registers_at_entry(128, 2) == 255
    assert registers_at_entry(512) == 128


def test_the_course_split_fills_the_pool_exactly():
    check_register_handoff(384, [(128, 40), (256, 232)], 168)  # 5,120 + 59,392 = 64,512 = 384 × 168


def test_a_split_that_fits_the_sm_but_not_the_pool_is_refused():
    with pytest.raises(ValueError, match=r"65,536 registers, but the block's pool holds 384 × 168 = 64,512"):
        check_register_handoff(384, [(128, 32), (256, 240)], 168)


def test_the_layout_refuses_a_split_that_would_hang():
    warp_specialized.Config.of(CONFIG).check().constants()  # the shipped split
    with pytest.raises(ValueError, match="forever"):
        warp_specialized.Config.of(CONFIG, PRODUCER_REGISTERS=32, CONSUMER_REGISTERS=240).check().constants()


def test_roles_must_cover_the_block():
    with pytest.raises(ValueError, match="the roles have 256 threads, the block 384"):
        check_register_handoff(384, [(256, 232)], 168)


def test_the_launch_checks_the_compiled_kernels_registers():
    """On a GPU the first launch checks the pool of the kernel as compiled: a kernel ptxas built with fewer registers
    at entry than the cap (here 128) would leave a smaller pool, and the same split would hang."""
    tiled = warp_specialized.build(CONFIG)
    tiled._check_register_handoff(SimpleNamespace(attrs=SimpleNamespace(regs=168)))
    with pytest.raises(RuntimeError, match="compiled to 128 registers a thread"):
        tiled._check_register_handoff(SimpleNamespace(attrs=SimpleNamespace(regs=128)))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["warp_specialized", "warp_specialized_3xtf32", "pingpong"])
def test_compiled_pools_hold_the_hand_off(name):
    """Steps 17–19 as compiled here: registers at entry × threads holds what the roles ask for."""
    from gemm_steps import get_step

    tiled = get_step(name).tiled
    function = tiled._function("fast")
    c = tiled.constants
    assert function.attrs.regs * tiled.threads >= (c["PRODUCER_THREADS"] * c["PRODUCER_REGISTERS"]
                                                   + tiled.config.THREADS * c["CONSUMER_REGISTERS"])
