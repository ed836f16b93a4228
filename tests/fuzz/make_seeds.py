#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets, tests/fuzz/corpus/<target>/, from the project's
own files: the presets in configs/, the themes in themes/, the recording in recordings/ cut into
small pieces (raw frames, a torn tail, a damaged frame) and the event fixtures of
tests/fixtures/ as JSON lines (fuzz_common.h: the run-file input format), typical command lines.
Seeds named regress-* are regression inputs kept by hand; this script leaves them alone.

usage: tests/fuzz/make_seeds.py   (from anywhere; rewrites the generated seeds)"""
import json, os, subprocess

root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
corpus = os.path.join(root, 'tests', 'fuzz', 'corpus')


def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(*parts):
    with open(os.path.join(root, *parts), 'rb') as f:
        return f.read()


def frames(data):
    """(start, end) of each zstd frame of a run file (single-segment or not, checksummed)."""
    out, i = [], 0
    while i < len(data):
        fhd = data[i + 4]
        fcs, single, cksum, did = fhd >> 6, (fhd >> 5) & 1, (fhd >> 2) & 1, fhd & 3
        j = i + 5 + (0 if single else 1) + [0, 1, 2, 4][did] + [1 if single else 0, 2, 4, 8][fcs]
        while True:
            bh = data[j] | data[j + 1] << 8 | data[j + 2] << 16
            j += 3 + (1 if (bh >> 1) & 3 == 1 else bh >> 3)
            if bh & 1:
                break
        j += 4 if cksum else 0
        out.append((i, j))
        i = j
    return out


# ---- spec: the sweep presets and the other forms of docs/spec.md
for f in sorted(os.listdir(os.path.join(root, 'configs', 'sweeps'))):
    put('spec', 'preset-' + f, read('configs', 'sweeps', f))
specs = {
    'cross-product': {'model': 'llama1b', 'tp': [1, 2], 'pp': '1:2', 'dp': [1, 2], 'gpus_per_node': 8,
                      'mbs': {'min': 1, 'max': 4}, 'ops': 'attn_q,mlp_down', 'collectives': False},
    'gpus-form': {'model': 'TinyLlama-1.1B', 'gpu': 'A100-80G', 'gpus': 8, 'tp': '1:8', 'pp': [1, 2],
                  'gpus_per_node': 8, 'dtype': 'bf16', 'backend': 'cuda', 'coll_sizes': '1K:1M',
                  'zero1': True, 'flash_attention': True, 'gpu_mem_gb': 40, 'flush_l2': True},
    'inline-model': {'model': {'hidden_size': 256, 'intermediate_size': 512, 'num_attention_heads': 8,
                               'num_key_value_heads': 4, 'num_hidden_layers': 4, 'vocab_size': 1024},
                     'gpu': {'name': 'X', 'mem_gb': 16, 'bw_gbs': 900, 'peak_tflops_bf16': 100},
                     'configs': [{'tp': 2, 'pp': 1, 'gpus': 2}], 'mbs': 4, 'steps': 2, 'warmup': 0,
                     'bytes_per_param': 18, 'timeout_s': 60, 'predict_oom': True},
    'mbs-bounds': {'mbs_min': 2, 'mbs_max': 1024, 'seq_len': 131072, 'layers': 1, 'nodes': 2,
                   'coll_sizes': [4096, 65536], 'name': 'bounds'},
    # issue 24's fields: a MoE model with expert parallelism and an imbalanced routing, DeepSeek
    # (MLA, MoE, a dense first layer: two profiled layers), gemma-2 (windows, both soft-caps) and
    # the dense families inline (learned positions, a shared norm, partial rotary), whose arch the
    # round trip writes back in pdbx's own form
    'moe-ep': {'model': 'mixtral8x7b', 'dtype': 'fp32', 'backend': 'cpu', 'gpus_per_node': 2,
               'configs': [{'tp': 1, 'pp': 1, 'dp': 2, 'ep': 2}], 'moe_routing': {'imbalance': 2}},
    'deepseek': {'model': 'dsv2lite', 'layers': 2, 'dtype': 'fp32', 'gpus_per_node': 4, 'configs': '1x1x2x2,2x1x2',
                 'moe_routing': 'balanced', 'passes': ['fwd', 'bwd']},
    'gemma2': {'model': 'gemma9b', 'layers': 2, 'seq_len': 8192, 'dtype': 'fp32'},
}
for name, s in specs.items():
    put('spec', name + '.json', json.dumps(s, indent=1))
for fam in ('gpt2', 'pythia-160m', 'gpt-j-6b', 'Qwen3-30B-A3B', 'DeepSeek-V3'):
    model = json.loads(read('tests', 'fixtures', 'models', fam + '.json'))
    put('spec', 'inline-' + fam + '.json', json.dumps({'model': model, 'layers': 2, 'seq_len': 512}, indent=1))

# ---- model: the model presets (HuggingFace config.json) and the engine's tiny model
for f in sorted(os.listdir(os.path.join(root, 'configs', 'models'))):
    put('model', f, read('configs', 'models', f))
# real config.json files of each family (tests/fixtures/models/SOURCES.md): gpt2, gpt-neox,
# gpt-j, MoE, MLA, sliding windows, a multimodal text_config
for f in sorted(os.listdir(os.path.join(root, 'tests', 'fixtures', 'models'))):
    if f.endswith('.json'):
        put('model', 'family-' + f, read('tests', 'fixtures', 'models', f))
put('model', 'engine-tiny-llama.json', read('tests', 'e2e', 'fixtures', 'engine-tiny-llama.json'))
put('model', 'head-dim.json', json.dumps({'hidden_size': 3072, 'intermediate_size': 8192,
                                          'num_attention_heads': 24, 'num_key_value_heads': 8,
                                          'head_dim': 128, 'num_hidden_layers': 28,
                                          'vocab_size': 128256, 'tie_word_embeddings': True}))

# ---- runfile, import: the recording cut into pieces, and events as JSON lines
rec = read('recordings', 'quick-cpu-amd-epyc-2core.pdbx')
fr = frames(rec)
events = subprocess.run(['zstdcat'], input=rec, stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
types = [json.loads(e)['type'] for e in events]
first_point_end = types.index('point_end')
pieces = {
    'rec-start.pdbx': rec[:fr[2][1]],
    'rec-first-point.pdbx': rec[:fr[first_point_end][1]],
    'rec-torn.pdbx': rec[:fr[3][1]] + rec[fr[3][1]:fr[4][1]][:40],
    'rec-end.pdbx': rec[:fr[0][1]] + rec[fr[-3][0]:],
}
damaged = bytearray(rec[:fr[4][1]])
damaged[fr[2][0] + 20] ^= 0x40
pieces['rec-damaged.pdbx'] = bytes(damaged)
first = events[:first_point_end + 1]
lines = {
    'events-first-point.jsonl': '\n'.join(first + [events[-1]]) + '\n',
    'events-colls.jsonl': '\n'.join([events[0]] + [e for e, t in zip(events, types) if t in ('coll', 'comm')][:6]
                                    + [events[-1]]) + '\n',
    'events-torn.jsonl': '\n'.join(first[:5]) + '\n!' + '\x28\xb5\x2f\xfd\x24\x10' + '\n',
}
for fx in ('cli_run_running.jsonl', 'cli_run_corrupt.jsonl'):
    lines['fixture-' + fx] = read('tests', 'fixtures', fx).decode()
oom = read('tests', 'fixtures', 'cli_run_oom.jsonl').decode().splitlines()
lines['fixture-oom-head.jsonl'] = '\n'.join(oom[:30] + oom[-1:]) + '\n'
# a mixture-of-experts run as the explorer's fixture writes it (moe_* ops, the spec's arch)
moe = subprocess.run(
    ['/usr/bin/python3', os.path.join(root, 'tests', 'fixtures', 'tui_fixture.py'), 'moe-seed', '--moe', '--bwd'],
    stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
lines['fixture-moe.jsonl'] = '\n'.join(moe[:48] + moe[-1:]) + '\n'   # the first point, the run's end
for target in ('runfile', 'import'):
    for name, data in pieces.items():
        put(target, name, data)
    for name, text in lines.items():
        put(target, name, text)

# ---- theme: the themes and one of each line form
for f in sorted(os.listdir(os.path.join(root, 'themes'))):
    put('theme', f, read('themes', f))
put('theme', 'forms.theme', '# every form of a line\nname = fuzz\nheader = bright-white on 17 bold underline\n'
    'selected = default on blue reverse\nseries3 = 208\nunknown-role = red\n  dim = 8 dim\n')

# ---- cli: byte 0 picks the command (0 the explorer, then PDBX_CLI_COMMANDS order: ls show
# diff export plan record import run attach cancel rm replay); arguments one per line
commands = ['', 'ls', 'show', 'diff', 'export', 'plan', 'record', 'import', 'run', 'attach',
            'cancel', 'rm', 'replay']
argv = {
    'explore': ['--store', '/nonexistent/store', '--theme', 'light', '--ascii', '--preset', 'quick'],
    'ls': ['--json'],
    'show': ['2026', '--tp', '2', '--stat', 'median', '--format', 'csv', '--attribution', 'fasop'],
    'diff': ['a', 'b', '--stat=min', '--format', 'json'],
    'export': ['run', '--npz', 'out', '--csv=out', '--trace', 't.json', '--model-tag', 'llama70b'],
    'plan': ['quick', '--tp', '1,2', '--mbs', '1:8', '--seq-len', '2048', '--json'],
    'record': ['run', 'file.pdbx', '--store', 's'],
    'import': ['file.pdbx'],
    'run': ['quick', '--detach', '--configs', '1x1x2,2x1x1', '--coll-sizes', '4K,64K,1M', '--dtype', 'bf16'],
    'attach': ['--', '-run'],
    'cancel': ['run', '--no-wait'],
    'rm': ['a', 'b', 'c', '--force'],
    'replay': ['rec.pdbx', '--speed', '4', '--no-color'],
}
for i, c in enumerate(commands):
    put('cli', 'argv-' + (c or 'explore'), bytes([i]) + '\n'.join(argv[c or 'explore']).encode())
put('cli', 'argv-plan-fields', bytes([5]) + '\n'.join([
    '--model', 'llama1b', '--gpu', 'H100-SXM', '--gpu-mem-gb', '80', '--layers', '2', '--dtype', 'fp16',
    '--backend', 'auto', '--gpus-per-node', '8', '--nodes', '1', '--pp', '1:2', '--dp', '1,2', '--gpus', '8',
    '--mbs-min', '1', '--mbs-max', '4', '--warmup', '0', '--steps', '2', '--ops', 'all', '--collectives', 'no',
    '--predict-oom', 'on', '--bytes-per-param', '18', '--zero1', 'true', '--flash-attention', '1',
    '--timeout-s', '60', '--flush-l2', 'off', '--name', 'fuzz']).encode())
put('cli', 'argv-plan-help', bytes([5]) + b'--help')
