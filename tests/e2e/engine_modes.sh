#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# GEMM modes through the real engine on the cpu backend (2 ranks, TP 2):
#  - fused_projections true, passes fwd,bwd, adaptive: attn_q/k/v and mlp_gate/up each have a
#    cell, every one marked fused_with its group's leader and its FLOP share (q 1/2, k and v
#    1/4 at the tiny model's 8 q and 4 kv heads; gate and up 1/2); the cells of a group are one
#    set of samples split by share (each cell / its share is the same fused time, the sum of
#    the means is it) in both passes; the trace has the group's ops back to back;
#  - attn_rope, attn_residual and mlp_residual have cells in both passes (mlp_residual
#    shared_with attn_residual, bwd FLOPs = fwd FLOPs) and the trace runs a layer's ops in
#    forward order, rope after attn_v, each residual add after its TP all-reduce;
#  - the fused buffers are the planner's: the measured peak is within 15% of the profile memory;
#  - run_start's env records fp32_math "ieee" and gemm_api "openblas"; `pdbx show` prints them;
#  - the NPZ's and the CSV's meta.json say "projections": "fused" and how it was attributed;
#  - fp32_math tf32 or gemm_api cublas on backend cpu: exit 2 with one line naming field,
#    value and what cpu allows (from the spec, and for backend auto once it resolved to cpu).
source "$(dirname "$0")/engine_common.inc"
tiny_spec "$TMP/f.json" 'fused_projections=true' 'passes="fwd,bwd"' 'repetition="adaptive"' \
    'target_rel_ci=0.05' 'min_reps=4' 'max_reps=200' 'max_seconds_per_op=0.1' 'warmup=1' 'steps=1' \
    'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"'
phase "fused projections, fwd+bwd, adaptive, TP 2"
mpirun_np 2 "$ENGINE" --spec "$TMP/f.json" --store "$TMP/st" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run"; }
RUN=$(run_file "$TMP/st")
ev_py "$RUN" '
S = [e for e in E if e["type"] == "run_start"][0]
assert S["spec"]["fused_projections"] is True, S["spec"]
assert S["env"]["fp32_math"] == "ieee" and S["env"]["gemm_api"] == "openblas", S["env"]
ends = [e for e in E if e["type"] == "point_end"]
assert ends and all(e["status"] == "ok" for e in ends), ends
ops = {(e["op"], e.get("pass", "fwd")): e for e in E if e["type"] == "op"}
groups = {"attn_q": {"attn_q": 0.5, "attn_k": 0.25, "attn_v": 0.25}, "mlp_gate": {"mlp_gate": 0.5, "mlp_up": 0.5}}
for pas in ("fwd", "bwd"):
    for lead, shares in groups.items():
        fused = None
        for op, share in shares.items():
            e = ops[(op, pas)]
            assert e.get("fused_with") == lead and abs(e["fused_share"] - share) < 1e-12, (op, pas, e)
            assert "shared_with" not in e, e
            st = e["stats"]
            assert st["count"] == ops[(lead, pas)]["stats"]["count"] >= 4, (op, pas, st)
            # one set of samples split by share: every statistic / share is the fused one
            f = {k: st[k] / share for k in ("mean", "min", "max", "median")}
            if fused is None:
                fused = f
            for k in f:
                assert abs(f[k] - fused[k]) <= 1e-9 * fused[k], (op, pas, k, f[k], fused[k])
        total = sum(ops[(op, pas)]["stats"]["mean"] for op in shares)
        assert abs(total - fused["mean"]) <= 1e-9 * fused["mean"], (lead, pas, total, fused)
        print("%s %s: fused %.4f ms = %s" % (pas, lead, fused["mean"],
              " + ".join("%s %.4f" % (op, ops[(op, pas)]["stats"]["mean"]) for op in shares)))
for e in E:
    if e["type"] != "op" or e["op"] in ("attn_q", "attn_k", "attn_v", "mlp_gate", "mlp_up"):
        continue
    assert "fused_with" not in e, e
# attn_rope and the residual adds: measured in both passes (the adaptive loop ran them alone
# too), mlp_residual pooled with attn_residual (one shape, one kernel), and their bwd does the
# work of their fwd again (one inverse rotation, one add)
for pas in ("fwd", "bwd"):
    for op in ("attn_rope", "attn_residual", "mlp_residual"):
        e = ops[(op, pas)]
        assert e["stats"]["count"] >= 4 and e["stats"]["mean"] > 0 and len(e["ranks"]) == 2, (op, pas, e)
        assert e["flops"] == ops[(op, "fwd")]["flops"] > 0 and e["bytes"] == ops[(op, "fwd")]["bytes"], (op, pas, e)
    assert ops[("mlp_residual", pas)].get("shared_with") == "attn_residual", ops[("mlp_residual", pas)]
    assert ops[("mlp_residual", pas)]["stats"] == ops[("attn_residual", pas)]["stats"]
    assert "shared_with" not in ops[("attn_rope", pas)]
print("rope %.4f/%.4f ms, residual add %.4f/%.4f ms (fwd/bwd)" % tuple(
    ops[(op, pas)]["stats"]["mean"] for op in ("attn_rope", "attn_residual") for pas in ("fwd", "bwd")))
tr = [e for e in E if e["type"] == "trace"]
assert tr, "no trace event"
for t in tr:
    ents = t["ops"]
    # one layer in forward order: rope between v and the core, each residual add after its
    # TP all-reduce
    names = [o[0] for o in ents if o[1] == 0]
    assert names == ["input_norm", "attn_q", "attn_k", "attn_v", "attn_rope", "attn_core", "attn_o",
                     "tp_allreduce_attn", "attn_residual", "post_attn_norm", "mlp_gate", "mlp_up",
                     "mlp_act_fn", "mlp_down", "tp_allreduce_mlp", "mlp_residual"], names
    for i, (op, layer, start, dur) in enumerate(ents):
        follow = {"attn_q": ["attn_k", "attn_v"], "mlp_gate": ["mlp_up"]}.get(op)
        if not follow:
            continue
        nxt = ents[i + 1:i + 1 + len(follow)]
        assert [n[0] for n in nxt] == follow, (op, nxt)
        at = start + dur
        for n in nxt:   # back to back: each starts where the previous ended
            assert n[1] == layer and abs(n[2] - at) < 1e-6 * max(1, at), (op, n, at)
            at = n[2] + n[3]
print("trace: %d ranks, fused groups back to back" % len(tr))
' 2>"$TMP/py.err" || { cat "$TMP/py.err"; fail "fused cells"; }

phase "pdbx show header, exports' metadata"
ID=$(basename "$RUN" .pdbx)
PDBX_STORE="$TMP/st" "$PDBX" show "$ID" >"$TMP/show" 2>&1 || { cat "$TMP/show"; fail "pdbx show"; }
grep -q "^gemm: fp32 math ieee, api openblas, projections fused (QKV, fc1; times split by FLOP share)$" "$TMP/show" \
    || { cat "$TMP/show"; fail "show header lacks the gemm line"; }
PDBX_STORE="$TMP/st" "$PDBX" show "$ID" --stats >"$TMP/stats" 2>&1 || { cat "$TMP/stats"; fail "pdbx show --stats"; }
grep -Eq "attn_k .*fused in attn_q x0\.25$" "$TMP/stats" || { cat "$TMP/stats"; fail "--stats source of attn_k"; }
grep -Eq "mlp_up .*fused in mlp_gate x0\.50$" "$TMP/stats" || { cat "$TMP/stats"; fail "--stats source of mlp_up"; }
mkdir -p "$TMP/npz" "$TMP/csv"
PDBX_STORE="$TMP/st" "$PDBX" export "$ID" --npz "$TMP/npz" --csv "$TMP/csv" >"$TMP/exp" 2>&1 || { cat "$TMP/exp"; fail "export"; }
grep -qx "$TMP/csv/meta.json" "$TMP/exp" || { cat "$TMP/exp"; fail "csv meta.json not printed"; }
"$PY" - "$TMP" <<'PYEOF' || fail "export metadata"
import glob, json, sys, zipfile
tmp = sys.argv[1]
npz = glob.glob(tmp + "/npz/*.npz")
assert len(npz) == 1, npz
metas = [json.loads(zipfile.ZipFile(npz[0]).read("meta.json")), json.load(open(tmp + "/csv/meta.json"))]
for m in metas:
    assert m["projections"] == "fused", m
    assert "measured fused, attributed by FLOP share" in m["projections_note"], m
    assert m["fp32_math"] == "ieee" and m["gemm_api"] == "openblas", m
print("meta:", metas[0]["projections_note"][:60], "...")
PYEOF

phase "fused buffers: the measured peak against the profile memory"
# sanitizer build: a small ASan quarantine, as engine_memory.sh says why
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=8"; fi
if [ ! -w /proc/self/clear_refs ]; then
    echo "note: /proc/self/clear_refs is not writable: the RSS peak cannot be reset, memory not checked"
else
tiny_spec "$TMP/m.json" 'fused_projections=true' 'passes="fwd,bwd"' 'configs=[{"tp":1,"pp":1,"dp":1}]' \
    'mbs="4:4"' 'seq_len=256'
mpirun_np 1 "$ENGINE" --spec "$TMP/m.json" --store "$TMP/st_m" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "engine run (memory)"; }
ev_py "$(run_file "$TMP/st_m")" '
e = [e for e in E if e["type"] == "point_end"][0]
pred, peak = e["profile_mem_bytes"], e["mem_peak_bytes"]
print("fused fwd+bwd MBS 4 seq 256: predicted %.1f MiB, measured %.1f MiB, %.3f" % (pred / 2**20, peak / 2**20, peak / pred))
assert e["status"] == "ok" and 0.85 <= peak / pred <= 1.15, e
' || fail "fused memory"
fi

phase "refusals on the cpu backend"
for kv in 'fp32_math="tf32"' 'gemm_api="cublas"'; do
    tiny_spec "$TMP/r.json" "$kv"
    field=${kv%%=*}
    rc=0
    mpirun_np 1 "$ENGINE" --spec "$TMP/r.json" --store "$TMP/st_r" >/dev/null 2>"$TMP/r.err" || rc=$?
    [ "$rc" = 2 ] || { cat "$TMP/r.err"; fail "$field on cpu: exit $rc, expected 2"; }
    grep -q "$field: \".*\" is not available on backend cpu (allowed on cpu: " "$TMP/r.err" \
        || { cat "$TMP/r.err"; fail "$field refusal message"; }
done
# backend auto: refused once it resolved to cpu (a machine with a GPU would resolve to cuda)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    tiny_spec "$TMP/a.json" 'backend="auto"' 'fp32_math="tf32"'
    rc=0
    mpirun_np 1 "$ENGINE" --spec "$TMP/a.json" --store "$TMP/st_a" >/dev/null 2>"$TMP/a.err" || rc=$?
    [ "$rc" = 2 ] || { cat "$TMP/a.err"; fail "auto -> cpu with tf32: exit $rc, expected 2"; }
    grep -q 'fp32_math: "tf32" is not available on backend cpu (allowed on cpu: ieee; tf32 needs backend cuda)' "$TMP/a.err" \
        || { cat "$TMP/a.err"; fail "auto refusal message"; }
    [ -z "$(ls "$TMP/st_a/runs" 2>/dev/null)" ] || fail "a refused run left a run file"
fi
# the CLI's flags (from the field table) reach the same checks: exit 2, one line
rc=0; "$PDBX" plan quick --fp32-math tf32 >/dev/null 2>"$TMP/p.err" || rc=$?
[ "$rc" = 2 ] && grep -qx 'pdbx plan: fp32_math: "tf32" is not available on backend cpu (allowed on cpu: ieee; tf32 needs backend cuda)' "$TMP/p.err" \
    || { cat "$TMP/p.err"; fail "pdbx plan --fp32-math tf32 on cpu: exit $rc"; }
rc=0; "$PDBX" plan quick --fp32-math fast >/dev/null 2>"$TMP/p.err" || rc=$?
[ "$rc" = 2 ] && grep -qx 'pdbx plan: fp32_math: "fast" is not allowed (allowed: ieee, tf32)' "$TMP/p.err" \
    || { cat "$TMP/p.err"; fail "pdbx plan --fp32-math fast: exit $rc"; }
"$PDBX" plan quick --backend cuda --gpu H100-SXM --gemm-api cublas --fp32-math tf32 --fused-projections true \
    >/dev/null 2>"$TMP/p.err" || { cat "$TMP/p.err"; fail "pdbx plan with the cuda modes"; }
echo "PASS: engine_modes"
