#!/usr/bin/env bash
# The new-sweep form through tmux (no sweep is launched: tui_sweep.sh does that):
#  - goldens at 80x24 and 200x50;
#  - a message about the whole spec marks its field '!' (the preview says "fix the fields
#    marked !" only when one is);
#  - the form runs the launch's own check (pdbx_launch_check: pdbx-engine --check): a backend
#    or dtype this machine cannot run marks its field, F5 refuses and no run is created;
#  - cpu backend with a GPU preset says what is measured;
#  - the preview shows both memory predictions with their OOM marks;
#  - text fields: Left/Right move the cursor and keep a typed path, ^N/^P cycle presets with
#    the typed text as one step, Home/End, Backspace/Delete, horizontal scroll past the field;
#  - a preset's EP configs read back as TPxPPxDPxEP, in the field and the preview.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
export TZ=UTC
ENGINE="$BUILD/bin/pdbx-engine"
[ -x "$ENGINE" ] || { echo "SKIP: $ENGINE not built"; exit 77; }
COLS=80 ROWS=24
mkdir -p "$STORE/runs"
# fields, from the top: preset model layers seq_len dtype backend gpu gpus_per_node nodes
# configs gpus mbs warmup steps collectives predict_oom; the model field is selected at open.
# go N: to field N (Up/Down wrap around, so moves are counted from where we are)
CUR=1
go() {
    while [ "$CUR" -lt "$1" ]; do keys Down; CUR=$((CUR + 1)); done
    while [ "$CUR" -gt "$1" ]; do keys Up; CUR=$((CUR - 1)); done
    sleep 0.1
}
MODEL=1 SEQ=3 DTYPE=4 BACKEND=5 GPU=6
value_of() { screen | sed -n "s/^ [ !]$1  *\\([^ ]*\\).*/\\1/p" | head -1; }
cursor_x() { tmx display-message -p -t e2e '#{cursor_x}'; }
# value_is FIELD WANT [--not]: the field shows WANT (or, with --not, anything else)
value_is() { if [ "${3:-}" = --not ]; then [ "$(value_of "$1")" != "$2" ]; else [ "$(value_of "$1")" = "$2" ]; fi; }
start
wait_for "Preview: 8 points"
wait_for "valid: F5 launches"
golden_sizes tui_form "valid: F5 launches"
# ---- launcher and hosts: checked by the same code as pdbx run --hosts (launch_argv.h) ----
NODES=8 HOSTS=17
go $HOSTS; keys -l "a:2,bad host:2"
wait_for "hosts: 'bad host' is not a host name"
screen | grep -qE '^ !hosts' || fail "a bad hosts entry is not marked !"
keys C-u; wait_for "valid: F5 launches"
go $NODES; keys C-u; keys -l 2
wait_for "nodes: 2 needs 2 machines"
screen | grep -qE '^ !nodes +2' || fail "nodes 2 with the local launcher is not marked !"
go $HOSTS; keys -l "a:2,b:2"; wait_for "valid: F5 launches"
keys C-u; go $NODES; keys C-u; keys -l 1; wait_for "valid: F5 launches"
# ---- marks: backend cuda with the cpu preset is the GPU preset's fault ----
go $BACKEND; keys Right
wait_for "gpu: cpu is the host preset"
screen | grep -qE '^ !GPU preset +cpu' || fail "the GPU preset field is not marked !"
screen | grep -q "fix the fields marked !" || fail "the preview does not point at the marks"
# ---- the launch's check: cuda without a GPU here ----
if ! "$ENGINE" --check cuda fp32 >/dev/null 2>&1; then
    go $GPU; keys C-n; wait_for "A100-80G"
    wait_for "backend cuda: "
    screen | grep -qE '^ !backend +cuda' || fail "backend cuda without a GPU is not marked !"
    keys F5; wait_for "backend cuda: no usable GPU"
    [ -z "$(ls "$STORE/runs")" ] || fail "F5 created a run the engine cannot measure"
    CUR=$BACKEND          # F5 selects the field in error
    wait_format cursor_y 7 || fail "F5 did not select the backend field"
    keys Left; wait_for "valid: F5 launches"
fi
# ---- cpu backend with a GPU preset: what is measured ----
go $BACKEND; value_of backend | grep -qx cpu || { keys Left; }
value_of backend | grep -qx cpu || fail "backend is not cpu: $(value_of backend)"
value_of "GPU preset" | grep -qx cpu && { go $GPU; keys C-n; }
wait_for "cpu backend: measures this CPU; the A100-80G preset sets only the memory model"
# ---- the launch's check: bf16 without cblas_sbgemm ----
if ! "$ENGINE" --check cpu bf16 >/dev/null 2>&1; then
    go $DTYPE; keys C-u; keys -l bf16
    wait_for "bf16 needs cblas_sbgemm"
    screen | grep -qE '^ !dtype +bf16' || fail "bf16 without sbgemm is not marked !"
    keys F5; wait_for "dtype: bf16 needs"
    [ -z "$(ls "$STORE/runs")" ] || fail "F5 created a run with a dtype the engine refuses"
    keys C-u; keys -l fp32; wait_for "valid: F5 launches"
fi
# ---- the preview's two predictions: Llama-3.3-70B on the A100-80G preset (cpu backend) ----
# its one profiled layer fits 80 GB at every point (prof., no mark); training the whole model
# does not at any point (train, '!')
go $MODEL; keys C-u; keys -l llama70b
wait_for "8 train OOM"
screen | grep -q "Preview: 8 points, 0 OOM" || fail "the headline does not count 0 profile OOMs: $(screen | grep Preview)"
n=$(screen | grep -cE ' [0-9]+x1x[0-9] +[0-9]+ +[0-9.]+G +[0-9.]+G! *$')
[ "$n" = 8 ] || { screen >&2; fail "$n preview rows with a fitting profile and a training OOM, want 8"; }
# ---- a typed path survives Left/Right, and is one step of the ^N/^P cycle ----
P=/no/such/config.json
go $MODEL; keys C-u; keys -l "$P"
wait_for "cannot open"
keys Left Left Right
sleep 0.2
[ "$(value_of model)" = "$P" ] || fail "Left/Right replaced the typed path: $(value_of model)"
keys C-n
eventually value_is model "$P" --not || fail "^N did not cycle to a preset"
keys C-p
eventually value_is model "$P" || fail "^P did not come back to the typed path: $(value_of model)"
# ---- editing: Home, Delete, End, Backspace on seq_len ----
go $SEQ; wait_for "seq_len"
keys Home Delete
eventually value_is seq_len 28 || fail "Home Delete: seq_len $(value_of seq_len), want 28"
keys End BSpace
eventually value_is seq_len 2 || fail "End Backspace: seq_len $(value_of seq_len), want 2"
keys -l 56
eventually value_is seq_len 256 || fail "typing after Backspace: seq_len $(value_of seq_len), want 256"
# ---- horizontal scroll: a value longer than the field (24 columns at 80) ----
LONG=/nonexistent/a/rather/long/directory/name/for/a/model/config.json
go $MODEL; keys C-u; keys -l "$LONG"
wait_for "model/config.json" 5 || fail "the end of a long value is not shown while typing there"
x=$(cursor_x); [ "$x" -lt 46 ] || fail "the cursor left the field (column $x)"
keys Home
eventually eval "screen | grep -qE '^ [ !]model +/nonexistent/a/rather'" || fail "Home did not scroll back to the start"
wait_format cursor_x 21 || fail "Home: cursor at column $(cursor_x), want 21"
keys Escape; wait_for "No runs yet"
quit_and_check
# ---- expert parallelism: a preset's EP 2 config comes back as TPxPPxDPxEP (not a second
# 1x1x2, which the planner refuses as listed twice), the preview labels its points 1x1x2x2, and
# typed EP configs are taken; pdbx plan heads the config "TP 1  PP 1  DP 2  EP 2" ----
cat > "$TMP/ep.json" <<'JSON'
{"name": "ep", "model": "Mixtral-8x7B", "gpu": "cpu", "layers": 1, "seq_len": 64, "dtype": "fp32",
 "backend": "cpu", "gpus_per_node": 2, "nodes": 1, "mbs": "1:2", "predict_oom": false,
 "configs": [{"tp": 1, "pp": 1, "dp": 2}, {"tp": 1, "pp": 1, "dp": 2, "ep": 2}]}
JSON
start --preset "$TMP/ep.json"
CUR=1
wait_for "Preview: 4 points"
wait_for "valid: F5 launches"
[ "$(value_of "TPxPPxDP configs")" = "1x1x2,1x1x2x2" ] || fail "EP configs field: $(value_of "TPxPPxDP configs")"
[ "$(screen | grep -cE ' 1x1x2x2 +[12] ')" = 2 ] || { screen >&2; fail "preview rows of the EP 2 config"; }
[ "$(screen | grep -cE ' 1x1x2 +[12] ')" = 2 ] || { screen >&2; fail "preview rows of the EP 1 config"; }
CONFIGS=9
go $CONFIGS; keys C-u; keys -l "1x1x2x2"
wait_for "Preview: 2 points"
[ "$(screen | grep -cE ' 1x1x2x2 +[12] ')" = 2 ] || { screen >&2; fail "preview rows of a typed EP config"; }
keys Escape; wait_for "No runs yet"
quit_and_check
PDBX_CONFIGS="$SRC/configs" "$PDBX" plan "$TMP/ep.json" > "$TMP/plan.txt" || fail "pdbx plan of the EP preset"
grep -qx "TP 1  PP 1  DP 2  EP 2  (2 ranks; GB per rank: profile, then training)" "$TMP/plan.txt" \
    || fail "pdbx plan EP heading: $(grep '^TP' "$TMP/plan.txt")"
# `pdbx run` launches through the same check: refused with the engine's line, no failed run
if ! "$ENGINE" --check cpu bf16 >/dev/null 2>&1; then
    "$PDBX" run quick --dtype bf16 --store "$TMP/cli" >/dev/null 2>"$TMP/err" && fail "pdbx run with bf16 started"
    grep -q "^pdbx run: dtype: bf16 needs cblas_sbgemm" "$TMP/err" || fail "pdbx run bf16: $(cat "$TMP/err")"
    [ -z "$(ls "$TMP/cli/runs" 2>/dev/null)" ] || fail "pdbx run left a failed run behind: $(ls "$TMP/cli/runs")"
fi
# the check's own arguments: one line naming them, exit 2
"$ENGINE" --check cpu >"$TMP/out"; [ $? -eq 2 ] || fail "--check with one argument: exit status"
grep -q "needs BACKEND DTYPE" "$TMP/out" || fail "--check usage line: $(cat "$TMP/out")"
"$ENGINE" --check gpu fp32 >"$TMP/out"; [ $? -eq 2 ] || fail "--check gpu: exit status"
grep -q "backend" "$TMP/out" || fail "--check gpu: $(cat "$TMP/out")"
echo PASS
