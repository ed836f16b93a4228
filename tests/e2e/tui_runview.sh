#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# Explorer run view through tmux: open a run, the MBS x ops table (golden), tabs per config and
# the collectives tab, the chart views (shares, cost vs MBS with log scale, roofline), stat choice;
# a run with attn_rope and the residual adds (their rows in forward order, golden); the fixtures
# without them are runs recorded before pdbx measured them (no rows for them); a MoE run, and one
# with an EP 2 config (its own tab "TP1 PP1 DP2 EP2", golden).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
# the explorer prints local time (docs/tui.md); the golden screens were taken in UTC
export TZ=UTC
A=2026-11-20__10-00-00_aaaa0001
make_run "$A"
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
golden tui_runview_table
golden_sizes tui_runview_table "view: table (ms)"
# the fixture's attn_q at TP1 is 1.0 + 0.9 (MBS - 1) ms: 1.00 1.90 3.70 7.30
screen | grep -E '^ attn_q +1\.00 +1\.90 +3\.70 +7\.30' >/dev/null || fail "attn_q row"
keys s; wait_for "stat: median"
screen | grep -E '^ attn_q +0\.990 +1\.88 +3\.66 +7\.23' >/dev/null || fail "median row"
keys s s s s; wait_for "stat: mean"
# second tab: TP2 halves the compute ops and adds the TP all-reduces
keys Tab; wait_for "tp_allreduce_attn"
screen | grep -E '^ attn_q +0\.500 +0\.950 +1\.85 +3\.65' >/dev/null || fail "TP2 attn_q row"
golden tui_runview_tp2
keys Tab; wait_for "busbw GB/s"
screen | grep -E '^ all_gather +1 MiB +2 +2' >/dev/null || fail "collectives rows (sizes in KiB/MiB)"
# the busbw chart under the table: GB/s ticks at decades, sizes in KiB/MiB, a legend per series
wait_for "busbw (GB/s, linear scale) vs message size (bytes)"
screen | grep -E '^ +size 4 KiB +64 KiB +1 MiB *$' >/dev/null || fail "message size axis"
golden_sizes tui_runview_collectives "busbw GB/s"
# at 80x24 the chart fits under the table (it used to vanish without a word; with more
# collectives than rows it says "no room" instead); v shows it alone, g on a log scale
resize 80x24 "busbw GB/s"
wait_for "busbw (GB/s, linear scale)"
keys v; wait_for "v: back to the table"
screen | grep -F "● all_reduce  ○ all_gather" >/dev/null || fail "collectives legend at 80x24"
keys g; wait_for "busbw (GB/s, log scale)"
screen | grep -E '^ +1 GB/s┤' >/dev/null || fail "decade tick 1 GB/s"
golden_sizes tui_runview_collectives_chart "busbw (GB/s, log scale)"
keys g v; wait_for "collective "
# below 80x24 every screen gives way to the too-small message
resize 80x20 "terminal too small"
golden tui_too_small_80x20
resize "${COLS}x${ROWS}" "busbw GB/s"
keys Tab; wait_for "TP1 PP1 DP2"
keys v; wait_for "table (share of total)"
wait_for "layer (ms)"
# shares of the measured sums: attn_q at MBS 1 is 1.00 ms of the fixture's 13.4 ms layer
screen | grep -E '^ attn_q +7\.[45]%' >/dev/null || fail "attn_q share of the measured layer"
screen | grep -E '^ total \(ms\) +39\.8 ' >/dev/null || fail "total (ms) row in the share view"
golden_sizes tui_runview_shares "table (share of total)"
keys v; wait_for "op shares per MBS"
wait_for "MBS 8"
# a 0-100% axis under the bars, every op in the legend (16 ops: none dropped at 80 columns)
wait_for "share 0%"
golden_sizes tui_runview_bars "op shares per MBS"
keys v; wait_for "cost vs MBS"
wait_for "linear scale"
# units on both axes; the fixture's mlp_gate, mlp_up and mlp_down are equal: their points show
# as one count ('3') that the legend explains, instead of hiding two series
screen | grep -E '^ +100 ms┤' >/dev/null || fail "ms tick"
screen | grep -E '^ +MBS 1 ' >/dev/null || fail "MBS axis name"
wait_for "2-9 that many series at one point"
golden_sizes tui_runview_cost "linear scale) vs MBS"
# plain ASCII (a): markers o x # @ % & $ s, connectors . - : ~ ' , ` _, the same counts
keys a; wait_for "100 ms+"
screen | grep -E '^ o lm_head  x mlp_gate  # mlp_up  @ mlp_down  % attn_core' >/dev/null || fail "ASCII legend"
golden tui_runview_cost_ascii
keys a; wait_for "100 ms┤"
keys g; wait_for "log scale on"
wait_for "(ms, log scale)"
# decades: 0.1 ms, 1 ms, 10 ms, 100 ms
for t in "100 ms┤" "10 ms┤" " 1 ms┤" "0.1 ms┤"; do screen | grep -qF -- "$t" || fail "log tick $t"; done
golden_sizes tui_runview_cost_log "(ms, log scale)"
keys o; wait_for "cost chart: embed"
keys v; wait_for "roofline efficiency"
wait_for "A100-80G fp32"
golden_sizes tui_runview_roofline "roofline efficiency"
screen | grep -E '^ mlp_gate +[0-9.]+%' >/dev/null || fail "roofline efficiency of mlp_gate"
# memory per rank: profile prediction, measured peak, their ratio, training memory and verdict
keys v; wait_for "memory per rank, GPU preset A100-80G"
golden_sizes tui_runview_memory "memory per rank"
screen | grep -E '^ +1 +238 MiB +248 MiB +1\.040 +1\.4 GiB +fits' >/dev/null || fail "memory row of MBS 1"
keys Escape; wait_for "1 run"
quit_and_check
# seven collectives: at 80x24 the table leaves the chart no room and says so; alone (v) its
# one-row legend ends "+4 more (L)" and L pages through the rest and back: no series dropped
C=2026-11-20__09-00-00_cccc0007
make_run "$C" --colls 7 --t0 1795165200
COLS=80 ROWS=24 start
wait_for "2 runs"
keys End Enter; wait_for "view: table (ms)"
keys Tab Tab; wait_for "busbw GB/s"
wait_for "reduce_scatter"
wait_for "busbw chart: no room under the table at this size; v shows it alone"
golden_sizes tui_runview_collectives_many "busbw GB/s"
resize 80x24 "busbw chart: no room"
keys v; wait_for "v: back to the table"
screen | grep -E '^ ● all_reduce  ○ all_gather  ■ reduce_scatter  □ alltoall  \+4 more \(L\) *$' >/dev/null \
    || fail "first legend page"
golden tui_runview_collectives_legend_80x24
keys L; wait_for "▲ broadcast  △ reduce  ◆ send_recv  +1 more (L)"
keys L; wait_for "that many series at one point  (L: first)"
keys L; wait_for "□ alltoall  +4 more (L)"
quit_and_check
rm -f "$STORE/runs/$C.pdbx"
# a corrupt run: listed as corrupt with the reason, opens with the events before the damage
X=2026-11-20__12-00-00_eeee0005
make_run "$X"
head -c 4000 "$STORE/runs/$X.pdbx" > "$TMP/x.head"
tail -c +4001 "$STORE/runs/$X.pdbx" > "$TMP/x.tail"
{ cat "$TMP/x.head"; printf 'garbage in the middle of the run file'; cat "$TMP/x.tail"; } > "$STORE/runs/$X.pdbx"
start
wait_for "2 runs"
wait_for "corrupt"
keys Home Enter
wait_for "corrupt run: showing the events before the damage"
wait_for "view: table (ms)"
keys Escape; wait_for "2 runs"
# the other run is unaffected
keys End Enter; wait_for "view: table (ms)"
screen | grep -E '^ attn_q +1\.00 +1\.90 +3\.70 +7\.30' >/dev/null || fail "the healthy run after a corrupt one"
keys Escape; wait_for "2 runs"
quit_and_check
# a run that measured attn_rope and the residual adds (--rope): their rows in forward order,
# rope after attn_v, each residual add after its TP all-reduce (TP 2); the fixture's attn_rope
# at TP1 is 0.05 + 0.04 (MBS - 1) ms: 0.05 0.09 0.17 0.33
rm -rf "$STORE"
make_run 2026-11-20__12-00-00_aaaa0003 --rope
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -E '^ attn_rope +0\.050 +0\.090 +0\.170 +0\.330' >/dev/null || fail "attn_rope row"
screen | grep -A1 -E '^ attn_v ' | grep -qE '^ attn_rope ' || fail "attn_rope not after attn_v"
screen | grep -qE '^ attn_residual ' && screen | grep -qE '^ mlp_residual ' || fail "residual rows"
golden_sizes tui_runview_rope "view: table (ms)"
# at 80x24 the 17 op rows do not fit: the table says which show and scrolls to lm_head
resize 80x24 "view: table (ms)"
wait_for "ops 1-14 of 17: Up/Down scroll"
keys Down Down Down; wait_for "ops 4-17 of 17: Up/Down scroll"
screen | grep -qE '^ lm_head +12\.0 ' || fail "lm_head not reachable at 80x24"
keys Up Up Up; wait_for "ops 1-14 of 17"
resize "${COLS}x${ROWS}" "view: table (ms)"
keys Tab; wait_for "tp_allreduce_attn"
screen | grep -A1 -E '^ tp_allreduce_attn ' | grep -qE '^ attn_residual ' || fail "attn_residual not after the TP all-reduce"
quit_and_check
# a mixture-of-experts run (--moe, Mixtral-shaped): the MoE layer's ops in forward order where a
# dense layer has mlp_* (none of those), their shares of the measured layer and the bars per
# MBS, goldens at 80x24 and 200x50; the fixture's moe_expert_gate at TP1 is 2.0 + 1.4 (MBS - 1)
rm -rf "$STORE"
make_run 2026-11-20__13-00-00_aaaa0004 --moe
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -E '^ moe_expert_gate +2\.00 +3\.40 +6\.20 +11\.8' >/dev/null || fail "moe_expert_gate row"
screen | grep -A1 -E '^ post_attn_norm ' | grep -qE '^ moe_router ' || fail "moe_router not after post_attn_norm"
screen | grep -A1 -E '^ moe_expert_down ' | grep -qE '^ moe_unpermute ' || fail "moe_unpermute not after the experts"
screen | grep -qE '^ mlp_(gate|up|down|act_fn) ' && fail "a MoE run shows dense MLP rows"
golden_sizes tui_runview_moe "view: table (ms)"
keys v; wait_for "table (share of total)"
wait_for "layer (ms)"
golden_sizes tui_runview_moe_shares "table (share of total)"
keys v; wait_for "op shares per MBS"
wait_for "MBS 8"
golden_sizes tui_runview_moe_bars "op shares per MBS"
quit_and_check
# expert parallelism (--moe --ep 2): TP1 PP1 DP2 at EP 2 is a third config with its own tab,
# labelled "TP1 PP1 DP2 EP2" (the dense tabs keep their labels), its rows with the EP
# all-to-alls in forward order and its expert GEMMs at 0.75 x EP 1's (2.0 + 1.4 (MBS - 1) ms)
rm -rf "$STORE"
make_run 2026-11-20__14-00-00_aaaa0005 --moe --ep 2
start
wait_for "1 run"
keys Enter; wait_for "view: table (ms)"
screen | grep -qF "TP1 PP1 DP2 EP2" || fail "no EP 2 tab"
keys Tab Tab; wait_for "ep_dispatch"
screen | grep -E '^ moe_expert_gate +1\.50 +2\.55 +4\.65 +8\.85' >/dev/null || fail "EP 2 moe_expert_gate row"
screen | grep -A1 -E '^ moe_permute ' | grep -qE '^ ep_dispatch ' || fail "ep_dispatch not after moe_permute"
screen | grep -A1 -E '^ moe_expert_down ' | grep -qE '^ ep_combine ' || fail "ep_combine not after the experts"
golden_sizes tui_runview_ep "ep_dispatch"
keys Tab; wait_for "busbw GB/s"
keys Tab; wait_for "view: table (ms)"
screen | grep -qE '^ ep_dispatch ' && fail "ep_dispatch in the EP 1 table"
quit_and_check
# the point's DP gradient all-reduce shows under the total of a DP config (the shipped CPU
# recording: 25.81, 25.74, 24.72, 24.15 ms mean at MBS 1, 2, 4, 8, as `pdbx show` prints), and
# the recording's measured layer and total (129.7 .. 915.6 and 309.3 .. 2181 ms)
REC="$SRC/recordings/quick-cpu-amd-epyc-2core.pdbx"
if [ -f "$REC" ]; then
    rm -rf "$STORE"
    PDBX_STORE="$STORE" "$PDBX" import "$REC" >/dev/null || fail "import of $REC"
    COLS=80 ROWS=24 start
    wait_for "1 run"
    keys Enter; wait_for "view: table (ms)"
    wait_for "TP1 PP1 DP2"
    screen | grep -E '^ dp_allreduce +25\.8 +25\.7 +24\.7 +24\.1 *$' >/dev/null || fail "dp_allreduce row"
    screen | grep -E '^ layer +130 +243 +465 +916 *$' >/dev/null || fail "measured layer row of the recording"
    screen | grep -E '^ total +309 +580 +1110 +2181 *$' >/dev/null || fail "measured total row of the recording"
    # the cpu preset has no peak: its roofline says N/A, never 0.0 TFLOP/s or 0 GB/s
    keys v v v v; wait_for "roofline efficiency"
    wait_for "cpu fp32, peak N/A, bandwidth N/A"
    wait_for "N/A: the GPU preset cpu gives no peak or bandwidth to compare with"
    quit_and_check
fi
echo PASS
