#!/usr/bin/env bash
# The new-sweep form refuses a model the engine does not measure (issue 14, docs/models.md):
# typing the path of Llama-3.2-11B-Vision's config (its cross-attention layers are not
# measured) shows the planner's one-line refusal, marks the model field '!', F5 creates no run;
# DeepSeek-V2-Lite's preset (MLA, MoE with shared experts, a dense first layer: measured since
# issue 24) typed after it is valid, with two profiled layers (one of each kind), and so is a
# Llama preset.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
COLS=200 ROWS=50
mkdir -p "$STORE/runs"
start
wait_for "valid: F5 launches"
# the model field is selected when the form opens
keys C-u; keys -l "$SRC/tests/fixtures/models/Llama-3.2-11B-Vision.json"
wait_for "cross-attention (8 of 40 layers attend to the image) is not measured by this pdbx"
screen | grep -q "refused rather than profiled as a dense Llama" || fail "the refusal is cut: $(screen | grep -m1 cross-attention)"
screen | grep -qE '^ !model +' || fail "the model field is not marked !: $(screen | grep -m1 model)"
keys F5; sleep 0.5
wait_for "cross-attention"
[ -z "$(ls "$STORE/runs")" ] || fail "F5 created a run for a refused model"
keys C-u; keys -l dsv2lite
wait_for "valid: F5 launches"
screen | grep -qE '^ +layers to profile +2 ' || fail "DeepSeek-V2-Lite's profiled layers: $(screen | grep -m1 -E '^ +!?layers')"
keys C-u; keys -l llama1b
wait_for "valid: F5 launches"
keys Escape; wait_for "No runs yet"
quit_and_check
echo PASS
