#!/usr/bin/env bash
# GEMM efficiency: attn_q and mlp_up of the engine (1 rank, TP 1, all cores as BLAS threads)
# at large T against a standalone OpenBLAS sgemm of the same shape, layout, dtype and threads
# (bench/gemm_ref.c), run in the same invocation. efficiency = reference median / engine median;
# goal >= 0.95.
source "$(dirname "$0")/common.inc"
cores=$(nproc)
gcc -O2 -o "$TMP/gemm_ref" "$(dirname "$0")/gemm_ref.c" -lopenblas
for mbs_seq in "4 512" "8 512"; do
    set -- $mbs_seq; mbs=$1; seq=$2; T=$((mbs * seq))
    spec_json "$TMP/g.json" "mbs=\"$mbs:$mbs\"" "seq_len=$seq" 'ops="attn_q,mlp_up"' 'warmup=2' 'steps=7' 'layers=1'
    "${MPIRUN[@]}" -np 1 "$ENGINE" --spec "$TMP/g.json" --store "$TMP/st$T" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
    f=$(ls "$TMP/st$T"/runs/*.pdbx)
    ev_py "$f" "
import subprocess
S = [e for e in E if e['type'] == 'run_start'][0]
thr = S['env']['blas_threads']
h, inter = S['model']['hidden'], S['model']['intermediate']
qd = S['model']['heads'] * S['model']['head_dim']
for op, n in (('attn_q', qd), ('mlp_up', inter)):
    e = [x for x in E if x['type'] == 'op' and x['op'] == op][0]
    ref = subprocess.run(['$TMP/gemm_ref', str($T), str(n), str(h), str(thr), '9'], capture_output=True, text=True, check=True).stdout.split()
    ref_med = float(ref[0])
    eff = ref_med / e['stats']['median']
    gf = e['flops'] / (e['stats']['median'] / 1e3) / 1e9
    print('%-7s T=%-5d [%d,%d]x[%d,%d] threads %d: engine median %8.2f ms (%6.1f GFLOP/s), standalone %8.2f ms  efficiency %.3f (goal >= 0.95)'
          % (op, $T, $T, h, h, n, thr, e['stats']['median'], gf, ref_med, eff))
"
done
