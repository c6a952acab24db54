#!/usr/bin/env bash
# Drives `cannl einsum` (its output contract): result shape on line 1, values with --eval on line 2,
# user errors as "error: ..." on stderr with exit status 1.
# Usage: einsum_command.sh PATH_TO_CANNL
set -uo pipefail
cannl="$1"
failures=0

# expect_ok EXPECTED_STDOUT ARGS...
expect_ok() {
  local expected="$1"; shift
  local out rc
  out="$("$cannl" einsum "$@" 2>/tmp/einsum_cmd_err.$$)"; rc=$?
  if [ $rc -ne 0 ] || [ "$out" != "$expected" ]; then
    echo "FAIL: cannl einsum $*"; echo "  expected: $(printf '%q' "$expected")"
    echo "  got (rc $rc): $(printf '%q' "$out")"; cat /tmp/einsum_cmd_err.$$; failures=$((failures + 1))
  fi
}

# expect_error SUBSTRING ARGS...
expect_error() {
  local needle="$1"; shift
  local out err rc
  out="$("$cannl" einsum "$@" 2>/tmp/einsum_cmd_err.$$)"; rc=$?
  err="$(cat /tmp/einsum_cmd_err.$$)"
  if [ $rc -ne 1 ] || [ -n "$out" ] || [[ "$err" != error:* ]] || [[ "$err" != *"$needle"* ]]; then
    echo "FAIL (error expected): cannl einsum $*"; echo "  rc $rc stdout '$out' stderr '$err'"
    failures=$((failures + 1))
  fi
}

nl=$'\n'
expect_ok "2,4" "ij;jk=>ik" 2,3 3,4
expect_ok "2,4${nl}20 23 26 29 56 68 80 92" --eval "ij;jk=>ik" 2,3 3,4
expect_ok "3${nl}5 8 11" --eval "o<+k; k => o" 5 3
expect_ok "4${nl}2 5 8 3" --eval "o=+k; k => o" 4 3
expect_ok "4${nl}2 4 6 8" --eval "2*o<+2*k; k => o" 9 2
expect_ok "2${nl}1 3" --eval "2*o=+2*k; k => o" 4 2
expect_ok "5${nl}0 1 0 1 2" --eval "a; b => a^b" 2 3
expect_ok "3${nl}1 2 3" --eval "1^i => i" 4
expect_ok "4${nl}0 0 1 2" --eval "i => 1^i" 3
expect_ok "2|${nl}2 5" --eval --accum max "...|i => ...|" "2|3"
expect_ok "2|${nl}0 3" --eval --accum min "...|i => ...|" "2|3"
expect_ok "3${nl}0 4 8" --eval "ii=>i" 3,3
expect_ok "${nl}12" --eval "ii=> |->" 3,3
expect_ok "3,3${nl}0 0 0 0 1 0 0 0 2" --eval "i=>ii" 3
expect_ok "2|4->3" "b|i->o => b|o->i" "2|3->4"
expect_ok "4->3" "i->o => o->i" "3->4"
expect_ok "3,2${nl}0 3 1 4 2 5" --eval "ij=>ji" 2,3
expect_ok "2,3${nl}0 0 0 0 1 2" --eval "i;j=>ij" 2 3
expect_ok "${nl}5" --eval "i;i=> |->" 3 3
expect_ok "2|3,4" "...|ij;...|jk=>...|ik" "2|3,5" "2|5,4"
expect_ok "5${nl}0 1 2 3 4" --eval "a^b => b" 5
expect_ok "2${nl}0 1" --eval "a => a^b" 2
# Tensor puzzles (values: operands hold their flat offsets)
expect_ok "2,3${nl}0 1 2 0 1 2" --eval "a, i; b, i => a^b, i" 1,3 1,3
expect_ok "3${nl}5 14 23" --eval "ij; j => i" 3,3 3
expect_ok "3,2${nl}0 0 2 3 8 10" --eval "i, j; i => i, j" 3,2 3
expect_ok "3,2${nl}0 1 0 1 2 3" --eval "a, i; b, i => b^a, i" 2,2 1,2
expect_error "expected 1 operand" "ij=>ik" 2,3 4
expect_error "solved dimensions for axis: mismatch" "ij;jk=>ik" 2,3 4,4
expect_error "incompatible stride" "2*o<+k; k => o" 10 3
expect_error "use_padding must be specified" "o+k; k => o" 10 3
expect_error "bad shape" "i=>i" "3,x"
expect_error "--accum expects" --accum avg "i=>i" 3
# Named bases (dimension labels) are read and printed as the library prints them.
expect_ok "4,rgb=3${nl}0 4 8 1 5 9 2 6 10 3 7 11" --eval "ij=>ji" rgb=3,4
expect_ok "h=3" "2*o => o" h=6
expect_error "solved dimensions for axis: different bases" "i;i=>i" rgb=3 3
expect_error "concat: conflicting dimension bases" "a; b => a^b" t=2 u=3
expect_error "bad shape" "i=>i" "1x=3"
expect_error "unexpected ';' at position 9" "ij;jk=>ik;" 2,3 3,4

rm -f /tmp/einsum_cmd_err.$$
if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "einsum command: all checks passed"
