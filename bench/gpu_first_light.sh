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
#    4 unit         test_cuda_kernels, _kernels_bwd, _attn_kv, test_cuda_backend
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
               tests/test_cuda_kernels_bwd tests/test_cuda_attn_kv tests/test_cuda_backend)
UNIT_BINS=(test_cuda_kernels test_cuda_kernels_bwd test_cuda_attn_kv test_cuda_backend)
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
TRACKED=(bench/first_light.py bench/torch_compare_gpu.py tests/e2e/cuda_gpu.sh
         tests/e2e/cuda_gpu_check.py configs/models/Llama-3.1-8B.json
         configs/models/TinyLlama-1.1B.json configs/gpus/cpu.json configs/gpus/H100-SXM.json
         configs/gpus/H100-PCIe.json configs/gpus/H200.json configs/gpus/A100-80G.json
         configs/gpus/A40.json)

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

# ---- the environment on the GPU machine ---------------------------------------------------------
ORIG_PATH=$PATH
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
ORIG_LD=${LD_LIBRARY_PATH:-}
P=""          # unpacked payload (carry mode)
B=$BUILD      # build outputs the run executes
LIBCUDA=""; CUDART=""
CUDA_DIRS=""  # folders added to LD_LIBRARY_PATH for the CUDA libraries
LIB_NOTES=()  # how the carried libraries are used (step start)
CUDA_NOTES=() # which file was used for each CUDA library (step device)
NO_GPU=""     # why there is no usable device ("" = there is one)
NGPU=0; GPU_NAME=""; GPU_PRESET=H100-SXM; GPU_SLUG=gpu
CORE_OK=0     # pdbx, pdbx-engine and mpirun start
MPI_OK=1      # the plumbing sweep ran
CUDA_OK=1     # the CUDA libraries resolve

# in_dirs SONAME DIR...: the first DIR holding SONAME
in_dirs() {
    local so=$1 d
    shift
    for d in "$@"; do
        [ -n "$d" ] && [ -e "$d/$so" ] && { echo "$d/$so"; return 0; }
    done
    return 1
}
# known_to_loader SONAME: where the dynamic loader finds it without our help (the caller's
# LD_LIBRARY_PATH, then ld.so.cache)
known_to_loader() {
    local so=$1 p
    local IFS=:
    # shellcheck disable=SC2086
    p=$(in_dirs "$so" $ORIG_LD) && { echo "$p"; return 0; }
    p=$("$LDCONFIG" -p 2>/dev/null | awk -v s="$so" '$1 == s { print $NF; exit }')
    [ -n "$p" ] && [ -e "$p" ] && { echo "$p"; return 0; }
    return 1
}
# find_cuda_lib SONAME DIR...: FOUND = the loader's copy, else the first candidate folder's
# (added to CUDA_DIRS); notes which file is used
FOUND=""
find_cuda_lib() {
    local so=$1 p
    shift
    FOUND=""
    if p=$(known_to_loader "$so"); then
        CUDA_NOTES+=("$so: $p (found by the loader)")
    elif p=$(in_dirs "$so" "$@"); then
        CUDA_NOTES+=("$so: $p")
        case ":$CUDA_DIRS:" in *":${p%/*}:"*) ;; *) CUDA_DIRS+="${CUDA_DIRS:+:}${p%/*}" ;; esac
    else
        CUDA_NOTES+=("$so: not found")
        return 1
    fi
    FOUND=$p
}
# The CUDA 13 runtime, cuBLAS(Lt), NCCL and the driver's libcuda.so.1: the toolkit, then the
# pip wheels of the PyTorch python (nvidia-*-cu13: nvidia/cu13/lib, nvidia/nccl/lib ...).
locate_cuda() {
    local sp d cands=() so missing=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
             /usr/local/cuda-13*/lib64; do
        [ -d "$d" ] && cands+=("$d")
    done
    while read -r sp; do
        [ -d "$sp/nvidia" ] || continue
        for d in "$sp"/nvidia/cu13/lib "$sp"/nvidia/*/lib; do [ -d "$d" ] && cands+=("$d"); done
    done < <("${ORIG_ENV[@]}" "$TORCH_PY" -c \
        'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
    for so in $CUDA_LIBS; do
        if find_cuda_lib "$so" "${cands[@]}"; then
            [ "$so" = libcudart.so.13 ] && CUDART=$FOUND
        else
            missing+=" $so"
        fi
    done
    # the driver: never the toolkit's stubs or compat folders
    find_cuda_lib libcuda.so.1 /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
        /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/wsl/lib && LIBCUDA=$FOUND
    [ -z "$missing" ] || { CUDA_OK=0; CUDA_MISSING=${missing# }; }
}
CUDA_MISSING=""

# Carry mode: the payload's libraries first (the fallback ones only where the machine lacks
# them), OpenMPI and PMIx relocated to the payload, MCA restricted to one node.
carry_env() {
    local f so fb="$W/ld-fallback" used=()
    mkdir -p "$fb"
    for f in "$P"/ld/fallback/*; do
        so=${f##*/}
        if known_to_loader "$so" >/dev/null; then
            used+=("$so: system")
        else
            ln -sf "$(readlink -f "$f")" "$fb/$so"
            used+=("$so: carried")
        fi
    done
    LIB_NOTES+=("fallback libraries: ${used[*]}")
    [ -n "$(ls -A "$fb")" ] || fb=""
    export PATH="$P/root/usr/bin:$ORIG_PATH"
    export OPAL_PREFIX="$P/root/usr" OPAL_SYSCONFDIR="$P/root/etc/openmpi"
    export PMIX_MCA_mca_base_component_path="$P/root/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"
    # plugins whose libraries were not carried are pruned by --prepare; never print load errors
    export OMPI_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_mca_base_component_show_load_errors=0
    # one node: no ssh launcher, shared memory and self only, no CMA (containers often forbid
    # process_vm_readv)
    export OMPI_MCA_plm=isolated OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    FALLBACK_DIR=$fb
}
FALLBACK_DIR=""

set_ld() {
    local ld="" d dirs=() more=()
    IFS=: read -ra dirs <<<"$CUDA_DIRS"
    IFS=: read -ra more <<<"$ORIG_LD"
    for d in ${P:+"$P/ld/carry"} "$FALLBACK_DIR" "${dirs[@]}" "${more[@]}"; do
        [ -n "$d" ] && ld+="${ld:+:}$d"
    done
    export LD_LIBRARY_PATH="$ld"
    # PyTorch runs with the caller's environment (its own CUDA libraries); pdbx through a wrapper
    mkdir -p "$W/bin"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$ld" "$B/bin/pdbx" >"$W/bin/pdbx"
    chmod +x "$W/bin/pdbx"
}
# "${ORIG_ENV[@]}" CMD: CMD in the caller's environment (PyTorch: its own CUDA libraries, not
# the ones found for pdbx)
if [ -n "$ORIG_LD" ]; then
    ORIG_ENV=(env PATH="$ORIG_PATH" LD_LIBRARY_PATH="$ORIG_LD")
else
    ORIG_ENV=(env -u LD_LIBRARY_PATH PATH="$ORIG_PATH")
fi
manifest_value() { sed -n "s/^$1: //p" "${2:-$P/manifest.txt}" 2>/dev/null | head -n 1; }

# ---- steps --------------------------------------------------------------------------------------
step_start() {
    local f
    if [ -f "$CARRY/payload.tar.gz" ]; then
        P=$W/payload
        B=$P/build
        [ "$DRY" = 1 ] || mkdir -p "$P"
        if ! x "$RAW/start.log" 60 tar xzf "$CARRY/payload.tar.gz" -C "$P"; then
            result start FAIL "cannot unpack $CARRY/payload.tar.gz (see raw/start.log)"
            return
        fi
        [ "$DRY" = 1 ] && dry_check_carry
    elif [ "$DRY" = 1 ]; then
        printf '      no carry at %s: a device run uses the build outputs under %s and this machine'"'"'s libraries\n' \
            "$(show_cmd "$CARRY")" "$(show_cmd "$BUILD")"
    fi
    local why=()
    for f in "${CARRIED_BUILD[@]}"; do
        need "$B/$f" "$([ -n "$P" ] && echo 'carried build output: rerun --prepare' || echo 'build output: scons -Q -j2')" ||
            why+=("$f missing")
    done
    if [ "$DRY" = 1 ]; then
        printf '      then: LD_LIBRARY_PATH (carried libraries, the CUDA 13 libraries found), OpenMPI relocated, and\n'
        printf '      $ ldd %s   (every library resolves)\n' "$(show_cmd "${CARRIED_BUILD[@]/#/$B/}")"
        x "$RAW/start.log" 20 "$B/bin/pdbx" --version
        x "$RAW/start.log" 20 "$B/bin/pdbx-engine" --help
        x "$RAW/start.log" 20 mpirun --version
        return
    fi
    if [ -n "$P" ]; then carry_env; else LIB_NOTES+=("no carry: $BUILD and this machine's libraries and mpirun"); fi
    locate_cuda
    set_ld
    export PDBX_CONFIGS=$ROOT/configs PDBX_ENGINE=$B/bin/pdbx-engine
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    local log=$RAW/start.log out glibc needs
    # the carried binaries need this glibc at least
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
    needs=$(manifest_value glibc_needed)
    if [ -n "$needs" ] && [ -n "$glibc" ] &&
       [ "$(printf '%s\n%s\n' "$needs" "$glibc" | sort -V | head -n 1)" != "$needs" ]; then
        why+=("glibc $glibc here, the carried binaries need $needs")
    fi
    # every library of every binary resolves (else the loader's own words)
    local mpirun_bin
    mpirun_bin=$(command -v mpirun || echo mpirun)
    for f in "${CARRIED_BUILD[@]/#/$B/}" "$mpirun_bin"; do
        [ -e "$f" ] || continue
        { echo "\$ ldd $f"; ldd "$f" 2>&1; } >>"$log"
        out=$(ldd "$f" 2>&1 | grep 'not found' | sed 's/^[[:space:]]*//' | tr '\n' ',' | sed 's/,$//')
        [ -z "$out" ] && continue
        case $f in
            */libpdbx_cuda.so|*/tests/*) CUDA_OK=0; CUDA_MISSING+=" ${f##*/}: $out;" ;;
            *) why+=("${f##*/}: $out") ;;
        esac
    done
    local v=""
    if x "$log" 20 "$B/bin/pdbx" --version; then
        v=$(grep -m1 '^pdbx ' "$log")
    else
        why+=("pdbx --version: $(tail -n 1 "$log")")
    fi
    x "$log" 20 "$B/bin/pdbx-engine" --help || why+=("pdbx-engine --help: $(tail -n 1 "$log")")
    if x "$log" 20 mpirun --version; then
        fig start "mpirun: $mpirun_bin ($(grep -m1 -o 'Open MPI) [0-9.]*' "$log" | tr -d ')'))"
    else
        why+=("mpirun --version: $(tail -n 1 "$log")")
    fi
    command -v zstdcat >/dev/null || why+=("zstdcat not found (cuda_gpu.sh reads run files with it)")
    for f in "${LIB_NOTES[@]}"; do fig start "$f"; done
    if [ ${#why[@]} -gt 0 ]; then
        result start FAIL "the programs do not start here: ${why[*]}"
        return
    fi
    CORE_OK=1
    if [ "$CUDA_OK" = 0 ]; then
        result start FAIL "${v:-pdbx} starts; CUDA libraries missing:$CUDA_MISSING"
        return
    fi
    result start pass "${v:-pdbx}; glibc ${glibc:-?}${needs:+ (the carry needs $needs)}; $([ -n "$P" ] && echo 'OpenMPI and libraries from the carry' || echo "this machine's libraries")"
}

# the carry's other contents, its size and its freshness (dry run)
dry_check_carry() {
    local f size line sum path
    need "$CARRY/manifest.txt" "the carry's manifest: rerun --prepare"
    DRY_LIST=$(tar tzf "$CARRY/payload.tar.gz" 2>/dev/null) ||
        MISSING+=("a readable $(show_cmd "$CARRY/payload.tar.gz")")
    for f in root/usr/bin/orterun root/usr/bin/mpirun root/usr/bin/zstdcat ld/carry/libmpi.so.40 \
             ld/carry/libcjson.so.1 ld/carry/libcmocka.so.0 ld/carry/libopenblas.so.0 \
             ld/carry/libpmix.so.2 root/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so \
             manifest.txt; do
        need "$P/$f" "rerun --prepare"
    done
    size=$(du -sb "$CARRY" | awk '{print $1}')
    NEEDS=$((NEEDS + 1))
    if [ "$size" -le "$CAP_BYTES" ]; then
        printf '      carry size %s (cap 60 MiB): ok\n' "$(human_mib "$size")"
    else
        MISSING+=("a carry under 60 MiB ($(human_mib "$size"))")
        printf '      carry size %s: OVER the 60 MiB cap\n' "$(human_mib "$size")"
    fi
    # a carry older than the build here would run old binaries on the GPU
    while read -r line; do
        path=${line#build: }; path=${path%% *}; sum=${line##* }
        [ -f "$BUILD/${path#build/}" ] || continue
        NEEDS=$((NEEDS + 1))
        if [ "$(sha256sum "$BUILD/${path#build/}" | cut -c1-64)" != "$sum" ]; then
            MISSING+=("a fresh carry: $(show_cmd "$BUILD/${path#build/}") differs from the carried one (rerun --prepare)")
            printf '      carried %s: STALE (differs from %s)\n' "$path" "$(show_cmd "$BUILD/${path#build/}")"
        fi
    done < <(grep '^build: ' "$CARRY/manifest.txt" 2>/dev/null)
}

step_device() {
    local log=$RAW/device.log smi
    smi=$(command -v nvidia-smi || true)
    if [ -n "$smi" ] || [ "$DRY" = 1 ]; then
        x -o "$RAW/nvidia-smi.txt" "$log" 20 "${smi:-nvidia-smi}"
        x -o "$RAW/nvidia-smi-q.txt" "$log" 20 "${smi:-nvidia-smi}" -q
        x -o "$RAW/nvidia-smi.csv" "$log" 20 "${smi:-nvidia-smi}" --format=csv,noheader \
            --query-gpu=index,name,pci.bus_id,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,driver_version,pstate,temperature.gpu,power.draw,power.limit,persistence_mode,mig.mode.current
    fi
    x -o "$RAW/device.txt" "$log" 30 "$PY" "$HELPER" device --libcuda "${LIBCUDA:-libcuda.so.1}" \
        --cudart "${CUDART:-libcudart.so.13}" --probe-so "$B/lib/libpdbx_cuda.so" --json "$RAW/device.json"
    local rc=$?
    [ "$DRY" = 1 ] && return
    environment_record
    local line n
    line=$(tail -n 1 "$RAW/device.txt" 2>/dev/null)
    for n in "${CUDA_NOTES[@]}"; do fig device "$n"; done
    if [ -n "$smi" ] && [ -s "$RAW/nvidia-smi.csv" ]; then
        while read -r line2; do fig device "nvidia-smi: $line2"; done <"$RAW/nvidia-smi.csv"
    else
        fig device "nvidia-smi: not found"
    fi
    if [ "$rc" = 3 ]; then
        NO_GPU=${line:-no CUDA device}
        result device skip "no CUDA device ($NO_GPU)"
        return
    elif [ "$rc" != 0 ]; then
        NO_GPU="the device check failed"
        result device FAIL "device check failed (rc $rc): $(tail -n 2 "$log" | tr '\n' ' ')"
        return
    fi
    read -r NGPU GPU_NAME < <("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["devices"]), d["devices"][0]["name"])' "$RAW/device.json")
    local exact
    read -r GPU_PRESET GPU_SLUG exact < <("$PY" "$HELPER" gpu-preset "$GPU_NAME")
    fig device "backend probe: $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("probe",""))' "$RAW/device.json")"
    fig device "memory predictions and peaks use the $GPU_PRESET preset$([ "$exact" = exact ] || echo " (configs/gpus has no preset for this GPU)")"
    result device pass "$line"
}

# what the run ran on: OS, glibc, tools, the environment variables the run sets or reads
environment_record() {
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "uname: $(uname -a)"
        sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"' | sed 's/^/os: /'
        echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null)"
        echo "cpus: $(nproc)"
        echo "python3: $(command -v "$TORCH_PY") $("${ORIG_ENV[@]}" "$TORCH_PY" --version 2>&1)"
        echo "compute-sanitizer: ${SANITIZER:-$(find_sanitizer || echo none)}"
        echo "git: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo 'n/a (no .git here)')"
        echo "carry: $(manifest_value git) built $(manifest_value made)"
        printf 'lib: %s\n' "${LIB_NOTES[@]}" "${CUDA_NOTES[@]}"
        env | grep -E '^(PATH|LD_LIBRARY_PATH|(CUDA|NCCL|NVIDIA|OMPI|OPAL|PMIX|PDBX)_[A-Za-z0-9_]*)=' | sort
    } >"$RAW/env.txt" 2>&1
}

need_core() {
    [ "$DRY" = 1 ] && return 0
    [ "$CORE_OK" = 1 ] && return 0
    result "$CUR" "not run" "pdbx, pdbx-engine or mpirun does not start here (step start)"
    return 1
}
need_gpu() {
    [ "$DRY" = 1 ] && return 0
    need_core || return 1
    if [ -n "$NO_GPU" ]; then result "$CUR" skip "no CUDA device (step device says why)"; return 1; fi
    if [ "$CUDA_OK" = 0 ]; then result "$CUR" "not run" "CUDA libraries missing:$CUDA_MISSING"; return 1; fi
    return 0
}
need_mpi() {
    [ "$DRY" = 1 ] && return 0
    [ "$MPI_OK" = 1 ] && return 0
    result "$CUR" "not run" "mpirun could not start pdbx-engine (step plumbing)"
    return 1
}

# write_spec NAME FIELD=JSON...: $W/specs/NAME.json; in a dry run also validated by pdbx plan
SPECS_OK=0
write_spec() {
    local name=$1 f=$W/specs/$1.json
    shift
    mkdir -p "$W/specs"
    "$PY" "$HELPER" spec "$f" "$@" || return 1
    [ "$DRY" = 1 ] || return 0
    if [ -x "$BUILD/bin/pdbx" ] && "$BUILD/bin/pdbx" --version >/dev/null 2>&1; then
        local plan
        NEEDS=$((NEEDS + 1))
        if plan=$(PDBX_CONFIGS=$ROOT/configs "$BUILD/bin/pdbx" plan "$f" 2>&1); then
            SPECS_OK=$((SPECS_OK + 1))
            printf '      spec %s: valid (pdbx plan: %s)\n' "$(show_cmd "$f")" \
                "$(grep -m1 -o '[0-9]* points in [0-9]* configs' <<<"$plan")"
        else
            MISSING+=("a valid spec $name ($(tail -n 1 <<<"$plan"))")
            printf '      spec %s: INVALID: %s\n' "$(show_cmd "$f")" "$(tail -n 1 <<<"$plan")"
        fi
    else
        printf '      spec %s: written (not validated: no runnable %s)\n' "$(show_cmd "$f")" "$(show_cmd "$BUILD/bin/pdbx")"
    fi
}

declare -A RUN_ID RUN_OK RUN_NOK
# pdbx_run NAME LIMIT: pdbx run of $W/specs/NAME.json into the store; RUN_ID[NAME], RUN_OK[NAME]
# (1 when every point is ok), RUN_NOK[NAME] (points ok), a figure line; on a timeout the sweep is
# cancelled (the points done are kept) and awaited
pdbx_run() {
    local name=$1 limit=$2 log=$RAW/run-$1.log out=$RAW/run-$1.id t0 rc id
    t0=$(now)
    x -i -o "$out" "$log" "$limit" "$B/bin/pdbx" run "$W/specs/$name.json" --store "$STORE"
    rc=$?
    if [ "$DRY" = 1 ]; then RUN_ID[$name]="<$name>"; RUN_OK[$name]=1; RUN_NOK[$name]=1; return 0; fi
    id=$(grep -m1 -oE '^[0-9]{4}-[0-9]{2}-[0-9]{2}__[0-9-]+_[0-9a-f]+' "$out" 2>/dev/null)
    if [ -n "$id" ] && { [ "$rc" = 124 ] || [ "$rc" = 137 ]; }; then
        # the sweep may still be cancelling: nothing else may use the GPU meanwhile
        timeout 30 "$B/bin/pdbx" cancel "$id" --store "$STORE" >>"$log" 2>&1
        timeout 60 "$B/bin/pdbx" attach "$id" --store "$STORE" >>"$log" 2>&1
    fi
    RUN_ID[$name]=$id
    RUN_OK[$name]=0
    RUN_NOK[$name]=0
    if [ -z "$id" ]; then
        fig "$CUR" "$name: pdbx run did not start (rc $rc): $(tail -n 1 "$log")"
        return 1
    fi
    "$B/bin/pdbx" show "$id" --store "$STORE" >"$RAW/show-$name.txt" 2>&1
    "$B/bin/pdbx" show "$id" --store "$STORE" --format json >"$RAW/show-$name.json" 2>>"$log"
    local figs
    figs=$("$PY" "$HELPER" run-figures "$RAW/show-$name.json" 2>&1) && RUN_OK[$name]=1
    case $figs in [0-9]*/*) RUN_NOK[$name]=${figs%%/*} ;; esac
    case $rc in
        0) ;;
        124|137) figs+=" (timed out: cancelled, the points done kept)" ;;
        *) figs+=" (pdbx run exit $rc)" ;;
    esac
    fig "$CUR" "$name: $figs in $(( $(now) - t0 )) s"
    [ "${RUN_OK[$name]}" = 1 ]
}

step_plumbing() {
    need_core || return
    need "$ROOT/configs/models/TinyLlama-1.1B.json" "model preset"
    write_spec plumbing name='"first-light-plumbing"' model='"TinyLlama-1.1B"' gpu='"cpu"' \
        layers=1 seq_len=32 dtype='"fp32"' backend='"cpu"' gpus_per_node=2 nodes=1 \
        configs='[{"tp": 2, "pp": 1, "dp": 1}]' mbs='"1:1"' repetition='"fixed"' warmup=1 steps=2 \
        ops='"all"' collectives=false predict_oom=false timeout_s=60
    if pdbx_run plumbing 60; then
        result plumbing pass "2 ranks through $(command -v mpirun 2>/dev/null || echo mpirun) -> pdbx-engine: run ${RUN_ID[plumbing]} complete"
    else
        MPI_OK=0
        result plumbing FAIL "pdbx run -> mpirun -> pdbx-engine failed: $(tail -n 3 "$RAW/run-plumbing.log" 2>/dev/null | tr '\n' ' ')"
    fi
}

# cmocka's counts in a log: "N passed, N failed, N skipped"
cmocka_counts() {
    local p f s
    p=$(grep -oE '^\[  PASSED  \] [0-9]+' "$1" | awk '{s += $NF} END {print s + 0}')
    f=$(grep -oE '^\[  FAILED  \] [0-9]+ test' "$1" | awk '{s += $3} END {print s + 0}')
    s=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$1" | awk '{s += $3} END {print s + 0}')
    echo "$p passed, $f failed, $s skipped"
}

step_unit() {
    need_core || return
    local bin rc log failed=() skipped=() ran=0
    for bin in "${UNIT_BINS[@]}"; do
        log=$RAW/unit-$bin.log
        need "$B/tests/$bin" "carried test binary" || { failed+=("$bin missing"); continue; }
        x "$log" 120 "$B/tests/$bin"
        rc=$?
        [ "$DRY" = 1 ] && continue
        case $rc in
            0) ran=$((ran + 1)); fig unit "$bin: $(cmocka_counts "$log")" ;;
            77) skipped+=("$bin"); fig unit "$bin: skip ($(grep -m1 '^SKIP' "$log"))" ;;
            124|137) failed+=("$bin timed out"); fig unit "$bin: timed out ($(cmocka_counts "$log") before)" ;;
            *) failed+=("$bin rc $rc"); fig unit "$bin: FAIL rc $rc, $(cmocka_counts "$log"): $(grep -m3 -E '^\[  FAILED  \] test|^\[  ERROR   \]' "$log" | tr '\n' ' ')" ;;
        esac
    done
    [ "$DRY" = 1 ] && return
    if [ ${#failed[@]} -gt 0 ]; then
        result unit FAIL "${failed[*]}"
    elif [ -n "$NO_GPU" ]; then
        result unit skip "no CUDA device (step device says why); the host parts ran"
    elif [ ${#skipped[@]} -gt 0 ]; then
        result unit FAIL "skipped although a device is present: ${skipped[*]}"
    else
        result unit pass "$ran binaries, every GPU test passed"
    fi
}

step_e2e() {
    need_core && need_mpi || return
    local log=$RAW/e2e-cuda_gpu.log rc
    need "$ROOT/tests/e2e/cuda_gpu.sh" "tracked e2e script"
    need "$ROOT/tests/e2e/cuda_gpu_check.py" "tracked e2e checks"
    x "$log" 240 env PDBX_BUILD="$B" PYTHON="$PY" bash "$ROOT/tests/e2e/cuda_gpu.sh"
    rc=$?
    [ "$DRY" = 1 ] && return
    while read -r line; do fig e2e "$line"; done < <(grep -E '^(ok|note|probe):' "$log")
    case $rc in
        0) result e2e pass "$(tail -n 1 "$log")" ;;
        77) result e2e skip "$(grep -m1 '^SKIP' "$log" | sed 's/^SKIP: //')" ;;
        124|137) result e2e FAIL "timed out" ;;
        *) result e2e FAIL "rc $rc: $(grep -m1 '^FAIL' "$log" || tail -n 1 "$log")" ;;
    esac
}

sweep_spec() {   # NAME: the Llama-3.1-8B sweep in one GEMM mode
    local v=$1
    write_spec "sweep-$v" name="\"first-light-llama31-8b-$v\"" model='"Llama-3.1-8B"' \
        gpu="\"$GPU_PRESET\"" layers=2 seq_len=1024 dtype='"bf16"' backend='"cuda"' \
        gpus_per_node=1 nodes=1 configs='[{"tp": 1, "pp": 1, "dp": 1}]' mbs='"1:8"' \
        repetition='"adaptive"' warmup=2 steps=3 target_rel_ci=0.01 min_reps=5 max_reps=200 \
        max_seconds_per_op=0.25 passes="${SW_PASSES[$v]}" ops="${SW_OPS[$v]}" \
        gemm_api="\"${SW_API[$v]}\"" flush_l2="${SW_FLUSH[$v]}" collectives=false \
        predict_oom=false timeout_s=120
}

step_sweep() {
    need_gpu && need_mpi || return
    need "$ROOT/configs/models/Llama-3.1-8B.json" "model preset"
    need "$ROOT/configs/gpus/$GPU_PRESET.json" "GPU preset"
    local v bad=() ran=0
    for v in "${SWEEPS[@]}"; do
        sweep_spec "$v"
        if [ "$DRY" = 0 ] && [ "$(time_left)" -lt 20 ]; then
            fig sweep "$v: not run: out of time"
            continue
        fi
        ran=$((ran + 1))
        pdbx_run "sweep-$v" "${SW_LIMIT[$v]}" || bad+=("$v")
    done
    [ "$DRY" = 1 ] && return
    if [ -z "${RUN_ID[sweep-main]:-}" ]; then
        result sweep FAIL "the cuBLASLt run did not start: $(tail -n 1 "$RAW/run-sweep-main.log")"
    elif [ ${#bad[@]} -gt 0 ]; then
        result sweep FAIL "not every point ok in: ${bad[*]}"
    else
        result sweep pass "$ran of ${#SWEEPS[@]} runs, every point ok (api cublaslt/cublas x L2 flush off/on)"
    fi
}

step_torch() {
    need_gpu || return
    need "$ROOT/bench/torch_compare_gpu.py" "tracked comparison script"
    local v args rc log bad=() done_=() nojs=()
    for v in "${SWEEPS[@]}"; do
        if [ "$DRY" = 0 ] && [ "${RUN_NOK[sweep-$v]:-0}" = 0 ]; then
            [ -n "${RUN_ID[sweep-$v]:-}" ] && fig torch "$v: the run measured no point"
            continue
        fi
        log=$RAW/torch-$v.log
        args=(--store "$STORE" --pdbx "$W/bin/pdbx" --blas "${SW_API[$v]}" --warmup 5 --iters 30
              --json "$RAW/torch-$v.json")
        [ "${SW_FLUSH[$v]}" = true ] && args+=(--flush-l2)
        x "$log" 120 "${ORIG_ENV[@]}" "$TORCH_PY" "$ROOT/bench/torch_compare_gpu.py" "${RUN_ID[sweep-$v]}" "${args[@]}"
        rc=$?
        [ "$DRY" = 1 ] && continue
        if [ "$rc" = 0 ]; then
            done_+=("$RAW/torch-$v.json")
        elif grep -q 'PyTorch is not installed\|no CUDA device visible to PyTorch' "$log"; then
            nojs+=("$(grep -m1 'torch_compare_gpu:' "$log" | sed 's/^torch_compare_gpu: //')")
            break
        else
            bad+=("$v (rc $rc: $(grep -m1 'torch_compare_gpu:\|Error' "$log" || tail -n 1 "$log"))")
        fi
    done
    [ "$DRY" = 1 ] && return
    [ ${#done_[@]} -gt 0 ] && while read -r line; do fig torch "$line"; done < <("$PY" "$HELPER" torch-figures "${done_[@]}")
    if [ ${#nojs[@]} -gt 0 ]; then
        result torch skip "${nojs[0]}"
    elif [ ${#bad[@]} -gt 0 ]; then
        result torch FAIL "${bad[*]}"
    elif [ ${#done_[@]} = 0 ]; then
        result torch "not run" "no sweep run to compare"
    else
        result torch pass "${#done_[@]} runs compared (median of 30 CUDA-event timings per cell)"
    fi
}

step_record() {
    need_gpu || return
    local id=${RUN_ID[sweep-main]:-} log=$RAW/record.log
    if [ "$DRY" = 0 ] && [ "${RUN_NOK[sweep-main]:-0}" = 0 ]; then
        result record "not run" "the cuBLASLt sweep${id:+ $id} measured no point"
        return
    fi
    x "$log" 30 "$B/bin/pdbx" record "$id" "$OUTDIR/$RECORDING" --store "$STORE" || {
        [ "$DRY" = 1 ] || { result record FAIL "pdbx record: $(tail -n 1 "$log")"; return; }
    }
    # it must read back as a run (pdbx show takes a recording's path)
    x -o "$RAW/show-recording.txt" "$log" 30 "$B/bin/pdbx" show "$OUTDIR/$RECORDING" || {
        [ "$DRY" = 1 ] || { result record FAIL "the recording does not read back: $(tail -n 1 "$log")"; return; }
    }
    [ "$DRY" = 1 ] && return
    fig record "to commit it: cp <files_at>/$RECORDING recordings/ && git add recordings/$RECORDING"
    result record pass "$RECORDING ($(( $(stat -c %s "$OUTDIR/$RECORDING") / 1024 )) KiB, run $id$([ "${RUN_OK[sweep-main]}" = 1 ] || echo ', NOT every point ok'))"
}

step_flash() {
    need_gpu && need_mpi || return
    local s name rc bad=() jsons=()
    for s in "${FLASH_SEQS[@]}"; do
        name=flash-$s
        write_spec "$name" name="\"first-light-flash-$s\"" model='"Llama-3.1-8B"' \
            gpu="\"$GPU_PRESET\"" layers=1 seq_len="$s" dtype='"bf16"' backend='"cuda"' \
            gpus_per_node=1 nodes=1 configs='[{"tp": 1, "pp": 1, "dp": 1}]' mbs='"1:4"' \
            repetition='"adaptive"' warmup=2 steps=3 min_reps=5 max_reps=200 \
            max_seconds_per_op=0.5 passes='"fwd,bwd"' ops='["attn_core"]' flash_attention=true \
            collectives=false predict_oom=false timeout_s=120
        if [ "$DRY" = 0 ] && [ "$(time_left)" -lt 20 ]; then fig flash "seq $s: not run: out of time"; continue; fi
        pdbx_run "$name" 90 || bad+=("seq $s run")
        [ "$DRY" = 1 ] || [ "${RUN_NOK[$name]}" != 0 ] || continue
        x "$RAW/torch-$name.log" 120 "${ORIG_ENV[@]}" "$TORCH_PY" "$ROOT/bench/torch_compare_gpu.py" "${RUN_ID[$name]}" \
            --store "$STORE" --pdbx "$W/bin/pdbx" --attention --warmup 5 --iters 20 \
            --json "$RAW/torch-$name.json"
        rc=$?
        [ "$DRY" = 1 ] && continue
        if [ "$rc" = 0 ]; then
            jsons+=("$RAW/torch-$name.json")
        else
            bad+=("seq $s SDPA comparison (rc $rc: $(grep -m1 'torch_compare_gpu:' "$RAW/torch-$name.log" || tail -n 1 "$RAW/torch-$name.log"))")
        fi
    done
    [ "$DRY" = 1 ] && return
    [ ${#jsons[@]} -gt 0 ] && while read -r line; do fig flash "$line"; done < <("$PY" "$HELPER" attn-figures "${jsons[@]}")
    if [ ${#bad[@]} -gt 0 ]; then
        result flash FAIL "${bad[*]}"
    else
        result flash pass "pdbx's fused attention fwd+bwd vs SDPA at ${#jsons[@]} sequence lengths (ratios > 1: pdbx slower)"
    fi
}

find_sanitizer() {
    local c
    for c in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer \
             /usr/local/cuda/compute-sanitizer/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}
SANITIZER=""

# sanitize TOOL: the SAN_RUNS under compute-sanitizer --tool TOOL
sanitize() {
    local tool=$1 r bin filter log rc errs bad=() slow=() runs=0
    need_gpu || return
    SANITIZER=$(find_sanitizer)
    if [ -z "$SANITIZER" ] && [ "$DRY" = 0 ]; then
        result "$tool" skip "compute-sanitizer not found (PATH, /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer)"
        return
    fi
    for r in "${SAN_RUNS[@]}"; do
        bin=${r%%:*}; filter=${r#*:}
        log=$RAW/$tool-$bin.log
        need "$B/tests/$bin" "carried test binary" || continue
        x "$log" 90 env PDBX_TEST_FILTER="$filter" "${SANITIZER:-compute-sanitizer}" --tool "$tool" \
            --error-exitcode 86 --print-limit 50 "$B/tests/$bin"
        rc=$?
        [ "$DRY" = 1 ] && continue
        runs=$((runs + 1))
        # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
        errs=$(grep -oE 'ERROR SUMMARY: [0-9]+|\(([0-9]+) errors' "$log" | grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}')
        local counts
        counts=$(cmocka_counts "$log")
        fig "$tool" "$bin ($filter): $counts, $errs $tool errors$([ "$rc" = 124 ] && echo ', timed out')"
        case $rc in
            0) [ "${counts%% *}" = 0 ] && bad+=("$bin: the filter $filter ran no test") ;;
            86) bad+=("$bin: $errs errors") ;;
            # too slow for the budget is no finding, unless it found something before
            124|137) if [ "$errs" -gt 0 ]; then bad+=("$bin: $errs errors, then timed out"); else slow+=("$bin"); fi ;;
            *) bad+=("$bin rc $rc") ;;
        esac
    done
    [ "$DRY" = 1 ] && return
    local finished=$((runs - ${#slow[@]}))
    if [ ${#bad[@]} -gt 0 ]; then
        result "$tool" FAIL "${bad[*]} (see raw/$tool-*.log)"
    elif [ "$finished" = 0 ]; then
        result "$tool" skip "every run timed out before it ended (${slow[*]}), no error reported before"
    else
        result "$tool" pass "$finished runs under $SANITIZER --tool $tool: 0 errors$([ ${#slow[@]} = 0 ] || echo "; timed out with no error before: ${slow[*]}")"
    fi
}
step_memcheck() { sanitize memcheck; }
step_racecheck() { sanitize racecheck; }

find_nccl_tests() {
    local d
    for d in "${NCCL_TESTS_DIR:-}" "$(dirname "$(command -v all_reduce_perf 2>/dev/null || echo /nonexistent/x)")" \
             /usr/local/bin /opt/nccl-tests/build /usr/local/nccl-tests/build /workspace/nccl-tests/build; do
        [ -n "$d" ] && [ -x "$d/all_reduce_perf" ] && { echo "$d"; return 0; }
    done
    return 1
}

step_collectives() {
    need_gpu && need_mpi || return
    if [ "$DRY" = 0 ] && [ "$NGPU" -lt 2 ]; then
        result collectives skip "one GPU: the collectives need 2 or more (with 2+, pdbx's collectives sweep is compared with nccl-tests' busbw)"
        return
    fi
    local n=2 log=$RAW/collectives.log nt t logs=()
    [ "$DRY" = 1 ] || { while [ $((n * 2)) -le "$NGPU" ] && [ $((n * 2)) -le 8 ]; do n=$((n * 2)); done; }
    write_spec collectives name='"first-light-collectives"' model='"TinyLlama-1.1B"' \
        gpu="\"$GPU_PRESET\"" layers=1 seq_len=128 dtype='"bf16"' backend='"cuda"' \
        gpus_per_node="$n" nodes=1 configs="[{\"tp\": $n, \"pp\": 1, \"dp\": 1}]" mbs='"1:1"' \
        repetition='"fixed"' warmup=2 steps=5 ops='["attn_q"]' collectives=true \
        coll_sizes='"1M:256M"' predict_oom=false timeout_s=120
    pdbx_run collectives 150
    nt=$(find_nccl_tests || true)
    if [ -n "$nt" ] || [ "$DRY" = 1 ]; then
        for t in all_reduce all_gather reduce_scatter; do
            [ "$DRY" = 1 ] || [ -x "$nt/${t}_perf" ] || continue
            x -o "$RAW/nccl-${t}_perf.txt" "$log" 60 "${nt:-<nccl-tests>}/${t}_perf" -b 1M -e 256M -f 4 -g "$n"
            logs+=("$RAW/nccl-${t}_perf.txt")
        done
    fi
    [ "$DRY" = 1 ] && return
    if [ "${RUN_OK[collectives]:-0}" != 1 ]; then
        result collectives FAIL "pdbx's collectives sweep on $n GPUs failed (see raw/run-collectives.log)"
        return
    fi
    while read -r line; do fig collectives "$line"; done < <("$PY" "$HELPER" nccl-compare "$RAW/show-collectives.json" "${logs[@]}")
    if [ -z "$nt" ]; then
        result collectives pass "pdbx busbw on $n GPUs; nccl-tests not installed (all_reduce_perf not found), no comparison"
    else
        result collectives pass "pdbx vs nccl-tests ($nt) busbw on $n GPUs"
    fi
}

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

# ---- --prepare ------------------------------------------------------------------------------------

# deb_of PACKAGE: its cached .deb ("" when none)
deb_of() {
    local f
    for f in "$DEBS/$1"_*.deb; do [ -f "$f" ] && { echo "$f"; return 0; }; done
    return 1
}

download_debs() {
    local p v want missing=() have
    mkdir -p "$DEBS"
    for p in "${PKGS[@]}"; do
        # the installed version (what the build linked against), else the archive's candidate
        v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)
        have=$(deb_of "$p")
        if [ -n "$have" ]; then
            [ -z "$v" ] && continue
            want=${v//:/%3a}
            case $have in *"_${want}_"*) continue ;; esac
            # downloaded before as the archive's version: the installed one is no longer there
            [ "$(cat "$DEBS/$p.not-in-archive" 2>/dev/null)" = "$v" ] && continue
            rm -f "$DEBS"/"${p}"_*.deb
        fi
        missing+=("$p${v:+=$v}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "downloading ${#missing[@]} packages into $DEBS"
    local round specs
    for round in 1 2; do
        resolve_versions "${missing[@]}"
        apt_get download "${SPECS[@]}" && return 0
        [ "$round" = 1 ] || break
        say "apt-get download failed: apt-get update once"
        timeout 180 apt-get update -q >/dev/null 2>&1 ||
            die "cannot download packages: apt-get update failed (no Debian mirror reachable?)" 3
    done
    specs=$(cd "$DEBS" && timeout 180 apt-get download "${SPECS[@]}" 2>&1 | grep -m1 '^E:')
    die "cannot download the packages (${specs:-apt-get download failed}; no mirror reachable?)" 3
}
# resolve_versions NAME=VERSION...: SPECS, each as given where the archive has that version, else
# the bare name (the archive's version: a stable update replaced the installed one; noted in
# NAME.not-in-archive so the cache keeps it). One apt-cache call for all.
SPECS=()
resolve_versions() {
    local spec avail
    avail=$(apt-cache madison "${@%%=*}" 2>/dev/null | awk -F'|' '{ gsub(/ /, ""); print $1 "=" $2 }')
    SPECS=()
    for spec in "$@"; do
        if [ "$spec" = "${spec%%=*}" ] || grep -qxF -- "$spec" <<<"$avail"; then
            SPECS+=("$spec")
        else
            SPECS+=("${spec%%=*}")
            echo "${spec#*=}" >"$DEBS/${spec%%=*}.not-in-archive"
        fi
    done
}
# apt_get ARGS...: in the cache folder (apt-get download writes to the current one), bounded
apt_get() { (cd "$DEBS" && timeout 180 apt-get -q "$@" >/dev/null 2>&1); }

prune_stage() {
    local r=$1/root L=$1/root/usr/lib/x86_64-linux-gnu
    rm -rf "$r"/usr/share/{doc,man,lintian,bug,info} "$r"/usr/include "$L"/pkgconfig "$L"/openmpi/include \
           "$L"/openmpi/lib/pkgconfig "$r"/etc/openmpi/openmpi-totalview.tcl
    find "$r" \( -name '*.a' -o -name '*.la' -o -name '*.mod' \) -delete
    # what no step uses: LAPACK, the Fortran/Java/C++ MPI bindings, OpenSHMEM, MPI-IO, the
    # compiler wrappers, ncurses' form/menu/panel, zstd's extra front ends
    rm -f "$L"/openblas-pthread/lib{blas,lapack}.so* "$L"/libmpi_{mpifh,usempi,usempif08,java,cxx}* \
          "$L"/libmpi_usempi_ignore_tkr* "$L"/liboshmem* "$L"/libompitrace* "$L"/openmpi/lib/ompi_monitoring_prof.so \
          "$L"/openmpi/lib/lib* "$r"/lib/x86_64-linux-gnu/lib{form,menu,panel}w* "$L"/lib{form,menu,panel}w* \
          "$r"/usr/lib/x86_64-linux-gnu/libtic* "$r"/lib/x86_64-linux-gnu/libtic*
    rm -f "$L"/openmpi/lib/openmpi3/mca_{spml,sshmem,scoll,atomic,memheap,io,fcoll,fs,fbtl,sharedfp}_* \
          "$L"/openmpi/lib/openmpi3/libompi_dbg_msgq.so
    local keep=" orterun orted ompi_info zstd zstdcat " f
    for f in "$r"/usr/bin/*; do
        case $keep in *" ${f##*/} "*) ;; *) rm -f "$f" ;; esac
    done
    ln -sf orterun "$r/usr/bin/mpirun"
    ln -sf orterun "$r/usr/bin/mpiexec"
    rm -f "$r"/usr/share/openmpi/*-wrapper-data.txt "$r"/usr/share/openmpi/mpi*.openmpi
}

is_plugin() { case $1 in */openmpi3/*|*/pmix/*) return 0 ;; *) return 1 ;; esac; }

# FILE<TAB>SONAME|NEEDED<TAB>NAME for every ELF file under the folders: one objdump for all
# (a readelf per file made --prepare take a minute)
dyn_table() {
    find "$@" -type f -print0 | xargs -0 objdump -p 2>/dev/null | awk '
        /:[ \t]+file format / { f = $1; sub(/:$/, "", f) }
        $1 == "NEEDED" || $1 == "SONAME" { print f "\t" $1 "\t" $2 }'
}

# Drops the optional OpenMPI/PMIx pieces (MCA plugins, libmca_common_*) that need a library
# neither carried nor on every machine (UCX, libfabric, verbs, PSM, libnl): they would only fail
# to load. Repeats until nothing more goes (a plugin can need a dropped libmca_common_*). Then
# one relative link per soname in ld/carry or ld/fallback, and a check that every NEEDED
# library of every carried file is provided, naming any that is not.
link_and_verify() {
    local s=$1 f kind name n provided changed=1 dropped=() bad=()
    local -A soname needs gone
    while IFS=$'\t' read -r f kind name; do
        if [ "$kind" = SONAME ]; then soname[$f]=$name; else needs[$f]+=" $name"; fi
    done < <(dyn_table "$s/root" "$s/build")
    while [ "$changed" = 1 ]; do
        changed=0
        provided=" $(tr '\n' ' ' <<<"$BASE_LIBS $CUDA_LIBS") "
        for f in "${!soname[@]}"; do
            [ -z "${gone[$f]:-}" ] && ! is_plugin "$f" && provided+="${soname[$f]} "
        done
        for f in "${!needs[@]}"; do
            [ -z "${gone[$f]:-}" ] || continue
            is_plugin "$f" || case ${f##*/} in libmca_common_*) ;; *) continue ;; esac
            for n in ${needs[$f]}; do
                case $provided in *" $n "*) ;; *) dropped+=("${f##*/} ($n)"); gone[$f]=1; changed=1; break ;; esac
            done
        done
    done
    for f in "${!gone[@]}"; do rm -f "$f"; done
    find "$s/root" -xtype l -delete          # links to what was dropped
    say "plugins dropped (libraries not carried): ${#dropped[@]}: ${dropped[*]}"
    mkdir -p "$s/ld/carry" "$s/ld/fallback"
    for f in "${!soname[@]}"; do
        [ -z "${gone[$f]:-}" ] || continue
        is_plugin "$f" && continue
        [ "${f#"$s"/build/}" = "$f" ] || continue          # the build's own .so is not a library to link
        if grep -qwF -- "${soname[$f]}" <<<"$FALLBACK_LIBS"; then
            ln -sfr "$f" "$s/ld/fallback/${soname[$f]}"
        else
            ln -sfr "$f" "$s/ld/carry/${soname[$f]}"
        fi
    done
    for f in "${!needs[@]}"; do
        [ -z "${gone[$f]:-}" ] || continue
        for n in ${needs[$f]}; do
            case $provided in *" $n "*) ;; *) bad+=("${f#"$s"/} needs $n") ;; esac
        done
    done
    [ ${#bad[@]} -eq 0 ] || die "the carry is incomplete: ${bad[*]}"
}

# the newest GLIBC_ / GLIBCXX_ symbol version any carried file needs
max_version() {
    local s=$1 tag=$2
    find "$s/root" "$s/build" -type f -print0 | xargs -0 objdump -T 2>/dev/null |
        grep -oE "\b${tag}_[0-9]+(\.[0-9]+)+" | sed "s/^${tag}_//" | sort -uV | tail -n 1
}

prepare() {
    local cuda_home=${CUDA_HOME:-/usr/local/cuda} f stage p size
    [ -x "$cuda_home/bin/nvcc" ] || die "cannot prepare: nvcc not found at $cuda_home/bin/nvcc, so the cuda backend cannot be built here"
    for f in apt-get dpkg dpkg-query dpkg-deb objdump tar gzip sha256sum; do
        command -v "$f" >/dev/null || die "cannot prepare: $f not found (Debian 12 with binutils needed)"
    done
    if [ "$NO_BUILD" = 0 ]; then
        say "building: scons -Q -j2"
        (cd "$ROOT" && scons -Q -j2) || die "scons -Q -j2 failed"
    fi
    [ -f "$BUILD/lib/libpdbx_cuda.so" ] || die "cannot prepare: $BUILD/lib/libpdbx_cuda.so was not built (the cuda backend: nvcc, scons without --no-cuda)"
    for f in "${CARRIED_BUILD[@]}"; do
        [ -x "$BUILD/$f" ] || [ -f "$BUILD/$f" ] || die "cannot prepare: $BUILD/$f missing (scons -Q -j2)"
    done
    download_debs
    stage=$(mktemp -d "${TMPDIR:-/tmp}/pdbx-first-light-stage.XXXXXX") || die "mktemp failed"
    STAGE=$stage
    trap 'rm -rf "$STAGE"' EXIT
    mkdir -p "$stage/root" "$stage/build/bin" "$stage/build/lib" "$stage/build/tests"
    for p in "${PKGS[@]}"; do
        f=$(deb_of "$p")
        [ -n "$f" ] || die "no .deb of $p in $DEBS"
        dpkg -x "$f" "$stage/root" || die "dpkg -x $f failed"
    done
    prune_stage "$stage"
    for f in "${CARRIED_BUILD[@]}"; do cp -p "$BUILD/$f" "$stage/build/$f"; done
    link_and_verify "$stage"
    {
        echo "# pdbx first-light carry: bench/gpu_first_light.sh --prepare; unpacked by the device run"
        echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "git: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo n/a)"
        echo "built_on: $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"'), $(getconf GNU_LIBC_VERSION)"
        echo "glibc_needed: $(max_version "$stage" GLIBC)"
        echo "glibcxx_needed: $(max_version "$stage" GLIBCXX || true)"
        echo "not_carried: $BASE_LIBS $CUDA_LIBS libcuda.so.1" | tr '\n' ' '; echo
        for p in "${PKGS[@]}"; do
            f=$(deb_of "$p")
            echo "package: $p $(dpkg-deb -f "$f" Version)"
        done
        for f in "${CARRIED_BUILD[@]}"; do echo "build: build/$f $(sha256sum "$stage/build/$f" | cut -c1-64)"; done
        (cd "$stage" && find ld -type l | sort | while read -r f; do echo "lib: ${f#ld/} -> $(readlink "$f" | sed 's#^\(\.\./\)*##')"; done)
        (cd "$stage" && find root build -type f -printf 'file: %s %p\n' | sort -k3)
        echo "unpacked_bytes: $(du -sb "$stage" | awk '{print $1}')"
    } >"$stage/manifest.txt"
    mkdir -p "$CARRY"
    tar czf "$CARRY/payload.tar.gz.tmp" -C "$stage" . || die "tar failed"
    mv -f "$CARRY/payload.tar.gz.tmp" "$CARRY/payload.tar.gz"
    cp "$stage/manifest.txt" "$CARRY/manifest.txt"
    # the carry travels as an ignored folder named in the device call's carry
    local rel=${CARRY#"$ROOT"/}
    if [ "$rel" != "$CARRY" ] && ! grep -qx "/$rel/" "$ROOT/.gitignore" 2>/dev/null; then
        echo "/$rel/" >>"$ROOT/.gitignore"
        say "added /$rel/ to .gitignore"
    fi
    size=$(du -sb "$CARRY" | awk '{print $1}')
    say ""
    say "carry: $CARRY: payload.tar.gz + manifest.txt = $(human_mib "$size") (cap 60 MiB); unpacked $(human_mib "$(manifest_value unpacked_bytes "$CARRY/manifest.txt")")"
    local cxx
    cxx=$(manifest_value glibcxx_needed "$CARRY/manifest.txt")
    say "needs on the GPU machine: glibc >= $(manifest_value glibc_needed "$CARRY/manifest.txt"), libstdc++${cxx:+ with GLIBCXX_$cxx}, CUDA 13 (cudart, cuBLAS, cuBLASLt), NCCL 2, python3"
    say "packages (Debian 12): $(sed -n 's/^package: //p' "$CARRY/manifest.txt" | tr '\n' ',' | sed 's/,$//; s/,/, /g')"
    [ "$size" -le "$CAP_BYTES" ] || die "the carry is $(human_mib "$size"), over the 60 MiB cap"
    say ""
    if [ "$rel" = "$CARRY" ]; then
        say "note: $CARRY is outside the tree, and the device tool carries only folders inside it:"
        say "for the GPU machine, run --prepare without --carry (.first_light/) or with a folder in the tree"
        return 0
    fi
    local opt=""
    [ "$rel" = .first_light ] || opt="--carry $rel "
    say "on the GPU machine, through the device tool's run:"
    say "  command:   bash bench/gpu_first_light.sh $opt\"\$OUT\""
    say "  carry:     [\"$rel\"]"
    say "  timeout_s: $DEVICE_TIMEOUT_S   (the run's own deadline is $BUDGET s; the rest packs the results)"
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
