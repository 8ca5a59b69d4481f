"""A worker's ask (docs/protocol.md, "Header-only frames"): a RESEND without lanes, count 0,
which the PS answers with the result or by querying what it lacks. The sans-IO PS alone, frames
built by hand."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import Flags, InaHeader, build_frame, build_header_only, parse_frame
from hostlib.ps import JobConfig, ParameterServer
from hostlib.rto import RtoEstimator

from .test_agents_unit import PS_IP, TOTAL, VIA, WIP, K, V


def _ps() -> ParameterServer:
    """Job 5: workers 0 and 1 below node 1, 2 and 3 below node 2 (ATP's ToRs)."""
    job = JobConfig({w: (WIP[w], 0) for w in range(4)}, VIA, node_workers={1: (0, 1), 2: (2, 3)})
    return ParameterServer(PS_IP, {5: job}, lanes=K, timeout=RtoEstimator(initial=0.01, minimum=0.001, maximum=0.05))


def _ask(worker: int, frag: int = 0) -> bytes:
    h = InaHeader(5, 0, 0, frag, worker, 4, 0, 0, 1 << worker, Flags.RESEND)
    return build_header_only(h, src_ip=WIP[worker], dst_ip=PS_IP)


def _copy(bitmap: int, flags: Flags = Flags(0), node: int = 1) -> bytes:
    """A first copy or partial of ``bitmap``'s workers (a RESEND with lanes: one worker's answer)."""
    ws = [w for w in range(4) if bitmap >> w & 1]
    lanes = sum((V[w] for w in ws), np.zeros(K, np.int64)).astype(np.int32)
    worker = ws[0] if len(ws) == 1 else 255
    h = InaHeader(5, 0 if flags & Flags.RESEND else node, 0, 0, worker, 4, len(ws), 0, bitmap, flags)
    return build_frame(h, lanes, src_ip="10.0.0.9", dst_ip=PS_IP)


def _sent(frames: list[bytes]) -> list[tuple[str, int, str]]:
    """(kind, worker or node, destination) of what the PS sent."""
    out = []
    for f in frames:
        h = parse_frame(f, K)
        kind = ("result" if Flags.RESULT in h.header.flags else
                "query" if h.header.node_id == 0 else "reminder")
        out.append((kind, h.header.node_id or h.header.worker_id, h.dst_ip))
    return out


def test_an_ask_of_a_complete_fragment_is_answered_with_the_result() -> None:
    ps = _ps()
    ps.on_frame(_copy(0b0011), 0.0)
    results = ps.on_frame(_copy(0b1100, node=2), 0.001)
    assert len(results) == 4 and ps.stats.completed == 1
    (answer,) = ps.on_frame(_ask(2), 0.02)                  # worker 2 lost its result
    got = parse_frame(answer, K)
    assert Flags.RESULT in got.header.flags and got.dst_ip == WIP[2]
    assert np.array_equal(got.lanes.astype(np.int64), TOTAL)
    assert ps.stats.received["ask"] == 1 and ps.stats.results_resent == 1


def test_an_ask_recovers_an_incomplete_fragment_at_once() -> None:
    """The asker's own copy never came (its partial with worker 0 waits at node 1): the ask
    brings the recovery forward from the entry's timeout to now. It reminds node 1 only, the
    node of the workers it lacks, and queries both, the asker too: an ask carries no lanes.
    Their answers complete the fragment exactly."""
    ps = _ps()
    ps.on_frame(_copy(0b1100, node=2), 0.0)
    assert ps.next_deadline() == pytest.approx(0.01)           # the entry timeout
    assert ps.on_frame(_ask(1), 0.002) == []
    assert ps.next_deadline() == pytest.approx(0.002)           # due at once
    assert sorted(_sent(ps.on_timer(0.002))) == [("query", 0, WIP[0]), ("query", 1, WIP[1]),
                                                 ("reminder", 1, VIA[1])]
    ps.on_frame(_copy(0b0001, Flags.RESEND), 0.004)
    results = ps.on_frame(_copy(0b0010, Flags.RESEND), 0.005)
    assert len(results) == 4
    assert all(np.array_equal(parse_frame(f, K).lanes.astype(np.int64), TOTAL) for f in results)


def test_an_ask_from_a_worker_the_ps_holds_queries_only_the_others() -> None:
    """Worker 2's copy is there, worker 3's was lost: worker 2's ask (its result is overdue)
    queries worker 3 and reminds node 2 only."""
    ps = _ps()
    ps.on_frame(_copy(0b0011), 0.0)
    ps.on_frame(_copy(0b0100, node=2), 0.0)
    ps.on_frame(_ask(2), 0.003)
    assert sorted(_sent(ps.on_timer(0.003))) == [("query", 3, WIP[3]), ("reminder", 2, VIA[2])]
    assert ps.stats.completed == 0


def test_asks_within_an_answer_round_trip_of_a_recovery_wait_for_its_answers() -> None:
    """A recovery's answers take about an answer round trip: another worker's ask meanwhile, or
    the same worker's, sends nothing; the same worker asking again after that recovers again
    (the recovery or its answers were lost)."""
    ps = _ps()
    ps.on_frame(_copy(0b0011), 0.0)
    ps.on_frame(_ask(2), 0.001)
    assert _sent(ps.on_timer(0.001))                            # the first recovery
    wait = ps.answer_rtt.rto
    ps.on_frame(_ask(3), 0.001 + wait / 2)
    ps.on_frame(_ask(2), 0.001 + wait / 2)
    assert ps.next_deadline() == pytest.approx(0.001 + wait)   # the recovery's own schedule
    ps.on_frame(_ask(2), 0.001 + 1.5 * wait)
    assert ps.next_deadline() == pytest.approx(0.001 + 1.5 * wait)
    again = _sent(ps.on_timer(0.001 + 1.5 * wait))
    assert sorted(k for k, _, _ in again) == ["query", "query", "reminder"]


def test_a_query_answer_crossing_the_result_it_completed_is_not_answered() -> None:
    """Case 2: nothing came through the switches and one worker asked, so the PS queries one
    silent worker and the asker. The silent worker answers with its result copy, which completes
    the fragment and goes on to the asker; the asker's own answer (its contribution: it lacked
    the result) crossed that result and gets none."""
    ps = _ps()
    ps.on_frame(_ask(2), 0.0)
    assert sorted(_sent(ps.on_timer(0.0))) == [("query", 0, WIP[0]), ("query", 2, WIP[2]),
                                               ("reminder", 1, VIA[1]), ("reminder", 2, VIA[2])]
    h = InaHeader(5, 0, 0, 0, 0, 4, 1, 0, 0b0001, Flags.RESULT | Flags.RESEND)
    passed_on = ps.on_frame(build_frame(h, TOTAL.astype(np.int32), src_ip=WIP[0], dst_ip=PS_IP), 0.0002)
    assert [(k, d) for k, _, d in _sent(passed_on)] == [("result", WIP[2])]
    assert ps.on_frame(_copy(0b0100, Flags.RESEND), 0.0003) == []
    assert ps.stats.received["crossed"] == 1 and ps.stats.results_resent == 0
