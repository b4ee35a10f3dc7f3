#!/usr/bin/env bash
# The judge's GPU checks and throughput measurements (issue 13), in steps that each fit one call of
# the GPU machine (10 minutes at most): every step is bounded by `timeout`, so that the call ends
# inside its limit and whatever finished comes back under $OUT (logs, JSON, the verdicts).
#
#   bash benchmarks/gpu_session.sh tests        the GPU tests (-m gpu, the adversarial GPU suite and its
#                                               legitimate twins included), one JSON line per adversarial verdict
#   bash benchmarks/gpu_session.sh throughput   the throughput batch without CUDA builds (Triton and PyTorch
#                                               candidates), guards on, idle limit on then off, on 1 GPU and,
#                                               where the machine has more, on all of them
#   bash benchmarks/gpu_session.sh build        the full batch's CUDA and C++ builds into $KBENCH_CACHE only
#   bash benchmarks/gpu_session.sh full         the full batch (CUDA candidates too), builds warm from `build`
#                                               in an earlier call on the same, still warm, machine
#   bash benchmarks/gpu_session.sh multi        a machine of several GPUs, first call: the full batch judged once
#                                               untimed over every GPU (builds on every core, Triton caches warm),
#                                               then measured on every GPU, then the GPU test of a two-GPU batch
#   bash benchmarks/gpu_session.sh single       the next call on the same warm machine: the full batch measured
#                                               on one GPU, then the GPU timing tests and the side-stream cheats
#
# STEP_S (default 540) bounds a step; KBENCH_CACHE defaults to .kbench_cache in the repository (git
# ignores it, and the GPU machine keeps it between calls while it stays warm).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
STEP_S=${STEP_S:-540}
export PYTHONUNBUFFERED=1 KBENCH_CACHE=${KBENCH_CACHE:-$PWD/.kbench_cache}
export KBENCH_GIT_SHA=${KBENCH_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "gpus: ${GPUS:-0}, commit: $KBENCH_GIT_SHA, out: $OUT, step limit: ${STEP_S} s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$OUT/gpus.txt"

bounded() {  # bounded NAME COMMAND...: runs it for at most STEP_S seconds, its output in $OUT/NAME.log
  local name=$1; shift
  timeout -k 15 "$STEP_S" "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "step $name: exit $rc$([ "$rc" = 124 ] && echo ' (cut at its limit)')"
  return 0
}

gpu_list() {  # "1" or "1 N" for a machine with N > 1 GPUs
  if [ "${GPUS:-0}" -gt 1 ]; then echo "1 $GPUS"; else echo 1; fi
}

case "${1:-}" in
  tests)
    KBENCH_ADV_REPORT="$OUT/adversarial_gpu.jsonl" bounded gpu_tests python3 -m pytest tests -q -m gpu -p no:cacheprovider -rfEs --durations=40
    ;;
  throughput)
    # shellcheck disable=SC2046
    bounded throughput python3 benchmarks/throughput.py --backends triton torch --guards on --gpus $(gpu_list) \
      --idle-timeout 10 0 --out-dir "$OUT" --records-dir "$OUT" --quiet
    ;;
  build)
    bounded build python3 benchmarks/throughput.py --warm build --warm-only --build-jobs 16 --quiet
    ;;
  full)
    # shellcheck disable=SC2046
    bounded throughput_full python3 benchmarks/throughput.py --warm none --guards on --gpus $(gpu_list) --out-dir "$OUT" --quiet
    ;;
  multi)
    STEP_S=${WARM_S:-300} bounded warm python3 benchmarks/throughput.py --warm judge --warm-only --gpus "$GPUS" \
      --build-jobs "$(nproc)" --quiet
    STEP_S=${MEASURE_S:-250} bounded throughput_full_multi python3 benchmarks/throughput.py --warm none --guards on \
      --gpus "$GPUS" --build-jobs "$(nproc)" --out-dir "$OUT" --records-dir "$OUT" --quiet
    STEP_S=40 bounded two_gpu_test python3 -m pytest tests/test_gpu.py -q -m gpu -p no:cacheprovider -rfEs -k two_gpus
    ;;
  single)
    STEP_S=${MEASURE_S:-420} bounded throughput_full_1 python3 benchmarks/throughput.py --warm none --guards on \
      --gpus 1 --build-jobs "$(nproc)" --out-dir "$OUT" --records-dir "$OUT" --quiet
    KBENCH_ADV_REPORT="$OUT/adversarial_gpu.jsonl" STEP_S=${TESTS_S:-120} bounded gpu_timing_tests python3 -m pytest -q -m gpu \
      -p no:cacheprovider -rfEs tests/test_timing.py tests/adversarial/test_adversarial_gpu.py -k "timing or g11 or side_stream"
    ;;
  *)
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac
ls -la "$OUT"
