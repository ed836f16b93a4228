#!/usr/bin/env python3
"""bench/load_points.py: loading a run is linear in its points (issue 10 item 2).

Writes a run file with N points (a run_start planning them, then point_start, one op and
point_end per point, then run_end; one checksummed zstd frame per event, as the engine writes
them) for N = 1e3, 1e4, 1e5, and times two readers of it:
  load  `pdbx show FILE --tp 8 --format csv`: the whole fold of every event, then the run
        table of one config (a quarter of the points, printed as CSV to /dev/null);
  ls    `pdbx ls` of a store holding only that run, with no index.json (the summary scan).
It prints each time and the ratio to the previous N: linear growth shows ratios near 10
(quadratic growth showed 100). Also times the crafted file of the issue (run_start with a
"{}" points, at the cap PDBX_RUN_MAX_POINTS = 100000, ~100 bytes on disk), which took 10 s
before (a million such points: hours; now refused by the cap).

Usage: bench/load_points.py [--build DIR] [--sizes 1000,10000,100000]
Needs libzstd (ctypes); builds nothing: run `scons build` first.
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Zstd:
    """One checksummed frame per call, content size recorded (what store_frames.c writes)."""

    def __init__(self):
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        z = ctypes.CDLL(name)
        z.ZSTD_createCCtx.restype = ctypes.c_void_p
        z.ZSTD_CCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        z.ZSTD_CCtx_setParameter.restype = ctypes.c_size_t
        z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        z.ZSTD_compressBound.restype = ctypes.c_size_t
        z.ZSTD_compress2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_char_p, ctypes.c_size_t]
        z.ZSTD_compress2.restype = ctypes.c_size_t
        z.ZSTD_isError.argtypes = [ctypes.c_size_t]
        self.z = z
        self.cctx = z.ZSTD_createCCtx()
        for param, value in ((100, 3), (201, 1), (200, 1)):   # level, checksum, content size
            if z.ZSTD_isError(z.ZSTD_CCtx_setParameter(self.cctx, param, value)):
                sys.exit("zstd: cannot set frame parameters")

    def frame(self, data):
        cap = self.z.ZSTD_compressBound(len(data))
        buf = ctypes.create_string_buffer(cap)
        n = self.z.ZSTD_compress2(self.cctx, buf, cap, data, len(data))
        if self.z.ZSTD_isError(n):
            sys.exit("zstd: compression failed")
        return buf.raw[:n]


STATS = {"count": 5, "min": 0.9, "max": 1.3, "mean": 1.0, "median": 1.0, "std": 0.1}


def write_run(path, n, zs):
    t0 = 1763769600.0
    rid = "2026-11-22__00-00-00_%08x" % n
    plan = [{"index": i, "tp": 1 << (i % 4), "pp": 1, "dp": 1, "mbs": 1 + i // 4} for i in range(n)]
    events = [{"type": "run_start", "t": t0, "id": rid, "host": "benchhost", "pid": 1,
               "model": {"name": "bench", "layers": 2}, "layers_profiled": 1, "seq_len": 128,
               "backend": "cpu", "dtype": "fp32", "world_size": 8, "ranks_per_node": 8,
               "points": plan}]
    for i in range(n):
        events.append({"type": "point_start", "point": i, "t": t0 + i})
        events.append({"type": "op", "point": i, "op": "attn_q", "stats": STATS,
                       "ranks": [STATS], "flops": 1e9, "bytes": 1e6})
        events.append({"type": "point_end", "point": i, "status": "ok", "t": t0 + i})
    events.append({"type": "run_end", "status": "complete", "reason": "", "t": t0 + n})
    with open(path, "wb") as f:
        for ev in events:
            f.write(zs.frame((json.dumps(ev, separators=(",", ":")) + "\n").encode()))
    return rid


def timed(cmd, env, check=True):
    t = time.monotonic()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.monotonic() - t
    if check and r.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()[-400:]))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("PDBX_BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--sizes", default="1000,10000,100000")
    args = ap.parse_args()
    pdbx = os.path.join(args.build, "bin", "pdbx")
    if not os.access(pdbx, os.X_OK):
        sys.exit("build first: %s missing" % pdbx)
    zs = Zstd()
    tmp = tempfile.mkdtemp(prefix="pdbx-bench-load.")
    env = dict(os.environ)
    try:
        print("%8s %10s %10s %8s %10s %8s" % ("points", "file", "load_s", "ratio", "ls_s", "ratio"))
        prev = None
        for n in [int(x) for x in args.sizes.split(",")]:
            store = os.path.join(tmp, "store%d" % n)
            os.makedirs(os.path.join(store, "runs"))
            rid = write_run(os.path.join(store, "runs", "x.pdbx"), n, zs)
            path = os.path.join(store, "runs", rid + ".pdbx")
            os.rename(os.path.join(store, "runs", "x.pdbx"), path)
            load = timed([pdbx, "show", path, "--tp", "8", "--format", "csv"], env)
            ls = timed([pdbx, "ls", "--store", store], env)
            ratio = ("%8.1f" % (load / prev[0]), "%8.1f" % (ls / prev[1])) if prev else ("", "")
            print("%8d %10d %10.3f %8s %10.3f %8s" % (n, os.path.getsize(path), load, ratio[0],
                                                       ls, ratio[1]), flush=True)
            prev = (load, ls)
            shutil.rmtree(store)
        if os.environ.get("PDBX_BENCH_NO_CRAFTED"):
            return
        crafted = os.path.join(tmp, "crafted.pdbx")
        text = '{"type":"run_start","id":"crafted","points":[' + ",".join(["{}"] * 100000) + "]}\n"
        with open(crafted, "wb") as f:
            f.write(zs.frame(text.encode()))
        # its points have no TP: show refuses --tp 1 after loading (exit 2), which is all we time
        dt = timed([pdbx, "show", crafted, "--tp", "1", "--format", "csv"], env, check=False)
        print("crafted: %d bytes on disk, 100000 planned points: loaded in %.3f s"
              % (os.path.getsize(crafted), dt))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
