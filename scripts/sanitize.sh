#!/usr/bin/env bash
# Run every step under NVIDIA compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on a GPU.
#
#   bash scripts/sanitize.sh OUTDIR [--steps NAME ...] [--tools TOOL ...] [--shapes MxNxK ...]
#
# One process per step and tool (so an error is attributed to its step, and one step's fault cannot hide
# another's); each launches the step once per shape through scripts/sanitize_steps.py, which also checks the
# result against float64. Writes OUTDIR/<tool>.log (every run's full output, one block per step, appended — use
# a fresh OUTDIR for a fresh report) and OUTDIR/summary.md (pass/fail per step per tool, from the last block of
# each, parsed from "ERROR SUMMARY: N errors"). Exit status 0 only if every run is clean and right.
#
# The environment is passed through unchanged (PYTHONPATH, NUMBA_*, …): set PYTHON to choose the interpreter
# (default python3) and COMPUTE_SANITIZER to choose the sanitizer (default: PATH, then /usr/local/cuda*/bin).
# Long sessions can be split: --tools memcheck racecheck in one call, --tools initcheck synccheck in the next,
# into the same OUTDIR; summary.md always covers every log there.
set -uo pipefail

out=${1:?usage: bash scripts/sanitize.sh OUTDIR [--steps ...] [--tools ...] [--shapes ...]}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
python=${PYTHON:-python3}
per_run_timeout=${SANITIZE_TIMEOUT_S:-600}

steps=() tools=() shapes=()
list=""
for arg in "$@"; do
  case "$arg" in
    --steps) list=steps ;;
    --tools) list=tools ;;
    --shapes) list=shapes ;;
    --*) echo "unknown option $arg" >&2; exit 2 ;;
    *) case "$list" in
         steps) steps+=("$arg") ;;
         tools) tools+=("$arg") ;;
         shapes) shapes+=("$arg") ;;
         *) echo "unexpected argument $arg" >&2; exit 2 ;;
       esac ;;
  esac
done
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck initcheck synccheck)

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
if [ -z "$sanitizer" ]; then
  for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer \
                   /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    if [ -x "$candidate" ]; then sanitizer=$candidate; break; fi
  done
fi
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  echo "compute-sanitizer not found (it ships with the CUDA toolkit); set COMPUTE_SANITIZER=/path/to/it" >&2
  exit 2
fi

cd "$repo"
# Step names (numbers accepted), all steps by default.
mapfile -t steps < <("$python" -c "
import sys, gemm_steps
chosen = [gemm_steps.get_step(int(s) if s.isdigit() else s) for s in sys.argv[1:]] or gemm_steps.steps()
print('\n'.join(s.name for s in chosen))" "${steps[@]}")
[ ${#steps[@]} -gt 0 ] || { echo "could not list the steps with $python" >&2; exit 2; }
shape_args=()
[ ${#shapes[@]} -eq 0 ] || shape_args=(--shapes "${shapes[@]}")

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "sanitizer: $sanitizer ($("$sanitizer" --version 2>/dev/null | grep -iE 'version' | tail -n 1))"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  "$python" -c "import sys, numpy, importlib.metadata as m; print('python', sys.version.split()[0], '· numpy', numpy.__version__, '· numba-cuda', m.version('numba-cuda'))"
  echo "shapes: ${shapes[*]:-default (see scripts/sanitize_steps.py)}"
} > "$work/environment.txt" 2>&1

status=0
for tool in "${tools[@]}"; do
  for step in "${steps[@]}"; do
    echo "[$(date -u +%H:%M:%S)] $tool · $step"
    log="$work/$tool-$step.log"
    # --report-api-errors no: report what the kernels do on the device, not host API calls that fail by design
    # (cuda-bindings probes the driver with cuGetProcAddress for symbols it may lack: 34 such "errors" per
    # process, identical for every step, were all that memcheck reported before this flag).
    timeout "$per_run_timeout" "$sanitizer" --tool "$tool" --report-api-errors no --print-limit 50 --error-exitcode 86 \
      "$python" scripts/sanitize_steps.py --steps "$step" "${shape_args[@]}" >"$log" 2>&1
    rc=$?
    { echo "===== step $step · tool $tool · exit $rc ====="; cat "$log"; echo; } >> "$out/$tool.log"
    grep -E "ERROR SUMMARY|^FAIL|^ok " "$log" | sed 's/^/    /'
    [ "$rc" -eq 0 ] || status=1
  done
done

"$python" scripts/sanitize_steps.py --summarize "$out" --environment "$work/environment.txt" || status=1
exit $status
