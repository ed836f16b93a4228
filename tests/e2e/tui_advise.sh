#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# The explorer's Advise screen through tmux (issue 15): A in the run view opens it over a fixture
# run; goldens at 80x24 and 200x50 when opened, after changing GPUs and global batch (G, b) and
# after moving the selection; every number of the list and of the selected config's breakdown
# equals `pdbx advise RUN --gpus N --gbs B --format json` for the same query; v shows the Pareto
# chart alone (how 80x24 sees it), a in plain ASCII; q and Esc go back to the run view; no colour
# under NO_COLOR, with the same text.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
# seven collectives: send_recv among them, so the PP configurations (bubble, PP comm) are ranked
make_run "$A" --colls 7

# check_numbers GPUS GBS: the list rows on screen (rank, tp, pp, dp, mbs, num_mb, step_ms,
# mem_gb, fits, the Pareto mark and, where shown, compute_ms, comm_ms, bubble_ms) and the
# selected row's breakdown legend are pdbx advise's JSON rows for the same query, in its order;
# at 200x50, where every row shows.
check_numbers() {
    PDBX_STORE="$STORE" "$PDBX" advise "$A" --gpus "$1" --gbs "$2" --format json > "$TMP/advise.json" \
        || fail "pdbx advise --gpus $1 --gbs $2"
    resize 200x50 "query: $1 GPUs  global batch $2"
    screen > "$TMP/advise.screen"
    resize "${COLS}x${ROWS}" "query: $1 GPUs  global batch $2"
    "$PY" - "$TMP/advise.json" "$TMP/advise.screen" <<'EOF' || fail "screen numbers differ from pdbx advise --format json ($1 GPUs, gbs $2)"
import json, re, sys
rows = json.load(open(sys.argv[1]))["rows"]
lines = open(sys.argv[2]).read().splitlines()
pat = re.compile(r"^ ([ >])\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(yes|no) ([*~ ]{0,3})"
                 r"(?:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+))?")
seen = 0
for ln in lines:
    m = pat.match(ln)
    if not m:
        continue
    rank = int(m.group(2))
    r = rows[rank - 1]
    want = (r["tp"], r["pp"], r["dp"], r["mbs"], r["num_mb"], "%.2f" % r["step_ms"], "%.2f" % r["mem_gb"],
            "yes" if r["fits"] else "no", r["pareto"], r["estimated_cells"] > 0)
    got = (int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)), int(m.group(7)), m.group(8),
           m.group(9), m.group(10), "*" in m.group(11), "~" in m.group(11))
    if got != want:
        sys.exit("row %d: screen %s, json %s" % (rank, got, want))
    if m.group(12):
        parts = tuple(m.group(k) for k in (12, 13, 14))
        jp = tuple("%.2f" % r[k] for k in ("compute_ms", "comm_ms", "bubble_ms"))
        if parts != jp:
            sys.exit("row %d: screen %s, json %s" % (rank, parts, jp))
    seen += 1
if seen != len(rows):
    sys.exit("%d rows on screen, %d in the json" % (seen, len(rows)))
# the selected config's headline and breakdown legend
sel = next(i for i, ln in enumerate(lines) if re.match(r"^ #\d+ tp ", ln))
r = rows[int(re.match(r"^ #(\d+)", lines[sel]).group(1)) - 1]
head = "tp %d pp %d dp %d mbs %d num_mb %d: step %.2f ms, %.2f GB/GPU" % (r["tp"], r["pp"], r["dp"], r["mbs"],
                                                                        r["num_mb"], r["step_ms"], r["mem_gb"])
if head not in lines[sel]:
    sys.exit("headline %r lacks %r" % (lines[sel], head))
legend = lines[sel + 2]
for k in ("compute_ms", "tp_comm_ms", "pp_comm_ms", "dp_comm_ms", "bubble_ms"):
    if " %.2f" % r[k] not in legend:
        sys.exit("breakdown legend %r lacks %s %.2f" % (legend, k, r[k]))
print("checked %d rows" % seen)
EOF
}

start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
# the run view's key bar names the key (docs/tui.md)
screen | grep -qF "e export  A advise" || fail "the run view's key bar does not show A advise"
keys A; wait_for "query: 2 GPUs  global batch 32"
# the defaults: the run's world size (2) and 2 x its largest MBS (8) per GPU
check_numbers 2 32
golden_sizes tui_advise_open "query: 2 GPUs  global batch 32"
# G doubles the GPUs, b halves the global batch: recomputed at once
keys G; wait_for "query: 4 GPUs  global batch 32"
keys b; wait_for "query: 4 GPUs  global batch 16"
# the selection stays on its configuration when the new query has it: the first of 4 GPUs and
# gbs 32 (tp 1 pp 4 dp 1 mbs 1) keeps the selection at gbs 16, at its rank there (from pdbx
# advise), and two rows down is the configuration pdbx advise ranks two below it
read -r R1 R3 < <(PDBX_STORE="$STORE" "$PDBX" advise "$A" --gpus 4 --gbs 16 --format json | "$PY" -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
i = next(k for k, r in enumerate(rows) if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (1, 4, 1, 1))
r = rows[i + 2]
print("#%d_tp_1_pp_4_dp_1_mbs_1" % (i + 1), "#%d_tp_%d_pp_%d_dp_%d_mbs_%d" % (i + 3, r["tp"], r["pp"], r["dp"], r["mbs"]))
') || fail "pdbx advise: the rank of 1x4x1 mbs 1"
wait_for " ${R1//_/ } "
check_numbers 4 16
golden_sizes tui_advise_query "query: 4 GPUs  global batch 16"
# the selection moves the breakdown with it (and the chart's diamond)
keys Down Down; wait_for " ${R3//_/ } "
check_numbers 4 16
golden_sizes tui_advise_select " ${R3%%_*} tp "
# End: the last configuration, the list scrolled to keep it in view (80x24 shows 11 rows)
N=$(PDBX_STORE="$STORE" "$PDBX" advise "$A" --gpus 4 --gbs 16 --format json \
    | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)["rows"]))') || fail "pdbx advise rows"
[ "$N" -gt 11 ] || fail "the fixture's 4 GPUs / gbs 16 query has $N rows: too few to scroll at 80x24"
keys End; wait_for " #$N tp "
check_numbers 4 16
resize 80x24 " #$N tp "
screen | grep -qE "^ > $N " || fail "the list did not scroll to the selection"
golden tui_advise_end_80x24
resize "${COLS}x${ROWS}" " #$N tp "
keys Home; wait_for " #1 tp "
# at 80x24 the chart has no room beside the list: the summary says v, v shows it alone
resize 80x24 " #1 tp "
screen | grep -qF "; v: chart" || fail "80x24 does not say where the chart is"
keys v; wait_for "v: back to the list"
wait_for "Pareto chart: step time (ms) vs memory per GPU (GB)"
wait_for "○ does not fit  ● fits  ■ Pareto front  ◆ selected"
golden tui_advise_chart_80x24
keys a; wait_for "x does not fit  o fits  # Pareto front  @ selected"
keys a v; wait_for "    #  tp  pp  dp  mbs num_mb"
resize "${COLS}x${ROWS}" " #1 tp "
# the bounds of the query: one message, nothing recomputed
keys g g; wait_for "query: 1 GPUs  global batch 16"
keys g; wait_for "GPUs: 1 is the least (allowed: 1 to 65536)"
# q and Esc close the screen (F10 quits); the run view is as it was
keys q; wait_for "view: table (ms)"
keys A; wait_for "query: 2 GPUs  global batch 32"
keys Escape; wait_for "view: table (ms)"
quit_and_check

# monochrome: no colour escapes, the same text
colours() { tmx capture-pane -e -p -t e2e | grep -cE $'\e\\[[0-9;]*(3[0-7]|4[0-7]|38;5|48;5)[;m]' ; }
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
keys A; wait_for "query: 2 GPUs  global batch 32"
settle
normal_screen > "$TMP/colour.txt"
keys Escape; wait_for "view: table (ms)"
quit_and_check
TUI_ENV="NO_COLOR=1" start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
keys A; wait_for "query: 2 GPUs  global batch 32"
settle
[ "$(colours)" -eq 0 ] || fail "NO_COLOR still drew colours on the advise screen"
normal_screen | diff -u "$TMP/colour.txt" - >&2 || fail "monochrome advise screen differs from the colour one"
keys Escape; wait_for "view: table (ms)"
quit_and_check

# a run without a measured point (every MBS out of memory): the model's error, whole, and the
# keys still work
rm -rf "$STORE"
make_run 2026-11-20__11-00-00_bbbb0002 --status cancelled --oom-at 1
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
keys A; wait_for "has no measured point (allowed: a run with at least one point"
wait_for "of status ok)"
wait_for "g/G and b/B change the query; Esc goes back"
keys G; wait_for "query: 4 GPUs"
keys Escape; wait_for "view: table (ms)"
quit_and_check

# the shipped CPU recording (a real sweep: measured dp_allreduce and tp_allreduce cells, a GPU
# memory from this host's MemTotal, so no golden): the screen's numbers are pdbx advise's
REC="$SRC/recordings/quick-cpu-amd-epyc-2core.pdbx"
if [ -f "$REC" ]; then
    rm -rf "$STORE"
    PDBX_STORE="$STORE" "$PDBX" import "$REC" >/dev/null || fail "import of $REC"
    A=$(basename "$(ls "$STORE"/runs/*.pdbx | head -1)" .pdbx)
    start
    wait_for "1 run"
    keys Enter; wait_for "view: table (ms)"
    keys A; wait_for "query: 2 GPUs  global batch 32"
    check_numbers 2 32
    keys G G; wait_for "query: 8 GPUs  global batch 32"
    check_numbers 8 32
    keys Escape; wait_for "view: table (ms)"
    quit_and_check
fi
echo PASS
