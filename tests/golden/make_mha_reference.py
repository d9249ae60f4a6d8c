#!/usr/bin/python3
"""make_mha_reference.py -- an MHA model (num_key_value_heads == num_attention_heads) and its float64
logits, for tests/golden/mha_golden_test.cpp. Every preset of make_bench_model.py is GQA or MQA, so
this adds one in-process: "tiny-mha" = the tiny-* feature base (hidden 64, 2 layers, head_dim 16,
init std 0.125, norm std 0.1) with 4 heads and 4 KV heads.

Usage: make_mha_reference.py SHARED_TOOLS_DIR OUT_DIR
Writes OUT_DIR/tiny-mha-f32.gguf, OUT_DIR/hf/ (as make_bench_model.py --seed 0 --dtype f32) and
OUT_DIR/reference.json: {"tokens": [64 ids], "logits": [[vocab floats] per position]} from
hf_numpy_forward.py (transformers' semantics, float64) on OUT_DIR/hf."""
import json
import os
import sys

tools, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, tools)
import make_bench_model as mbm  # noqa: E402
import hf_numpy_forward as ref  # noqa: E402
import numpy as np  # noqa: E402

mbm.PRESETS["tiny-mha"] = mbm._tiny(num_attention_heads=4, num_key_value_heads=4)
sys.argv = [sys.argv[0], "--preset", "tiny-mha", "--seed", "0", "--dtype", "f32", "--out", out]
mbm.main()

hf_dir = os.path.join(out, "hf")
config = json.load(open(os.path.join(hf_dir, "config.json")))
assert config["num_key_value_heads"] == config["num_attention_heads"] == 4, config
tokens = [int(t) for t in np.random.default_rng(0).integers(0, config["vocab_size"], 64)]
logits = ref.forward(hf_dir, tokens)
with open(os.path.join(out, "reference.json"), "w") as f:
    json.dump({"tokens": tokens, "logits": [[float(v) for v in row] for row in logits]}, f)
