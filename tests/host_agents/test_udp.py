"""The real-time UDP driver on loopback: two workers and a PS in threads, no switch (node 0)."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from hostlib.drivers import UdpTransport, run_udp
from hostlib.protocol import encode_lanes
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from loopback import require_loopback_udp

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
