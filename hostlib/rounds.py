"""A worker's round: where each fragment lies in the gradient, its first copy on the wire and its
result, in the order the worker sends them (hostlib.worker's core indexes nothing else)."""
from __future__ import annotations

from itertools import accumulate
from typing import Sequence

import numpy as np

from .protocol import fragment_layout, frame_lanes


class Round:
    """One round's fragments: where each lies in the gradient, its first copy on the wire, and
    the results. Plain lists of ints, not an object per fragment: a round of a large model has
    hundreds of thousands of fragments and the hot path only ever indexes them.

    A fragment's *index* is its place in the send order (protocol.send_order: sub-models
    interleaved; protocol.layer_order for a layered worker), so the window's base, the pending
    keys and fast retransmit's "sent before" all read as send order; ``pos`` maps the gradient
    order (``first[sub] + fragment_id``) to it."""

    __slots__ = ("number", "sub", "frag", "start", "stop", "first", "count", "node", "pos", "wire", "frame_len", "lanes",
                 "results", "overflowed", "_gstart", "_gstop", "_permuted")

    def __init__(self, number: int, sizes: Sequence[int], lanes: int, wire: bytes, overflowed: set[int],
                 order: np.ndarray, nodes: Sequence[int]) -> None:
        sub, frag, start, stop = fragment_layout(sizes, lanes)
        self.number = number
        self.sub: list[int] = sub[order].tolist()
        self.frag: list[int] = frag[order].tolist()
        self.start: list[int] = start[order].tolist()
        self.stop: list[int] = stop[order].tolist()
        self._gstart, self._gstop = start, stop            # gradient order, for result_fixed
        counts = [-(-s // lanes) for s in sizes]
        self.count: list[int] = counts                     # fragments per sub-model
        self.node: list[int] = list(nodes)                 # each sub-model's aggregation node
        self.first: list[int] = [0, *accumulate(counts)][:len(counts)]      # each sub-model's first, gradient order
        pos = np.empty(len(order), dtype=np.int64)
        pos[order] = np.arange(len(order), dtype=np.int64)
        self.pos: list[int] = pos.tolist()
        self._permuted = bool((pos != np.arange(len(pos))).any())
        self.wire = wire                                   # every first copy in send order, back to back
        self.frame_len = len(wire) // len(self.sub) if self.sub else 0
        self.lanes = lanes
        # every result's lanes as they came off the wire (big-endian int32, one row per
        # fragment, send order): a result costs one bytes copy here, the conversion happens once per read
        self.results = bytearray(4 * lanes * len(self.sub))
        self.overflowed = overflowed

    def __len__(self) -> int:
        return len(self.sub)

    def index(self, submodel_id: int, fragment_id: int) -> int | None:
        if 0 <= submodel_id < len(self.count) and 0 <= fragment_id < self.count[submodel_id]:
            return self.pos[self.first[submodel_id] + fragment_id]
        return None

    def frame(self, idx: int) -> bytes:
        return self.wire[idx * self.frame_len:(idx + 1) * self.frame_len]

    def contribution(self, idx: int) -> np.ndarray:
        """Our lanes of fragment ``idx`` (a view into the first copy)."""
        return frame_lanes(self.wire, (idx + 1) * self.frame_len - 4 * self.lanes, self.lanes)

    def result_lanes(self, idx: int) -> np.ndarray:
        """Fragment ``idx``'s result, K int32 lanes, zero past the fragment's values."""
        out = np.frombuffer(self.results, dtype=">i4", count=self.lanes, offset=4 * self.lanes * idx).astype(np.int32)
        out[self.stop[idx] - self.start[idx]:] = 0
        return out

    def result_fixed(self) -> np.ndarray:
        """The results in gradient order (int64; zeros where none arrived yet)."""
        rows = np.frombuffer(self.results, dtype=">i4").reshape(len(self.sub), self.lanes)
        if self._permuted:
            rows = rows[np.asarray(self.pos)]             # send order -> gradient order
        size = int(self._gstop[-1]) if self.sub else 0
        widths = self._gstop - self._gstart
        if bool((widths[:-1] == self.lanes).all()):
            return rows.reshape(-1)[:size].astype(np.int64)      # only the last row may be short
        # fragments tile the gradient in order, so the used lanes, row after row, are the gradient
        used = np.arange(self.lanes) < widths[:, None]
        return rows[used].astype(np.int64)
