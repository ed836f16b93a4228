#!/usr/bin/env bash
# suite: plain build only: a dry run reads the plain build's outputs and runs nothing of them but pdbx plan; the sanitizer variant adds nothing
# bench/gpu_first_light.sh --dry-run, the plan of the GPU first-light run, without a GPU:
#  - passes on this tree and build (no carry: it checks the build outputs under $PDBX_BUILD),
#    lists the 12 steps in order with their timeouts, and the commands that matter: the unit
#    test binaries, cuda_gpu.sh, the four Llama-3.1-8B sweeps, torch_compare_gpu.py (GEMMs and
#    --attention), pdbx record, compute-sanitizer memcheck and racecheck, nccl-tests; every
#    spec it writes is valid (pdbx plan);
#  - fails naming what is missing: a build output (PDBX_BUILD without one) and a tracked input
#    (a copy of the tree without bench/torch_compare_gpu.py);
#  - refuses an unknown option with one line and exit 2.
# shellcheck disable=SC2016   # $WORK is literal: the dry run prints the work folder so
set -u
SRC=${PDBX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${PDBX_BUILD:?PDBX_BUILD not set}
script=$SRC/bench/gpu_first_light.sh
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$BUILD/bin/pdbx" ] || { echo "SKIP: $BUILD/bin/pdbx not built"; exit 77; }
[ -f "$BUILD/lib/libpdbx_cuda.so" ] ||
    { echo "SKIP: $BUILD/lib/libpdbx_cuda.so not built (nvcc not found): the first-light run needs the cuda backend"; exit 77; }
tmp=$(mktemp -d /tmp/pdbx-first-light-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# 1. the plan: passes, every step in order, the commands
out=$(bash "$script" --dry-run --carry "$tmp/no-carry" "$tmp/out" 2>&1) || fail "dry run failed:
$out"
steps=$(sed -nE 's/^ ?[0-9]+\. ([a-z0-9]+) .*timeout [0-9]+ s$/\1/p' <<<"$out" | tr '\n' ' ')
want="start device plumbing unit e2e sweep record torch flash memcheck racecheck collectives "
[ "$steps" = "$want" ] || fail "steps listed: '$steps', want '$want'"
for cmd in 'bin/pdbx-engine --version' 'mpirun --version' 'nvidia-smi -q' 'first_light.py device' \
           'build/tests/test_cuda_kernels$' 'build/tests/test_cuda_kernels_bwd$' \
           'build/tests/test_cuda_attn_kv$' 'build/tests/test_cuda_kernels_dense$' 'build/tests/test_cuda_kernels_mla$' \
           'build/tests/test_cuda_kernels_moe$' 'build/tests/test_cuda_dense_point$' \
           'build/tests/test_cuda_backend$' 'tests/e2e/cuda_gpu.sh' \
           'pdbx run \$WORK/specs/sweep-main.json' 'pdbx run \$WORK/specs/sweep-cublas.json' \
           'pdbx run \$WORK/specs/sweep-flush.json' 'pdbx run \$WORK/specs/sweep-flush-cublas.json' \
           'torch_compare_gpu.py .<sweep-main>. .* --blas cublaslt ' 'torch_compare_gpu.py .<sweep-cublas>. .* --blas cublas ' \
           'torch-flush-cublas.json --flush-l2' 'pdbx record .<sweep-main>. ' \
           'torch_compare_gpu.py .<flash-8192>. .* --attention' \
           'PDBX_TEST_FILTER=.* compute-sanitizer --tool memcheck' 'compute-sanitizer --tool racecheck' \
           'all_reduce_perf'; do
    grep -qE -- "\\\$ timeout [0-9]+ .*$cmd" <<<"$out" || fail "the dry run lists no command matching '$cmd':
$out"
done
grep -q 'spec $WORK/specs/flash-2048.json: valid' <<<"$out" || fail "flash-2048 spec not validated"
grep -q '8 specs valid' <<<"$out" || fail "not every spec validated:
$(grep 'spec ' <<<"$out")"
grep -q "^dry run: ok: 12 steps" <<<"$out" || fail "no 'dry run: ok' line"

# 2. what is missing is named: a build output (PDBX_BUILD without one) and a tracked input (a
# copy of the files the script reads, bench/torch_compare_gpu.py left out)
mkdir -p "$tmp/tree/bench" "$tmp/tree/tests/e2e"
cp "$SRC"/bench/gpu_first_light.sh "$SRC"/bench/first_light.py "$SRC"/bench/first_light_*.inc "$tmp/tree/bench/"
cp "$SRC"/tests/e2e/cuda_gpu.sh "$SRC"/tests/e2e/cuda_gpu_check.py "$tmp/tree/tests/e2e/"
cp -r "$SRC/configs" "$tmp/tree/"
out=$(PDBX_BUILD=$tmp/nobuild bash "$tmp/tree/bench/gpu_first_light.sh" --dry-run --carry "$tmp/no-carry" 2>&1) &&
    fail "dry run passed without bench/torch_compare_gpu.py and with PDBX_BUILD=$tmp/nobuild"
grep -q "missing: .*nobuild/bin/pdbx-engine (build output" <<<"$out" ||
    fail "the dry run did not name the missing pdbx-engine:
$out"
grep -q "missing: bench/torch_compare_gpu.py (tracked" <<<"$out" ||
    fail "the dry run did not name bench/torch_compare_gpu.py:
$out"
grep -q "needs bench/torch_compare_gpu.py: MISSING" <<<"$out" || fail "step 7 does not show the missing script"

# 3. usage errors: one line, exit 2
out=$(bash "$script" --bogus 2>&1); rc=$?
{ [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ]; } || fail "--bogus: rc $rc, output: $out"
out=$(bash "$script" --budget x /tmp/x 2>&1); rc=$?
[ "$rc" = 2 ] || fail "--budget x: rc $rc, output: $out"
bash "$script" --help | grep -q -- '--prepare' || fail "--help does not describe --prepare"
echo "ok: dry run lists the 12 steps and their commands, validates 8 specs, names a missing build output and a missing tracked file"
