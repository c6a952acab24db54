#!/usr/bin/env bash
# Acceptance of the main job: `cannl demo` reaches >= 0.97 train accuracy, writes its pictures,
# prints identical losses when run twice (same seed, same numbers), and the second run compiles
# nothing (every routine comes from the on-disk compile cache); a run resumed from a checkpoint
# that holds all its epochs evaluates the restored weights.
set -euo pipefail
cannl="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

"$cannl" demo > first.txt
"$cannl" demo > second.txt
cat first.txt

losses() { grep -E '^epoch' "$1" | sed -E 's/ +[0-9]+ steps\/s$//'; }
if ! diff <(losses first.txt) <(losses second.txt); then
  echo "FAIL: two runs printed different losses"; exit 1
fi
accuracy=$(sed -nE 's/^final train accuracy: ([0-9.]+)$/\1/p' first.txt)
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.97) }' || { echo "FAIL: accuracy $accuracy < 0.97"; exit 1; }
grep -q '^compiler invocations: 0 ' second.txt || { echo "FAIL: the second run invoked the compiler"; grep '^compiler' second.txt; exit 1; }
first_compiles=$(sed -nE 's/^compiler invocations: ([0-9]+).*/\1/p' first.txt)
[ "$first_compiles" -gt 0 ] || { echo "FAIL: the first run compiled nothing (stale cache?)"; exit 1; }
for png in loss_curve.png decision_boundary.png; do
  [ -s "build_files/cannl/$png" ] || { echo "FAIL: build_files/cannl/$png missing"; exit 1; }
done
ls build_files/cannl/*.c > /dev/null
# A checkpoint that holds every epoch asked for: the resumed run trains nothing and evaluates the
# restored weights (their writer, the training step, never ran in that process).
"$cannl" demo --epochs 2 --checkpoint ck.safetensors > ck_a.txt
"$cannl" demo --epochs 2 --checkpoint ck.safetensors --resume > ck_b.txt ||
  { cat ck_b.txt; echo "FAIL: resuming a finished run"; exit 1; }
grep -q 'resumed from ck.safetensors after epoch 2' ck_b.txt || { cat ck_b.txt; echo "FAIL: no resume"; exit 1; }
! grep -qE '^epoch' ck_b.txt || { cat ck_b.txt; echo "FAIL: a finished run trained again"; exit 1; }
[ "$(grep '^final train accuracy' ck_a.txt)" == "$(grep '^final train accuracy' ck_b.txt)" ] ||
  { echo "FAIL: the restored weights evaluate differently"; exit 1; }
echo "PASS: accuracy $accuracy, identical losses, second run compiled nothing, a finished run resumes"
