#!/usr/bin/env bash
# GPU end-to-end test of the cuda + nccl backends: a tiny bf16 sweep (TinyLlama shapes, 2
# layers, seq_len 256, MBS 1..4) through `pdbx-engine --backend cuda`, then checks of the run
# file: a complete run, the GPU described in run_start, every compute op measured at every
# point with positive times, GEMM throughput below the device's physical limit (a fake or
# broken timer shows up there), and with 2+ GPUs a TP=2 run whose TP all-reduces went
# through NCCL.
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

tmp=$(mktemp -d /tmp/pdbx-cuda-gpu.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

write_spec() {   # file tp
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
  "collectives": false,
  "predict_oom": false,
  "timeout_s": 120,
  "flush_l2": false
}
EOF
}

# check_run STORE TP: the run file's events, as docs/events.md defines them.
check_run() {
    local run
    run=$(ls "$1"/runs/*.pdbx 2>/dev/null | head -n 1)
    if [ -z "$run" ]; then
        echo "FAIL: no run file in $1/runs"
        return 1
    fi
    zstdcat "$run" | "$py" - "$2" <<'EOF'
import json, sys
tp = int(sys.argv[1])
ev = [json.loads(l) for l in sys.stdin if l.strip()]
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
start = next((e for e in ev if e.get("type") == "run_start"), None)
end = next((e for e in ev if e.get("type") == "run_end"), None)
if not start: fail("no run_start")
if not end or end.get("status") != "complete": fail("run did not complete: %s" % end)
env = start.get("env", {})
gpu = env.get("gpu")
if start.get("backend") != "cuda": fail("backend %r, expected cuda" % start.get("backend"))
if not isinstance(gpu, dict) or gpu.get("sm_count", 0) <= 0 or gpu.get("memory_bytes", 0) <= 0:
    fail("run_start env.gpu does not describe the device: %r" % gpu)
for key in ("driver", "runtime", "cublaslt", "nccl", "clock_mhz"):
    if not gpu.get(key): fail("env.gpu.%s missing" % key)
print("device: %s, sm %d, %s, CUDA %s / driver %s, %s" % (gpu["name"], gpu["sm_count"],
      gpu["cublaslt"], gpu["runtime"], gpu["driver"], gpu["nccl"]))
ends = [e for e in ev if e.get("type") == "point_end"]
if len(ends) != 3 or any(e.get("status") != "ok" for e in ends):
    fail("expected 3 ok points (MBS 1, 2, 4): %r" % [(e.get("point"), e.get("status"), e.get("message")) for e in ends])
compute_ops = ["embed", "input_norm", "attn_q", "attn_k", "attn_v", "attn_core", "attn_o",
               "post_attn_norm", "mlp_gate", "mlp_up", "mlp_act_fn", "mlp_down", "final_norm", "lm_head"]
gemms = {"attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down", "lm_head"}
# H100/H200 dense bf16 is 989 TFLOP/s; nothing real exceeds 1200 on any current GPU.
limit = 1200e12
for p in sorted({e["point"] for e in ends}):
    ops = {e["op"]: e for e in ev if e.get("type") == "op" and e.get("point") == p}
    missing = [o for o in compute_ops if o not in ops]
    if missing: fail("point %d: ops not measured: %s" % (p, missing))
    for name in compute_ops:
        st = ops[name]["stats"]
        if not (st["count"] > 0 and 0 < st["min"] <= st["median"] <= st["max"]):
            fail("point %d %s: bad stats %r" % (p, name, st))
        if name in gemms:
            tflops = ops[name]["flops"] / (st["median"] * 1e-3)
            if tflops > limit: fail("point %d %s: %.0f TFLOP/s is impossible" % (p, name, tflops / 1e12))
    line = "  point %d: " % p + ", ".join("%s %.3f ms" % (o, ops[o]["stats"]["median"])
                                           for o in ("attn_q", "attn_core", "mlp_up", "lm_head"))
    print(line)
if tp > 1:
    comm = [e for e in ev if e.get("type") == "comm" and e.get("kind") == "tp_allreduce"]
    if not comm or any(c["stats"]["median"] <= 0 or c["busbw"] <= 0 for c in comm):
        fail("TP=%d: no positive tp_allreduce comm events: %r" % (tp, comm))
    print("  tp_allreduce busbw: %s GB/s" % ", ".join("%.1f" % c["busbw"] for c in comm))
print("ok: tp=%d run complete" % tp)
EOF
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
if [ "${ngpu:-1}" -ge 2 ]; then
    run_tp 2 || exit 1
else
    echo "note: one GPU: the TP=2 NCCL run needs two and was not run"
fi
echo "ok: cuda backend end to end"
