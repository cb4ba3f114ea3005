"""Arrays to and from the wire's Tensor: numpy float32, float16 and bfloat16 (as its uint16 bit
pattern), or torch tensors on the CPU (float32, float16, bfloat16), the caller's dtype kept."""
from typing import Any, Tuple

import numpy as np

from moe_a2a._proto import tensor_pb2

_WIRE = {
    np.dtype(np.float32): tensor_pb2.FP32,
    np.dtype(np.float16): tensor_pb2.FP16,
    np.dtype(np.uint16): tensor_pb2.BF16,
}
_NUMPY = {tensor_pb2.FP32: np.dtype("<f4"), tensor_pb2.FP16: np.dtype("<f2"), tensor_pb2.BF16: np.dtype("<u2")}


def to_bf16(values: Any) -> np.ndarray:
    """float32 values as bfloat16 bit patterns (uint16), rounded to nearest even."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def encode(x: Any, field: str) -> Tuple[tensor_pb2.Tensor, Any]:
    """The Tensor of a 2-D array, and how to give an answer back in the caller's type.

    Raises ValueError naming `field` for another rank, dtype or device."""
    if _is_torch(x):
        import torch

        if x.device.type != "cpu":
            raise ValueError(f"{field}: a tensor on {x.device} (expected: on the CPU)")
        kinds = {torch.float32: np.float32, torch.float16: np.float16}
        if x.dtype == torch.bfloat16:
            arr = x.contiguous().view(torch.int16).numpy().view(np.uint16)
        elif x.dtype in kinds:
            arr = x.contiguous().numpy()
        else:
            raise ValueError(f"{field}: dtype {x.dtype} (expected: torch.float32, float16 or bfloat16)")
        back = lambda a: _to_torch(a, x.dtype)  # noqa: E731
    else:
        arr = np.asarray(x)
        if arr.dtype not in _WIRE:
            raise ValueError(f"{field}: dtype {arr.dtype} (expected: float32, float16, or uint16"
                             " holding bfloat16 bits: see to_bf16)")
        back = lambda a: a  # noqa: E731
    if arr.ndim != 2:
        raise ValueError(f"{field}: shape {tuple(arr.shape)} (expected: 2 dimensions, [tokens, width])")
    wire = _WIRE[arr.dtype]
    data = np.ascontiguousarray(arr, dtype=_NUMPY[wire]).tobytes()
    return tensor_pb2.Tensor(dtype=wire, shape=list(arr.shape), data=data), back


def _to_torch(a: np.ndarray, dtype: Any) -> Any:
    import torch

    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def decode(t: tensor_pb2.Tensor) -> np.ndarray:
    """A Tensor as a numpy array: float32, float16, or uint16 bfloat16 bits."""
    if t.dtype not in _NUMPY:
        raise ValueError(f"tensor dtype {t.dtype} (expected: FP32, FP16 or BF16)")
    return np.frombuffer(t.data, dtype=_NUMPY[t.dtype]).reshape(tuple(t.shape)).astype(
        _NUMPY[t.dtype].newbyteorder("="))


def float32_logits(x: Any, field: str) -> tensor_pb2.Tensor:
    """Router logits travel as float32 whatever they came as."""
    if _is_torch(x):
        x = x.detach().float().cpu().numpy()
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"{field}: shape {tuple(arr.shape)} (expected: [tokens, experts])")
    return tensor_pb2.Tensor(dtype=tensor_pb2.FP32, shape=list(arr.shape), data=arr.astype("<f4").tobytes())


def topk(ids: Any, weights: Any, field: str = "topk") -> tensor_pb2.TopK:
    """[T, K] expert ids and weights as a TopK."""
    ids = np.asarray(ids)
    weights = np.asarray(weights, dtype=np.float32)
    if ids.ndim != 2 or ids.shape != weights.shape:
        raise ValueError(f"{field}: ids {tuple(ids.shape)} and weights {tuple(weights.shape)}"
                         " (expected: both [tokens, k])")
    return tensor_pb2.TopK(k=ids.shape[1], expert_ids=ids.astype(np.int64).ravel().tolist(),
                           weights=weights.ravel().tolist())
