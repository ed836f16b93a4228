#!/usr/bin/env bash
# Sweep overhead of the quick preset: wall time / time spent inside timed operations.
#   measured  = sum over op, comm and coll cells of mean x count           (measured steps)
#   executed  = measured x (warmup + steps) / steps                          (warmup included)
# ratio_exec = wall / executed is the engine's own overhead (prepare, barriers, gathers, event
# writes); goal <= 1.25. ratio_meas = wall / measured also charges the warmup steps.
source "$(dirname "$0")/common.inc"
"$PDBX" plan quick | head -4
t0=$(date +%s.%N)
id=$("$PDBX" run quick --store "$TMP/st" 2>"$TMP/err") || { cat "$TMP/err"; exit 1; }
t1=$(date +%s.%N)
f=$TMP/st/runs/$id.pdbx
ev_py "$f" "
wall_cli = $t1 - $t0
S = [e for e in E if e['type'] == 'run_start'][0]
end = [e for e in E if e['type'] == 'run_end'][0]
w, s = S['warmup'], S['steps']
meas = sum(e['stats']['mean'] * e['stats']['count'] for e in E if e['type'] in ('op', 'comm', 'coll')) / 1e3
execd = meas * (w + s) / s
print('quick: %d points, %d ranks, warmup %d, steps %d, status %s' % (len(S['points']), S['world_size'], w, s, end['status']))
print('wall (pdbx run, launch to exit)   %8.2f s' % wall_cli)
print('wall (engine, start to run_end)   %8.2f s' % end['elapsed_s'])
print('inside timed ops, measured steps  %8.2f s' % meas)
print('inside timed ops, incl. warmup    %8.2f s' % execd)
print('ratio wall_engine / executed      %8.3f   (goal <= 1.25)' % (end['elapsed_s'] / execd))
print('ratio wall_cli / executed         %8.3f' % (wall_cli / execd))
print('ratio wall_engine / measured      %8.3f' % (end['elapsed_s'] / meas))
"
