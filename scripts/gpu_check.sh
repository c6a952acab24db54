#!/usr/bin/env bash
# The GPU check: one command on a machine with an NVIDIA GPU, the CUDA driver, NVRTC and PyTorch
# (the H200 machine). It
#   1. builds test_gpu, test_backends, bench_cannl and cannl in Release with all cores, or takes
#      them from $CANNL_GPU_BIN or .gpu_carry/bin (binaries built and stripped on another machine
#      and carried over: the GPU machine may lack GoogleTest, and its build time counts);
#   2. runs the GPU test label on CUDA (CANNL_TEST_GPU_BACKEND=cuda): op parity, gradients,
#      random programs under the GPU schedule with fission, training, backend tests; the CUDA
#      device layer's own tests (test_backends Cuda*, Nvrtc*); `cannl demo --backend cuda`;
#   3. times `cannl bench matmul --n 4096` in f32, tf32 and bf16 against the same matmuls in
#      PyTorch (cuBLAS): TFLOP/s and the ratio (benchmarks/matmul_cublas.py);
#   4. runs gpt2_124m_train (GPT-2 124M, batch 8 x 1024, AdamW, bf16 policy) on cannl's cuda
#      backend against PyTorch eager bf16 autocast and torch.compile (its ~500 MB fixture is
#      generated here and kept in $GPU_CHECK_WORK/fixtures), then the six workloads of the suite
#      against PyTorch (eager; torch.compile and reduce-overhead unless GPU_CHECK_NO_COMPILE=1),
#      --quick steps, under what is left of the time budget;
#   5. writes $GPU_CHECK_OUT/cuda-report.md and cuda-h200.md (the same, ready to commit as
#      benchmarks/reports/cuda-h200.md): the device, the acceptance lines (matmul ratios, the
#      124M step against PyTorch), the tests, the matmul table and the benchmark report; the logs
#      and JSON rows beside them. The report is rewritten after every part, so a run stopped from
#      outside still leaves what it measured.
# Graphs: the GPU tests (GpuGraphs compares a graph's results with one-by-one launches and expects
# the graph built) and the default benchmark cells run each routine as a CUDA graph
# (gpu_graphs=auto); the profiled cells launch one by one. CANNL_GPU_GRAPHS=off runs the whole
# check with one-by-one launches; the report says which.
# Time: GPU_CHECK_TOTAL_S (default 450 s, the 8-minute run with margin) bounds the run: the parts
# have caps of their own (tests 150 + 60 + 120 s, matmul 240 s, 60 s per cannl run; 124M cells 240 s;
# other cells 60 s) and the benchmarks skip the cells that would start after the budget.
#
# Usage:
#   scripts/gpu_check.sh              the check (on the GPU machine; GPU_CHECK_OUT, default
#                                     gpu_check_out/, or $OUT when the device runner sets it)
#   scripts/gpu_check.sh --prepare    here: build the four binaries in Release into .gpu_carry/bin
#                                     (stripped), to carry to the GPU machine with the tree
#   scripts/gpu_check.sh --dry-run    here, without CUDA: every part on OpenCL (PoCL; or the CUDA
#                                     text on cuda-cpu with GPU_CHECK_DRY_BACKEND=cuda-cpu) and PyTorch
#                                     on the CPU at toy sizes (matmul n 256, the GPT-2 twin
#                                     gpt2_tiny_adamw_bf16 and mlp_small; gpt2_124m_train only as
#                                     its skip rows): the script's logic and the report, checked
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=check
case ${1:-} in
  --dry-run) MODE=dry ;;
  --prepare) MODE=prepare ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "gpu_check.sh: unknown argument $1 (--dry-run, --prepare, --help)" >&2; exit 2 ;;
esac
say() { echo "[gpu_check] $(date +%T) $*" >&2; }
BINARIES=(test_gpu test_backends bench_cannl cannl)

if [[ $MODE == prepare ]]; then
  BUILD=${GPU_CHECK_BUILD:-$ROOT/build-gpu-carry}
  CARRY=$ROOT/.gpu_carry/bin
  say "building ${BINARIES[*]} in Release in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCANNL_BUILD_BENCHMARKS=ON \
    -DCANNL_WERROR=OFF > /dev/null &&
    nice -n 5 cmake --build "$BUILD" -j "$(nproc)" --target test_gpu test_backends bench_cannl cannl_app ||
    { say "build failed"; exit 1; }
  rm -rf "$CARRY" && mkdir -p "$CARRY"
  for b in "${BINARIES[@]}"; do
    found=$(find "$BUILD" -name "$b" -type f -perm -u+x | head -1)
    [[ -n $found ]] || { say "no $b in $BUILD"; exit 1; }
    cp "$found" "$CARRY/$b" && strip "$CARRY/$b"
  done
  git -C "$ROOT" rev-parse --short HEAD > "$ROOT/.gpu_carry/COMMIT" 2>/dev/null
  say "carried binaries of $(cat "$ROOT/.gpu_carry/COMMIT" 2>/dev/null): $(du -sh "$CARRY" | cut -f1) in $CARRY"
  say "on the GPU machine: GPU_CHECK_COMMIT=$(cat "$ROOT/.gpu_carry/COMMIT" 2>/dev/null) scripts/gpu_check.sh" \
      "(with .gpu_carry carried beside the tree)"
  exit 0
fi

OUT=${GPU_CHECK_OUT:-${OUT:-$ROOT/gpu_check_out}}
WORK=${GPU_CHECK_WORK:-/tmp/cannl_gpu_check}
TOTAL=${GPU_CHECK_TOTAL_S:-450}
# The commit the report names: GPU_CHECK_COMMIT, else the carried binaries' (.gpu_carry/COMMIT),
# else the tree's.
COMMIT=${GPU_CHECK_COMMIT:-$(cat "$ROOT/.gpu_carry/COMMIT" 2>/dev/null ||
                             git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
left() { echo $(( TOTAL - $(elapsed) )); }

if [[ $MODE == dry ]]; then
  # GPU_CHECK_DRY_BACKEND=cuda-cpu rehearses on the CUDA text itself (the cuda-cpu device), with
  # the tensor-core tiles and cp.async staging an sm_90 device gets.
  BACKEND=${GPU_CHECK_DRY_BACKEND:-opencl} TORCH_DEVICE=cpu MATMUL_N=256 MATMUL_REPS=3
  case $BACKEND in
    opencl) BACKEND_TEST_FILTER='OpenCl*' ;;
    cuda-cpu) BACKEND_TEST_FILTER='CudaOnCpu*' ;;
    *) echo "gpu_check.sh: GPU_CHECK_DRY_BACKEND must be opencl or cuda-cpu" >&2; exit 2 ;;
  esac
  TEST_FILTER='GpuTraining.*:GpuMixedPrecision.*'
  BIG_WORKLOAD=gpt2_124m_train SMALL_WORKLOADS=gpt2_tiny_adamw_bf16,mlp_small
  # PyTorch on the CPU is the parity reference, so the run keeps its CPU eager cell.
  bench_cells=(--gpu "$BACKEND")
  BIG_CELLS=pytorch:cpu:eager,cannl:$BACKEND:default BIG_PROFILED=cannl:$BACKEND:profiled
  SMALL_CELLS=pytorch:cpu:eager,cannl:$BACKEND:default,cannl:$BACKEND:profiled
else
  BACKEND=cuda TORCH_DEVICE=cuda MATMUL_N=4096 MATMUL_REPS=20
  TEST_FILTER='*' BACKEND_TEST_FILTER='Cuda*:Nvrtc*'
  BIG_WORKLOAD=gpt2_124m_train SMALL_WORKLOADS=mlp_small,mlp_wide,lenet,cifar_conv,gpt2_mini,gpt2_mini_train
  bench_cells=(--gpu cuda --gpu-only)
  [[ ${GPU_CHECK_NO_COMPILE:-0} == 1 ]] && bench_cells+=(--no-torch-compile)
  BIG_CELLS=pytorch:cuda:eager,cannl:cuda:default,pytorch:cuda:compile BIG_PROFILED=cannl:cuda:profiled
  SMALL_CELLS=pytorch,cannl
fi
# GPU_CHECK_PARTS: which parts run (default: tests, matmul, big (gpt2_124m_train), small); `tune`
# (the autotuner's GPU tile sketches on the matmul, GPU_CHECK_TUNE_BUDGET_S, default 90 s) runs
# only when named.
PARTS=${GPU_CHECK_PARTS:-tests,matmul,big,small}
part() { [[ ,$PARTS, == *,$1,* ]]; }

# ---- 1. binaries ----
[[ -z ${CANNL_GPU_BIN:-} && -x $ROOT/.gpu_carry/bin/test_gpu ]] && CANNL_GPU_BIN=$ROOT/.gpu_carry/bin
if [[ -n ${CANNL_GPU_BIN:-} ]]; then
  BIN=$(cd "$CANNL_GPU_BIN" && pwd)
  say "using the binaries in $BIN"
  # Carried binaries left from an older --prepare measure old code: say so (the copy on the GPU
  # machine may carry other git metadata, so this warns rather than stops).
  head=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
  carried=$(cat "$BIN/../COMMIT" 2>/dev/null || true)
  [[ -n $head && $carried != "$head" ]] &&
    say "WARNING: the binaries are of commit '${carried:-unknown}', the tree is at $head: rerun --prepare if that is not intended"
else
  BIN=$WORK/build
  say "building in $BIN with $(nproc) jobs"
  cmake -S "$ROOT" -B "$BIN" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCANNL_BUILD_BENCHMARKS=ON \
    -DCANNL_WERROR=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build "$BIN" -j "$(nproc)" --target test_gpu test_backends bench_cannl cannl_app >> "$OUT/build.log" 2>&1 ||
    { say "build failed (see build.log)"; tail -30 "$OUT/build.log"; exit 1; }
  BIN_BENCH=$(find "$BIN" -name bench_cannl -type f | head -1)
  cp "$BIN_BENCH" "$BIN/bench_cannl" 2>/dev/null || true
  start=$(date +%s)  # the budget counts from here: the build is not part of the 8 minutes
fi
for b in "${BINARIES[@]}"; do [[ -x $BIN/$b ]] || { say "missing $BIN/$b"; exit 1; }; done
unset CANNL_GPU_BIN  # the script's own variable: cannl would warn of an unknown config key
say "binaries ready; mode $MODE, backend $BACKEND, budget $TOTAL s, parts $PARTS"
device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
if [[ $MODE == dry ]]; then
  device="dry run: OpenCL ($(uname -m) CPU via PoCL), PyTorch on the CPU"
  [[ $BACKEND == cuda-cpu ]] && device="dry run: the CUDA text on cuda-cpu ($(uname -m) CPU), PyTorch on the CPU"
fi
say "device: ${device:-none found by nvidia-smi}"

tests_rc=-1 matmul_rc=-1 tune_rc=-1 big_rc=-1 small_rc=-1
: > "$OUT/test_gpu.log"; : > "$OUT/test_backends.log"; : > "$OUT/demo_gpu.log"
rm -f "$OUT/matmul.md" "$OUT/matmul.jsonl" "$OUT/results.jsonl" "$OUT/report.md"

# ---- the report (rewritten after every part) ----
status_of() { case $1 in -1) echo "not run" ;; 0) echo "exit 0" ;; *) echo "exit $1" ;; esac; }
write_report() {
  {
    echo "<!-- scripts/gpu_check.sh output ($MODE run); commit this file as benchmarks/reports/cuda-h200.md. -->"
    echo "# cannl on CUDA: ${device:-unknown device}"
    echo
    echo "scripts/gpu_check.sh on binaries of cannl $COMMIT, $(date -u '+%F %H:%M') UTC."
    echo "Total time $(elapsed) s (budget $TOTAL s). Kernel launches: gpu_graphs=${CANNL_GPU_GRAPHS:-auto}" \
      "(profiled cells launch one by one)."
    echo
    echo "## Acceptance"
    echo
    python3 "$ROOT/benchmarks/scripts/gpu_summary.py" --matmul "$OUT/matmul.jsonl" --results "$OUT/results.jsonl" \
      --workload "$BIG_WORKLOAD" 2>&1
    echo
    echo "## GPU tests (test_gpu, CANNL_TEST_GPU_BACKEND=$BACKEND): $(status_of "$tests_rc")"
    echo
    echo '```'
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]|NVRTC" "$OUT/test_gpu.log" | head -40
    echo "test_backends $BACKEND_TEST_FILTER (the device layer on the GPU):"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]" "$OUT/test_backends.log" | head -10
    echo "cannl demo --backend $BACKEND against cc: $(tail -1 "$OUT/demo_gpu.log")"
    echo '```'
    echo
    echo "## Matmul against cuBLAS: $(status_of "$matmul_rc")"
    echo
    cat "$OUT/matmul.md" 2>/dev/null || echo "(not measured: see matmul.log)"
    echo
    if [[ $tune_rc != -1 ]]; then
      echo "## The tuner on the matmul (cannl tune matmul --n $MATMUL_N): $(status_of "$tune_rc")"
      echo
      echo '```'
      grep -v '^\[tune\]' "$OUT/tune_matmul.log" | head -40
      echo '```'
      echo
    fi
    echo "## Benchmarks (--quick, p50 ms per step): $BIG_WORKLOAD $(status_of "$big_rc"), the six $(status_of "$small_rc")"
    echo
    sed '1s/^# /### /' "$OUT/report.md" 2>/dev/null || echo "(no report: see bench_*.log)"
  } > "$OUT/cuda-report.md"
  cp "$OUT/cuda-report.md" "$OUT/cuda-h200.md"
}
write_report

# ---- 2. the GPU tests ----
if part tests; then
  mkdir -p "$WORK/tests" && cd "$WORK/tests" || exit 1
  CANNL_TEST_GPU_BACKEND=$BACKEND timeout 150 "$BIN/test_gpu" --gtest_brief=1 --gtest_filter="$TEST_FILTER" \
    > "$OUT/test_gpu.log" 2>&1
  gpu_rc=$?
  say "test_gpu on $BACKEND: rc $gpu_rc; $(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/test_gpu.log" | head -3 | tr '\n' ' ')"
  timeout 60 "$BIN/test_backends" --gtest_brief=1 --gtest_filter="$BACKEND_TEST_FILTER" > "$OUT/test_backends.log" 2>&1
  device_rc=$?
  say "test_backends $BACKEND_TEST_FILTER: rc $device_rc"
  timeout 120 bash "$ROOT/tests/apps/demo_gpu.sh" "$BIN/cannl" "$WORK/demo" "$BACKEND" > "$OUT/demo_gpu.log" 2>&1
  demo_rc=$?
  say "demo_gpu $BACKEND: rc $demo_rc: $(tail -1 "$OUT/demo_gpu.log")"
  tests_rc=$(( gpu_rc != 0 || device_rc != 0 || demo_rc != 0 ))
  cd "$ROOT" || exit 1
  write_report
fi

# ---- 3. matmul against cuBLAS ----
if part matmul; then
  mkdir -p "$WORK/matmul" && cd "$WORK/matmul" || exit 1
  timeout 240 python3 "$ROOT/benchmarks/matmul_cublas.py" --cannl "$BIN/cannl" --backend "$BACKEND" \
    --device "$TORCH_DEVICE" --n "$MATMUL_N" --reps "$MATMUL_REPS" --precisions f32,tf32,bf16 --timeout 60 \
    --json "$OUT/matmul.jsonl" --markdown "$OUT/matmul.md" > "$OUT/matmul.log" 2>&1
  matmul_rc=$?
  say "matmul: rc $matmul_rc; $(grep '^\[matmul\]' "$OUT/matmul.log" | tr '\n' ' ')"
  cd "$ROOT" || exit 1
  write_report
fi

# ---- 3b. the autotuner's tile blockings on the matmul (only when GPU_CHECK_PARTS names tune) ----
if part tune; then
  mkdir -p "$WORK/tune" && cd "$WORK/tune" || exit 1
  budget=${GPU_CHECK_TUNE_BUDGET_S:-90}
  CANNL_BACKEND=$BACKEND CANNL_AUTOTUNE_BUDGET_S=$budget CANNL_AUTOTUNE_ROUNDS=0 timeout $(( budget + 90 )) \
    "$BIN/cannl" tune matmul --n "$MATMUL_N" > "$OUT/tune_matmul.log" 2>&1
  tune_rc=$?
  say "tune matmul: rc $tune_rc; $(grep -E 'tuned|winner' "$OUT/tune_matmul.log" | head -2 | tr '\n' ' ')"
  cd "$ROOT" || exit 1
  write_report
fi

# ---- 4. the benchmark workloads against PyTorch on the same GPU ----
bench() {  # bench <log name> <workloads> <budget s> <cell cap s> [orchestrate flags...]
  local log=$1 workloads=$2 budget=$3 cap=$4
  shift 4
  # In a session of its own and waited for in the background, so that a TERM reaches the trap
  # below at once and the trap can stop the orchestrator with its running cell.
  PYTHONUNBUFFERED=1 $SETSID python3 "$ROOT/benchmarks/orchestrate.py" --workloads "$workloads" --quick \
    "${bench_cells[@]}" --fixtures "$WORK/fixtures" --results "$WORK/results" \
    --cannl-bin "$BIN/bench_cannl" --peer-python "${GPU_CHECK_PEER_PYTHON:-python3}" --budget-s "$budget" --cell-timeout "$cap" \
    --commit "$COMMIT" "$@" > "$OUT/$log" 2>&1 &
  bench_pid=$!
  wait "$bench_pid"
  local rc=$?
  bench_pid=
  return $rc
}
bench_pid=
SETSID=$(command -v setsid || true)  # without it the trap stops the orchestrator but not its cell
collect() {
  cp "$WORK/results/results.jsonl" "$WORK/results/report.md" "$OUT/" 2>/dev/null
  cp "$WORK/results/chart.png" "$OUT/" 2>/dev/null
}
rm -rf "$WORK/results"
# Stopped from outside (the device runner's limit): keep what the benchmarks measured so far.
stopped() {
  say "stopped after $(elapsed) s: writing what was measured"
  if [[ -n $bench_pid ]]; then
    kill -TERM -- "-$bench_pid" 2>/dev/null || kill -TERM "$bench_pid" 2>/dev/null
  fi
  collect
  write_report
  exit 1
}
trap stopped TERM INT
if part big; then
  # Its cells get 4x the cell cap (the workload's cell_cap_factor): 240 s. First the cells the
  # acceptance compares (PyTorch eager bf16, cannl, torch.compile); the budget leaves the six
  # workloads about two minutes. Its profiled twin (which kernels take the step) runs last, when
  # time is left.
  big_budget=$(( $(left) - 130 ))
  (( big_budget > 240 )) && big_budget=240
  (( big_budget < 30 )) && big_budget=30
  say "$BIG_WORKLOAD: budget $big_budget s"
  bench bench_big.log "$BIG_WORKLOAD" "$big_budget" 60 --only "$BIG_CELLS"
  big_rc=$?
  collect
  say "$BIG_WORKLOAD: rc $big_rc; $(grep -c '"status": "ok"' "$OUT/results.jsonl" 2>/dev/null) cells ok"
  write_report
fi
if part small; then
  small_budget=$(( $(left) - 60 ))
  (( small_budget < 20 )) && small_budget=20
  say "the six workloads: budget $small_budget s"
  bench bench_small.log "$SMALL_WORKLOADS" "$small_budget" 60 --only "$SMALL_CELLS" --update
  small_rc=$?
  collect
  say "the six workloads: rc $small_rc"
  write_report
fi
if part big && (( $(left) >= 200 )); then
  say "$BIG_WORKLOAD: the profiled cell, $(left) s left"
  bench bench_big_profiled.log "$BIG_WORKLOAD" 10 60 --only "$BIG_PROFILED" --update
  collect
  write_report
fi
trap - TERM INT

say "wrote $OUT/cuda-report.md (and cuda-h200.md) after $(elapsed) s"
failed=0
for rc in $tests_rc $matmul_rc $big_rc $small_rc; do (( rc > 0 )) && failed=1; done
exit $failed
