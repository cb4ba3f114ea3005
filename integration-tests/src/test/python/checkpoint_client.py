#!/usr/bin/env python3
"""Hugging Face checkpoints written from the formats alone, served, and checked with numpy.

  checkpoint_client.py write ARCH DIR         writes a small checkpoint directory: ARCH is
                                              deepseek_v3 (FP8 experts with block scales, a shared
                                              expert, a dense first layer, 2 shards), deepseek_v2
                                              (BF16, softmax group-limited gate, a shared expert)
                                              qwen2_moe (BF16, a gated shared expert, a dense
                                              layer), qwen3_moe (BF16, sparse step 2, renormalised)
                                              or mixtral (BF16, one model.safetensors file)
  checkpoint_client.py check TARGET DIR PROTO  Forward (hidden states, and router logits) and
                                              Route on every MoE layer against a float64 numpy
                                              layer over the directory's own tensors
Near ties in the routing are a fact of floating point (the server routes in fp32): a token whose
best unchosen candidate is within 1e-5 of its last chosen one is checked with the experts the
server chose (from Route), and counted.
"""
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import grpc
import numpy as np

E, H, I, K, BLOCK = 8, 32, 16, 2, 8
TIE = 1e-5


def bf16(a):
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def e4m3_table():
    t = np.zeros(256)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        v = 2.0 ** -6 * m / 8 if e == 0 else 2.0 ** (e - 7) * (1 + m / 8)
        t[b] = np.nan if (e == 15 and m == 7) else (-v if s else v)
    return t


def write_file(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def write(arch, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    tensors = {}

    def dense(name, shape, scale):
        tensors[name] = ("BF16", shape, bf16(rng.standard_normal(shape) * scale).tobytes())

    def fp8(name, shape):
        raw = rng.integers(0, 256, shape).astype(np.uint8)
        raw[(raw & 0x7F) == 0x7F] = 0x3C  # no NaN codes
        tensors[name] = ("F8_E4M3", shape, raw.tobytes())
        scales = rng.uniform(0.002, 0.02, (-(-shape[0] // BLOCK), -(-shape[1] // BLOCK)))
        tensors[name.replace(".weight", ".weight_scale_inv")] = (
            "F32", scales.shape, scales.astype("<f4").tobytes())

    if arch == "deepseek_v2":
        config = {"architectures": ["DeepseekV2ForCausalLM"], "num_hidden_layers": 3,
                  "first_k_dense_replace": 1, "moe_layer_freq": 1, "hidden_size": H,
                  "intermediate_size": 4 * H, "moe_intermediate_size": I, "n_routed_experts": E,
                  "n_shared_experts": 2, "num_experts_per_tok": K, "n_group": 2, "topk_group": 1,
                  "topk_method": "group_limited_greedy", "scoring_func": "softmax",
                  "routed_scaling_factor": 16.0, "norm_topk_prob": False}
        for layer in (1, 2):
            p = f"model.layers.{layer}.mlp."
            for e in range(E):
                dense(f"{p}experts.{e}.gate_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.up_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.down_proj.weight", (H, I), I ** -0.5)
            dense(p + "shared_experts.gate_proj.weight", (2 * I, H), H ** -0.5)
            dense(p + "shared_experts.up_proj.weight", (2 * I, H), H ** -0.5)
            dense(p + "shared_experts.down_proj.weight", (H, 2 * I), (2 * I) ** -0.5)
            dense(p + "gate.weight", (E, H), 0.5)
    elif arch == "deepseek_v3":
        config = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 3,
                  "first_k_dense_replace": 1, "moe_layer_freq": 1, "hidden_size": H,
                  "intermediate_size": 4 * H, "moe_intermediate_size": I, "n_routed_experts": E,
                  "n_shared_experts": 1, "num_experts_per_tok": K, "n_group": 2, "topk_group": 1,
                  "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
                  "norm_topk_prob": True,
                  "quantization_config": {"quant_method": "fp8", "weight_block_size": [BLOCK, BLOCK]}}
        dense("model.layers.0.mlp.gate_proj.weight", (4 * H, H), 0.1)  # the dense layer: never read
        for layer in (1, 2):
            p = f"model.layers.{layer}.mlp."
            for e in range(E):
                for proj, shape in (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))):
                    fp8(f"{p}experts.{e}.{proj}.weight", shape)
            for proj, shape in (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))):
                fp8(f"{p}shared_experts.{proj}.weight", shape)
            dense(p + "gate.weight", (E, H), 0.3)
            bias = rng.uniform(-0.05, 0.05, E)
            tensors[p + "gate.e_score_correction_bias"] = ("F32", (E,), bias.astype("<f4").tobytes())
    elif arch == "mixtral":
        config = {"architectures": ["MixtralForCausalLM"], "num_hidden_layers": 2, "hidden_size": H,
                  "intermediate_size": I, "num_local_experts": E, "num_experts_per_tok": K}
        for layer in (0, 1):
            p = f"model.layers.{layer}.block_sparse_moe."
            for e in range(E):
                dense(f"{p}experts.{e}.w1.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.w3.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.w2.weight", (H, I), I ** -0.5)
            dense(p + "gate.weight", (E, H), 0.5)
    elif arch == "qwen3_moe":
        config = {"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 4,
                  "decoder_sparse_step": 2, "mlp_only_layers": [], "hidden_size": H,
                  "moe_intermediate_size": I, "num_experts": E, "num_experts_per_tok": K,
                  "norm_topk_prob": True}
        for layer in (1, 3):
            p = f"model.layers.{layer}.mlp."
            for e in range(E):
                dense(f"{p}experts.{e}.gate_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.up_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.down_proj.weight", (H, I), I ** -0.5)
            dense(p + "gate.weight", (E, H), 0.5)
    else:
        config = {"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": 4,
                  "mlp_only_layers": [1], "decoder_sparse_step": 1, "hidden_size": H,
                  "moe_intermediate_size": I, "shared_expert_intermediate_size": 2 * I,
                  "num_experts": E, "num_experts_per_tok": K, "norm_topk_prob": False}
        for layer in (0, 2, 3):
            p = f"model.layers.{layer}.mlp."
            for e in range(E):
                dense(f"{p}experts.{e}.gate_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.up_proj.weight", (I, H), H ** -0.5)
                dense(f"{p}experts.{e}.down_proj.weight", (H, I), I ** -0.5)
            dense(p + "shared_expert.gate_proj.weight", (2 * I, H), H ** -0.5)
            dense(p + "shared_expert.up_proj.weight", (2 * I, H), H ** -0.5)
            dense(p + "shared_expert.down_proj.weight", (H, 2 * I), (2 * I) ** -0.5)
            dense(p + "shared_expert_gate.weight", (1, H), H ** -0.5)
            dense(p + "gate.weight", (E, H), 0.5)
    (out / "config.json").write_text(json.dumps(config))
    if arch == "mixtral":
        write_file(out / "model.safetensors", tensors)
        return
    names = list(tensors)
    weight_map = {}
    for s in range(2):
        shard = f"model-{s + 1:05d}-of-00002.safetensors"
        part = {n: tensors[n] for n in names[s::2]}
        write_file(out / shard, part)
        weight_map.update({n: shard for n in part})
    (out / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


class Checkpoint:
    def __init__(self, d):
        d = Path(d)
        self.config = json.loads((d / "config.json").read_text())
        self.tensors = {}
        table = e4m3_table()
        raw = {}
        for shard in sorted(d.glob("*.safetensors")):
            data = shard.read_bytes()
            n = struct.unpack("<Q", data[:8])[0]
            for name, h in json.loads(data[8:8 + n]).items():
                b, e = h["data_offsets"]
                raw[name] = (h["dtype"], h["shape"], data[8 + n + b:8 + n + e])
        for name, (dtype, shape, blob) in raw.items():
            if dtype == "BF16":
                v = (np.frombuffer(blob, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif dtype == "F32":
                v = np.frombuffer(blob, "<f4")
            elif dtype == "F8_E4M3":
                v = table[np.frombuffer(blob, np.uint8)]
            self.tensors[name] = v.astype(np.float64).reshape(shape)
        for name in list(self.tensors):
            if name.endswith(".weight_scale_inv"):
                w = name.replace(".weight_scale_inv", ".weight")
                s = np.kron(self.tensors[name], np.ones((BLOCK, BLOCK)))
                self.tensors[w] = self.tensors[w] * s[:self.tensors[w].shape[0], :self.tensors[w].shape[1]]
        self.deepseek = "Deepseek" in self.config["architectures"][0]
        self.v2 = self.config["architectures"][0] == "DeepseekV2ForCausalLM"
        self.mixtral = self.config["architectures"][0] == "MixtralForCausalLM"
        self.renormalize = self.mixtral or self.config.get("norm_topk_prob", False)
        layers = self.config["num_hidden_layers"]
        if self.deepseek:
            self.moe_layers = list(range(1, layers))
        elif self.mixtral:
            self.moe_layers = list(range(layers))
        else:
            step = self.config["decoder_sparse_step"]
            self.moe_layers = [l for l in range(layers)
                               if l not in self.config["mlp_only_layers"] and (l + 1) % step == 0]
        if self.deepseek and self.config.get("n_shared_experts", 0):
            self.shared = "shared_experts."
        elif self.config.get("shared_expert_intermediate_size", 0):
            self.shared = "shared_expert."
        else:
            self.shared = None
        self.prefix = "block_sparse_moe." if self.mixtral else "mlp."
        self.proj = ("w1", "w3", "w2") if self.mixtral else ("gate_proj", "up_proj", "down_proj")

    def mlp(self, prefix, x, proj=("gate_proj", "up_proj", "down_proj")):
        t = self.tensors
        g, u = t[prefix + proj[0] + ".weight"] @ x, t[prefix + proj[1] + ".weight"] @ x
        return t[prefix + proj[2] + ".weight"] @ (g / (1 + np.exp(-g)) * u)

    def choose(self, layer, logits):
        """ids, weights, and whether the choice is a near tie, for one token's logits."""
        p = f"model.layers.{layer}.mlp."
        if self.v2:
            q = np.exp(logits - logits.max())
            q /= q.sum()
            best = q.reshape(2, E // 2).max(axis=1)
            keep = int(np.argmax(best))
            tie = abs(best[0] - best[1]) < TIE
            masked = np.full(E, -np.inf)
            masked[keep * E // 2:(keep + 1) * E // 2] = q[keep * E // 2:(keep + 1) * E // 2]
            order = np.argsort(-masked, kind="stable")
            ids = order[:K]
            tie = tie or masked[order[K - 1]] - masked[order[K]] < TIE
            return ids, q[ids] * 16.0, tie
        if self.deepseek:
            s = 1 / (1 + np.exp(-logits))
            c = s + self.tensors[p + "gate.e_score_correction_bias"]
            groups = c.reshape(2, E // 2)
            top2 = np.sort(groups, axis=1)[:, -2:].sum(axis=1)
            keep = int(np.argmax(top2))
            tie = abs(top2[0] - top2[1]) < TIE
            masked = np.full(E, -np.inf)
            masked[keep * E // 2:(keep + 1) * E // 2] = c[keep * E // 2:(keep + 1) * E // 2]
            order = np.argsort(-masked, kind="stable")
            ids = order[:K]
            tie = tie or masked[order[K - 1]] - masked[order[K]] < TIE
            w = s[ids] / s[ids].sum() * 2.5
        else:
            q = np.exp(logits - logits.max())
            q /= q.sum()
            order = np.argsort(-logits, kind="stable")
            ids = order[:K]
            tie = logits[order[K - 1]] - logits[order[K]] < TIE
            w = q[ids] / q[ids].sum() if self.renormalize else q[ids]
        return ids, w, tie

    def weights_for(self, layer, logits, ids):
        if self.v2:
            q = np.exp(logits - logits.max())
            return (q / q.sum())[ids] * 16.0
        if self.deepseek:
            s = 1 / (1 + np.exp(-logits))
            return s[ids] / s[ids].sum() * 2.5
        q = np.exp(logits - logits.max())
        q = (q / q.sum())[ids]
        return q / q.sum() if self.renormalize else q

    def layer_output(self, layer, x, ids, w):
        p = f"model.layers.{layer}.{self.prefix}"
        y = sum(w[k] * self.mlp(f"{p}experts.{ids[k]}.", x, self.proj) for k in range(K))
        if self.shared is None:
            return y
        if self.deepseek:
            return y + self.mlp(p + self.shared, x)
        gate = 1 / (1 + np.exp(-(self.tensors[p + "shared_expert_gate.weight"] @ x)[0]))
        return y + gate * self.mlp(p + self.shared, x)


def check(target, d, proto_dir):
    gen = tempfile.mkdtemp(prefix="moe-a2a-py-")
    subprocess.run(["protoc", f"-I{proto_dir}", f"--python_out={gen}",
                    "moe/a2a/v1/tensor.proto", "moe/a2a/v1/moe.proto"], check=True)
    sys.path.insert(0, gen)
    from moe.a2a.v1 import moe_pb2, tensor_pb2
    ck = Checkpoint(d)
    channel = grpc.insecure_channel(target)
    call = lambda m, req, resp: channel.unary_unary(
        f"/moe.a2a.v1.MoeService/{m}", request_serializer=req.SerializeToString,
        response_deserializer=resp.FromString)
    info = call("DescribeModel", moe_pb2.DescribeModelRequest, moe_pb2.ModelInfo)(moe_pb2.DescribeModelRequest())
    assert list(info.moe_layers) == ck.moe_layers, (info.moe_layers, ck.moe_layers)
    forward = call("Forward", moe_pb2.ForwardRequest, moe_pb2.ForwardResponse)
    route = call("Route", moe_pb2.RouteRequest, moe_pb2.RouteResponse)
    rng = np.random.default_rng(3)
    worst, ties, checked = 0.0, 0, 0
    for layer in ck.moe_layers:
        for with_logits in (False, True):
            tokens = 13
            x = rng.standard_normal((tokens, H)).astype(np.float32)
            gate_w = ck.tensors[f"model.layers.{layer}.{ck.prefix}gate.weight"]
            logits = x.astype(np.float64) @ gate_w.T
            hidden = tensor_pb2.Tensor(dtype=tensor_pb2.FP32, shape=[tokens, H], data=x.astype("<f4").tobytes())
            req = moe_pb2.ForwardRequest(layer=layer, hidden_states=hidden)
            if with_logits:
                logits = (rng.standard_normal((tokens, E)) * 2).astype(np.float32).astype(np.float64)
                req.router_logits.CopyFrom(tensor_pb2.Tensor(
                    dtype=tensor_pb2.FP32, shape=[tokens, E], data=logits.astype("<f4").tobytes()))
            route_req = moe_pb2.RouteRequest(layer=layer, hidden_states=hidden)
            if with_logits:
                route_req.router_logits.CopyFrom(req.router_logits)
            routed = route(route_req)
            server_ids = np.array(routed.expert_ids).reshape(tokens, K)
            got = np.frombuffer(forward(req).hidden_states.data, dtype="<f4").reshape(tokens, H)
            for t in range(tokens):
                ids, w, tie = ck.choose(layer, logits[t])
                if tie:
                    ties += 1
                    ids = server_ids[t]
                    w = ck.weights_for(layer, logits[t], ids)
                elif sorted(ids) != sorted(server_ids[t]):
                    print(f"layer {layer} token {t}: Route chose {server_ids[t]}, numpy {ids}")
                    return 1
                want = ck.layer_output(layer, x[t].astype(np.float64), ids, w)
                ratio = (np.abs(got[t] - want) / (1e-5 * np.abs(want).max() + 1e-7)).max()
                worst = max(worst, ratio)
                checked += 1
                if ratio > 1:
                    print(f"layer {layer} token {t}: answer differs from numpy ({ratio:.2f}x tolerance)")
                    return 1
    print(f"all {checked} tokens match the numpy reference over MoE layers {ck.moe_layers} "
          f"(worst error {worst:.3f} of tolerance; {ties} near ties checked with the server's experts)")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
