#!/usr/bin/env bash
# suite: plain build only: namespace hosts integration; the engine and launcher under ASan run in engine_stop, engine_ranks and test_launch_argv
# suite: serial: the namespace hosts and their subnet are host-wide
# Multi-host end to end on one machine (issue 11, "Proof on one machine"): two hosts made of
# network + UTS namespaces (tests/e2e/fixtures/netns_hosts.bash: own host names, a private
# subnet on a bridge inside the first host, /etc/hosts of their own), OpenMPI started over them
# by a launch agent that enters the target namespace instead of ssh.
#  1. `mpirun -np 4 --hostfile` over the hosts prints both host names, two ranks each;
#  2. the quick sweep with nodes: 2 (TP2 x DP2: 4 ranks, 2 per node) through
#     `pdbx run --launcher mpirun --hostfile FILE --launcher-args "<mca settings>"`, started on
#     the first host as a login node would; `--dry-run` first prints the mpirun line;
#  3. `pdbx ls --json` / `pdbx show --format json`: complete, launcher "mpirun on 2 hosts" and
#     its command; placement node by node (ranks 0,1 on the first host, 2,3 on the second,
#     local ranks 0,1 on each; run_start's env.hosts agrees); the collectives sweep's TP group
#     intra-node, the one-rank-per-node group and the world inter-node (nodes 2, spans_nodes);
#  4. cancel reaches every node: `pdbx cancel` of a detached 2-host run leaves no engine rank
#     in either namespace and the run cancelled;
#  5. a node lost mid-sweep (every process of the second host killed after a point is done)
#     ends the run failed, completed points kept.
# Skips (77) when namespaces are not permitted (not root, unshare/ip netns refused). Namespaces
# and their interfaces are removed on every exit. Runs alone:
#   PDBX_SOURCE_DIR=$PWD PYTHON=/usr/bin/python3 PDBX_BUILD=$PWD/build bash tests/e2e/test_multihost.sh
source "$(dirname "$0")/engine_common.inc"
source "$PDBX_SOURCE_DIR/tests/e2e/fixtures/netns_hosts.bash"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
# the hosts are real ones as far as OpenMPI knows: no oversubscription, as on a cluster
unset OMPI_MCA_rmaps_base_oversubscribe
NS_DIR=$TMP/ns
NS_PREFIX=pdbxh$(( $$ % 100000 ))n   # unique per test process: two suites may run at once
SLOTS=2
mkdir -p "$NS_DIR"
trap 'ns_hosts_down; rm -rf "$TMP"' EXIT
if ! ns_hosts_up 2 2>"$TMP/ns.err"; then
    echo "SKIP: network/UTS namespaces not permitted here: $(cat "$TMP/ns.err")"
    exit 77
fi
H1=${NS_HOSTS[0]} H2=${NS_HOSTS[1]}
phase "hosts $H1 $H2 up"

# OpenMPI over the namespace hosts: the agent instead of ssh, TCP on the test subnet only (the
# loopback of each namespace would otherwise look like a route between them); shared memory
# (vader) stays for ranks of one host, which really do share a machine.
MCA="--mca plm_rsh_agent $NS_DIR/agent --mca oob_tcp_if_include pdbx0 --mca btl_tcp_if_include pdbx0 --mca btl self,vader,tcp"
# The agent gives remote daemons a login's bare environment: the sanitizer settings must travel
# to remote ranks the way any variable would.
[ -n "${ASAN_OPTIONS:-}" ] && MCA="$MCA -x ASAN_OPTIONS -x UBSAN_OPTIONS"

# 1. plain mpirun: two distinct host names, two ranks on each
# shellcheck disable=SC2086
ns_exec "$H1" mpirun --allow-run-as-root -np 4 --hostfile "$NS_DIR/hostfile" $MCA hostname \
    >"$TMP/hostnames" 2>"$TMP/mpirun.err" || { cat "$TMP/mpirun.err"; fail "mpirun hostname over the namespace hosts"; }
got=$(sort "$TMP/hostnames" | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
[ "$got" = "${H1}x2 ${H2}x2 " ] || fail "mpirun -np 4 hostname: want ${H1}x2 ${H2}x2, got '$got'"
phase "mpirun hostname: $got"

# 2. the quick sweep on 2 nodes through pdbx run, started on the first host
ST=$TMP/store
RUN=(run quick --nodes 2 --gpus-per-node 2 --tp 2 --dp 2 --mbs 1:2 --seq-len 32 --warmup 0 --steps 1
     --launcher mpirun --hostfile "$NS_DIR/hostfile" --launcher-args "$MCA" --store "$ST")
ns_exec "$H1" env PDBX_ENGINE="$ENGINE" "$PDBX" "${RUN[@]}" --dry-run >"$TMP/dry" 2>&1 \
    || { cat "$TMP/dry"; fail "pdbx run --dry-run"; }
grep -q -- "--hostfile $NS_DIR/hostfile" "$TMP/dry" || { cat "$TMP/dry"; fail "--dry-run: no --hostfile in the mpirun line"; }
grep -q -- "--oversubscribe" "$TMP/dry" && { cat "$TMP/dry"; fail "--dry-run: --oversubscribe on real hosts"; }
[ -d "$ST/runs" ] && [ -n "$(ls "$ST/runs")" ] && fail "--dry-run created a run"
phase "dry run: $(grep -m1 mpirun "$TMP/dry")"
ns_exec "$H1" env PDBX_ENGINE="$ENGINE" "$PDBX" "${RUN[@]}" >"$TMP/id" 2>"$TMP/err" \
    || { cat "$TMP/err"; cat "$ST"/logs/*.log 2>/dev/null | tail -n 30; fail "pdbx run quick on 2 namespace hosts"; }
id=$(cat "$TMP/id")
phase "run $id: $(tail -n 1 "$TMP/err")"

# 3. what the store says, read from outside the hosts as any machine seeing the store would
"$PDBX" ls --json --store "$ST" >"$TMP/ls.json" || fail "pdbx ls --json"
"$PDBX" show "$id" --format json --store "$ST" >"$TMP/show.json" || fail "pdbx show --format json"
"$PY" - "$TMP/ls.json" "$TMP/show.json" "$id" "$H1" "$H2" <<'PYEOF' || { head -c 3000 "$TMP/show.json"; fail "pdbx ls/show of the 2-host run"; }
import json, sys
ls = {r["id"]: r for r in json.load(open(sys.argv[1]))}
d = json.load(open(sys.argv[2])); rid, h1, h2 = sys.argv[3:6]
assert ls[rid]["status"] == "complete", ls[rid]
assert d["status"] == "complete", d["status"]
assert d["launcher"] == "mpirun on 2 hosts", d["launcher"]
assert d["command"].startswith("mpirun ") and "--hostfile" in d["command"], d["command"]
# ranks node by node: gpus_per_node (2) ranks on each host in turn, local ranks 0,1 on each
pl = [(p["rank"], p["host"], p["local_rank"]) for p in d["placement"]]
assert pl == [(0, h1, 0), (1, h1, 1), (2, h2, 0), (3, h2, 1)], d["placement"]
pts = [p for c in d["configs"] for p in c["points"]]
assert len(pts) == 2 and all(p["status"] == "ok" for p in pts), pts
# the collectives sweep's groups, marked from the real host names: the TP group {0,1} on one
# host, the one-rank-per-node group {0,2} and the world {0..3} across both
C = d["collectives"]
want = {"all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all"}
groups = {}
for c in C:
    groups.setdefault((c["nranks"], c["nodes"], c["spans_nodes"]), set()).add(c["coll"])
assert groups == {(2, 1, False): want, (2, 2, True): want, (4, 2, True): want}, groups
assert all(c["time_ms"] > 0 for c in C), C
PYEOF
# placement and launcher as the engine recorded them (run_start): ranks node by node
export H1 H2
ev_py "$ST/runs/$id.pdbx" '
import os
S = [e for e in E if e["type"] == "run_start"][0]
h1, h2 = os.environ["H1"], os.environ["H2"]
assert S["env"]["hosts"] == [h1, h1, h2, h2], S["env"]["hosts"]
assert S["world_size"] == 4 and S["ranks_per_node"] == 2, S
assert S["launcher"] == "mpirun on 2 hosts", S["launcher"]
assert S["command"].startswith("mpirun ") and "--hostfile" in S["command"], S["command"]
assert "--oversubscribe" not in S["command"], S["command"]
assert S["host"] == h1, S["host"]
' || fail "run_start of the 2-host run"
phase "store checked"

# 4. cancel reaches every node: a longer sweep, detached, cancelled once ranks run on both hosts
ns_exec "$H1" env PDBX_ENGINE="$ENGINE" "$PDBX" "${RUN[@]}" --steps 200 --mbs 1:8 --detach >"$TMP/id2" 2>"$TMP/err2" \
    || { cat "$TMP/err2"; fail "pdbx run --detach on 2 namespace hosts"; }
id2=$(cat "$TMP/id2")
engines_on() { ip netns pids "$1" | xargs -r ps -o comm= -p 2>/dev/null | grep -c '^pdbx-engine$'; }
for _ in $(seq 150); do
    [ "$(engines_on "$H1")" = 2 ] && [ "$(engines_on "$H2")" = 2 ] && break
    sleep 0.1
done
[ "$(engines_on "$H2")" = 2 ] || { cat "$ST/logs/$id2.log"; fail "no engine ranks on $H2 after 15 s"; }
phase "run $id2: 2 ranks on each host; cancelling"
ns_exec "$H1" "$PDBX" cancel "$id2" --store "$ST" >"$TMP/cancel" 2>&1 || { cat "$TMP/cancel"; fail "pdbx cancel"; }
for _ in $(seq 100); do
    [ "$(engines_on "$H1")" = 0 ] && [ "$(engines_on "$H2")" = 0 ] && break
    sleep 0.1
done
[ "$(engines_on "$H1")$(engines_on "$H2")" = 00 ] || fail "engine ranks left after cancel: $H1 $(engines_on "$H1"), $H2 $(engines_on "$H2")"
"$PDBX" ls --json --store "$ST" | "$PY" -c '
import json, sys
r = [r for r in json.load(sys.stdin) if r["id"] == sys.argv[1]][0]
assert r["status"] == "cancelled", r' "$id2" || fail "the cancelled run is not cancelled in pdbx ls"
phase "cancelled on both hosts: $(tail -n 1 "$TMP/cancel")"

# 5. a node lost mid-sweep: every process of the second host killed once a point is complete;
# the run ends failed with the completed points kept
ns_exec "$H1" env PDBX_ENGINE="$ENGINE" "$PDBX" "${RUN[@]}" --steps 2 --mbs 1:8 --detach >"$TMP/id3" 2>"$TMP/err3" \
    || { cat "$TMP/err3"; fail "pdbx run --detach on 2 namespace hosts"; }
id3=$(cat "$TMP/id3")
show3() { "$PDBX" show "$id3" --format json --store "$ST" 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(d["status"], sum(p["status"] == "ok" for c in d["configs"] for p in c["points"]))'; }
for _ in $(seq 150); do
    read -r st ok < <(show3)
    [ "${ok:-0}" -ge 1 ] && break
    sleep 0.2
done
[ "${ok:-0}" -ge 1 ] && [ "$st" = running ] || fail "run $id3: want running with a point done, got '$st' with '$ok' points"
ip netns pids "$H2" | xargs -r kill -KILL
phase "run $id3: $ok point(s) done; killed every process on $H2"
for _ in $(seq 150); do
    read -r st ok2 < <(show3)
    [ "$st" != running ] && break
    sleep 0.2
done
[ "$st" = failed ] && [ "$ok2" -ge "$ok" ] || { tail -n 5 "$ST/logs/$id3.log"; fail "run $id3 after losing $H2: want failed with >= $ok points, got '$st' with '$ok2'"; }
reason3=$("$PDBX" show "$id3" --format json --store "$ST" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["reason"])')
# the whole host went, its OpenMPI daemon too: where mpirun's messages name the node (a daemon
# lost, a surviving rank's peer), the reason names it; mpirun does not always say which
if grep -qE "(Remote daemon: .* on node|Peer host: +)$H2" "$ST/logs/$id3.log"; then
    case "$reason3" in *"$H2"*) ;; *) fail "run $id3: the reason does not name the lost node $H2: $reason3";; esac
else
    phase "note: mpirun's messages did not name $H2 this time"
fi
phase "lost node: failed, $ok2 points kept: $reason3"
phase "done"
