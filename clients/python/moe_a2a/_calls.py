"""What the blocking and the asyncio client share: requests from arrays, answers as Python
values, the channel's credentials and the retry rule."""
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from moe_a2a import tensors
from moe_a2a._proto import bench_pb2, moe_pb2

MOE = "/moe.a2a.v1.MoeService/"
BENCH = "/moe.a2a.v1.BenchService/Run"
HEALTH = "/grpc.health.v1.Health/Check"


@dataclass(frozen=True)
class ForwardResult:
    """One Forward answer: the layer output in the request's dtype and type (numpy or torch),
    and the statistics of the step it was served in (StepStats' fields, snake_case)."""

    hidden_states: Any
    stats: Dict[str, Any]


@dataclass(frozen=True)
class RouteResult:
    """Where each token's top-k choices go: [T, K] expert ids, weights and ranks, and the step's
    balance (RouteResponse's other fields, snake_case, in `stats`)."""

    expert_ids: np.ndarray
    weights: np.ndarray
    ranks: np.ndarray
    stats: Dict[str, Any]


@dataclass(frozen=True)
class Retry:
    """Opt-in retries of calls that failed UNAVAILABLE or RESOURCE_EXHAUSTED: up to `attempts`
    tries in all, waiting `backoff` seconds, doubling up to `max_backoff`, with jitter."""

    attempts: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0

    def delay(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)


@dataclass
class Forward:
    """One request of forward_stream: hidden states and, optionally, their routing."""

    hidden_states: Any
    layer: int = 0
    router_logits: Any = None
    topk: Optional[Tuple[Any, Any]] = None
    back: Callable[[np.ndarray], Any] = field(default=lambda a: a, repr=False)


TopK = Tuple[Any, Any]
ForwardInput = Union[Forward, Any]


class Methods:
    """The calls on a channel, blocking (grpc) or asyncio (grpc.aio): both have the same makers."""

    def __init__(self, channel):
        def moe(name, req, resp):
            return channel.unary_unary(MOE + name, request_serializer=req.SerializeToString,
                                       response_deserializer=resp.FromString)

        self.forward = moe("Forward", moe_pb2.ForwardRequest, moe_pb2.ForwardResponse)
        self.route = moe("Route", moe_pb2.RouteRequest, moe_pb2.RouteResponse)
        self.describe = moe("DescribeModel", moe_pb2.DescribeModelRequest, moe_pb2.ModelInfo)
        self.stream = channel.stream_stream(
            MOE + "ForwardStream", request_serializer=moe_pb2.ForwardRequest.SerializeToString,
            response_deserializer=moe_pb2.ForwardResponse.FromString)
        self.bench = channel.unary_stream(
            BENCH, request_serializer=bench_pb2.BenchRequest.SerializeToString,
            response_deserializer=bench_pb2.BenchEvent.FromString)
        self.health = channel.unary_unary(HEALTH, request_serializer=lambda _: b"",
                                          response_deserializer=lambda raw: raw)


def forward_request(x: Any, layer: int, router_logits: Any, topk: Optional[TopK]):
    """The ForwardRequest and how to give its answer back in the caller's type."""
    if router_logits is not None and topk is not None:
        raise ValueError("router_logits, topk: give at most one")
    hidden, back = tensors.encode(x, "hidden_states")
    req = moe_pb2.ForwardRequest(layer=layer, hidden_states=hidden)
    if router_logits is not None:
        req.router_logits.CopyFrom(tensors.float32_logits(router_logits, "router_logits"))
    elif topk is not None:
        req.topk.CopyFrom(tensors.topk(*topk))
    return req, back


def as_forward(item: ForwardInput) -> Forward:
    """A forward_stream item: a Forward, or hidden states alone (layer 0, the model's gate)."""
    return item if isinstance(item, Forward) else Forward(hidden_states=item)


def forward_result(resp: moe_pb2.ForwardResponse, back: Callable[[np.ndarray], Any]) -> ForwardResult:
    return ForwardResult(back(tensors.decode(resp.hidden_states)), message_dict(resp.stats))


def route_request(layer: int, hidden_states: Any, router_logits: Any, topk: Optional[TopK]):
    req = moe_pb2.RouteRequest(layer=layer)
    if hidden_states is not None:
        req.hidden_states.CopyFrom(tensors.encode(hidden_states, "hidden_states")[0])
    if router_logits is not None and topk is not None:
        raise ValueError("router_logits, topk: give at most one")
    if router_logits is not None:
        req.router_logits.CopyFrom(tensors.float32_logits(router_logits, "router_logits"))
    elif topk is not None:
        req.topk.CopyFrom(tensors.topk(*topk))
    return req


def route_result(resp: moe_pb2.RouteResponse) -> RouteResult:
    k = max(resp.k, 1)
    shape = (len(resp.expert_ids) // k, k)
    stats = message_dict(resp)
    for name in ("k", "expert_ids", "weights", "ranks"):
        stats.pop(name, None)
    return RouteResult(np.asarray(resp.expert_ids, dtype=np.int32).reshape(shape),
                       np.asarray(resp.weights, dtype=np.float32).reshape(shape),
                       np.asarray(resp.ranks, dtype=np.int32).reshape(shape), stats)


def bench_request(workloads: Sequence[str], scope: str, iters: int, warmup: int):
    return bench_pb2.BenchRequest(workloads=list(workloads), scope=scope, iters=iters, warmup=warmup)


def bench_rows(events: List[bench_pb2.BenchEvent], as_dataframe: bool):
    """The results' report objects (bench JSON rows), as dicts or a pandas DataFrame."""
    import json

    rows = [json.loads(e.result.json) if e.result.json else message_dict(e.result)
            for e in events if e.HasField("result")]
    if as_dataframe:
        import pandas

        return pandas.DataFrame(rows)
    return rows


def message_dict(m) -> Dict[str, Any]:
    """A message's fields by their proto names, every field present."""
    d: Dict[str, Any] = {}
    for f in m.DESCRIPTOR.fields:
        v = getattr(m, f.name)
        if f.label == f.LABEL_REPEATED:
            d[f.name] = [message_dict(x) for x in v] if f.message_type else list(v)
        else:
            d[f.name] = message_dict(v) if f.message_type else v
    return d


def health_status(raw: bytes) -> bool:
    """Whether a HealthCheckResponse (field 1, enum) says SERVING (1)."""
    return raw[:2] == b"\x08\x01"


def credentials(tls: bool, ca: Union[None, str, Path, bytes]) -> Optional[grpc.ChannelCredentials]:
    """TLS credentials when `tls` or `ca` (a PEM file or its bytes) asks for them, else None."""
    if not tls and ca is None:
        return None
    if isinstance(ca, (str, Path)):
        ca = Path(ca).read_bytes()
    return grpc.ssl_channel_credentials(root_certificates=ca)


def metadata(token: Optional[str], token_file: Union[None, str, Path]) -> Tuple[Tuple[str, str], ...]:
    """The bearer token header, from `token` or the first line of `token_file`."""
    if token is not None and token_file is not None:
        raise ValueError("token, token_file: give at most one")
    if token_file is not None:
        token = Path(token_file).read_text().strip().splitlines()[0].strip()
    return (("authorization", f"Bearer {token}"),) if token else ()
