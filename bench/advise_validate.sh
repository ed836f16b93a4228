#!/usr/bin/env bash
# Does `pdbx advise`'s estimate of a training iteration agree with a measured one (issue 15:
# within 10% on the CPU backend)? A real sweep of the quick model (configs/sweeps/quick.json:
# TinyLlama, seq 128, fp32, cpu, adaptive repetition) with configs 1x1x2, 2x1x1 and 1x2x1, fwd
# and bwd (advise then uses the measured backward), 2 layers, MBS 1..4, over 2 ranks; then
# `pdbx validate` of TP1/PP1/DP2, TP2/PP1/DP1 and TP1/PP2/DP1 at MBS $MBS, GBS $GBS (default 2
# and 8), printing measured, estimated and the error per config with both breakdowns.
# FOUR=1 also sweeps and validates 2x1x2 on 4 ranks (oversubscribed on a 2-core machine: its
# figures say more about the oversubscription than about the model).
# MOE=1: the tiny Mixtral instead (tests/e2e/fixtures/engine-tiny-mixtral.json: 8 experts of
# 512, top 2, hidden 256, 4 layers; 1 profiled), DP 2 at EP 1 and EP 2 (1x1x2, 1x1x2x2), the
# collectives sweep on (its all_reduce sizes bracket the dense gradients), validated at its 4
# layers: the expert GEMMs at the rank's token share, the all-to-alls, the expert gradients over
# their EDP group (docs/advise.md).
# LAYOUTS=1: the training layouts of issue 25 instead, from the same dense sweep: 1x1x2 with the
# distributed optimizer (--zero1 on: the gradients reduce-scattered, the parameters all-gathered,
# AdamW over the rank's 1/DP shard), 1x1x2 and 2x1x1 with full recomputation (--recompute full),
# 1x1x2 with selective (--recompute selective), each beside the same configuration without.
# Usage: bash bench/advise_validate.sh [STORE]  (a given STORE keeps the run and its records)
source "$(dirname "$0")/common.inc"
MBS=${MBS:-2}
GBS=${GBS:-8}
ITERS=${ITERS:-3}
ST=${1:-$TMP/st}
export OMPI_MCA_rmaps_base_oversubscribe=1
configs='[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1},{"tp":1,"pp":2,"dp":1}'
[ "${FOUR:-0}" = 1 ] && configs+=',{"tp":2,"pp":1,"dp":2}'
configs+=']'
moe=${MOE:-0}
[ "$moe" = 1 ] && configs='[{"tp":1,"pp":1,"dp":2},{"tp":1,"pp":1,"dp":2,"ep":2}]'
"$PY" - "$TMP/spec.json" "$ROOT/configs/sweeps/quick.json" "$configs" "$moe" "$ROOT" "${LAYOUTS:-0}" <<'PYEOF'
import json, sys
spec = json.load(open(sys.argv[2]))
spec.update({"name": "advise-validate", "configs": json.loads(sys.argv[3]), "passes": ["fwd", "bwd"],
             "layers": 2, "mbs": "1:4", "timeout_s": 600})
if sys.argv[6] == "1":
    # the distributed optimizer's reduce-scatter and all-gather of the stage's gradients (836
    # MiB of fp32 at TinyLlama's 2-layer stage 0): sizes up to half of it, as the all-reduce's
    spec.update({"name": "advise-validate-layouts", "coll_sizes": [1 << k for k in (20, 26, 28, 29)]})
if sys.argv[4] == "1":
    # all_reduce sizes on both sides of the DP messages (dense gradients about 3 MiB, the
    # experts' 12 MiB per layer): Open MPI 4.1's all-reduce on this VM jumps from 2.2 ms at 16 MiB
    # to 135 ms at 32 MiB (2 ranks, in place; docs/advise.md), which a line through the sweep's
    # 1 MiB and a point's 53 MiB bucket cannot know
    spec.update({"name": "advise-validate-moe", "layers": 4, "collectives": True,
                 "coll_sizes": [1 << k for k in (16, 20, 22, 23, 24, 25, 26)],
                 "model": sys.argv[5] + "/tests/e2e/fixtures/engine-tiny-mixtral.json"})
if any(c["tp"] * c["pp"] * c["dp"] > spec["gpus_per_node"] for c in spec["configs"]):
    spec["gpus_per_node"] = 4   # FOUR=1: one node of 4 ranks
json.dump(spec, open(sys.argv[1], "w"), indent=1)
PYEOF
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, load average $(load) before the sweep"
t0=$(date +%s)
id=$("$PDBX" run "$TMP/spec.json" --store "$ST" --force 2>"$TMP/run.err") || { cat "$TMP/run.err"; exit 1; }
id=$(echo "$id" | tail -1)
echo "sweep: run $id in $(( $(date +%s) - t0 )) s (store $ST), load average $(load) after it"
list="1x1x2 2x1x1 1x2x1"
[ "${FOUR:-0}" = 1 ] && list+=" 2x1x2"
[ "$moe" = 1 ] && list="1x1x2 1x1x2x2"
[ "${LAYOUTS:-0}" = 1 ] && list="1x1x2 1x1x2:zero1 1x1x2:full 1x1x2:selective 2x1x1 2x1x1:full"
layers=()   # MOE=1: the model's 4 layers (every expert gradient of the job), else the run's
[ "$moe" = 1 ] && layers=(--layers "${LAYERS:-4}")
printf '%-7s %4s %4s %7s %12s %12s %8s   %s\n' config mbs gbs num_mb measured_ms estimated_ms error \
    "estimate (compute/bubble/tp/pp/dp/ep) | measured slowest rank (fwd/bwd/tp/pp/dp/ep)"
for c in $list; do
    lay=()   # CONFIG:zero1 or CONFIG:full
    case "$c" in *:zero1) lay=(--zero1 on) ;; *:full) lay=(--recompute full) ;; *:selective) lay=(--recompute selective) ;; esac
    c=${c%%:*}
    if ! "$PDBX" validate "$id" --store "$ST" --config "$c" --mbs "$MBS" --gbs "$GBS" --iters "$ITERS" "${layers[@]}" \
            "${lay[@]}" --format json >"$TMP/v.json" 2>"$TMP/v.err"; then
        echo "$c: validate failed: $(tail -3 "$TMP/v.err")"
        continue
    fi
    "$PY" - "$TMP/v.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); e = d["estimate"]; m = d["measured_parts"]
lay = {(False, "none"): "", (True, "none"): ":zero1", (False, "full"): ":full", (True, "full"): ":full+z",
       (False, "selective"): ":sel", (True, "selective"): ":sel+z"}
print("%-7s %4d %4d %7d %12.1f %12.1f %+7.1f%%   %.0f/%.0f/%.0f/%.0f/%.0f/%.1f | %.0f/%.0f/%.0f/%.0f/%.0f/%.1f  (iterations %s)" % (
    d["config"] + lay[(e.get("zero1", False), e.get("recompute", "none"))], d["mbs"], d["gbs"], d["num_mb"],
    d["measured_ms"], d["estimated_ms"], d["error_pct"],
    e["compute_ms"], e["bubble_ms"], e["tp_comm_ms"], e["pp_comm_ms"], e["dp_comm_ms"], e.get("ep_comm_ms", 0),
    m["fwd_ms"], m["bwd_ms"], m["tp_comm_ms"], m["pp_comm_ms"], m["dp_comm_ms"], m.get("ep_comm_ms", 0),
    " ".join("%.0f" % x for x in d["iterations_ms"])))
if e.get("recompute_ms") or m.get("recompute_ms"):
    print("        recomputed forward: estimated %.1f, measured %.1f ms" % (e.get("recompute_ms", 0), m.get("recompute_ms", 0)))
if e.get("optimizer_ms") or m.get("optimizer_ms"):
    print("        optimizer: estimated %.1f, measured %.1f ms" % (e.get("optimizer_ms", 0), m.get("optimizer_ms", 0)))
if e.get("note"):
    print("        note: %s" % e["note"])
PYEOF
    echo "        load average $(load) after it"
done
