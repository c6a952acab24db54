#!/usr/bin/env bash
# Drives `cannl gpt2` on the small fixture of tests/parity/gpt2 (scripts/make_gpt2_fixture.py):
# --print-logits equals PyTorch's last-position logits within 1e-4 relative (floor: 1e-2 of the
# largest |logit|, as in tests/nn/gpt2_test.cpp), for both naming schemes; --ids generation is
# deterministic across two runs (greedy: equal to PyTorch's; sampled: same seed, same tokens);
# user errors exit 1 with a message.
# Usage: gpt2_cli.sh PATH_TO_CANNL FIXTURE_DIR WORK_DIR
set -uo pipefail
mkdir -p "$3" || exit 1
cannl="$(realpath "$1")"
fixture="$(realpath "$2")"
work="$(realpath "$3")"
cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

ids="$(tr -d '\n' < "$fixture/ids.txt")"

# Logits against the fixture.
for weights in model.safetensors bare.safetensors; do
  if ! "$cannl" gpt2 --weights "$fixture/$weights" --ids "$ids" --print-logits > logits.txt 2> err.txt; then
    fail "--print-logits with $weights"; cat err.txt; continue
  fi
  verdict="$(paste -d' ' logits.txt "$fixture/last_logits.txt" | awk '
    { got[NR] = $1; want[NR] = $2; a = want[NR] < 0 ? -want[NR] : want[NR]; if (a > scale) scale = a }
    END {
      if (NR != 100) { print "bad count " NR; exit }
      for (i = 1; i <= NR; i++) {
        d = got[i] - want[i]; if (d < 0) d = -d
        a = want[i] < 0 ? -want[i] : want[i]; if (a < 1e-2 * scale) a = 1e-2 * scale
        if (d / a > worst) worst = d / a
      }
      printf "%s %.3g\n", (worst < 1e-4 ? "ok" : "bad"), worst
    }')"
  echo "gpt2 --print-logits ($weights): max rel err ${verdict#* }"
  [[ "$verdict" == ok* ]] || fail "logits of $weights: $verdict"
done

# Generation: greedy equals PyTorch's continuation; runs repeat exactly.
greedy="$(tr -d '\n' < "$fixture/greedy.txt")"
out1="$("$cannl" gpt2 --weights "$fixture/model.safetensors" --ids "$ids" --tokens 4 2> err.txt)" || { fail "greedy run"; cat err.txt; }
out2="$("$cannl" gpt2 --weights "$fixture/model.safetensors" --ids "$ids" --tokens 4 2> err.txt)" || fail "greedy rerun"
[ "$out1" == "tokens: $greedy" ] || fail "greedy tokens '$out1', PyTorch: '$greedy'"
[ "$out1" == "$out2" ] || fail "greedy runs differ: '$out1' vs '$out2'"
s1="$("$cannl" gpt2 --weights "$fixture/bare.safetensors" --ids "$ids" --tokens 5 --top-k 10 --temperature 1.3 --seed 7 2> err.txt)" || { fail "sampled run"; cat err.txt; }
s2="$("$cannl" gpt2 --weights "$fixture/bare.safetensors" --ids "$ids" --tokens 5 --top-k 10 --temperature 1.3 --seed 7 2> err.txt)" || fail "sampled rerun"
[[ "$s1" =~ ^tokens:\ [0-9]+(,[0-9]+){4}$ ]] || fail "sampled output '$s1'"
[ "$s1" == "$s2" ] || fail "sampled runs differ: '$s1' vs '$s2'"
echo "gpt2 greedy: $out1; sampled: $s1"

# User errors: exit status 1 and a message naming the problem.
expect_error() {
  local needle="$1"; shift
  local rc
  "$cannl" gpt2 "$@" > out.txt 2> err.txt; rc=$?
  if [ $rc -ne 1 ] || ! grep -qF -- "$needle" err.txt; then
    fail "expected error '$needle' from: cannl gpt2 $* (rc $rc)"; cat err.txt
  fi
}
expect_error "token id 100 at position 1" --weights "$fixture/model.safetensors" --ids 1,100 --print-logits
expect_error "give exactly one of --weights FILE and --random-weights" --ids 1,2
expect_error "--tokens expects an integer" --weights "$fixture/model.safetensors" --ids 1 --tokens x
expect_error "IoError" --weights "$work/missing.safetensors" --ids 1

[ $failures -eq 0 ] && echo "gpt2_cli: all checks passed"
exit $((failures > 0))
