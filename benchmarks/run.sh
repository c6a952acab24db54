#!/usr/bin/env bash
# The cross-framework benchmark suite in one command (benchmarks/README.md):
#   benchmarks/run.sh [--workloads mlp_small,lenet] [--quick] [other orchestrate.py flags]
# Creates a virtual environment with the Python peers (torch, tinygrad, numpy, safetensors,
# matplotlib: benchmark-only dependencies), builds cannl's runner in Release, generates the
# fixtures, runs every cell under a per-cell cap and writes results.jsonl, report.md and
# chart.png under $BENCH_WORK/results (default build-bench-release/results).
# Environment: BENCH_WORK (work folder), BENCH_JOBS (build parallelism, default 2).
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_WORK:-$ROOT/build-bench-release}
VENV=$WORK/venv
JOBS=${BENCH_JOBS:-2}
mkdir -p "$WORK"
say() { echo "[run.sh] $*" >&2; }

make_venv() {
  if ! python3 -m venv --help >/dev/null 2>&1; then
    say "python3-venv is missing; installing it with apt-get"
    apt-get install -y python3-venv >/dev/null
  fi
  # A torch already installed system-wide (or Debian's python3-torch) is reused: PyPI's torch
  # wheel is large, and this is how the venv gets a torch where pip cannot install one.
  if python3 -c 'import torch' >/dev/null 2>&1; then
    python3 -m venv --system-site-packages "$VENV"
  else
    python3 -m venv "$VENV"
  fi
}

install_peers() {
  local py=$VENV/bin/python
  if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    say "installing torch (CPU wheel)"
    "$VENV/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu ||
      "$VENV/bin/pip" install -q torch ||
      say "no pip torch: install Debian's python3-torch (eager only; torch.compile cells are flagged)"
  fi
  local wanted=()
  for pkg in tinygrad numpy safetensors matplotlib; do
    "$py" -c "import $pkg" >/dev/null 2>&1 || wanted+=("$pkg")
  done
  if ((${#wanted[@]})); then
    say "pip install ${wanted[*]}"
    "$VENV/bin/pip" install -q "${wanted[@]}"
  fi
}

build_cannl() {
  say "building bench_cannl (Release) in $WORK"
  cmake -S "$ROOT" -B "$WORK" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCANNL_BUILD_BENCHMARKS=ON -DCANNL_BUILD_TESTS=OFF >/dev/null
  nice -n 10 cmake --build "$WORK" -j "$JOBS" --target bench_cannl >/dev/null
}

[[ -x $VENV/bin/python ]] || make_venv
install_peers
build_cannl
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
"$VENV/bin/python" "$ROOT/benchmarks/orchestrate.py" \
  --fixtures "$WORK/fixtures" --results "$WORK/results" \
  --cannl-bin "$WORK/benchmarks/runners/cannl/bench_cannl" \
  --peer-python "$VENV/bin/python" --commit "$commit" "$@"
say "report: $WORK/results/report.md"
