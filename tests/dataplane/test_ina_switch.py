"""Packet-level behaviour of the INA switch programs (docs/protocol.md, "Switch behaviour")."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import INT32_MAX, WORKER_AGGREGATE, Flags, build_frame, parse_frame

from .ina_harness import PS_IP, PS_PORT, InaSwitch, random_lanes, worker_ip, worker_port

ARCHS = ["v1model", "tna"]


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


def test_exact_sum_of_n_workers_reaches_every_worker(arch: str) -> None:
    s = InaSwitch(arch, workers=4)
    rng = np.random.default_rng(1)
    grads = [random_lanes(rng, s.lanes) for _ in range(4)]
    for w in range(3):
        assert s.send(s.fragment(w, fan_in=4), grads[w]) == []          # absorbed
    out = s.parse(s.send(s.fragment(3, fan_in=4), grads[3]))
    assert sorted(p for p, _ in out) == [worker_port(w) for w in range(4)]
    expected = np.sum(np.stack(grads).astype(np.int64), axis=0)
    for port, pkt in out:
        w = port - 1
        assert pkt.dst_ip == worker_ip(w)                                 # per-replica rewrite
        assert pkt.src_ip == PS_IP                                        # results come from the PS
        assert Flags.RESULT in pkt.header.flags
        assert pkt.header.bitmap == 0b1111 and pkt.header.count == 4
        assert pkt.header.worker_id == WORKER_AGGREGATE
        assert np.array_equal(pkt.lanes.astype(np.int64), expected)


def test_fragment_for_another_node_passes_untouched(arch: str) -> None:
    s = InaSwitch(arch)
    lanes = np.arange(s.lanes, dtype=np.int32)
    h = s.fragment(0, fan_in=4, node_id=2)
    out = s.parse(s.send(h, lanes))
    assert len(out) == 1
    port, pkt = out[0]
    assert port == PS_PORT and pkt.dst_ip == PS_IP
    assert pkt.header == h and np.array_equal(pkt.lanes, lanes)
    assert pkt.ttl == 63


def test_result_to_ps_when_configured(arch: str) -> None:
    s = InaSwitch(arch, workers=2, result="ps")
    a, b = np.full(s.lanes, 5, np.int32), np.full(s.lanes, -2, np.int32)
    assert s.send(s.fragment(0, fan_in=2), a) == []
    (port, pkt), = s.parse(s.send(s.fragment(1, fan_in=2), b))
    assert port == PS_PORT and Flags.RESULT in pkt.header.flags
    assert np.all(pkt.lanes == 3)


def test_collision_falls_back_to_ps_in_atp_mode(arch: str) -> None:
    s = InaSwitch(arch, workers=2, pool_size=1, preemption=False)
    a = np.full(s.lanes, 1, np.int32)
    assert s.send(s.fragment(0, fan_in=2, fragment_id=1, priority=1), a) == []      # claims the only aggregator
    other = s.fragment(0, fan_in=2, fragment_id=2, priority=200)
    (port, pkt), = s.parse(s.send(other, np.full(s.lanes, 9, np.int32)))
    assert port == PS_PORT
    assert Flags.COLLISION in pkt.header.flags and Flags.PREEMPTED not in pkt.header.flags
    assert pkt.header.key() == other.key() and np.all(pkt.lanes == 9)
    assert s.register("agg_priority", 0) == 1                                       # no downgrade in ATP mode
    out = s.parse(s.send(s.fragment(1, fan_in=2, fragment_id=1), a))             # fragment 1 still completes
    assert len(out) == 2 and all(np.all(p.lanes == 2) for _, p in out)


def test_preemption_swaps_out_exactly_the_evicted_partial(arch: str) -> None:
    s = InaSwitch(arch, workers=4, pool_size=1, preemption=True)
    rng = np.random.default_rng(2)
    g0, g1 = random_lanes(rng, s.lanes), random_lanes(rng, s.lanes)
    assert s.send(s.fragment(0, fan_in=4, fragment_id=1, priority=10), g0) == []
    assert s.send(s.fragment(1, fan_in=4, fragment_id=1, priority=10), g1) == []
    g_new = random_lanes(rng, s.lanes)
    (port, pkt), = s.parse(s.send(s.fragment(2, fan_in=4, fragment_id=2, priority=20), g_new))
    assert port == PS_PORT and pkt.dst_ip == PS_IP
    assert Flags.PREEMPTED in pkt.header.flags
    assert pkt.header.key() == (1, 1, 3, 1)                                          # the evicted key
    assert pkt.header.bitmap == 0b11 and pkt.header.count == 2 and pkt.header.priority == 10
    assert np.array_equal(pkt.lanes.astype(np.int64), g0.astype(np.int64) + g1)
    assert s.register("agg_priority", 0) == 20
    # a lower-priority collision fails and halves the holder's priority (ESA downgrading)
    (port, pkt), = s.parse(s.send(s.fragment(3, fan_in=4, fragment_id=3, priority=5), g0))
    assert Flags.COLLISION in pkt.header.flags and port == PS_PORT
    assert s.register("agg_priority", 0) == 10
    # the new owner (fragment 2) keeps aggregating correctly
    for w in (0, 1):
        assert s.send(s.fragment(w, fan_in=4, fragment_id=2, priority=20), g0) == []
    out = s.parse(s.send(s.fragment(3, fan_in=4, fragment_id=2, priority=20), g1))
    assert len(out) == 4
    assert np.array_equal(out[0][1].lanes.astype(np.int64), g_new.astype(np.int64) + 2 * g0.astype(np.int64) + g1)


def test_preemption_needs_strictly_higher_priority(arch: str) -> None:
    s = InaSwitch(arch, workers=2, pool_size=1, preemption=True)
    assert s.send(s.fragment(0, fan_in=2, fragment_id=1, priority=8), np.ones(s.lanes, np.int32)) == []
    (_, pkt), = s.parse(s.send(s.fragment(0, fan_in=2, fragment_id=2, priority=8), np.ones(s.lanes, np.int32)))
    assert Flags.COLLISION in pkt.header.flags
    assert s.register("agg_priority", 0) == 4


def test_reminder_drains_partial_and_frees_aggregator(arch: str) -> None:
    s = InaSwitch(arch, workers=3, pool_size=1)
    g = np.full(s.lanes, 11, np.int32)
    s.send(s.fragment(0, fan_in=3, fragment_id=4), g)
    s.send(s.fragment(2, fan_in=3, fragment_id=4), g)
    # a reminder for a key the switch does not hold passes on unchanged
    stray = s.fragment(0, fan_in=3, fragment_id=5, flags=Flags.REMINDER).with_(count=0, bitmap=0)
    (_, pkt), = s.parse(s.send(stray, np.zeros(s.lanes, np.int32), src_ip=PS_IP, in_port=PS_PORT))
    assert pkt.header == stray
    reminder = s.fragment(0, fan_in=3, fragment_id=4, flags=Flags.REMINDER).with_(count=0, bitmap=0)
    (port, pkt), = s.parse(s.send(reminder, np.zeros(s.lanes, np.int32), src_ip=PS_IP, in_port=PS_PORT))
    assert port == PS_PORT
    assert Flags.REMINDER in pkt.header.flags and Flags.PREEMPTED in pkt.header.flags
    assert pkt.header.bitmap == 0b101 and pkt.header.count == 2 and np.all(pkt.lanes == 22)
    # the aggregator is free: a new key claims it without collision
    assert s.send(s.fragment(1, fan_in=3, fragment_id=9), g) == []


def test_retransmission_is_not_counted_twice(arch: str) -> None:
    s = InaSwitch(arch, workers=2, result="ps")
    g = np.full(s.lanes, 3, np.int32)
    assert s.send(s.fragment(0, fan_in=2), g) == []
    assert s.send(s.fragment(0, fan_in=2), g) == []                     # duplicate: dropped, not added
    (_, pkt), = s.parse(s.send(s.fragment(1, fan_in=2), g))
    assert np.all(pkt.lanes == 6) and pkt.header.count == 2


def test_overlapping_duplicate_leaves_the_aggregator_unchanged(arch: str) -> None:
    """A partial {0, 1} meeting an aggregator that holds {0} is a duplicate: dropped, and it
    must not mark worker 1 as aggregated (else worker 1's own first copy would be dropped and
    the sum would lack it)."""
    s = InaSwitch(arch, workers=4)
    s.send(s.fragment(0, fan_in=4), np.full(s.lanes, 1, np.int32))
    i = next(i for i in range(64) if s.register("agg_bitmap", i))
    overlap = s.fragment(1, fan_in=4).with_(bitmap=0b0011, count=2, worker_id=WORKER_AGGREGATE)
    assert s.send(overlap, np.full(s.lanes, 500, np.int32)) == []
    assert s.register("agg_bitmap", i) == 0b0001
    out = []
    for w in (1, 2, 3):
        out += s.parse(s.send(s.fragment(w, fan_in=4), np.full(s.lanes, 10 * w, np.int32)))
    assert len(out) == 4 and all(p.header.bitmap == 0b1111 and np.all(p.lanes == 61) for _, p in out)


def test_resend_goes_to_ps_unaggregated(arch: str) -> None:
    s = InaSwitch(arch, workers=2)
    h = s.fragment(0, fan_in=2, flags=Flags.RESEND)
    (port, pkt), = s.parse(s.send(h, np.full(s.lanes, 4, np.int32)))
    assert port == PS_PORT and pkt.header == h


@pytest.mark.parametrize("where", ["first", "last"])   # TNA: a low lane (egress tests it), a high one (ingress)
@pytest.mark.parametrize("sign", [1, -1])
def test_overflow_saturates_and_is_flagged(arch: str, where: str, sign: int) -> None:
    s = InaSwitch(arch, workers=2, result="ps")
    lane = 0 if where == "first" else s.lanes - 1
    big = np.full(s.lanes, sign * (INT32_MAX - 10), np.int32)
    small = np.full(s.lanes, sign * 3, np.int32)
    small[lane] = sign * 100
    s.send(s.fragment(0, fan_in=2), big)
    (_, pkt), = s.parse(s.send(s.fragment(1, fan_in=2), small))
    assert Flags.OVERFLOW in pkt.header.flags
    bound = INT32_MAX if sign > 0 else -INT32_MAX - 1
    others = [k for k in range(s.lanes) if k != lane]
    assert pkt.lanes[lane] == bound and (pkt.lanes[others] == sign * (INT32_MAX - 7)).all()


def test_two_jobs_never_disturb_each_other(arch: str) -> None:
    s = InaSwitch(arch, workers=2, job_id=1, pool_size=64)
    s.add_job(2, preemption=False, workers=2)
    rng = np.random.default_rng(3)
    g = {(j, w): random_lanes(rng, s.lanes) for j in (1, 2) for w in (0, 1)}
    # same sub-model and fragment ids in both jobs, interleaved
    s.send(s.fragment(0, fan_in=2, job_id=1), g[1, 0])
    s.send(s.fragment(0, fan_in=2, job_id=2), g[2, 0])
    out2 = s.parse(s.send(s.fragment(1, fan_in=2, job_id=2), g[2, 1]))
    out1 = s.parse(s.send(s.fragment(1, fan_in=2, job_id=1), g[1, 1]))
    for job, out in ((1, out1), (2, out2)):
        assert len(out) == 2
        for _, pkt in out:
            assert pkt.header.job_id == job
            assert np.array_equal(pkt.lanes.astype(np.int64), g[job, 0].astype(np.int64) + g[job, 1])
    # a job the controller did not configure is never aggregated
    h = s.fragment(0, fan_in=2, job_id=3)
    (port, pkt), = s.parse(s.send(h, g[1, 0]))
    assert port == PS_PORT and pkt.header == h


def test_multi_pipe_pools_are_separate(arch: str) -> None:
    s = InaSwitch(arch, workers=4, result="ps", pool_size=8)
    for port, pipe in ((1, 0), (2, 0), (3, 1), (4, 1)):
        s.t.set_port_pipe(port, pipe)
    s.t.add_node(1, pool_base=8, pool_size=8, pipe=1)
    one = np.ones(s.lanes, np.int32)
    # workers 0,1 enter pipe 0 and 2,3 pipe 1; the same key never mixes across pipes
    assert s.send(s.fragment(0, fan_in=2), one) == []
    assert s.send(s.fragment(2, fan_in=2), one) == []
    (_, p1), = s.parse(s.send(s.fragment(1, fan_in=2), one))
    (_, p2), = s.parse(s.send(s.fragment(3, fan_in=2), one))
    assert p1.header.bitmap == 0b0011 and p2.header.bitmap == 0b1100
    assert np.all(p1.lanes == 2) and np.all(p2.lanes == 2)


def test_single_contribution_completes_without_memory(arch: str) -> None:
    s = InaSwitch(arch, workers=1, result="ps", pool_size=1)
    (_, pkt), = s.parse(s.send(s.fragment(0, fan_in=1), np.full(s.lanes, 7, np.int32)))
    assert Flags.RESULT in pkt.header.flags and np.all(pkt.lanes == 7)
    assert s.register("agg_priority", 0) == 0


def test_ecmp_spreads_flows_and_keeps_each_flow_on_one_path(arch: str) -> None:
    s = InaSwitch(arch, workers=1)
    s.t.add_ecmp_route("10.9.0.0", 16, group=3, members=[(20, 0x0A), (21, 0x0B)])
    ports = {}
    for sport in range(40):
        h = s.fragment(0, fan_in=2, node_id=9)          # not for this switch: plain forwarding
        frame = build_frame(h, np.zeros(s.lanes, np.int32), src_ip="10.0.0.1", dst_ip="10.9.1.1",
                            src_port=40000 + sport)
        (port, _), = s.sw.process(1, frame)
        ports[sport] = port
        assert s.sw.process(1, frame)[0][0] == port      # a flow stays on its path
    assert set(ports.values()) == {20, 21}


def test_explicit_route_pins_a_workers_path(arch: str) -> None:
    s = InaSwitch(arch, workers=2)
    s.t.add_route(1, port=30, worker_id=1, node_id=5)   # job 1, worker 1, towards node 5
    h0, h1 = s.fragment(0, fan_in=2, node_id=5), s.fragment(1, fan_in=2, node_id=5)
    (p0, _), = s.send(h0, np.zeros(s.lanes, np.int32))
    (p1, _), = s.send(h1, np.zeros(s.lanes, np.int32))
    assert p0 == PS_PORT and p1 == 30


def test_reminder_for_a_held_aggregator_frees_it_without_a_bogus_drain(arch: str) -> None:
    s = InaSwitch(arch, workers=2, pool_size=1, result="ps")
    s.t.add_job(2, hold_until_result=True)
    s.t.level_to_ps(2, 1)
    one = np.ones(s.lanes, np.int32)
    s.send(s.fragment(0, fan_in=2, job_id=2), one)
    (_, res), = s.parse(s.send(s.fragment(1, fan_in=2, job_id=2), one))
    assert Flags.RESULT in res.header.flags                         # complete; aggregator now held
    reminder = s.fragment(0, fan_in=2, job_id=2, flags=Flags.REMINDER).with_(count=0, bitmap=0)
    (port, pkt), = s.parse(s.send(reminder, np.zeros(s.lanes, np.int32), src_ip=PS_IP, in_port=PS_PORT))
    assert Flags.PREEMPTED not in pkt.header.flags and pkt.header.bitmap == 0
    assert s.send(s.fragment(0, fan_in=2, job_id=2, fragment_id=8), one) == []   # freed: claimable
