#!/usr/bin/env bash
# `cannl demo --backend <gpu>` reaches the same final accuracy as on cc, with epoch losses equal to
# 5 significant digits (transcendentals may differ by an ulp between the GPU's libm and the
# host's), and writes its kernels under build_files/. Skips (exit 0 with a message) when the GPU
# backend does not open here. Usage: demo_gpu.sh CANNL WORK [opencl|cuda|cuda-cpu]
set -euo pipefail
cannl="$1"
work="$2"
backend="${3:-opencl}"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

if ! "$cannl" demo --backend "$backend" --epochs 10 > gpu.txt 2> gpu.err; then
  if grep -q "BackendUnavailable\|backend unavailable\|no .* backend\|not found" gpu.err; then
    echo "SKIP: the $backend backend does not open here: $(head -1 gpu.err)"; exit 0
  fi
  cat gpu.err; echo "FAIL: cannl demo --backend $backend failed"; exit 1
fi
"$cannl" demo --backend cc --epochs 10 > cc.txt
grep -q "backend $backend" gpu.txt || { echo "FAIL: the demo did not run on $backend"; head -3 gpu.txt; exit 1; }
losses() { sed -nE 's/^epoch +([0-9]+)\/[0-9]+ +loss ([0-9.]+).*/\1 \2/p' "$1" | awk '{ printf "%s %.5g\n", $1, $2 }'; }
if ! diff <(losses cc.txt) <(losses gpu.txt); then
  echo "FAIL: epoch losses differ between cc and $backend"; exit 1
fi
accuracy() { sed -nE 's/^final train accuracy: ([0-9.]+)$/\1/p' "$1"; }
[ "$(accuracy cc.txt)" = "$(accuracy gpu.txt)" ] ||
  { echo "FAIL: final accuracy $(accuracy gpu.txt) on $backend, $(accuracy cc.txt) on cc"; exit 1; }
ext=$([[ $backend == cuda* ]] && echo cu || echo cl)
ls build_files/cannl/*."$ext" > /dev/null
echo "PASS: $backend reaches the final accuracy $(accuracy gpu.txt) of cc with the same epoch losses"
