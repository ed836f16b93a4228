"""Runs the HPDC'24 FASOP estimator (AvatarHwang/FASOP, FASOP/estimate.py) on pdbx's
--fasop-npy files, the way FASOP.py's search loop drives it, on one node of 4 GPUs of the A100
kind, and checks the result against the closed form of its cost for TP 4 / DP 1 / PP 1.

Usage: fasop_legacy_driver.py FASOP_SRC WORKDIR MODEL_JSON
  FASOP_SRC   a checkout of AvatarHwang/FASOP (its FASOP/ directory holds estimate.py)
  WORKDIR     holds known_cost/gpt2XL_{A100,A10}_{1,2,4}.npy (FASOP opens them relative to the
              current directory); HOME points here too (FASOP clears $HOME/tmp)
  MODEL_JSON  {"hidden_size", "sequence_length", "num_layers", "vocab_size",
               "num_attention_heads"}: the profiled model as FASOP's model_config holds it

Only torch and numpy are needed (FASOP.py itself also imports pandas). Prints one line per
config and "ok" at the end; any mismatch raises.
"""
import json
import math
import os
import sys

src, work, model_json = sys.argv[1], sys.argv[2], sys.argv[3]
os.chdir(work)
os.environ["HOME"] = work
os.environ["PWD"] = work
sys.path.insert(0, os.path.join(src, "FASOP"))

import numpy as np                                             # noqa: E402
import torch                                                   # noqa: E402
from amp_utils import amp_no_placement_strategy               # noqa: E402
from estimate import FASOP                                     # noqa: E402

dims = json.load(open(model_json))
L = int(dims["num_layers"])
model_config = {k: torch.tensor([float(dims[k])]).float()
                for k in ("hidden_size", "sequence_length", "num_layers", "vocab_size",
                          "num_attention_heads")}
model_config["type"] = "gpt2XL"        # FASOP's decoder-only branch (linear in MBS)
model_config["precision"] = torch.tensor(16).float()
gbs, gpus = 8, 4

# FASOP.py's A100 node: inter- and intra-node bandwidth in bit/s
A100 = [torch.tensor([40 * 1e9]).float(), torch.tensor([1840 * 1e9]).float()]
A10 = [torch.tensor([40 * 1e9]).float(), torch.tensor([128 * 1e9]).float()]
model = FASOP(model_config, "pdbx", A100, A10, 1)

cost_file = {tp: np.load(f"known_cost/gpt2XL_A100_{tp}.npy") for tp in (1, 2, 4)}
for tp, v in cost_file.items():
    assert v.shape == (L + 2,) and v.dtype == np.float64, (tp, v.shape, v.dtype)

known, results = None, []
while True:
    ret = amp_no_placement_strategy(M=gpus, N=1, gbs=gbs, known=known, num_layers=L)
    if ret is None:
        break
    h, w, mbs, known = ret
    dim = {"tp_deg": torch.ones(1,) * h, "dp_deg": torch.ones(1,) * w,
           "pp_deg": torch.ones(1,) * (gpus / (h * w))}
    args = (np.ones((gpus, 1)) * -1, gbs, mbs, [A100], model_config, dim)
    with torch.no_grad():
        out = model(args, ["p4d.24xlarge"], {"exhaustive": False, "gpu_type_lst": None})
    cost = float(out[2].item())
    pp = gpus // (h * w)
    assert math.isfinite(cost) and cost > 0, (h, w, pp, mbs, cost)
    print(f"tp {h} dp {w} pp {pp} mbs {mbs}: {cost:.6g} s/step")
    results.append((h, w, pp, mbs, cost))
    if h == 4 and w == 1 and pp == 1:
        # one stage: (gbs/mbs) micro-batches x 3 x (embedding + L x mbs x layer + post_process),
        # embedding and post-process unscaled by MBS on A100 (estimate.py's gpt2XL branch)
        v = cost_file[4]
        want = (gbs / mbs) * 3 * (v[0] + L * mbs * v[1] + v[L + 1])
        assert math.isclose(cost, want, rel_tol=1e-5), (mbs, cost, want)
        print(f"  = (gbs/mbs) x 3 x (embed + L x mbs x layer + post) = {want:.6g}: matches")
assert any(r[0] == 4 and r[1] == 1 and r[2] == 1 for r in results), "no TP 4 / PP 1 config"
print(f"ok: FASOP's estimator ran {len(results)} configs on the pdbx files")
