#!/usr/bin/env bash
# One batched GPU session (run on the lent H100/H200 through the device tool; see docs/measurement.md).
# Usage: bash scripts/device_session.sh OUTDIR [what...]   what ∈ env, tune, bench, gpu-tests, sanitize, numerics
set -uo pipefail
out=${1:?output directory}; shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
for what in "$@"; do
  echo "=== $what $(date -u +%H:%M:%S)"
  case "$what" in
    env) nvidia-smi; python3 -c "import numpy, numba_cuda; print('numpy', numpy.__version__)"; python3 -m gemm_steps info ;;
    tune) for s in unrolled double_buffered warp_tiling; do
            python3 -c "import sys; from gemm_steps.tuning import tune; r = tune('$s'); print('best', r['best']['step'], r['best']['config'], round(r['best']['pct_of_cublas'], 1))" 2>&1 | tail -n 3
          done; cp results/tuning-*.json results/tuned.json "$out"/ ;;
    bench) python3 -m gemm_steps bench --out "$out/bench.json" --plots-dir "$out" 2>&1 | tail -n 60 ;;
    gpu-tests) python3 -m pytest -q -m gpu tests 2>&1 | tail -n 30 ;;
    sanitize) bash scripts/sanitize.sh "$out/sanitizer" 2>&1 | tail -n 30 ;;
    numerics) python3 scripts/numerics.py "$out/numerics.json" 2>&1 | tail -n 30 ;;
    *) echo "unknown: $what"; exit 2 ;;
  esac
done
