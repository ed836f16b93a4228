#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# Linear-layer biases through the real engine on the cpu backend (issue 14: Qwen2/2.5 are
# measured, not refused):
#  - a tiny Qwen2 (tests/e2e/fixtures/engine-tiny-qwen2.json: q/k/v with bias, as every qwen2
#    config), 2 ranks at TP 2, MBS 2 and 4, passes fwd,bwd: run_start's spec carries model.arch
#    with the bias (qkv true, attn_out and mlp false), every point ends ok, the q/k/v cells (and
#    every other compute op's) exist in both passes, and the largest point's measured memory
#    peak is within the 15% engine_memory.sh allows of its profile memory (no point's profile
#    memory above its peak by more), which lists the bias vectors and their gradients (the
#    planner's difference to the same shapes without bias is exactly those bytes);
#  - a tiny Llama with attention_bias and mlp_bias true (every projection biased),
#    fused_projections true, fwd,bwd, one rank: the fused groups' cells carry fused_with, the
#    o_proj and MLP cells exist, memory within 15%.
# Only what a loaded 2-core machine cannot disturb is asserted (no timing comparison).
source "$(dirname "$0")/engine_common.inc"
[ -w /proc/self/clear_refs ] || { echo "SKIP: /proc/self/clear_refs is not writable: the RSS peak cannot be reset per point"; exit 77; }
# Sanitizer build: a small quarantine keeps the RSS honest (engine_memory.sh says why).
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=8"; fi
FIX=$PDBX_SOURCE_DIR/tests/e2e/fixtures
# seq_len 512: the points' buffers, not the process's fixed costs, make the memory peak (at the
# largest MBS, where the memory is asserted; the sanitizer build's allocator adds a few MiB)
# The sanitizer build runs the kernels several times slower: there only the largest point (the
# one whose memory is asserted) runs.
# The sanitizer's allocator (its 8 MiB quarantine of freed chunks, redzones) adds to the RSS
# peak what no plan lists: 1.151 for a 1.07 plain-build ratio on the fresh-clone suite, 1.144 for
# 1.04 on a 2-core VM whose kernel has no shared zero page (1.085 there with a 1 MiB
# quarantine), so its upper bound is 1.25 there; the plain build holds engine_memory.sh's 1.15.
# ASan's shadow is not in the peak (the engine takes it out, host.h): on that VM it added 1/8,
# 1.263.
QMBS='"2:4"' QPOINTS=2 MEM_HI=1.15
[ -n "${ASAN_OPTIONS:-}" ] && QMBS='"4:4"' QPOINTS=1 MEM_HI=1.25
tiny_spec "$TMP/q.json" "model=\"$FIX/engine-tiny-qwen2.json\"" 'passes="fwd,bwd"' 'seq_len=512' \
    'configs=[{"tp":2,"pp":1,"dp":1}]' "mbs=$QMBS"
phase "tiny qwen2 (q/k/v bias), fwd+bwd, TP 2"
mpirun_np 2 "$ENGINE" --spec "$TMP/q.json" --store "$TMP/sq" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (qwen2)"; }
CHECK='
import json
S = [e for e in E if e["type"] == "run_start"][0]
arch = S["spec"]["model"]["arch"]
assert arch["bias"] == WANT_BIAS, arch
ends = [e for e in E if e["type"] == "point_end"]
assert len(ends) == NPOINTS and all(e["status"] == "ok" for e in ends), ends
for e in ends:
    ratio = e["mem_peak_bytes"] / e["profile_mem_bytes"]
    print("point %d: profile memory %.2f MiB, measured peak %.2f MiB, measured/predicted %.3f"
          % (e["point"], e["profile_mem_bytes"] / 2**20, e["mem_peak_bytes"] / 2**20, ratio))
big = max(ends, key=lambda e: e["profile_mem_bytes"])
ratio = big["mem_peak_bytes"] / big["profile_mem_bytes"]
assert 0.85 <= ratio <= HI, (big, ratio)   # the tolerance of engine_memory.sh (plain build)
assert all(e["profile_mem_bytes"] <= e["mem_peak_bytes"] * 1.15 for e in ends), ends
cells = {(e["point"], e["op"], e.get("pass", "fwd")): e for e in E if e["type"] == "op"}
compute = ["embed", "input_norm", "attn_q", "attn_k", "attn_v", "attn_rope", "attn_core", "attn_o",
           "attn_residual", "post_attn_norm", "mlp_gate", "mlp_up", "mlp_act_fn", "mlp_down",
           "mlp_residual", "final_norm", "lm_head"]
for e in ends:
    for op in compute:
        for pas in ("fwd", "bwd"):
            c = cells.get((e["point"], op, pas))
            assert c and c["stats"]["count"] >= 1 and c["stats"]["mean"] > 0, (e["point"], op, pas, c)
            assert c.get("fused_with") == FUSED.get(op), (op, c.get("fused_with"))
'
ev_py "$(run_file "$TMP/sq")" "WANT_BIAS = {'qkv': True, 'attn_out': False, 'mlp': False}; NPOINTS = $QPOINTS; HI = $MEM_HI; FUSED = {}
$CHECK" || fail "tiny qwen2 run"

# The planner: the qwen2 point's profile memory is the Llama point's plus the bias vectors
# (TP 2: q 128, k and v 64 fp32 values per layer, 2 layers) and their gradients (q 128, k/v 64),
# and the optimizer's flat arrays of one layer's parameters, biases included: 256 more fp32
# values in the master weights, m and v (weights) and the main gradient and the gradient buffer
# the step zeroes (grads).
for m in qwen2 llama; do
    "$PDBX" plan --model "$FIX/engine-tiny-$m.json" --gpu cpu --seq-len 256 --layers 2 --tp 2 --mbs 1 --passes fwd,bwd \
        --format json >"$TMP/plan-$m.json" 2>"$TMP/err" || { cat "$TMP/err"; fail "pdbx plan $m"; }
done
"$PY" - "$TMP/plan-qwen2.json" "$TMP/plan-llama.json" <<'PYEOF' || fail "planner's bias bytes"
import json, sys
q, l = (json.load(open(f)) for f in sys.argv[1:3])
assert q["refused"] is None and q["model"]["arch"]["bias"]["qkv"] is True, q["refused"]
pq, pl = q["points"][0]["profile"], l["points"][0]["profile"]
opt = (128 + 64 + 64) * 4
want_w = 2 * (128 + 64 + 64) * 4 + 3 * opt
want_g = (128 + 64) * 4 + 2 * opt
assert pq["weights"] - pl["weights"] == want_w, (pq, pl)
assert pq["grads"] - pl["grads"] == want_g, (pq, pl)
assert pq["activations"] == pl["activations"], (pq, pl)
print("planner: biases add %d bytes of weights and %d of gradients per rank" % (want_w, want_g))
PYEOF

# Every projection biased, fused QKV and fc1.
"$PY" - "$FIX/engine-tiny-llama.json" "$TMP/allbias.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"pdbx_tag": "tinyallbias", "attention_bias": True, "mlp_bias": True})
json.dump(c, open(sys.argv[2], "w"))
PYEOF
tiny_spec "$TMP/a.json" "model=\"$TMP/allbias.json\"" 'passes="fwd,bwd"' 'seq_len=512' 'fused_projections=true' \
    'mbs="4:4"'
phase "tiny llama, every projection biased, fused, fwd+bwd, one rank"
mpirun_np 1 "$ENGINE" --spec "$TMP/a.json" --store "$TMP/sa" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (all biases)"; }
ev_py "$(run_file "$TMP/sa")" "WANT_BIAS = {'qkv': True, 'attn_out': True, 'mlp': True}; NPOINTS = 1; HI = $MEM_HI
FUSED = {'attn_q': 'attn_q', 'attn_k': 'attn_q', 'attn_v': 'attn_q', 'mlp_gate': 'mlp_gate', 'mlp_up': 'mlp_gate'}
$CHECK" || fail "all-bias fused run"
echo "PASS: biased models measured on the cpu backend (qwen2 TP 2, every projection biased and fused), fwd and bwd, memory as planned"
