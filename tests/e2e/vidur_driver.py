"""Vidur's own predictors trained on `pdbx export RUN --csv DIR` (tests/e2e/export_vidur.sh).

Usage: vidur_driver.py VIDUR_SRC CSV_DIR WORK_DIR HELD_OUT_JSON MAX_MAPE_PCT

Follows research-14 section 2.5: a test-local model config named after the run's model (found
by Vidur's BaseModelConfig.create_from_name, which walks subclasses), a ReplicaConfig per TP
degree of the export, SarathiSchedulerConfig(block_size=16), and Vidur's
RandomForrestExecutionTimePredictor with a small grid, which trains every model in its
constructor from the exported mlp.csv, attention.csv and all_reduce.csv.

HELD_OUT_JSON holds what the exported files do not:
  {"mlp": [{"tp": T, "num_tokens": N, "attn_pre_proj": ms, "mlp_up_proj": ms}, ...],
   "attn_decode": [{"tp": T, "batch": B, "kv": K, "ms": ms}, ...]}
mlp: regular MBS points of the same run (num_tokens = MBS x seq_len, not in the tokens grid),
their measured medians; attn_decode: decode rows the caller removed from attention.csv.
Prints one line per prediction and its absolute percentage error, and per TP degree and model
the MAPE over its held-out points; exits 1 when a MAPE is above MAX_MAPE_PCT or a model does not
train (1), or when a MAPE is above MAX_MAPE_PCT (3). Vidur itself is never copied: it is imported from VIDUR_SRC.
"""
import csv
import dataclasses
import json
import sys
import tempfile

vidur_src, csv_dir, work, held_path, max_mape = sys.argv[1:6]
max_mape = float(max_mape)
sys.path.insert(0, vidur_src)

import pandas as pd  # noqa: E402
from vidur.config import (  # noqa: E402
    MetricsConfig,
    RandomForrestExecutionTimePredictorConfig,
    ReplicaConfig,
    SarathiSchedulerConfig,
)
from vidur.config.model_config import Llama2ModelConfig  # noqa: E402
from vidur.execution_time_predictor.random_forrest_execution_time_predictor import (  # noqa: E402
    RandomForrestExecutionTimePredictor,
)

with open(f"{csv_dir}/mlp.csv", newline="") as f:
    rows = list(csv.DictReader(f))
first = rows[0]
tps = sorted({int(r["num_tensor_parallel_workers"]) for r in rows})
max_tokens = max(int(r["num_tokens"]) for r in rows)
MODEL = "pdbx-test/exported-model"


@dataclasses.dataclass
class ExportedModel(Llama2ModelConfig):
    num_layers: int = 2
    num_q_heads: int = int(first["n_head"])
    num_kv_heads: int = int(first["n_kv_head"])
    embedding_dim: int = int(first["n_embd"])
    mlp_hidden_dim: int = int(first["n_expanded_embd"])
    vocab_size: int = int(first["vocab_size"])
    max_position_embeddings: int = 4096

    @staticmethod
    def get_name():
        return MODEL


held = json.load(open(held_path))
failures = 0          # a model that does not train, or is missing: exit 1
over_limit = 0        # a held-out MAPE above the limit: exit 3 (the caller may measure again)


def mape(pred, want):
    return abs(pred - want) / want * 100.0


for tp in tps:
    out = tempfile.mkdtemp(dir=work)
    replica = ReplicaConfig(model_name=MODEL, device="a100", network_device="a100_pairwise_nvlink",
                            tensor_parallel_size=tp, num_pipeline_stages=1)
    sched = SarathiSchedulerConfig(block_size=16)
    metrics = MetricsConfig(output_dir=out, cache_dir=f"{out}/cache")
    cfg = RandomForrestExecutionTimePredictorConfig(
        compute_input_file=f"{csv_dir}/mlp.csv", attention_input_file=f"{csv_dir}/attention.csv",
        all_reduce_input_file=f"{csv_dir}/all_reduce.csv", send_recv_input_file=f"{csv_dir}/send_recv.csv",
        num_estimators=[20], max_depth=[8], min_samples_split=[2], k_fold_cv_splits=3, no_cache=True,
        num_training_job_threads=1, prediction_max_batch_size=16, prediction_max_prefill_chunk_size=128,
        prediction_max_tokens_per_request=max_tokens)
    try:
        pred = RandomForrestExecutionTimePredictor(cfg, replica, sched, metrics)
    except Exception as exc:  # a model that does not train: Vidur's own message
        print(f"FAIL: TP {tp}: Vidur's predictor did not train: {type(exc).__name__}: {exc}")
        failures += 1
        continue
    want = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "mlp_act", "input_layernorm",
            "post_attention_layernorm", "attn_rope", "add", "attn_kv_cache_save", "attn_prefill", "attn_decode"}
    if tp > 1:
        want.add("all_reduce")
    missing = want - set(pred._models)
    if missing:
        print(f"FAIL: TP {tp}: models not trained: {sorted(missing)}")
        failures += 1
    print(f"TP {tp}: Vidur trained {len(pred._models)} models: {' '.join(sorted(pred._models))}")
    errors = {"attn_pre_proj": [], "mlp_up_proj": [], "attn_decode": []}
    for h in held["mlp"]:
        if h["tp"] != tp:
            continue
        for op in ("attn_pre_proj", "mlp_up_proj"):
            p = float(pred._models[op].predict(pd.DataFrame({"num_tokens": [h["num_tokens"]]}))[0])
            errors[op].append(mape(p, h[op]))
            print(f"TP {tp} held-out MBS point num_tokens {h['num_tokens']}: {op} predicted {p:.5f} ms, "
                  f"measured {h[op]:.5f} ms, error {errors[op][-1]:.1f}%")
    for h in held["attn_decode"]:
        if h["tp"] != tp:
            continue
        p = float(pred._models["attn_decode"].predict(
            pd.DataFrame({"batch_size": [h["batch"]], "kv_cache_size": [h["kv"]]}))[0])
        errors["attn_decode"].append(mape(p, h["ms"]))
        print(f"TP {tp} held-out decode batch {h['batch']} kv {h['kv']}: attn_decode predicted {p:.5f} ms, "
              f"measured {h['ms']:.5f} ms, error {errors['attn_decode'][-1]:.1f}%")
    for op, errs in errors.items():
        if not errs:
            print(f"FAIL: TP {tp}: no held-out point for {op}")
            failures += 1
            continue
        m = sum(errs) / len(errs)
        print(f"MAPE TP {tp} {op}: {m:.1f}% over {len(errs)} held-out points (limit {max_mape}%)")
        if not m <= max_mape:
            print(f"over the limit: TP {tp} {op}: MAPE {m:.1f}% > {max_mape}%")
            over_limit += 1
    # the all_reduce model reads num_tokens = size / n_embd / 2 (Vidur's own decoding)
    if tp > 1:
        df = pred._load_all_reduce_df(cfg.all_reduce_input_file)
        df = pred._get_all_reduce_df_with_derived_features(df)
        print(f"TP {tp}: all_reduce rows {len(df)}, num_tokens {sorted(df['num_tokens'].tolist())}")
sys.exit(1 if failures else 3 if over_limit else 0)
