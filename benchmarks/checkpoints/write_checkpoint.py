#!/usr/bin/env python3
"""Writes a synthetic Qwen3-MoE checkpoint directory (config.json, BF16 safetensors shards and
model.safetensors.index.json) from the formats alone, for load-time, memory and throughput runs;
with --shared-ffn N, a Qwen2-MoE one whose layers also have a gated shared expert of width N.

  python3 benchmarks/checkpoints/write_checkpoint.py --out /tmp/qwen3-synthetic \
      --layers 3 --experts 64 --hidden 2048 --ffn 1408 --top-k 4

Each layer's experts go to a shard of their own; weights are seeded normals scaled by 1/sqrt(fan-in).
"""
import argparse
import json
import struct
from pathlib import Path

import numpy as np


def bf16_bytes(a):
    """float32 array -> BF16 bytes, rounded to nearest even."""
    bits = a.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16).tobytes()


def write_shard(path, tensors):
    """tensors: list of (name, dtype, shape, bytes); writes one safetensors file."""
    header, offset = {}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-(len(raw) + 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for _, _, _, data in tensors:
            f.write(data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--experts", type=int, default=64)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--ffn", type=int, default=1408)
    p.add_argument("--top-k", type=int, default=4)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--shared-ffn", type=int, default=0)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    weight_map = {}
    for layer in range(a.layers):
        shard = f"model-{layer + 1:05d}-of-{a.layers:05d}.safetensors"
        tensors = []
        prefix = f"model.layers.{layer}.mlp."
        gate = rng.standard_normal((a.experts, a.hidden), dtype=np.float32) / np.sqrt(a.hidden)
        tensors.append((prefix + "gate.weight", "BF16", gate.shape, bf16_bytes(gate)))
        for e in range(a.experts):
            for name, shape, fan_in in (("gate_proj", (a.ffn, a.hidden), a.hidden),
                                        ("up_proj", (a.ffn, a.hidden), a.hidden),
                                        ("down_proj", (a.hidden, a.ffn), a.ffn)):
                w = rng.standard_normal(shape, dtype=np.float32) / np.sqrt(fan_in)
                tensors.append((f"{prefix}experts.{e}.{name}.weight", "BF16", shape, bf16_bytes(w)))
        if a.shared_ffn:
            for name, shape, fan_in in (("gate_proj", (a.shared_ffn, a.hidden), a.hidden),
                                        ("up_proj", (a.shared_ffn, a.hidden), a.hidden),
                                        ("down_proj", (a.hidden, a.shared_ffn), a.shared_ffn)):
                w = rng.standard_normal(shape, dtype=np.float32) / np.sqrt(fan_in)
                tensors.append((f"{prefix}shared_expert.{name}.weight", "BF16", shape, bf16_bytes(w)))
            g = rng.standard_normal((1, a.hidden), dtype=np.float32) / np.sqrt(a.hidden)
            tensors.append((prefix + "shared_expert_gate.weight", "BF16", g.shape, bf16_bytes(g)))
        write_shard(out / shard, tensors)
        for t in tensors:
            weight_map[t[0]] = shard
        print(f"wrote {shard}", flush=True)
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    arch = ["Qwen2MoeForCausalLM", "qwen2_moe"] if a.shared_ffn else ["Qwen3MoeForCausalLM", "qwen3_moe"]
    (out / "config.json").write_text(json.dumps({
        "architectures": [arch[0]], "model_type": arch[1],
        "shared_expert_intermediate_size": a.shared_ffn,
        "num_hidden_layers": a.layers, "hidden_size": a.hidden, "moe_intermediate_size": a.ffn,
        "num_experts": a.experts, "num_experts_per_tok": a.top_k, "norm_topk_prob": True,
        "decoder_sparse_step": 1, "mlp_only_layers": []}))


if __name__ == "__main__":
    main()
