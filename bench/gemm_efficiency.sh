#!/usr/bin/env bash
# GEMM efficiency: attn_q and mlp_up of the engine (1 rank, TP 1, all cores as BLAS threads)
# at large T against a standalone OpenBLAS sgemm of the same shape, layout, dtype and threads
# (bench/gemm_ref.c), run in the same invocation, alternating engine and reference ROUNDS times
# (default 2) so load from other processes hits both alike. efficiency = reference / engine,
# from the medians and from the minima (best of all samples: the least disturbed); goal >= 0.95.
source "$(dirname "$0")/common.inc"
cores=$(nproc)
gcc -O2 -o "$TMP/gemm_ref" "$(dirname "$0")/gemm_ref.c" -lopenblas
rounds=${ROUNDS:-2}
uptime
for mbs_seq in "4 512" "8 512"; do
    set -- $mbs_seq; mbs=$1; seq=$2; T=$((mbs * seq))
    spec_json "$TMP/g.json" "mbs=\"$mbs:$mbs\"" "seq_len=$seq" 'ops="attn_q,mlp_up"' 'warmup=2' 'steps=7' 'layers=1'
    for r in $(seq "$rounds"); do
        "${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/g.json" --store "$TMP/st$T-$r" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
        f=$(ls "$TMP/st$T-$r"/runs/*.pdbx)
        ev_py "$f" "
S = [e for e in E if e['type'] == 'run_start'][0]
h, inter, qd = S['model']['hidden'], S['model']['intermediate'], S['model']['heads'] * S['model']['head_dim']
for op, n in (('attn_q', qd), ('mlp_up', inter)):
    e = [x for x in E if x['type'] == 'op' and x['op'] == op][0]
    print(op, n, h, S['env']['blas_threads'], e['stats']['median'], e['stats']['min'], e['flops'])
" >> "$TMP/eng$T"
        while read -r op n h thr med mn fl; do
            echo "$op $("$TMP/gemm_ref" "$T" "$n" "$h" "$thr" 9)" >> "$TMP/ref$T"
        done < <(tail -2 "$TMP/eng$T")
    done
    "$PY" - "$TMP/eng$T" "$TMP/ref$T" "$T" <<'PYEOF'
import sys
eng, ref = {}, {}
for line in open(sys.argv[1]):
    op, n, h, thr, med, mn, fl = line.split()
    eng.setdefault(op, []).append((float(med), float(mn), int(n), int(h), int(thr), float(fl)))
for line in open(sys.argv[2]):
    op, med, mean, mn, _ = line.split()
    ref.setdefault(op, []).append((float(med), float(mn)))
T = int(sys.argv[3])
for op in ("attn_q", "mlp_up"):
    em = min(x[0] for x in eng[op]); emin = min(x[1] for x in eng[op])
    rm = min(x[0] for x in ref[op]); rmin = min(x[1] for x in ref[op])
    _, _, n, h, thr, fl = eng[op][0]
    print("%-7s T=%-5d [%d,%d]x[%d,%d] %d threads: engine median %8.2f ms (%5.1f GFLOP/s) min %8.2f | "
          "standalone median %8.2f min %8.2f | efficiency median %.3f, min %.3f (goal >= 0.95)"
          % (op, T, T, h, h, n, thr, em, fl / em / 1e6, emin, rm, rmin, rm / em, rmin / emin))
PYEOF
done
