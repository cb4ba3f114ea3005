"""Routing traces (`moe-a2a serve --record-routing FILE`) read in Python: the 8 bytes MOEA2ART,
a RoutingTraceHeader, then its steps, each message after its length as a varint."""
from dataclasses import dataclass
from pathlib import Path
from typing import List, Union

import numpy as np

from moe_a2a._proto import routing_trace_pb2

MAGIC = b"MOEA2ART"


def _varint(data: bytes, pos: int):
    """The varint at `pos` and the position after it; IndexError when the data ends first."""
    value, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


@dataclass(frozen=True)
class TraceStep:
    step_id: int
    layer: int
    tokens_per_rank: List[int]
    expert_ids: np.ndarray  # [T, K]


@dataclass(frozen=True)
class RoutingTrace:
    experts: int
    top_k: int
    ranks: int
    steps_served: int
    sample_every: int
    steps: List[TraceStep]


def read_routing_trace(path: Union[str, Path]) -> RoutingTrace:
    """The trace in `path`; ValueError naming the file when it is not one, or is cut short."""
    data = Path(path).read_bytes()
    if data[:8] != MAGIC:
        raise ValueError(f"routing trace {path}: not a moe-a2a routing trace (no MOEA2ART)")
    pos = 8

    def message(cls, what):
        nonlocal pos
        try:
            size, pos = _varint(data, pos)
        except IndexError:
            raise ValueError(f"routing trace {path}: truncated in {what}") from None
        if pos + size > len(data):
            raise ValueError(f"routing trace {path}: truncated in {what}")
        m = cls.FromString(data[pos:pos + size])
        pos += size
        return m

    if len(data) == pos:
        raise ValueError(f"routing trace {path}: truncated: no header")
    h = message(routing_trace_pb2.RoutingTraceHeader, "the header")
    if h.version != 1:
        raise ValueError(f"routing trace {path}: version {h.version} (expected: 1)")
    steps = []
    for i in range(h.steps):
        if pos == len(data):
            raise ValueError(f"routing trace {path}: truncated: {i} steps of the {h.steps} announced")
        s = message(routing_trace_pb2.RoutingTraceStep, f"step {i}")
        ids = np.asarray(s.expert_ids, dtype=np.int32)
        if ids.size != sum(s.tokens_per_rank) * h.top_k or (ids.size and ids.max() >= h.experts):
            raise ValueError(f"routing trace {path}: step {i} does not match its header")
        steps.append(TraceStep(s.step_id, s.layer, list(s.tokens_per_rank), ids.reshape(-1, h.top_k)))
    return RoutingTrace(h.experts, h.top_k, h.ranks, h.steps_served, h.sample_every, steps)
