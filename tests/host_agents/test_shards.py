"""hostlib.shards: a worker and a PS whose sub-models are sharded over threads, each thread with
its own socket on the host's one address; the kernel steers each datagram to the socket of its
sub-model. Exact all-reduces on loopback UDP against a sharded PS (as many threads, or fewer)
and against the C reflector, with and without UDP GSO/GRO."""
from __future__ import annotations

import random
import socket
import threading
import time

import numpy as np
import pytest

from hostlib import native
from hostlib.drivers import steer_by_submodel, udp_socket
from hostlib.protocol import DEFAULT_LANES
from hostlib.ps import JobConfig
from hostlib.rto import RtoEstimator
from hostlib.shards import ShardedPs, ShardedWorker, shard_of
from hostlib.worker import FragmentLabel

from loopback import require_loopback_udp

K = DEFAULT_LANES
JOB = 5


def _net() -> str:
    return f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"    # not another run's addresses


def _rto() -> RtoEstimator:
    return RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0)


def _fixed(g: np.ndarray) -> np.ndarray:
    """A worker's contribution in fixed point (16 fraction bits, rounded half to even)."""
    return np.rint(g * 2.0 ** 16).astype(np.int64)


def test_the_kernel_hands_each_submodel_to_its_socket() -> None:
    net = _net()
    ip = f"{net}.1"
    require_loopback_udp(ip, f"{net}.2")
    socks = [udp_socket(ip, 47100, 1 << 20, (i, 3)) for i in range(3)]
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            tx.bind((f"{net}.2", 0))
            for sub in range(9):
                for _ in range(2):
                    tx.sendto(bytes([0x10, 0, 0, JOB, 0, 0]) + sub.to_bytes(2, "big") + bytes(16), (ip, 47100))
            tx.sendto(b"\x10", (ip, 47100))        # too short for a sub-model id: socket 0
        time.sleep(0.2)
        for i, s in enumerate(socks):
            got = []
            while True:
                try:
                    d = s.recv(100)
                except BlockingIOError:
                    break
                got.append(int.from_bytes(d[6:8], "big") if len(d) >= 8 else -1)
            want = sorted(2 * [sub for sub in range(9) if shard_of(sub, 3) == i] + ([-1] if i == 0 else []))
            assert sorted(got) == want
    finally:
        for s in socks:
            s.close()
    with pytest.raises(ValueError, match="1 to 65535"):
        steer_by_submodel(socks[0], 0)


@pytest.mark.parametrize("worker_threads,ps_threads,gso", [(2, 2, True), (3, 2, True), (2, 1, False)])
def test_sharded_workers_and_ps_all_reduce_exactly(monkeypatch: pytest.MonkeyPatch, worker_threads: int,
                                                   ps_threads: int, gso: bool) -> None:
    if not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    if not gso:
        monkeypatch.setenv("INAHOST_GSO", "0")
    net = _net()
    ps_ip, ips = f"{net}.1", [f"{net}.2", f"{net}.3"]
    require_loopback_udp(ps_ip, *ips)
    sizes = [3000, 70, 0, 4100, 900]          # an empty sub-model, and shards of unequal work
    labels = {s: FragmentLabel(0, len(ips)) for s in range(len(sizes))}
    rng = np.random.default_rng(worker_threads * 10 + ps_threads)
    rounds = [[rng.normal(0, 50, sum(sizes)) for _ in ips] for _ in range(3)]
    job = JobConfig({w: (ip, 0) for w, ip in enumerate(ips)})
    with ShardedPs(ps_ip, {JOB: job}, ps_threads, timeout=_rto()) as ps:
        workers = [ShardedWorker(JOB, w, ps_ip, ip, labels, worker_threads, window=16, rto=_rto())
                   for w, ip in enumerate(ips)]
        try:
            for grads in rounds:
                out: list[np.ndarray] = [np.zeros(0)] * len(ips)

                def run(w: int) -> None:
                    workers[w].push(grads[w], sizes)
                    assert workers[w].run(30.0), f"worker {w}"
                    out[w] = workers[w].result_fixed()
                threads = [threading.Thread(target=run, args=(w,)) for w in range(len(ips))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                want = sum(_fixed(g) for g in grads)
                for w in range(len(ips)):
                    assert np.array_equal(out[w], want), f"worker {w}"
        finally:
            for wk in workers:
                wk.close()
    received = ps.stats.received
    assert received.get("plain", 0) >= len(rounds) * len(ips) * sum(-(-s // K) for s in sizes)


def test_a_sharded_worker_against_sharded_reflectors() -> None:
    if not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    from benchmarks.reflector import Reflector, ReflectorUnavailable
    net = _net()
    ps_ip, ips = f"{net}.1", [f"{net}.2", f"{net}.3"]
    require_loopback_udp(ps_ip, *ips)
    sizes = [5000, 5000, 300]
    try:
        reflectors = [Reflector(ps_ip, ips, shard=(t, 2)) for t in range(2)]
    except ReflectorUnavailable as e:          # no C compiler: nothing to test
        pytest.skip(str(e))
    for r in reflectors:
        r.start()
    labels = [FragmentLabel(1, len(ips))] * len(sizes)
    workers = [ShardedWorker(JOB, w, ps_ip, ip, labels, 2, window=32, rto=_rto()) for w, ip in enumerate(ips)]
    try:
        rng = np.random.default_rng(9)
        for _ in range(2):
            grads = [rng.normal(0, 20, sum(sizes)) for _ in ips]
            out: list[np.ndarray] = [np.zeros(0)] * len(ips)

            def run(w: int) -> None:
                out[w] = workers[w].all_reduce(grads[w], sizes, timeout=30.0)
            threads = [threading.Thread(target=run, args=(w,)) for w in range(len(ips))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            want = sum(_fixed(g) for g in grads) / 2.0 ** 16
            for w in range(len(ips)):
                assert np.array_equal(out[w], want)
    finally:
        for wk in workers:
            wk.close()
        for r in reflectors:
            r.close()
    # each reflector aggregated its own sub-models only
    assert all(r.stats.completed > 0 for r in reflectors)


def test_bench_reflector_compares_thread_counts(capsys: pytest.CaptureFixture[str]) -> None:
    if not native.available():
        pytest.skip(f"no native data path: {native.unavailable_reason()}")
    require_loopback_udp("127.0.0.2")
    from benchmarks import bench_reflector
    assert bench_reflector.main(["--mb", "0.1", "--rounds", "2", "--threads", "1,2", "--no-gloo"]) == 0
    out = capsys.readouterr().out
    assert "W=64, 2 threads" in out and "2 threads, median of 1" in out and "x 1 thread(s)" in out
    with pytest.raises(SystemExit):
        bench_reflector.main(["--threads", "0"])


def test_one_thread_keeps_its_address_to_itself() -> None:
    """A single-threaded agent binds without SO_REUSEPORT: a second one on its address fails
    instead of sharing its datagrams."""
    net = _net()
    ip = f"{net}.1"
    require_loopback_udp(ip)
    job = {JOB: JobConfig({0: (f"{net}.2", 0)})}
    first = ShardedPs(ip, job, 1)
    try:
        with pytest.raises(OSError):
            ShardedPs(ip, job, 1)
    finally:
        first.close()
