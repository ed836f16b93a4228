#!/usr/bin/env bash
# suite: plain build only: Slurm integration; the engine and launcher under ASan run in engine_stop, engine_ranks and test_launch_argv
# suite: serial: the Slurm daemons and their CPU accounting want the machine to themselves
# Slurm end to end on one machine (issue 11, "Proof on one machine"): a real Slurm (Debian's
# munged, slurmctld and slurmd; tests/e2e/fixtures/slurm_local.bash: generated slurm.conf, own
# munge key, socket, ports, state and logs in a temp dir), then the quick sweep (shrunk: seq_len
# 32, MBS 1..2, one step)
#  a. inside an allocation (salloc -N1 -n2): `pdbx run` picks srun by itself (SLURM_JOB_ID set)
#     with the MPI plugin this Slurm offers (`srun --mpi=list`; --dry-run shows the line);
#  b. through `pdbx run quick --sbatch FILE` (bash -n clean) and `sbatch FILE`: `pdbx ls` shows
#     the run running while the job runs; the job ends COMPLETED 0:0;
#  c. cancel: `pdbx cancel` of a detached run inside an allocation, and
#     `scancel --batch --signal=TERM` of a --sbatch job, each leave no rank and the run cancelled;
# and checks the runs of a and b in the store (`pdbx ls --json`, `pdbx show --format json`): complete,
# launched by srun, every rank placed on this node.
# Skips (77) when Slurm or munge is not installed or the daemons cannot start. Daemons are
# stopped and the temp dir removed on every exit. Runs alone:
#   PDBX_SOURCE_DIR=$PWD PYTHON=/usr/bin/python3 PDBX_BUILD=$PWD/build bash tests/e2e/test_slurm.sh
source "$(dirname "$0")/engine_common.inc"
source "$PDBX_SOURCE_DIR/tests/e2e/fixtures/slurm_local.bash"
[ -x "$PDBX" ] || { echo "SKIP: $PDBX not built"; exit 77; }
for c in munged slurmctld slurmd srun salloc sbatch sinfo squeue; do
    command -v "$c" >/dev/null || { echo "SKIP: slurm not installed ($c missing): .ci/setup test (or apt-get install slurmctld slurmd slurm-client munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the test Slurm runs its daemons as root (uid $(id -u))"; exit 77; }
unset SLURM_JOB_ID SLURM_JOBID   # a test started inside someone's allocation starts outside it
trap 'slurm_down; rm -rf "$TMP"' EXIT
chmod 711 "$TMP"   # munged wants every directory above its socket searchable by all
if ! slurm_up "$TMP/slurm" 4 2>"$TMP/slurm.err"; then
    echo "SKIP: the test Slurm's daemons could not start: $(cat "$TMP/slurm.err")"
    exit 77
fi
NODE=$(hostname)   # as the ranks record it (gethostname); slurm.conf has the short name
phase "slurm up: $(sinfo -h -o '%P %D %T %N')"
export PDBX_ENGINE=$ENGINE
ST=$TMP/store
QUICK=(quick --seq-len 32 --warmup 0 --steps 1 --mbs 1:2 --store "$ST")
mpi_list=$(srun --mpi=list 2>&1 | tr -s '\n\t ' ' ')
phase "srun --mpi=list: $mpi_list"

# a. inside an allocation: launcher auto = srun
salloc -N1 -n2 -t 2 "$PDBX" run "${QUICK[@]}" --dry-run >"$TMP/dry" 2>&1 || { cat "$TMP/dry"; fail "pdbx run --dry-run in an allocation"; }
grep -q '^srun .*--mpi=' "$TMP/dry" || grep -q 'srun .*--mpi=' "$TMP/dry" || { cat "$TMP/dry"; fail "--dry-run inside an allocation: no srun --mpi= line"; }
phase "dry run: $(grep -m1 'srun ' "$TMP/dry")"
salloc -N1 -n2 -t 2 "$PDBX" run "${QUICK[@]}" >"$TMP/id_a" 2>"$TMP/err_a" \
    || { cat "$TMP/err_a"; cat "$ST"/logs/*.log 2>/dev/null | tail -n 30; fail "pdbx run inside salloc"; }
id_a=$(cat "$TMP/id_a")
phase "salloc run $id_a: $(grep -m1 'complete' "$TMP/err_a")"

# b. --sbatch writes the batch script; sbatch runs it to its end
"$PDBX" run "${QUICK[@]}" --sbatch "$TMP/job.sh" >"$TMP/sbatch.out" 2>&1 || { cat "$TMP/sbatch.out"; fail "pdbx run --sbatch"; }
bash -n "$TMP/job.sh" || fail "the --sbatch script is not valid bash"
id_b=$(sed -n 's/^#SBATCH --job-name=pdbx-//p' "$TMP/job.sh")
[ -n "$id_b" ] || { cat "$TMP/job.sh"; fail "no run id in the --sbatch script's job name"; }
# its output goes to the store's logs/<id>.log (#SBATCH --output), where pdbx looks for it
jid=$(sbatch --parsable "$TMP/job.sh" 2>"$TMP/submit") || { cat "$TMP/submit"; fail "sbatch job.sh"; }
# polled every 0.2 s: sbatch --wait polls every 2 s and more
job_state() { scontrol -o show job "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*' | tr '\n' ' '; }
# while the job runs, the run shows in pdbx ls as running (from the store alone)
ls_status() { "$PDBX" ls --json --store "$ST" 2>/dev/null | "$PY" -c '
import json, sys
print(*[r["status"] for r in json.load(sys.stdin) if r["id"] == sys.argv[1]])' "$1"; }
seen=""
for _ in $(seq 300); do
    state=$(job_state)
    case "$state" in
        *JobState=PENDING*|*JobState=RUNNING*|*JobState=COMPLETING*|*JobState=CONFIGURING*|"")
            case "$state" in *RUNNING*) [ "$(ls_status "$id_b")" = running ] && seen=running;; esac
            sleep 0.2;;
        *) break;;
    esac
done
[ "$state" = "JobState=COMPLETED ExitCode=0:0 " ] || { cat "$ST/logs/$id_b.log"; fail "sbatch job $jid: '$state'"; }
phase "sbatch run $id_b: job $jid $state"
[ "$seen" = running ] || fail "run $id_b never showed as running in pdbx ls while job $jid ran"
[ -f "$ST/runs/$id_b.pdbx" ] || { cat "$ST/logs/$id_b.log"; fail "the sbatch job left no run $id_b in the store"; }

# c. cancel reaches the ranks under srun and under sbatch: a long sweep, cancelled once both
# ranks run; no rank of it is left and the run reads cancelled
engines_of() { local p n=0; for p in $(pgrep -x pdbx-engine); do grep -qa -- "$1" "/proc/$p/cmdline" 2>/dev/null && n=$((n + 1)); done; echo "$n"; }
wait_engines() {   # id, count: waits up to 20 s for that many ranks of run id
    for _ in $(seq 100); do [ "$(engines_of "$1")" = "$2" ] && return 0; sleep 0.2; done; return 1
}
LONG=(quick --seq-len 32 --warmup 0 --steps 500 --mbs 1:2 --store "$ST")
export -f engines_of wait_engines ls_status
export PDBX PY ST
salloc -N1 -n2 -t 2 bash -c '
    id=$("$PDBX" run "$@" --detach 2>/dev/null) || exit 1
    echo "$id"
    wait_engines "$id" 2 || { echo "no 2 ranks of $id" >&2; exit 1; }
    "$PDBX" cancel "$id" --store "$ST" >&2 || exit 1
    wait_engines "$id" 0 || { echo "ranks of $id left after cancel" >&2; exit 1; }' _ "${LONG[@]}" >"$TMP/id_c" 2>"$TMP/err_c" \
    || { cat "$TMP/err_c"; fail "pdbx cancel of an srun run inside salloc"; }
id_c=$(cat "$TMP/id_c")
[ "$(ls_status "$id_c")" = cancelled ] || { cat "$TMP/err_c"; fail "run $id_c after pdbx cancel: '$(ls_status "$id_c")', want cancelled"; }
phase "srun run $id_c: $(grep -m1 'cancelled' "$TMP/err_c")"
"$PDBX" run "${LONG[@]}" --sbatch "$TMP/long.sh" >/dev/null 2>&1 || fail "pdbx run --sbatch (long)"
id_d=$(sed -n 's/^#SBATCH --job-name=pdbx-//p' "$TMP/long.sh")
jid=$(sbatch --parsable "$TMP/long.sh" 2>"$TMP/submit") || { cat "$TMP/submit"; fail "sbatch long.sh"; }
wait_engines "$id_d" 2 || { cat "$ST/logs/$id_d.log"; fail "no 2 ranks of sbatch run $id_d"; }
for _ in $(seq 100); do [ "$(ls_status "$id_d")" = running ] && break; sleep 0.2; done
# the way docs/launch.md gives: the batch shell gets SIGTERM and passes it to srun as SIGUSR1
scancel --batch --signal=TERM "$jid" || fail "scancel --batch --signal=TERM $jid"
wait_engines "$id_d" 0 || fail "ranks of sbatch run $id_d left after scancel"
for _ in $(seq 100); do [ "$(ls_status "$id_d")" != running ] && break; sleep 0.2; done
[ "$(ls_status "$id_d")" = cancelled ] || { cat "$ST/logs/$id_d.log"; fail "sbatch run $id_d after scancel: '$(ls_status "$id_d")', want cancelled"; }
phase "sbatch run $id_d: cancelled by scancel --batch --signal=TERM"
# pdbx cancel on the batch job's node: the TERM goes to the batch shell alone, which passes it
# to srun as SIGUSR1 (srun shares the shell's process group; a TERM to the group killed the
# step and the run read failed)
"$PDBX" run "${LONG[@]}" --sbatch "$TMP/long2.sh" >/dev/null 2>&1 || fail "pdbx run --sbatch (long, 2)"
id_e=$(sed -n 's/^#SBATCH --job-name=pdbx-//p' "$TMP/long2.sh")
jid=$(sbatch --parsable "$TMP/long2.sh" 2>"$TMP/submit") || { cat "$TMP/submit"; fail "sbatch long2.sh"; }
wait_engines "$id_e" 2 || { cat "$ST/logs/$id_e.log"; fail "no 2 ranks of sbatch run $id_e"; }
for _ in $(seq 100); do [ "$(ls_status "$id_e")" = running ] && break; sleep 0.2; done
"$PDBX" cancel "$id_e" --store "$ST" 2>"$TMP/cancel_e" || { cat "$TMP/cancel_e"; fail "pdbx cancel of sbatch run $id_e"; }
wait_engines "$id_e" 0 || fail "ranks of sbatch run $id_e left after pdbx cancel"
for _ in $(seq 100); do [ "$(ls_status "$id_e")" != running ] && break; sleep 0.2; done
[ "$(ls_status "$id_e")" = cancelled ] || { cat "$ST/logs/$id_e.log"; fail "sbatch run $id_e after pdbx cancel: '$(ls_status "$id_e")', want cancelled"; }
phase "sbatch run $id_e: cancelled by pdbx cancel on its node"

# the runs in the store
"$PDBX" ls --json --store "$ST" >"$TMP/ls.json" || fail "pdbx ls --json"
for id in "$id_a" "$id_b"; do
    "$PDBX" show "$id" --format json --store "$ST" >"$TMP/show-$id.json" || fail "pdbx show $id"
    "$PY" - "$TMP/ls.json" "$TMP/show-$id.json" "$id" "$NODE" <<'PYEOF' || { head -c 3000 "$TMP/show-$id.json"; fail "run $id in the store"; }
import json, sys
ls = {r["id"]: r for r in json.load(open(sys.argv[1]))}
d = json.load(open(sys.argv[2])); rid, node = sys.argv[3], sys.argv[4]
assert ls[rid]["status"] == "complete", ls[rid]
assert d["status"] == "complete", d["status"]
assert d["launcher"].startswith("srun (pmix") and d["command"].startswith("srun --mpi=pmix"), d
pl = [(p["rank"], p["host"], p["local_rank"]) for p in d["placement"]]
assert pl == [(0, node, 0), (1, node, 1)], d["placement"]
pts = [p for c in d["configs"] for p in c["points"]]
assert len(pts) == 4 and all(p["status"] == "ok" for p in pts), pts
assert d["collectives"] and all(c["ranks_per_node"] == c["nranks"] == 2 for c in d["collectives"]), d["collectives"]
PYEOF
    # placement and launcher as recorded by the engine: srun with the detected plugin, in the job
    how="in job"; [ "$id" = "$id_b" ] && how="in sbatch job"
    HOW=$how NODE=$NODE ev_py "$ST/runs/$id.pdbx" '
import os, re
S = [e for e in E if e["type"] == "run_start"][0]
node = os.environ["NODE"]
assert S["env"]["hosts"] == [node, node], S["env"]["hosts"]
assert re.fullmatch(r"srun \(pmix[^)]*\) " + os.environ["HOW"] + r" [0-9]+", S["launcher"]), S["launcher"]
assert S["command"].startswith("srun --mpi=pmix"), S["command"]
' || fail "run_start of run $id"
done
phase "done"
