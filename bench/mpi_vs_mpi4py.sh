#!/usr/bin/env bash
# MPI all-reduce: the engine's collectives sweep against python3-mpi4py's Allreduce on the same
# sizes, ranks and method (float32 buffer, in place, barrier before each timed call, max over ranks of
# each rank's mean, as the engine's coll events). Goal: within 10%.
source "$(dirname "$0")/common.inc"
"$PY" -c 'import mpi4py' 2>/dev/null || { echo "python3-mpi4py missing: apt-get install python3-mpi4py"; exit 1; }
np=${NP:-2}
sizes='[65536, 262144, 1048576, 4194304, 16777216]'
spec_json "$TMP/c.json" "configs=[{\"tp\":$np,\"pp\":1,\"dp\":1}]" 'mbs="1:1"' 'seq_len=32' 'ops="embed"' \
    'collectives=true' "coll_sizes=$sizes" 'warmup=5' 'steps=30' "gpus_per_node=$np"
"${MPIRUN[@]}" -np "$np" "$ENGINE" --spec "$TMP/c.json" --store "$TMP/st" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
cat > "$TMP/m.py" <<'PYEOF'
import json, sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
out = {}
for size in json.loads(sys.argv[1]):
    buf = np.full(size // 4, 1e-6, dtype=np.float32)
    ts = []
    for r in range(35):
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        dt = (time.perf_counter() - t0) * 1e3
        if r >= 5:
            ts.append(dt)
    mx = comm.reduce(float(np.mean(ts)), op=MPI.MAX, root=0)   # as the engine: max of the ranks' means
    if comm.rank == 0:
        out[size] = mx
if comm.rank == 0:
    json.dump(out, open(sys.argv[2], "w"))
PYEOF
"${MPIRUN[@]}" -np "$np" "$PY" "$TMP/m.py" "$sizes" "$TMP/m.json"
ev_py "$(ls "$TMP"/st/runs/*.pdbx)" "
m4 = {int(k): v for k, v in json.load(open('$TMP/m.json')).items()}
print('all_reduce, %d ranks, float32 in place; max over ranks of the mean per call' % $np)
print('%10s %12s %12s %8s' % ('bytes', 'pdbx ms', 'mpi4py ms', 'ratio'))
rs = []
for e in E:
    if e['type'] == 'coll' and e['coll'] == 'all_reduce' and e['nranks'] == $np:
        b = int(e['bytes']); r = e['stats']['mean'] / m4[b]; rs.append(r)
        print('%10d %12.4f %12.4f %8.3f' % (b, e['stats']['mean'], m4[b], r))
print('median ratio pdbx/mpi4py %.3f (goal within 10%%: 0.90..1.10)' % statistics.median(rs))
"
