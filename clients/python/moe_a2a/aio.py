"""The asyncio client, on grpc.aio: the blocking client's calls, awaited."""
import asyncio
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Sequence, Union

import grpc

from moe_a2a import _calls
from moe_a2a._calls import ForwardResult, Retry, RouteResult, TopK
from moe_a2a._proto import moe_pb2
from moe_a2a.errors import MoeA2aError, from_rpc_error


class AsyncClient:
    """As `moe_a2a.Client`, with every call a coroutine and forward_stream an async iterator.
    Create it inside the event loop that uses it; `async with` closes it."""

    def __init__(self, target: str, *, tls: bool = False, ca: Union[None, str, Path, bytes] = None,
                 token: Optional[str] = None, token_file: Union[None, str, Path] = None,
                 timeout: Optional[float] = None, retry: Optional[Retry] = None,
                 options: Sequence = ()):
        creds = _calls.credentials(tls, ca)
        self._channel = (grpc.aio.secure_channel(target, creds, options=list(options)) if creds
                         else grpc.aio.insecure_channel(target, options=list(options)))
        self._metadata = _calls.metadata(token, token_file)
        self._timeout = timeout
        self._retry = retry
        self._m = _calls.Methods(self._channel)

    async def forward(self, hidden_states: Any, *, layer: int = 0, router_logits: Any = None,
                      topk: Optional[TopK] = None, timeout: Optional[float] = None) -> ForwardResult:
        req, back = _calls.forward_request(hidden_states, layer, router_logits, topk)
        return _calls.forward_result(await self._call(self._m.forward, req, timeout), back)

    async def forward_stream(self, requests: Any,
                             timeout: Optional[float] = None) -> AsyncIterator[ForwardResult]:
        """Answers in the requests' order; `requests` may be an iterable or an async iterable."""
        pending: List[Callable[[Any], Any]] = []

        async def wire():
            if hasattr(requests, "__aiter__"):
                async for item in requests:
                    yield self._queue(item, pending)
            else:
                for item in requests:
                    yield self._queue(item, pending)

        call = self._m.stream(wire(), timeout=timeout or self._timeout, metadata=self._metadata)
        try:
            async for resp in call:
                yield _calls.forward_result(resp, pending.pop(0))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        finally:
            call.cancel()

    @staticmethod
    def _queue(item: Any, pending: List[Callable[[Any], Any]]):
        f = _calls.as_forward(item)
        req, back = _calls.forward_request(f.hidden_states, f.layer, f.router_logits, f.topk)
        pending.append(back)
        return req

    async def route(self, *, layer: int = 0, hidden_states: Any = None, router_logits: Any = None,
                    topk: Optional[TopK] = None, timeout: Optional[float] = None) -> RouteResult:
        req = _calls.route_request(layer, hidden_states, router_logits, topk)
        return _calls.route_result(await self._call(self._m.route, req, timeout))

    async def describe_model(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        return _calls.message_dict(await self._call(self._m.describe, moe_pb2.DescribeModelRequest(), timeout))

    async def health(self, timeout: Optional[float] = None) -> bool:
        return _calls.health_status(await self._call(self._m.health, None, timeout))

    async def bench(self, workloads: Sequence[str] = ("prefill",), *, scope: str = "dispatcher",
                    iters: int = 0, warmup: int = 0, as_dataframe: bool = False,
                    timeout: Optional[float] = None):
        req = _calls.bench_request(workloads, scope, iters, warmup)
        try:
            events = [e async for e in self._m.bench(req, timeout=timeout or self._timeout,
                                                   metadata=self._metadata)]
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        return _calls.bench_rows(events, as_dataframe)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _call(self, method: Any, req: Any, timeout: Optional[float]) -> Any:
        attempts = self._retry.attempts if self._retry else 1
        for attempt in range(attempts):
            try:
                return await method(req, timeout=timeout or self._timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                err: MoeA2aError = from_rpc_error(e)
                if not err.retryable or attempt + 1 == attempts:
                    raise err from None
                await asyncio.sleep(self._retry.delay(attempt))
        raise AssertionError("unreachable")
