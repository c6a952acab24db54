#!/usr/bin/env bash
# `cmake --install` into a scratch prefix; a consumer project builds against find_package(cannl)
# and runs; the installed `cannl gpt2` runs from an unrelated directory and finds its tokenizer.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -uo pipefail
build="$1"
source="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" || exit 1
prefix="$work/prefix"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
[ -x "$prefix/bin/cannl" ] || fail "no bin/cannl"
[ -f "$prefix/share/cannl/gpt2-bpe/encoder.json" ] || fail "no tokenizer data under share/cannl"
[ -f "$prefix/lib/cmake/cannl/cannlConfig.cmake" ] || ls "$prefix"/lib*/cmake/cannl/cannlConfig.cmake > /dev/null || fail "no CMake package"

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$source/tests/install/consumer" -B "$work/consumer" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/consumer.log" 2>&1 \
  || { cat "$work/consumer.log"; fail "configuring the consumer with find_package(cannl)"; }
cmake --build "$work/consumer" >> "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "building the consumer"; }
mkdir -p "$work/run_consumer"
result=$(cd "$work/run_consumer" && "$work/consumer/consumer") || fail "running the consumer"
grep -qx "consumer: ok" <<< "$result" || fail "the consumer's result"

# The installed program, from a directory with no cannl tree above it.
elsewhere="$work/elsewhere"
mkdir -p "$elsewhere"
cat > "$elsewhere/tiny.json" <<'JSON'
{"vocab_size": 50257, "n_positions": 16, "n_embd": 8, "n_layer": 1, "n_head": 2}
JSON
(cd "$elsewhere" && "$prefix/bin/cannl" gpt2 --random-weights --config tiny.json --prompt "Hello" --tokens 2) \
  > "$work/gpt2.out" 2> "$work/gpt2.err" || { cat "$work/gpt2.err"; fail "installed cannl gpt2 --random-weights"; }
grep -q "^text: Hello" "$work/gpt2.out" || { cat "$work/gpt2.out"; fail "installed cannl gpt2 output"; }
echo "install_and_consume: all checks passed"
