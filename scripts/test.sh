#!/usr/bin/env bash
# Builds cannl and runs the whole test suite (unit tests, tutorials). Usage: scripts/test.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/setup.sh
jobs="$(nproc)"
cmake --preset "$preset" -DCANNL_WERROR=ON
cmake --build --preset "$preset" -j "$jobs"
build_dir=build
[[ $preset == default ]] || build_dir="build-$preset"
check_log="$build_dir/test_work/gpu/cuda_compile_check.tsv"
hip_check_log="$build_dir/test_work/gpu/hip_compile_check.tsv"
rm -f "$check_log" "$hip_check_log"
# The GPU label (test_gpu: end-to-end runs on OpenCL/PoCL) runs in the plain build; under the
# sanitizers the GPU device layer's own tests (test_backends) stand for it.
exclude=()
[[ $preset == default ]] || exclude=(-LE gpu)
ctest --preset "$preset" -j "$jobs" "${exclude[@]}"
if [[ -f $check_log ]]; then
  awk -F'\t' '{ m += $1; k += $2; if ($3 != "ok") u = 1 }
    END { printf "[test.sh] NVRTC compiled %d CUDA modules (%d kernels) for sm_90 from test_gpu%s\n", m, k,
          u ? " (NVRTC was unavailable in some runs)" : "" }' "$check_log"
fi
if [[ -f $hip_check_log ]]; then
  awk -F'\t' '{ m += $1; k += $2; s += $3; if ($4 != "ok") u = 1 }
    END { printf "[test.sh] hiprtc compiled %d HIP modules (%d kernels) for gfx90a and gfx1030 from test_gpu in %.1f s%s\n",
          m, k, s, u ? " (hiprtc was unavailable in some runs)" : "" }' "$hip_check_log"
fi
