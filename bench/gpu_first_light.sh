#!/usr/bin/env bash
# bench/gpu_first_light.sh: pdbx's first light on a CUDA GPU as one command that fits a lent GPU
# machine's few minutes (issue 23, item 1). Three modes:
#
#   bash bench/gpu_first_light.sh --prepare [--carry DIR] [--no-build]
#       here, without a GPU: builds (scons -Q -j2, cuda backend included), downloads the Debian 12
#       runtime packages the engine, pdbx and the test binaries need (apt-get download, cached in
#       build/first-light-debs/), unpacks them (dpkg -x), prunes them, and packs them with the
#       build outputs into DIR (default .first_light/, git-ignored): payload.tar.gz + manifest.txt,
#       at most 60 MiB. Prints the exact device call.
#   bash bench/gpu_first_light.sh [--budget SECONDS] [--carry DIR] [--steps A,B] OUTDIR
#       on the GPU machine: unpacks the carry (without one: the build under $PDBX_BUILD or build/
#       and this machine's libraries), runs the steps below in order under one deadline (default
#       450 s) and writes OUTDIR/summary.txt, summary.json, raw.tar.gz (every log, spec, run
#       file and comparison) and the recording llama31-8b-<gpu>-first-light.pdbx. --steps runs
#       only those (start and device always run), e.g. a short second try: --steps sweep,record,torch
#   bash bench/gpu_first_light.sh --dry-run [OUTDIR]
#       anywhere: prints every step with its commands and timeouts, writes and validates the
#       specs (pdbx plan), and checks that every file the device run needs exists (the carry's
#       contents and the 60 MiB cap when a carry exists, else the build outputs). Exit 1 names
#       what is missing.
#
# Steps of the device run, the most valuable first (each has its own timeout; whatever happens
# the summary table lists every step: pass, FAIL, skip + reason, not run + reason):
#    1 start        unpack the carry, set LD_LIBRARY_PATH / OpenMPI relocation, find the CUDA
#                   libraries, check that pdbx, pdbx-engine and mpirun start (ldd, --version)
#    2 device       nvidia-smi, the driver API (SMs, memory, clocks, versions), backend probe()
#    3 plumbing     a 2-rank cpu sweep through pdbx run -> mpirun -> pdbx-engine (seconds)
#    4 unit         test_cuda_kernels, _kernels_bwd, _attn_kv, _kernels_dense, _kernels_mla,
#                   _kernels_moe, _dense_point (its tiny qwen3, MLA, MoE and DeepSeek points among
#                   the families), test_cuda_backend
#    5 e2e          tests/e2e/cuda_gpu.sh
#    6 sweep        Llama-3.1-8B, 2 layers, seq 1024, bf16, TP 1, MBS 1..8: cuBLASLt fwd+bwd
#                   (recorded), then the GEMMs with cuBLAS, and both with the L2 flushed
#    7 record       pdbx record of the cuBLASLt run into OUTDIR (what ships, first)
#    8 torch        bench/torch_compare_gpu.py on each sweep run (same BLAS, same flush)
#    9 flash        flash_attention fwd+bwd at seq 2048 and 8192 (MBS 1..4) vs SDPA
#   10 memcheck     compute-sanitizer memcheck on a PDBX_TEST_FILTER subset of the kernel tests
#   11 racecheck    compute-sanitizer racecheck on the same subset
#   12 collectives  with 2+ GPUs: pdbx's collectives sweep vs nccl-tests busbw (one GPU: skip)
#
# Expected times on one H100 (estimates made without a GPU: GEMM/attention FLOPs at ~600 and
# ~300 TFLOP/s, about 3 s of MPI + CUDA start per launch, the adaptive loop's bounds per cell):
# start 2, device 2, plumbing 5, unit 30, e2e 60, sweep 90, record 1, torch 60, flash 50,
# memcheck 45, racecheck 45, collectives 0: about 6.5 minutes; the deadline holds the rest.
# Exit: 0 when every step that ran passed (skips included), 1 otherwise, 2 usage.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELPER=$ROOT/bench/first_light.py
PY=${PYTHON:-python3}                 # the helper, cuda_gpu.sh's checks
TORCH_PY=${TORCH_PYTHON:-python3}     # the one with PyTorch (on the GPU machine: plain python3)
BUILD=${PDBX_BUILD:-$ROOT/build}
CARRY=$ROOT/.first_light
DEBS=${FIRST_LIGHT_DEBS:-$ROOT/build/first-light-debs}
CAP_BYTES=$((60 * 1024 * 1024))
BUDGET=450
DEVICE_TIMEOUT_S=510                  # what to give the device tool's run: the budget + packing + margin

# ---- what is carried ---------------------------------------------------------------------------
# Build outputs the device run executes (relative to the build directory).
CARRIED_BUILD=(bin/pdbx bin/pdbx-engine lib/libpdbx_cuda.so tests/test_cuda_kernels
               tests/test_cuda_kernels_bwd tests/test_cuda_attn_kv tests/test_cuda_kernels_dense
               tests/test_cuda_kernels_mla tests/test_cuda_kernels_moe tests/test_cuda_dense_point
               tests/test_cuda_backend)
UNIT_BINS=(test_cuda_kernels test_cuda_kernels_bwd test_cuda_attn_kv test_cuda_kernels_dense
           test_cuda_kernels_mla test_cuda_kernels_moe test_cuda_dense_point test_cuda_backend)
# Debian 12 packages (ldd of the binaries above, of orterun and of the MCA plugins kept):
#   openmpi-bin (orterun, orted), libopenmpi3 (libmpi, ORTE/OPAL, MCA plugins), openmpi-common
#   (help texts), libpmix2 (PMIx server of orterun, ext3x plugin), libhwloc15 + libudev1
#   (topology), libevent-core/-pthreads (OPAL, PMIx), libmunge2 (libpmix NEEDs it), libcjson1
#   (pdbx, engine, .so), libcmocka0 (test binaries), libopenblas0-pthread + libgfortran5 +
#   libquadmath0 (the engine links the cpu backend), libncursesw6 + libtinfo6 (pdbx), libzstd1
#   (store), zstd + liblz4-1 + liblzma5 + zlib1g (zstdcat in cuda_gpu.sh; zlib: libopen-rte).
# Not carried: glibc, libstdc++, libgcc_s (the binaries need glibc >= the manifest's figure),
# and the CUDA libraries (cudart, cuBLAS, cuBLASLt, NCCL: found on the GPU machine).
PKGS=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
      libevent-pthreads-2.1-7 libmunge2 libcjson1 libcmocka0 libopenblas0-pthread libgfortran5
      libquadmath0 libncursesw6 libtinfo6 libzstd1 zstd liblz4-1 liblzma5 zlib1g libudev1)
# Libraries every distribution ships with a stable ABI: the GPU machine's own copy is used when
# its loader knows the name, the carried one otherwise (a newer system copy may be what other
# system libraries in the same process expect).
FALLBACK_LIBS="libz.so.1 liblzma.so.5 liblz4.so.1 libzstd.so.1 libudev.so.1 libtinfo.so.6
libncursesw.so.6 libgfortran.so.5 libquadmath.so.0"
# Never carried; assumed on any glibc Linux. CUDA_LIBS come from the GPU machine.
BASE_LIBS="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1
ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1"
CUDA_LIBS="libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2"
# Tracked files the device run reads.
TRACKED=(bench/first_light.py bench/first_light_env.inc bench/first_light_steps.inc
         bench/first_light_prepare.inc bench/torch_compare_gpu.py tests/e2e/cuda_gpu.sh
         tests/e2e/cuda_gpu_check.py configs/models/Llama-3.1-8B.json
         configs/models/TinyLlama-1.1B.json configs/gpus/cpu.json configs/gpus/H100-SXM.json
         configs/gpus/H100-PCIe.json configs/gpus/H200.json configs/gpus/A100-80G.json
         configs/gpus/A40.json tests/e2e/fixtures/engine-tiny-mixtral.json)

# ---- steps --------------------------------------------------------------------------------------
STEP_IDS=(start device plumbing unit e2e sweep record torch flash memcheck racecheck collectives)
declare -A TITLE=(
    [start]="unpack, environment, binaries start"   [device]="driver and device"
    [plumbing]="2-rank cpu sweep via mpirun"         [unit]="GPU unit tests"
    [e2e]="CUDA end-to-end (cuda_gpu.sh)"            [sweep]="Llama-3.1-8B sweep, 4 GEMM modes"
    [torch]="pdbx vs PyTorch per GEMM cell"          [record]="pdbx record of the sweep"
    [flash]="flash attention vs SDPA, seq 2k/8k"     [memcheck]="compute-sanitizer memcheck"
    [racecheck]="compute-sanitizer racecheck"        [collectives]="collectives vs nccl-tests")
# the most seconds a step may take, and the fewest it needs to be worth starting
declare -A LIMIT=([start]=60 [device]=40 [plumbing]=60 [unit]=240 [e2e]=240 [sweep]=300
                  [torch]=300 [record]=30 [flash]=300 [memcheck]=200 [racecheck]=200
                  [collectives]=240)
declare -A MIN=([start]=5 [device]=5 [plumbing]=10 [unit]=15 [e2e]=30 [sweep]=40 [torch]=20
                [record]=3 [flash]=30 [memcheck]=20 [racecheck]=20 [collectives]=30)
# the sweep's four runs: name -> gemm_api flush_l2 passes ops per-run timeout
SWEEPS=(main cublas flush flush-cublas)
GEMM_OPS='["attn_q","attn_k","attn_v","attn_o","mlp_gate","mlp_up","mlp_down","lm_head"]'
declare -A SW_API=([main]=cublaslt [cublas]=cublas [flush]=cublaslt [flush-cublas]=cublas)
declare -A SW_FLUSH=([main]=false [cublas]=false [flush]=true [flush-cublas]=true)
declare -A SW_PASSES=([main]='"fwd,bwd"' [cublas]='"fwd"' [flush]='"fwd"' [flush-cublas]='"fwd"')
declare -A SW_OPS=([main]='"all"' [cublas]=$GEMM_OPS [flush]=$GEMM_OPS [flush-cublas]=$GEMM_OPS)
declare -A SW_LIMIT=([main]=150 [cublas]=75 [flush]=75 [flush-cublas]=75)
FLASH_SEQS=(2048 8192)
# compute-sanitizer runs: binary:PDBX_TEST_FILTER (the kernels with shared memory and the most
# index arithmetic: the fused attention forward and backward, attention over a KV cache)
SAN_RUNS=("test_cuda_kernels:test_flash*" "test_cuda_kernels_bwd:test_flash_attention_bwd"
          "test_cuda_attn_kv:test_kv_*")

# ---- small helpers ------------------------------------------------------------------------------
say() { printf '%s\n' "$*"; }
die() { printf 'gpu_first_light: %s\n' "$1" >&2; exit "${2:-1}"; }
now() { date +%s; }
usage() {
    sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
# A command as a reader would type it: paths under the work folder as $WORK, the tree relative.
show_cmd() {
    local a out=""
    for a in "$@"; do
        a=${a//"$W"/\$WORK}
        a=${a//"$ROOT/"/}
        a=${a//"$ORIG_PATH"/\$PATH}
        case $a in *[[:space:]\'\"\;\&\|\<\>\(\)]*) a="'$a'" ;; esac
        out+=" $a"
    done
    printf '%s' "${out# }"
}
human_mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# ---- results ------------------------------------------------------------------------------------
declare -A ST RS SECS
FIGS=()
result() { ST[$1]=$2; RS[$1]=$3; }     # step status text
fig() { FIGS+=("$1"$'\t'"$2"); }       # a figure line under a step
CUR=""                                  # the step running

# ---- time ---------------------------------------------------------------------------------------
T0=$(now)
DEADLINE=0      # set by the device run: T0 + BUDGET - a reserve for packing
STEP_END=0
time_left() { echo $(( DEADLINE - $(now) )); }
# clamp T to what the step and the whole run have left; prints 0 when nothing is left
clamp() {
    local t=$1 n
    n=$(now)
    [ $(( STEP_END - n )) -lt "$t" ] && t=$(( STEP_END - n ))
    [ $(( DEADLINE - n )) -lt "$t" ] && t=$(( DEADLINE - n ))
    [ "$t" -lt 0 ] && t=0
    echo "$t"
}

# x [-o STDOUT] [-i] LOG T CMD...: CMD under a timeout of T seconds (clamped to the step's and
# the run's deadline), stdout and stderr appended to LOG (stdout to STDOUT with -o). -i ends it
# with SIGINT to it alone (pdbx run: Ctrl-C cancels the sweep, which then ends by itself), else
# SIGTERM to its process group (mpirun passes that on to its ranks). Exit 124 on timeout. In a
# dry run it prints the command instead.
x() {
    local out="" int=0
    while :; do
        case $1 in -o) out=$2; shift 2 ;; -i) int=1; shift ;; *) break ;; esac
    done
    local log=$1 t=$2; shift 2
    if [ "$DRY" = 1 ]; then
        printf '      $ timeout %s %s\n' "$t" "$(show_cmd "$@")"
        return 0
    fi
    t=$(clamp "$t")
    printf '$ timeout %s %s\n' "$t" "$(show_cmd "$@")" >>"$log"
    if [ "$t" -lt 2 ]; then
        echo "(not run: out of time)" >>"$log"
        return 124
    fi
    local rc
    if [ "$int" = 1 ]; then
        timeout --foreground -s INT -k 60 "$t" "$@" >>"${out:-$log}" 2>>"$log"; rc=$?
    else
        timeout -k 10 "$t" "$@" >>"${out:-$log}" 2>>"$log"; rc=$?
    fi
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "(timed out after $t s)" >>"$log"
    return "$rc"
}

# need PATH WHAT: a file the run reads. Dry run: checked and listed; device run: a missing one
# fails the step that needs it.
MISSING=()
NEEDS=0
DRY_LIST=""   # dry run with a carry: the payload's member list
need() {
    NEEDS=$((NEEDS + 1))
    if [ "$DRY" = 1 ] && [ -n "$P" ] && [ "${1#"$P"/}" != "$1" ]; then
        if grep -qxF "./${1#"$P"/}" <<<"$DRY_LIST"; then
            printf '      carried %s: ok\n' "${1#"$P"/}"
            return 0
        fi
        MISSING+=("${1#"$P"/} in $(show_cmd "$CARRY/payload.tar.gz") ($2)")
        printf '      carried %s: MISSING (%s)\n' "${1#"$P"/}" "$2"
        return 1
    fi
    if [ -e "$1" ]; then
        [ "$DRY" = 1 ] && printf '      needs %s: ok\n' "$(show_cmd "$1")"
        return 0
    fi
    MISSING+=("$(show_cmd "$1") ($2)")
    [ "$DRY" = 1 ] && printf '      needs %s: MISSING (%s)\n' "$(show_cmd "$1")" "$2"
    return 1
}

# ---- the environment on the GPU machine, the steps, --prepare: sourced parts ----------------------
# (bench/first_light_env.inc, bench/first_light_steps.inc, bench/first_light_prepare.inc: split by job;
# they use this file's configuration and helpers above and define functions only)
for part in env steps prepare; do
    # shellcheck source=/dev/null
    . "$ROOT/bench/first_light_$part.inc" || die "cannot read bench/first_light_$part.inc" 2
done

# ---- the summary --------------------------------------------------------------------------------
# summary.txt (after every step, so a run killed from outside still leaves one) and, with
# "json", summary.json
write_summary() {
    render_summary
    [ "${1:-}" = json ] || return 0
    "$PY" "$HELPER" summary-json "$W/summary.tsv" "$OUTDIR/summary.json" "device=${GPU_NAME:-none}" \
        "no_gpu=${NO_GPU}" "budget_s=$BUDGET" "used_s=$(( $(now) - T0 ))" "exit=$(exit_code)" \
        "recording=$([ -f "$OUTDIR/$RECORDING" ] && echo "$RECORDING")" 2>/dev/null
    render_summary      # its file list now holds summary.json
}
render_summary() {
    local id n=0 st tsv=$W/summary.tsv used f
    used=$(( $(now) - T0 ))
    [ -n "$GIT_DESC" ] || GIT_DESC=$(git -C "$ROOT" describe --always --dirty 2>/dev/null) || GIT_DESC="n/a (no .git)"
    : >"$tsv"
    {
        if [ -n "$GPU_NAME" ]; then
            printf 'pdbx first light: %s (%d GPU%s)\n' "$GPU_NAME" "$NGPU" "$([ "$NGPU" -gt 1 ] && echo s)"
        else
            printf 'pdbx first light: %s\n' "$([ -n "$NO_GPU" ] && echo 'no CUDA device' || echo 'device not checked')"
        fi
        printf 'git %s, carry %s, %s, %d of %d s\n' "$GIT_DESC" \
            "$( [ -n "$P" ] && manifest_value git || echo none)" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$used" "$BUDGET"
        printf '%3s  %-12s %-8s %5s  %s\n' '#' step status secs result
        for id in "${STEP_IDS[@]}"; do
            n=$((n + 1))
            st=${ST[$id]:-not run}
            printf '%3d  %-12s %-8s %5s  %s\n' "$n" "$id" "$st" "${SECS[$id]:-0}" "${RS[$id]:-${ABORT_WHY:-not reached}}"
            printf '%d\t%s\t%s\t%s\t%s\t%s\n' "$n" "$id" "${TITLE[$id]}" "$st" "${SECS[$id]:-0}" "${RS[$id]:-${ABORT_WHY:-not reached}}" >>"$tsv"
            for f in "${FIGS[@]}"; do
                [ "${f%%$'\t'*}" = "$id" ] || continue
                printf '%25s- %s\n' '' "${f#*$'\t'}"
                printf 'fig\t%s\n' "$f" >>"$tsv"
            done
        done
        printf 'exit %d: %s\n' "$(exit_code)" "$( [ "$(exit_code)" = 0 ] && echo 'every step that ran passed' || echo 'a step that ran failed')"
        [ -f "$OUTDIR/$RECORDING" ] &&
            printf 'recording: %s (commit it: cp <files_at>/%s recordings/ && git add recordings/%s)\n' "$RECORDING" "$RECORDING" "$RECORDING"
        printf 'files in %s:' "$OUTDIR"; for f in "$OUTDIR"/*; do printf ' %s' "${f##*/}"; done; echo
    } >"$OUTDIR/summary.txt"
}
exit_code() {
    local id
    for id in "${STEP_IDS[@]}"; do [ "${ST[$id]:-}" = FAIL ] && { echo 1; return; }; done
    echo 0
}

run_step() {   # N ID
    local n=$1 id=$2 t0 left
    CUR=$id
    if [ "$DRY" = 1 ]; then
        printf '%2d. %-12s %-40s timeout %s s\n' "$n" "$id" "${TITLE[$id]}" "${LIMIT[$id]}"
        "step_$id"
        return
    fi
    left=$(time_left)
    if [ -n "$ONLY" ] && [ "$id" != start ] && [ "$id" != device ] && [[ ",$ONLY," != *",$id,"* ]]; then
        result "$id" "not run" "not in --steps $ONLY"
    elif [ "$left" -lt "${MIN[$id]}" ]; then
        result "$id" "not run" "out of time ($left s of the budget left, the step needs ~${MIN[$id]} s)"
    else
        STEP_END=$(( $(now) + LIMIT[$id] ))
        say "== $n. $id: ${TITLE[$id]} (up to $(clamp "${LIMIT[$id]}") s)"
        t0=$(now)
        "step_$id"
        SECS[$id]=$(( $(now) - t0 ))
        [ -n "${ST[$id]:-}" ] || result "$id" FAIL "the step ended without a result (a bug in this script)"
    fi
    say "   ${ST[$id]}: ${RS[$id]}"
    write_summary
}

ABORT_WHY=""
GIT_DESC=""
finish() {
    trap - INT TERM
    [ -n "$ABORT_WHY" ] && say "gpu_first_light: $ABORT_WHY"
    # one archive of every raw file: the GPU machine gives back few files
    tar czf "$OUTDIR/raw.tar.gz" -C "$W" raw specs store 2>/dev/null ||
        tar czf "$OUTDIR/raw.tar.gz" -C "$W" raw 2>/dev/null
    write_summary json
    echo
    cat "$OUTDIR/summary.txt"
    [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$W"
    exit "$(exit_code)"
}

device_run() {
    [ -n "$OUTDIR" ] || die "an output folder is needed: $0 OUTDIR (see --help)" 2
    mkdir -p "$OUTDIR" || die "cannot create $OUTDIR"
    OUTDIR=$(cd "$OUTDIR" && pwd)
    W=$(mktemp -d "${TMPDIR:-/tmp}/pdbx-first-light.XXXXXX") || die "mktemp failed"
    RAW=$W/raw; STORE=$W/store
    mkdir -p "$RAW" "$STORE"
    DEADLINE=$(( T0 + BUDGET - 15 ))      # 15 s for the archive and the summary
    RECORDING=llama31-8b-gpu-first-light.pdbx
    trap 'ABORT_WHY="interrupted by a signal"; finish' INT TERM
    say "pdbx first light: budget $BUDGET s, output $OUTDIR, work $W"
    local n=0 id
    for id in "${STEP_IDS[@]}"; do
        n=$((n + 1))
        [ "$id" = sweep ] && RECORDING=llama31-8b-$GPU_SLUG-first-light.pdbx
        run_step "$n" "$id"
    done
    finish
}

dry_run() {
    W=$(mktemp -d "${TMPDIR:-/tmp}/pdbx-first-light-dry.XXXXXX") || die "mktemp failed"
    trap 'rm -rf "$W"' EXIT
    RAW=$W/raw; STORE=$W/store
    OUTDIR=${OUTDIR:-OUTDIR}
    RECORDING='llama31-8b-<gpu>-first-light.pdbx'
    say "gpu_first_light --dry-run: the device run's steps, in order (budget $BUDGET s; output $OUTDIR)"
    say "carry: $( [ -f "$CARRY/payload.tar.gz" ] && show_cmd "$CARRY" || echo "none at $(show_cmd "$CARRY"): checking the build under $(show_cmd "$BUILD")")"
    local f n=0 id
    for f in "${TRACKED[@]}"; do need "$ROOT/$f" "tracked input" >/dev/null; done
    for id in "${STEP_IDS[@]}"; do
        n=$((n + 1))
        run_step "$n" "$id"
    done
    printf '    then: tar czf %s/raw.tar.gz (raw/ specs/ store/), %s/summary.txt, %s/summary.json\n' "$OUTDIR" "$OUTDIR" "$OUTDIR"
    if [ ${#MISSING[@]} -gt 0 ]; then
        say "dry run: FAILED: ${#MISSING[@]} of $NEEDS checks:"
        printf '  missing: %s\n' "${MISSING[@]}"
        exit 1
    fi
    say "dry run: ok: ${#STEP_IDS[@]} steps, $NEEDS checks passed ($SPECS_OK specs valid)"
}

# ---- arguments ----------------------------------------------------------------------------------
MODE=device; DRY=0; NO_BUILD=0; OUTDIR=""; W=/nonexistent-work; ONLY=""
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --prepare) MODE=prepare ;;
        --dry-run) MODE=dry; DRY=1 ;;
        --no-build) NO_BUILD=1 ;;
        --carry) [ $# -ge 2 ] || die "--carry needs a folder" 2; CARRY=$2; shift ;;
        --carry=*) CARRY=${1#*=} ;;
        --budget) [ $# -ge 2 ] || die "--budget needs seconds" 2; BUDGET=$2; shift ;;
        --budget=*) BUDGET=${1#*=} ;;
        --steps) [ $# -ge 2 ] || die "--steps needs a list" 2; ONLY=$2; shift ;;
        --steps=*) ONLY=${1#*=} ;;
        -*) die "unknown option '$1' (allowed: --prepare, --dry-run, --carry DIR, --budget SECONDS, --steps A,B, --no-build, --help)" 2 ;;
        *) [ -z "$OUTDIR" ] || die "one output folder only (got '$OUTDIR' and '$1')" 2; OUTDIR=$1 ;;
    esac
    shift
done
case $BUDGET in ''|*[!0-9]*) die "--budget: '$BUDGET' is not a number of seconds" 2 ;; esac
[ "$BUDGET" -ge 60 ] || die "--budget: at least 60 seconds" 2
case $CARRY in /*) ;; *) CARRY=$PWD/$CARRY ;; esac
for f in ${ONLY//,/ }; do
    [[ " ${STEP_IDS[*]} " == *" $f "* ]] || die "--steps: unknown step '$f' (allowed: ${STEP_IDS[*]})" 2
done
case $MODE in
    prepare) [ -z "$OUTDIR" ] || die "--prepare takes no output folder" 2; prepare ;;
    dry) dry_run ;;
    device) device_run ;;
esac
