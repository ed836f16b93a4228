#!/usr/bin/env bash
# The new-sweep form refuses a model the engine does not measure (issue 14, docs/models.md):
# typing the DeepSeek-V2-Lite preset (its multi-head latent attention is not measured yet; its
# mixture of experts is) shows the planner's one-line refusal, marks the model field
# '!', F5 creates no run; a Llama preset typed after it is valid again.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
COLS=200 ROWS=50
mkdir -p "$STORE/runs"
start
wait_for "valid: F5 launches"
# the model field is selected when the form opens
keys C-u; keys -l dsv2lite
wait_for "multi-head latent attention (MLA, kv_lora_rank 512, qk_rope_head_dim 64) is not measured by this pdbx"
screen | grep -q "refused rather than profiled as a dense Llama" || fail "the refusal is cut: $(screen | grep -m1 latent)"
screen | grep -qE '^ !model +dsv2lite' || fail "the model field is not marked !: $(screen | grep -m1 model)"
keys F5; sleep 0.5
wait_for "multi-head latent attention"
[ -z "$(ls "$STORE/runs")" ] || fail "F5 created a run for a refused model"
keys C-u; keys -l llama1b
wait_for "valid: F5 launches"
keys Escape; wait_for "No runs yet"
quit_and_check
echo PASS
