#!/usr/bin/env bash
# `cannl tune` across processes: a search prints the times and the winner's trace and fills the
# schedule cache; a second process replays it without measuring; a damaged entry is a warning and
# a new search; `bench --tune` is the same command. Nothing here depends on which candidate wins.
# Usage: tune_cli.sh PATH_TO_CANNL WORK_DIR
set -uo pipefail
cannl="$1"
work="$2"
failures=0
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run_tune ARGS...: out.txt / err.txt, small and quick (no rounds, a few seconds of search).
run_tune() {
  "$cannl" tune matmul --n 48 --reps 2 --autotune-rounds=0 --autotune-budget-s=20 "$@" >out.txt 2>err.txt
}

run_tune || fail "the first search (rc $?): $(cat err.txt)"
grep -q "candidates in" out.txt || fail "the first run does not say it searched: $(cat out.txt)"
grep -q "default schedule" out.txt || fail "no default time: $(cat out.txt)"
grep -q "cannl-schedule 1" out.txt || fail "no winner's trace: $(cat out.txt)"
grep -q "^GFLOP/s " out.txt || fail "the tuned routine was not timed: $(cat out.txt)"
entries=(build_files/cannl/schedule_cache/*.schedule)
[ ${#entries[@]} -eq 1 ] && [ -f "${entries[0]}" ] || fail "expected one schedule cache entry, got: ${entries[*]}"

run_tune || fail "the second run (rc $?): $(cat err.txt)"
grep -q "replayed from the schedule cache" out.txt || fail "the second process did not replay: $(cat out.txt)"
! grep -q "^\[tune\]" err.txt || fail "the replay measured candidates: $(cat err.txt)"

printf 'garbage\n' >"${entries[0]}"
run_tune || fail "the run after damage (rc $?): $(cat err.txt)"
grep -q "is ignored" err.txt || fail "no warning about the damaged entry: $(cat err.txt)"
grep -q "candidates in" out.txt || fail "the damaged entry was not tuned again: $(cat out.txt)"

# The same search as above: an entry answers only a search no wider than its own.
"$cannl" bench matmul --n 48 --reps 2 --tune --autotune-rounds=0 --autotune-budget-s=20 >out.txt 2>err.txt ||
  fail "bench --tune (rc $?): $(cat err.txt)"
grep -q "replayed from the schedule cache" out.txt || fail "bench --tune is not tune: $(cat out.txt)"
# A wider search than the cached one searches again, says why, and keeps one entry.
run_tune --autotune-rounds=1 || fail "the wider search (rc $?): $(cat err.txt)"
grep -q "came from a narrower search" err.txt || fail "no word on the narrower entry: $(cat err.txt)"
grep -q "candidates in" out.txt || fail "the wider search was answered from the cache: $(cat out.txt)"
entries=(build_files/cannl/schedule_cache/*.schedule)
[ ${#entries[@]} -eq 1 ] || fail "expected the entry overwritten, got: ${entries[*]}"

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "tune_cli: all checks passed"
