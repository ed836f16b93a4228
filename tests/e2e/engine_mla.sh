#!/usr/bin/env bash
# DeepSeek's multi-head latent attention through the real engine on the cpu backend: two tiny
# dense deepseek_v2 configs (tests/e2e/fixtures/engine-tiny-mla.json: q at full rank, q_lora_rank
# null; engine-tiny-mla-qlora.json: q_lora_rank 64), kv_lora_rank 64, nope 32, rope 16, v 32,
# n_routed_experts null (a dense MLP); hidden 256, 4 heads, seq 32, passes fwd,bwd, fp32:
#  - q_lora_rank 64 at TP 2 (2 ranks through mpirun), 1 layer, MBS 1..4; q_lora_rank null at TP 1,
#    2 layers, MBS 1..2;
#  - run_start's spec carries arch.attention mla and no MoE; every point ends ok;
#  - every op the model has (attn_q_a, attn_q_norm, attn_q_b or attn_q, attn_kv_a, attn_kv_norm,
#    attn_kv_b, attn_rope, attn_core, attn_o and the rest) holds a measured cell in both passes,
#    and the ops it has not (attn_k, attn_v, the other q path, moe_*) hold none;
#  - every point's measured memory peak is within 15% of its predicted profile memory (the MLA
#    buffers of plan_profile_memory_mla.c and cpu_mla.c);
#  - cuda with flash_attention and bf16 on the cpu are refused with their reasons; DeepSeek-V2-Lite (MLA
#    and MoE, a dense first layer) is planned with two profiled layers, one of each kind, and
#    planned on cuda in bf16 too (not refused there).
# Only what a loaded 2-core machine cannot disturb is asserted (no timing comparison).
source "$(dirname "$0")/engine_common.inc"
[ -w /proc/self/clear_refs ] || { echo "SKIP: /proc/self/clear_refs is not writable: the RSS peak cannot be reset per point"; exit 77; }
MEM_HI=1.15   # engine_families.sh's bounds, its sanitizer allowance too
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=8"; MEM_HI=1.25; fi
FIX=$PDBX_SOURCE_DIR/tests/e2e/fixtures

# check STORE QLORA: the run's events against the expectations above
check() {
    ev_py "$(run_file "$1")" "HI = $MEM_HI; QLORA = $2"'
S = [e for e in E if e["type"] == "run_start"][0]
arch = S["spec"]["model"]["arch"]
assert arch["attention"] == "mla" and (arch["mla"]["q_lora_rank"] or 0) == (64 if QLORA else 0), arch
assert not arch.get("moe") or not arch["moe"].get("experts"), arch
ends = [e for e in E if e["type"] == "point_end"]
mbs = {e["point"]: e.get("mbs") for e in E if e["type"] == "point_start"}
assert ends and all(e["status"] == "ok" for e in ends), ends
for e in ends:
    ratio = e["mem_peak_bytes"] / e["profile_mem_bytes"]
    print("point %d: profile memory %.2f MiB, measured peak %.2f MiB, measured/predicted %.3f"
          % (e["point"], e["profile_mem_bytes"] / 2**20, e["mem_peak_bytes"] / 2**20, ratio))
    assert 0.85 <= ratio <= HI, (e, ratio)
cells = {(e["point"], e["op"], e.get("pass", "fwd")): e for e in E if e["type"] == "op"}
q = ["attn_q_a", "attn_q_norm", "attn_q_b"] if QLORA else ["attn_q"]
mla = q + ["attn_kv_a", "attn_kv_norm", "attn_kv_b", "attn_rope", "attn_core", "attn_o"]
compute = ["embed", "input_norm"] + mla + ["attn_residual", "post_attn_norm", "mlp_gate", "mlp_up",
           "mlp_act_fn", "mlp_down", "mlp_residual", "final_norm", "lm_head"]
for e in ends:
    for op in compute:
        for pas in ("fwd", "bwd"):
            c = cells.get((e["point"], op, pas))
            assert c and c["stats"]["count"] >= 1 and c["stats"]["mean"] > 0, (e["point"], op, pas, c)
    print("point %d (mbs %s), fwd/bwd:" % (e["point"], mbs.get(e["point"])), ", ".join(
        "%s %.3f/%.3f ms" % (op, cells[(e["point"], op, "fwd")]["stats"]["mean"],
                             cells[(e["point"], op, "bwd")]["stats"]["mean"]) for op in mla))
other = {"attn_k", "attn_v"} | ({"attn_q"} if QLORA else {"attn_q_a", "attn_q_norm", "attn_q_b"})
absent = sorted({op for (_, op, _) in cells if op in other or op.startswith("moe_")})
assert not absent, ("cells of ops this model does not have", absent)
'
}

phase "tiny MLA with q_lora_rank 64: fwd+bwd, TP 2, MBS 1..4"
tiny_spec "$TMP/q.json" "model=\"$FIX/engine-tiny-mla-qlora.json\"" 'layers=1' 'passes="fwd,bwd"' 'seq_len=32' \
    'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:4"'
mpirun_np 2 "$ENGINE" --spec "$TMP/q.json" --store "$TMP/st-q" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (q_lora_rank 64)"; }
check "$TMP/st-q" True || fail "tiny MLA (q_lora_rank 64) run"

phase "tiny MLA with q at full rank (q_lora_rank null): fwd+bwd, TP 1, 2 layers, MBS 1..2"
tiny_spec "$TMP/f.json" "model=\"$FIX/engine-tiny-mla.json\"" 'layers=2' 'passes="fwd,bwd"' 'seq_len=32' 'mbs="1:2"'
mpirun_np 1 "$ENGINE" --spec "$TMP/f.json" --store "$TMP/st-f" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (q_lora_rank null)"; }
check "$TMP/st-f" False || fail "tiny MLA (q at full rank) run"

phase "refusals: cuda with flash attention, bf16 on the cpu, fused projections; DeepSeek-V2-Lite planned"
expect_refusal() {   # expect_refusal WHAT TEXT SPEC-FIELDS...: pdbx plan exits 2 and names TEXT
    local what=$1 text=$2; shift 2
    tiny_spec "$TMP/r.json" "$@"
    "$PDBX" plan "$TMP/r.json" >"$TMP/out" 2>&1 && { cat "$TMP/out"; fail "$what: accepted"; }
    grep -q "$text" "$TMP/out" || { cat "$TMP/out"; fail "$what: no '$text' in the refusal"; }
}
# cuda runs MLA on its unfused attention core (v's head dim differs): the fused one is refused
expect_refusal "cuda flash" "fused kernel does not run model .* multi-head latent attention" \
    "model=\"$FIX/engine-tiny-mla.json\"" 'backend="cuda"' 'gpu="H100-SXM"' 'flash_attention=true'
expect_refusal "bf16" "fp32 only" "model=\"$FIX/engine-tiny-mla.json\"" 'dtype="bf16"'
expect_refusal "fused" "fused_projections" "model=\"$FIX/engine-tiny-mla.json\"" 'fused_projections=true'
# DeepSeek-V2-Lite (MLA, MoE, a dense first layer) is planned: two profiled layers by default
"$PDBX" plan --format json --model "$PDBX_SOURCE_DIR/tests/fixtures/models/DeepSeek-V2-Lite.json" >"$TMP/lite" 2>"$TMP/lite.err" || \
    { cat "$TMP/lite.err"; fail "DeepSeek-V2-Lite refused"; }
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["refused"] is None and d["spec"]["layers"] == 2, d["refused"]' \
    "$TMP/lite" || fail "DeepSeek-V2-Lite's plan"
# and on cuda (MLA and MoE both run there), in bf16
"$PDBX" plan --format json --model "$PDBX_SOURCE_DIR/tests/fixtures/models/DeepSeek-V2-Lite.json" --backend cuda \
    --gpu H100-SXM --dtype bf16 >"$TMP/lite-cuda" 2>"$TMP/lite-cuda.err" || \
    { cat "$TMP/lite-cuda.err"; fail "DeepSeek-V2-Lite refused on cuda"; }
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["refused"] is None, d["refused"]' \
    "$TMP/lite-cuda" || fail "DeepSeek-V2-Lite's cuda plan"


echo "PASS: tiny dense DeepSeek-V2 models (MLA with and without q's low rank) measured on the cpu backend at TP 2 and TP 1, every MLA op in both passes, memory as planned; cuda with flash attention, bf16 on the cpu and fused projections refused; DeepSeek-V2-Lite planned (2 profiled layers; on cuda too)"
