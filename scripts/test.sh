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
rm -f "$check_log"
# The GPU label (test_gpu: end-to-end runs on OpenCL/PoCL) runs in the plain build; under the
# sanitizers the GPU device layer's own tests (test_backends) stand for it. The mpi label
# (mpirun -np 2) also runs in the plain build only: Open MPI's own allocations are no leaks of ours.
exclude=()
[[ $preset == default ]] || exclude=(-LE 'gpu|mpi')
ctest --preset "$preset" -j "$jobs" "${exclude[@]}"
if [[ -f $check_log ]]; then
  awk -F'\t' '{ m += $1; k += $2; if ($3 != "ok") u = 1 }
    END { printf "[test.sh] NVRTC compiled %d CUDA modules (%d kernels) for sm_90 from test_gpu%s\n", m, k,
          u ? " (NVRTC was unavailable in some runs)" : "" }' "$check_log"
fi
