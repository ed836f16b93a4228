#!/usr/bin/env bash
# MPI all-reduce: the engine's collectives sweep against python3-mpi4py's Allreduce on the same
# sizes, ranks and method (one float32 buffer of the largest size reused from offset 0 as the
# engine's comm buffer is, in place; 10 warm-up calls, one calibration call whose slowest time
# over the ranks sets the calls per sample as the engine does (pdbx_coll_sweep_iters: a sample
# of >= 1 ms, 1..100), then 200 samples of that many calls back to back after a barrier, each
# the mean per call; per size the max over ranks of each rank's median, as the engine's coll
# events hold it). Engine and mpi4py
# alternate ROUNDS times (default 3); each keeps its best median (the machine may be shared).
# Goal: within 10%.
source "$(dirname "$0")/common.inc"
"$PY" -c 'import mpi4py' 2>/dev/null || { echo "python3-mpi4py missing: apt-get install python3-mpi4py"; exit 1; }
np=${NP:-2}
sizes=${SIZES:-'[65536, 262144, 1048576, 4194304, 16777216]'}
spec_json "$TMP/c.json" "configs=[{\"tp\":$np,\"pp\":1,\"dp\":1}]" 'mbs="1:1"' 'seq_len=32' 'ops="embed"' \
    'collectives=true' "coll_sizes=$sizes" 'warmup=10' 'steps=200' "gpus_per_node=$np"
cat > "$TMP/m.py" <<'PYEOF'
import json, sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
out = {}
sizes = json.loads(sys.argv[1])
# as the engine: one buffer of the largest size, values 1e-6 x (i mod 97), each size from offset 0
big = (1e-6 * (np.arange(max(sizes) // 4) % 97)).astype(np.float32)
def timed(buf, iters):
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    return (time.perf_counter() - t0) * 1e3 / iters

def sweep_iters(ms):   # engine/engine_collsweep.c pdbx_coll_sweep_iters
    if not ms > 0:
        return 100
    n = 1.0 / ms
    return 100 if n >= 100 else 1 if n <= 1 else int(n) + (n > int(n))

for size in sizes:
    buf = big[: size // 4]
    for r in range(10):
        timed(buf, 1)
    iters = sweep_iters(comm.allreduce(timed(buf, 1), op=MPI.MAX))
    ts = [timed(buf, iters) for r in range(200)]
    med = comm.reduce(float(np.median(ts)), op=MPI.MAX, root=0)   # as the engine: max of the ranks' medians
    mn = comm.reduce(float(np.min(ts)), op=MPI.MAX, root=0)
    if comm.rank == 0:
        out[size] = [med, mn]
if comm.rank == 0:
    json.dump(out, open(sys.argv[2], "w"))
PYEOF
rounds=${ROUNDS:-3}
for r in $(seq "$rounds"); do
    "${MPIRUN[@]}" -np "$np" "$ENGINE" --spec "$TMP/c.json" --store "$TMP/st$r" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
    ev_py "$(ls "$TMP"/st$r/runs/*.pdbx)" "
json.dump({int(e['bytes']): [e['stats']['median'], e['stats']['min']] for e in E if e['type'] == 'coll' and e['coll'] == 'all_reduce' and e['nranks'] == $np}, open('$TMP/e$r.json', 'w'))"
    "${MPIRUN[@]}" -np "$np" "$PY" "$TMP/m.py" "$sizes" "$TMP/m$r.json"
done
"$PY" - "$TMP" "$rounds" "$np" <<'PYEOF'
import json, statistics, sys
d, R, np_ = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
eng = [{int(k): v for k, v in json.load(open("%s/e%d.json" % (d, r))).items()} for r in range(1, R + 1)]
m4 = [{int(k): v for k, v in json.load(open("%s/m%d.json" % (d, r))).items()} for r in range(1, R + 1)]
print("all_reduce, %d ranks, float32 in place, 200 samples (of >= 1 ms) per size; best of %d rounds of the max over ranks of the median" % (np_, R))
print("%10s %12s %12s %8s   %12s %12s %8s" % ("bytes", "pdbx med", "mpi4py med", "ratio", "pdbx min", "mpi4py min", "ratio"))
rs, rm = [], []
for b in sorted(eng[0]):
    a = min(e[b][0] for e in eng); t = min(m[b][0] for m in m4); rs.append(a / t)
    a2 = min(e[b][1] for e in eng); t2 = min(m[b][1] for m in m4); rm.append(a2 / t2)
    print("%10d %12.4f %12.4f %8.3f   %12.4f %12.4f %8.3f" % (b, a, t, a / t, a2, t2, a2 / t2))
print("median ratio pdbx/mpi4py: of medians %.3f, of minima %.3f (goal within 10%%: 0.90..1.10)"
      % (statistics.median(rs), statistics.median(rm)))
PYEOF
