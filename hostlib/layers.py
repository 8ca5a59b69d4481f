"""Sending layer by layer while backpropagation computes them: :class:`LayerRelease`, a sans-IO
agent around layered Workers that releases each round's sub-models at the times the
application's backward pass produces their gradients (ESA §7.2.1 sends layer by layer and
overlaps computation; Eq. 1's layer factor ranks the front layers, sent last but needed first
by the next forward pass)."""
from __future__ import annotations

from typing import Sequence

from .worker import Worker
from .worker_group import WorkerGroup


class LayerRelease:
    """``agent`` (a layered Worker, or a WorkerGroup of them) with its pushed round's sub-models
    released over time: by ``times[k]`` the first k + 1 sub-models in send order (the last layers
    first) have their gradients. The round's frames go out as each is released; everything else
    is the agent's."""

    def __init__(self, agent: Worker | WorkerGroup, times: Sequence[float]) -> None:
        self.agent = agent
        self.workers = list(agent.workers.values()) if isinstance(agent, WorkerGroup) else [agent]
        if not all(w.layered for w in self.workers):
            raise ValueError("LayerRelease: layered Workers only (Worker(layered=True))")
        if any(b < a for a, b in zip(times, times[1:])):
            raise ValueError("LayerRelease: release times must not decrease")
        self.times = list(times)
        self.released = 0

    def _due(self, now: float) -> list[bytes]:
        k = self.released
        while k < len(self.times) and self.times[k] <= now:
            k += 1
        if k == self.released:
            return []
        self.released = k
        return [f for w in self.workers for f in w.release(k, now)]

    def start(self, now: float) -> list[bytes]:
        return self.agent.start(now) + self._due(now)

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        return self.agent.on_frame(frame, now) + self._due(now)

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        return self.agent.on_frames(frames, now) + self._due(now)

    def on_timer(self, now: float) -> list[bytes]:
        return self.agent.on_timer(now) + self._due(now)

    def next_deadline(self) -> float | None:
        d = self.agent.next_deadline()
        if self.released < len(self.times):
            t = self.times[self.released]
            d = t if d is None else min(d, t)
        return d

    def done(self) -> bool:
        return self.agent.done()
