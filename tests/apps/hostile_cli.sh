#!/usr/bin/env bash
# `cannl` used as a careless or hostile user would: every case ends with exit status 1 and a
# message naming the problem, or with a correct run; never a signal, a hang or a silently wrong
# result. Covers the option parser (unknown options, bad numbers, ranges, --opt=value against
# config keys, --help), sizes past int64 and past the memory budget, files that are not regular
# files, a damaged compile cache, a read-only build_files/, shell characters in paths, GPT-2
# configs and weights that cannot work.
# Usage: hostile_cli.sh PATH_TO_CANNL GPT2_FIXTURE_DIR WORK_DIR
set -uo pipefail
cannl="$1"
fixture="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run_cannl ARGS...: runs with a time limit (a hang is a failure), output in out.txt / err.txt.
run_cannl() {
  timeout 120 "$cannl" "$@" > out.txt 2> err.txt
}

# expect_error SUBSTRING ARGS...: exit status 1 (not a signal, not a hang) and SUBSTRING on stderr.
expect_error() {
  local needle="$1"; shift
  run_cannl "$@"; local rc=$?
  if [ $rc -ne 1 ] || ! grep -qF -- "$needle" err.txt; then
    fail "expected exit 1 and '$needle' from: cannl $* (rc $rc)"; head -5 err.txt
  fi
}

# expect_ok ARGS...: exit status 0.
expect_ok() {
  run_cannl "$@"; local rc=$?
  if [ $rc -ne 0 ]; then fail "expected success from: cannl $* (rc $rc)"; head -5 err.txt; fi
}

model="$fixture/model.safetensors"

# ---- the option parser ----
expect_error "names no backend" demo --backend vulkan
expect_error "unknown option '--gpus' for 'cannl demo'" demo --gpus 2
expect_error "--devices must be between 1 and 64, got 0" demo --devices 0
expect_error "--resume needs --checkpoint FILE" demo --resume --epochs 1
expect_error "--checkpoint needs a value (--checkpoint FILE), got the option '--resume'" demo --checkpoint --resume
expect_error "--prompt needs a value" gpt2 --prompt --print-logits
for command in bench tune; do
  "$cannl" help "$command" > help.txt 2>&1 || fail "cannl help $command exits $?: $(cat help.txt)"
  grep -q "$command matmul" help.txt && grep -q "$command mlp" help.txt || fail "cannl help $command: $(cat help.txt)"
done
expect_error "unknown option '--tuned' for 'cannl bench matmul'" bench matmul --tuned
expect_error "unknown option '--tune' for 'cannl tune matmul'" tune matmul --tune
expect_error "cannl tune needs a benchmark" tune
expect_error "did you mean '--epochs'" demo --epocs 3
# An option in another case or with underscores is no config key of the same name (gpt2's --seed
# is the sampling seed; config key seed would silently take --Seed).
expect_error "unknown option '--Seed' for 'cannl gpt2'; did you mean '--seed'?" gpt2 --weights "$model" --ids 1 --Seed 3
expect_error "did you mean '--top-k'?" gpt2 --weights "$model" --ids 1 --top_k 3
expect_error "--epochs expects an integer, got 'abc'" demo --epochs abc
expect_error "--epochs must be between 1 and 100000, got 0" demo --epochs 0
expect_error "--epochs must be between 1 and 100000" demo --epochs=99999999999999999999
expect_error "--lr expects a finite number" demo --lr nan
expect_error "--lr must be > 0" demo --lr -1
expect_error "unknown option '--foo' for 'cannl einsum'" einsum --foo "i=>i" 3
expect_error "--accum expects one of sum, max, min" einsum --accum avg "i=>i" 3
expect_error "--tokens must be between 0 and 1000000" gpt2 --weights "$model" --tokens 99999999999999999999
expect_error "--tokens needs a value" gpt2 --weights "$model" --tokens
expect_error "--print-logits takes no value" gpt2 --weights "$model" --print-logits=yes
expect_error "--threads must be between 0 and 4096" bench mlp --threads -1
expect_error "cannl bench needs a benchmark" bench
expect_error "unknown command 'frob'" frob
run_cannl; rc=$?   # no command at all: the usage on stderr, exit status 2
{ [ $rc -eq 2 ] && grep -qF "usage: cannl <command>" err.txt && [ ! -s out.txt ]; } || fail "a bare cannl (rc $rc)"
expect_error "give config keys as --key=value" --debug demo
expect_error "unexpected argument 'extra' for 'cannl demo'" demo extra
expect_error "config key 'cc_threads' = '4294967298'" gpt2 --weights "$model" --ids 1 --print-logits --cc_threads=4294967298
printf 'cc_threads = 4294967298\n' > cannl_config
expect_error "expected an integer from 0 to 4096" gpt2 --weights "$model" --ids 1 --print-logits
rm cannl_config
for command in demo einsum gpt2 "bench matmul" "bench mlp" "tune matmul" "tune mlp"; do
  # shellcheck disable=SC2086
  run_cannl $command --help; rc=$?
  if [ $rc -ne 0 ] || ! grep -qF "usage: cannl $command" out.txt; then fail "cannl $command --help (rc $rc)"; fi
  # Every line of the option list is indented: a wrapped help line starts at the help column.
  sed -n '/^options:$/,/^  --help /p' out.txt | sed 1d | grep -v '^  ' > unindented.txt &&
    fail "cannl $command --help: option lines out of the indented list: $(cat unindented.txt)"
done
expect_ok help gpt2
expect_ok --debug=0 einsum "i=>i" 3
# --seed=8 and --seed 8 are both the sampling seed (never the config key `seed`).
expect_ok gpt2 --weights "$model" --ids 1,2 --tokens 4 --top-k 5 --seed=8; cp out.txt seed_eq.txt
expect_ok gpt2 --weights "$model" --ids 1,2 --tokens 4 --top-k 5 --seed 8
cmp -s out.txt seed_eq.txt || fail "--seed=8 and --seed 8 sample differently"
expect_ok gpt2 --weights "$model" --ids 1,2 --tokens 4 --top-k 5 --seed 9
cmp -s out.txt seed_eq.txt && fail "--seed 9 samples like --seed 8 (the option is ignored)"

# ---- sizes ----
expect_error "size overflow" einsum "i;j=>i,j" 4611686018427387904 4
expect_error "size overflow" einsum --eval "i;j=>i,j" 1099511627776 1099511627776
expect_error "size overflow" einsum "a;b=>a^b" 9223372036854775807 1
expect_error "size overflow" einsum "o<+4*k; k => o" 10 4611686018427387904
expect_error "memory budget" einsum --eval --memory_budget_mb=64 "i;j=>i,j" 100000 100000
expect_error "at most 2^32" einsum --eval "ij;jk=>ik" 3000,3000 3000,3000
expect_error "memory budget" bench matmul --n 16384 --memory_budget_mb=64
expect_error "memory budget" gpt2 --random-weights --ids 1 --memory_budget_mb=16
printf '{"n_embd": 4611686018427387904, "n_head": 1}\n' > huge.json
expect_error "ShapeError" gpt2 --random-weights --config huge.json --ids 1
grep -qF "size overflow" err.txt || fail "n_embd 2^62: no size overflow message"

# ---- the prompt and the context ----
expect_error "more than the model's context of 16 positions" gpt2 --weights "$model" \
  --ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17 --print-logits
expect_error "exceed the model's context of 16 positions (at most 13 more)" gpt2 --weights "$model" --ids 1,2,3 --tokens 14

# ---- files ----
mkfifo weights.fifo
expect_error "not a regular file" gpt2 --weights weights.fifo --ids 1
mkfifo config.fifo
expect_error "not a regular file" gpt2 --weights "$model" --config config.fifo --ids 1
start=$(date +%s)
expect_error "no such file" gpt2 --weights missing.safetensors --ids 1
[ $(( $(date +%s) - start )) -lt 10 ] || fail "a missing weights file was reported only after compiling"
# All-NaN weights: a warning, not a silent token 0.
python3 - "$model" nan.safetensors <<'EOF'
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
for name, info in header.items():
    if name != '__metadata__' and info['dtype'] == 'F32':
        begin, end = info['data_offsets']
        body[begin:end] = struct.pack('<f', float('nan')) * ((end - begin) // 4)
open(sys.argv[2], 'wb').write(data[:8 + n] + bytes(body))
EOF
cp "$fixture/config.json" config.json
expect_ok gpt2 --weights nan.safetensors --ids 1,2 --tokens 2
grep -qF "NaN or infinite (all of them)" err.txt || fail "all-NaN weights gave no warning"

# ---- the compile cache: damaged entries, read-only build_files/ ----
mkdir cache_run && cd cache_run || exit 1
expect_ok gpt2 --weights "$model" --ids 1,2 --print-logits; cp out.txt ../logits_first.txt
for lib in build_files/cannl/cache/*.so; do truncate -s 100 "$lib"; done
expect_ok gpt2 --weights "$model" --ids 1,2 --print-logits
cmp -s out.txt ../logits_first.txt || fail "logits differ after rebuilding a damaged cache"
grep -qF "was not loaded" err.txt || fail "a damaged cache entry gave no warning"
ls build_files/cannl/cache/quarantine/*.so > /dev/null 2>&1 || fail "no quarantined library"
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  # root writes through any mode bits: run the read-only case as nobody.
  chmod -R a-w build_files
  setpriv --reuid=65534 --regid=65534 --clear-groups "$cannl" gpt2 --weights "$model" --ids 1,2 \
    --print-logits > out.txt 2> err.txt || { fail "read-only build_files/ with everything cached"; head -5 err.txt; }
  cmp -s out.txt ../logits_first.txt || fail "logits differ with a read-only build_files/"
  chmod -R u+w build_files
elif [ "$(id -u)" -ne 0 ]; then
  chmod -R a-w build_files
  expect_ok gpt2 --weights "$model" --ids 1,2 --print-logits
  chmod -R u+w build_files
fi
cd ..

# ---- shell characters in the working directory and build_files_prefix ----
odd="it's \$(touch pwned) \`touch pwned2\`"
mkdir -p "$odd" && cd "$odd" || exit 1
expect_ok demo --epochs 1 "--build_files_prefix=a'b;touch pwned3"
ls pwned* > /dev/null 2>&1 && fail "a quote in a path ran a command"
if command -v gnuplot > /dev/null; then
  [ -s "build_files/a'b;touch pwned3/loss_curve.png" ] || fail "no loss curve in a directory with a quote"
fi
cd ..
expect_error "expected a folder name without '/'" demo --epochs 1 --build_files_prefix=../escape
[ -e escape ] && fail "build_files_prefix escaped build_files/"

[ $failures -eq 0 ] && echo "hostile_cli: all checks passed"
exit $((failures > 0))
