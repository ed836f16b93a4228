#!/usr/bin/env bash
# suite: both builds: the release engine's sweep exported (NPZ, CSV, trace) and read back
# Exports of a real sweep: pdbx-engine measures a tiny model on 2 MPI ranks (TP 1 and TP 2,
# MBS 1..4, collectives sweep), then `pdbx export` writes the NPZ, CSV and trace files. Python
# reads the run file itself (zstdcat) and recomputes what every file must hold: numpy on the
# NPZ (key data, float64, (M,10), row i = MBS 2^i, FASOP attribution summed from the op events
# within 1e-9), the Vidur CSV rows and columns, one trace event per recorded op per rank, with
# pid = rank + 1, named processes, and the step's TP all-reduces, PP send/recv and DP
# all-reduce at their offsets (after the forward they follow).
set -u
: "${PDBX_BUILD:?PDBX_BUILD must point at a build tree}"
: "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR must point at the repo}"
ENGINE=$PDBX_BUILD/bin/pdbx-engine
PDBX=$PDBX_BUILD/bin/pdbx
PY=/usr/bin/python3
for b in "$ENGINE" "$PDBX"; do [ -x "$b" ] || { echo "SKIP: $b not built"; exit 77; }; done
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
command -v zstdcat >/dev/null || { echo "SKIP: zstdcat not installed"; exit 77; }
"$PY" -c 'import numpy' 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }
TMP=$(mktemp -d /tmp/pdbx-export-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# MPI ranks under the sanitizer build: OpenMPI's dlclosed plugins leak unsuppressibly, so leak
# checks are off for the engine ranks only (pdbx export keeps them).
RANK_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:detect_leaks=0}
MPIRUN=(mpirun --oversubscribe --bind-to none -np 2)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)

# A tiny Llama-architecture model (HF config.json fields) and a sweep on it.
cat > "$TMP/tiny.json" <<'EOF'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "pdbx_tag": "tiny",
 "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
 "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 1024,
 "tie_word_embeddings": false}
EOF
cat > "$TMP/spec.json" <<EOF
{"name": "export-e2e", "model": "$TMP/tiny.json", "gpu": "cpu", "layers": 2, "seq_len": 32,
 "dtype": "fp32", "backend": "cpu", "gpus_per_node": 2, "nodes": 1,
 "configs": [{"tp": 1, "pp": 2, "dp": 1}, {"tp": 2, "pp": 1, "dp": 1}], "mbs": "1:4",
 "repetition": "fixed", "warmup": 1, "steps": 3, "ops": "all", "collectives": true, "coll_sizes": [4096, 65536],
 "predict_oom": false, "timeout_s": 60}
EOF
ASAN_OPTIONS=$RANK_ASAN "${MPIRUN[@]}" "$ENGINE" --spec "$TMP/spec.json" --store "$TMP/store" >"$TMP/engine.out" 2>"$TMP/engine.err" \
    || { cat "$TMP/engine.err"; fail "pdbx-engine run"; }
# a DP 2 point (its step's DP all-reduce in the trace), in a store of its own
sed -e 's/"configs": \[[^]]*\]/"configs": [{"tp": 1, "pp": 1, "dp": 2}]/' -e 's/"mbs": "1:4"/"mbs": "1"/' \
    -e 's/"collectives": true/"collectives": false/' "$TMP/spec.json" >"$TMP/dp.json"
grep -q '"dp": 2' "$TMP/dp.json" || fail "DP spec not made"
ASAN_OPTIONS=$RANK_ASAN "${MPIRUN[@]}" "$ENGINE" --spec "$TMP/dp.json" --store "$TMP/dpstore" >/dev/null 2>"$TMP/engine.err" \
    || { cat "$TMP/engine.err"; fail "pdbx-engine DP run"; }
DPID=$(basename "$(ls "$TMP"/dpstore/runs/*.pdbx | head -1)" .pdbx)
PDBX_STORE="$TMP/dpstore" "$PDBX" export "$DPID" --trace "$TMP/dptrace.json" >/dev/null 2>"$TMP/export.err" \
    || fail "pdbx export --trace (DP run): $(cat "$TMP/export.err")"
RUNFILE=$(ls "$TMP"/store/runs/*.pdbx | head -1)
[ -f "$RUNFILE" ] || fail "no run file in $TMP/store/runs"
ID=$(basename "$RUNFILE" .pdbx)

export PDBX_STORE="$TMP/store"
"$PDBX" export "$ID" --npz "$TMP/npz" --gpu-tag cpu --csv "$TMP/csv" --trace "$TMP/trace.json" \
    >"$TMP/export.out" 2>"$TMP/export.err" || fail "pdbx export: $(cat "$TMP/export.err")"
"$PDBX" export "$ID" --npz "$TMP/pure" --gpu-tag cpu --attribution pure >/dev/null 2>"$TMP/export.err" \
    || fail "pdbx export --attribution pure: $(cat "$TMP/export.err")"

zstdcat "$RUNFILE" > "$TMP/events.json" || fail "zstdcat $RUNFILE"
"$PY" - "$TMP" <<'PYEOF' || fail "exported files do not match the run"
import csv, json, math, sys
import numpy as np

tmp = sys.argv[1]
text = open(f"{tmp}/events.json").read()
dec, E, i = json.JSONDecoder(), [], 0
while i < len(text):                       # frames are back-to-back JSON objects
    while i < len(text) and text[i].isspace():
        i += 1
    if i < len(text):
        obj, i = dec.raw_decode(text, i)
        E.append(obj)
start = next(e for e in E if e["type"] == "run_start")
assert E[-1]["type"] == "run_end" and E[-1]["status"] == "complete", E[-1]
points = {p["index"]: p for p in start["points"]}
status = {e["point"]: e["status"] for e in E if e["type"] == "point_end"}
ops = {}                                   # (point, op) -> event
for e in E:
    if e["type"] == "op":
        ops[(e["point"], e["op"])] = e
printed = open(f"{tmp}/export.out").read().split()

# ---- NPZ: FASOP attribution recomputed from the op events -------------------------------
COLS = ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_act_fn", "mlp_up",
        "mlp_down", "lm_head"]
FASOP = {"embed": ["embed"], "attn_q": ["tp_allreduce_mlp", "mlp_residual", "input_norm", "attn_q"],
         "attn_k": ["attn_k"], "attn_v": ["attn_v"], "attn_o": ["attn_rope", "attn_core", "attn_o"],
         "mlp_gate": ["tp_allreduce_attn", "attn_residual", "post_attn_norm", "mlp_gate"],
         "mlp_act_fn": ["mlp_act_fn"], "mlp_up": ["mlp_up"], "mlp_down": ["mlp_down"],
         "lm_head": ["final_norm", "lm_head"]}
LAYER_OPS = ["input_norm", "attn_q", "attn_k", "attn_v", "attn_rope", "attn_core", "attn_o",
             "tp_allreduce_attn", "attn_residual", "post_attn_norm", "mlp_gate", "mlp_up",
             "mlp_act_fn", "mlp_down", "tp_allreduce_mlp", "mlp_residual"]
tag = start["model"]["tag"]
for (tp, pp) in ((1, 2), (2, 1)):
    rows = [i for i, p in sorted(points.items(), key=lambda kv: kv[1]["mbs"])
            if p["tp"] == tp and p["pp"] == pp]
    assert [points[i]["mbs"] for i in rows] == [1, 2, 4], rows
    assert all(status[i] == "ok" for i in rows), status
    for kind in ("npz", "pure"):
        path = f"{tmp}/{kind}/{tag}_cpu_{tp}.npz"
        if kind == "npz":
            assert path in printed, (path, printed)
        z = np.load(path)
        d = z["data"]
        assert d.dtype == np.float64 and d.shape == (3, 10) and d.flags["C_CONTIGUOUS"], (d.dtype, d.shape)
        for r, i in enumerate(rows):       # row r is MBS 2^r
            mean = lambda op: ops[(i, op)]["stats"]["mean"] if (i, op) in ops else 0.0
            if kind == "pure":
                want = [mean(c) for c in COLS]
            else:
                want = [sum(mean(op) for op in FASOP[c]) for c in COLS]
                layer = sum(mean(op) for op in LAYER_OPS)
                assert math.isclose(d[r, 1:9].sum(), layer, rel_tol=1e-9), (d[r], layer)
            assert np.allclose(d[r], want, rtol=1e-9, atol=0), (tp, r, d[r], want)
        meta = json.loads(z["meta.json"]) if "meta.json" in z.files else None
        assert meta and meta["tp"] == tp and meta["pp"] == pp and meta["mbs"] == [1, 2, 4], meta
        assert meta["attribution"] == ("pure" if kind == "pure" else "fasop"), meta
        assert (tp == 1) == ("tp_allreduce_attn" in meta["ops_not_measured"]) or kind == "pure", meta

# ---- Vidur CSV ---------------------------------------------------------------------------
with open(f"{tmp}/csv/mlp.csv", newline="") as f:
    reader = csv.reader(f)
    header = next(reader)
    body = list(reader)
model_cols = ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp",
              "num_tokens", "num_tensor_parallel_workers"]
assert header[-8:] == model_cols, header[-8:]
# Vidur's ten ops in its order (always written; attn_rope/add empty until measured), then pdbx's
vidur = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
         "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
         "attn_core", "final_norm", "lm_head"]
assert header[:-8] == [f"time_stats.{o}.{s}" for o in vidur for s in ("min", "max", "mean", "median", "std")], header
ok = [i for i in sorted(points) if status.get(i) == "ok"]
assert len(body) == len(ok), (len(body), len(ok))
by_key = {(points[i]["tp"], points[i]["pp"], points[i]["mbs"]): i for i in ok}
seen = set()
for row in body:
    assert len(row) == len(header)
    rec = dict(zip(header, row))
    tp, tokens = int(rec["num_tensor_parallel_workers"]), int(rec["num_tokens"])
    assert tokens % 32 == 0 and rec["use_gated_mlp"] == "True" and rec["n_embd"] == "256", rec
    # configs in plan order: TP 1 (PP 2) rows first, then TP 2
    key = (tp, 2 if tp == 1 else 1, tokens // 32)
    assert key in by_key and key not in seen, key
    seen.add(key)
    i = by_key[key]
    m = lambda op: ops[(i, op)]["stats"]["mean"]
    assert math.isclose(float(rec["time_stats.attn_pre_proj.mean"]), m("attn_q") + m("attn_k") + m("attn_v"), rel_tol=1e-9)
    assert math.isclose(float(rec["time_stats.mlp_up_proj.mean"]), m("mlp_gate") + m("mlp_up"), rel_tol=1e-9)
    assert math.isclose(float(rec["time_stats.attn_post_proj.median"]), ops[(i, "attn_o")]["stats"]["median"], rel_tol=1e-9)
coll_cols = lambda c: [f"time_stats.{c}.{s}" for s in ("min", "max", "mean", "median", "std")] + \
    ["rank", "num_workers", "size", "collective", "devices_per_node", "max_devices_per_node"]
# Vidur's size: bytes of each rank's buffer at 2 bytes per element (fp32 run: 2 x S / 4)
vidur_size = lambda S: 2 * (S // 4)
for c in ("all_reduce", "send_recv"):      # the collectives sweep only
    with open(f"{tmp}/csv/{c}.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == coll_cols(c), rows[0]
    sweep = [e for e in E if e["type"] == "coll" and e["coll"] == c and (c != "send_recv" or e["nranks"] == 2)]
    assert len(sweep) > 0 and len(rows) == 1 + len(sweep), (c, len(rows), len(sweep))
    for row, e in zip(rows[1:], sweep):
        assert row[8] == c and float(row[7]) == vidur_size(e["bytes"]) and row[5] == "0", (row, e)
        assert math.isclose(float(row[2]), e["stats"]["mean"], rel_tol=1e-9), (row, e)
# the points' own TP/PP/DP traffic, apart (Vidur's loader would fit it with the sweep)
with open(f"{tmp}/csv/step_comm.csv", newline="") as f:
    rows = list(csv.reader(f))
assert rows[0] == coll_cols("step_comm") + ["kind", "tp", "pp", "dp", "mbs", "num_tokens"], rows[0]
comm = [e for e in E if e["type"] == "comm" and status.get(e["point"]) == "ok"]
assert len(comm) > 0 and len(rows) == 1 + len(comm), (len(rows), len(comm))
got = sorted((r[11], int(r[12]), int(r[15]), float(r[7]), float(r[2])) for r in rows[1:])
want = sorted((e["kind"], points[e["point"]]["tp"], points[e["point"]]["mbs"], vidur_size(e["bytes"]),
               e["stats"]["mean"]) for e in comm)
assert len(got) == len(want) and all(g[:4] == w[:4] and math.isclose(g[4], w[4], rel_tol=1e-9)
                                     for g, w in zip(got, want)), (got, want)

# ---- Chrome trace --------------------------------------------------------------------------
trace = json.load(open(f"{tmp}/trace.json"))
assert trace["displayTimeUnit"] == "ms" and trace["metadata"]["synthesized"] is False
X = [e for e in trace["traceEvents"] if e["ph"] == "X"]
recorded = [(e["rank"], e["point"], o[0], o[1]) for e in E if e["type"] == "trace" for o in e["ops"]]
got = [(e["pid"] - 1, e["args"]["point"], e["name"], e["args"]["layer"]) for e in X]
assert all(e["tid"] == e["pid"] * 10 + e["args"]["point"] + 1 for e in X)   # unique tracks
assert len(recorded) > 0 and sorted(got) == sorted(recorded), (len(got), len(recorded))
assert len(set(got)) == len(got), "an op appears twice on one rank's step"
# Perfetto: no pid 0, one named process per rank, listed in rank order
M = [e for e in trace["traceEvents"] if e["ph"] == "M"]
names = {e["pid"]: e["args"]["name"] for e in M if e["name"] == "process_name"}
assert names == {1: "rank 0", 2: "rank 1"}, names
assert {e["pid"]: e["args"]["sort_index"] for e in M if e["name"] == "process_sort_index"} == {1: 0, 2: 1}
assert all(e["pid"] >= 1 for e in trace["traceEvents"])
# the step's collectives: TP all-reduces inside the layers of a TP 2 point, PP send/recv and DP
# all-reduce of the PP 2 / DP 2 points after the forward's last op, on every rank
pts = {e["point"]: e for e in E if e["type"] == "point_start"}
comm = {}
for e in X:
    if e["cat"] == "comm":
        comm.setdefault((e["args"]["tp"], e["args"]["pp"], e["args"]["dp"], e["name"]), set()).add(e["pid"])
assert comm.get((2, 1, 1, "tp_allreduce_attn")) == {1, 2}, comm
assert comm.get((2, 1, 1, "tp_allreduce_mlp")) == {1, 2}, comm
assert comm.get((1, 2, 1, "pp_sendrecv")) == {1, 2}, comm
dp = [e for e in json.load(open(f"{tmp}/dptrace.json"))["traceEvents"] if e["ph"] == "X"]
assert {e["pid"] for e in dp if e["name"] == "dp_allreduce"} == {1, 2}, dp
for T in (X, dp):                                    # two runs: (pid, tid) per run
    for e in T:
        if e["name"] in ("pp_sendrecv", "dp_allreduce"):
            same = [o for o in T if o["pid"] == e["pid"] and o["tid"] == e["tid"] and o["cat"] != "comm"]
            end = max(o["ts"] + o["dur"] for o in same)
            assert e["ts"] >= end - 1e-6, (e, end)   # after the forward's last op
            assert e["dur"] > 0
print(f"ok: {len(E)} events; NPZ, CSV ({len(body)} rows) and trace ({len(X)} events) match the run")
PYEOF
# Perfetto's own importer where it is installed (trace_processor_shell is a downloaded binary:
# not in Debian; PERFETTO_TP names one): one process per rank and the comm slices present.
tp_shell=${PERFETTO_TP:-$(command -v trace_processor_shell || true)}
if [ -n "$tp_shell" ] && [ -x "$tp_shell" ]; then
    q="select (select count(*) from process where name like 'rank %') as ranks,
              (select count(*) from slice where category = 'comm') as comm;"
    out=$("$tp_shell" -q /dev/stdin "$TMP/trace.json" <<<"$q" 2>&1) || fail "trace_processor_shell: $out"
    echo "$out" | grep -Eq '^"?2"?,"?[1-9]' || fail "Perfetto's importer: $out (want 2 ranks, comm slices)"
    echo "ok: Perfetto's trace_processor imports the trace: $(echo "$out" | tail -n 1)"
else
    echo "note: Perfetto's trace_processor_shell is not installed (a downloaded binary, not in Debian;" \
         "set PERFETTO_TP to run it): the importer's rules (pid >= 1, unique tids, names first) were checked above"
fi
echo "PASS: exports of a real engine run"
