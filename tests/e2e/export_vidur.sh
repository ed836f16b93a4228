#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# `pdbx export RUN --csv DIR` for Vidur (issue 14): a real sweep (pdbx-engine on 2 MPI ranks, the
# tiny Llama-shaped model, TP 1 x DP 2 and TP 2, MBS 1..8 at seq_len 41) with the inference
# phase's tokens grid (16..512 step 16) and kv_cache grid (prefill chunks x prefixes, decode
# batches 1..12 x kv 16..128), exported and checked:
#  0. pdbx show has the inference phase's section (a line per TP degree: its rows);
#  1. statically, with /usr/bin/python3's csv module: mlp.csv holds the tokens rows (num_tokens =
#     T, Vidur's 8 keys, no empty median in the 9 ops Vidur trains, attn_rope and add included),
#     attention.csv Vidur's 11 keys with prefill rows (batch 1, chunk > 0) and decode rows
#     (chunk 0, kv > 0) whose medians are the run's infer_attn events, all_reduce.csv the
#     collectives sweep only (size = 2 x elements, none of the points' own traffic);
#  2. when VIDUR_SRC names a checkout of microsoft/vidur and `import pandas, sklearn, fasteners`
#     works: Vidur's own RandomForrestExecutionTimePredictor (tests/e2e/vidur_driver.py) trains
#     every model per TP degree, and predicts the held-out MBS points (num_tokens 164 and 328 of MBS 4 and 8:
#     not in the tokens grid) for attn_pre_proj and mlp_up_proj, and attn_decode at batch 6
#     (removed from attention.csv before training): the mean absolute percentage error over the
#     held-out points of each (TP, model) within MAX_MAPE (VIDUR_MAX_MAPE, default 35%) of the
#     measured medians.
#     Otherwise a SKIP line says why, and the static checks still decide.
source "$(dirname "$0")/engine_common.inc"
MAX_MAPE=${VIDUR_MAX_MAPE:-35}

tiny_spec "$TMP/spec.json" 'layers=1' 'seq_len=41' 'gpus_per_node=2' \
    'configs=[{"tp":1,"pp":1,"dp":2},{"tp":2,"pp":1,"dp":1}]' 'mbs="1:8"' 'warmup=1' 'steps=7' \
    'collectives=true' 'coll_sizes=[4096,65536]' 'predict_oom=false' 'tokens="16:512:16"' \
    'kv_cache={"prefill_chunks":[16,32,64,128],"prefill_kv":[0,32,64,128],"decode_batch":"1:12:1","decode_kv":[16,32,64,128],"max_kv":256}'
# pdbx plan says what the inference phase will measure
"$PDBX" plan "$TMP/spec.json" >"$TMP/plan.out" 2>&1 || fail "pdbx plan: $(cat "$TMP/plan.out")"
grep -qx 'inference phase: per TP degree (2 of them), 32 tokens rows (16..512 tokens) and 64 attention rows with a KV cache (max_kv 256)' \
    "$TMP/plan.out" || fail "pdbx plan's inference line: $(grep inference "$TMP/plan.out")"
# measure N: one sweep into store N, exported to csv N and checked statically; leaves train N
# (the files Vidur trains on) and held N.json (the held-out points) for the consumer.
measure() {
    mpirun_np 2 "$ENGINE" --spec "$TMP/spec.json" --store "$TMP/store$1" >/dev/null 2>"$TMP/engine.err" \
        || fail "pdbx-engine run: $(tail -n 5 "$TMP/engine.err")"
    RUNFILE=$(run_file "$TMP/store$1")
    ID=$(basename "$RUNFILE" .pdbx)
    PDBX_STORE="$TMP/store$1" "$PDBX" export "$ID" --csv "$TMP/csv$1" >"$TMP/export.out" 2>"$TMP/export.err" \
        || fail "pdbx export --csv: $(cat "$TMP/export.err")"
    grep -q 'attention.csv$' "$TMP/export.out" || fail "attention.csv not written: $(cat "$TMP/export.out")"
    events "$RUNFILE" >"$TMP/events$1.jsonl"
    # pdbx show: the inference phase's short section, one line per TP degree
    PDBX_STORE="$TMP/store$1" "$PDBX" show "$ID" >"$TMP/show" 2>&1 || fail "pdbx show: $(cat "$TMP/show")"
    grep -q '^inference phase (one TP shard, forward' "$TMP/show" || fail "show lacks the inference phase: $(cat "$TMP/show")"
    grep -Eq '^ +2 +32 \(16\.\.512 tokens\) .* 16, .* 48, ' "$TMP/show" \
        || fail "show's TP 2 inference line: $(grep -A4 '^inference' "$TMP/show")"

    "$PY" - "$TMP" "$1" <<'PYEOF' || fail "the CSVs are not what Vidur reads"
import csv, json, math, os, sys
tmp, n = sys.argv[1], sys.argv[2]
dec, s, E, i = json.JSONDecoder(), open(f"{tmp}/events{n}.jsonl").read(), [], 0
while i < len(s):
    while i < len(s) and s[i] in " \n\r\t":
        i += 1
    if i < len(s):
        o, i = dec.raw_decode(s, i)
        E.append(o)
def table(name):
    with open(f"{tmp}/csv{n}/{name}", newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, [dict(zip(header, row)) for row in r]

# ---- mlp.csv: the tokens rows ----
header, rows = table("mlp.csv")
keys = ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
        "num_tensor_parallel_workers"]
assert header[-8:] == keys, header[-8:]
trained = ["attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "mlp_act", "input_layernorm",
           "post_attention_layernorm", "attn_rope", "add"]
for op in trained + ["emb"]:
    for st in ("min", "max", "mean", "median", "std"):
        assert f"time_stats.{op}.{st}" in header, (op, st)
tok = [e for e in E if e["type"] == "infer_tokens"]
grid = list(range(16, 513, 16))
assert sorted({(e["tp"], e["tokens"]) for e in tok}) == [(t, T) for t in (1, 2) for T in grid], "tokens rows"
assert len(rows) == len(tok) == 64, (len(rows), len(tok))
by = {(e["tp"], e["tokens"]): e["ops"] for e in tok}
for r in rows:
    for op in trained:
        assert r[f"time_stats.{op}.median"] != "", (op, r["num_tokens"])
    assert r["use_gated_mlp"] == "True" and r["n_head"] == "8" and r["n_kv_head"] == "4", r
    ops = by[(int(r["num_tensor_parallel_workers"]), int(r["num_tokens"]))]
    assert "attn_core" not in ops and "tp_allreduce_attn" not in ops and "tp_allreduce_mlp" not in ops, ops
    want = sum(ops[o]["median"] for o in ("attn_q", "attn_k", "attn_v"))
    assert math.isclose(float(r["time_stats.attn_pre_proj.median"]), want, rel_tol=1e-9)
    assert math.isclose(float(r["time_stats.attn_rope.median"]), ops["attn_rope"]["median"], rel_tol=1e-9)
    assert math.isclose(float(r["time_stats.add.median"]), ops["mlp_residual"]["median"], rel_tol=1e-9)

# ---- attention.csv ----
header, rows = table("attention.csv")
akeys = ["n_embd", "n_q_head", "n_kv_head", "block_size", "num_tensor_parallel_workers", "max_model_len",
         "batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill", "attention_backend"]
assert header[-11:] == akeys, header
att = {(e["tp"], e["batch"], e["chunk"], e["kv"]): e for e in E if e["type"] == "infer_attn"}
assert len(rows) == len(att) > 0, (len(rows), len(att))
pre = [r for r in rows if r["is_prefill"] == "True"]
dec_ = [r for r in rows if r["is_prefill"] == "False"]
assert pre and dec_
for r in pre:
    C, P = int(r["prefill_chunk_size"]), int(r["kv_cache_size"])
    assert r["batch_size"] == "1" and C > 0 and C + P <= 256 and r["time_stats.attn_decode.median"] == "", r
for r in dec_:
    assert r["prefill_chunk_size"] == "0" and int(r["kv_cache_size"]) > 0 and r["time_stats.attn_prefill.median"] == "", r
for r in rows:
    assert r["block_size"] == "16" and r["max_model_len"] == "256" and r["n_q_head"] == "8", r
    e = att[(int(r["num_tensor_parallel_workers"]), int(r["batch_size"]), int(r["prefill_chunk_size"]),
             int(r["kv_cache_size"]))]
    col = "attn_prefill" if e["chunk"] > 0 else "attn_decode"
    assert math.isclose(float(r[f"time_stats.{col}.median"]), e["stats"]["median"], rel_tol=1e-9)
    assert e["heads"] == 8 // e["tp"] and e["kv_heads"] == 4 // e["tp"], e
# prefill grows with the chunk, decode with the batch (a real kernel, not a constant)
def med(tp, b, c, k):
    return att[(tp, b, c, k)]["stats"]["median"]
assert med(1, 1, 128, 128) > 2 * med(1, 1, 16, 128), "prefill time does not grow with the chunk"
assert med(1, 12, 0, 128) > 2 * med(1, 1, 0, 128), "decode time does not grow with the batch"

# ---- all_reduce.csv: the sweep only, Vidur's size ----
header, rows = table("all_reduce.csv")
sweep = [e for e in E if e["type"] == "coll" and e["coll"] == "all_reduce"]
assert len(rows) == len(sweep) > 0, (len(rows), len(sweep))
assert sorted(float(r["size"]) for r in rows) == sorted(2 * (e["bytes"] // 4) for e in sweep), "size"
step = {e["bytes"] for e in E if e["type"] == "comm"}
assert all(r["collective"] == "all_reduce" for r in rows)

# ---- held-out points for the consumer: MBS points not in the tokens grid, decode batch 6 ----
points = {e["point"]: e for e in E if e["type"] == "point_start"}
ok = {e["point"] for e in E if e["type"] == "point_end" and e["status"] == "ok"}
ops = {(e["point"], e["op"]): e["stats"]["median"] for e in E if e["type"] == "op" and e.get("pass", "fwd") == "fwd"}
held = {"mlp": [], "attn_decode": []}
for p, pt in sorted(points.items()):
    N = pt["mbs"] * 41
    if p not in ok or N in grid or pt["mbs"] < 4:
        continue
    held["mlp"].append({"tp": pt["tp"], "num_tokens": N,
                        "attn_pre_proj": sum(ops[(p, o)] for o in ("attn_q", "attn_k", "attn_v")),
                        "mlp_up_proj": ops[(p, "mlp_gate")] + ops[(p, "mlp_up")]})
assert len(held["mlp"]) == 4, held["mlp"]
os.makedirs(f"{tmp}/train{n}", exist_ok=True)
for name in ("mlp.csv", "all_reduce.csv", "send_recv.csv"):
    open(f"{tmp}/train{n}/{name}", "w").write(open(f"{tmp}/csv{n}/{name}").read())
with open(f"{tmp}/csv{n}/attention.csv", newline="") as f, open(f"{tmp}/train{n}/attention.csv", "w", newline="") as g:
    r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
    h = next(r)
    w.writerow(h)
    for row in r:
        d = dict(zip(h, row))
        if d["prefill_chunk_size"] == "0" and d["batch_size"] == "6":
            held["attn_decode"].append({"tp": int(d["num_tensor_parallel_workers"]), "batch": 6,
                                        "kv": int(d["kv_cache_size"]),
                                        "ms": float(d["time_stats.attn_decode.median"])})
        else:
            w.writerow(row)
assert len(held["attn_decode"]) == 8, held["attn_decode"]
json.dump(held, open(f"{tmp}/held{n}.json", "w"))
print(f"static: mlp.csv 64 tokens rows, attention.csv {len(att)} rows, all_reduce.csv {len(sweep)} sweep rows")
PYEOF

}

measure 1
# ---- Vidur's own code, where it can run ----
if [ -n "${ASAN_OPTIONS:-}" ]; then
    # the sanitizer build: the C paths above ran under ASan; the consumer is Python and the same
    # files, trained and timed in the plain build
    echo "SKIP (consumer): sanitizer build; Vidur's predictors run in the plain build (static checks passed)"
elif [ -z "${VIDUR_SRC:-}" ] || [ ! -f "${VIDUR_SRC}/vidur/execution_time_predictor/sklearn_execution_time_predictor.py" ]; then
    echo "SKIP (consumer): VIDUR_SRC does not name a checkout of microsoft/vidur; Vidur's predictors were not run (static checks passed)"
elif ! "$PY" -c 'import pandas, sklearn, fasteners' 2>/dev/null; then
    echo "SKIP (consumer): $PY lacks pandas, sklearn or fasteners (Debian: python3-pandas python3-sklearn python3-fasteners); Vidur's predictors were not run (static checks passed)"
else
    # The box is shared: a load spike during a row spoils its median. A MAPE over the limit
    # (exit 3; a model that does not train is exit 1 and fails at once) is measured once more
    # in a fresh sweep, and fails when it is over the limit again.
    for n in 1 2; do
        [ $n -eq 1 ] || measure $n
        mkdir -p "$TMP/vidur$n"
        (cd "$TMP/vidur$n" && "$PY" "$PDBX_SOURCE_DIR/tests/e2e/vidur_driver.py" "$VIDUR_SRC" "$TMP/train$n" \
            "$TMP/vidur$n" "$TMP/held$n.json" "$MAX_MAPE") >"$TMP/vidur$n.out" 2>"$TMP/vidur$n.err"
        rc=$?
        grep -v -e '^$' -e '^INFO' "$TMP/vidur$n.out"
        [ $rc -eq 0 ] && break
        [ $rc -eq 3 ] && [ $n -eq 1 ] && { echo "note: a held-out MAPE over ${MAX_MAPE}%: measuring once more"; continue; }
        fail "Vidur's predictors on the export (exit $rc): $(grep -v '^INFO' "$TMP/vidur$n.err" | tail -n 5)"
    done
fi
echo "PASS: Vidur CSVs of a real run with the inference phase"
