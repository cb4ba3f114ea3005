"""gRPC statuses as exceptions. `MoeA2aError.details` is the server's message, which for a bad
request names the field (`hidden_states.shape: [3, 7] (expected: [T, 40])`)."""
from typing import Dict, Optional, Type

import grpc


class MoeA2aError(Exception):
    """A call failed. `retryable` says whether the same call may succeed later."""

    retryable = False

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class InvalidArgument(MoeA2aError):
    """The request is wrong; `details` names the field."""


class Unavailable(MoeA2aError):
    """The server or its ranks cannot serve now (starting, draining, a rank lost)."""

    retryable = True


class ResourceExhausted(MoeA2aError):
    """The server's queue is full, or the request is larger than it accepts."""

    retryable = True


class DeadlineExceeded(MoeA2aError):
    """The call's timeout passed before the answer came."""


class Unauthenticated(MoeA2aError):
    """No token, or one the server does not accept."""


class PermissionDenied(MoeA2aError):
    """The token's role may not make this call."""


class Cancelled(MoeA2aError):
    """The call was cancelled."""


class Internal(MoeA2aError):
    """The server failed."""


_BY_CODE: Dict[grpc.StatusCode, Type[MoeA2aError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.INTERNAL: Internal,
}


def from_rpc_error(e: grpc.RpcError) -> MoeA2aError:
    """The exception for a failed call's status."""
    code: Optional[grpc.StatusCode] = e.code() if hasattr(e, "code") else None
    code = code or grpc.StatusCode.UNKNOWN
    details = (e.details() if hasattr(e, "details") else None) or str(e)
    return _BY_CODE.get(code, MoeA2aError)(code, details)
