#!/usr/bin/env bash
# Builds cannl and runs the whole test suite (unit tests, tutorials). Usage: scripts/test.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/setup.sh
jobs="$(nproc)"
cmake --preset "$preset" -DCANNL_WERROR=ON
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
