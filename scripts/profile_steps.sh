#!/usr/bin/env bash
# Nsight Compute reports of one 2048³ launch of every step and of cuBLAS (see scripts/profile_steps.py).
#   scripts/profile_steps.sh OUT_DIR [STEP …]
set -uo pipefail
out=${1:?usage: scripts/profile_steps.sh OUT_DIR [STEP …]}
shift
mkdir -p "$out"
steps=("$@")
# Every step of the course (the registry decides, so a new step is profiled too), then cuBLAS
[ ${#steps[@]} -eq 0 ] && mapfile -t steps < <(python -c "import gemm_steps; print('\n'.join(s.name for s in gemm_steps.steps()))"; echo cublas)
metrics=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.sum,smsp__inst_executed.sum
metrics+=,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
for step in "${steps[@]}"; do
  regex=$(python scripts/profile_steps.py --kernel-regex "$step") || exit 1
  start=$SECONDS
  ncu --kernel-name "regex:$regex" --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
      --section WarpStateStats --section LaunchStats --section Occupancy --metrics "$metrics" \
      python scripts/profile_steps.py "$step" --size 2048 > "$out/ncu-$step.txt" 2> "$out/ncu-$step.err"
  [ -s "$out/ncu-$step.err" ] || rm -f "$out/ncu-$step.err"
  echo "$step: exit $?, $((SECONDS - start)) s, $(grep -c 'Duration' "$out/ncu-$step.txt") kernel(s) profiled"
done
