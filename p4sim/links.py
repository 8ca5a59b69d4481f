"""What a port's link does to the frames it carries, since ``tc netem`` is not available to us
and a veth pair has no wire: seeded egress impairments (drop, delay, jitter) and serialization
at a link rate.

* :class:`Impairment` / :class:`Impairer`: per-port, seeded drop and delay draws.
* :class:`Serializer`: one direction of a link of a given rate, store and forward. A frame is
  on the far side once its last bit is: when the link is idle, its length at the rate after
  it was handed to the link; behind other frames, that much after the one before it. An htb
  class on a veth paces frames at the rate but delivers each at once, so a frame's round trip
  through a software switch can be shorter than its time on a real link of that rate; the
  serializer adds that time, which is what makes a window of frames, and so aggregator memory,
  matter as it does on a real link.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Impairment:
    """Egress impairment of a port: drop with probability ``drop_rate``; delay every frame by
    ``delay_ms`` plus a uniform draw in ``[-jitter_ms, +jitter_ms]`` (clamped at 0).
    ``seed`` makes the random draws reproducible."""
    drop_rate: float = 0.0
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.drop_rate <= 1.0:
            raise ValueError(f"drop rate must be in [0, 1], got {self.drop_rate}")
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delay and jitter must be >= 0")

    @property
    def active(self) -> bool:
        return self.drop_rate > 0 or self.delay_ms > 0 or self.jitter_ms > 0


class Impairer:
    """The random state of one port's :class:`Impairment`.

    The stream is seeded from ``(seed, port)`` so every port draws independently but
    reproducibly when one ``--seed`` is given for all ports.
    """

    def __init__(self, imp: Impairment, port: int = 0) -> None:
        self.imp = imp
        # str seeds are hashed with SHA-512 by random.seed: stable across runs and versions
        self._rng = random.Random(f"p4sim-impairment:{imp.seed}:{port}")

    def decide(self, now: float) -> float | None:
        """``None`` if the frame is dropped, else the (monotonic) time to send it."""
        imp = self.imp
        if imp.drop_rate > 0 and self._rng.random() < imp.drop_rate:
            return None
        delay = imp.delay_ms
        if imp.jitter_ms > 0:
            delay = max(0.0, delay + self._rng.uniform(-imp.jitter_ms, imp.jitter_ms))
        return now + delay / 1000.0

class Serializer:
    """One direction of a link of ``rate_bps`` bits per second, first in first out, with an
    unbounded queue (the sender's queue: nothing is dropped for lack of room)."""

    def __init__(self, rate_bps: float) -> None:
        if not rate_bps > 0:
            raise ValueError(f"link rate must be > 0, got {rate_bps}")
        self.rate_bps = rate_bps
        self.free_at = 0.0        # when the last frame handed to the link has its last bit across

    def arrival(self, now: float, nbytes: int) -> float:
        """When a frame of ``nbytes`` handed to the link at ``now`` is entirely across."""
        t = self.free_at = max(now, self.free_at) + 8 * nbytes / self.rate_bps
        return t
