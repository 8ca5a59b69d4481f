"""The machine a benchmark ran on, printed first by every benchmark: numbers are only
comparable within one run on one machine (machines of the same kind differ 2-4x)."""
from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def describe() -> str:
    """One line: CPU model, cores, load, Python."""
    try:
        load = "load %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "load unknown"
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores ({load}), "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}")


def thread_counts(value: str) -> list[int]:
    """``--threads``: a number, or a comma-separated list of numbers, each at least 1 (an
    argparse type: a bad value is a one-line usage error)."""
    import argparse
    try:
        counts = [int(t) for t in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: a number or a comma-separated list of numbers") from None
    if any(t < 1 for t in counts):
        raise argparse.ArgumentTypeError(f"{value!r}: at least one thread each")
    return counts


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (every thread's)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _gloo_rank(rank: int, size: int, port: int, n: int, rounds: int, q: Any) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
    try:
        t = torch.from_numpy(np.random.default_rng(rank).normal(0.0, 1.0, n).astype(np.float32))
        dist.all_reduce(t)                       # warm-up: connections, buffers
        dist.barrier()
        c0, t0 = cpu_seconds(), time.perf_counter()
        for _ in range(rounds):
            # in place, as DDP reduces its buckets: the sums grow (x N a round), far from float32's
            # range for the rounds a run makes, and addition costs the same at any magnitude
            dist.all_reduce(t)
        q.put((cpu_seconds() - c0, time.perf_counter() - t0))
    finally:
        dist.destroy_process_group()


def gloo_all_reduce(workers: int, n: int, rounds: int) -> list[tuple[float, float]] | None:
    """gloo's all-reduce of ``n`` float32 values, in place, ``rounds`` times between ``workers``
    spawned processes on 127.0.0.1, after one warm-up round: each rank's (CPU seconds, wall
    seconds). None, with the reason printed, where torch or its gloo backend is missing."""
    try:
        import torch.distributed as dist
    except ImportError:
        print("gloo all-reduce: torch is not installed")
        return None
    if not dist.is_available() or not dist.is_gloo_available():
        print("gloo all-reduce: torch.distributed has no gloo backend here")
        return None
    import multiprocessing as mp
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")                   # torch and fork do not mix
    q = ctx.Queue()
    procs = [ctx.Process(target=_gloo_rank, args=(r, workers, port, n, rounds, q)) for r in range(workers)]
    for p in procs:
        p.start()
    out = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    return out


if __name__ == "__main__":
    print(describe())
