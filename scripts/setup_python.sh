#!/usr/bin/env bash
# Builds and installs the Python package cannl (`pip install .` of this repository) into the
# default python3, so that `python3 -c "import cannl"` works. Run by scripts/test.sh and
# scripts/demo.sh after the main build; CANNL_PYTHON names another interpreter.
#
# Where it goes: Debian's python3 is "externally managed" (PEP 668) and pip refuses to install
# into it unless told --break-system-packages. As root the package then lands in
# /usr/local/lib/python3.X/dist-packages, the place Debian leaves to locally built software (its
# own packages in /usr/lib/python3/dist-packages are not touched); as another user it goes to
# ~/.local (--user), with no sudo and no root-owned files in the checkout. --no-deps: NumPy and
# pytest come from Debian (scripts/setup.sh); pip fetches only the build requirements
# (scikit-build-core, nanobind) into its isolated build environment.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${CANNL_PYTHON:-python3}"
args=(--no-deps --quiet)
if "$python" -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
  args+=(--break-system-packages)
fi
[ "$(id -u)" -ne 0 ] && args+=(--user)
# The module's build (build-python/, beside build/) compiles the layers with the flags of the
# main build; ccache with the repository as base directory then serves their objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
# The same -Werror setting as the main build (build/), so the compile commands are equal too.
werror="$(sed -n 's/^CANNL_WERROR:BOOL=//p' build/CMakeCache.txt 2>/dev/null || true)"
"$python" -m pip install "${args[@]}" --config-settings=cmake.define.CANNL_WERROR="${werror:-OFF}" .
"$python" -c "import cannl" || { echo "setup_python.sh: cannl does not import with $python" >&2; exit 1; }
