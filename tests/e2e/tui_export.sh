#!/usr/bin/env bash
# Explorer export dialog through tmux: NPZ with pure attribution into a chosen directory; the
# report lists the files; numpy reads them and finds the fixture's numbers. CSV and trace too.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
make_run "$A"
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
keys e; wait_for "FASOP model tag"
screen | grep -q "llama1b" || fail "model tag not prefilled"
screen | grep -q "A100" || fail "GPU tag not prefilled"
golden_sizes tui_export_dialog "FASOP model tag"
# directory field is selected: replace it, then attribution -> pure
keys C-u; keys -l "$TMP/out"
keys Down Down Down Right
wait_for "pure (each op alone)"
keys Enter
wait_for "files written:"
wait_for "llama1b_A100_2.npz"
golden tui_export_npz
"$PY" - "$TMP/out" <<'PY' || fail "numpy check of the NPZ files"
import sys, numpy as np
d = sys.argv[1]
for tp in (1, 2):
    a = np.load(f"{d}/llama1b_A100_{tp}.npz")["data"]
    assert a.shape == (4, 10), a.shape
    assert a.dtype == np.float64
    # pure attribution: column 1 is attn_q alone, (1.0 + 0.9 (MBS-1)) / TP ms
    want = np.array([1.0, 1.9, 3.7, 7.3]) / tp
    assert np.allclose(a[:, 1], want), (a[:, 1], want)
    assert (a > 0).all()
print("npz ok")
PY
# CSV: format choice, same directory
keys Up Up Up Up Right
wait_for "csv (Vidur)"
keys Enter
wait_for "mlp.csv"
[ -s "$TMP/out/mlp.csv" ] || fail "mlp.csv not written"
keys Right; wait_for "trace (Chrome JSON)"
keys Enter
wait_for ".trace.json"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['traceEvents'] if isinstance(d,dict) else d; assert len(e)>0" \
    "$TMP/out/$A.trace.json" || fail "trace JSON"
# an unwritable directory is a one-line error, not a crash
keys Down C-u; keys -l "/proc/pdbx-no"; keys Up Left Left; wait_for "npz (FASOP)"
keys Enter; wait_for "cannot create"
keys Escape; wait_for "view: table (ms)"
quit_and_check
echo PASS
