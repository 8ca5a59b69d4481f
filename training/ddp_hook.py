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
"""
# no "from __future__ import annotations": DDP checks the hook's annotations are the real
# dist.GradBucket and torch.futures.Future[torch.Tensor] types, not strings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from .allreduce import InaAllReduce


@dataclass
class InaHookState:
    """The hook's state: the all-reduce, its communication thread, and per bucket index the
    fixed-point scale of its last all-reduce (for error bounds)."""
    allreduce: InaAllReduce
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "ina-comm"))
    scale_bits: dict[int, int] = field(default_factory=dict)

    def close(self) -> None:
        self.executor.shutdown(wait=True)


def ina_allreduce_hook(state: InaHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """``register_comm_hook`` hook: the bucket's gradients averaged over the INA job."""
    buf = bucket.buffer()
    index = bucket.index()
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def communicate() -> None:
        try:
            mean = state.allreduce.allreduce(buf.detach().cpu().numpy(), average=True)
            state.scale_bits[index] = state.allreduce.last_scale_bits  # type: ignore[assignment]
            buf.copy_(torch.from_numpy(mean).reshape(buf.shape))
            fut.set_result(buf)
        except BaseException as e:           # surface it in the training loop, not this thread
            fut.set_exception(e)

    state.executor.submit(communicate)
    return fut


def register_ina_hook(ddp: DistributedDataParallel, allreduce: InaAllReduce) -> InaHookState:
    """Route ``ddp``'s gradient all-reduce through ``allreduce``; returns the hook state."""
    if dist.is_initialized() and dist.get_world_size() != allreduce.n_workers:
        raise ValueError(f"the INA job has {allreduce.n_workers} workers, the process group "
                         f"{dist.get_world_size()} ranks")
    state = InaHookState(allreduce)
    ddp.register_comm_hook(state, ina_allreduce_hook)
    return state
