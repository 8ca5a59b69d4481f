"""What every host agent shares: the frames-in, frames-out contract's batch form."""
from __future__ import annotations

from typing import Callable, Iterable


def each_frame(on_frame: Callable[[bytes, float], list[bytes]], frames: Iterable[bytes],
               now: float) -> list[bytes]:
    """``on_frame`` for each of ``frames`` (one driver wake-up), the replies concatenated: the
    ``on_frames`` of an agent with no batch decoding of its own."""
    out: list[bytes] = []
    for f in frames:
        out += on_frame(f, now)
    return out
