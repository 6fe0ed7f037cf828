"""Smaller tiles for small and skinny products (issue: fast at every shape, item 2): does step 11 with tiles that
make more of them beat its shipped 128×256 tiles where those leave most SMs idle?

Times step 11 (stream-K, with step 10's kernel as its data-parallel fallback, as shipped) built for a few tile
configurations, on the shape suite's small, skinny, K-heavy and wave-boundary shapes and two large squares, with
cuBLAS in the same run (``bench.run_benchmark``: CUDA events, L2 flushed, NaN-poisoned outputs checked).
Usage, on a GPU from the repository root: python -m experiments.small_tiles OUT.json
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from types import SimpleNamespace

from gemm_steps.harness.bench import run_benchmark, save
from gemm_steps.harness.shape_suite import SHAPE_CLASSES
from gemm_steps.steps import persistent, stream_k
from gemm_steps.toolkit.tile_config import TileConfig

CONFIGS = {
    "stream_k 128x256x8 (shipped)": persistent.TUNING.kernels().config,
    "stream_k 128x128x16, 2/SM": TileConfig(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, THREAD_M=8, THREAD_N=8,
                                             MIN_BLOCKS_PER_SM=2),
    "stream_k 64x64x16, 4×4/thread": TileConfig(BLOCK_M=64, BLOCK_N=64, BLOCK_K=16, THREAD_M=4, THREAD_N=4,
                                                 MIN_BLOCKS_PER_SM=2),
}
SHAPES = (SHAPE_CLASSES["small"] + SHAPE_CLASSES["skinny"] + SHAPE_CLASSES["K-heavy"] + SHAPE_CLASSES["wave boundary"]
          + [(1024, 1024, 1024), (4096, 4096, 4096)])


def main() -> None:
    entries = []
    for number, (label, config) in enumerate(CONFIGS.items(), start=11):
        tiles = stream_k.build(config, data_parallel=persistent.build(config))
        entries.append(SimpleNamespace(name=label, number=number, launch=tiles.launch, config=asdict(config)))
    results = run_benchmark(entries, SHAPES, repeats=20, progress=lambda message: print(message, flush=True))
    results["experiment"] = "small tiles for step 11"
    save(results, sys.argv[1])


if __name__ == "__main__":
    main()
