"""A real `moe-a2a serve` for the tests, on weights written here, with a float64 numpy reference
of the layer computed from the same weights.

MOE_A2A_BIN names the launcher (default: bin/moe-a2a of this repository, which needs the jar
built: ./mvnw -B -q install -DskipTests)."""
import json
import os
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from moe_a2a import to_bf16, from_bf16

EXPERTS, HIDDEN, FFN, LAYERS, TOP_K = 6, 40, 56, 2, 2
REPO = Path(__file__).resolve().parents[3]
TOKEN = "pytest-client-token-0123456789"


def names(layer, expert):
    p = f"model.layers.{layer}.block_sparse_moe.experts.{expert}."
    return p + "w1.weight", p + "w3.weight", p + "w2.weight"


def write_weights(path):
    """A Mixtral-named bf16 safetensors file; returns its weights as float64, as served."""
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
    served = {}
    for name, t in tensors.items():
        bits = to_bf16(t.astype(np.float32))
        served[name] = from_bf16(bits).astype(np.float64)
        raw = bits.astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    return served


class Reference:
    """The MoE layer in float64: softmax top-k of the gate or logits, SwiGLU experts."""

    def __init__(self, weights):
        self.w = weights

    def route(self, layer, x, logits=None):
        if logits is None:
            logits = x @ self.w[f"model.layers.{layer}.block_sparse_moe.gate.weight"].T
        ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K]
        kept = np.take_along_axis(logits, ids, axis=1)
        p = np.exp(kept - kept.max(axis=1, keepdims=True))
        return ids, p / p.sum(axis=1, keepdims=True)

    def layer(self, layer, x, ids, weights):
        out = np.zeros_like(x, dtype=np.float64)
        for t in range(x.shape[0]):
            for k in range(ids.shape[1]):
                w1, w3, w2 = (self.w[n] for n in names(layer, ids[t, k]))
                g, u = w1 @ x[t], w3 @ x[t]
                out[t] += weights[t, k] * (w2 @ (g / (1 + np.exp(-g)) * u))
        return out


def assert_close(got, want, rel):
    """Every row within `rel` of its largest element (the server sums in float32)."""
    got = np.asarray(got, dtype=np.float64)
    scale = np.abs(want).max(axis=1, keepdims=True) + 1e-7
    worst = (np.abs(got - want) / scale).max()
    assert worst <= rel, f"answer differs from the numpy reference by {worst:.2e} of a row's largest element"


class Server:
    def __init__(self, tmp, *extra):
        launcher = os.environ.get("MOE_A2A_BIN", str(REPO / "bin" / "moe-a2a"))
        self.log = tmp / "serve.log"
        self.proc = subprocess.Popen([launcher, "serve", "--port", "0", "--metrics-port", "0",
                                      "--world-size", "3", *extra],
                                     stdout=subprocess.DEVNULL, stderr=self.log.open("wb"))
        deadline = time.time() + 120
        while time.time() < deadline:
            m = re.search(r"serving on port (\d+)", self.log.read_text(errors="replace"))
            if m:
                self.target = f"127.0.0.1:{m.group(1)}"
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("moe-a2a serve did not start:\n" + self.log.read_text(errors="replace"))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """(target, Reference) of a plaintext server with the test weights."""
    tmp = tmp_path_factory.mktemp("serve")
    weights = write_weights(tmp / "weights.safetensors")
    server = Server(tmp, "--weights", str(tmp / "weights.safetensors"))
    yield server.target, Reference(weights)
    server.stop()


@pytest.fixture(scope="session")
def secured(tmp_path_factory):
    """(target, CA file) of a server with TLS and client tokens (TOKEN, role client)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found: it makes the test certificates")
    tmp = tmp_path_factory.mktemp("tls")
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=pytest-ca",
        "-keyout", str(tmp / "ca.key"), "-out", str(tmp / "ca.pem"))
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
        "-keyout", str(tmp / "server.key"), "-out", str(tmp / "server.csr"))
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", str(tmp / "server.csr"), "-CA", str(tmp / "ca.pem"), "-CAkey",
        str(tmp / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(tmp / "san.ext"),
        "-out", str(tmp / "server.pem"))
    (tmp / "tokens").write_text(f"client {TOKEN}\n")
    server = Server(tmp, "--experts", "4", "--hidden", "32", "--ffn", "48", "--tls-cert",
                    str(tmp / "server.pem"), "--tls-key", str(tmp / "server.key"),
                    "--auth-token-file", str(tmp / "tokens"))
    yield server.target, tmp / "ca.pem"
    server.stop()
