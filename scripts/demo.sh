#!/usr/bin/env bash
# The main job: installs what is missing, builds cannl and trains the moons MLP on the C backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default
cmake --build --preset default -j "$(nproc)" --target cannl_app
./build/cannl demo "$@"
# The Python package too (python3 -c "import cannl"; examples/python/moons.py is this demo).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
scripts/setup_python.sh
