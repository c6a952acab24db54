#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for SECONDS (default 60).
# Usage: scripts/fuzz.sh [SECONDS] [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"; shift || true
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCANNL_FUZZ=ON -DCANNL_BUILD_TESTS=OFF > /dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cpp; do [ -e "$f" ] && targets+=("$(basename "$f" _fuzz.cpp)"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets"; exit 0; }
for t in "${targets[@]}"; do
  cmake --build build-fuzz -j "$(nproc)" --target "fuzz_$t"
  mkdir -p "tests/fuzz/corpus/$t" "build-fuzz/corpus/$t"
  echo "fuzzing $t for ${seconds}s"
  # New inputs go to the build tree; the committed seeds are read-only input.
  "build-fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t"
done
