"""Which tile configuration every register-tiled step is built with: on the simulator, on an H100 and an H200 (the GPU's
name faked), and on an H200 whose user has a tuning table of their own.

The choice is :mod:`gemm_steps.toolkit.tuned`'s rule over each step's own declaration (``SEARCH_SPACE``,
``SIMULATOR_CONFIG``): these pins hold it while the places the configuration lives move. Each case runs in a fresh
process, so that the GPU's name is faked before anything asks for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (BLOCK_M, BLOCK_N, BLOCK_K, THREAD_M, THREAD_N, MIN_BLOCKS_PER_SM)
VECTORIZED = (128, 128, 8, 8, 8, 0)
UNROLLED = (128, 128, 16, 8, 8, 2)
WARP_TILING = (128, 256, 8, 8, 16, 1)
TENSOR_CORES = (128, 256, 32, 8, 16, 1)
TENSOR_CORES_SIMULATOR = (64, 32, 16, 4, 4, 1)
WARPGROUP_MMA = (128, 128, 32, 8, 8, 1)
WARPGROUP_TF32 = (256, 128, 32, 16, 8, 1)
WARPGROUP_SIMULATOR = (32, 64, 32, 4, 4, 1)
PINGPONG_SIMULATOR = (32, 128, 32, 4, 4, 1)

ON_A_GPU = {"vectorized": VECTORIZED, "unrolled": UNROLLED, "double_buffered": UNROLLED,
            "warp_tiling": WARP_TILING, "persistent": WARP_TILING, "stream_k": WARP_TILING,
            "tensor_cores": TENSOR_CORES, "three_tf32": TENSOR_CORES, "warpgroup_mma": WARPGROUP_MMA,
            "warpgroup_tf32": WARPGROUP_TF32, "tma_pipeline": WARPGROUP_TF32, "warp_specialized": WARPGROUP_TF32,
            "warp_specialized_3xtf32": WARPGROUP_MMA, "pingpong": WARPGROUP_MMA,
            "cluster_multicast": WARPGROUP_TF32, "warp_specialized_stream_k": WARPGROUP_TF32,
            "warp_specialized_3xtf32_stream_k": WARPGROUP_MMA, "cluster_stream_k_tma_store": WARPGROUP_TF32}
ON_THE_SIMULATOR = {**ON_A_GPU, "tensor_cores": TENSOR_CORES_SIMULATOR, "three_tf32": TENSOR_CORES_SIMULATOR,
                    "pingpong": PINGPONG_SIMULATOR,
                    **{name: WARPGROUP_SIMULATOR for name in ("warpgroup_mma", "warpgroup_tf32", "tma_pipeline",
                                                              "warp_specialized", "warp_specialized_3xtf32",
                                                              "cluster_multicast", "warp_specialized_stream_k",
                                                              "warp_specialized_3xtf32_stream_k",
                                                              "cluster_stream_k_tma_store")}}

#: A user's own table (``gemm-steps tune`` writes it): step 9 and step 12 on their second configuration.
USER_WARP_TILING = (128, 256, 16, 8, 16, 1)
USER_TENSOR_CORES = (128, 128, 32, 8, 8, 1)
USER_TABLE = {"NVIDIA H200": {name: {"config": dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N",
                                                          "MIN_BLOCKS_PER_SM"), config))}
                              for name, config in (("warp_tiling", USER_WARP_TILING),
                                                   ("tensor_cores", USER_TENSOR_CORES))}}
# Steps 10 and 11 take step 9's configuration (their tiles are step 9's); step 13 is tuned apart from step 12.
WITH_USER_TABLE = {**ON_A_GPU, "warp_tiling": USER_WARP_TILING, "persistent": USER_WARP_TILING,
                   "stream_k": USER_WARP_TILING, "tensor_cores": USER_TENSOR_CORES}

PROBE = r"""
import json, sys
import gemm_steps.toolkit.tuned as tuned

gpu = sys.argv[1]
if gpu != "simulator":
    tuned.SIMULATOR = False  # the rule as on a GPU …
    tuned.current_gpu_name = lambda: gpu  # … of this name
import gemm_steps

fields = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "MIN_BLOCKS_PER_SM")
print(json.dumps({s.name: [getattr(s.tiled.config, f) for f in fields]
                  for s in gemm_steps.steps() if s.tiled is not None}))
"""


def chosen(gpu: str, cache: Path, table: dict | None = None) -> dict:
    """{step: configuration} as a process with this GPU (or the simulator) builds the steps."""
    cache.mkdir(parents=True, exist_ok=True)
    if table is not None:
        (cache / "tuned.json").write_text(json.dumps(table))
    env = {key: value for key, value in os.environ.items() if key != "GEMM_STEPS_TUNED"}
    env.update(NUMBA_ENABLE_CUDASIM="1", GEMM_STEPS_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", PROBE, gpu], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return {name: tuple(config) for name, config in json.loads(done.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("gpu, expected", [("simulator", ON_THE_SIMULATOR), ("NVIDIA H200", ON_A_GPU),
                                           ("NVIDIA H100 80GB HBM3", ON_A_GPU)])
def test_each_step_is_built_with_its_configuration(tmp_path, gpu, expected):
    assert chosen(gpu, tmp_path / "cache") == expected


def test_a_users_table_decides_on_its_gpu_only(tmp_path):
    assert chosen("NVIDIA H200", tmp_path / "cache", USER_TABLE) == WITH_USER_TABLE
    assert chosen("NVIDIA H100 80GB HBM3", tmp_path / "cache", USER_TABLE) == ON_A_GPU
    assert chosen("simulator", tmp_path / "cache", USER_TABLE) == ON_THE_SIMULATOR


NO_GPU_AT_IMPORT = r"""
import gemm_steps.toolkit.tuned as tuned

def refuse():
    raise RuntimeError("asked the GPU for its name")

tuned.SIMULATOR = False
tuned.current_gpu_name = refuse
import gemm_steps

steps = [s for s in gemm_steps.steps() if s.tuning is not None]
claims = [getattr(s.module, "PTX_EXPECT", None) for s in steps]  # stated for SEARCH_SPACE[0], asked of no GPU
try:
    steps[-1].tiled.config
except RuntimeError as exc:
    print(len(steps), exc)
"""


def test_importing_the_steps_asks_no_gpu_the_first_use_does():
    done = subprocess.run([sys.executable, "-c", NO_GPU_AT_IMPORT], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(ON_A_GPU)), "asked", "the", "GPU", "for", "its", "name"]


@pytest.mark.parametrize("name", ["unrolled", "double_buffered", "warp_tiling"])
def test_the_search_spaces_first_is_the_course_sweeps_pick(name):
    """No table ships with the package: a step's first configuration is its sweep's winner under the rule."""
    import importlib

    from gemm_steps.harness.tuning import choose_best
    from gemm_steps.course.sweeps import sweep_records
    from gemm_steps.toolkit.tile_config import tile_fields

    sweeps = sorted((ROOT / "results").glob(f"tuning-{name}-*.json"))
    assert sweeps, f"no results/tuning-{name}-*.json"
    space = importlib.import_module(f"gemm_steps.steps.{name}").SEARCH_SPACE
    for sweep in sweeps:
        assert choose_best(sweep_records(json.loads(sweep.read_text())))["config"] == tile_fields(space[0]), sweep.name
