#!/usr/bin/env python3
"""Writes, offline, a Llama 3.2 checkpoint and an Alpaca-style data set for fine-tuning tests.

The files are laid out as the Hugging Face hub serves meta-llama/Llama-3.2-1B-Instruct and
tatsu-lab/alpaca, under a root that tests/local/fileserver.py serves as a hub
(HF_ENDPOINT), so the runtime's model and dataset initializers download them exactly as
they would the real ones, and torchtune's recipes load them exactly as they would the real
ones:

  ROOT/meta-llama/Llama-3.2-1B-Instruct/config.json          HF LlamaConfig
  ROOT/meta-llama/Llama-3.2-1B-Instruct/model.safetensors    HF weight names, bf16, random
  ROOT/meta-llama/Llama-3.2-1B-Instruct/original/tokenizer.model   tiktoken ranks
  ROOT/datasets/tatsu-lab/alpaca/data/train-00000-of-00001.parquet  instruction/input/output/text

--size 1b is the architecture torchtune's llama3_2/1B configs build (1.24B parameters,
torchtune.models.llama3_2.llama3_2_1b), so the shipped runtime loads it unchanged;
--size tiny is the same family with small dimensions, for a fast run whose TrainJob also
sets model._component_=torchtune.models.llama3_2.llama3_2 and the dimensions printed by
--print-model-args.

The tokenizer holds the 256 single bytes as its ranks (every text encodes, a byte a token);
Llama 3's special tokens (<|begin_of_text|> 128000 ...) are torchtune's own and need no
entry in the file, as in Meta's. Weights are random (normal, std 0.02; norms 1), seeded.
Needs torch and safetensors (the LLM venv has them) and pyarrow.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys

VOCAB = 128256  # Llama 3: 128,000 BPE ranks and 256 special tokens

SIZES = {
    # torchtune.models.llama3_2.llama3_2_1b
    "1b": dict(layers=16, heads=32, kv_heads=8, dim=2048, hidden=8192),
    "tiny": dict(layers=2, heads=4, kv_heads=2, dim=64, hidden=128),
}

MODEL_REPO = "meta-llama/Llama-3.2-1B-Instruct"
DATASET_REPO = "tatsu-lab/alpaca"

# Short instruction-following samples: a fine-tune on them must lower the loss.
SAMPLES = [
    ("Name the colour of the sky.", "", "Blue."),
    ("Add the numbers.", "2 and 3", "5"),
    ("Give the opposite.", "hot", "cold"),
    ("Say hello.", "", "Hello!"),
    ("Spell the word backwards.", "cat", "tac"),
    ("Name a fruit.", "", "Apple."),
    ("Translate to French.", "yes", "oui"),
    ("Count to three.", "", "1, 2, 3"),
]


def model_config(size: str) -> dict:
    s = SIZES[size]
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": s["dim"],
        "intermediate_size": s["hidden"],
        "num_hidden_layers": s["layers"],
        "num_attention_heads": s["heads"],
        "num_key_value_heads": s["kv_heads"],
        "head_dim": s["dim"] // s["heads"],
        "hidden_act": "silu",
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 32.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "tie_word_embeddings": True,
        "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009],
        "torch_dtype": "bfloat16",
    }


def model_args(size: str) -> list[str]:
    """The torchtune overrides that build this size (for --size tiny)."""
    s = SIZES[size]
    return [
        "model._component_=torchtune.models.llama3_2.llama3_2",
        f"model.vocab_size={VOCAB}",
        f"model.num_layers={s['layers']}",
        f"model.num_heads={s['heads']}",
        f"model.num_kv_heads={s['kv_heads']}",
        f"model.embed_dim={s['dim']}",
        f"model.intermediate_dim={s['hidden']}",
        "model.max_seq_len=131072",
    ]


def weight_shapes(cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    d, i, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    shapes = [("model.embed_tokens.weight", (cfg["vocab_size"], d))]
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes += [
            (p + "self_attn.q_proj.weight", (q, d)),
            (p + "self_attn.k_proj.weight", (kv, d)),
            (p + "self_attn.v_proj.weight", (kv, d)),
            (p + "self_attn.o_proj.weight", (d, q)),
            (p + "mlp.gate_proj.weight", (i, d)),
            (p + "mlp.up_proj.weight", (i, d)),
            (p + "mlp.down_proj.weight", (d, i)),
            (p + "input_layernorm.weight", (d,)),
            (p + "post_attention_layernorm.weight", (d,)),
        ]
    return [*shapes, ("model.norm.weight", (d,))]


def write_model(repo_dir: str, size: str, seed: int) -> None:
    import torch
    from safetensors.torch import save_file

    cfg = model_config(size)
    os.makedirs(os.path.join(repo_dir, "original"), exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in weight_shapes(cfg):
        if len(shape) == 1:
            tensors[name] = torch.ones(shape, dtype=torch.bfloat16)
        else:
            w = torch.empty(shape, dtype=torch.float32).normal_(0.0, 0.02, generator=gen)
            tensors[name] = w.to(torch.bfloat16)
    save_file(tensors, os.path.join(repo_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(repo_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(repo_dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}, f)
    with open(os.path.join(repo_dir, "original", "tokenizer.model"), "w") as f:
        for b in range(256):
            f.write(f"{base64.b64encode(bytes([b])).decode()} {b}\n")


def write_dataset(repo_dir: str, samples: int, copies: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = SAMPLES[:samples] * copies
    os.makedirs(os.path.join(repo_dir, "data"), exist_ok=True)
    table = pa.table(
        {
            "instruction": [r[0] for r in rows],
            "input": [r[1] for r in rows],
            "output": [r[2] for r in rows],
            "text": [f"### Instruction:\n{r[0]}\n\n### Response:\n{r[2]}" for r in rows],
        }
    )
    pq.write_table(table, os.path.join(repo_dir, "data", "train-00000-of-00001.parquet"))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hub", required=True, help="the root a hub stand-in serves")
    p.add_argument("--size", choices=sorted(SIZES), default="1b")
    p.add_argument(
        "--samples",
        type=int,
        default=len(SAMPLES),
        help=f"distinct samples, at most {len(SAMPLES)} (1: every batch is the same,"
        " so each step's loss is comparable)",
    )
    p.add_argument("--copies", type=int, default=1, help="data set = SAMPLES x COPIES rows")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--print-model-args",
        action="store_true",
        help="print the torchtune overrides for --size, one a line, and exit",
    )
    a = p.parse_args(argv)
    if a.print_model_args:
        print("\n".join(model_args(a.size)))
        return 0
    write_model(os.path.join(a.hub, MODEL_REPO), a.size, a.seed)
    write_dataset(os.path.join(a.hub, "datasets", DATASET_REPO), a.samples, a.copies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
