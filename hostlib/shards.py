"""A host's agent over several cores: sub-models sharded over threads, one socket each.

A worker or PS of one job is cut by sub-model: sub-model ``s`` belongs to shard ``s % n``. Each
shard is a whole :class:`~hostlib.worker.Worker` or :class:`~hostlib.ps.ParameterServer` for
its sub-models, with a UDP socket of its own on the agent's one address (SO_REUSEPORT; the
kernel hands every datagram to the socket of its sub-model, :func:`hostlib.drivers.steer_by_submodel`),
driven by :func:`hostlib.drivers.run_udp` in a thread of its own. The C loops of hostlib.native
run without the GIL, so shards run on as many cores as there are; the protocol is unchanged —
each sub-model's fragments still leave one socket in order, and the peers see one host.

A job needs at least as many sub-models as threads for every thread to have work: a worker cuts
its gradient into sub-models as its labels say (the controller's plan), and a thread whose shard
has no sub-model in a round stays idle.

    with ShardedPs("10.0.0.1", {7: JobConfig(...)}, threads=2) as ps:     # serves in threads
        ...
    with ShardedWorker(7, 0, "10.0.0.1", "10.0.0.2", labels, threads=2) as wk:
        result = wk.all_reduce(gradient, submodel_sizes)
"""
from __future__ import annotations

import copy
import math
import threading
from dataclasses import fields
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .drivers import UdpTransport, run_udp
from .xdp import open_transport
from .protocol import DEFAULT_LANES, decode_lanes
from .ps import JobConfig, ParameterServer, PsStats
from .worker import FragmentLabel, Worker


def shard_of(submodel_id: int, shards: int) -> int:
    """The shard (thread, socket) of a sub-model."""
    return submodel_id % shards


def equal_parts(n: int, parts: int) -> list[int]:
    """``n`` values in ``parts`` sub-models of (nearly) equal size: one per thread."""
    return [n // parts + (i < n % parts) for i in range(parts)]


def _check_threads(threads: int) -> None:
    if not 1 <= threads <= 0xFFFF:
        raise ValueError(f"threads {threads}: 1 to 65535")


def _in_threads(tasks: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run every task in a thread of its own and wait for all; the first error is raised. One
    task runs in the caller's thread."""
    if len(tasks) == 1:
        return [tasks[0]()]
    results: list[Any] = [None] * len(tasks)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = tasks[i]()
        except BaseException as e:       # re-raised in the caller's thread
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(tasks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _on_every_shard(attr: str, doc: str) -> property:
    """A Worker attribute that every shard of a ShardedWorker has alike: read from the first,
    set on all."""
    def get(self: "ShardedWorker") -> Any:
        return getattr(self.workers[0], attr)

    def put(self: "ShardedWorker", value: Any) -> None:
        for wk in self.workers:
            setattr(wk, attr, value)
    return property(get, put, doc=doc)


def _summed(counter: str, doc: str) -> property:
    """A WorkerStats counter summed over a ShardedWorker's shards."""
    return property(lambda self: sum(getattr(wk.stats, counter) for wk in self.workers), doc=doc)


class ShardedWorker:
    """One worker of a job (``job_id``, ``worker_id``) at ``ip``, its sub-models sharded over
    ``threads`` threads. ``labels``: each sub-model's label, as :class:`Worker` takes them;
    ``worker_options``: the rest of Worker's options, for every shard (an ``rto`` estimator is
    copied for each: the shards' paths are timed apart). ``io``: the shards' transports
    (hostlib.xdp.open_transport: "socket", "xdp" or "auto"; None: ``INAHOST_IO``'s, default the
    socket; AF_XDP takes one thread)."""

    def __init__(self, job_id: int, worker_id: int, ps_ip: str, ip: str,
                 labels: Sequence[FragmentLabel] | Mapping[int, FragmentLabel], threads: int, *,
                 lanes: int = DEFAULT_LANES, native: bool | None = True, buffer_bytes: int = 4 << 20,
                 io: str | None = None, **worker_options: Any) -> None:
        _check_threads(threads)
        by_sub = dict(enumerate(labels)) if not isinstance(labels, Mapping) else dict(labels)
        self.threads, self.lanes = threads, lanes
        self.workers: list[Worker] = []
        self.transports: list[UdpTransport] = []
        self._sizes: list[int] = []
        try:
            for t in range(threads):        # bound in shard order: the kernel numbers the group so
                self.transports.append(open_transport(ip, lanes=lanes, io=io, native=native,
                                                      buffer_bytes=buffer_bytes, shard=(t, threads)))
                options = {k: copy.deepcopy(v) for k, v in worker_options.items()}
                mine = {s: lab for s, lab in by_sub.items() if shard_of(s, threads) == t}
                self.workers.append(Worker(job_id, worker_id, ps_ip, ip, mine, lanes=lanes, native=native is not False,
                                           **options))
        except BaseException:
            self.close()
            raise

    def push(self, gradient: np.ndarray, submodel_sizes: Sequence[int] | None = None) -> None:
        """The next round of ``gradient`` (flat), cut into sub-models as :meth:`Worker.push` does;
        each shard takes its sub-models' values."""
        g = np.asarray(gradient).ravel()
        sizes = [g.size] if submodel_sizes is None else [int(s) for s in submodel_sizes]
        if sum(sizes) != g.size or any(s < 0 for s in sizes):
            raise ValueError(f"sub-model sizes {sizes} do not add up to the gradient's {g.size} values")
        starts = np.cumsum([0, *sizes])
        for t, wk in enumerate(self.workers):
            mine = [s for s in range(len(sizes)) if shard_of(s, self.threads) == t]
            if len(mine) == 1:
                part = g[starts[mine[0]]:starts[mine[0] + 1]]      # a view: no copy of the gradient
            else:
                part = np.concatenate([g[starts[s]:starts[s + 1]] for s in mine]) if mine else g[:0]
            wk.push(part, [sizes[s] if shard_of(s, self.threads) == t else 0 for s in range(len(sizes))])
        self._sizes = sizes

    def run(self, timeout: float) -> bool:
        """Complete the pushed round, every shard in its own thread; False if one timed out."""
        return all(_in_threads([lambda wk=wk, tr=tr: run_udp(wk, tr, timeout)
                                for wk, tr in zip(self.workers, self.transports)]))

    def all_reduce(self, gradient: np.ndarray, submodel_sizes: Sequence[int] | None = None,
                   timeout: float = 60.0) -> np.ndarray:
        """Push ``gradient``, complete the round and return the aggregate (floats)."""
        self.push(gradient, submodel_sizes)
        if not self.run(timeout):
            raise TimeoutError(f"round {self.workers[0].round} did not complete in {timeout} s")
        return self.result()

    def serve(self, stop: Callable[[], bool], timeout: float = math.inf, poll: float = 0.05) -> bool:
        """Keep answering the PS (its queries about the last round) in every shard's thread
        until ``stop()`` (checked every ``poll`` s, and at once on :meth:`wake`) or ``timeout``
        s; True if it stopped."""
        return all(_in_threads([lambda wk=wk, tr=tr: run_udp(wk, tr, timeout, stop=stop, poll=poll)
                                for wk, tr in zip(self.workers, self.transports)]))

    def wake(self) -> None:
        """Make a running :meth:`serve` check its stop condition now (from another thread)."""
        for tr in self.transports:
            tr.wake()

    def done(self) -> bool:
        return all(wk.done() for wk in self.workers)

    round = _on_every_shard("round", "The current round (every shard's).")
    scale_bits = _on_every_shard("scale_bits", "Fixed-point fraction bits (every shard's).")

    def result_fixed(self) -> np.ndarray:
        """The aggregate in fixed point (int64), in gradient order: each shard's sub-models put back."""
        sizes = self._sizes
        starts = np.cumsum([0, *sizes])
        out = np.zeros(int(starts[-1]), dtype=np.int64)
        for t, wk in enumerate(self.workers):
            part, at = wk.result_fixed(), 0
            for s in range(len(sizes)):
                if shard_of(s, self.threads) == t:
                    out[starts[s]:starts[s + 1]] = part[at:at + sizes[s]]
                    at += sizes[s]
        return out

    def result(self) -> np.ndarray:
        return decode_lanes(self.result_fixed(), self.workers[0].scale_bits)

    def result_into(self, out: np.ndarray, scale_bits: int | None = None, divisor: float = 1.0) -> np.ndarray:
        """:meth:`hostlib.worker.Worker.result_into` over the shards: each decodes its sub-models,
        put back in gradient order."""
        if self.threads == 1:
            return self.workers[0].result_into(out, scale_bits, divisor)
        sizes = self._sizes
        starts = np.cumsum([0, *sizes])
        if out.dtype != np.float32 or out.size != starts[-1] or not out.flags.c_contiguous:
            raise ValueError(f"out: {out.size} {out.dtype} values for a round of {starts[-1]}; needs contiguous float32")
        flat = out.reshape(-1)
        for t, wk in enumerate(self.workers):
            mine = [s for s in range(len(sizes)) if shard_of(s, self.threads) == t]
            part, at = wk.result_into(np.empty(sum(sizes[s] for s in mine), dtype=np.float32), scale_bits, divisor), 0
            for s in mine:
                flat[starts[s]:starts[s + 1]] = part[at:at + sizes[s]]
                at += sizes[s]
        return out

    resent = _summed("resent", "Fragments the shards resent in the current round.")
    sent = _summed("sent", "First copies the shards sent in the current round.")
    results = _summed("results", "Results the shards received in the current round.")

    @property
    def overflowed(self) -> bool:
        """Whether a result of the current round saturated (OVERFLOW)."""
        return any(wk.stats.overflowed for wk in self.workers)

    def close(self) -> None:
        for tr in self.transports:
            tr.close()
        self.transports = []

    def __enter__(self) -> "ShardedWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ShardedPs:
    """A PS at ``ip`` for ``jobs``, their sub-models sharded over ``threads`` threads: one
    :class:`ParameterServer` each (``ps_options``: its options; a ``timeout`` estimator is
    copied for each). :meth:`serve` runs them until ``stop()``; as a context manager it serves
    in the background until the block ends. ``io``: as :class:`ShardedWorker`'s."""

    def __init__(self, ip: str, jobs: Mapping[int, JobConfig], threads: int, *, lanes: int = DEFAULT_LANES,
                 native: bool | None = True, buffer_bytes: int = 8 << 20, io: str | None = None,
                 **ps_options: Any) -> None:
        _check_threads(threads)
        self.threads = threads
        self.servers: list[ParameterServer] = []
        self.transports: list[UdpTransport] = []
        self._stop = threading.Event()
        self._background: threading.Thread | None = None
        self._error: BaseException | None = None
        try:
            for t in range(threads):
                self.transports.append(open_transport(ip, lanes=lanes, io=io, native=native,
                                                      buffer_bytes=buffer_bytes, shard=(t, threads)))
                options = {k: copy.deepcopy(v) for k, v in ps_options.items()}
                self.servers.append(ParameterServer(ip, jobs, lanes=lanes, **options))
        except BaseException:
            self.close()
            raise

    def serve(self, stop: Callable[[], bool], timeout: float = math.inf) -> bool:
        """Serve in ``threads`` threads until ``stop()`` (checked every 50 ms) or ``timeout``
        seconds; True if it stopped."""
        return all(_in_threads([lambda ps=ps, tr=tr: run_udp(ps, tr, timeout, stop=stop)
                                for ps, tr in zip(self.servers, self.transports)]))

    @property
    def stats(self) -> PsStats:
        """The shards' :class:`PsStats`, summed (``received``: by kind)."""
        out = PsStats()
        for ps in self.servers:
            for f in fields(PsStats):
                mine = getattr(ps.stats, f.name)
                if f.name == "received":
                    for kind, n in mine.items():
                        out.received[kind] = out.received.get(kind, 0) + n
                else:
                    setattr(out, f.name, getattr(out, f.name) + mine)
        return out

    def incomplete(self) -> list[tuple[int, int, int, int]]:
        """(job, round, sub-model, fragment) of every entry still waiting, over the shards."""
        return [key for ps in self.servers for key in ps.incomplete()]

    def _serve_in_background(self) -> None:
        try:
            self.serve(self._stop.is_set)
        except BaseException as e:      # raised by close() in the owner's thread
            self._error = e

    def close(self) -> None:
        if self._background is not None:
            self._stop.set()
            self._background.join(30)
            self._background = None
        for tr in self.transports:
            tr.close()
        self.transports = []
        if self._error is not None:
            raise self._error

    def __enter__(self) -> "ShardedPs":
        self._background = threading.Thread(target=self._serve_in_background, daemon=True, name="sharded-ps")
        self._background.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
