#!/usr/bin/env bash
# GPU end-to-end test of the cuda + nccl backends: a tiny bf16 sweep (TinyLlama shapes, 2
# layers, seq_len 256, MBS 1..4) through `pdbx-engine --backend cuda`, then checks of the run
# file: a complete run, the GPU described in run_start, every compute op measured at every
# point with positive times, GEMM throughput below the device's physical limit (a fake or
# broken timer shows up there), and with 2+ GPUs a TP=2 run whose TP all-reduces went
# through NCCL; then an fp32 run with fused_projections, fp32_math tf32 and gemm_api cublas
# whose env records the modes and whose q/k/v and gate/up cells are the fused GEMMs' split; then
# a flash_attention run with fwd+bwd (the fused backward) and a kv_cache grid (attention with a
# KV cache: prefill and decode rows); then a tiny Mixtral (tests/e2e/fixtures/engine-tiny-mixtral.json)
# fwd+bwd under skewed routing: every moe_* op measured at every point, in both passes.
#
# Without a usable GPU it exits 77 with "SKIP: no CUDA device (<reason from the backend's own
# probe()>)". Needs: $PDBX_BUILD/bin/pdbx-engine, $PDBX_BUILD/lib/libpdbx_cuda.so, mpirun.
set -u
build="${PDBX_BUILD:?PDBX_BUILD not set}"
py="${PYTHON:-/usr/bin/python3}"
so="$build/lib/libpdbx_cuda.so"
engine="$build/bin/pdbx-engine"

if [ ! -f "$so" ]; then
    echo "SKIP: no CUDA device (libpdbx_cuda.so was not built: nvcc not found)"
    exit 77
fi
# Ask the backend itself, through its one exported symbol, as pdbx-engine does. The build-san
# .so needs the ASan runtime loaded first, which python is not: probe with the plain build's.
probe_so="$so"
if ldd "$so" | grep -q libasan; then
    probe_so="$(dirname "$build")/build/lib/libpdbx_cuda.so"
    [ -f "$probe_so" ] || { echo "SKIP: no CUDA device (cannot probe: $probe_so not built)"; exit 77; }
    # CUDA maps memory where ASan keeps its shadow gap by default.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0"
fi
probe=$("$py" - "$probe_so" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
PROBE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
class Entry(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int), ("compute", ctypes.c_void_p),
                ("comm", ctypes.c_void_p), ("probe", PROBE)]
lib.pdbx_backend_entry_v1.restype = ctypes.POINTER(Entry)
e = lib.pdbx_backend_entry_v1().contents
why = ctypes.create_string_buffer(512)
ok = e.probe(why, len(why))
print("%d %s" % (ok, why.value.decode(errors="replace")))
EOF
)
if [ $? -ne 0 ] || [ -z "$probe" ]; then
    echo "FAIL: could not call probe() of $so"
    exit 1
fi
if [ "${probe%% *}" != "1" ]; then
    echo "SKIP: no CUDA device (${probe#* })"
    exit 77
fi
ngpu=$(echo "$probe" | sed -n 's/^1 \([0-9]*\) CUDA device.*/\1/p')
echo "probe: ${probe#* }"
if [ ! -x "$engine" ]; then
    echo "FAIL: $engine not built"
    exit 1
fi

fixtures="$(cd "$(dirname "$0")" && pwd)/fixtures"
tmp=$(mktemp -d /tmp/pdbx-cuda-gpu.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

write_spec() {   # file tp [extra '"field": value,' text]
    cat >"$1" <<EOF
{
  "name": "cuda-e2e",
  "model": "tinyllama",
  "gpu": "H100-SXM",
  "layers": 2,
  "seq_len": 256,
  "dtype": "bf16",
  "backend": "cuda",
  "gpus_per_node": $2,
  "nodes": 1,
  "configs": [{"tp": $2, "pp": 1, "dp": 1}],
  "mbs": "1:4",
  "warmup": 2,
  "steps": 5,
  "ops": "all",
  "collectives": $([ "$2" -ge 2 ] && echo true || echo false),
  "coll_sizes": [65536, 8388608],
  "predict_oom": false,
  "timeout_s": 120,
  ${3:-}
  "flush_l2": false
}
EOF
}

# check_run STORE TP: the run file's events (docs/events.md), checked by cuda_gpu_check.py.
check_run() {
    local run
    run=$(ls "$1"/runs/*.pdbx 2>/dev/null | head -n 1)
    if [ -z "$run" ]; then
        echo "FAIL: no run file in $1/runs"
        return 1
    fi
    zstdcat "$run" 2>/dev/null | "$py" "$(dirname "$0")/cuda_gpu_check.py" "$2"
}

run_tp() {   # tp
    local dir="$tmp/tp$1"
    mkdir -p "$dir/store"
    write_spec "$dir/spec.json" "$1"
    if ! "${mpi[@]}" -np "$1" "$engine" --spec "$dir/spec.json" --store "$dir/store" --backend cuda \
            >"$dir/log" 2>&1; then
        echo "FAIL: pdbx-engine --backend cuda (tp $1) failed:"
        tail -n 30 "$dir/log"
        return 1
    fi
    check_run "$dir/store" "$1"
}

run_tp 1 || exit 1
# run_one NAME WHAT EXTRA: one more 1-rank run of the spec with EXTRA fields, in $tmp/NAME
run_one() {
    mkdir -p "$tmp/$1/store"
    write_spec "$tmp/$1/spec.json" 1 "$3"
    [ "$1" = modes ] && sed -i 's/"dtype": "bf16"/"dtype": "fp32"/' "$tmp/$1/spec.json"
    [ "$1" = moe ] && sed -i "s|\"model\": \"tinyllama\"|\"model\": \"$fixtures/engine-tiny-mixtral.json\"|" \
        "$tmp/$1/spec.json"
    if ! "${mpi[@]}" -np 1 "$engine" --spec "$tmp/$1/spec.json" --store "$tmp/$1/store" --backend cuda \
            >"$tmp/$1/log" 2>&1; then
        echo "FAIL: pdbx-engine with $2 failed:"
        tail -n 30 "$tmp/$1/log"
        exit 1
    fi
}
# check_events NAME CODE: python CODE over the run's events as E (a list, in file order)
check_events() {
    zstdcat "$(ls "$tmp"/"$1"/store/runs/*.pdbx | head -n 1)" 2>/dev/null | "$py" -c '
import json, sys
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0; E = []
while i < len(s):
    while i < len(s) and s[i] in " \n\r\t": i += 1
    if i >= len(s): break
    o, i = dec.raw_decode(s, i); E.append(o)
S = [e for e in E if e["type"] == "run_start"][0]
ends = [e for e in E if e["type"] == "point_end"]
assert ends and all(e["status"] == "ok" for e in ends), ends
'"$2" || { echo "FAIL: $1 run checks"; exit 1; }
}

# the GEMM modes and fused projections (docs/cuda.md, "Math modes and GEMM API")
run_one modes "fused projections, tf32, cublas" '"fused_projections": true, "fp32_math": "tf32", "gemm_api": "cublas", "passes": "fwd,bwd",'
check_events modes '
assert S["env"]["fp32_math"] == "tf32" and S["env"]["gemm_api"] == "cublas", S["env"]
n = 0
for e in E:
    if e["type"] == "op" and e["op"] in ("attn_q", "attn_k", "attn_v", "mlp_gate", "mlp_up"):
        assert e["fused_with"] in ("attn_q", "mlp_gate") and 0 < e["fused_share"] < 1, e
        assert e["stats"]["mean"] > 0, e
        n += 1
assert n == 2 * 5 * len(ends), n   # five ops, fwd and bwd, at every point
print("ok: fp32 tf32 cublas fused: %d fused cells over %d points" % (n, len(ends)))
'
# the fused attention forward and FlashAttention-2 backward, and the inference phase's attention
# with a KV cache (prefill after a cached prefix, decode), docs/cuda.md
run_one flash "flash_attention, fwd+bwd and kv_cache" '"flash_attention": true, "passes": "fwd,bwd", "kv_cache": {"prefill_chunks": [64], "prefill_kv": [0, 128], "decode_batch": [1, 4], "decode_kv": [256]},'
check_events flash '
assert S["env"]["gpu"]["attention_bwd_kernel"] == "flash", S["env"]["gpu"]
bwd = [e for e in E if e["type"] == "op" and e["op"] == "attn_core" and e.get("pass") == "bwd"]
assert len(bwd) == len(ends) and all(e["stats"]["median"] > 0 for e in bwd), bwd
kv = [e for e in E if e["type"] == "infer_attn"]
assert len(kv) == 4 and all(e["stats"]["median"] > 0 for e in kv), kv   # 2 prefill + 2 decode rows
assert sorted(e["phase"] for e in kv) == ["decode", "decode", "prefill", "prefill"], kv
print("ok: flash fwd+bwd at %d points, %d kv rows (%s)" % (len(ends), len(kv),
      ", ".join("%s b%d c%d kv%d %.3f ms" % (e["phase"], e["batch"], e["chunk"], e["kv"], e["stats"]["median"]) for e in kv)))
'
# a mixture of experts: router, permute, the grouped expert GEMMs, unpermute (docs/engine.md,
# "Mixture of experts"), bf16, the busiest expert twice the balanced share
run_one moe "a tiny Mixtral, fwd+bwd, moe_routing imbalance 2" '"passes": "fwd,bwd", "moe_routing": {"imbalance": 2},'
check_events moe '
want = {"moe_router", "moe_permute", "moe_expert_gate", "moe_expert_up", "moe_expert_act", "moe_expert_down",
        "moe_unpermute"}
moe = [e for e in E if e["type"] == "op" and e["op"].startswith("moe_")]
assert {e["op"] for e in moe} == want, {e["op"] for e in moe}
assert len(moe) == 2 * len(want) * len(ends), len(moe)   # fwd and bwd at every point
assert all(e["stats"]["mean"] > 0 for e in moe), [e for e in moe if not e["stats"]["mean"] > 0]
print("ok: tiny Mixtral: %d moe cells over %d points" % (len(moe), len(ends)))
'
if [ "${ngpu:-1}" -ge 2 ]; then
    run_tp 2 || exit 1
else
    echo "note: one GPU: the TP=2 NCCL run needs two and was not run"
fi
echo "ok: cuda backend end to end"
