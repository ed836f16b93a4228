#!/usr/bin/env bash
# pdbx-engine with real mpirun at 1, 2 and 4 ranks on tiny specs: every planned point ends ok,
# every op cell has its stats, comm/coll events carry bandwidths, TP=2 GEMMs do half of TP=1's
# FLOPs per rank, and a plan mixing rank counts is finished by a second launch (same run id).
source "$(dirname "$0")/engine_common.inc"

# ---- 1 rank ----
tiny_spec "$TMP/s1.json" 'configs=[{"tp":1,"pp":1,"dp":1}]'
mpirun_np 1 "$ENGINE" --spec "$TMP/s1.json" --store "$TMP/st1" >"$TMP/out1" 2>"$TMP/err1" || { cat "$TMP/err1"; fail "1 rank run"; }
f=$(run_file "$TMP/st1"); [ -n "$f" ] || fail "no run file"
ev_py "$f" '
S = [e for e in E if e["type"] == "run_start"][0]
assert S["world_size"] == 1 and len(S["points"]) == 2, S["points"]
assert S["env"]["blas_threads"] >= 1 and S["env"]["mpi"].startswith("Open MPI"), S["env"]
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
ends = [e for e in E if e["type"] == "point_end"]
assert [e["status"] for e in ends] == ["ok", "ok"], ends
ops = [e for e in E if e["type"] == "op" and e["point"] == 0]
names = {e["op"] for e in ops}
want = {"embed","input_norm","attn_q","attn_k","attn_v","attn_rope","attn_core","attn_o",
        "attn_residual","post_attn_norm","mlp_gate","mlp_up","mlp_act_fn","mlp_down","mlp_residual",
        "final_norm","lm_head"}
assert names == want, names ^ want            # no TP all-reduce at TP 1
for e in ops:
    st = e["stats"]
    per_layer = e["op"] not in ("embed", "final_norm", "lm_head")
    pooled = e["op"] in ("attn_k", "attn_v", "mlp_gate", "mlp_up", "attn_residual", "mlp_residual")   # pairs share one cell
    assert st["count"] == (2 * 2 * (2 if pooled else 1) if per_layer else 2), (e["op"], st)
    assert 0 < st["min"] <= st["median"] <= st["max"] and st["std"] >= 0, (e["op"], st)
    assert len(e["ranks"]) == 1 and e["ranks"][0] == st
    if e["op"].startswith(("attn_q", "mlp_", "lm_head")) and e["op"] != "mlp_act_fn":
        assert e["flops"] > 0, e
tr = [e for e in E if e["type"] == "trace" and e["point"] == 1]
assert len(tr) == 1 and len(tr[0]["ops"]) == 3 + 2 * 14, len(tr[0]["ops"])   # 14 layer ops at TP 1
assert all(o[3] > 0 and o[2] >= 0 for o in tr[0]["ops"])
assert any(e["type"] == "progress" for e in E)
' || fail "1 rank events"
grep -q "$(basename "$f" .pdbx)" "$TMP/out1" || fail "run id not printed on stdout"

# ---- 2 ranks: TP2, DP2, PP2 and the collectives sweep ----
tiny_spec "$TMP/s2.json" 'configs=[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1},{"tp":1,"pp":2,"dp":1}]' \
    'mbs="1:2"' 'collectives=true' 'coll_sizes=[4096,65536]'
mpirun_np 2 "$ENGINE" --spec "$TMP/s2.json" --store "$TMP/st2" >/dev/null 2>"$TMP/err2" || { cat "$TMP/err2"; fail "2 rank run"; }
f=$(run_file "$TMP/st2")
ev_py "$f" '
S = [e for e in E if e["type"] == "run_start"][0]
pts = {p["index"]: p for p in S["points"]}
assert len(pts) == 6 and S["world_size"] == 2 and S["ranks_per_node"] == 2
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
assert [e["status"] for e in E if e["type"] == "point_end"] == ["ok"] * 6
def op(point, name):
    return [e for e in E if e["type"] == "op" and e["point"] == point and e["op"] == name][0]
def comm(point, kind):
    c = [e for e in E if e["type"] == "comm" and e["point"] == point and e["kind"] == kind]
    return c[0] if c else None
by = {(p["tp"], p["pp"], p["dp"], p["mbs"]): i for i, p in pts.items()}
t1, t2 = by[(1, 1, 2, 2)], by[(2, 1, 1, 2)]
for g in ("attn_q", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"):
    a, b = op(t1, g), op(t2, g)
    assert abs(b["flops"] * 2 - a["flops"]) < 1e-6 * a["flops"], (g, a["flops"], b["flops"])
    assert len(b["ranks"]) == 2 and len(a["ranks"]) == 1
    # the max across TP ranks is the element-wise max of the per-rank stats
    assert b["stats"]["max"] == max(r["max"] for r in b["ranks"])
    assert b["stats"]["median"] == max(r["median"] for r in b["ranks"])
ar = op(t2, "tp_allreduce_attn")
# both TP all-reduces of every layer and step pool into one cell (same message, same group)
assert ar["stats"]["count"] == 2 * 2 * 2 and ar["bytes"] == 2 * 32 * 256 * 4, ar
c = comm(t2, "tp_allreduce")
assert c and c["group_size"] == 2 and c["bytes"] == 2 * 32 * 256 * 4 and c["busbw"] > 0
assert abs(c["busbw"] - c["algbw"]) < 1e-9 * c["algbw"]          # factor 2(n-1)/n = 1 at n = 2
d = comm(t1, "dp_allreduce"); assert d and d["group_size"] == 2 and d["algbw"] > 0, d
p = comm(by[(1, 2, 1, 1)], "pp_sendrecv"); assert p and p["bytes"] == 32 * 256 * 4, p
assert comm(t1, "tp_allreduce") is None and comm(t2, "dp_allreduce") is None
# the element type each moved: the run dtype (fp32) for TP and PP, fp32 gradients for DP
assert (c["dtype"], p["dtype"], d["dtype"]) == ("fp32", "fp32", "fp32"), (c, p, d)
co = [e for e in E if e["type"] == "coll"]
# all_gather and reduce_scatter in place and out of place; all_to_all out of place; the others
# in place
assert len(co) == 14 and {(e["coll"], e["bytes"], e["nranks"], e["in_place"]) for e in co} == \
       {(c, b, 2, True) for c in ("all_reduce", "all_gather", "reduce_scatter", "send_recv")
        for b in (4096, 65536)} | {(c, b, 2, False) for c in ("all_gather", "reduce_scatter", "all_to_all")
                                   for b in (4096, 65536)}, co
for e in co:
    assert e["stats"]["count"] == 2 and e["algbw"] > 0 and e["ranks_per_node"] == 2
    f = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "send_recv": 1.0, "all_to_all": 0.5}[e["coll"]]
    assert abs(e["busbw"] - f * e["algbw"]) < 1e-9 * e["algbw"], e
assert len([e for e in E if e["type"] == "trace" and e["point"] == t2]) == 2   # one per rank
' || fail "2 rank events"

# ---- 2 ranks, messages split: MPI counts are int, so a message of more than 2^30 floats goes
# as several calls; PDBX_MPI_MAX_COUNT (test use) makes these small messages take that path ----
tiny_spec "$TMP/sx.json" 'configs=[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1},{"tp":1,"pp":2,"dp":1}]' \
    'mbs="1:1"' 'layers=1' 'steps=1' 'collectives=true' 'coll_sizes=[4096,65536]'
PDBX_MPI_MAX_COUNT=1000 mpirun_np 2 -x PDBX_MPI_MAX_COUNT "$ENGINE" --spec "$TMP/sx.json" --store "$TMP/stx" \
    >/dev/null 2>"$TMP/errx" || { cat "$TMP/errx"; fail "2 rank run, split messages"; }
ev_py "$(run_file "$TMP/stx")" '
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
assert [e["status"] for e in E if e["type"] == "point_end"] == ["ok"] * 3
assert {e["kind"] for e in E if e["type"] == "comm"} == {"tp_allreduce", "dp_allreduce", "pp_sendrecv"}
co = [e for e in E if e["type"] == "coll"]
assert len(co) == 14 and all(e["stats"]["count"] == 1 and e["algbw"] > 0 for e in co), co
' || fail "split messages events"

# ---- 4 ranks: TP2 x PP2, TP2 x DP2, TP4; collectives at 2 and 4 ranks ----
tiny_spec "$TMP/s4.json" 'configs=[{"tp":2,"pp":2,"dp":1},{"tp":2,"pp":1,"dp":2},{"tp":4,"pp":1,"dp":1}]' \
    'mbs="1:1"' 'layers=1' 'collectives=true' 'coll_sizes=[65536]' 'gpus_per_node=4'
mpirun_np 4 "$ENGINE" --spec "$TMP/s4.json" --store "$TMP/st4" >/dev/null 2>"$TMP/err4" || { cat "$TMP/err4"; fail "4 rank run"; }
f=$(run_file "$TMP/st4")
ev_py "$f" '
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
assert [e["status"] for e in E if e["type"] == "point_end"] == ["ok"] * 3
q = {e["point"]: e for e in E if e["type"] == "op" and e["op"] == "attn_q"}
assert [len(q[i]["ranks"]) for i in range(3)] == [2, 2, 4]
assert abs(q[2]["flops"] * 2 - q[0]["flops"]) < 1e-6 * q[0]["flops"]
kinds = {(e["point"], e["kind"], e["group_size"]) for e in E if e["type"] == "comm"}
assert kinds == {(0, "tp_allreduce", 2), (0, "pp_sendrecv", 2), (1, "tp_allreduce", 2),
                 (1, "dp_allreduce", 2), (2, "tp_allreduce", 4)}, kinds
ar4 = [e for e in E if e["type"] == "coll" and e["coll"] == "all_reduce" and e["nranks"] == 4][0]
assert abs(ar4["busbw"] - 1.5 * ar4["algbw"]) < 1e-9 * ar4["algbw"]
assert {e["nranks"] for e in E if e["type"] == "coll"} == {2, 4}
assert len([e for e in E if e["type"] == "trace" and e["point"] == 2]) == 4
' || fail "4 rank events"

# ---- one plan, two rank counts: launch 1 leaves the run open, launch 2 completes it ----
tiny_spec "$TMP/sm.json" 'configs=[{"tp":1,"pp":1,"dp":1},{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"'
id=2026-01-01__00-00-00_e2e00001
mpirun_np 1 "$ENGINE" --spec "$TMP/sm.json" --store "$TMP/stm" --run-id $id >/dev/null 2>"$TMP/errm" || { cat "$TMP/errm"; fail "mixed launch 1"; }
f="$TMP/stm/runs/$id.pdbx"
ev_py "$f" 'assert not any(e["type"] == "run_end" for e in E), "launch 1 must not end the run"' || fail "launch 1 ended the run"
grep -q -- "--run-id $id" "$TMP/errm" || fail "launch 1 does not say how to continue"
mpirun_np 2 "$ENGINE" --spec "$TMP/sm.json" --store "$TMP/stm" --run-id $id >/dev/null 2>"$TMP/errm2" || { cat "$TMP/errm2"; fail "mixed launch 2"; }
ev_py "$f" '
types = [e["type"] for e in E]
assert types.count("run_start") == 1 and types.count("launch") == 1, types
L = [e for e in E if e["type"] == "launch"][0]
assert L["world_size"] == 2 and L["configs"] == [[2, 1, 1]], L
assert [e["point"] for e in E if e["type"] == "point_end"] == [0, 1]
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete"
' || fail "mixed launches"
echo "PASS"
