"""The machine a benchmark ran on, printed first by every benchmark: numbers are only
comparable within one run on one machine (machines of the same kind differ 2-4x)."""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any, Callable


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


if __name__ == "__main__":
    print(describe())


def spawn_gloo(rank: Callable[..., None], workers: int, *args: Any) -> list[Any] | None:
    """Run ``rank(r, workers, port, *args, queue)`` in ``workers`` spawned processes forming a
    gloo group on 127.0.0.1 (port: a free one) and return what each put on the queue; None,
    with the reason printed, where torch or its gloo backend is missing."""
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
    procs = [ctx.Process(target=rank, args=(r, workers, port, *args, q)) for r in range(workers)]
    for p in procs:
        p.start()
    out = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    return out
