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
args=(--no-deps --quiet --root-user-action=ignore)
# Captured, not piped into grep -q: under pipefail pip's SIGPIPE, when grep stops at the match,
# would read as "no such option".
if [[ "$("$python" -m pip install --help 2>/dev/null)" == *--break-system-packages* ]]; then
  args+=(--break-system-packages)
fi
[ "$(id -u)" -ne 0 ] && args+=(--user)
# pytest and NumPy for python/tests: Debian's (scripts/setup.sh) serve Debian's python3; another
# interpreter first on PATH (pyenv, a virtual environment) gets them from pip, with their
# dependencies.
if ! (cd / && "$python" -c "import pytest, numpy") 2>/dev/null; then
  "$python" -m pip install "${args[@]:1}" pytest numpy
fi
# The module's build (build-python/, beside build/) compiles the layers with the flags of the
# main build; ccache with the repository as base directory then serves their objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
# The same compilers and -Werror setting as the main build (build/), so the compile commands are
# equal too (scikit-build-core would otherwise take Python's CC / CXX, "g++" where CMake found
# "c++", and ccache keys on the compiler's name).
cached() { sed -n "s/^$1:[A-Z]*=//p" build/CMakeCache.txt 2>/dev/null || true; }
werror="$(cached CANNL_WERROR)"
[ -n "$(cached CMAKE_CXX_COMPILER)" ] && export CXX="${CXX:-$(cached CMAKE_CXX_COMPILER)}"
[ -n "$(cached CMAKE_C_COMPILER)" ] && export CC="${CC:-$(cached CMAKE_C_COMPILER)}"
# pip builds in a fresh environment each time (nanobind at a new path: no ccache hits for the
# module itself), so an install of the same sources for the same interpreter is skipped.
stamp=build-python/installed.stamp
state="$(command -v "$python") $werror ${CXX:-} $(git rev-parse HEAD 2>/dev/null) $(git diff HEAD 2>/dev/null | sha256sum)
$(git ls-files -z --others --exclude-standard 2>/dev/null | xargs -0 cat 2>/dev/null | sha256sum)"
if [[ -f $stamp && "$(cat "$stamp")" == "$state" ]] && (cd / && "$python" -c "import cannl" 2>/dev/null); then
  exit 0
fi
"$python" -m pip install "${args[@]}" --config-settings=cmake.define.CANNL_WERROR="${werror:-OFF}" .
(cd / && "$python" -c "import cannl") || { echo "setup_python.sh: cannl does not import with $python" >&2; exit 1; }
echo "$state" > "$stamp"
