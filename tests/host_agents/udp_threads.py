"""Agents over real UDP in threads of one process: a PS served in the background while each
worker runs ``run_udp`` on its transport in a thread of its own."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from hostlib.drivers import run_udp


@contextmanager
def serving(ps: Any, transport: Any, timeout: float = 120.0) -> Iterator[None]:
    """``ps`` answering on ``transport`` in the background until the block ends."""
    stop = threading.Event()
    serve = threading.Thread(target=run_udp, args=(ps, transport, timeout, stop.is_set))
    serve.start()
    try:
        yield
    finally:
        stop.set()
        serve.join(30)


def run_workers(workers: Sequence[Any], transports: Sequence[Any], timeout: float) -> list[bool]:
    """Each worker's current round, side by side: whether each finished within ``timeout`` s."""
    done = [False] * len(workers)

    def run(i: int) -> None:
        done[i] = run_udp(workers[i], transports[i], timeout)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    return done
