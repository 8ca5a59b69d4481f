"""A DistributedDataParallel communication hook that averages gradient buckets through INA.

    ddp = DistributedDataParallel(model)            # needs a process group (gloo) for its setup
    state = register_ina_hook(ddp, InaAllReduce(job, rank))

DDP still uses its process group for what is not gradient traffic (the initial parameter
broadcast, buffers); every bucket's gradients go through the INA network instead: the hook
returns a future that a single communication thread completes with the bucket's mean over the
job's workers (:meth:`training.allreduce.InaAllReduce.allreduce`). One thread, first in first
out: DDP launches buckets in the same order on every rank, and the INA job runs one round at a
time, so every worker pairs the same bucket with the same round. The thread lets the backward
pass go on computing earlier layers' gradients while a bucket is on the wire.

CPU buckets are read and written in place (numpy views of the bucket's memory). CUDA buckets
are staged through page-locked host buffers (:class:`PinnedPool`, allocated once per bucket
size and reused): the hook queues the device-to-host copy on the stream that produced the
bucket, the communication thread waits for that copy, all-reduces the host buffer in place, and
copies the mean back into the bucket before completing the future — so the future holds the
bucket itself, on its device, already written.
"""
# no "from __future__ import annotations": DDP checks the hook's annotations are the real
# dist.GradBucket and torch.futures.Future[torch.Tensor] types, not strings
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from .allreduce import InaAllReduce


class PinnedPool:
    """Host buffers for staging device buckets, kept per (length, dtype) and reused.

    DDP's buckets keep their sizes from one step to the next, so after the first step no
    buffer is allocated again (page-locking memory is slow: it pins pages in the kernel). A
    buffer is lent to one bucket at a time — two buckets of the same size in flight at once get
    two buffers — because the next bucket's device-to-host copy may be queued while the
    communication thread still reads the last one's. ``pin=False`` gives ordinary memory (for
    checking the bookkeeping where there is no CUDA: pinning needs a CUDA driver)."""

    def __init__(self, pin: bool = True) -> None:
        self.pin = pin
        self.allocated = 0                       # buffers made so far (reuse keeps this flat)
        self._free: dict[tuple[int, torch.dtype], list[torch.Tensor]] = {}
        self._lock = threading.Lock()            # acquire: autograd thread; release: comm thread

    def acquire(self, numel: int, dtype: torch.dtype) -> torch.Tensor:
        """A flat host tensor of ``numel`` elements of ``dtype``, not lent to anyone else."""
        with self._lock:
            free = self._free.get((numel, dtype))
            if free:
                return free.pop()
            self.allocated += 1
        return torch.empty(numel, dtype=dtype, pin_memory=self.pin)

    def release(self, buf: torch.Tensor) -> None:
        """Give ``buf`` back; the caller guarantees no queued copy still uses it."""
        with self._lock:
            self._free.setdefault((buf.numel(), buf.dtype), []).append(buf)


@dataclass
class InaHookState:
    """The hook's state: the all-reduce, its communication thread, per bucket index the
    fixed-point scale of its last all-reduce (for error bounds), and the host staging buffers
    and copy streams for CUDA buckets."""
    allreduce: InaAllReduce
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "ina-comm"))
    scale_bits: dict[int, int] = field(default_factory=dict)
    pinned: PinnedPool = field(default_factory=PinnedPool)
    # per device, a stream for host-to-device copies of results (see _cuda_bucket)
    copy_streams: dict[torch.device, Any] = field(default_factory=dict)

    def close(self) -> None:
        self.executor.shutdown(wait=True)

    def copy_stream(self, device: torch.device) -> Any:
        if device not in self.copy_streams:
            self.copy_streams[device] = torch.cuda.Stream(device)
        return self.copy_streams[device]


def ina_allreduce_hook(state: InaHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """``register_comm_hook`` hook: the bucket's gradients averaged over the INA job."""
    buf = bucket.buffer()
    index = bucket.index()
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    job = _cuda_bucket(state, buf, index) if buf.is_cuda else _cpu_bucket(state, buf, index)

    def communicate() -> None:
        try:
            fut.set_result(job())
        except BaseException as e:           # surface it in the training loop, not this thread
            fut.set_exception(e)

    state.executor.submit(communicate)
    return fut


def _cpu_bucket(state: InaHookState, buf: torch.Tensor, index: int) -> Callable[[], torch.Tensor]:
    """The communication thread's work for a CPU bucket: ``.numpy()`` shares the bucket's
    memory, so the all-reduce reads it without a copy and, for a float32 bucket (the usual),
    writes the mean back into it in place."""
    def run() -> torch.Tensor:
        values = buf.detach().numpy()
        in_place = values.dtype == np.float32 and values.flags.c_contiguous
        mean = state.allreduce.allreduce(values, average=True, out=values if in_place else None)
        state.scale_bits[index] = state.allreduce.last_scale_bits  # type: ignore[assignment]
        if not in_place:
            buf.copy_(torch.from_numpy(mean).reshape(buf.shape))
        return buf
    return run


def _cuda_bucket(state: InaHookState, buf: torch.Tensor, index: int) -> Callable[[], torch.Tensor]:
    """Queue the bucket's device-to-host copy now (in the hook, on the autograd thread) and
    return the communication thread's work for it."""
    # the stream backward produced this bucket on: the copy must follow its gradient kernels
    stream = torch.cuda.current_stream(buf.device)
    host = state.pinned.acquire(buf.numel(), buf.dtype)
    host.copy_(buf.reshape(-1), non_blocking=True)
    copied = torch.cuda.Event()
    copied.record(stream)
    copy_back = state.copy_stream(buf.device)

    def run() -> torch.Tensor:
        try:
            # wait for the copy itself, not for the kernels backward queued after it
            copied.synchronize()
            values = host.numpy()
            # float32 buckets (the usual) are averaged in place; others through a float32 result
            mean = state.allreduce.allreduce(values, average=True,
                                             out=values if values.dtype == np.float32 else None)
            if mean is not values:
                values[...] = mean
            state.scale_bits[index] = state.allreduce.last_scale_bits  # type: ignore[assignment]
            # a stream of our own: the bucket's stream is busy with the rest of backward, and
            # nothing on it touches this bucket again before DDP has our future's result
            with torch.cuda.stream(copy_back):
                buf.view(-1).copy_(host, non_blocking=True)
                done = torch.cuda.Event()
                done.record(copy_back)
            # a plain Future carries no CUDA events: DDP would read the bucket on its own stream
            # without waiting for ours, so the copy has landed before the future completes (and
            # only then may the host buffer go to the next bucket)
            done.synchronize()
            return buf
        finally:
            state.pinned.release(host)
    return run


def register_ina_hook(ddp: DistributedDataParallel, allreduce: InaAllReduce) -> InaHookState:
    """Route ``ddp``'s gradient all-reduce through ``allreduce``; returns the hook state."""
    if dist.is_initialized() and dist.get_world_size() != allreduce.n_workers:
        raise ValueError(f"the INA job has {allreduce.n_workers} workers, the process group "
                         f"{dist.get_world_size()} ranks")
    state = InaHookState(allreduce)
    ddp.register_comm_hook(state, ina_allreduce_hook)
    return state
