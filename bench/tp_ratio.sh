#!/usr/bin/env bash
# TP=2 / TP=1 time of the large GEMMs at the same MBS: TP 1 on one rank (all cores as BLAS
# threads) and TP 2 on two ranks (cores / 2 threads each), two launches of one run through
# `pdbx run`. Ideal on independent devices: 0.5. Here both TP ranks share this machine's cores.
source "$(dirname "$0")/common.inc"
spec_json "$TMP/t.json" 'configs=[{"tp":1,"pp":1,"dp":1},{"tp":2,"pp":1,"dp":1}]' 'mbs="4:8"' 'seq_len=256' 'warmup=2' 'steps=5' 'ops="attn_q,attn_o,mlp_gate,mlp_up,mlp_down,lm_head,tp_allreduce_attn,tp_allreduce_mlp"'
id=$("$PDBX" run "$TMP/t.json" --store "$TMP/st" 2>"$TMP/err") || { cat "$TMP/err"; exit 1; }
ev_py "$TMP/st/runs/$id.pdbx" "
P = {}
for x in E:
    if x['type'] == 'run_start':
        P = {p['index']: p for p in x['points']}
ops = {}
for x in E:
    if x['type'] == 'op':
        p = P[x['point']]; ops[(p['tp'], p['mbs'], x['op'])] = x['stats']['median']
thr = [x['env']['blas_threads'] for x in E if x['type'] in ('run_start', 'launch')]
print('BLAS threads per rank: TP1 launch %d, TP2 launch %d' % (thr[0], thr[1]))
for mbs in (4, 8):
    for op in ('attn_q', 'attn_o', 'mlp_gate', 'mlp_up', 'mlp_down', 'lm_head'):
        a, b = ops[(1, mbs, op)], ops[(2, mbs, op)]
        print('MBS %d %-9s TP1 %8.2f ms  TP2 %8.2f ms  TP2/TP1 %.3f' % (mbs, op, a, b, b / a))
    print('MBS %d tp_allreduce_mlp (TP2) %.2f ms' % (mbs, ops[(2, mbs, 'tp_allreduce_mlp')]))
"
