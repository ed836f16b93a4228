#!/usr/bin/python3
"""Checks a pdbx FASOP .npz the way FASOP reads it: with numpy.

usage: /usr/bin/python3 tests/npz_check.py FILE.npz EXPECTED.json

EXPECTED.json: {"values": [[10 floats], ...], "attribution": "fasop"|"pure", "stat": "mean",
                "tp": n, "pp": n, "dp": n, "ops_not_measured": [...], "pass": "fwd"|"both"}
                ("pass" defaults to "fwd": an NPZ is forward unless asked otherwise)
Checks: np.load opens it; key `data` is float64, C order, shape (M, 10) with M = len(values);
every value equals the expected one within 1e-9 relative; meta.json says the attribution,
stat, config, units ms, FASOP's column names, MBS 2^i for row i, and the ops not measured.
Exit 0 when everything holds, 1 with one line per failure otherwise.
"""
import json
import sys
import zipfile

import numpy as np

COLUMNS = ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_act_fn",
           "mlp_up", "mlp_down", "lm_head"]


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path) as f:
        exp = json.load(f)
    problems = []

    npz = np.load(path)                       # the call FASOP makes
    if "data" not in npz.files:
        print(f"{path}: no key 'data' (keys: {npz.files})")
        return 1
    data = npz["data"]
    want = np.array(exp["values"], dtype=np.float64)
    if data.dtype != np.float64:
        problems.append(f"dtype {data.dtype}, expected float64")
    if data.dtype.byteorder not in ("=", "<") or (data.dtype.byteorder == "=" and sys.byteorder != "little"):
        problems.append(f"byte order {data.dtype.byteorder!r}, expected little-endian")
    if not data.flags["C_CONTIGUOUS"]:
        problems.append("data is not C order")
    if data.shape != (len(exp["values"]), 10):
        problems.append(f"shape {data.shape}, expected {(len(exp['values']), 10)}")
    elif not np.allclose(data, want, rtol=1e-9, atol=0.0):
        bad = np.argwhere(~np.isclose(data, want, rtol=1e-9, atol=0.0))[0]
        r, c = int(bad[0]), int(bad[1])
        problems.append(f"data[{r}, {c}] ({COLUMNS[c]}, MBS {2 ** r}) = {data[r, c]!r}, "
                        f"expected {want[r, c]!r}")

    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        if names != ["data.npy", "meta.json"]:
            problems.append(f"members {names}, expected ['data.npy', 'meta.json']")
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                problems.append(f"{info.filename} is compressed (type {info.compress_type})")
        bad_crc = z.testzip()
        if bad_crc is not None:
            problems.append(f"{bad_crc}: CRC mismatch")
        meta = json.loads(z.read("meta.json"))

    checks = {
        "attribution": exp["attribution"], "stat": exp["stat"], "units": "ms",
        "columns": COLUMNS, "tp": exp["tp"], "pp": exp["pp"], "dp": exp["dp"],
        "mbs": [2 ** i for i in range(len(exp["values"]))],
        "ops_not_measured": exp["ops_not_measured"], "pass": exp.get("pass", "fwd"),
    }
    for key, value in checks.items():
        if meta.get(key) != value:
            problems.append(f"meta.json {key} = {meta.get(key)!r}, expected {value!r}")

    for p in problems:
        print(f"{path}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
