#!/usr/bin/env bash
# `pdbx export RUN --fasop-npy DIR`: the HPDC'24 FASOP's known-cost files from a real sweep
# (pdbx-engine on 4 MPI ranks, a tiny Llama-shaped model, TP 1, 2 and 4 at MBS 1..2).
#  1. numpy reads every {model}_{gpu}_{tp}.npy: 1-D float64 of num_layers + 2 elements;
#     [0] = embed, [1..L] = one layer's forward (every layer op's mean, both TP all-reduces
#     included), [L+1] = final_norm + lm_head, in seconds at MBS 1, recomputed from the run's
#     own op events within 1e-12 s; the sidecar .npy.json says so;
#  2. usage: --attribution with --fasop-npy alone is refused (exit 2);
#  3. FASOP's own estimator (estimate.FASOP driven as FASOP.py drives it,
#     tests/e2e/fasop_legacy_driver.py) runs on the files and its TP 4 / PP 1 step time equals
#     the closed form — only where a checkout of AvatarHwang/FASOP is given in FASOP_SRC and
#     the python has torch (FASOP's estimator is an nn.Module); otherwise it says so.
source "$(dirname "$0")/engine_common.inc"
PY=${PYTHON:-/usr/bin/python3}
"$PY" -c 'import numpy' 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }

cat > "$TMP/tiny.json" <<'EOF'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "pdbx_tag": "tiny",
 "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
 "num_key_value_heads": 4, "num_hidden_layers": 6, "vocab_size": 1024,
 "tie_word_embeddings": false}
EOF
cat > "$TMP/spec.json" <<EOF
{"name": "fasop-legacy", "model": "$TMP/tiny.json", "gpu": "cpu", "layers": 2, "seq_len": 32,
 "dtype": "fp32", "backend": "cpu", "gpus_per_node": 4, "nodes": 1,
 "configs": [{"tp": 1, "pp": 1, "dp": 4}, {"tp": 2, "pp": 1, "dp": 2}, {"tp": 4, "pp": 1, "dp": 1}],
 "mbs": "1:2", "repetition": "fixed", "warmup": 1, "steps": 2, "ops": "all",
 "collectives": false, "predict_oom": false, "timeout_s": 60}
EOF
mpirun_np 4 "$ENGINE" --spec "$TMP/spec.json" --store "$TMP/store" >/dev/null 2>"$TMP/engine.err" \
    || fail "pdbx-engine run: $(tail -n 5 "$TMP/engine.err")"
RUNFILE=$(ls "$TMP"/store/runs/*.pdbx | head -1)
ID=$(basename "$RUNFILE" .pdbx)
export PDBX_STORE="$TMP/store"

for gpu in A100 A10; do
    "$PDBX" export "$ID" --fasop-npy "$TMP/work/known_cost" --model-tag gpt2XL --gpu-tag "$gpu" \
        >>"$TMP/export.out" 2>"$TMP/export.err" || fail "pdbx export --fasop-npy: $(cat "$TMP/export.err")"
done
[ "$(grep -c '\.npy$' "$TMP/export.out")" -eq 6 ] || { cat "$TMP/export.out"; fail "want 6 .npy files printed"; }

"$PDBX" export "$ID" --fasop-npy "$TMP/x" --attribution pure >/dev/null 2>"$TMP/usage.err"
rc=$?
[ $rc -eq 2 ] && grep -q -- '--attribution applies to --npz only' "$TMP/usage.err" \
    || { cat "$TMP/usage.err"; fail "--attribution with --fasop-npy: exit $rc, want 2 and the reason"; }

zstdcat "$RUNFILE" >"$TMP/events.jsonl"
"$PY" - "$TMP" <<'PYEOF' || fail "the .npy files do not hold the run's numbers"
import json, math, sys
import numpy as np
tmp = sys.argv[1]
dec, s, E, i = json.JSONDecoder(), open(f"{tmp}/events.jsonl").read(), [], 0
while i < len(s):
    while i < len(s) and s[i] in " \n\r\t":
        i += 1
    if i < len(s):
        o, i = dec.raw_decode(s, i)
        E.append(o)
start = next(e for e in E if e["type"] == "run_start")
model = start["spec"]["model"]
L = model["num_hidden_layers"]
points = {e["point"]: e for e in E if e["type"] == "point_start"}
ops = {(e["point"], e["op"]): e["stats"]["mean"] for e in E
       if e["type"] == "op" and e.get("pass", "fwd") == "fwd"}
LAYER = ["input_norm", "attn_q", "attn_k", "attn_v", "attn_rope", "attn_core", "attn_o",
         "tp_allreduce_attn", "attn_residual", "post_attn_norm", "mlp_gate", "mlp_up", "mlp_act_fn",
         "mlp_down", "tp_allreduce_mlp", "mlp_residual"]
for tp in (1, 2, 4):
    p = next(i for i, pt in sorted(points.items()) if pt["tp"] == tp and pt["mbs"] == 1)
    layer = sum(ops.get((p, op), 0.0) for op in LAYER) / 1e3
    want = [ops[(p, "embed")] / 1e3] + [layer] * L + [(ops[(p, "final_norm")] + ops[(p, "lm_head")]) / 1e3]
    if tp > 1:
        assert (p, "tp_allreduce_attn") in ops and (p, "tp_allreduce_mlp") in ops, tp
    for gpu in ("A100", "A10"):
        path = f"{tmp}/work/known_cost/gpt2XL_{gpu}_{tp}.npy"
        v = np.load(path)
        assert v.dtype == np.float64 and v.shape == (L + 2,), (path, v.dtype, v.shape)
        assert np.allclose(v, want, rtol=0, atol=1e-12), (path, v[:3], want[:3])
        meta = json.load(open(path + ".json"))
        assert meta["units"] == "s" and meta["mbs"] == 1 and meta["tp"] == tp, meta
        assert meta["num_layers"] == L and meta["pass"] == "fwd", meta
    print(f"TP {tp}: embed {want[0]*1e3:.3f} ms, layer {layer*1e3:.3f} ms x {L}, post {want[-1]*1e3:.3f} ms")
json.dump({"hidden_size": model["hidden_size"], "sequence_length": start["spec"]["seq_len"],
           "num_layers": L, "vocab_size": model["vocab_size"],
           "num_attention_heads": model["num_attention_heads"]},
          open(f"{tmp}/model.json", "w"))
PYEOF

if [ -n "${FASOP_SRC:-}" ] && [ -f "$FASOP_SRC/FASOP/estimate.py" ] && "$PY" -c 'import torch' 2>/dev/null; then
    "$PY" "$PDBX_SOURCE_DIR/tests/e2e/fasop_legacy_driver.py" "$FASOP_SRC" "$TMP/work" "$TMP/model.json" \
        >"$TMP/fasop.out" 2>&1 || { cat "$TMP/fasop.out"; fail "FASOP's estimator on the pdbx files"; }
    grep -E 'matches|^ok' "$TMP/fasop.out"
else
    echo "note: FASOP's estimator not run: set FASOP_SRC to a checkout of AvatarHwang/FASOP (and" \
         "have torch in $PY) to run it on these files"
fi
echo "PASS: --fasop-npy files hold the run's MBS 1 forward in FASOP's legacy layout"
