#!/usr/bin/env bash
# The pass selector and the noise marks in the explorer through tmux, on a crafted run with
# backward cells (tests/fixtures/tui_fixture.py --bwd): p cycles fwd -> bwd -> both in the run
# view (values from the fixture: attn_q at TP 1 is 1.00 1.90 3.70 7.30 ms forward, twice that
# backward), the bwd/fwd column, the noisy mark '!' with its legend, the load on the info line,
# the cells view (n, CI, CV, provenance, GPU clocks), the export dialog's pass (NPZ meta.json),
# compare's pass and load note, and the
# status message p gives on a forward-only run. Goldens at 80x24 and 200x50.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
W=2026-11-21__10-00-00_bbbb0001
make_run "$A" --t0 1795168800
make_run "$W" --t0 1795255200 --bwd
start
wait_for "2 runs"
# the runs list marks the run measured under load (and only it)
wait_for "complete !load"
[ "$(screen | grep -c '!load')" -eq 1 ] || fail "runs list: expected one run marked !load"
# newest first: the bwd run
keys Enter; wait_for "view: table (ms)  stat: mean  pass: fwd"
wait_for "bwd/fwd"
screen | grep -E '^ attn_q +1\.00 +1\.90 +3\.70 +7\.30 +2\.00 *$' >/dev/null || fail "fwd attn_q row with bwd/fwd 2.00"
screen | grep -E '^ mlp_act_fn +0\.300 +0\.500! +0\.900 +1\.70 +1\.50 *$' >/dev/null || fail "noisy mlp_act_fn at MBS 2"
screen | grep -F '! CV > 5%' >/dev/null || fail "no noisy legend"
golden_sizes tui_pass_fwd "pass: fwd"
keys p; wait_for "pass: bwd (layer and total are forward: N/A)"
screen | grep -E '^ attn_q +2\.00 +3\.80 +7\.40 +14\.6 +2\.00 *$' >/dev/null || fail "bwd attn_q row"
screen | grep -E '^ layer +N/A +N/A +N/A +N/A' >/dev/null || fail "bwd: layer not N/A"
keys p; wait_for "pass: both (fwd + bwd per op"
screen | grep -E '^ attn_q +3\.00 +5\.70 +11\.1 +21\.9 +2\.00 *$' >/dev/null || fail "both attn_q row"
golden_sizes tui_pass_both "pass: both"
# TP 2: MBS 4 and 8 measured under load; the info line says so (whole at 200 columns)
keys Tab; wait_for "tp_allreduce_attn"
wait_for "measured under load: 2 of 8 points"
keys p; wait_for "view: table (ms)  stat: mean  pass: fwd"
# the cells view: provenance, CI, CV, the point's load and GPU figures
keys v v v v v v; wait_for "cells (n, CI, CV, source)"
wait_for "MBS 1 point 4 ok, setup 0.05 s; quiet: others 0.1/2 cores, load 0.40, steal 0%"
wait_for "gpu: SM clock 1410-1980 MHz, max 83 C, throttle: sw_power_cap, sw_thermal"
screen | grep -E '^ attn_v +6 +0\.150 +1\.0% +2\.0% +2\.00  shared with attn_k *$' >/dev/null || fail "attn_v shared with attn_k"
screen | grep -E '^ tp_allreduce_attn +6 ' >/dev/null || fail "a 17-letter op name runs into its count"
golden_sizes tui_pass_cells "cells (n, CI, CV, source)"
keys End
for i in $(seq 1 40); do keys Down; done
wait_for "MBS 8 point 7 ok, setup 0.40 s; BUSY: others 1.8/2 cores, load 2.90, steal 0%"
# the export dialog of a run with backward cells has the NPZ's pass: both is said in meta.json
keys e; wait_for "fwd (what FASOP reads)"
keys C-u; keys -l "$TMP/npz"
keys Down Down Down Down Down Right; wait_for "both (fwd + bwd per cell)"
keys Enter; wait_for "files written:"
wait_for "llama1b_A100_2.npz"
"$PY" -c 'import json, sys, zipfile; m = json.loads(zipfile.ZipFile(sys.argv[1]).read("meta.json")); assert m["pass"] == "both", m["pass"]' \
    "$TMP/npz/llama1b_A100_2.npz" || fail "the dialog's NPZ does not say pass both"
keys Escape; wait_for "view: cells"
keys Escape; wait_for "2 runs"
# compare A (forward only, quiet) with the bwd run: the load beside the verdicts; p refused
keys Space; wait_for "marked $W"
keys j c; wait_for "A and B (ms), B/A of the mean"
wait_for "A measured under load (2 of 8 points)"
screen | grep -F "A: $W Llama-3.2-1B TP1 PP1 DP2  (under load)" >/dev/null || fail "compare: A not marked under load"
keys p; wait_for "pass: 'bwd' needs backward cells in both runs; B measured forward only (allowed: fwd)"
golden_sizes tui_pass_compare "B/A of the mean"
keys Escape; wait_for "2 runs"
# the forward-only run: p is refused with a status message, nothing changes
keys j Enter; wait_for "view: table (ms)  stat: mean"
keys e; wait_for "FASOP model tag"
screen | grep -qE '^  pass ' && fail "the export dialog of a forward-only run offers a pass"
keys Escape; wait_for "view: table (ms)  stat: mean"
keys p; wait_for "pass: 'bwd' needs backward cells; this run measured forward only (allowed: fwd)"
screen | grep -F "pass:" | grep -vF "needs backward" && fail "a forward-only run shows a pass"
screen | grep -F "bwd/fwd" | grep -vF "needs backward" && fail "a forward-only run shows bwd/fwd"
keys Escape; wait_for "2 runs"
quit_and_check
echo PASS
