#!/usr/bin/env python3
"""first_light.py: the Python half of bench/gpu_first_light.sh (standard library only, so the
same file runs under Debian's python3 here and under the GPU machine's python3).

    spec OUT FIELD=JSON ...           write a sweep spec (docs/spec.md) from field=value pairs
    device --libcuda PATH [--cudart PATH] [--probe-so PATH] --json OUT
                                      the GPU as the driver API and cudart report it, and the
                                      cuda backend's own probe(); prints one line; exit 3 when
                                      there is no usable device (the line says why)
    gpu-preset NAME                   the configs/gpus preset for a device name, and a slug
    torch-figures JSON...             per-op pdbx/torch ratios of torch_compare_gpu.py outputs
    attn-figures JSON...              pdbx attn_core / SDPA ratios of --attention outputs
    run-figures SHOW_JSON             points ok / total of a `pdbx show --format json`
    nccl-compare SHOW_JSON LOG...     pdbx busbw vs nccl-tests busbw at the same sizes
    summary-json TSV OUT [FIELD=VALUE ...]
                                      summary.json from the step table the script keeps
"""
import ctypes
import json
import os
import re
import statistics
import sys


def die(msg, code=2):
    print("first_light.py: " + msg, file=sys.stderr)
    sys.exit(code)


# ---- spec ------------------------------------------------------------------------------------
def cmd_spec(argv):
    if len(argv) < 1:
        die("spec OUT FIELD=JSON ...")
    spec = {}
    for kv in argv[1:]:
        k, _, v = kv.partition("=")
        try:
            spec[k] = json.loads(v)
        except ValueError:
            die("spec: %s: not JSON: %r" % (k, v))
    with open(argv[0], "w") as f:
        json.dump(spec, f, indent=1)
        f.write("\n")


# ---- device ----------------------------------------------------------------------------------
# CUdevice_attribute values (cuda.h, stable since CUDA 2-5)
ATTR = {"sm_count": 16, "sm_clock_khz": 13, "mem_clock_khz": 36, "bus_width": 37, "l2_bytes": 38,
        "cc_major": 75, "cc_minor": 76, "ecc": 32}


def version(v):
    return "%d.%d" % (v // 1000, (v % 1000) // 10) if v else "n/a"


def driver_info(libcuda):
    """Every device through the driver API (libcuda.so.1): no runtime, no context."""
    cu = ctypes.CDLL(libcuda)
    rc = cu.cuInit(0)
    if rc != 0:
        return None, "cuInit failed with CUresult %d" % rc
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value <= 0:
        return None, "the driver reports 0 devices"
    drv = ctypes.c_int(0)
    cu.cuDriverGetVersion(ctypes.byref(drv))
    devs = []
    for i in range(n.value):
        dev = ctypes.c_int(0)
        cu.cuDeviceGet(ctypes.byref(dev), i)
        name = ctypes.create_string_buffer(256)
        cu.cuDeviceGetName(name, 256, dev)
        mem = ctypes.c_size_t(0)
        cu.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
        d = {"index": i, "name": name.value.decode(errors="replace"), "mem_bytes": mem.value}
        for key, attr in ATTR.items():
            v = ctypes.c_int(0)
            d[key] = v.value if cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev) == 0 else None
        bus = ctypes.create_string_buffer(64)
        if cu.cuDeviceGetPCIBusId(bus, 64, dev) == 0:
            d["pci_bus_id"] = bus.value.decode()
        devs.append(d)
    return {"driver_cuda": version(drv.value), "devices": devs}, None


def runtime_version(cudart):
    rt = ctypes.CDLL(cudart)
    v = ctypes.c_int(0)
    return version(v.value) if rt.cudaRuntimeGetVersion(ctypes.byref(v)) == 0 else "n/a"


def backend_probe(so):
    """probe() of libpdbx_cuda.so, as pdbx-engine and tests/e2e/cuda_gpu.sh call it."""
    lib = ctypes.CDLL(so)
    probe_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)

    class Entry(ctypes.Structure):
        _fields_ = [("abi", ctypes.c_int), ("compute", ctypes.c_void_p),
                    ("comm", ctypes.c_void_p), ("probe", probe_t)]
    lib.pdbx_backend_entry_v1.restype = ctypes.POINTER(Entry)
    e = lib.pdbx_backend_entry_v1().contents
    why = ctypes.create_string_buffer(512)
    ok = e.probe(why, len(why))
    return ok == 1, why.value.decode(errors="replace")


def cmd_device(argv):
    opts = {"--libcuda": None, "--cudart": None, "--probe-so": None, "--json": None}
    it = iter(argv)
    for a in it:
        if a not in opts:
            die("device: unknown argument %r" % a)
        opts[a] = next(it, None)
    out = {"ok": False, "reason": None}
    if opts["--probe-so"]:
        try:
            ok, why = backend_probe(opts["--probe-so"])
            out["probe"] = why
            if not ok:
                out["reason"] = why
        except OSError as e:
            out["probe"] = "cannot load %s: %s" % (opts["--probe-so"], e)
    if opts["--libcuda"]:
        try:
            info, why = driver_info(opts["--libcuda"])
        except OSError as e:
            info, why = None, "no NVIDIA driver: %s" % e
        if info:
            out.update(info)
        elif not out["reason"]:
            out["reason"] = why
    elif not out["reason"]:
        out["reason"] = "no NVIDIA driver: libcuda.so.1 not found"
    if opts["--cudart"]:
        try:
            out["runtime_cuda"] = runtime_version(opts["--cudart"])
        except OSError as e:
            out["runtime_cuda"] = "n/a (%s)" % e
    out["ok"] = bool(out.get("devices")) and not out["reason"]
    if opts["--json"]:
        with open(opts["--json"], "w") as f:
            json.dump(out, f, indent=1)
    if not out["ok"]:
        print(out["reason"] or "no usable CUDA device")
        return 3
    d = out["devices"][0]
    clk = "SM %s MHz, memory %s MHz" % (
        d["sm_clock_khz"] // 1000 if d["sm_clock_khz"] else "n/a",
        d["mem_clock_khz"] // 1000 if d["mem_clock_khz"] else "n/a")
    print("%d x %s: %s SMs, CC %s.%s, %.1f GiB, L2 %s MiB, %s (max, driver API); "
          "CUDA driver %s, runtime %s"
          % (len(out["devices"]), d["name"], d["sm_count"], d["cc_major"], d["cc_minor"],
             d["mem_bytes"] / 2**30, d["l2_bytes"] // 2**20 if d["l2_bytes"] else "n/a", clk,
             out["driver_cuda"], out.get("runtime_cuda", "n/a")))
    return 0


def cmd_gpu_preset(argv):
    """The configs/gpus preset whose peak and memory fit the device best, and a file-name slug
    (lowercase [a-z0-9.-]) of the device name."""
    name = " ".join(argv)
    low = name.lower()
    if "h200" in low:
        preset = "H200"
    elif "h100" in low and "pcie" in low:
        preset = "H100-PCIe"
    elif "h100" in low:
        preset = "H100-SXM"
    elif "a100" in low:
        preset = "A100-80G"
    elif "a40" in low:
        preset = "A40"
    else:
        preset = ""
    slug = re.sub(r"[^a-z0-9.]+", "-", low.replace("nvidia", "")).strip("-.") or "gpu"
    print(preset or "H100-SXM", slug, "exact" if preset else "fallback")
    return 0


# ---- figures ---------------------------------------------------------------------------------
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read %s: %s" % (path, e))


def cmd_torch_figures(argv):
    """One line per comparison: median |diff| and the per-op median pdbx/torch ratio."""
    for path in argv:
        d = load(path)
        rows = d.get("rows") or []
        if not rows:
            print("%s: no GEMM rows" % os.path.basename(path))
            continue
        ops = {}
        for r in rows:
            ops.setdefault(r["op"], []).append(r["pdbx_ms"] / r["torch_ms"])
        med = d.get("median_abs_rel")
        verdict = "met" if med is not None and med <= 0.05 else "MISSED"
        print("api %s%s vs torch BLAS %s: median |pdbx/torch-1| %.1f%% over %d cells (goal <= 5%%: "
              "%s); pdbx/torch per op: %s"
              % (d.get("run_gemm_api") or "?", ", L2 flushed" if d.get("flush_l2") else "",
                 d.get("blas"), 100 * (med or 0), len(rows), verdict,
                 " ".join("%s %.2f" % (op, statistics.median(v)) for op, v in ops.items())))
    return 0


def cmd_attn_figures(argv):
    for path in argv:
        d = load(path)
        rows = d.get("attention") or []
        if not rows:
            print("%s: no attention rows" % os.path.basename(path))
            continue
        parts = []
        for pass_name in ("fwd", "bwd"):
            sel = [r for r in rows if r["pass"] == pass_name and r.get("ratio")]
            if sel:
                parts.append("%s %s" % (pass_name, " ".join(
                    "mbs%d %.2f" % (r["mbs"], r["ratio"]) for r in sel)))
        best = [r for r in rows if r["pass"] == "fwd" and r.get("sdpa_tflops")]
        tf = ("; fwd TFLOP/s pdbx %.0f vs SDPA %.0f at mbs %d" % (
            best[-1]["pdbx_tflops"], best[-1]["sdpa_tflops"], best[-1]["mbs"])) if best else ""
        print("seq %d: pdbx flash / SDPA (%s): %s%s"
              % (rows[0]["seq"], d.get("attention_gqa"), "; ".join(parts) or "n/a", tf))
    return 0


def cmd_run_figures(argv):
    d = load(argv[0])
    pts = [p for c in d.get("configs", []) for p in c.get("points", [])]
    ok = sum(1 for p in pts if p.get("status") == "ok")
    bad = ["mbs %s %s%s" % (p.get("mbs"), p.get("status"),
                            (": " + p["message"][:80]) if p.get("message") else "")
           for p in pts if p.get("status") != "ok"]
    print("%d/%d points ok, run %s%s" % (ok, len(pts), d.get("status"),
                                         ("; " + "; ".join(bad)) if bad else ""))
    return 0 if pts and ok == len(pts) and d.get("status") == "complete" else 1


def size_text(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return "%g %s" % (b / (1 << shift), unit)
    return "%d B" % b


def parse_nccl_tests(path):
    """{bytes: in-place busbw GB/s} of an nccl-tests *_perf output (columns: size count type
    redop root | out-of-place time algbw busbw #wrong | in-place time algbw busbw #wrong)."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 13 and cols[0].isdigit() and cols[1].isdigit():
                try:
                    out[int(cols[0])] = float(cols[-2])
                except ValueError:
                    pass
    return out


def cmd_nccl_compare(argv):
    show = load(argv[0])
    ours = {}
    for c in show.get("collectives") or []:
        if c.get("in_place", True):
            ours.setdefault(c["coll"], {})[int(c["bytes"])] = c.get("busbw")
    if not argv[1:]:
        for coll, sizes in sorted(ours.items()):
            big = max(sizes)
            print("%s: pdbx busbw %.1f GB/s at %s (nccl-tests not run)"
                  % (coll, sizes[big] or 0, size_text(big)))
        return 0
    for log in argv[1:]:
        coll = os.path.basename(log).split("_perf")[0].replace("nccl-", "")
        theirs = parse_nccl_tests(log)
        mine = ours.get(coll, {})
        both = sorted(set(mine) & set(theirs))
        if not both:
            print("%s: no common sizes (pdbx %d, nccl-tests %d)" % (coll, len(mine), len(theirs)))
            continue
        ratios = [mine[b] / theirs[b] for b in both if mine[b] and theirs[b]]
        big = both[-1]
        print("%s: pdbx/nccl-tests busbw median %.2f over %d sizes; at %s %.1f vs %.1f GB/s"
              % (coll, statistics.median(ratios) if ratios else float("nan"), len(both),
                 size_text(big), mine[big] or 0, theirs[big]))
    return 0


# ---- summary ---------------------------------------------------------------------------------
def cmd_summary_json(argv):
    """TSV rows: n, id, title, status, secs, result, then figure lines as rows 'fig<TAB>id<TAB>text'."""
    tsv, out = argv[0], argv[1]
    steps, order = {}, []
    with open(tsv, errors="replace") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == "fig" and len(cols) >= 3 and cols[1] in steps:
                steps[cols[1]]["figures"].append(cols[2])
            elif len(cols) >= 6:
                steps[cols[1]] = {"n": int(cols[0]), "id": cols[1], "title": cols[2],
                                  "status": cols[3], "secs": int(cols[4] or 0),
                                  "result": cols[5], "figures": []}
                order.append(cols[1])
    doc = {}
    for kv in argv[2:]:
        k, _, v = kv.partition("=")
        doc[k] = int(v) if v.lstrip("-").isdigit() else v
    doc["steps"] = [steps[i] for i in order]
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


COMMANDS = {"spec": cmd_spec, "device": cmd_device, "gpu-preset": cmd_gpu_preset,
            "torch-figures": cmd_torch_figures, "attn-figures": cmd_attn_figures,
            "run-figures": cmd_run_figures, "nccl-compare": cmd_nccl_compare,
            "summary-json": cmd_summary_json}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        die("usage: first_light.py {%s} ..." % ",".join(COMMANDS))
    sys.exit(COMMANDS[sys.argv[1]](sys.argv[2:]) or 0)
