#!/usr/bin/env bash
# Launchers through the real pdbx run, supervisor and mpirun (docs/launch.md):
#  - --dry-run prints the mpirun line per rank count (--hosts, --launcher-args split like a
#    shell) and creates nothing; a bad --hosts entry is named (exit 2);
#  - nodes: 2 with the local launcher is refused (exit 2, one line naming the ways out), no run;
#  - --simulate-nodes runs it here and the run says so: run_start's launcher, ls, show;
#  - --hosts $(hostname):2 runs a real tiny sweep through mpirun --host, the command line used
#    is recorded in run_start and printed by show, with the rank placement.
source "$(dirname "$0")/engine_common.inc"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
export PDBX_ENGINE=$ENGINE
ST=$TMP/store
H=$(hostname)

tiny_spec "$TMP/two.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"' 'gpus_per_node=1' 'nodes=2' \
    'steps=1'

phase 'dry run'
"$PDBX" run "$TMP/two.json" --store "$ST" --hosts "$H:1,other-node:1" \
    --launcher-args "--mca btl 'tcp,self,vader'" --dry-run >"$TMP/dry" 2>"$TMP/err" \
    || { cat "$TMP/err"; fail "--dry-run exit $?"; }
[ "$(wc -l <"$TMP/dry")" -eq 1 ] || { cat "$TMP/dry"; fail "--dry-run: want one line (one rank count)"; }
grep -q "^mpirun .*--mca btl tcp,self,vader --bind-to none --host $H:1,other-node:1 --map-by ppr:1:node .*-np 2 $ENGINE --spec $ST/logs/.*\.spec\.json --store $ST --run-id " "$TMP/dry" \
    || { cat "$TMP/dry"; fail "--dry-run line"; }
grep -q -- "--oversubscribe" "$TMP/dry" && fail "--dry-run: --oversubscribe on real hosts"
[ -e "$ST" ] && fail "--dry-run created the store"
"$PDBX" run "$TMP/two.json" --store "$ST" --hosts "$H:1,bad host:1" --dry-run >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] || fail "bad --hosts: exit $rc, want 2"
grep -q "hosts: 'bad host' is not a host name" "$TMP/err" || { cat "$TMP/err"; fail "bad host not named"; }

phase 'local refuses nodes 2'
"$PDBX" run "$TMP/two.json" --store "$ST" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] || { cat "$TMP/err"; fail "local with nodes 2: exit $rc, want 2"; }
[ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "want one line"; }
grep -q -- "--hostfile FILE or --hosts" "$TMP/err" && grep -q -- "--simulate-nodes" "$TMP/err" \
    && grep -q "srun" "$TMP/err" || { cat "$TMP/err"; fail "the refusal does not name the ways out"; }
[ -z "$(ls "$ST/runs" 2>/dev/null)" ] || fail "a refused launch created a run"

phase 'simulated nodes'
id=$("$PDBX" run "$TMP/two.json" --store "$ST" --simulate-nodes 2>"$TMP/err") \
    || { cat "$TMP/err"; fail "--simulate-nodes run"; }
f=$ST/runs/$id.pdbx
ev_py "$f" 'rs=[e for e in E if e["type"]=="run_start"][0]; import sys; sys.exit(0 if rs.get("launcher")=="simulated 2 nodes" and rs["command"].startswith("mpirun ") else 1)' \
    || fail "run_start does not record the simulated nodes"
"$PDBX" ls --store "$ST" | grep "$id" | grep -q "simulated 2 nodes" || { "$PDBX" ls --store "$ST"; fail "ls does not say simulated"; }
"$PDBX" show "$id" --store "$ST" >"$TMP/show" || fail "show"
grep -q "^launched simulated 2 nodes: mpirun .* -np 2 " "$TMP/show" || { head -6 "$TMP/show"; fail "show header"; }

phase "--hosts $H:2"
tiny_spec "$TMP/one.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:1"' 'gpus_per_node=2' 'steps=1' \
    'collectives=true' 'coll_sizes=[4096]'
id=$("$PDBX" run "$TMP/one.json" --store "$ST" --hosts "$H:2" 2>"$TMP/err") \
    || { cat "$TMP/err"; fail "--hosts run"; }
f=$ST/runs/$id.pdbx
ev_py "$f" 'import sys; rs=[e for e in E if e["type"]=="run_start"][0]; end=[e for e in E if e["type"]=="run_end"][-1]; sys.exit(0 if rs.get("launcher")=="mpirun on 1 host" and " --host '"$H"':2 --map-by ppr:2:node " in rs["command"] and end["status"]=="complete" else 1)' \
    || { ev_py "$f" 'print([e for e in E if e["type"] in ("run_start","run_end")])' | head -c 3000; fail "--hosts run not recorded"; }
"$PDBX" show "$id" --store "$ST" >"$TMP/show" || fail "show"
grep -q "^launched mpirun on 1 host: mpirun .*--host $H:2 " "$TMP/show" || { head -6 "$TMP/show"; fail "show: command"; }
grep -q "^ranks (host/local rank): 0 $H/0, 1 $H/1$" "$TMP/show" || { head -6 "$TMP/show"; fail "show: placement"; }
ev_py "$f" 'import sys; rs=[e for e in E if e["type"]=="run_start"][0]; p=rs["env"]["placement"]; sys.exit(0 if [(x["rank"],x["host"],x["local_rank"],x["device"]) for x in p]==[(0,"'"$H"'",0,-1),(1,"'"$H"'",1,-1)] else 1)' \
    || fail "run_start env.placement"
# every collective says whether its group crossed nodes, from the real host names: one host here
ev_py "$f" 'import sys; c=[e for e in E if e["type"]=="coll"]; sys.exit(0 if c and all(x["nodes"]==1 and x["spans_nodes"] is False for x in c) else 1)' \
    || fail "coll events without nodes/spans_nodes"
grep -qE "^  all_reduce +4.0 KiB +2 +2 .* 1 intra$" "$TMP/show" || { sed -n '/^collectives/,$p' "$TMP/show"; fail "show: collectives nodes column"; }
# the run's launcher is the supervisor on this host: not the simulated kind in ls
"$PDBX" ls --store "$ST" | grep "$id" | grep -q simulated && fail "ls says simulated for a --hosts run"
phase 'a rank lost'
# a lost rank (its node gone, here kill -9) ends the run failed naming the rank and node from
# mpirun's own report, the points measured before it kept
tiny_spec "$TMP/long.json" 'configs=[{"tp":2,"pp":1,"dp":1}]' 'mbs="1:64"' 'gpus_per_node=2' 'steps=3'
id=$("$PDBX" run "$TMP/long.json" --store "$ST" --hosts "$H:2" --detach 2>"$TMP/err") || { cat "$TMP/err"; fail "run long"; }
f=$ST/runs/$id.pdbx
for _ in $(seq 300); do
    ev_py "$f" 'import sys; sys.exit(0 if any(e["type"]=="point_end" for e in E) else 1)' 2>/dev/null && break
    sleep 0.1
done
ranks=$(pgrep -f "^$ENGINE .*--run-id $id" | sort -n)
[ "$(echo "$ranks" | wc -l)" -eq 2 ] || fail "expected 2 engine ranks, got: $ranks"
kill -9 $(echo "$ranks" | tail -1)
for _ in $(seq 300); do
    ev_py "$f" 'import sys; sys.exit(0 if any(e["type"]=="run_end" for e in E) else 1)' 2>/dev/null && break
    sleep 0.1
done
ev_py "$f" '
end = [e for e in E if e["type"] == "run_end"][-1]
assert end["status"] == "failed", end
assert any(e["type"] == "point_end" and e["status"] == "ok" for e in E), "points lost"
print(end["reason"])' >"$TMP/reason" || fail "lost rank: run end"
grep -qE "^mpirun \(-np 2\) exited with status [0-9]+ without a run end: it lost rank [01] on node $H$" "$TMP/reason" \
    || { cat "$TMP/reason"; fail "the run end does not name the lost rank's node"; }

phase 'srun without a Slurm here'
# srun installed but no Slurm to talk to (no slurmctld): the attempt is a failed run with srun's
# own reason, not a hang (tests/e2e/test_slurm.sh runs a real one)
if command -v srun >/dev/null && ! timeout 10 srun --mpi=list >/dev/null 2>&1; then
    id=$(timeout 60 "$PDBX" run "$TMP/one.json" --store "$ST" --launcher srun 2>"$TMP/err")
    rc=$?
    [ $rc -eq 1 ] || { cat "$TMP/err"; fail "srun without Slurm: exit $rc, want 1"; }
    "$PDBX" ls --store "$ST" | grep "$id" | grep -q "failed.*srun: " || { "$PDBX" ls --store "$ST"; fail "srun's reason not recorded"; }
fi

phase 'sbatch script'
"$PDBX" run "$TMP/two.json" --store "$ST" --sbatch "$TMP/job.sh" --time 0:20:00 >"$TMP/out" 2>"$TMP/err" \
    || { cat "$TMP/err"; fail "--sbatch"; }
[ "$(cat "$TMP/out")" = "sbatch $TMP/job.sh" ] || { cat "$TMP/out"; fail "--sbatch: want the sbatch command on stdout"; }
bash -n "$TMP/job.sh" || fail "the batch script is not bash -n clean"
for want in '#SBATCH --nodes=2' '#SBATCH --ntasks-per-node=1' '#SBATCH --time=0:20:00' \
            "#SBATCH --output=$ST/logs/" "--ntasks=2 --ntasks-per-node=1 " "$ENGINE --spec $ST/logs/"; do
    grep -qF -- "$want" "$TMP/job.sh" || { cat "$TMP/job.sh"; fail "batch script lacks '$want'"; }
done
grep -q "gpus-per-node" "$TMP/job.sh" && fail "a cpu sweep asks for GPUs"
"$PDBX" run "$TMP/two.json" --store "$ST" --sbatch "$TMP/job2.sh" --time 1h >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "time: '1h' is not a Slurm time" "$TMP/err" || { cat "$TMP/err"; fail "bad --time"; }
# (an sbatch run's liveness seen from a login node: test_store_runs, test_liveness_sbatch)
phase done
echo PASS
