#!/usr/bin/env bash
# The new-sweep form refuses a model the engine does not measure (issue 14, docs/models.md):
# typing the Mixtral-8x7B preset shows the planner's one-line refusal, marks the model field
# '!', F5 creates no run; a Llama preset typed after it is valid again.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
COLS=200 ROWS=50
mkdir -p "$STORE/runs"
start
wait_for "valid: F5 launches"
# the model field is selected when the form opens
keys C-u; keys -l mixtral8x7b
wait_for "mixture of experts (8 experts, top 2) is not measured by this pdbx"
screen | grep -q "refused rather than profiled as a dense Llama" || fail "the refusal is cut: $(screen | grep -m1 experts)"
screen | grep -qE '^ !model +mixtral8x7b' || fail "the model field is not marked !: $(screen | grep -m1 model)"
keys F5; sleep 0.5
wait_for "mixture of experts"
[ -z "$(ls "$STORE/runs")" ] || fail "F5 created a run for a refused model"
keys C-u; keys -l llama1b
wait_for "valid: F5 launches"
keys Escape; wait_for "No runs yet"
quit_and_check
echo PASS
