#!/usr/bin/env bash
# The run table agreement test (issue 9): one run, pushed through every path that shows its
# numbers, must give the same cells.
#   1. `pdbx show --format json` (pure and fasop attribution): every MBS x op cell, layer, total
#   2. the explorer: the run view's total row, and its export dialog (NPZ fasop, NPZ pure, CSV)
#   3. `pdbx export --npz` (fasop, pure) and `--csv`
# numpy reads the NPZ files; every cell of every path is compared with show's JSON, and the
# dialog's files with the CLI's byte for byte. Both refuse `--stat std` for the NPZ with the same
# one line. The run is the TUI fixture (tests/fixtures/tui_fixture.py), which carries step
# events: layer and total are measured cells, different from any sum of its op cells.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
A=2026-11-20__10-00-00_aaaa0001
make_run "$A"

# ---- 1. show --------------------------------------------------------------------------------
"$PDBX" show "$A" --store "$STORE" --format json > "$TMP/show.pure.json" || fail "show pure"
"$PDBX" show "$A" --store "$STORE" --format json --attribution fasop > "$TMP/show.fasop.json" \
    || fail "show fasop"
"$PDBX" show "$A" --store "$STORE" --format json --stat std > "$TMP/show.std.json" || fail "show std"

# ---- 3. pdbx export ---------------------------------------------------------------------------
"$PDBX" export "$A" --store "$STORE" --npz "$TMP/cli_fasop" >/dev/null || fail "export npz fasop"
"$PDBX" export "$A" --store "$STORE" --npz "$TMP/cli_pure" --attribution pure >/dev/null \
    || fail "export npz pure"
"$PDBX" export "$A" --store "$STORE" --csv "$TMP/cli_csv" >/dev/null || fail "export csv"
"$PDBX" export "$A" --store "$STORE" --npz "$TMP/cli_std" --stat std 2>"$TMP/std.err" \
    && fail "export --stat std accepted"
grep -q "'std' is not a time" "$TMP/std.err" || fail "export --stat std: $(cat "$TMP/std.err")"

# ---- 2. the explorer: run view, then the export dialog ---------------------------------------
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -E '^ total ' > "$TMP/tui_total.txt" || fail "run view has no total row"
screen | grep -E '^ layer ' > "$TMP/tui_layer.txt" || fail "run view has no layer row"
keys e; wait_for "FASOP model tag"
keys C-u; keys -l "$TMP/tui_fasop"; keys Enter
wait_for "llama1b_A100_2.npz"
keys C-u; keys -l "$TMP/tui_pure"
keys Down Down Down Right; wait_for "pure (each op alone)"
keys Enter; wait_for "tui_pure"
wait_for "llama1b_A100_2.npz"
# statistic -> std: the dialog refuses it as `pdbx export` does, and writes nothing
keys Down Left; wait_for " std"
keys Enter; wait_for "'std' is not a time"
[ "$(ls "$TMP/tui_pure" | wc -l)" = 2 ] || fail "the refused std export wrote files: $(ls "$TMP/tui_pure")"
keys Right                                     # back to mean
keys Up Up Up Up C-u; keys -l "$TMP/tui_csv"
keys Up Right; wait_for "csv (Vidur)"
keys Enter; wait_for "mlp.csv"
keys Escape; wait_for "view: table (ms)"
quit_and_check

# ---- compare every cell -------------------------------------------------------------------------
"$PY" - "$TMP" <<'PY' || fail "the paths disagree"
import csv, filecmp, json, math, sys
import numpy as np
tmp = sys.argv[1]
show = {k: json.load(open(f"{tmp}/show.{k}.json")) for k in ("pure", "fasop", "std")}
FASOP = ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_act_fn", "mlp_up",
         "mlp_down", "lm_head"]
ONCE = ("embed", "final_norm", "lm_head")
def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)
def check(what, a, b):
    assert same(a, b), f"{what}: {a} != {b}"
n = 0
# layer and total are measured: never the sum of the op cells, and they have a std
for cfg in show["pure"]["configs"]:
    for p in cfg["points"]:
        ops = {k: v for k, v in p["ms"].items() if v is not None}
        layer_sum = sum(v for k, v in ops.items() if k not in ONCE)
        assert p["layer"] is not None and p["total"] is not None, p
        assert not same(p["layer"], layer_sum), ("layer is a sum of ops", p["layer"])
for cfg in show["std"]["configs"]:
    for p in cfg["points"]:
        assert p["layer"] is not None and p["total"] is not None, ("std of layer/total", p)
# show fasop == show pure summed over the same ops (the attribution is the run table's)
for attr, sj in (("fasop", show["fasop"]), ("pure", show["pure"])):
    for cfg in sj["configs"]:
        tp = cfg["tp"]
        pts = [p for p in cfg["points"] if p["status"] == "ok"]
        for src in ("cli", "tui"):
            z = np.load(f"{tmp}/{src}_{attr}/llama1b_A100_{tp}.npz")
            data, meta = z["data"], json.loads(z["meta.json"])   # a non-.npy member: its bytes
            assert data.shape == (len(pts), 10), (src, attr, tp, data.shape)
            assert meta["mbs"] == [p["mbs"] for p in pts], meta["mbs"]
            for r, p in enumerate(pts):
                for c, col in enumerate(FASOP):
                    check(f"{src} {attr} TP{tp} MBS{p['mbs']} {col}", float(data[r, c]), p["ms"][col])
                    n += 1
                check(f"{src} layer TP{tp} MBS{p['mbs']}", meta["layer_ms"][r], p["layer"])
                check(f"{src} total TP{tp} MBS{p['mbs']}", meta["total_ms"][r], p["total"])
                n += 2
# every op of show pure appears once in the pure NPZ or the CSV; the CSV's op cells
rows = list(csv.DictReader(open(f"{tmp}/cli_csv/mlp.csv")))
CSV = {"emb": ["embed"], "input_layernorm": ["input_norm"],
       "attn_pre_proj": ["attn_q", "attn_k", "attn_v"], "attn_core": ["attn_core"],
       "attn_post_proj": ["attn_o"], "post_attention_layernorm": ["post_attn_norm"],
       "mlp_up_proj": ["mlp_gate", "mlp_up"], "mlp_act": ["mlp_act_fn"],
       "mlp_down_proj": ["mlp_down"], "final_norm": ["final_norm"], "lm_head": ["lm_head"]}
pts = [(cfg["tp"], p) for cfg in show["pure"]["configs"] for p in cfg["points"] if p["status"] == "ok"]
assert len(rows) == len(pts), (len(rows), len(pts))
for row, (tp, p) in zip(rows, pts):
    assert int(row["num_tensor_parallel_workers"]) == tp
    for name, ops in CSV.items():
        want = sum(p["ms"][o] for o in ops)
        got = float(row[f"time_stats.{name}.mean"])
        assert abs(got - want) <= 1e-9 * want, (name, tp, p["mbs"], got, want)
        n += 1
# the dialog's files are the CLI's, byte for byte (NPZ data and CSV)
for f in ("mlp.csv", "all_reduce.csv", "send_recv.csv"):
    assert filecmp.cmp(f"{tmp}/cli_csv/{f}", f"{tmp}/tui_csv/{f}", shallow=False), f
for attr in ("fasop", "pure"):
    for tp in (1, 2):
        a = np.load(f"{tmp}/cli_{attr}/llama1b_A100_{tp}.npz")["data"]
        b = np.load(f"{tmp}/tui_{attr}/llama1b_A100_{tp}.npz")["data"]
        assert a.tobytes() == b.tobytes(), (attr, tp)
# the run view's layer and total rows (first tab: the first config) show show's cells, 3 digits
first = [p for p in show["pure"]["configs"][0]["points"]]
for row in ("layer", "total"):
    cells = open(f"{tmp}/tui_{row}.txt").read().split()[1:]
    assert len(cells) == len(first), (row, cells, len(first))
    for txt, p in zip(cells, first):
        want = p[row]
        assert want is not None and abs(float(txt) - want) <= 0.006 * want, ("run view " + row, txt, want)
        n += 1
print(f"{n} cells agree across show, the explorer and pdbx export")
PY
echo PASS
