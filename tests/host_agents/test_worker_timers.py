"""The worker's timers: the first measured round trip replacing the initial RTO, loss found by
later results or by the timeout alone, and retries backing off once nobody answers them."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import Flags, parse_frame
from hostlib.rto import RtoEstimator
from hostlib.worker import FragmentLabel, Worker

from .test_agents_unit import K, PS_IP, WIP, _result


def test_worker_first_round_trip_retimes_copies_sent_under_the_initial_rto() -> None:
    """The initial RTO is a guess (RFC 6298): once a round trip is measured, first copies sent
    under the guess wait no longer than the measured RTO; later sends use it directly, and a
    second sample changes nothing already armed."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=6.0, minimum=0.2, maximum=10.0))
    wk.push(np.zeros(5 * K))
    assert len(wk.start(0.0)) == 3
    assert wk._pending == {0: 6.0, 1: 6.0, 2: 6.0}
    wk.on_frame(_result(5, 0, np.zeros(K)), 0.1)                  # srtt 0.1, rttvar 0.05: RTO 0.3
    assert wk._pending == {1: pytest.approx(0.3), 2: pytest.approx(0.3), 3: pytest.approx(0.4)}
    wk.on_frame(_result(5, 1, np.zeros(K)), 0.35)                 # a larger RTO now: nothing re-armed
    assert wk._pending[2] == pytest.approx(0.3) and wk.rto.rto > 0.3


@pytest.mark.parametrize("mode, resent", [("dupack", [(0, 0)]), ("timeout", [])])
def test_later_results_retransmit_after_three_or_never_by_the_timeout_alone(mode: str, resent: list) -> None:
    """ESA's rule (three later results of the path) and the timeout alone, for lossless runs
    whose switches reorder one sub-model's results (preemption)."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=5, loss_detection=mode,
                rto=RtoEstimator(initial=1.0, minimum=0.5, maximum=2.0))
    wk.push(np.zeros(5 * K))
    wk.start(0.0)
    out = []
    for frag in (1, 2, 3):                                   # three later results overtake fragment 0
        out += wk.on_frame(_result(5, frag, np.zeros(K)), 0.01 * frag)
    assert [(h.submodel_id, h.fragment_id) for f in out for h in [parse_frame(f, K).header]
            if h.flags & (Flags.RETRY | Flags.RESEND)] == resent
    assert wk.stats.resent == len(resent)
    if mode == "timeout":
        assert wk._pending[0] == pytest.approx(0.5)          # its RTO (the first sample's, at the floor)


def test_tries_left_unanswered_by_every_peer_back_off_to_the_ceiling() -> None:
    """When no retransmitted fragment has been answered for 4 caps, the path is congested (or
    the PS stuck), not dropping at random: the tries double on up to the RTO ceiling instead of
    holding at 2 answer times, as TCP backs off until an ACK comes."""
    wk = Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=3,
                rto=RtoEstimator(initial=0.01, minimum=0.004, maximum=0.05))
    wk.push(np.zeros(2 * K))
    wk.start(0.0)
    wk.on_timer(0.01)
    wk.on_frame(_result(5, 0, np.zeros(K), node=0), 0.014)            # the last answer: resend_rtt 12 ms
    waits = []
    for _ in range(10):
        now = wk.next_deadline()
        wk.on_timer(now)
        waits.append(wk.next_deadline() - now)
    assert waits[:5] == pytest.approx([0.012, 0.024, 0.024, 0.024, 0.024])   # random drops: 2 answer times
    # silence since the answer for over 4 caps (96 ms, at 0.128 s): on to the ceiling
    assert waits[5:] == pytest.approx([0.048, 0.05, 0.05, 0.05, 0.05])


@pytest.mark.parametrize("mode, bound", [("rack", 3 * 4), ("dupack", 4), ("timeout", 4)])
def test_the_recovery_bound_is_three_windows_under_random_loss_and_one_where_results_come_late(
        mode: str, bound: int) -> None:
    """Fragments in recovery hold no window slot up to the recovery bound (docs/protocol.md,
    "Host behaviour"): three windows where loss is random, one where results are late by design
    (preemption, contention), unless set."""
    def worker(**kw) -> Worker:
        return Worker(5, 1, PS_IP, WIP[1], [FragmentLabel(2, 4)], lanes=K, window=4, loss_detection=mode, **kw)
    assert worker().recovery == bound and worker(recovery=2).recovery == 2
