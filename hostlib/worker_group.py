"""Several Workers of one host behind one socket (a job whose model is split over several PSes)."""
from __future__ import annotations

from typing import Sequence

from .protocol import ProtocolError, frame_fields
from .worker import Worker


class WorkerGroup:
    """Several :class:`Worker` s of one host behind one socket, driven as one agent: a job whose
    model is split over several PSes (InArt) runs one Worker per PS part, each with its own job
    id. Frames go to the Worker of their job id; the group is done when every Worker is."""

    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = {w.job_id: w for w in workers}
        if len(self.workers) != len(workers):
            raise ValueError("a WorkerGroup needs distinct job ids")
        self.lanes = workers[0].lanes

    def start(self, now: float) -> list[bytes]:
        return [f for w in self.workers.values() for f in w.start(now)]

    def done(self) -> bool:
        return all(w.done() for w in self.workers.values())

    def on_frames(self, frames: Sequence[bytes], now: float) -> list[bytes]:
        by_job: dict[int, list[bytes]] = {}
        for f in frames:
            try:
                job = frame_fields(f, self.lanes)[1]
            except ProtocolError:
                continue
            if job in self.workers:
                by_job.setdefault(job, []).append(f)
        return [out for job, fs in by_job.items() for out in self.workers[job].on_frames(fs, now)]

    def on_frame(self, frame: bytes, now: float) -> list[bytes]:
        return self.on_frames([frame], now)

    def on_timer(self, now: float) -> list[bytes]:
        return [f for w in self.workers.values() for f in w.on_timer(now)]

    def next_deadline(self) -> float | None:
        return min((d for w in self.workers.values() if (d := w.next_deadline()) is not None), default=None)
