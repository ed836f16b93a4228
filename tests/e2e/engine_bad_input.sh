#!/usr/bin/env bash
# Usage errors end every rank with exit 2, one message (from rank 0) and no run file; nothing
# hangs (each launch is bounded by `timeout`).
source "$(dirname "$0")/engine_common.inc"

# The usage cases are independent launches that mostly wait (mpirun's abort of the job):
# they run concurrently, each with its own output files, and are checked once all are done.
CASES=()
expect_usage() {   # name, np, args...: starts the case in the background
    local name=$1 np=$2; shift 2
    local id=${#CASES[@]}
    CASES+=("$name")
    ( timeout 60 "${MPIRUN[@]}" -np "$np" "$@" >"$TMP/out.$id" 2>"$TMP/err.$id"
      echo $? >"$TMP/rc.$id" ) &
}
# check_usage N [PATTERN WHAT]: case N exited 2 with exactly one engine message (mpirun adds
# its own lines about the non-zero exit; ours start with "pdbx-engine:"), matching PATTERN
check_usage() {
    local id=$1 name=${CASES[$1]} rc
    rc=$(cat "$TMP/rc.$id")
    [ "$rc" -eq 2 ] || { cat "$TMP/err.$id"; fail "$name: exit $rc, want 2"; }
    local n; n=$(grep -c '^pdbx-engine:' "$TMP/err.$id")
    [ "$n" -eq 1 ] || { cat "$TMP/err.$id"; fail "$name: $n engine messages, want exactly 1"; }
    grep '^pdbx-engine:' "$TMP/err.$id"
    if [ $# -ge 3 ]; then
        grep -q -- "$2" "$TMP/err.$id" || { cat "$TMP/err.$id"; fail "$name: $3"; }
    fi
}

tiny_spec "$TMP/tp3.json" 'configs=[{"tp":3,"pp":1,"dp":1}]' 'gpus_per_node=3'
echo '{"model": "tinyllama", "seqlen": 128}' > "$TMP/typo.json"
echo '{ not json' > "$TMP/broken.json"
tiny_spec "$TMP/two.json" 'configs=[{"tp":2,"pp":1,"dp":1}]'
tiny_spec "$TMP/mixed.json" 'configs=[{"tp":2,"pp":1,"dp":1},{"tp":1,"pp":1,"dp":1},{"tp":1,"pp":1,"dp":2}]'

expect_usage "tp 3" 3 "$ENGINE" --spec "$TMP/tp3.json" --store "$TMP/st"
expect_usage "unknown field" 2 "$ENGINE" --spec "$TMP/typo.json" --store "$TMP/st"
expect_usage "broken json" 2 "$ENGINE" --spec "$TMP/broken.json" --store "$TMP/st"
expect_usage "missing file" 2 "$ENGINE" --spec "$TMP/nope.json" --store "$TMP/st"
expect_usage "no --store" 2 "$ENGINE" --spec "$TMP/tp3.json"
expect_usage "unknown flag" 2 "$ENGINE" --spec "$TMP/tp3.json" --store "$TMP/st" --frobnicate
expect_usage "bad backend" 2 "$ENGINE" --spec "$TMP/tp3.json" --store "$TMP/st" --backend tpu
expect_usage "wrong rank count" 3 "$ENGINE" --spec "$TMP/two.json" --store "$TMP/st"
# each rank count is listed once
expect_usage "wrong rank count, mixed configs" 3 "$ENGINE" --spec "$TMP/mixed.json" --store "$TMP/st"
PDBX_FAULT=explode:rank=0 expect_usage "bad PDBX_FAULT" 1 -x PDBX_FAULT "$ENGINE" --spec "$TMP/two.json" --store "$TMP/st"
wait

check_usage 0 'tp' "message does not name tp"
check_usage 1 "seqlen" "message does not name the field"
check_usage 2
check_usage 3
check_usage 4
check_usage 5
check_usage 6
check_usage 7 "no config needs 3 ranks" "rank count message"
check_usage 8 "(the configs need: 2, 1)" "rank counts not listed once each"
check_usage 9

[ ! -d "$TMP/st/runs" ] || [ -z "$(ls -A "$TMP/st/runs")" ] || fail "a usage error created a run file"

# cuda on a machine without a usable GPU: a clear error, exit 1, no run file
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    tiny_spec "$TMP/one.json" 'gpu="A40"'
    timeout 60 "${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/one.json" --store "$TMP/stc" --backend cuda >/dev/null 2>"$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || { cat "$TMP/err"; fail "--backend cuda without a GPU: exit $rc, want 1"; }
    grep -q '^pdbx-engine: backend cuda: ' "$TMP/err" || { cat "$TMP/err"; fail "cuda error message"; }
    # auto falls back to cpu with one notice line and runs
    tiny_spec "$TMP/auto.json" 'backend="auto"'
    timeout 60 "${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/auto.json" --store "$TMP/sta" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "auto fallback run"; }
    [ "$(grep -c 'backend auto: using cpu' "$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "auto notice"; }
fi
echo PASS
