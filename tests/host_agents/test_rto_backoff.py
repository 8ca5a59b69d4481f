"""The PS under hosts slower than its timers: copies that always come after the entry timeout
teach it their delay, and recoveries that go unanswered back off up to the ceiling, so a slow
worker or a loaded host draws a few queries, not a storm of them."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.netns import inside, star
from hostlib import protocol as P
from hostlib.drivers import UdpTransport
from hostlib.protocol import InaHeader, build_frame, is_query
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from netns import require_netns

from .udp_threads import run_workers, serving

K = 8
PS_IP = "10.0.9.1"
WIP = {0: "10.0.0.1", 1: "10.0.0.2"}


def _ps() -> ParameterServer:
    return ParameterServer(PS_IP, {3: JobConfig({w: (ip, 0) for w, ip in WIP.items()})}, lanes=K,
                           timeout=RtoEstimator(initial=0.005, minimum=0.001, maximum=1.0))


def _contribution(worker: int, frag: int) -> bytes:
    h = InaHeader.for_worker(3, 0, 0, frag, worker, 2)
    return build_frame(h, np.full(K, worker + 1, np.int32), src_ip=WIP[worker], dst_ip=PS_IP)


def _queries(frames: list[bytes]) -> int:
    return sum(1 for f in frames if is_query(f[43], f[46] << 8 | f[47]))


def test_copies_later_than_the_timeout_teach_it_their_delay() -> None:
    """Worker 1's copies always come 30 ms after worker 0's, far past the PS's first timeout
    (5 ms), and nobody answers the queries. A copy that completes an entry after its recovery
    is a first copy, not an answer (those are marked), so its time is a sample despite the
    recovery: the timeout learns the lag from the first fragment, and the later ones complete
    unasked. Without that sample every fragment drew queries until its copy came (2,700 of them
    here), and the timeout never learnt the lag."""
    ps = _ps()
    events = sorted([(0.002 * f, 0, f) for f in range(100)] + [(0.002 * f + 0.030, 1, f) for f in range(100)])
    early = late = 0
    for t, worker, frag in events:
        while (d := ps.next_deadline()) is not None and d <= t:
            n = _queries(ps.on_timer(d))
            early, late = (early + n, late) if d < 0.061 else (early, late + n)
        ps.on_frame(_contribution(worker, frag), t)
    assert ps.stats.completed == 100 and ps.done()
    assert ps.timeout.srtt == pytest.approx(0.030, rel=0.05)
    # the fragments that began before the first sample (their copies came by 60 ms) drew
    # queries; none that began after it did
    assert 0 < early <= 150 and late == 0


def test_unanswered_recoveries_double_up_to_the_ceiling() -> None:
    """An entry whose recoveries go unanswered is recovered again an answer round trip later,
    then after waits that double up to the ceiling (the timeout's maximum): not capped at a
    few answer round trips, which before one is measured are a fraction of a millisecond."""
    ps = _ps()
    ps.on_frame(_contribution(0, 0), 0.0)
    times = []
    for _ in range(14):
        d = ps.next_deadline()
        times.append(d)
        assert _queries(ps.on_timer(d)) == 1
    waits = np.diff(times)
    assert waits[0] == pytest.approx(ps.answer_rtt.rto)
    assert np.allclose(waits[1:-1] / waits[:-2], 2.0) or waits[-1] == pytest.approx(1.0)
    assert waits[-1] == pytest.approx(1.0)


def test_a_window_of_64_over_a_bridge_completes_with_the_default_timers() -> None:
    """Two workers and a PS in threads of one process, each on its own veth on a bridge, 8 MB at
    window 64, every timer at its default: the PS's first timeouts are far shorter than the
    workers' spread on a loaded machine. Without the two rules above the round did not finish in
    60 s (170,000 queries, the PS's receive buffer overflowing); with them it takes about 1 s."""
    require_netns()

    n = 2_000_000
    with star(3, subnet="10.79.4") as s:
        transports = []
        for ns, ip in s.hosts:
            with inside(ns):
                transports.append(UdpTransport(ip))
        try:
            (_, ps_ip), *hosts = s.hosts
            ps = ParameterServer(ps_ip, {3: JobConfig({w: (ip, 0) for w, (_, ip) in enumerate(hosts)})})
            workers = [Worker(3, w, ps_ip, ip, [FragmentLabel(0, 2)], window=64) for w, (_, ip) in enumerate(hosts)]
            grads = [np.random.default_rng(w).normal(0, 1, n).astype(np.float32) for w in range(2)]
            for wk, g in zip(workers, grads):
                wk.push(g)
            with serving(ps, transports[0]):
                done = run_workers(workers, transports[1:], 60.0)
        finally:
            for tr in transports:
                tr.close()
    assert done == [True, True]
    want = sum(P.encode_fragments(g, None, 16, P.DEFAULT_LANES).reshape(-1)[:n].astype(np.int64) for g in grads)
    for wk in workers:
        assert np.array_equal(wk.result_fixed(), want)
