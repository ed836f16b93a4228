#!/usr/bin/env bash
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# The progress line of `pdbx run` / `pdbx attach` (tui/cli/cli_progress.c, store/progress.c):
#  - a real tiny sweep (2 ranks, collectives on) run by `pdbx run` inside tmux at 80x24: no
#    line of the pane is wider than 79 columns (capture-pane -J joins wrapped rows, so a wrap
#    shows as a longer line) and the pane is not flooded (the line is redrawn in place);
#  - the same at 60 columns, then the pane widened to 120 (SIGWINCH): the line uses the width;
#  - stderr not a terminal: plain lines (no \r, no escapes), at most one per point, 100% last;
#  - `pdbx attach` to a crafted running run whose heartbeat holds hostile values (1e999, -1e300,
#    done > total, total 0, a huge coll_total) prints sane lines (no UBSan report in build-san);
#  - the explorer's monitor and `pdbx attach` print the same percentage for the same run.
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash" || exit 1
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
[ -x "$BUILD/bin/pdbx-engine" ] || { echo "SKIP: pdbx-engine not built"; exit 77; }
export OMPI_MCA_rmaps_base_oversubscribe=1
# OpenMPI's plugins keep process-lifetime allocations (see engine_common.inc)
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
SECONDS=0

cat > "$TMP/spec.json" <<EOF
{"name": "e2e-progress", "model": "$SRC/tests/e2e/fixtures/engine-tiny-llama.json", "gpu": "cpu",
 "layers": 2, "seq_len": 128, "dtype": "fp32", "backend": "cpu", "gpus_per_node": 2, "nodes": 1,
 "configs": [{"tp": 1, "pp": 1, "dp": 2}], "mbs": "1:8", "repetition": "fixed", "warmup": 1, "steps": 3, "ops": "all",
 "collectives": true, "coll_sizes": [4096, 65536], "predict_oom": false, "timeout_s": 60}
EOF

# stop_tmux: the private tmux server gone, its socket too (a new one started at once can
# find the old one on its way out)
stop_tmux() {
    tmx kill-server >/dev/null 2>&1
    local i=0
    while tmx has-session 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    sleep 0.2
}

# sweep_in_tmux COLS [WIDEN_TO]: `pdbx run` in a COLS x 24 pane; samples the pane every 0.1 s
# until the run ends. Sets MAX_BEFORE / MAX_AFTER (longest progress line before / after the
# pane was widened to WIDEN_TO, once a progress line showed) and MAX_ROWS (non-empty rows).
sweep_in_tmux() {
    local cols=$1 widen=${2:-0} widened=0 pane line len rows i=0
    MAX_BEFORE=0 MAX_AFTER=0 MAX_ROWS=0
    stop_tmux
    tmx new-session -d -x "$cols" -y 24 -s e2e \
        "cd $TMP && env TERM=screen-256color LC_ALL=C.UTF-8 ASAN_OPTIONS=${ASAN_OPTIONS:-} $PDBX run $TMP/spec.json --store $STORE >$TMP/out.txt; echo \"[pdbx exited \$?]\"; sleep 600" \
        || fail "tmux did not start"
    while :; do
        pane=$(tmx capture-pane -p -J -t e2e)
        rows=$(printf '%s\n' "$pane" | grep -c .)
        [ "$rows" -gt "$MAX_ROWS" ] && MAX_ROWS=$rows
        while IFS= read -r line; do
            case $line in "pdbx run:"*) continue ;; esac      # its own messages, once each
            len=${#line}
            if [ $widened = 1 ]; then
                [ "$len" -gt "$MAX_AFTER" ] && MAX_AFTER=$len
            else
                [ "$len" -gt "$MAX_BEFORE" ] && MAX_BEFORE=$len
            fi
        done <<< "$pane"
        printf '%s\n' "$pane" | grep -q '\[pdbx exited' && break
        if [ "$widen" -gt 0 ] && [ $widened = 0 ] && printf '%s\n' "$pane" | grep -q ' points'; then
            tmx resize-window -t e2e -x "$widen" -y 24
            sleep 0.3                       # SIGWINCH, then the next redraw (every 0.2 s)
            widened=1
        fi
        i=$((i + 1))
        [ $i -lt 600 ] || fail "the sweep did not end within 60 s"
        sleep 0.1
    done
    printf '%s\n' "$pane" | grep -q '\[pdbx exited 0\]' || fail "pdbx run failed at $cols columns"
    printf '%s\n' "$pane" | grep -q 'complete (4 points)' || fail "no end line at $cols columns"
    LAST_PANE=$pane
}

# ---- 80x24: never wider than 79 columns, redrawn in place ---------------------------------
sweep_in_tmux 80
echo "80 columns: longest line $MAX_BEFORE, at most $MAX_ROWS rows in use"
[ "$MAX_BEFORE" -le 79 ] || fail "a line of $MAX_BEFORE columns at 80 (it wraps)"
[ "$MAX_ROWS" -le 5 ] || fail "$MAX_ROWS rows in use at 80 columns: the progress line floods the pane"
[ "$MAX_BEFORE" -ge 40 ] || fail "the progress line is suspiciously short ($MAX_BEFORE)"
printf '%s\n' "$LAST_PANE" | grep -q '100%  4/4 points' || fail "the last line is not 100% at 80 columns"

# ---- 60 columns, then widened to 120 (SIGWINCH) -------------------------------------------
sweep_in_tmux 60 120
echo "60 columns: longest $MAX_BEFORE; widened to 120: longest $MAX_AFTER; rows $MAX_ROWS"
[ "$MAX_BEFORE" -le 59 ] || fail "a line of $MAX_BEFORE columns at 60 (it wraps)"
[ "$MAX_ROWS" -le 5 ] || fail "$MAX_ROWS rows in use at 60 columns"
[ "$MAX_AFTER" -gt 59 ] && [ "$MAX_AFTER" -le 119 ] || fail "after widening to 120 the longest line is $MAX_AFTER (the new width was not used)"
stop_tmux

# ---- stderr to a file: plain lines, at most one per point ---------------------------------
"$PDBX" run "$TMP/spec.json" --store "$STORE" >"$TMP/id.txt" 2>"$TMP/log.txt" || fail "non-tty run: $(cat "$TMP/log.txt")"
cat "$TMP/log.txt"
grep -q $'\r' "$TMP/log.txt" && fail "a carriage return in the non-tty log"
grep -q $'\033' "$TMP/log.txt" && fail "an escape sequence in the non-tty log"
$PY - "$TMP/log.txt" <<'EOF' || fail "non-tty lines"
import re, sys
lines = [l for l in open(sys.argv[1]) if " points" in l and not l.startswith("pdbx run:")]
done = [int(re.search(r"(\d+)/4 points", l).group(1)) for l in lines]
assert len(lines) <= 4 + 3, "%d progress lines for 4 points" % len(lines)
# at most one line per point (two points ending within one poll share a line): the count never
# repeats, except 4/4 on the last point's, the collectives' and the end line
assert done == sorted(done), done
assert all(done.count(k) <= 1 for k in range(0, 4)) and done.count(4) <= 3, done
assert "100%" in lines[-1] and "4/4 points" in lines[-1], lines[-1]
assert not any("100%" in l for l in lines[:-1]), "100% before the end"
EOF
# the engine counted the collectives in its heartbeat: the last progress event of the run says
# 14 of 14 (5 collectives, all_gather and reduce_scatter also out of place: 7 x 2 sizes on the
# one group of 2 ranks)
RUN=$(cat "$TMP/id.txt")
zstdcat "$STORE/runs/$RUN.pdbx" | $PY -c '
import json, sys
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0; E = []
while i < len(s):
    while i < len(s) and s[i] in " \n": i += 1
    if i >= len(s): break
    o, i = dec.raw_decode(s, i); E.append(o)
P = [e for e in E if e["type"] == "progress"]
C = [e for e in E if e["type"] == "coll"]
assert P and P[-1]["coll_total"] == 14 and P[-1]["coll_done"] == 14 and len(C) == 14, (P[-1], len(C))
' || fail "heartbeat collectives"

# ---- a crafted running run: hostile heartbeat values, then the same numbers for both ---------
write_run() {   # JSONL OUT: one zstd frame per line; @HOST@/@PID@ become this host and shell
    local host
    host=$(hostname)
    sed -e "s/@HOST@/$host/g" -e "s/\"@PID@\"/$$/g" "$1" | "$FRAMES" > "$2" || fail "jsonl_frames"
}
HOSTILE=2026-11-22__10-00-00_eeee0001
SANE=2026-11-22__11-00-00_eeee0002
$PY - "$TMP" "$HOSTILE" "$SANE" <<'EOF'
import json, sys, time
tmp, hostile, sane = sys.argv[1:4]
t0 = time.time() - 30
def start(rid, n):
    pts = [{"index": i, "tp": 1, "pp": 1, "dp": 2, "mbs": 1, "seq_len": 128} for i in range(n)]
    return {"type": "run_start", "t": t0, "id": rid, "host": "@HOST@", "pid": "@PID@",
            "model": {"name": "Tiny"}, "layers_profiled": 1, "backend": "cpu", "gpu": "cpu",
            "world_size": 2, "ranks_per_node": 2, "points": pts}
def point(i, a, b):
    return [{"type": "point_start", "t": t0 + a, "point": i},
            {"type": "point_end", "t": t0 + b, "point": i, "status": "ok"}]
with open(tmp + "/hostile.jsonl", "w") as f:
    ev = [start(hostile, 4)] + point(0, 1, 2)
    for done, total, coll in (("1e999", "-1e300", "1e999"), ("50", "3", "-5"), ("-1e300", "0", "1e300"),
                              ("1e300", "1e999", "2147483648")):
        ev.append('{"type":"progress","t":%f,"done":%s,"total":%s,"point":1e300,"op":"x","elapsed_s":%s,'
                  '"eta_s":-1e999,"coll_done":%s,"coll_total":%s}' % (t0 + 3, done, total, total, coll, coll))
    ev += [{"type": "point_start", "t": 1e300, "point": 1},
           {"type": "point_end", "t": -1e300, "point": 1, "status": "ok"}]
    for e in ev:
        f.write((e if isinstance(e, str) else json.dumps(e)) + "\n")
with open(tmp + "/sane.jsonl", "w") as f:
    ev = [start(sane, 8)]
    for i in range(3):
        ev += point(i, 2 * i, 2 * i + 2)
    ev.append({"type": "point_start", "t": t0 + 6, "point": 3})
    for e in ev:
        f.write(json.dumps(e) + "\n")
EOF
STORE=$TMP/crafted          # the explorer below opens the only run of this store
mkdir -p "$STORE/runs"
write_run "$TMP/hostile.jsonl" "$STORE/runs/$HOSTILE.pdbx"
write_run "$TMP/sane.jsonl" "$STORE/runs/$SANE.pdbx"

timeout 3 "$PDBX" attach "$HOSTILE" --store "$STORE" >/dev/null 2>"$TMP/hostile.txt"
rc=$?
cat "$TMP/hostile.txt"
[ $rc -eq 124 ] || fail "attach to the hostile running run: exit $rc (expected to still be watching)"
grep -q "runtime error" "$TMP/hostile.txt" && fail "UBSan: $(grep -m1 'runtime error' "$TMP/hostile.txt")"
grep -qE '^\[[#.]{24}\] [0-9]{1,2}%  2/4 points' "$TMP/hostile.txt" || fail "attach line for the hostile run"

timeout 2 "$PDBX" attach "$SANE" --store "$STORE" >/dev/null 2>"$TMP/sane.txt"
ATTACH_PCT=$(grep -oE '[0-9]+%  3/8 points' "$TMP/sane.txt" | tail -1 | cut -d% -f1)
[ "$ATTACH_PCT" = 37 ] || fail "attach says '${ATTACH_PCT}%' for 3 of 8 equal points (floor of 37.5 is 37): $(cat "$TMP/sane.txt")"
rm "$STORE/runs/$HOSTILE.pdbx"
"$PDBX" ls --store "$STORE" | grep "$SANE" | grep -q "running 37%" || fail "pdbx ls: $("$PDBX" ls --store "$STORE")"
COLS=80 ROWS=24 start
wait_for "running 37%"                  # the runs list: the same model
keys Enter
wait_for "3/8 points"
MON_PCT=$(screen | grep -oE '3/8 points +[0-9]+%' | grep -oE '[0-9]+%' | tr -d %)
[ "$MON_PCT" = "$ATTACH_PCT" ] || fail "the monitor says ${MON_PCT}%, pdbx attach ${ATTACH_PCT}%"
echo "monitor, runs list, ls and attach: ${MON_PCT}% for 3 of 8 points"
stop_tmux
# the collectives announced and measured count in the listing too, also when the index resumes
# its scan of the grown file. A collectives measurement weighs one op execution of a 1-layer
# point: 1/39 (store/ops.h has 39 ops; store/progress.c). 3 + 2/39 of 8 + 16/39 units: 36%
# (without the two collectives, 35%)
for line in '{"type":"progress","t":1.0e9,"done":3,"total":8,"point":3,"op":"x","elapsed_s":7,"eta_s":null,"coll_done":0,"coll_total":16}' \
            '{"type":"coll","t":1.0e9,"coll":"all_reduce","bytes":4096,"nranks":2,"stats":{"count":3,"min":1,"max":1,"mean":1,"median":1,"std":0}}' \
            '{"type":"coll","t":1.0e9,"coll":"all_gather","bytes":4096,"nranks":2,"stats":{"count":3,"min":1,"max":1,"mean":1,"median":1,"std":0}}'; do
    printf '%s' "$line" | zstd -q -c >> "$STORE/runs/$SANE.pdbx"
done
timeout 2 "$PDBX" attach "$SANE" --store "$STORE" >/dev/null 2>"$TMP/sane2.txt"
grep -q '36%  3/8 points' "$TMP/sane2.txt" || fail "attach after the collectives: $(cat "$TMP/sane2.txt")"
grep -q '"scan_offset"' "$STORE/index.json" || fail "the index holds no resume state for the running run"
"$PDBX" ls --store "$STORE" | grep "$SANE" | grep -q "running 36%" || fail "pdbx ls (resumed scan): $("$PDBX" ls --store "$STORE")"
# two more: the resumed scan adds to the index's count (2) rather than counting the file's
# collectives again (3 + 4/39 of 8 + 16/39: 36%; counted twice, 6 of them, it would be 37%)
for c in reduce_scatter send_recv; do
    printf '{"type":"coll","t":1.0e9,"coll":"%s","bytes":4096,"nranks":2,"stats":{"count":3,"min":1,"max":1,"mean":1,"median":1,"std":0}}' "$c" \
        | zstd -q -c >> "$STORE/runs/$SANE.pdbx"
done
"$PDBX" ls --store "$STORE" | grep "$SANE" | grep -q "running 36%" || fail "pdbx ls (resumed again): $("$PDBX" ls --store "$STORE")"
timeout 2 "$PDBX" attach "$SANE" --store "$STORE" >/dev/null 2>"$TMP/sane3.txt"
grep -q '36%  3/8 points' "$TMP/sane3.txt" || fail "attach after four collectives: $(cat "$TMP/sane3.txt")"
echo "cli_progress: ok (${SECONDS}s)"
