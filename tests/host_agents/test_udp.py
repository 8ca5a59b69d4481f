"""The real-time UDP driver on loopback: two workers and a PS in threads, no switch (node 0)."""
from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

from hostlib.drivers import UdpTransport, run_udp
from hostlib.protocol import encode_lanes
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from loopback import require_loopback_udp

from .udp_threads import serving

K = 16


def test_two_workers_and_a_ps_over_udp_loopback() -> None:
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"    # avoid other runs' addresses
    ips = [f"{net}.{i}" for i in (1, 2, 3)]
    require_loopback_udp(*ips)
    transports = [UdpTransport(ip, lanes=K) for ip in ips]
    rng = np.random.default_rng(0)
    grads = [rng.normal(0, 1, 100) for _ in range(2)]
    rto = dict(initial=0.2, minimum=0.05, maximum=0.5)
    ps = ParameterServer(ips[0], {3: JobConfig({0: (ips[1], 0), 1: (ips[2], 0)})}, lanes=K,
                         timeout=RtoEstimator(**rto))
    workers = []
    for w in range(2):
        wk = Worker(3, w, ips[0], ips[1 + w], [FragmentLabel(0, 2)], lanes=K, window=3, rto=RtoEstimator(**rto))
        wk.push(grads[w])
        workers.append(wk)
    all_done = lambda: all(wk.done() for wk in workers)                # noqa: E731
    threads = [threading.Thread(target=run_udp, args=(ps, transports[0], 10.0, all_done))]
    threads += [threading.Thread(target=run_udp, args=(wk, transports[1 + i], 10.0)) for i, wk in enumerate(workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
    finally:
        for tr in transports:
            tr.close()
    want = sum(np.concatenate([encode_lanes(g[s:s + K], 16, K)[:min(K, 100 - s)] for s in range(0, 100, K)])
               .astype(np.int64) for g in grads)
    for wk in workers:
        assert wk.done() and np.array_equal(wk.result_fixed(), want)
    assert ps.stats.received == {"plain": 2 * 7}


@pytest.mark.parametrize("native", [False, None], ids=["python-loop", "native-where-available"])
@pytest.mark.parametrize("agent", ["ps", "worker-after-its-round", "worker-before-a-round"])
def test_wake_ends_a_serve_at_once(agent: str, native: bool | None) -> None:
    """``UdpTransport.wake`` ends run_udp's wait: its stop condition is checked now, not at the
    next ``poll`` (a minute here). InaAllReduce takes its socket back from the idle server so."""
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
    ips = [f"{net}.{i}" for i in (1, 2)]
    require_loopback_udp(*ips)
    transports = [UdpTransport(ip, lanes=K, native=native) for ip in ips]
    rto = RtoEstimator(initial=0.2, minimum=0.05, maximum=0.5)
    ps = ParameterServer(ips[0], {3: JobConfig({0: (ips[1], 0)})}, lanes=K, timeout=rto)
    wk = Worker(3, 0, ips[0], ips[1], [FragmentLabel(0, 1)], lanes=K, window=3, rto=RtoEstimator(initial=0.2))
    try:
        if agent == "worker-after-its-round":
            wk.push(np.arange(40.0))
            with serving(ps, transports[0]):
                assert run_udp(wk, transports[1], 10.0)
        served, tr = (ps, transports[0]) if agent == "ps" else (wk, transports[1])
        stop, stopped = threading.Event(), []
        serve = threading.Thread(target=lambda: stopped.append(run_udp(served, tr, 120.0, stop.is_set, poll=60.0)))
        serve.start()
        time.sleep(0.3)                   # in its wait by now
        stop.set()
        t0 = time.monotonic()
        tr.wake()
        serve.join(60.0)
        assert stopped == [True] and time.monotonic() - t0 < 5.0
    finally:
        for t in transports:
            t.close()
