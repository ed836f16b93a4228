#!/usr/bin/env bash
# Runs the whole suite for each build variant given (build, build-san): every cmocka binary in
# <variant>/tests/, then every end-to-end script in tests/e2e/ with PDBX_BUILD=<variant>.
# A script exiting 77 is a skip (it prints why). Ends with "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
pass=0; fail=0; skip=0; failed=()
export PDBX_SOURCE_DIR="$root"
export PYTHON=/usr/bin/python3
logdir=$(mktemp -d /tmp/pdbx-suite.XXXXXX)
report() {   # name, rc, tenths of a second, log
    local name=$1 rc=$2 ds=$3 log=$4
    local dt="$((ds/10)).$((ds%10))"
    if [ "$rc" -eq 0 ]; then pass=$((pass+1)); printf 'PASS  %-55s %6ss\n' "$name" "$dt"
    elif [ "$rc" -eq 77 ]; then skip=$((skip+1)); printf 'SKIP  %-55s %6ss  %s\n' "$name" "$dt" "$(grep -m1 -i skip "$log" | cut -c1-100)"
    else fail=$((fail+1)); failed+=("$name"); printf 'FAIL  %-55s %6ss (rc=%d)\n' "$name" "$dt" "$rc"; tail -n 40 "$log" | sed 's/^/      | /'
    fi
}
run_one() {   # name, command...
    local name=$1; shift
    local log="$logdir/$(echo "$name" | tr '/ ' '__').log"
    local t0=$(date +%s%N)
    "$@" >"$log" 2>&1
    local rc=$?
    report "$name" $rc $(( ($(date +%s%N) - t0) / 100000000 )) "$log"
}
for v in "$@"; do
    export PDBX_BUILD="$root/$v"
    if [ "$v" = build-san ]; then
        # OpenMPI and OpenBLAS keep allocations for the process lifetime; leak checks stay on
        # for our own unit binaries through the suppressions file.
        export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:suppressions=$root/tests/asan.supp"
        export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    else
        unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
    fi
    # The unit binaries are independent and time nothing: two at a time (each into its own
    # log and status file), then reported in order as the e2e scripts are.
    unitdir=$logdir/unit-$v
    mkdir -p "$unitdir"
    units=()
    for t in "$v"/tests/test_*; do [ -x "$t" ] && units+=("$t"); done
    printf '%s\0' "${units[@]}" | xargs -0 -r -P 2 -I{} bash -c \
        't0=$(date +%s%N); "$1" >"$2/$(basename "$1").log" 2>&1; rc=$?;
         echo "$rc $(( ($(date +%s%N) - t0) / 100000000 ))" >"$2/$(basename "$1").rc"' _ {} "$unitdir"
    for t in "${units[@]}"; do
        name=$(basename "$t")
        read -r rc ds <"$unitdir/$name.rc" || { rc=1; ds=0; }
        cp "$unitdir/$name.log" "$logdir/$(echo "$v/unit/$name" | tr '/ ' '__').log"
        report "$v/unit/$name" "$rc" "$ds" "$unitdir/$name.log"
    done
    for s in tests/e2e/*.sh; do
        [ -f "$s" ] || continue
        # "# suite: plain build only: WHY" — an integration script whose C paths the sanitizer
        # variant already covers through other scripts runs once, in build/ (suite time)
        only=$(sed -n 's/^# suite: plain build only: //p' "$s" | head -1)
        if [ "$v" = build-san ] && [ -n "$only" ]; then
            skip=$((skip+1))
            printf 'SKIP  %-55s %6ss  %s\n' "$v/e2e/$(basename "$s" .sh)" 0.0 "plain build only: ${only:0:80}"
            continue
        fi
        run_one "$v/e2e/$(basename "$s" .sh)" bash "$s"
    done
done
echo
[ ${#failed[@]} -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "logs: $logdir"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
