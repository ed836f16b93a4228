#!/usr/bin/env bash
# Runs the whole suite for the build variants given (build, build-san): every cmocka binary in
# each <variant>/tests/, then every end-to-end script in tests/e2e/ with PDBX_BUILD=<variant>
# (once, in build-san, when both are given: the markers below). A script exiting 77 is a skip
# (it prints why). Ends with "N passed, N failed, N skipped".
#
# Each end-to-end script keeps its state in its own mktemp directory, tmux socket and run ids:
# they run PDBX_SUITE_JOBS at a time (default 3), both variants in one pool; they are CPU-bound
# (mpirun ranks, the explorer redrawing under tmux), so more at a time buys little. A script whose
# checks need the machine to itself (a timing ratio or budget, a host-wide resource such as
# the namespace hosts or the Slurm daemons) says so with "# suite: serial: WHY" and runs alone,
# before the pool, on a quiet machine. A script marked "# suite: long: WHY" (a real sweep, a long
# tmux session) starts at the head of the pool, the sanitizer variant's first (they run longest):
# the pool then ends on short scripts instead of leaving one core idle behind a long one.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
export PDBX_SOURCE_DIR="$root"
export PYTHON=/usr/bin/python3
# Open MPI busy-polls while a rank waits (a barrier, the other rank's slower op); with several
# scripts' ranks on the same cores that spinning takes the cores the others compute on. The
# scripts' ranks yield instead (the engine's own measurements do not depend on it: a script that
# times something runs serial, alone).
export OMPI_MCA_mpi_yield_when_idle=1

# variant_env VARIANT: the environment one variant's tests run in
variant_env() {
    export PDBX_BUILD="$root/$1"
    if [ "$1" = build-san ]; then
        # OpenMPI and OpenBLAS keep allocations for the process lifetime; leak checks stay on
        # for our own unit binaries through the suppressions file.
        export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:suppressions=$root/tests/asan.supp"
        export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    else
        unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
    fi
}

# one_job DIR VARIANT KIND PATH: runs a unit binary or an e2e script into DIR/<name>.{log,rc}
# (rc and tenths of a second) and prints its one-line result as soon as it ends.
one_job() {
    local dir=$1 v=$2 kind=$3 path=$4 name
    if [ "$kind" = unit ]; then name="$v/unit/$(basename "$path")"; else name="$v/e2e/$(basename "$path" .sh)"; fi
    local key; key=$(echo "$name" | tr '/ ' '__')
    variant_env "$v"
    local t0; t0=$(date +%s%N)
    if [ "$kind" = unit ]; then "$path" >"$dir/$key.log" 2>&1; else bash "$path" >"$dir/$key.log" 2>&1; fi
    local rc=$?
    local ds=$(( ($(date +%s%N) - t0) / 100000000 ))
    echo "$rc $ds" >"$dir/$key.rc"
    [ "$kind" = e2e ] && line "$name" "$rc" "$ds" "$dir/$key.log"
    return 0
}
# line NAME RC TENTHS LOG: the result line of one test (a short single write: whole even when
# several jobs print at once)
line() {
    local st=FAIL extra=" (rc=$2)"
    [ "$2" -eq 0 ] && { st=PASS; extra=; }
    [ "$2" -eq 77 ] && { st=SKIP; extra="  $(grep -m1 -i skip "$4" | cut -c1-100)"; }
    printf '%s  %-55s %6ss%s\n' "$st" "$1" "$(($3/10)).$(($3%10))" "$extra"
}
if [ "${1:-}" = --job ]; then
    shift; one_job "$@"; exit 0
fi

logdir=$(mktemp -d /tmp/pdbx-suite.XXXXXX)
jobs=${PDBX_SUITE_JOBS:-3}
case $jobs in ''|*[!0-9]*|0) echo "PDBX_SUITE_JOBS: '$jobs' is not a job count (allowed: 1 or more)" >&2; exit 2;; esac
pass=0; fail=0; skip=0; failed=()
# tally NAME KEY: counts a finished job from its .rc file (a failure is listed, its log tail
# printed after all have run)
tally() {
    local rc ds
    read -r rc ds <"$logdir/$2.rc" 2>/dev/null || { rc=1; ds=0; }
    if [ "$rc" -eq 0 ]; then pass=$((pass+1))
    elif [ "$rc" -eq 77 ]; then skip=$((skip+1))
    else fail=$((fail+1)); failed+=("$1"); fi
}

units=(); e2e_serial=(); e2e_pool=(); e2e_long=(); e2e_skips=()
san_only=0 plain=0 san=0
for v in "$@"; do [ "$v" = build ] && plain=1; [ "$v" = build-san ] && san=1; done
both=$((plain && san))
for v in "$@"; do
    for t in "$v"/tests/test_*; do [ -x "$t" ] && units+=("$v unit $t"); done
    for s in tests/e2e/*.sh; do
        [ -f "$s" ] || continue
        # Each end-to-end script runs once, in the variant that finds the most: build-san (its
        # checks, and ASan/UBSan on every C path it drives) when both variants run. Marked
        # "# suite: plain build only: WHY" (a timing, a carry of the plain binaries, a host-wide
        # integration whose C paths other scripts drive under ASan) it runs in build/ instead;
        # marked "# suite: both builds: WHY" (the release binaries' smoke test of a subsystem) in
        # both. With one variant given, every script runs in it.
        only=$(sed -n 's/^# suite: plain build only: //p' "$s" | head -1)
        if [ "$v" = build-san ] && [ -n "$only" ]; then
            e2e_skips+=("$(printf 'SKIP  %-55s %6ss  %s' "$v/e2e/$(basename "$s" .sh)" 0.0 "plain build only: ${only:0:80}")")
            continue
        fi
        if [ "$v" = build ] && [ "$both" = 1 ] && [ -z "$only" ] && ! grep -q '^# suite: both builds: ' "$s"; then
            san_only=$((san_only + 1))
            continue
        fi
        if grep -q '^# suite: serial: ' "$s"; then e2e_serial+=("$v e2e $s")
        elif grep -q '^# suite: long: ' "$s"; then
            if [ "$v" = build-san ]; then e2e_long=("$v e2e $s" "${e2e_long[@]}"); else e2e_long+=("$v e2e $s"); fi
        else e2e_pool+=("$v e2e $s"); fi
    done
done

# The unit binaries are independent and time nothing: two at a time, reported in order.
printf '%s\n' "${units[@]}" | xargs -r -P 2 -L 1 bash "$0" --job "$logdir"
for u in "${units[@]}"; do
    set -- $u
    name="$1/unit/$(basename "$3")"; key=$(echo "$name" | tr '/ ' '__')
    read -r rc ds <"$logdir/$key.rc" 2>/dev/null || { rc=1; ds=0; }
    line "$name" "$rc" "$ds" "$logdir/$key.log"
    tally "$name" "$key"
done
for j in "${e2e_serial[@]}"; do bash "$0" --job "$logdir" $j; done
printf '%s\n' "${e2e_long[@]}" "${e2e_pool[@]}" | xargs -r -P "$jobs" -L 1 bash "$0" --job "$logdir"
for s in "${e2e_skips[@]}"; do echo "$s"; skip=$((skip+1)); done
[ "$san_only" -gt 0 ] && echo "($san_only end-to-end scripts ran in build-san only: the others are marked plain build only or both builds)"
for j in "${e2e_serial[@]}" "${e2e_long[@]}" "${e2e_pool[@]}"; do
    set -- $j
    name="$1/e2e/$(basename "$3" .sh)"
    tally "$name" "$(echo "$name" | tr '/ ' '__')"
done
echo
for f in "${failed[@]}"; do
    echo "FAIL  $f"; tail -n 40 "$logdir/$(echo "$f" | tr '/ ' '__').log" | sed 's/^/      | /'
done
[ ${#failed[@]} -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "logs: $logdir"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
