#!/usr/bin/env python3
"""A MoeService client written from the .proto files alone, with its own numpy reference.

  forward_client.py write-weights FILE   writes a small Mixtral-named BF16 safetensors file
  forward_client.py check TARGET FILE    calls Forward/DescribeModel and compares every answer
                                         with a float64 numpy MoE layer over the file's weights
Messages come from protoc --python_out; the calls use grpc's generic unary API (no stubs).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import grpc
import numpy as np

EXPERTS, HIDDEN, FFN, LAYERS, TOP_K = 6, 40, 56, 2, 2


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def names(layer, expert):
    p = f"model.layers.{layer}.block_sparse_moe.experts.{expert}."
    return p + "w1.weight", p + "w3.weight", p + "w2.weight"


def write_weights(path):
    rng = np.random.default_rng(2024)
    tensors = {}
    for layer in range(LAYERS):
        for e in range(EXPERTS):
            w1, w3, w2 = names(layer, e)
            tensors[w1] = rng.uniform(-1, 1, (FFN, HIDDEN)) / np.sqrt(HIDDEN)
            tensors[w3] = rng.uniform(-1, 1, (FFN, HIDDEN)) / np.sqrt(HIDDEN)
            tensors[w2] = rng.uniform(-1, 1, (HIDDEN, FFN)) / np.sqrt(FFN)
        tensors[f"model.layers.{layer}.block_sparse_moe.gate.weight"] = rng.uniform(-1, 1, (EXPERTS, HIDDEN))
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = bf16_bits(t).astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def read_weights(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        bits = np.frombuffer(data[b:e], dtype="<u2")
        out[name] = bf16_value(bits).astype(np.float64).reshape(h["shape"])
    return out


def reference(w, layer, x, ids, weights):
    out = np.zeros_like(x, dtype=np.float64)
    for t in range(x.shape[0]):
        for k in range(ids.shape[1]):
            w1, w3, w2 = (w[n] for n in names(layer, ids[t, k]))
            g, u = w1 @ x[t], w3 @ x[t]
            out[t] += weights[t, k] * (w2 @ (g / (1 + np.exp(-g)) * u))
    return out


def softmax_topk(logits):
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K]
    kept = np.take_along_axis(logits, ids, axis=1).astype(np.float64)
    p = np.exp(kept - kept.max(axis=1, keepdims=True))
    return ids, p / p.sum(axis=1, keepdims=True)


def load_messages(proto_dir):
    gen = tempfile.mkdtemp(prefix="moe-a2a-py-")
    subprocess.run(["protoc", f"-I{proto_dir}", f"--python_out={gen}",
                    "moe/a2a/v1/tensor.proto", "moe/a2a/v1/moe.proto"], check=True)
    sys.path.insert(0, gen)
    from moe.a2a.v1 import moe_pb2, tensor_pb2
    return moe_pb2, tensor_pb2


def check(target, path, proto_dir):
    moe_pb2, tensor_pb2 = load_messages(proto_dir)
    w = read_weights(path)
    channel = grpc.insecure_channel(target)
    call = lambda m, req, resp: channel.unary_unary(
        f"/moe.a2a.v1.MoeService/{m}", request_serializer=req.SerializeToString,
        response_deserializer=resp.FromString)
    info = call("DescribeModel", moe_pb2.DescribeModelRequest, moe_pb2.ModelInfo)(moe_pb2.DescribeModelRequest())
    assert (info.experts, info.hidden, info.ffn, info.layers) == (EXPERTS, HIDDEN, FFN, LAYERS), info
    forward = call("Forward", moe_pb2.ForwardRequest, moe_pb2.ForwardResponse)
    rng = np.random.default_rng(7)
    worst = 0.0
    for case in range(6):
        layer, tokens = case % LAYERS, 3 + case * 5
        x = rng.standard_normal((tokens, HIDDEN)).astype(np.float32)
        req = moe_pb2.ForwardRequest(layer=layer, hidden_states=tensor_pb2.Tensor(
            dtype=tensor_pb2.FP32, shape=[tokens, HIDDEN], data=x.astype("<f4").tobytes()))
        if case % 2 == 0:
            ids = np.stack([rng.permutation(EXPERTS)[:TOP_K] for _ in range(tokens)])
            weights = rng.uniform(0.1, 1, (tokens, TOP_K)).astype(np.float32)
            req.topk.k = TOP_K
            req.topk.expert_ids.extend(ids.flatten().tolist())
            req.topk.weights.extend(weights.flatten().tolist())
        else:
            logits = rng.standard_normal((tokens, EXPERTS)).astype(np.float32) * 2
            req.router_logits.CopyFrom(tensor_pb2.Tensor(
                dtype=tensor_pb2.FP32, shape=[tokens, EXPERTS], data=logits.astype("<f4").tobytes()))
            ids, weights = softmax_topk(logits.astype(np.float64))
        resp = forward(req)
        assert list(resp.hidden_states.shape) == [tokens, HIDDEN], resp.hidden_states.shape
        got = np.frombuffer(resp.hidden_states.data, dtype="<f4").reshape(tokens, HIDDEN)
        want = reference(w, layer, x.astype(np.float64), ids, weights.astype(np.float64))
        row_max = np.abs(want).max(axis=1, keepdims=True)
        ratio = (np.abs(got - want) / (1e-5 * row_max + 1e-7)).max()
        worst = max(worst, ratio)
        if ratio > 1:
            print(f"case {case}: answer differs from the numpy reference ({ratio:.2f}x tolerance)")
            return 1
    print(f"all answers match the numpy reference (worst error {worst:.3f} of tolerance)")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "write-weights":
        write_weights(sys.argv[2])
        sys.exit(0)
    sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
