#!/usr/bin/env bash
# The GPU check: one command on a machine with an NVIDIA GPU, the CUDA driver, NVRTC and PyTorch
# (the H200 machine). It
#   1. builds test_gpu, test_backends, bench_cannl and cannl in Release with all cores, or takes
#      them from $CANNL_GPU_BIN or .gpu_carry/bin (binaries built and stripped on another machine
#      and carried over: the GPU machine may lack GoogleTest, and its build time counts);
#   2. runs the GPU test label on CUDA (CANNL_TEST_GPU_BACKEND=cuda): op parity, gradients,
#      random programs under the GPU schedule with fission, training, backend tests; the CUDA
#      device layer's own tests (test_backends Cuda*, Nvrtc*); `cannl demo --backend cuda`;
#   3. runs the six benchmark workloads on cannl's cuda backend against PyTorch on the same GPU
#      (eager; torch.compile and reduce-overhead unless GPU_CHECK_NO_COMPILE=1), --quick steps;
#   4. writes $GPU_CHECK_OUT/cuda-report.md (default gpu_check_out/): the device, the test
#      summary and the benchmark report, with the logs beside it.
# Usage: scripts/gpu_check.sh            (GPU_CHECK_BUDGET_S caps the benchmark part, default 300)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${GPU_CHECK_OUT:-$ROOT/gpu_check_out}
WORK=${GPU_CHECK_WORK:-/tmp/cannl_gpu_check}
BUDGET=${GPU_CHECK_BUDGET_S:-300}
# The commit the report names (GPU_CHECK_COMMIT where the copy's git metadata is not the source's).
COMMIT=${GPU_CHECK_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT" "$WORK"
say() { echo "[gpu_check] $(date +%T) $*" >&2; }
start=$(date +%s)

# ---- 1. binaries ----
[[ -z ${CANNL_GPU_BIN:-} && -x $ROOT/.gpu_carry/bin/test_gpu ]] && CANNL_GPU_BIN=$ROOT/.gpu_carry/bin
if [[ -n ${CANNL_GPU_BIN:-} ]]; then
  BIN=$(cd "$CANNL_GPU_BIN" && pwd)
  say "using the binaries in $BIN"
else
  BIN=$WORK/build
  say "building in $BIN with $(nproc) jobs"
  cmake -S "$ROOT" -B "$BIN" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCANNL_BUILD_BENCHMARKS=ON \
    -DCANNL_WERROR=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build "$BIN" -j "$(nproc)" --target test_gpu test_backends bench_cannl cannl_app >> "$OUT/build.log" 2>&1 ||
    { say "build failed (see build.log)"; tail -30 "$OUT/build.log"; exit 1; }
  BIN_BENCH=$(find "$BIN" -name bench_cannl -type f | head -1)
  cp "$BIN_BENCH" "$BIN/bench_cannl" 2>/dev/null || true
fi
say "binaries ready after $(( $(date +%s) - start )) s"

# ---- 2. the GPU tests on CUDA ----
device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
say "device: ${device:-none found by nvidia-smi}"
mkdir -p "$WORK/tests" && cd "$WORK/tests" || exit 1
CANNL_TEST_GPU_BACKEND=cuda timeout 200 "$BIN/test_gpu" --gtest_brief=1 > "$OUT/test_gpu.log" 2>&1
tests_rc=$?
summary=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/test_gpu.log" | head -5)
say "test_gpu on cuda: rc $tests_rc; $summary"
timeout 120 "$BIN/test_backends" --gtest_brief=1 --gtest_filter='Cuda*:Nvrtc*' > "$OUT/test_backends_cuda.log" 2>&1
device_rc=$?
say "test_backends Cuda*:Nvrtc*: rc $device_rc"
timeout 150 bash "$ROOT/tests/apps/demo_gpu.sh" "$BIN/cannl" "$WORK/demo" cuda > "$OUT/demo_gpu.log" 2>&1
demo_rc=$?
say "demo_gpu cuda: rc $demo_rc: $(tail -1 "$OUT/demo_gpu.log")"
tests_rc=$(( tests_rc != 0 || device_rc != 0 || demo_rc != 0 ))
cd "$ROOT" || exit 1

# ---- 3. the benchmark workloads against PyTorch on the same GPU ----
bench_args=(--workloads mlp_small,mlp_wide,lenet,cifar_conv,gpt2_mini,gpt2_mini_train --quick
            --gpu cuda --gpu-only --fixtures "$WORK/fixtures" --results "$WORK/results"
            --cannl-bin "$BIN/bench_cannl" --peer-python python3 --budget-s "$BUDGET" --cell-timeout 120
            --commit "$COMMIT")
[[ ${GPU_CHECK_NO_COMPILE:-0} == 1 ]] && bench_args+=(--no-torch-compile)
PYTHONUNBUFFERED=1 python3 benchmarks/orchestrate.py "${bench_args[@]}" > "$OUT/bench.log" 2>&1
bench_rc=$?
cp "$WORK/results/results.jsonl" "$WORK/results/report.md" "$OUT/" 2>/dev/null
say "benchmarks: rc $bench_rc"

# ---- 4. the report ----
{
  echo "# cannl on CUDA: $device"
  echo
  echo "scripts/gpu_check.sh at $COMMIT, $(date -u +%F)."
  echo "Total time $(( $(date +%s) - start )) s."
  echo
  echo "## GPU tests (test_gpu, CANNL_TEST_GPU_BACKEND=cuda): exit $tests_rc"
  echo
  echo '```'
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]|NVRTC" "$OUT/test_gpu.log" | head -40
  echo "test_backends Cuda*:Nvrtc* (the device layer on the GPU):"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]" "$OUT/test_backends_cuda.log" | head -10
  echo "cannl demo --backend cuda against cc: $(tail -1 "$OUT/demo_gpu.log")"
  echo '```'
  echo
  echo "## Benchmarks (--quick, p50 ms per step): exit $bench_rc"
  echo
  cat "$WORK/results/report.md" 2>/dev/null || echo "(no report: see bench.log)"
} > "$OUT/cuda-report.md"
say "wrote $OUT/cuda-report.md"
exit $(( tests_rc != 0 || bench_rc != 0 ))
