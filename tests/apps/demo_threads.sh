#!/usr/bin/env bash
# Parallel execution is bitwise identical to serial. `cannl demo` with every nest that
# has any parallel work scheduled as Grid (cpu_schedule_min_parallel=64) prints the same losses
# and accuracy on 1 and on 2 OpenMP threads, and its generated C really uses OpenMP.
set -euo pipefail
cannl="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

for t in 1 2; do
  "$cannl" demo --epochs 6 --cc_threads=$t --cpu_schedule_min_parallel=64 --build_files_prefix=t$t > t$t.txt
done
cat t2.txt

results() { grep -E '^(epoch|final train accuracy)' "$1" | sed -E 's/ +[0-9]+ steps\/s$//'; }
if ! diff <(results t1.txt) <(results t2.txt); then
  echo "FAIL: 1 and 2 threads printed different losses"; exit 1
fi
# A routine of many kernels is split into files (train_step.c and its train_step.partNN.c).
# grep reads the files itself: `cat | grep -q` fails under pipefail when grep stops early and cat
# gets SIGPIPE (a CI run failed so with the pragma there).
grep -q '#pragma omp parallel for' build_files/t2/train_step*.c || {
  echo "FAIL: the training step has no parallel Grid loop"; exit 1; }
echo "PASS: identical losses on 1 and 2 threads"
