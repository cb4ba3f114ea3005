"""The blocking client."""
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, TypeVar, Union

import grpc

from moe_a2a import _calls
from moe_a2a._calls import ForwardInput, ForwardResult, Retry, RouteResult, TopK
from moe_a2a._proto import moe_pb2
from moe_a2a.errors import MoeA2aError, from_rpc_error

T = TypeVar("T")


class Client:
    """A moe-a2a server's MoeService, BenchService and health, over one channel.

    `tls=True` (or `ca=` a PEM file or bytes) connects with TLS; `token=` or `token_file=` sends
    a bearer token with every call; `timeout=` is every call's deadline in seconds (None: none);
    `retry=Retry()` retries calls that failed UNAVAILABLE or RESOURCE_EXHAUSTED. Use it as a
    context manager, or call close()."""

    def __init__(self, target: str, *, tls: bool = False, ca: Union[None, str, Path, bytes] = None,
                 token: Optional[str] = None, token_file: Union[None, str, Path] = None,
                 timeout: Optional[float] = None, retry: Optional[Retry] = None,
                 options: Sequence = ()):
        creds = _calls.credentials(tls, ca)
        self._channel = (grpc.secure_channel(target, creds, options=list(options)) if creds
                         else grpc.insecure_channel(target, options=list(options)))
        self._metadata = _calls.metadata(token, token_file)
        self._timeout = timeout
        self._retry = retry
        self._m = _calls.Methods(self._channel)

    def forward(self, hidden_states: Any, *, layer: int = 0, router_logits: Any = None,
                topk: Optional[TopK] = None, timeout: Optional[float] = None) -> ForwardResult:
        """Runs MoE layer `layer` on [T, H] `hidden_states`: routed by `router_logits` [T, E],
        by `topk` = ([T, K] expert ids, [T, K] weights), or by the model's gate."""
        req, back = _calls.forward_request(hidden_states, layer, router_logits, topk)
        return _calls.forward_result(self._call(self._m.forward, req, timeout), back)

    def forward_stream(self, requests: Iterable[ForwardInput],
                       timeout: Optional[float] = None) -> Iterator[ForwardResult]:
        """Forward for many requests on one ForwardStream call; answers come in the requests'
        order. Items are Forward(...) or hidden states alone. Closing the iterator (or leaving a
        loop over it) cancels the call and drops the requests still queued."""
        pending: List[Callable[[Any], Any]] = []

        def wire():
            for item in requests:
                f = _calls.as_forward(item)
                req, back = _calls.forward_request(f.hidden_states, f.layer, f.router_logits, f.topk)
                pending.append(back)
                yield req

        call = self._m.stream(wire(), timeout=timeout or self._timeout, metadata=self._metadata)
        try:
            for resp in call:
                yield _calls.forward_result(resp, pending.pop(0))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        finally:
            call.cancel()

    def route(self, *, layer: int = 0, hidden_states: Any = None, router_logits: Any = None,
              topk: Optional[TopK] = None, timeout: Optional[float] = None) -> RouteResult:
        """The routing alone: expert, weight and rank of each token's top-k choices."""
        req = _calls.route_request(layer, hidden_states, router_logits, topk)
        return _calls.route_result(self._call(self._m.route, req, timeout))

    def describe_model(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The served model and group (ModelInfo's fields)."""
        return _calls.message_dict(self._call(self._m.describe, moe_pb2.DescribeModelRequest(), timeout))

    def health(self, timeout: Optional[float] = None) -> bool:
        """Whether the server says SERVING (grpc.health.v1)."""
        return _calls.health_status(self._call(self._m.health, None, timeout))

    def bench(self, workloads: Sequence[str] = ("prefill",), *, scope: str = "dispatcher",
              iters: int = 0, warmup: int = 0, as_dataframe: bool = False,
              timeout: Optional[float] = None):
        """Runs canonical workloads on the server's ranks (BenchService): one row per workload,
        the bench JSON report as a dict, or a pandas DataFrame with as_dataframe=True."""
        req = _calls.bench_request(workloads, scope, iters, warmup)
        try:
            events = list(self._m.bench(req, timeout=timeout or self._timeout, metadata=self._metadata))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        return _calls.bench_rows(events, as_dataframe)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: Callable[..., T], req: Any, timeout: Optional[float]) -> T:
        attempts = self._retry.attempts if self._retry else 1
        for attempt in range(attempts):
            try:
                return method(req, timeout=timeout or self._timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                err: MoeA2aError = from_rpc_error(e)
                if not err.retryable or attempt + 1 == attempts:
                    raise err from None
                time.sleep(self._retry.delay(attempt))
        raise AssertionError("unreachable")
