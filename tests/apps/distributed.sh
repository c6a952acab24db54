#!/usr/bin/env bash
# Data-parallel training across processes (mpirun -np 2 on this machine) and devices:
# - the moons demo and the makemore MLP on 2 processes learn what 1 process learns with the same
#   global batch (within rounding: the split batch sums its gradients in another order), and
#   exactly what 2 devices of one process learn (the same reduction order);
# - a checkpoint written by rank 0 resumes a 2-process run exactly;
# - ranks with different device counts fail at setup with an error naming each rank's count;
# - a rank that hangs or is killed ends the run with an error naming it, within the timeout.
# Skips (exit 77) where mpirun or cannl's MPI support is missing.
set -euo pipefail
cannl="$1"
work="$2"
data="$(cd "$(dirname "$0")/../../data/names" && pwd)/first-names-en.txt"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

if ! command -v mpirun > /dev/null; then
  echo "SKIP: mpirun not found (install Debian's openmpi-bin and libopenmpi-dev: scripts/setup.sh)"; exit 77
fi
# CI runs as root; Open MPI refuses that unless told. The generated code's OpenMP threads would
# spin against the other rank on 2 cores: one thread each, passive waits.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun -np 2 --oversubscribe --bind-to none)
flags=(--cc_threads=1 --progress_bar=false)


losses() { grep -E '^epoch' "$1" | awk '{print $4}'; }
# Every loss of $1 within relative $3 of $2's.
close() {
  paste <(losses "$1") <(losses "$2") | awk -v tol="$3" -v a="$1" -v b="$2" '
    { d = $1 - $2; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; n++
      if (d > tol * m) { printf "FAIL: %s %s vs %s %s (line %d)\n", a, $1, b, $2, n; bad = 1 } }
    END { if (n == 0) { print "FAIL: no losses in " a; bad = 1 } exit bad }'
}
same() {
  if ! diff <(losses "$1") <(losses "$2"); then echo "FAIL: $1 and $2 differ"; exit 1; fi
}

# The moons demo: 1 process, 2 devices, 2 processes; global batch 64 in each.
"$cannl" demo --epochs 3 "${flags[@]}" --build_files_prefix=one > moons1.txt
"$cannl" demo --epochs 3 --devices 2 "${flags[@]}" --build_files_prefix=dev > moons_dev2.txt
if ! "${mpi[@]}" "$cannl" demo --epochs 3 --distributed "${flags[@]}" --build_files_prefix=mpi > moons_mpi2.txt 2>&1; then
  if grep -q "built without MPI" moons_mpi2.txt; then echo "SKIP: this cannl was built without MPI"; exit 77; fi
  cat moons_mpi2.txt; echo "FAIL: a 2-process demo did not run"; exit 1
fi
cat moons_mpi2.txt
grep -q 'over 2 replicas (1 device(s) x 2 process(es))' moons_mpi2.txt || { echo "FAIL: not 2 processes"; exit 1; }
grep -q 'global steps/s' moons_mpi2.txt || { echo "FAIL: no global steps/s"; exit 1; }
close moons_mpi2.txt moons1.txt 1e-5 || exit 1
same moons_mpi2.txt moons_dev2.txt
echo "PASS: moons on 2 processes = 1 process (within 1e-5) = 2 devices (exactly)"

# The makemore MLP (AdamW): 1 process and 2 processes.
"$cannl" demo --model makemore --data "$data" --epochs 2 "${flags[@]}" --build_files_prefix=one > mm1.txt
"${mpi[@]}" "$cannl" demo --model makemore --data "$data" --epochs 2 --distributed "${flags[@]}" \
  --build_files_prefix=mpi > mm_mpi2.txt
cat mm_mpi2.txt
close mm_mpi2.txt mm1.txt 1e-5 || exit 1
echo "PASS: makemore MLP on 2 processes = 1 process (within 1e-5)"

# Checkpoints: 1 epoch, then resumed to 3, equal the straight 3-epoch run above.
"${mpi[@]}" "$cannl" demo --epochs 1 --distributed --checkpoint ck.safetensors "${flags[@]}" \
  --build_files_prefix=mpi > ck_a.txt
"${mpi[@]}" "$cannl" demo --epochs 3 --distributed --checkpoint ck.safetensors --resume "${flags[@]}" \
  --build_files_prefix=mpi > ck_b.txt
grep -q 'resumed from ck.safetensors after epoch 1' ck_b.txt || { cat ck_b.txt; echo "FAIL: no resume"; exit 1; }
if ! diff <(grep -E '^epoch +3/' ck_b.txt | awk '{print $4}') <(grep -E '^epoch +3/' moons_mpi2.txt | awk '{print $4}'); then
  echo "FAIL: the resumed run's last loss differs from the straight run's"; exit 1
fi
ls ck.safetensors.* 2> /dev/null && { echo "FAIL: a temporary checkpoint file was left"; exit 1; }
echo "PASS: a 2-process run resumed from rank 0's checkpoint equals the straight run"

# Ranks with different device counts (rank 0: --devices 2, rank 1: one device): every rank names
# each rank's count at setup and fails, instead of hanging or averaging over another replica count.
uneven=0
timeout 120 mpirun --oversubscribe --bind-to none \
  -np 1 "$cannl" demo --epochs 1 --devices 2 --distributed "${flags[@]}" --build_files_prefix=mpi : \
  -np 1 "$cannl" demo --epochs 1 --distributed "${flags[@]}" --build_files_prefix=mpi > uneven.txt 2>&1 || uneven=$?
cat uneven.txt
[[ $uneven -ne 124 ]] || { echo "FAIL: uneven devices: the run did not end (timeout 120 s)"; exit 1; }
[[ $uneven -ne 0 ]] || { echo "FAIL: uneven devices: the run succeeded"; exit 1; }
grep -qF 'data_parallel: the processes run different numbers of local devices (rank 0 has 2, rank 1 has 1 device(s))' uneven.txt ||
  { echo "FAIL: uneven devices: no error naming each rank's count"; exit 1; }
echo "PASS: ranks with different device counts fail at setup naming each rank's count"

# Faults: rank 1 hangs (or dies) before global step 3; rank 0 stops within the 4 s timeout.
fault() {  # $1: kill|hang, then mpirun options
  local kind="$1"; shift
  local start=$SECONDS status=0
  timeout 120 mpirun -np 2 --oversubscribe --bind-to none "$@" "$cannl" demo --epochs 2 --distributed "${flags[@]}" \
    --build_files_prefix=mpi --distributed_timeout_s=4 --distributed_fault_injection="$kind:1:3" \
    > "fault_$kind.txt" 2>&1 || status=$?
  local took=$((SECONDS - start))
  cat "fault_$kind.txt"
  [[ $status -ne 124 ]] || { echo "FAIL: $kind: the run did not end (timeout 120 s)"; exit 1; }
  (( took < 60 )) || { echo "FAIL: $kind: the run took $took s"; exit 1; }
  echo "($kind: ended after $took s with status $status)"
}
fault hang
grep -q 'DistributedError: rank 1 did not reach' fault_hang.txt || { echo "FAIL: hang: no error naming rank 1"; exit 1; }
grep -q 'final train accuracy' fault_hang.txt && { echo "FAIL: hang: rank 0 finished"; exit 1; }
# Killed: by default mpirun itself ends the job and names the rank; with --enable-recovery the
# survivors keep running, and rank 0's timeout names it (Open MPI 4.1's mpirun then exits with
# status 0 after rank 0's MPI_Abort, so the message is what is checked).
fault kill
grep -Eq 'rank 1 .*(signal 9|Killed)|DistributedError: rank 1' fault_kill.txt || { echo "FAIL: kill: rank 1 not named"; exit 1; }
fault kill --enable-recovery
grep -q 'DistributedError: rank 1' fault_kill.txt || { echo "FAIL: kill (recovery): no error naming rank 1"; exit 1; }
echo "PASS: a hung or killed rank ends the run with an error naming rank 1"
