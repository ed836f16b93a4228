#!/usr/bin/env bash
# pdbx's estimate of a training iteration beside the real one in PyTorch (issue 25): the same
# model, layout and core.
#  1. pdbx-engine measures a fwd+bwd point of the model (TP 1, MBS $MBS, 1 rank) on core $CORE;
#  2. `pdbx advise --gpus 1 --gbs MBS x MICRO` estimates the iteration of TP1/PP1/DP1 at MBS $MBS
#     from it: "pdbx" below;
#  3. bench/torch_step.py runs the iteration in PyTorch on the same core (AdamW, MICRO
#     micro-batches accumulated, loss, zero_grad): "PyTorch"; and times each op alone on the same
#     shapes;
#  4. the run's op cells are replaced by PyTorch's per-op times (a copy of the run file, its own
#     run id) and advise estimates again: "pdbx model, PyTorch's op times": what is left between
#     it and PyTorch's iteration is the model (what it leaves out or counts twice), not the kernels.
# Prints the three with their breakdowns and the errors; docs/advise.md has the figures.
#   bench/torch_step.sh [CONFIG_JSON]   (default configs/models/TinyLlama-1.1B.json)
#   env: LAYERS (2) SEQ (128) MBS (1) MICRO (2) CORE (0) ITERS (5)
source "$(dirname "$0")/common.inc"
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch missing: apt-get install python3-torch"; exit 1; }
config=${1:-$ROOT/configs/models/TinyLlama-1.1B.json}
[ -f "$config" ] || { echo "torch_step.sh: $config: no such model config" >&2; exit 2; }
LAYERS=${LAYERS:-2}; SEQ=${SEQ:-128}; MBS=${MBS:-1}; MICRO=${MICRO:-2}; CORE=${CORE:-0}; ITERS=${ITERS:-5}
command -v taskset >/dev/null || { echo "taskset missing (util-linux)" >&2; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, load average $(load); everything on core $CORE"

# 1. the sweep point (the model's config.json, the spec's layers/seq/mbs)
spec_json "$TMP/s.json" "model=\"$config\"" "layers=$LAYERS" "seq_len=$SEQ" "mbs=\"$MBS:$MBS\"" \
    'passes=["fwd","bwd"]' 'gpus_per_node=1' 'warmup=2' 'steps=7' 'name="torch-step"'
taskset -c "$CORE" "${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/s.json" --store "$TMP/st" >/dev/null 2>"$TMP/err" ||
    { cat "$TMP/err"; exit 1; }
run=$(ls "$TMP"/st/runs/*.pdbx)
id=$(basename "$run" .pdbx)
gbs=$((MBS * MICRO))
advise() {   # STORE RUN OUT: advise's row for TP1/PP1/DP1 at MBS
    "$PDBX" advise "$2" --store "$1" --gpus 1 --gbs "$gbs" --layers "$LAYERS" --format json >"$TMP/adv.json" 2>"$TMP/adv.err" ||
        { cat "$TMP/adv.err"; exit 1; }
    "$PY" - "$TMP/adv.json" "$MBS" "$3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 1, 1, int(sys.argv[2]))]
assert rows, "advise has no TP1/PP1/DP1 row at MBS %s" % sys.argv[2]
json.dump(rows[0], open(sys.argv[3], "w"))
PYEOF
}
advise "$TMP/st" "$id" "$TMP/pdbx_row.json"

# 3. PyTorch
echo "pdbx: run $id measured; PyTorch's iteration and ops next" >&2
taskset -c "$CORE" "$PY" "$ROOT/bench/torch_step.py" --config "$config" --layers "$LAYERS" --seq "$SEQ" \
    --mbs "$MBS" --micro "$MICRO" --threads 1 --iters "$ITERS" --json "$TMP/torch.json" >"$TMP/torch.txt" ||
    { cat "$TMP/torch.txt"; exit 1; }

# 4. the same run with PyTorch's op times in its cells
tid="${id%_*}_$(printf '%08x' $((RANDOM * 32768 + RANDOM)))"
mkdir -p "$TMP/st2/runs"
zstdcat "$run" >"$TMP/run.jsonl" || exit 1
"$PY" - "$TMP/torch.json" "$id" "$tid" "$TMP/run.jsonl" >"$TMP/torch_cells.jsonl" <<'PYEOF' || exit 1
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
old, new = sys.argv[2], sys.argv[3]
swapped = set()
for line in open(sys.argv[4]):
    e = json.loads(line)
    if e.get("id") == old:
        e["id"] = new
    if e.get("type") == "op" and e["op"] in ops:
        t = ops[e["op"]].get(e.get("pass", "fwd"))
        if t is not None:
            s = {"count": 1, "min": t, "max": t, "mean": t, "median": t, "std": 0.0}
            e["stats"] = s
            e["ranks"] = [dict(s) for _ in e.get("ranks", [s])]
            swapped.add((e["op"], e.get("pass", "fwd")))
    print(json.dumps(e, separators=(",", ":")))
# every op of the layer and the step must be swapped; the optimizer where the run has its cell
missing = sorted(set((o, p) for o in ops for p in ops[o]
                     if o not in ("optimizer", "optimizer_model", "zero_grad")) - swapped)
if missing:
    sys.exit("torch_step.sh: the run has no cell for PyTorch's %s" % missing)
PYEOF
[ -x "$BUILD/tests/jsonl_frames" ] || { echo "$BUILD/tests/jsonl_frames missing: scons first" >&2; exit 1; }
"$BUILD/tests/jsonl_frames" <"$TMP/torch_cells.jsonl" >"$TMP/st2/runs/$tid.pdbx" || exit 1
advise "$TMP/st2" "$tid" "$TMP/torch_row.json"

# the table
cat "$TMP/torch.txt"
echo
"$PY" - "$TMP/pdbx_row.json" "$TMP/torch_row.json" "$TMP/torch.json" <<'PYEOF'
import json, sys
p, q, t = (json.load(open(f)) for f in sys.argv[1:4])
m = t["median_ms"]
real = m["iteration"]
ops = t["ops"]
print("%-44s %10s %9s   %s" % ("", "ms", "vs real", "breakdown (ms)"))
print("%-44s %10.1f %9s   fwd %.0f, bwd %.0f, loss %.0f, optimizer %.0f, zero_grad %.0f" % (
    "PyTorch iteration (median)", real, "", m["fwd"], m["bwd"], m["loss_fwd"] + m["loss_bwd"],
    m["optimizer"], m["zero_grad"]))
opt_real = m["optimizer"] + m["zero_grad"]
if p.get("optimizer_ms", 0) > 0:
    print("%-44s %10.1f %+8.1f%%   PyTorch's AdamW step + zero_grad of the same parameters: %.1f ms" % (
        "pdbx optimizer_ms (its cell x parameters)", p["optimizer_ms"],
        100 * (p["optimizer_ms"] - opt_real) / opt_real, opt_real))
loss_real = m["loss_fwd"] + m["loss_bwd"]
if p.get("loss_ms", 0) > 0:
    print("%-44s %10.1f %+8.1f%%   PyTorch's cross-entropy, forward + backward: %.1f ms" % (
        "pdbx loss_ms (its cells x micro-batches)", p["loss_ms"], 100 * (p["loss_ms"] - loss_real) / loss_real,
        loss_real))
for name, r in (("pdbx advise (pdbx's cells)", p), ("pdbx advise (PyTorch's per-op times)", q)):
    print("%-44s %10.1f %+8.1f%%   compute %.0f (fwd %.0f, bwd %.0f per micro-batch x %d; loss %.0f), comm %.0f, bubble %.0f%s" % (
        name, r["step_ms"], 100 * (r["step_ms"] - real) / real, r["compute_ms"], r["stage_fwd_ms"],
        r["stage_bwd_ms"], r["num_mb"], r.get("loss_ms", 0), r["comm_ms"], r["bubble_ms"],
        ", optimizer %.0f" % r["optimizer_ms"] if "optimizer_ms" in r else ""))
print()
left = []
if not p.get("loss_ms", 0) > 0:
    left.append(("loss", loss_real))
if not p.get("optimizer_ms", 0) > 0:
    left += [("optimizer", m["optimizer"]), ("zero_grad", m["zero_grad"])]
if left:
    print("PyTorch's parts that pdbx's estimate does not model: %s: %.1f%% of the iteration" % (
        ", ".join("%s %.1f ms" % kv for kv in left), 100 * sum(v for _, v in left) / real))
# what is left between the estimate on PyTorch's own op times and the real iteration: PyTorch's
# phases inside the iteration against the same work timed op by op
alone = {k: sum(v.get(k, 0) for o, v in ops.items() if o not in ("loss", "optimizer", "optimizer_model", "zero_grad"))
         for k in ("fwd", "bwd")}
L = t["layers"]
per_layer = {k: sum(v.get(k, 0) for o, v in ops.items() if o not in ("embed", "final_norm", "lm_head", "loss", "optimizer", "optimizer_model", "zero_grad")) for k in ("fwd", "bwd")}
once = {k: alone[k] - per_layer[k] for k in alone}
for k in ("fwd", "bwd"):
    model = t["micro"] * (L * per_layer[k] + once[k])
    print("PyTorch %s in the iteration %.0f ms, its ops alone x layers x micro-batches %.0f ms (%+.1f%%)" % (
        k, m[k], model, 100 * (model - m[k]) / m[k]))
print("PyTorch optimizer + zero_grad in the iteration %.0f ms, alone %.0f ms (%+.1f%%)" % (
    opt_real, ops["optimizer_model"]["fwd"] + ops["zero_grad"]["fwd"],
    100 * (ops["optimizer_model"]["fwd"] + ops["zero_grad"]["fwd"] - opt_real) / opt_real))
PYEOF
