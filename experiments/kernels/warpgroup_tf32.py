"""Step 15's kernel (gemm_steps/steps/warpgroup_tf32.py) began here as an experiment (TF32 on wgmma with edge
tiles); the module now re-exports the step so the bench and test that measured it keep working."""

from gemm_steps.steps.warpgroup_tf32 import SIMULATOR_CONFIG, SEARCH_SPACE, build as _build

CONFIG = SEARCH_SPACE[0]


def build(config=CONFIG):
    return _build(config)


__all__ = ["CONFIG", "SIMULATOR_CONFIG", "build"]
