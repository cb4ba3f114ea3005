import asyncio

import grpc
import numpy as np
import pytest

from conftest import EXPERTS, HIDDEN, TOKEN, TOP_K, assert_close
from moe_a2a import (AsyncClient, Client, Forward, InvalidArgument, MoeA2aError, Retry,
                     Unauthenticated, Unavailable, from_bf16, to_bf16)
from moe_a2a.errors import from_rpc_error


def tokens(rng, t):
    return rng.standard_normal((t, HIDDEN)).astype(np.float32)


def chosen(rng, t):
    ids = np.stack([rng.permutation(EXPERTS)[:TOP_K] for _ in range(t)])
    return ids, rng.uniform(0.1, 1, (t, TOP_K)).astype(np.float32)


def test_forward_matches_the_numpy_layer_under_every_routing(served):
    target, ref = served
    rng = np.random.default_rng(1)
    with Client(target, timeout=60) as c:
        for layer in (0, 1):
            x = tokens(rng, 9)
            ids, w = chosen(rng, 9)
            out = c.forward(x, layer=layer, topk=(ids, w))
            assert out.hidden_states.dtype == np.float32 and out.hidden_states.shape == (9, HIDDEN)
            assert_close(out.hidden_states, ref.layer(layer, x.astype(np.float64), ids, w), 1e-4)
            assert out.stats["step_tokens"] >= 9 and len(out.stats["tokens_per_rank"]) == 3

            logits = rng.standard_normal((9, EXPERTS)).astype(np.float32)
            out = c.forward(x, layer=layer, router_logits=logits)
            ids, w = ref.route(layer, None, logits.astype(np.float64))
            assert_close(out.hidden_states, ref.layer(layer, x.astype(np.float64), ids, w), 1e-4)

            out = c.forward(x, layer=layer)  # the model's gate
            ids, w = ref.route(layer, x.astype(np.float64))
            assert_close(out.hidden_states, ref.layer(layer, x.astype(np.float64), ids, w), 1e-4)


def test_bf16_and_fp16_come_back_in_their_own_dtype(served):
    target, ref = served
    rng = np.random.default_rng(2)
    x = tokens(rng, 7)
    ids, w = chosen(rng, 7)
    with Client(target) as c:
        bits = to_bf16(x)
        out = c.forward(bits, topk=(ids, w))
        assert out.hidden_states.dtype == np.uint16
        want = ref.layer(0, from_bf16(bits).astype(np.float64), ids, w)
        assert_close(from_bf16(out.hidden_states), want, 1e-2)
        half = x.astype(np.float16)
        out = c.forward(half, topk=(ids, w))
        assert out.hidden_states.dtype == np.float16
        assert_close(out.hidden_states, ref.layer(0, half.astype(np.float64), ids, w), 2e-3)
    assert np.array_equal(to_bf16(from_bf16(bits)), bits), "bf16 bits survive a round trip"


def test_torch_tensors_keep_their_dtype(served):
    torch = pytest.importorskip("torch")
    target, ref = served
    x = torch.randn(5, HIDDEN, dtype=torch.bfloat16)
    with Client(target) as c:
        out = c.forward(x)
    assert out.hidden_states.dtype == torch.bfloat16 and tuple(out.hidden_states.shape) == (5, HIDDEN)


def test_forward_stream_answers_in_order(served):
    target, ref = served
    rng = np.random.default_rng(3)
    sent = []
    for t in (4, 1, 11, 6, 2):
        ids, w = chosen(rng, t)
        sent.append(Forward(tokens(rng, t), layer=t % 2, topk=(ids, w)))
    with Client(target, timeout=60) as c:
        answers = list(c.forward_stream(iter(sent)))
    assert len(answers) == len(sent)
    for f, a in zip(sent, answers):
        want = ref.layer(f.layer, f.hidden_states.astype(np.float64), *f.topk)
        assert_close(a.hidden_states, want, 1e-4)


def test_leaving_a_stream_cancels_it_and_the_server_serves_on(served):
    target, ref = served
    rng = np.random.default_rng(4)

    def endless():
        while True:
            yield tokens(rng, 3)

    with Client(target, timeout=60) as c:
        for n, answer in enumerate(c.forward_stream(endless())):
            assert answer.hidden_states.shape == (3, HIDDEN)
            if n == 2:
                break
        x = tokens(rng, 2)
        ids, w = chosen(rng, 2)
        assert_close(c.forward(x, topk=(ids, w)).hidden_states,
                     ref.layer(0, x.astype(np.float64), ids, w), 1e-4)


def test_route_describe_and_health(served):
    target, ref = served
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((8, EXPERTS)).astype(np.float32)
    with Client(target) as c:
        info = c.describe_model()
        assert (info["experts"], info["hidden"], info["top_k"], info["layers"]) == (EXPERTS, HIDDEN, TOP_K, 2)
        r = c.route(router_logits=logits)
        ids, w = ref.route(0, None, logits.astype(np.float64))
        assert np.array_equal(np.sort(r.expert_ids, axis=1), np.sort(ids, axis=1))
        assert r.ranks.shape == (8, TOP_K) and r.stats["placement_version"] >= 1
        assert c.health()


def test_errors_name_the_field_and_keep_their_status(served):
    target, _ = served
    with Client(target) as c:
        with pytest.raises(InvalidArgument, match="hidden_states") as bad:
            c.forward(np.zeros((2, HIDDEN + 1), np.float32))
        assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT and not bad.value.retryable
        with pytest.raises(InvalidArgument, match="layer"):
            c.forward(np.zeros((2, HIDDEN), np.float32), layer=9)
        with pytest.raises(ValueError, match="hidden_states: dtype int32"):
            c.forward(np.zeros((2, HIDDEN), np.int32))
    with Client("127.0.0.1:1", timeout=5, retry=Retry(attempts=2, backoff=0.01)) as dead:
        with pytest.raises(Unavailable) as down:
            dead.describe_model()
        assert down.value.retryable


def test_every_status_maps_to_its_exception():
    class Failed(grpc.RpcError):
        def __init__(self, code):
            self._code = code

        def code(self):
            return self._code

        def details(self):
            return "why"

    for code in grpc.StatusCode:
        err = from_rpc_error(Failed(code))
        assert isinstance(err, MoeA2aError) and err.code == code and err.details == "why"
        assert err.retryable == (code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED))
    assert 0.005 <= Retry(backoff=0.01, max_backoff=0.05).delay(0) <= 0.01
    assert Retry(backoff=0.01, max_backoff=0.05).delay(10) <= 0.05


def test_tls_and_token(secured):
    target, ca = secured
    x = np.random.default_rng(6).standard_normal((3, 32)).astype(np.float32)
    with Client(target, ca=ca, token=TOKEN, timeout=30) as c:
        assert c.forward(x).hidden_states.shape == (3, 32)
    with Client(target, ca=ca, timeout=30) as c:
        with pytest.raises(Unauthenticated):
            c.forward(x)
    with Client(target, ca=ca, token="not-the-token-0123456789", timeout=30) as c:
        with pytest.raises(Unauthenticated):
            c.forward(x)
    with Client(target, timeout=10) as plaintext:
        with pytest.raises(Unavailable):
            plaintext.forward(x)


def test_async_client_gives_the_same_answers(served):
    target, ref = served
    rng = np.random.default_rng(7)
    x = tokens(rng, 5)
    ids, w = chosen(rng, 5)
    want = ref.layer(0, x.astype(np.float64), ids, w)

    async def main():
        async with AsyncClient(target, timeout=60) as c:
            one = await c.forward(x, topk=(ids, w))
            streamed = [a async for a in c.forward_stream([Forward(x, topk=(ids, w))] * 3)]
            return one, streamed, await c.describe_model(), await c.health()

    one, streamed, info, healthy = asyncio.run(main())
    assert_close(one.hidden_states, want, 1e-4)
    assert len(streamed) == 3
    for s in streamed:  # batched into one step with the others: another summation order
        assert_close(s.hidden_states, want, 1e-4)
    assert info["experts"] == EXPERTS and healthy


def test_bench_returns_a_row_per_workload(served):
    target, _ = served
    with Client(target, timeout=120) as c:
        rows = c.bench(["decode", "prefill-n2"], iters=2, warmup=1)
    assert [r["workload"] for r in rows] == ["decode", "prefill-n2"]


def test_a_recorded_routing_trace_reads_back_as_served(tmp_path):
    from conftest import Server
    from moe_a2a import read_routing_trace

    trace = tmp_path / "served.trace"
    server = Server(tmp_path, "--experts", str(EXPERTS), "--hidden", str(HIDDEN), "--top-k", str(TOP_K),
                    "--record-routing", str(trace), "--shutdown-grace", "1s")
    rng = np.random.default_rng(8)
    sent = []
    try:
        with Client(server.target, timeout=60) as c:
            for t in (5, 3, 8):
                ids, w = chosen(rng, t)
                c.forward(tokens(rng, t), topk=(ids, w))
                sent.append(ids)
    finally:
        server.stop()
    got = read_routing_trace(trace)
    assert (got.experts, got.top_k, got.ranks, got.steps_served) == (EXPERTS, TOP_K, 3, 3)
    for ids, step in zip(sent, got.steps):
        assert step.layer == 0 and np.array_equal(step.expert_ids, ids)
    cut = tmp_path / "cut.trace"
    cut.write_bytes(trace.read_bytes()[:-5])
    with pytest.raises(ValueError, match="truncated"):
        read_routing_trace(cut)
    (tmp_path / "other.bin").write_bytes(b"PK\x03\x04 not a trace")
    with pytest.raises(ValueError, match="not a moe-a2a routing trace"):
        read_routing_trace(tmp_path / "other.bin")
