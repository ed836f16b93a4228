#!/usr/bin/env bash
# suite: serial: lm_head's backward is asserted at 1.5-3x its forward by time
# Adaptive repetition, pooled samples and measure-once, through the real engine (2 ranks):
#  - every op cell of an adaptive sweep has at least min_reps samples and a CI, and either
#    reached target_rel_ci or stopped at a bound (max_reps, or max_seconds_per_op: its samples
#    then took at least that long);
#  - attn_v carries attn_k's cell, mlp_up mlp_gate's and mlp_residual attn_residual's, marked shared_with;
#  - the second config (TP1 PP2 DP1) has the first's (TP1 PP1 DP2) shapes: its points take the
#    compute cells of the first config's points of the same MBS (reused_from, the same stats),
#    prepare no compute buffers (setup_s absent) and measure their own PP send/recv;
#  - a fixed sweep still takes warmup + steps whole steps (count = steps x layers);
#  - passes fwd,bwd: every op gets a bwd cell (its flops at least twice the forward's; RoPE's
#    and the residual adds' equal to it) and
#    lm_head's backward (dgrad + wgrad, two GEMMs of its size) measures 1.5 to 3 times its forward.
source "$(dirname "$0")/engine_common.inc"
tiny_spec "$TMP/a.json" 'repetition="adaptive"' 'target_rel_ci=0.05' 'min_reps=4' 'max_reps=400' \
    'max_seconds_per_op=0.2' 'warmup=2' 'steps=1' \
    'configs=[{"tp":1,"pp":1,"dp":2},{"tp":1,"pp":2,"dp":1}]'
phase "adaptive sweep, 2 ranks, 2 configs"
mpirun_np 2 "$ENGINE" --spec "$TMP/a.json" --store "$TMP/st" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run"; }
ev_py "$(run_file "$TMP/st")" '
S = [e for e in E if e["type"] == "run_start"][0]
sp = S["spec"]
assert sp["repetition"] == "adaptive" and sp["passes"] == ["fwd"], sp
pts = {p["index"]: p for p in S["points"]}
ends = {e["point"]: e for e in E if e["type"] == "point_end"}
assert len(ends) == 4 and all(e["status"] == "ok" for e in ends.values()), ends
ops = {}
for e in E:
    if e["type"] == "op":
        ops[(e["point"], e["op"])] = e
first = [i for i, p in pts.items() if p["pp"] == 1]
second = [i for i, p in pts.items() if p["pp"] == 2]
bounded = 0
for i in first:
    assert ends[i]["setup_s"] > 0, ends[i]
    for (p, op), e in ops.items():
        if p != i: continue
        st = e["stats"]
        assert st["count"] >= sp["min_reps"], (op, st)
        rel = st["ci95"] / st["mean"]
        # why rank 0 stopped sampling it, and that the reason holds: its CI within the target,
        # max_reps samples, or (two samples and) max_seconds_per_op of wall time, which a
        # loaded machine spends also between samples, so the sum of the samples may be less
        stop = e.get("stop")
        assert stop in ("ci", "max_reps", "max_time"), ("no stop reason", p, op, e)
        if stop == "max_reps":
            assert st["count"] >= sp["max_reps"], (p, op, st)
        elif stop == "max_time":
            assert st["count"] >= 2, (p, op, st)
        # "ci": rank 0 converged (the stored statistics are the slowest rank per statistic,
        # so their CI may be a little wider); its count is at least min_reps (checked above)
        bounded += stop != "ci"
    for a, b in (("attn_v", "attn_k"), ("mlp_up", "mlp_gate"), ("mlp_residual", "attn_residual")):
        assert ops[(i, a)].get("shared_with") == b and ops[(i, a)]["stats"] == ops[(i, b)]["stats"], a
        assert "shared_with" not in ops[(i, b)]
print("adaptive: %d cells, %d stopped at a bound (max_reps or max_time)" %
      (sum(1 for (p, _) in ops if p in first), bounded))
for j in second:
    src = [i for i in first if pts[i]["mbs"] == pts[j]["mbs"]][0]
    assert "setup_s" not in ends[j], ends[j]
    for (p, op), e in ops.items():
        if p != j: continue
        assert e.get("reused_from") == src, (j, op, e.get("reused_from"))
        assert e["stats"] == ops[(src, op)]["stats"], (j, op)
    assert any(e["type"] == "comm" and e["point"] == j and e["kind"] == "pp_sendrecv" for e in E), j
    assert not any(e["type"] == "comm" and e["point"] == src and e["kind"] == "pp_sendrecv" for e in E)
print("measure once: points", second, "reuse", first)
' || fail "adaptive sweep"

phase "fixed sweep: whole steps"
tiny_spec "$TMP/f.json" 'warmup=1' 'steps=3' 'mbs="1:1"'
mpirun_np 1 "$ENGINE" --spec "$TMP/f.json" --store "$TMP/sf" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (fixed)"; }
ev_py "$(run_file "$TMP/sf")" '
S = [e for e in E if e["type"] == "run_start"][0]
L = S["spec"]["layers"]
for e in E:
    if e["type"] == "op":
        want = 3 * L * (2 if e["op"] in ("attn_k", "attn_v", "mlp_gate", "mlp_up",
                                               "attn_residual", "mlp_residual") else 1) \
               if e["op"] not in ("embed", "final_norm", "lm_head") else 3
        assert e["stats"]["count"] == want, (e["op"], e["stats"]["count"], want)
print("fixed: counts = steps x layers (x2 for the pooled pairs)")
' || fail "fixed counts"

phase "backward: every op's bwd cell, lm_head bwd about twice its forward"
tiny_spec "$TMP/b.json" 'passes=["fwd","bwd"]' 'mbs="1:1"' 'repetition="adaptive"' 'target_rel_ci=0.05' \
    'min_reps=5' 'max_seconds_per_op=0.3'
mpirun_np 1 "$ENGINE" --spec "$TMP/b.json" --store "$TMP/sb" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (bwd)"; }
tiny_spec "$TMP/l.json" 'passes=["fwd","bwd"]' 'mbs="1:1"' 'model="tinyllama"' 'seq_len=32' 'ops=["lm_head"]' \
    'warmup=1' 'steps=7'
mpirun_np 1 "$ENGINE" --spec "$TMP/l.json" --store "$TMP/sl" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (lm_head bwd)"; }
ev_py "$(run_file "$TMP/sb")" '
fwd = {e["op"]: e for e in E if e["type"] == "op" and e.get("pass", "fwd") == "fwd"}
bwd = {e["op"]: e for e in E if e["type"] == "op" and e.get("pass") == "bwd"}
# every op but the optimizer, whose one cell is the step (docs/engine.md)
assert "optimizer" in fwd and "loss" in fwd and set(bwd) == set(fwd) - {"optimizer"}, set(fwd) ^ set(bwd)
for op, e in bwd.items():
    assert e["stats"]["count"] >= 5 and e["stats"]["mean"] > 0, (op, e["stats"])
    # RoPE and the residual adds: one inverse rotation, one add: the work of their forward
    once = op in ("attn_rope", "attn_residual", "mlp_residual")
    assert e["flops"] == fwd[op]["flops"] if once else e["flops"] >= 2 * fwd[op]["flops"], op
print("bwd cells:", len(bwd))
' || fail "bwd cells"
ev_py "$(run_file "$TMP/sl")" '
f = [e for e in E if e["type"] == "op" and e["op"] == "lm_head" and e.get("pass", "fwd") == "fwd"][0]["stats"]
b = [e for e in E if e["type"] == "op" and e["op"] == "lm_head" and e.get("pass") == "bwd"][0]["stats"]
r = b["median"] / f["median"]
print("lm_head [32 x 2048] x [2048 x 32000]: fwd %.2f ms, bwd %.2f ms, bwd/fwd %.2f" % (f["median"], b["median"], r))
assert 1.5 <= r <= 3, r
' || fail "lm_head bwd/fwd"
echo PASS
