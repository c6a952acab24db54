#!/usr/bin/env bash
# Builds cannl and runs the whole test suite (unit tests, tutorials). Usage: scripts/test.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/setup.sh
# Paths relative to the checkout in ccache's keys: the Python package's build (build-python/)
# then finds the objects of this one.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
jobs="$(nproc)"
cmake --preset "$preset" -DCANNL_WERROR=ON
cmake --build --preset "$preset" -j "$jobs"
build_dir=build
[[ $preset == default ]] || build_dir="build-$preset"
check_log="$build_dir/test_work/gpu/cuda_compile_check.tsv"
hip_check_log="$build_dir/test_work/gpu/hip_compile_check.tsv"
rm -f "$check_log" "$hip_check_log"
# The GPU label (test_gpu: end-to-end runs on OpenCL/PoCL) runs in the plain build; under the
# sanitizers the GPU device layer's own tests (test_backends) stand for it. The mpi label
# (mpirun -np 2) also runs in the plain build only: Open MPI's own allocations are no leaks of ours.
# Every other test runs under the sanitizers too (LeakSanitizer leaves PoCL's LLVM alone:
# tests/lsan.supp, through the asan test preset).
# The heavy label (end-to-end runs whose cold compile takes minutes: the GPT-2 bf16 twin on PoCL)
# is left out everywhere; `ctest --test-dir build -L heavy` runs it.
# Under the sanitizers, three schedule tests on whole GPT-2 steps are left out too (about 100 s
# of the sanitized run): they check plans (race freedom, kernel census), the plain build runs
# them, and the same planning code runs sanitized on the MLP and LeNet steps of their suites.
exclude=(-LE heavy)
[[ $preset == default ]] || exclude=(-LE 'gpu|mpi|heavy'
  -E '^(GpuModelRaces\.Gpt2TrainingStepsRunWithoutARace|KernelCensus\.Gpt2.*)$')
ctest --preset "$preset" -j "$jobs" "${exclude[@]}"
# The Python package (python/): installed into the default python3, then its pytest suite (the
# moons demo from Python against build/cannl, NumPy / DLPack, errors, PyTorch parity).
if [[ $preset == default ]]; then
  scripts/setup_python.sh
  mkdir -p build/test_work/python
  CANNL_APP="$PWD/build/cannl" CANNL_PYTEST_WORKDIR="$PWD/build/test_work/python" OMP_WAIT_POLICY=passive \
    "${CANNL_PYTHON:-python3}" -m pytest -q -p no:cacheprovider python/tests
fi
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
