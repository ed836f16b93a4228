#!/usr/bin/env bash
# `pdbx plan`: the collective buffer in the profile memory (engine/plan/plan_comm.c) is sized for
# the collectives the config runs. Llama-3.3-70B and Llama-3.1-8B at TP 1 on an H100 (80 GB),
# bf16, seq 4096, 2 profiled layers, MBS 1: at DP 8 the DP all-reduce moves one Megatron DDP
# bucket of fp32 gradients (max(40e6, 8e6) params * 4 B = 160 MB, whole 4 KiB pages:
# 159997952), not the stage's whole gradients (141 GB for 70B: planned OOM before), so the
# point is measurable; at DP 1 no collective runs and no buffer is listed; at TP 2 the buffer
# is the TP message [4096, hidden] bf16.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/cli_fixture.sh" || exit 1
trap cleanup EXIT

# plan_point MODEL CONFIG: the first point of the plan as JSON
plan_point() {
    "$PDBX" plan --model "$1" --gpu H100 --backend cuda --configs "$2" --gpus-per-node 8 \
        --dtype bf16 --seq-len 4096 --mbs 1 --layers 2 --json > "$TMP/plan.json" 2> "$TMP/err" ||
        fail "plan --model $1 --configs $2: $(cat "$TMP/err")"
}
# check EXPR MSG: a Python expression over p (the point), gpu (its bytes), h (hidden size)
check() {
    $PY - "$TMP/plan.json" "$1" <<'PYEOF' || fail "$2"
import json, sys
d = json.load(open(sys.argv[1]))
p, gpu, h = d["points"][0], d["spec"]["gpu"]["mem_bytes"], d["spec"]["model"]["hidden_size"]
ok = eval(sys.argv[2])
if not ok:
    print("point:", json.dumps(p), file=sys.stderr)
sys.exit(0 if ok else 1)
PYEOF
}

for model in Llama-3.3-70B-Instruct Llama-3.1-8B; do
    plan_point $model 1x1x8
    check 'p["profile"]["comm"] == 159997952' "$model TP1 DP8: the comm entry is not one fp32 bucket"
    check 'p["profile_fits"] and p["profile_mem_bytes"] < gpu and p["sweep"] == "measure"' \
        "$model TP1 DP8 on H100: the profile is not measurable"
    plan_point $model 1x1x1
    check 'p["profile"]["comm"] == 0' "$model TP1 DP1: a comm buffer is listed though no collective runs"
    plan_point $model 2x1x1
    check 'p["profile"]["comm"] == 4096 * h * 2' "$model TP2 DP1: the comm entry is not the TP message"
done
echo "PASS: cli_plan_comm"
