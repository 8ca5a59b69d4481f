"""benchmarks/reflector.c, the switch stand-in of benchmarks/bench_reflector.py: exact int32 sums
per fragment, sent to every worker, over several rounds of hostlib workers on loopback UDP; and
the switch rules it follows (duplicates, stale rounds, a retry answered from the kept result)
with hand-made datagrams."""
from __future__ import annotations

import random
import socket
import threading

import numpy as np
import pytest

from hostlib.drivers import UdpTransport, run_udp
from hostlib.protocol import (DEFAULT_LANES, HEADER_LEN, INA_UDP_PORT, WORKER_AGGREGATE, Flags, InaHeader,
                              encode_lanes, lanes_from_bytes, lanes_to_bytes)
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from loopback import require_loopback_udp

K = DEFAULT_LANES
JOB = 9


def _reflector(ps_ip: str, worker_ips: list[str]):
    from benchmarks.reflector import Reflector, ReflectorUnavailable
    try:
        return Reflector(ps_ip, worker_ips)
    except ReflectorUnavailable as e:          # no C compiler: nothing to test
        pytest.skip(str(e))


def _net() -> str:
    return f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"    # not another run's addresses


def test_reflector_returns_exact_sums_to_every_worker_for_several_rounds() -> None:
    net = _net()
    n, rounds, size = 3, 3, 1000                       # 16 fragments, the last one partial
    ps_ip, ips = f"{net}.1", [f"{net}.{w + 2}" for w in range(n)]
    require_loopback_udp(ps_ip, *ips)
    rng = np.random.default_rng(5)
    grads = [[rng.normal(0, 100, size) for _ in range(n)] for _ in range(rounds)]
    rto = RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0)
    with _reflector(ps_ip, ips) as refl:
        transports = [UdpTransport(ip, lanes=K) for ip in ips]
        workers = [Worker(JOB, w, ps_ip, ips[w], [FragmentLabel(1, n)], lanes=K, window=8, rto=rto)
                   for w in range(n)]
        results: list[list[np.ndarray]] = [[] for _ in range(n)]

        def run(w: int) -> None:
            for r in range(rounds):
                workers[w].push(grads[r][w])
                assert run_udp(workers[w], transports[w], 20.0), f"worker {w} round {r}"
                results[w].append(workers[w].result_fixed())
        threads = [threading.Thread(target=run, args=(w,)) for w in range(n)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        finally:
            for tr in transports:
                tr.close()
    frags = -(-size // K)
    for r in range(rounds):
        want = sum(np.concatenate([encode_lanes(g[s:s + K], 16, K)[:min(K, size - s)] for s in range(0, size, K)])
                   .astype(np.int64) for g in grads[r])
        for w in range(n):
            assert np.array_equal(results[w][r], want), (r, w)
    st = refl.stats.as_dict()
    assert st["completed"] == rounds * frags and st["results_sent"] == n * rounds * frags
    # every first copy arrived; a worker's timer may have resent some under load: each extra
    # copy is a duplicate of a partial's contribution or a retry the kept result answered
    extra = st["fragments"] - n * rounds * frags
    assert 0 <= extra <= st["duplicates"] + st["answered_retries"], st
    assert st["overflowed"] == 0 and st["stale"] == 0


def _payload(worker: int, frag: int, rnd: int, lanes: np.ndarray, flags: Flags = Flags(0), n: int = 2) -> bytes:
    return InaHeader.for_worker(JOB, 1, 0, frag, worker, n, flags=flags, round=rnd).pack() + lanes_to_bytes(lanes)


def _recv(sock: socket.socket) -> tuple[InaHeader, np.ndarray]:
    data = sock.recv(4096)
    return InaHeader.unpack(data), lanes_from_bytes(data[HEADER_LEN:], K)


def test_reflector_follows_the_switch_rules() -> None:
    """A duplicate adds nothing, the sum saturates and is flagged, a stale round is dropped, and
    a RETRY after completion gets the kept result back, to its sender alone."""
    net = _net()
    ps_ip, ips = f"{net}.1", [f"{net}.2", f"{net}.3"]
    require_loopback_udp(ps_ip, *ips)
    socks = []
    for ip in ips:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((ip, INA_UDP_PORT))
        s.settimeout(5)
        socks.append(s)
    a = np.arange(K, dtype=np.int32) - 7
    b = np.full(K, 1000, dtype=np.int32)
    b[0] = 2 ** 31 - 1                               # lane 0 saturates: a[0] = -7 ... + max
    a[0] = 1
    try:
        with _reflector(ps_ip, ips) as refl:
            to = (ps_ip, INA_UDP_PORT)
            socks[0].sendto(_payload(0, 3, 5, a), to)
            socks[0].sendto(_payload(0, 3, 5, a), to)                 # duplicate: ignored
            socks[1].sendto(_payload(1, 3, 5, b), to)                 # completes fragment 3
            want = np.clip(a.astype(np.int64) + b, -2 ** 31, 2 ** 31 - 1)
            for s in socks:
                hdr, lanes = _recv(s)
                assert hdr.flags == Flags.RESULT | Flags.OVERFLOW and hdr.worker_id == WORKER_AGGREGATE
                assert (hdr.count, hdr.bitmap, hdr.round, hdr.fragment_id) == (2, 0b11, 5, 3)
                assert np.array_equal(lanes, want)
            socks[1].sendto(_payload(1, 3, 4, b), to)                 # an older round: dropped
            socks[1].sendto(_payload(1, 3, 5, b, Flags.RETRY), to)    # lost its result: asks again
            hdr, lanes = _recv(socks[1])
            assert hdr.flags == Flags.RESULT | Flags.RETRY | Flags.OVERFLOW and np.array_equal(lanes, want)
            socks[0].settimeout(0.3)
            with pytest.raises(socket.timeout):
                socks[0].recv(4096)                                   # the answer went to worker 1 alone
            refl.stop()
            st = refl.stats.as_dict()
        assert st["duplicates"] == 1 and st["stale"] == 1 and st["answered_retries"] == 1
        assert st["completed"] == 1 and st["overflowed"] == 1 and st["results_sent"] == 2
    finally:
        for s in socks:
            s.close()
