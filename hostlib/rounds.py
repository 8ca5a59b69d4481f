"""A worker's round: where each fragment lies in the gradient, its first copy on the wire and its
result, in the order the worker sends them (hostlib.worker's core indexes nothing else)."""
from __future__ import annotations

from functools import cached_property
from itertools import accumulate
from typing import Sequence

import numpy as np

from .protocol import fragment_layout, frame_lanes


class Round:
    """One round's fragments: where each lies in the gradient, its first copy on the wire, and
    the results.

    A fragment's *index* is its place in the send order (protocol.send_order: sub-models
    interleaved; protocol.layer_order for a layered worker), so the window's base, the pending
    keys and fast retransmit's "sent before" all read as send order; ``pos`` maps the gradient
    order (``first[sub] + fragment_id``) to it.

    Per-fragment facts are numpy arrays (``sub_array``, ``pos_array``: what the C data path
    reads); the Python core reads them as plain lists (``sub``, ``frag``, ``start``, ``stop``,
    ``pos``), made on first use: a round of a large model has hundreds of thousands of
    fragments, its hot path only indexes them, and a round the C path completes alone never
    needs the lists."""

    def __init__(self, number: int, sizes: Sequence[int], lanes: int, wire: bytes, overflowed: set[int],
                 order: np.ndarray, nodes: Sequence[int], recycle: "Round | None" = None) -> None:
        sub, frag, start, stop = fragment_layout(sizes, lanes)
        self.number = number
        self._order = order
        self._identity = bool((order == np.arange(len(order))).all())
        self._gsub, self._gfrag, self._gstart, self._gstop = sub, frag, start, stop     # gradient order
        counts = [-(-s // lanes) for s in sizes]
        self.count: list[int] = counts                     # fragments per sub-model
        self.node: list[int] = list(nodes)                 # each sub-model's aggregation node
        self.first: list[int] = [0, *accumulate(counts)][:len(counts)]      # each sub-model's first, gradient order
        self.n = len(order)
        self.wire = wire                                   # every first copy in send order, back to back
        self.frame_len = len(wire) // self.n if self.n else 0
        self.lanes = lanes
        # every result's lanes as they came off the wire (big-endian int32, one row per
        # fragment, send order): a result costs one bytes copy here, the conversion happens once per read.
        # ``recycle``: a round nobody reads any more, whose buffer of the same size is taken over
        # as it is (megabytes of fresh pages a round cost a page fault each). A row is read only
        # once its result came, or through result_fixed, which zeroes the rows still missing;
        # clearing the buffer instead cost a native worker 4 % of its CPU (bench_reflector)
        size = 4 * lanes * self.n
        self._stale = recycle is not None and len(recycle.results) == size
        self.results = recycle.results if self._stale else bytearray(size)
        self.overflowed = overflowed

    def _send_order(self, a: np.ndarray) -> np.ndarray:
        return a if self._identity else a[self._order]

    @cached_property
    def sub_array(self) -> np.ndarray:
        """Each fragment's sub-model, send order (int32)."""
        return self._send_order(self._gsub).astype(np.int32)

    @cached_property
    def pos_array(self) -> np.ndarray:
        """Gradient order -> send order (int64)."""
        if self._identity:
            return np.arange(self.n, dtype=np.int64)
        pos = np.empty(self.n, dtype=np.int64)
        pos[self._order] = np.arange(self.n, dtype=np.int64)
        return pos

    @cached_property
    def decode_layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per fragment in gradient order: its row of ``results`` (send order), where its values
        start in the gradient and how many it has (int64 arrays, for a one-pass decoder)."""
        return (self.pos_array, np.ascontiguousarray(self._gstart, dtype=np.int64),
                np.ascontiguousarray(self._gstop - self._gstart, dtype=np.int64))

    @property
    def values(self) -> int:
        """Gradient values in the round."""
        return int(self._gstop[-1]) if self.n else 0

    @cached_property
    def sub(self) -> list[int]:
        return self.sub_array.tolist()

    @cached_property
    def frag(self) -> list[int]:
        return self._send_order(self._gfrag).tolist()

    @cached_property
    def start(self) -> list[int]:
        return self._send_order(self._gstart).tolist()

    @cached_property
    def stop(self) -> list[int]:
        return self._send_order(self._gstop).tolist()

    @cached_property
    def pos(self) -> list[int]:
        return self.pos_array.tolist()

    def __len__(self) -> int:
        return self.n

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

    def result_fixed(self, done: bytes | bytearray) -> np.ndarray:
        """The results in gradient order (int64; zeros where none arrived yet: ``done``, one
        byte per fragment in send order, non-zero once its result came)."""
        rows = np.frombuffer(self.results, dtype=">i4").reshape(self.n, self.lanes)
        if self._stale:
            missing = np.frombuffer(done, dtype=np.uint8) == 0
            if missing.any():                              # a recycled buffer: another round's rows
                rows = rows.copy()
                rows[missing] = 0
        if not self._identity:
            rows = rows[self.pos_array]                    # send order -> gradient order
        size = self.values
        widths = self._gstop - self._gstart
        if bool((widths[:-1] == self.lanes).all()):
            return rows.reshape(-1)[:size].astype(np.int64)      # only the last row may be short
        # fragments tile the gradient in order, so the used lanes, row after row, are the gradient
        used = np.arange(self.lanes) < widths[:, None]
        return rows[used].astype(np.int64)
