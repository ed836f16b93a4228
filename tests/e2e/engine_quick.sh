#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# The quick preset end to end through `pdbx run` (the real supervisor, mpirun at 2 ranks) and
# `pdbx export --npz`, read by numpy: shape (M, 10), rows MBS 1, 2, 4, 8, every value measured.
# Every op has its cell, attn_rope and the residual adds included (mlp_residual shares
# attn_residual's samples), and on every rank the shortest measured layer span holds the sum of
# its per-layer op cells' minimums.
# seq_len and steps are shrunk by CLI overrides so the suite stays fast (under ASan too); the
# full-size quick sweep is timed by bench/sweep_overhead.sh.
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
ST=$TMP/store
"$PDBX" run quick --seq-len 32 --warmup 0 --steps 1 --store "$ST" >"$TMP/id" 2>"$TMP/err" || { cat "$TMP/err"; fail "pdbx run quick"; }
id=$(cat "$TMP/id")
grep -q "complete (8 points)" "$TMP/err" || { cat "$TMP/err"; fail "no completion line"; }
f=$ST/runs/$id.pdbx
ev_py "$f" '
S = [e for e in E if e["type"] == "run_start"][0]
assert S["world_size"] == 2 and S["backend"] == "cpu", S
tps = sorted({p["tp"] for p in S["points"]})
assert len(tps) >= 2, tps
ends = {e["point"]: e["status"] for e in E if e["type"] == "point_end"}
assert len(ends) == len(S["points"]) == 8 and set(ends.values()) == {"ok"}, ends
want = {"embed","input_norm","attn_q","attn_k","attn_v","attn_rope","attn_core","attn_o",
        "attn_residual","post_attn_norm","mlp_gate","mlp_up","mlp_act_fn","mlp_down","mlp_residual",
        "final_norm","lm_head"}
ONCE = ("embed", "final_norm", "lm_head")
for p in S["points"]:
    cells = {e["op"]: e for e in E if e["type"] == "op" and e["point"] == p["index"]}
    need = want | ({"tp_allreduce_attn", "tp_allreduce_mlp"} if p["tp"] > 1 else set())
    assert set(cells) == need, (p, set(cells) ^ need)
    for c in cells.values():
        st = c["stats"]
        assert st["count"] >= 1 and st["mean"] > 0 and len(c["ranks"]) == p["tp"], c
    assert len([e for e in E if e["type"] == "trace" and e["point"] == p["index"]]) == 2
    # measured sums: one layer sample per profiled layer per step, one total per step
    steps = [e for e in E if e["type"] == "step" and e["point"] == p["index"]]
    assert len(steps) == 1, steps
    sv = steps[0]
    L, T = sv["layer"]["stats"], sv["total"]["stats"]
    assert T["count"] == 1 and L["count"] >= 1 and L["count"] % T["count"] == 0, sv
    assert len(sv["layer"]["ranks"]) == len(sv["total"]["ranks"]) == p["tp"], sv
    assert 0 < L["min"] <= L["mean"] <= L["max"] and T["mean"] >= L["max"], sv
    assert all(r["count"] == T["count"] for r in sv["total"]["ranks"]), sv
    # the layer span holds its ops: the span of every layer execution is timed around its ops, so
    # on each rank the shortest span >= the sum of the minimums of every per-layer op cell (attn_rope
    # and the residual adds included; a pooled cell counts once per op that shares it; the
    # adaptive op phase only adds samples, which cannot raise a minimum), less 0.1% of timer
    # rounding. Means would differ by the load of the machine, minimums cannot.
    per_layer = [c for c in cells.values() if c["op"] not in ONCE]
    for r in range(p["tp"]):
        ops_min = sum(c["ranks"][r]["min"] for c in per_layer)
        span = sv["layer"]["ranks"][r]["min"]
        assert span >= 0.999 * ops_min, (p["index"], r, span, ops_min)
    assert cells["mlp_residual"].get("shared_with") == "attn_residual", cells["mlp_residual"]
q = {(p["tp"], p["mbs"]): p["index"] for p in S["points"]}
fl = {e["point"]: e["flops"] for e in E if e["type"] == "op" and e["op"] == "mlp_up"}
for m in (1, 2, 4, 8):
    assert abs(fl[q[(2, m)]] * 2 - fl[q[(1, m)]]) <= 1e-9 * fl[q[(1, m)]]
assert any(e["type"] == "coll" for e in E)
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete"
' || fail "quick run events"
"$PDBX" export "$id" --npz "$TMP/npz" --store "$ST" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "export --npz"; }
"$PY" - "$TMP/npz" <<'PYEOF' || fail "NPZ check"
import glob, json, sys, zipfile
import numpy as np
files = sorted(glob.glob(sys.argv[1] + "/*.npz"))
assert len(files) >= 2, files
for f in files:
    d = np.load(f)["data"]
    assert d.dtype == np.float64 and d.shape == (4, 10), (f, d.dtype, d.shape)
    assert np.all(np.isfinite(d)) and np.all(d > 0), (f, d)
    meta = json.loads(zipfile.ZipFile(f).read("meta.json"))
    assert meta["mbs"] == [1, 2, 4, 8], meta["mbs"]
    print(f.split("/")[-1], d.shape, "row sums (ms):", np.round(d.sum(axis=1), 2).tolist())
PYEOF
echo PASS
