"""The sans-IO cores alone, frames built by hand: windows, timers, queries, and the PS's
exactness cases (a RESEND racing a switch partial that holds the same worker)."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

K = 8
PS_IP = "10.0.9.1"
WIP = {w: f"10.0.0.{w + 1}" for w in range(4)}
VIA = {1: "10.0.0.1", 2: "10.0.0.3"}


def _worker(w: int = 1, window: int = 3, n_frags: int = 10) -> Worker:
    wk = Worker(5, w, PS_IP, WIP[w], [FragmentLabel(2, 4, 77)], lanes=K, window=window,
                rto=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
    wk.push(np.arange(K * n_frags, dtype=float) / 4.0)
    return wk


def _result(job: int, frag: int, values: np.ndarray, sub: int = 0, dst: str = WIP[1], node: int = 2,
            rnd: int = 0) -> bytes:
    """A RESULT of round ``rnd`` from the switch of node ``node`` (0: from the PS, as the answer to a RESEND)."""
    h = InaHeader(job, node, sub, frag, 255, 4, 4, 0, 0b1111, Flags.RESULT, rnd)
    return build_frame(h, values.astype(np.int32), src_ip=PS_IP, dst_ip=dst)


def test_worker_window_labels_and_sliding() -> None:
    wk = _worker()
    out = [parse_frame(f, K) for f in wk.start(0.0)]
    assert [p.header.fragment_id for p in out] == [0, 1, 2]                 # window of 3
    h = out[0].header
    assert (h.job_id, h.node_id, h.fan_in, h.priority, h.bitmap, h.flags) == (5, 2, 4, 77, 0b10, Flags(0))
    assert out[1].dst_ip == PS_IP and out[1].src_ip == WIP[1]
    assert np.array_equal(out[1].lanes, (np.arange(K, 2 * K) / 4.0 * 65536).astype(np.int32))
    # selective repeat: any result frees a slot, the base need not move; fragment 1's result
    # overtaking 0's (one path) fast-retransmits 0, which then holds no slot while recovered
    nxt = [parse_frame(f, K).header for f in wk.on_frame(_result(5, 1, np.full(K, 7)), 0.001)]
    assert [(h.fragment_id, h.flags) for h in nxt] == [(0, Flags.RETRY), (3, Flags(0)), (4, Flags(0))]
    assert nxt[0].node_id == 2 and nxt[0].fan_in == 4 and nxt[0].bitmap == 0b10     # a retry, to its node
    # 2, 3, 4 fill the window (2 has waited less than 1.5 path srtts: not stale)
    assert wk.on_frame(_result(5, 0, np.full(K, 3)), 0.0012) == []
    nxt = [parse_frame(f, K).header.fragment_id for f in wk.on_frame(_result(5, 2, np.full(K, 5)), 0.003)]
    assert nxt == [5]
    assert np.array_equal(wk.result_fixed()[:2 * K], np.r_[np.full(K, 3), np.full(K, 7)])


def _new(frames: list[bytes]) -> list[int]:
    """Fragment ids of the first copies among ``frames`` (not fast retransmits)."""
    return [h.fragment_id for f in frames if (h := parse_frame(f, K).header).flags == Flags(0)]


def test_worker_reach_bounds_how_far_past_a_missing_result_it_sends() -> None:
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=2, reach=3)
    wk.push(np.zeros(K * 10))
    assert [parse_frame(f, K).header.fragment_id for f in wk.start(0.0)] == [0, 1]
    assert _new(wk.on_frame(_result(5, 1, np.zeros(K)), 0.001)) == [2]
    assert _new(wk.on_frame(_result(5, 2, np.zeros(K)), 0.002)) == []        # fragment 3 is past base 0 + reach 3
    assert _new(wk.on_frame(_result(5, 0, np.zeros(K)), 0.003)) == [3, 4]


@pytest.mark.parametrize("recovery,sent", [(None, [4, 5]), (1, [4])])
def test_worker_retransmitted_fragments_beyond_the_recovery_bound_hold_slots(recovery: int | None,
                                                                            sent: list[int]) -> None:
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=2, recovery=recovery)
    wk.push(np.zeros(K * 10))
    assert _new(wk.start(0.0)) == [0, 1]
    assert _new(wk.on_frame(_result(5, 1, np.zeros(K)), 0.001)) == [2, 3]    # 0 fast-retransmitted
    # 2 fast-retransmitted as well: two in recovery; the bound 1 lets one of them beside the window
    assert _new(wk.on_frame(_result(5, 3, np.zeros(K)), 0.002)) == sent
    assert wk._recovering == 2


def test_worker_duplicate_and_foreign_results_are_harmless() -> None:
    wk = _worker(n_frags=2)
    wk.start(0.0)
    r0 = _result(5, 0, np.full(K, 3))
    wk.on_frame(r0, 0.001)
    before = wk.result_fixed()
    assert wk.on_frame(r0, 0.002) == [] and wk.stats.duplicate_results == 1
    assert wk.on_frame(_result(6, 1, np.full(K, 9)), 0.003) == []            # another job
    assert wk.on_frame(_result(5, 9, np.full(K, 9)), 0.003) == []            # unknown fragment
    assert np.array_equal(wk.result_fixed(), before)
    wk.on_frame(_result(5, 1, np.full(K, -2)), 0.004)
    assert wk.done() and wk.next_deadline() is None
    assert wk.on_frame(_result(5, 1, np.full(K, 99)), 0.005) == []            # after done: ignored
    assert np.allclose(wk.result(), np.r_[np.full(K, 3), np.full(K, -2)] / 65536)


def test_worker_timeout_probes_once_per_firing_then_retries_a_round_trip_later() -> None:
    """A whole window expiring together is what a stalled peer looks like: one probe per
    timer firing (the oldest), the others re-armed for another RTO. A resent fragment is
    tried again a round trip later (no sample yet: the RTO floor), then doubling."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05), node_tries=0)
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    assert wk.next_deadline() == 0.01
    assert wk.on_timer(0.005) == []
    frames = [parse_frame(f, K) for f in wk.on_timer(0.01)]
    assert [p.header.fragment_id for p in frames] == [0]
    assert all(p.header.flags == Flags.RESEND and p.header.node_id == 0 and p.dst_ip == PS_IP for p in frames)
    assert wk.next_deadline() == 0.01 + 0.004                                # fragment 0's retry
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.014)] == [0]
    assert wk.next_deadline() == pytest.approx(0.02)                         # fragment 1, re-armed at 0.01
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.02)] == [1]   # its own probe
    assert wk.next_deadline() == pytest.approx(0.014 + 0.008)                # fragment 0: doubled
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.0221)] == [0]
    assert wk.stats.resent == 4


def test_resend_round_trips_set_the_retry_wait() -> None:
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05))
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    wk.on_timer(0.01)                                         # fragment 0 resent
    wk.on_frame(_result(5, 0, np.zeros(K), node=0), 0.0105)           # answered 0.5 ms later
    assert wk.resend_rtt.srtt == pytest.approx(0.0005)
    assert wk.retry_wait() == pytest.approx(0.0005 + 4 * 0.00025)


def test_second_try_round_trips_set_the_wait_before_a_third() -> None:
    """A second try finds the PS holding the worker's copy: its answer is a round trip away, so
    the third try waits the measured second-try -> result time, not the doubled first wait."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05))
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.01)] == [0]    # first try
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.014)] == [0]   # second
    wk.on_frame(_result(5, 0, np.zeros(K), node=0), 0.0145)             # answered 0.5 ms after it
    assert wk.retry_rtt.srtt == pytest.approx(0.0005) and wk.retry_rtt.rto == pytest.approx(0.0015)
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.02)] == [1]    # fragment 1
    assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(0.024)] == [1]   # its second
    assert wk.next_deadline() == pytest.approx(0.024 + 0.0015)  # not 0.024 + 0.008


def test_further_tries_double_up_to_two_measured_answer_times_not_four_rtos() -> None:
    """A drop is random: an unlucky fragment tries again about when an answer would have come
    (twice the measured resend -> result time at most), not after up to 4 RTOs."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05))
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    wk.on_timer(0.01)                                         # fragment 0 resent
    wk.on_frame(_result(5, 0, np.zeros(K), node=0), 0.014)            # answered: resend_rtt.rto 12 ms
    assert wk.resend_rtt.rto == pytest.approx(0.012)
    waits = []
    for _ in range(4):                                        # fragment 1: tries 1 to 4
        now = wk.next_deadline()
        assert [parse_frame(f, K).header.fragment_id for f in wk.on_timer(now)] == [1]
        waits.append(wk.next_deadline() - now)
    # the retry wait (12 ms), doubled to 2 x 12 ms, and no further: not on to 40 ms (4 RTOs)
    assert waits == pytest.approx([0.012, 0.024, 0.024, 0.024])


def test_worker_a_switch_result_of_a_resent_fragment_samples_its_path() -> None:
    """A switch's result can only answer the first copy (a RESEND goes to the PS, whose results
    carry node 0), so its round trip is exact despite the resend. Sampled while no first copy of
    that sub-model was answered unretransmitted since it was sent: else RACK keeps a path srtt
    learnt too short for ever (every copy resent before its result, no Karn sample grows it)."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4), FragmentLabel(3, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05), node_tries=0)
    wk.push(np.zeros(6 * K), [3 * K, 3 * K])
    wk._path_srtt, wk._path_rttvar = [0.0005, 0.002], [0.0, 0.0]      # A's learnt too short
    wk.start(0.0)                                             # A0, B0, A1 at t=0
    wk.on_frame(_result(5, 0, np.full(K, 1), sub=1), 0.002)   # B0: B1 at 0.002
    wk.on_frame(_result(5, 1, np.full(K, 2), sub=1), 0.003)   # B1, sent later: evidence against A0, A1
    resent = [h for f in wk.on_timer(0.003) for h in [parse_frame(f, K).header] if h.flags == Flags.RESEND]
    # RACK: 1 ms; A2 went out when B0's result found A0 and A1 past A's srtt (presumed lost)
    assert [(h.submodel_id, h.fragment_id) for h in resent] == [(0, 0), (0, 1), (0, 2)]
    wk.on_frame(_result(5, 0, np.zeros(K)), 0.004)            # A0 from its switch: 4 ms, exact
    assert wk._path_srtt[0] == pytest.approx(0.875 * 0.0005 + 0.125 * 0.004)
    assert wk._path_rttvar[0] == pytest.approx(0.25 * 0.0035)
    srtt = wk._path_srtt[0]
    wk.on_frame(_result(5, 1, np.zeros(K), node=0), 0.005)    # A1 from the PS: may answer the resend
    assert wk._path_srtt[0] == srtt


def test_worker_resends_every_expired_fragment_a_later_result_speaks_against() -> None:
    """RACK-style evidence: a fragment sent later already has its result, so the expired
    earlier ones were lost (or their results were): all of them go at once."""
    # two sub-models (two paths): B's results are no fast-retransmit evidence against A's
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4), FragmentLabel(3, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
    wk.push(np.zeros(4 * K), [2 * K, 2 * K])
    wk.start(0.0)                                             # A0, B0, A1 at t=0
    wk.on_frame(_result(5, 0, np.full(K, 1), sub=1), 0.002)   # B0: frees a slot, B1 at 0.002
    wk.on_frame(_result(5, 1, np.full(K, 2), sub=1), 0.003)   # B1 was sent after A0 and A1: evidence
    assert list(wk._pending) == [0, 2] and wk.stats.fast_resent == 0
    frames = [(h.submodel_id, h.fragment_id) for f in wk.on_timer(0.01) for h in [parse_frame(f, K).header]]
    assert frames == [(0, 0), (0, 1)]                         # both, not one probe
    assert wk.stats.resent == 2


def test_worker_tail_loss_probe_once_the_last_first_copy_is_out() -> None:
    """No fragment follows the round's last ones, so no later result can show one of them lost:
    once the last first copy is out (after a result of the round), each still awaiting its
    result gets its RACK deadline (2 x its path's srtt + 4 deviations) instead of an RTO; one
    probe per firing, as ever."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=2,
                rto=RtoEstimator(initial=0.01, minimum=0.008, maximum=0.05))
    wk.push(np.zeros(3 * K))
    wk.start(0.0)                                                # fragments 0 and 1
    out = wk.on_frame(_result(5, 0, np.zeros(K)), 0.001)         # path srtt 1 ms, rttvar 0.5 ms
    assert [parse_frame(f, K).header.fragment_id for f in out] == [2]        # the last first copy
    assert wk._pending == {1: pytest.approx(0.004), 2: pytest.approx(0.005)}  # not 0.01 and 0.009
    frames = [parse_frame(f, K).header for f in wk.on_timer(0.006)]
    assert [(h.fragment_id, h.flags) for h in frames] == [(1, Flags.RETRY)]   # one probe per firing
    assert wk._pending[2] == pytest.approx(0.006 + 0.008)                      # re-armed for an RTO


def test_worker_round_sent_whole_before_any_result_gets_no_tail_probe() -> None:
    """A round whose last first copy leaves before any of its results (it fits the window)
    keeps an RTO: nothing shows yet that the peers are sending."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=4,
                rto=RtoEstimator(initial=0.01, minimum=0.008, maximum=0.05))
    wk.push(np.zeros(2 * K))
    assert len(wk.start(0.0)) == 2                               # the whole round at once
    wk.on_frame(_result(5, 0, np.zeros(K)), 0.001)
    assert wk._pending == {1: pytest.approx(0.008)}              # the measured RTO, not a RACK window


def test_ps_recovers_again_an_answer_round_trip_later() -> None:
    """After a recovery the PS waits one answer round trip — measured from the replies only a
    recovery gets, here a worker's result copy 1 ms after the queries — then doubles."""
    ps = _ps()
    ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.0)
    ps.on_timer(0.001 / 4)                                       # the grace: a query to 0
    copy = InaHeader(5, 0, 0, 0, 1, 4, 1, 0, 0b0010, Flags.RESULT | Flags.RESEND)
    ps.on_frame(build_frame(copy, TOTAL.astype(np.int32), src_ip=WIP[1], dst_ip=PS_IP), 0.00125)
    assert ps.answer_rtt.srtt == pytest.approx(0.001) and ps.answer_rtt.rto == pytest.approx(0.003)
    ps.on_frame(_contrib(0b0101, Flags.PREEMPTED, frag=1), 0.002)  # another fragment's partial
    assert ps.next_deadline() == pytest.approx(0.012)             # its timeout
    ps.on_timer(0.012)
    assert ps.next_deadline() == pytest.approx(0.012 + 0.003)     # an answer round trip
    ps.on_timer(0.015)
    assert ps.next_deadline() == pytest.approx(0.015 + 0.006)     # doubled (at most 4 of them)


def test_ps_a_reply_long_after_a_further_recovery_still_measures_the_answer_round_trip() -> None:
    """Replies slower than the answer wait (queued behind the PS's own recoveries) each come
    after a further recovery, where Karn's rule would drop them and the wait never grow. One
    that comes more than two answer RTOs after the latest recovery is sampled: the round trip
    is at least that long. One within them is not (it may answer the latest recovery)."""
    ps = _ps()
    ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.0)
    for _ in range(3):                                            # nothing answers: recovered 3 times
        ps.on_timer(ps.next_deadline())
    rto = ps.answer_rtt.rto
    assert ps.answer_rtt.srtt is None and rto == pytest.approx(0.001 / 4)
    last = ps._open[(5, 0, 0, 0)].recovered_at
    copy = InaHeader(5, 0, 0, 0, 1, 4, 1, 0, 0b0010, Flags.RESULT | Flags.RESEND)
    ps.on_frame(build_frame(copy, TOTAL.astype(np.int32), src_ip=WIP[1], dst_ip=PS_IP), last + 3 * rto)
    assert ps.answer_rtt.srtt == pytest.approx(3 * rto)

    ps.on_frame(_contrib(0b0100, Flags.RESEND, frag=1), 1.0)
    for _ in range(3):
        ps.on_timer(ps.next_deadline())
    srtt, rto = ps.answer_rtt.srtt, ps.answer_rtt.rto
    last = ps._open[(5, 0, 0, 1)].recovered_at
    copy = copy.with_(fragment_id=1)
    ps.on_frame(build_frame(copy, TOTAL.astype(np.int32), src_ip=WIP[1], dst_ip=PS_IP), last + 1.5 * rto)
    assert ps.answer_rtt.srtt == srtt                             # ambiguous: not measured


def test_ps_grace_after_a_first_resend_is_at_most_an_answer_round_trip() -> None:
    """The others' resends are awaited at most as long as a recovery would take to answer:
    the spread follows the workers' timers, and those follow the PS (an uncapped grace grew
    to seconds in the emulation)."""
    ps = _ps()
    ps.resend_spread.sample(0.04)                                 # resends spread: RTO 0.05 (the cap)
    ps.answer_rtt.sample(0.002)                                   # a query is answered in ~2 ms
    ps.on_frame(_contrib(0b0100, Flags.RESEND), 1.0)
    assert ps.next_deadline() == pytest.approx(1.0 + ps.answer_rtt.rto)


def test_backoff_is_capped_by_rtos_and_by_maximum() -> None:
    rto = RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05, max_backoff=10.0)
    assert rto.backoff(0.04) == 0.05                                         # maximum
    rto = RtoEstimator(initial=0.01, minimum=0.001, maximum=1.0)
    assert rto.backoff(0.02) == 0.04 and rto.backoff(0.04) == 0.04           # 4 x rto
    assert rto.backoff(0.0001) == 0.001                                      # minimum


def test_worker_answers_only_its_own_query() -> None:
    wk = _worker(n_frags=2)
    wk.start(0.0)
    q = InaHeader(5, 0, 0, 1, 1, 0, 0, 0, 0, Flags.REMINDER)
    (f,) = wk.on_frame(build_frame(q, np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.001)
    p = parse_frame(f, K)
    assert p.header.flags == Flags.RESEND and p.header.fragment_id == 1 and p.header.bitmap == 0b10
    other = q.with_(worker_id=2)
    assert wk.on_frame(build_frame(other, np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.002) == []
    stray = InaHeader(5, 2, 0, 1, 255, 0, 0, 0, 0, Flags.REMINDER)           # a reminder no switch owned
    assert wk.on_frame(build_frame(stray, np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.003) == []


# ---------------------------------------------------------------------- the PS
V = {w: np.arange(K, dtype=np.int64) * (w + 1) + 1000 * w for w in range(4)}
TOTAL = sum(V.values())


def _ps(**jobs_extra: JobConfig) -> ParameterServer:
    jobs = {5: JobConfig({w: (WIP[w], 0) for w in range(4)}, VIA)}
    jobs.update({int(k[1:]): v for k, v in jobs_extra.items()})
    return ParameterServer(PS_IP, jobs, lanes=K, timeout=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))


def _contrib(bitmap: int, flags: Flags = Flags(0), job: int = 5, frag: int = 0, node: int = 2) -> bytes:
    ws = [w for w in range(4) if bitmap >> w & 1]
    lanes = sum((V[w] for w in ws), np.zeros(K, np.int64)).astype(np.int32)
    worker = ws[0] if len(ws) == 1 and not flags & Flags.PREEMPTED else 255
    h = InaHeader(job, 0 if flags & Flags.RESEND else node, 0, frag, worker, 4, len(ws), 0, bitmap, flags)
    return build_frame(h, lanes, src_ip="10.0.0.9", dst_ip=PS_IP)


def _results(frames: list[bytes]) -> dict[str, np.ndarray]:
    got = {}
    for f in frames:
        p = parse_frame(f, K)
        if Flags.RESULT in p.header.flags:
            assert p.header.bitmap == 0b1111 and p.header.worker_id == 255
            got[p.dst_ip] = p.lanes.astype(np.int64)
    return got


def test_ps_resend_racing_a_switch_partial_counts_each_worker_once() -> None:
    ps = _ps()
    # w0 timed out and resent while the switch still held {0, 1}; the others' resends do not
    # follow within the grace, so the PS reminds the nodes and queries the other workers then
    # (ESA §5.3 cases 1 and 2)
    assert ps.on_frame(_contrib(0b0001, Flags.RESEND), 0.0) == []
    assert ps.next_deadline() == 0.001 / 4                           # the grace: no sample yet
    out = [parse_frame(f, K).header for f in ps.on_timer(0.001 / 4)]
    assert {h.node_id for h in out if h.worker_id == 255} == {1, 2}
    assert [h.worker_id for h in out if h.node_id == 0] == [1]       # one silent worker (case 2?)
    out = [parse_frame(f, K).header for f in ps.on_timer(ps.next_deadline())]
    assert sorted(h.worker_id for h in out if h.node_id == 0) == [1, 2]        # then twice as many
    out = [parse_frame(f, K).header for f in ps.on_timer(ps.next_deadline())]
    assert sorted(h.worker_id for h in out if h.node_id == 0) == [1, 2, 3]     # up to all of them
    assert ps.on_frame(_contrib(0b0011, Flags.PREEMPTED | Flags.REMINDER), 0.001) == []   # the drain
    assert ps.on_frame(_contrib(0b0100, Flags.COLLISION), 0.002) == []
    res = _results(ps.on_frame(_contrib(0b1000), 0.003))
    assert sorted(res) == sorted(WIP.values())
    assert all(np.array_equal(r, TOTAL) for r in res.values())


def test_ps_partial_then_resend_of_a_worker_inside_it() -> None:
    ps = _ps()
    ps.on_frame(_contrib(0b0011, Flags.PREEMPTED), 0.0)
    ps.on_frame(_contrib(0b0010, Flags.RESEND), 0.001)        # w1 already inside the partial
    ps.on_frame(_contrib(0b0010, Flags.RESEND), 0.001)        # twice
    ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.002)
    res = _results(ps.on_frame(_contrib(0b1000, Flags.RESEND), 0.003))
    assert len(res) == 4 and all(np.array_equal(r, TOTAL) for r in res.values())


def test_ps_completed_by_resends_reminds_once_and_ignores_late_drains() -> None:
    ps = _ps()
    out = []
    for w in range(4):
        out += ps.on_frame(_contrib(1 << w, Flags.RESEND), 0.001 * w)
    res = _results(out)
    assert len(res) == 4 and all(np.array_equal(r, TOTAL) for r in res.values())
    reminders = [parse_frame(f, K) for f in out if parse_frame(f, K).header.flags == Flags.REMINDER]
    # every worker resent within the grace: no query, only the 2 nodes reminded to clean up
    assert sum(p.header.node_id != 0 for p in reminders) == 2
    assert sum(p.header.node_id == 0 for p in reminders) == 0
    assert ps.resend_spread.srtt == pytest.approx(0.003)      # first resend -> complete, unasked
    assert ps.on_frame(_contrib(0b0011, Flags.PREEMPTED | Flags.REMINDER), 0.01) == []
    assert ps.stats.received["late"] == 1
    assert np.array_equal(ps.result(5, 0, 0), TOTAL)
    # a worker that lost the result asks again: only it is served
    res = _results(ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.02))
    assert list(res) == [WIP[2]] and np.array_equal(res[WIP[2]], TOTAL)
    assert ps.done() and ps.next_deadline() is None


def test_ps_ignores_drained_held_aggregators_and_overlaps() -> None:
    ps = _ps()
    held = InaHeader(5, 1, 0, 0, 255, 2, 2, 255, 0xFFFFFFFF, Flags.PREEMPTED | Flags.REMINDER)
    assert ps.on_frame(build_frame(held, np.zeros(K, np.int32), src_ip="10.0.0.1", dst_ip=PS_IP), 0.0) == []
    ps.on_frame(_contrib(0b0011, Flags.PREEMPTED), 0.0)
    ps.on_frame(_contrib(0b0110, Flags.COLLISION), 0.0)      # overlaps w1: cannot be split, dropped
    assert ps.stats.received["no_contribution"] == 1 and ps.stats.received["overlap"] == 1
    ps.on_frame(_contrib(0b0100), 0.0)
    res = _results(ps.on_frame(_contrib(0b1000), 0.0))
    assert len(res) == 4 and all(np.array_equal(r, TOTAL) for r in res.values())


def test_ps_timeouts_remind_then_query_missing_workers() -> None:
    ps = _ps()
    ps.on_frame(_contrib(0b0101, Flags.PREEMPTED), 0.0)
    assert ps.next_deadline() == 0.01
    first = [parse_frame(f, K) for f in ps.on_timer(0.01)]
    assert [(p.header.node_id, p.dst_ip) for p in first if p.header.node_id] == [(1, VIA[1]), (2, VIA[2])]
    assert all(p.header.flags == Flags.REMINDER and p.header.bitmap == 0 for p in first)
    queries = [(p.dst_ip, p.header.worker_id) for p in first if p.header.node_id == 0]
    assert queries == [(WIP[1], 1), (WIP[3], 3)]
    # again an answer round trip later (none measured yet: a quarter of the floor), then doubling
    assert ps.next_deadline() == pytest.approx(0.01 + 0.001 / 4)
    second = [parse_frame(f, K) for f in ps.on_timer(0.01025)]       # again, until complete
    assert len(second) == 4
    assert ps.next_deadline() == pytest.approx(0.01025 + 0.0005)
    ps.on_frame(_contrib(0b0010, Flags.RESEND), 0.031)
    assert _results(ps.on_frame(_contrib(0b1000, Flags.RESEND), 0.032))
    assert ps.next_deadline() is None


def test_ps_does_not_answer_a_resend_that_crossed_the_result() -> None:
    """The quickest query answer bounds the round trip to the workers from below: a RESEND that
    arrives sooner after the result went out was sent before that result could have arrived (it
    crossed it), and is not answered; one arriving later is (its result was lost)."""
    ps = _ps()
    ps.on_frame(_contrib(0b0111, Flags.PREEMPTED), 0.0)
    queries = [parse_frame(f, K).header.worker_id for f in ps.on_timer(0.01)
               if parse_frame(f, K).header.node_id == 0]
    assert queries == [3] and ps.query_rtt.srtt is None
    assert set(_results(ps.on_frame(_contrib(0b1000, Flags.RESEND), 0.014))) == set(WIP.values())
    assert ps.query_rtt.srtt == pytest.approx(0.004)        # the query's answer: 4 ms
    assert ps.on_frame(_contrib(0b0010, Flags.RESEND), 0.017) == []     # 3 ms after: crossed
    assert ps.stats.received["crossed"] == 1 and ps.stats.results_resent == 0
    assert set(_results(ps.on_frame(_contrib(0b0010, Flags.RESEND), 0.019))) == {WIP[1]}    # 5 ms: lost
    assert ps.stats.results_resent == 1


def test_ps_reminds_only_nodes_that_can_hold_what_it_lacks() -> None:
    """`node_workers`: node 1 aggregates w0 and w1, node 2 w2 and w3 (ATP's ToRs). A recovery
    lacking only w3 reminds node 2 alone; one lacking w0 and w3 both; the clean-up after resend
    copies of w2 and w3 completed a fragment reminds node 2 alone, and after a recovery only the
    nodes it did not remind."""
    cfg = JobConfig({w: (WIP[w], 0) for w in range(4)}, VIA, node_workers={1: [0, 1], 2: [2, 3]})
    ps = _ps(j5=cfg)

    def reminded(frames: list[bytes]) -> list[int]:
        return sorted(h.node_id for h in (parse_frame(f, K).header for f in frames)
                      if h.flags & Flags.REMINDER and h.node_id)

    ps.on_frame(_contrib(0b0111, Flags.PREEMPTED), 0.0)
    out = ps.on_timer(ps.next_deadline())
    assert reminded(out) == [2]
    assert [parse_frame(f, K).header.worker_id for f in out if parse_frame(f, K).header.node_id == 0] == [3]
    ps.on_frame(_contrib(0b0110, Flags.PREEMPTED, frag=1), 0.0)
    assert reminded(ps.on_timer(ps.next_deadline())) == [1, 2]
    ps.on_frame(_contrib(0b0011, Flags.PREEMPTED, frag=2), 0.0)
    ps.on_frame(_contrib(0b0100, Flags.RESEND, frag=2), 0.0)
    out = ps.on_frame(_contrib(0b1000, Flags.RESEND, frag=2), 0.0)
    assert len(_results(out)) == 4 and reminded(out) == [2]
    # w0 resent before the recovery, which reminded node 2 (for w3) only; w3's answer completes
    # the fragment: the clean-up goes to node 1, where w0's first copy may still sit
    ps = _ps(j5=cfg)
    ps.on_frame(_contrib(0b0110, Flags.PREEMPTED, frag=3), 1.0)
    ps.on_frame(_contrib(0b0001, Flags.RESEND, frag=3), 1.0)
    out = ps.on_timer(ps.next_deadline())
    assert reminded(out) == [2] and [parse_frame(f, K).header.worker_id for f in out
                                     if parse_frame(f, K).header.node_id == 0] == [3]
    out = ps.on_frame(_contrib(0b1000, Flags.RESEND, frag=3), 1.1)
    assert len(_results(out)) == 4 and reminded(out) == [1]
    # without node_workers every node of the sub-model is reminded (test above: both)
    assert JobConfig({0: (WIP[0], 0)}, VIA).nodes_to_remind(0, 0b1) == [1, 2]


def test_ps_passes_on_a_result_copy_a_worker_answered_with() -> None:
    """ESA §5.3 case 2: w2 lost the switch's multicast result; after the grace the PS queries
    one of the silent workers (fewer resent than stayed silent, nothing came through a switch:
    the others most likely hold the result), which answers with it; the PS passes it on to the
    workers known to lack it (w2, which resent; a worker that lacks it too answers its query
    with a RESEND and gets it then)."""
    ps = _ps()
    assert ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.0) == []
    out = [parse_frame(f, K).header for f in ps.on_timer(0.001 / 4)]
    assert [h.worker_id for h in out if h.node_id == 0] == [0]             # fragment 0: the first of 0, 1, 3
    copy = InaHeader(5, 0, 0, 0, 1, 4, 1, 0, 0b0010, Flags.RESULT | Flags.RESEND)
    res = _results(ps.on_frame(build_frame(copy, TOTAL.astype(np.int32), src_ip=WIP[1], dst_ip=PS_IP), 0.011))
    assert sorted(res) == [WIP[2]] and all(np.array_equal(r, TOTAL) for r in res.values())
    assert ps.done() and ps.stats.received["result_copy"] == 1
    assert ps.on_frame(build_frame(copy.with_(worker_id=3, bitmap=0b1000), TOTAL.astype(np.int32),
                                   src_ip=WIP[3], dst_ip=PS_IP), 0.012) == []        # second copy: late
    assert ps.stats.received["late"] == 1


def test_worker_answers_a_query_with_its_result_once_it_has_it() -> None:
    wk = _worker(n_frags=2)
    wk.start(0.0)
    wk.on_frame(_result(5, 1, np.full(K, 7)), 0.001)
    q = InaHeader(5, 0, 0, 1, 1, 0, 0, 0, 0, Flags.REMINDER)
    (f,) = wk.on_frame(build_frame(q, np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.002)
    p = parse_frame(f, K)
    assert p.header.flags == Flags.RESULT | Flags.RESEND and np.all(p.lanes == 7) and p.dst_ip == PS_IP
    wk.on_frame(_result(5, 0, np.full(K, 3)), 0.003)
    wk.push(np.zeros(2 * K))                               # round 1: round 0 stays queryable
    (f,) = wk.on_frame(build_frame(q.with_(fragment_id=0), np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.004)
    p = parse_frame(f, K)
    assert p.header.round == 0 and Flags.RESULT in p.header.flags and np.all(p.lanes == 3)


def test_worker_a_later_result_from_the_ps_presumes_a_fragment_lost_without_resending_it() -> None:
    """The PS sees a lost first copy itself (its gap rule) and queries exactly the workers it
    lacks: a later result it sent (node_id 0) frees the earlier fragment's window slot and
    brings its timer forward to its RACK deadline (here the RTO, 6 ms, caps it), but does not
    resend it at once."""
    wk = _worker(window=3, n_frags=6)
    assert [parse_frame(f, K).header.fragment_id for f in wk.start(0.0)] == [0, 1, 2]
    h = InaHeader(5, 0, 0, 1, 255, 4, 4, 0, 0b1111, Flags.RESULT)             # fragment 1, from the PS
    out = [parse_frame(f, K).header for f in wk.on_frame(build_frame(h, np.full(K, 1, np.int32),
                                                                     src_ip=PS_IP, dst_ip=WIP[1]), 0.002)]
    assert not [h for h in out if h.flags == Flags.RETRY] and wk.stats.fast_resent == 0
    assert [h.fragment_id for h in out] == [3, 4]            # 1's slot and 0's: presumed lost
    assert wk._pending[0] == pytest.approx(0.006)          # RTO: 2 ms srtt + 4 x 1 ms rttvar
    # 0 resent, counted once (when presumed lost); the full window then presumes 2, 3 and 4
    # stale (6, 4 and 4 ms unanswered, over 1.5 path srtts; the recovery bound is 9), and 5, the
    # last, takes a slot
    out = [parse_frame(f, K).header for f in wk.on_timer(0.006)]
    assert [(h.fragment_id, h.flags) for h in out] == [(0, Flags.RETRY), (5, Flags(0))]
    assert wk._recovering == 4 and wk._later_results[2] == wk._later_results[3] == wk._later_results[4] == -1
    wk.on_frame(_result(5, 0, np.zeros(K)), 0.007)
    assert wk._recovering == 3


def test_worker_a_presumed_lost_fragment_answered_in_time_is_never_resent() -> None:
    wk = _worker(window=3, n_frags=6)
    wk.start(0.0)
    h = InaHeader(5, 0, 0, 1, 255, 4, 4, 0, 0b1111, Flags.RESULT)             # fragment 1, from the PS
    wk.on_frame(build_frame(h, np.full(K, 1, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.0005)
    assert wk._recovering == 1 and wk.next_deadline() == pytest.approx(0.0015)   # the RTO caps it
    wk.on_frame(_result(5, 0, np.zeros(K)), 0.0008)          # before its RACK deadline
    assert wk._recovering == 0 and wk.stats.resent == 0 and 0 not in wk._pending


def test_worker_fast_retransmits_after_one_later_result_of_the_same_submodel() -> None:
    wk = _worker(window=5, n_frags=6)
    wk.start(0.0)
    out = [parse_frame(f, K).header for f in wk.on_frame(_result(5, 1, np.full(K, 1)), 0.001)]   # 1 overtook 0
    resent = [h for h in out if h.flags == Flags.RETRY]
    assert [h.fragment_id for h in resent] == [0] and wk.stats.fast_resent == 1
    assert [h.fragment_id for h in out if h.flags == Flags(0)] == [5]            # and the freed slot's new one
    out = [parse_frame(f, K).header for f in wk.on_frame(_result(5, 2, np.full(K, 1)), 0.001)]
    assert not [h for h in out if h.flags == Flags.RETRY]                     # only once


def test_worker_fast_retransmit_ignores_results_of_other_submodels() -> None:
    """Sub-models aggregate at different nodes (different paths): one's results overtaking
    another's say nothing about a loss."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4), FragmentLabel(3, 4)], lanes=K, window=4)
    wk.push(np.zeros(4 * K), [2 * K, 2 * K])
    sent = [parse_frame(f, K).header for f in wk.start(0.0)]
    assert [(h.submodel_id, h.fragment_id) for h in sent] == [(0, 0), (1, 0), (0, 1), (1, 1)]   # interleaved
    assert wk.on_frame(_result(5, 0, np.zeros(K), sub=1), 0.001) == []         # sub-model 1 ahead of 0
    assert wk.on_frame(_result(5, 1, np.zeros(K), sub=1), 0.001) == [] and wk.stats.fast_resent == 0
    out = [parse_frame(f, K).header for f in wk.on_frame(_result(5, 1, np.zeros(K)), 0.002)]
    assert [(h.submodel_id, h.fragment_id, h.flags) for h in out] == [(0, 0, Flags.RETRY)]


def test_ps_keeps_jobs_apart_and_saturates() -> None:
    ps = _ps(j6=JobConfig({0: ("10.0.1.1", 0), 1: ("10.0.1.2", 0)}))
    big = InaHeader(6, 0, 0, 0, 0, 2, 1, 0, 0b01)
    ps.on_frame(build_frame(big, np.full(K, 2**31 - 10, np.int32), src_ip="10.0.1.1", dst_ip=PS_IP), 0.0)
    ps.on_frame(_contrib(0b0011, Flags.PREEMPTED, job=5), 0.0)     # same key in job 5
    out = ps.on_frame(build_frame(big.with_(worker_id=1, bitmap=0b10), np.full(K, 100, np.int32),
                                  src_ip="10.0.1.2", dst_ip=PS_IP), 0.0)
    pkts = [parse_frame(f, K) for f in out]
    assert sorted(p.dst_ip for p in pkts) == ["10.0.1.1", "10.0.1.2"]
    assert all(p.header.flags == Flags.RESULT | Flags.OVERFLOW and p.header.bitmap == 0b11 for p in pkts)
    assert all(np.all(p.lanes == 2**31 - 1) for p in pkts)
    assert ps.result(5, 0, 0) is None and ps.incomplete() == [(5, 0, 0, 0)]      # (job, round, sub, frag)


def test_udp_send_into_a_full_socket_buffer_waits_then_counts_a_drop_instead_of_raising() -> None:
    """A PS answering a burst can fill its non-blocking socket's send buffer; sendto then raised
    EAGAIN and killed the agent (seen in the emulation at 1 % loss, window 32). Now it waits for
    room and retries once; a datagram that still does not fit is dropped and counted, and the
    protocol repairs it like any loss. (A kernel buffer cannot be made full on demand, so the
    socket refuses the first sends itself.)"""
    import socket as socketlib

    from hostlib.drivers import UdpTransport
    from hostlib.protocol import InaHeader, build_frame

    class FullThenFree(socketlib.socket):
        refusals = 0

        def sendto(self, data, addr):  # type: ignore[override]
            if self.refusals:
                self.refusals -= 1
                raise BlockingIOError(11, "Resource temporarily unavailable")
            return super().sendto(data, addr)

    rx = socketlib.socket(socketlib.AF_INET, socketlib.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(2)
    tx = UdpTransport("127.0.0.1", port=0, lanes=64, dst_port=rx.getsockname()[1])
    tx.sock.close()
    tx.sock = FullThenFree(socketlib.AF_INET, socketlib.SOCK_DGRAM)
    tx.sock.setblocking(False)
    frame = build_frame(InaHeader(1, 0, 0, 7, 0, 1), [0] * 64, src_ip="127.0.0.1", dst_ip="127.0.0.1")
    try:
        tx.sock.refusals = 1                 # full once: the retry gets through
        tx.send(frame)
        assert InaHeader.unpack(rx.recv(2048)).fragment_id == 7 and tx.send_dropped == 0
        tx.sock.refusals = 2                 # still full after the wait: dropped, counted
        tx.send(frame)
        assert tx.send_dropped == 1
    finally:
        tx.close()
        rx.close()


def test_ps_completes_a_goat_async_round_from_its_participants_only() -> None:
    """GOAT-Async: round 0 is made of workers 1 and 3 (K_t = 2 of 4). The PS completes it
    from their partial, sends the result to them only (bitmap and count of the round), and
    queries only them when it times out; round 1, not listed, has every worker."""
    job = JobConfig({w: (WIP[w], 0) for w in range(4)}, VIA, participants={0: [1, 3]})
    assert job.round_mask(0) == 0b1010 and job.round_mask(1) == 0b1111
    ps = ParameterServer(PS_IP, {5: job}, lanes=K, timeout=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
    ps.on_frame(_contrib(0b0010, Flags.PREEMPTED), 0.0)
    queries = [parse_frame(f, K).header for f in ps.on_timer(0.01)]
    assert sorted(h.worker_id for h in queries if h.node_id == 0) == [3]
    out = [parse_frame(f, K) for f in ps.on_frame(_contrib(0b1000, Flags.PREEMPTED), 0.02)]
    assert sorted(p.dst_ip for p in out) == [WIP[1], WIP[3]]
    for p in out:
        assert p.header.bitmap == 0b1010 and p.header.count == 2 and Flags.RESULT in p.header.flags
        assert np.array_equal(p.lanes.astype(np.int64), V[1] + V[3])
    assert ps.done()


def test_ps_recovers_a_fragment_at_once_when_a_later_copy_of_a_missing_worker_arrives() -> None:
    """Each worker's first copies reach the PS in order: fragment 1 from w3 while fragment 0
    lacks w3 means w3's copy of 0 was lost. Fragment 0 is due at once (the next timer call
    queries w3) instead of after its timeout; copies of workers it has say nothing."""
    ps = _ps()
    for w in range(3):
        ps.on_frame(_contrib(1 << w, frag=0), 0.0)
    assert ps.next_deadline() == 0.01                                  # entry 0's own timeout
    ps.on_frame(_contrib(0b0001, frag=1), 0.002)                       # w0: fragment 0 has it
    assert ps.next_deadline() == 0.01
    ps.on_frame(_contrib(0b1000, frag=1), 0.003)                       # w3: fragment 0 lacks it
    assert ps.next_deadline() == 0.003
    queries = [parse_frame(f, K).header for f in ps.on_timer(0.003) if parse_frame(f, K).header.node_id == 0]
    assert [(h.fragment_id, h.worker_id) for h in queries] == [(0, 3)]


def test_ps_relays_a_result_once_through_the_multicasting_node() -> None:
    """`result_via`: a fragment the PS completes for a round of every worker leaves as one
    RELAY frame to the sub-model's node (addressed to its reminder host, count = fan-in = 4,
    worker 255, node id set, RESULT clear), also from on_frames' batched path; a RESEND of a
    second worker is answered with a relay again, other RESENDs, a round of part of the workers
    and a sub-model without such a node with unicast RESULTs."""
    job = JobConfig({w: (WIP[w], 0) for w in range(4)}, VIA, participants={1: [0, 1]}, result_via=2)
    ps = ParameterServer(PS_IP, {5: job}, lanes=K, timeout=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))
    out = ps.on_frames([_contrib(0b0011, Flags.PREEMPTED), _contrib(0b1100, Flags.PREEMPTED)], 0.0)
    assert len(out) == 1
    p = parse_frame(out[0], K)
    assert p.dst_ip == VIA[2] and p.header.flags == Flags.RELAY and p.header.node_id == 2
    assert (p.header.worker_id, p.header.count, p.header.fan_in, p.header.bitmap) == (255, 4, 4, 0b1111)
    assert np.array_equal(p.lanes.astype(np.int64), TOTAL)
    assert ps.stats.results_sent == ps.stats.results_relayed == 1
    # a RESEND of it is answered to its worker; one of a second worker means the relay was
    # probably lost before the node: relayed again; later ones are unicast
    unicast = lambda w: [(WIP[w], Flags.RESULT, 0)]                  # noqa: E731
    for w, t, expect in [(2, 0.01, unicast(2)), (2, 0.011, unicast(2)), (1, 0.012, [(VIA[2], Flags.RELAY, 2)]),
                         (3, 0.013, unicast(3))]:
        again = [parse_frame(f, K) for f in ps.on_frame(_contrib(1 << w, Flags.RESEND), t)]
        assert [(q.dst_ip, q.header.flags, q.header.node_id) for q in again] == expect
    assert ps.stats.results_relayed == 2 and ps.stats.results_resent == 4
    h = InaHeader(5, 2, 0, 0, 255, 2, 2, 0, 0b0011, Flags.PREEMPTED, 1)      # round 1: workers 0, 1
    out = [parse_frame(f, K) for f in ps.on_frame(build_frame(h, (V[0] + V[1]).astype(np.int32),
                                                              src_ip="10.0.0.9", dst_ip=PS_IP), 0.02)]
    assert sorted(q.dst_ip for q in out) == [WIP[0], WIP[1]] and all(q.header.flags == Flags.RESULT for q in out)
    assert job.relay_node(0) == 2 and job.relay_node(1) == 0


def test_worker_takes_a_relayed_result_as_the_ps_s() -> None:
    """A RELAY result (the PS's, multicast by node 2) overtaking an earlier fragment presumes it
    lost, as a PS result does, instead of a switch result's fast retransmit."""
    wk = _worker(window=3, n_frags=6)
    wk.start(0.0)
    h = InaHeader(5, 2, 0, 1, 255, 4, 4, 0, 0b1111, Flags.RESULT | Flags.RELAY)   # fragment 1
    out = [parse_frame(f, K).header for f in wk.on_frame(build_frame(h, np.full(K, 1, np.int32),
                                                                     src_ip=VIA[2], dst_ip=WIP[1]), 0.002)]
    assert not [h for h in out if h.flags == Flags.RESEND] and wk.stats.fast_resent == 0
    assert wk._recovering == 1 and wk.stats.results == 1


def test_worker_retries_twice_at_its_node_then_asks_the_ps() -> None:
    """docs/protocol.md, "Host behaviour": the first two tries of a fragment go to its
    aggregation node as RETRY (the first copy with RETRY set, rule 8), the third to the PS as an
    ask (RESEND, node 0, count 0, no lanes); a PS query is always answered towards the PS, with
    the lanes."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4, 77)], lanes=K, window=1,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05))
    wk.push(np.arange(K, dtype=float))                  # one fragment
    (first,) = wk.start(0.0)
    raw = []
    for _ in range(3):
        raw += wk.on_timer(wk.next_deadline())
    tries = [parse_frame(f, K) for f in raw]
    assert [(p.header.flags, p.header.node_id) for p in tries] == [(Flags.RETRY, 2), (Flags.RETRY, 2), (Flags.RESEND, 0)]
    assert [len(f) for f in raw] == [len(first), len(first), 66] and tries[2].header.count == 0
    want = parse_frame(first, K)
    for p in tries[:2]:
        assert p.header == want.header.with_(flags=Flags.RETRY) and p.dst_ip == PS_IP
        assert np.array_equal(p.lanes, want.lanes)
    query = InaHeader(5, 0, 0, 0, 1, 0, 0, 0, 0, Flags.REMINDER)
    (answer,) = wk.on_frame(build_frame(query, np.zeros(K, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.1)
    got = parse_frame(answer, K)
    assert got.header.flags == Flags.RESEND and got.header.node_id == 0 and got.header.count == 1
    assert len(answer) == len(first) and np.array_equal(got.lanes, want.lanes)


def test_worker_takes_a_kept_results_answer_as_no_first_copys() -> None:
    """A RESULT|RETRY (a node's kept result answering a retry) fills the fragment and measures
    the retry's round trip, but no path sample: it answers the retry, not the first copy."""
    wk = _worker(window=3, n_frags=4)
    wk.start(0.0)
    wk._path_srtt, wk._path_rttvar = [0.05], [0.0]
    retry, new = [parse_frame(f, K).header for f in wk.on_timer(0.01)]   # fragment 0's probe
    assert (retry.fragment_id, retry.flags, new.fragment_id, new.flags) == (0, Flags.RETRY, 3, Flags(0))
    h = InaHeader(5, 2, 0, 0, 255, 4, 4, 0, 0b1111, Flags.RESULT | Flags.RETRY)
    wk.on_frame(build_frame(h, np.full(K, 3, np.int32), src_ip=PS_IP, dst_ip=WIP[1]), 0.012)
    assert wk._path_srtt == [0.05] and wk.resend_rtt.srtt == pytest.approx(0.002)
    assert np.array_equal(wk.result_fixed()[:K], np.full(K, 3))


def test_worker_presumes_a_fragment_lost_once_it_waited_its_paths_srtt() -> None:
    """A result of another sub-model frees the window slot of an earlier fragment that has
    waited longer than its own path's smoothed RTT (presumed lost, resent only at its RACK
    deadline); one younger than that keeps its slot."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4), FragmentLabel(3, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.05, minimum=0.02, maximum=0.1))
    wk.push(np.zeros(8 * K), [4 * K, 4 * K])
    wk._path_srtt, wk._path_rttvar = [0.004, 0.004], [0.0, 0.0]
    sent = [(h.submodel_id, h.fragment_id) for f in wk.start(0.0) for h in [parse_frame(f, K).header]]
    assert sent == [(0, 0), (1, 0), (0, 1)]                              # A0, B0, A1
    out = wk.on_frame(_result(5, 0, np.zeros(K), sub=1), 0.003)          # A0, A1 waited 3 ms < 4 ms
    assert wk._later_results[:3] == [0, 0, 0] and len(out) == 1         # B0's slot only: B1
    out = wk.on_frame(_result(5, 1, np.zeros(K), sub=1), 0.005)          # now 5 ms > 4 ms
    assert wk._later_results[0] == wk._later_results[2] == -1 and wk._recovering == 2
    assert len(out) == 3                                                 # B1's slot, A0's and A1's
    assert wk.stats.resent == 0 and wk._pending[0] == pytest.approx(0.008)        # RACK: 2 srtt


@pytest.mark.parametrize("recovery,freed", [(None, [2, 3]), (1, [2])])
def test_worker_presumes_stale_first_copies_lost_when_its_window_is_full(recovery: int | None,
                                                                        freed: list[int]) -> None:
    """With the window full, first copies unanswered for 1.5 times their path's srtt (waiting
    for a peer's recovery, no longer on the wire) are presumed lost, oldest first and within the
    recovery bound: their slots go to new fragments, their timers stay (no evidence, no resend)."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=2, recovery=recovery,
                rto=RtoEstimator(initial=0.05, minimum=0.02, maximum=0.1))
    wk.push(np.zeros(K * 10))
    assert _new(wk.start(0.0)) == [0, 1]
    assert _new(wk.on_frame(_result(5, 1, np.zeros(K)), 0.004)) == [2, 3]    # 0 fast-retransmitted
    wk._path_srtt, wk._path_rttvar = [0.004], [0.0]
    assert _new(wk.on_frame(_result(5, 0, np.zeros(K)), 0.0095)) == []       # 2, 3: 5.5 ms < 6 ms
    out = wk.on_frame(_result(5, 0, np.zeros(K)), 0.0105)                   # a duplicate: no slot
    assert _new(out) == [] and wk.stats.duplicate_results == 1
    wk._fill(0.0105)          # what the next result or timer does first: 6.5 ms > 6 ms
    assert [i for i in (2, 3) if wk._later_results[i] == -1] == freed and wk.stats.resent == 1
    assert wk._pending[2] == pytest.approx(0.004 + wk._timeout[2])            # its timer kept


def test_ps_takes_a_drained_kept_result_as_a_result_copy() -> None:
    """A drain holding every worker for an entry with an empty network account is a node's kept
    result (rule 8), multicast already: the PS ends the entry with it and sends it only to the
    workers that resent."""
    ps = _ps()
    assert ps.on_frame(_contrib(0b0100, Flags.RESEND), 0.0) == []
    out = ps.on_frame(_contrib(0b1111, Flags.PREEMPTED | Flags.REMINDER), 0.001)
    assert set(_results(out)) == {WIP[2]} and np.array_equal(_results(out)[WIP[2]], TOTAL)
    assert ps.stats.completed == 1 and ps.incomplete() == []


def test_worker_presumes_lost_on_a_later_result_of_another_submodel_of_the_same_node() -> None:
    """Sub-models aggregated at one node share its paths both ways: a switch's result of one
    overtaking another's pending fragment presumes that one lost (its slot freed, resent at its
    RACK deadline), without a resend at once; the PS's results stay evidence for their own
    sub-model only."""
    def worker() -> Worker:
        wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4), FragmentLabel(2, 4)], lanes=K, window=4)
        wk.push(np.zeros(4 * K), [2 * K, 2 * K])
        wk.start(0.0)                                      # A0, B0, A1, B1
        return wk
    wk = worker()
    assert wk.on_frame(_result(5, 0, np.zeros(K), sub=1), 0.001) == []
    assert wk._later_results[0] == -1 and wk._recovering == 1 and wk.stats.resent == 0
    wk = worker()
    assert wk.on_frame(_result(5, 0, np.zeros(K), sub=1, node=0), 0.001) == [] and wk._later_results[0] == 0
