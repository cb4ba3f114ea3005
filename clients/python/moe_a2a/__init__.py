"""Python client of moe-a2a: Forward, ForwardStream, Route, DescribeModel, health and Bench over
gRPC, with numpy or torch tensors.

    from moe_a2a import Client
    with Client("localhost:50051") as c:
        out = c.forward(x, layer=0)           # x: [T, H] float32, float16, bf16 bits or torch
        out.hidden_states, out.stats["tokens_per_rank"]
"""
from moe_a2a._calls import Forward, ForwardResult, Retry, RouteResult
from moe_a2a.aio import AsyncClient
from moe_a2a.client import Client
from moe_a2a.errors import (
    Cancelled,
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    MoeA2aError,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from moe_a2a.tensors import from_bf16, to_bf16
from moe_a2a.trace import RoutingTrace, TraceStep, read_routing_trace

__all__ = [
    "AsyncClient", "Cancelled", "Client", "DeadlineExceeded", "Forward", "ForwardResult", "Internal",
    "InvalidArgument", "MoeA2aError", "PermissionDenied", "ResourceExhausted", "Retry", "RouteResult",
    "RoutingTrace", "TraceStep", "Unauthenticated", "Unavailable", "from_bf16", "read_routing_trace",
    "to_bf16",
]
