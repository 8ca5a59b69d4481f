"""Rounds (docs/protocol.md, "Rounds"): a partial stranded by a loss in round r never mixes with
round r+1, on both programs, whatever packet of the round is lost."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import Flags

from .ina_harness import PS_IP, PS_PORT, InaSwitch, random_lanes

ARCHS = ["v1model", "tna"]


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


def _grads(s: InaSwitch, seed: int, n: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [random_lanes(rng, s.lanes) for _ in range(n)]


def _total(grads: list[np.ndarray]) -> np.ndarray:
    return np.sum(np.stack(grads).astype(np.int64), axis=0)


def _reminder(s: InaSwitch, round: int, fragment_id: int = 7) -> list:
    h = s.fragment(0, fan_in=0, fragment_id=fragment_id, flags=Flags.REMINDER, round=round)
    h = h.with_(count=0, bitmap=0, worker_id=255)
    return s.parse(s.send(h, np.zeros(s.lanes, np.int32), src_ip=PS_IP, in_port=PS_PORT))


@pytest.mark.parametrize("lost", [[2, 3], [3], [0, 1, 2]])
def test_next_round_reclaims_a_stranded_partial_and_sums_only_its_own_values(arch, lost):
    """Round 1 loses the first copies of ``lost`` (the PS completes round 1 from RESENDs, which
    no switch aggregates); round 2's fragments of the same key must not merge with the stale
    partial: its result is exactly round 2's sum, and the aggregator is free again after it
    (v1model: keeps round 2's result, rule 8)."""
    s = InaSwitch(arch, workers=4)
    r1, r2 = _grads(s, 1), _grads(s, 2)
    for w in range(4):
        if w not in lost:
            assert s.send(s.fragment(w, fan_in=4, round=1), r1[w]) == []     # stranded partial
    i = _index(s)
    assert s.register("agg_round", i) == 1
    out = []
    for w in (3, 1, 0, 2):                  # any order; the first one reclaims the aggregator
        out += s.parse(s.send(s.fragment(w, fan_in=4, round=2), r2[w]))
    assert len(out) == 4
    for _, pkt in out:
        assert Flags.RESULT in pkt.header.flags and pkt.header.round == 2 and pkt.header.bitmap == 0b1111
        assert np.array_equal(pkt.lanes.astype(np.int64), _total(r2))
    if arch == "tna":
        assert s.register("agg_round", i) == 0 and s.register("agg_bitmap", i) == 0   # freed
    else:       # the result is kept (rule 8), for round 2
        assert s.register("agg_round", i) == 2 and s.register("agg_bitmap", i) == 0b1111


def _index(s: InaSwitch) -> int:
    """The one aggregator in use (the tests below occupy one at a time)."""
    used = [i for i in range(64) if s.register("agg_round", i) or s.register("agg_bitmap", i)]
    assert len(used) == 1, used
    return used[0]


def test_a_late_packet_of_a_finished_round_is_dropped_and_changes_nothing(arch):
    s = InaSwitch(arch, workers=3)
    r1, r2 = _grads(s, 3, 3), _grads(s, 4, 3)
    assert s.send(s.fragment(0, fan_in=3, round=2), r2[0]) == []
    i = _index(s)
    before = {name: s.register(name, i) for name in ("agg_bitmap", "agg_round")}
    assert s.send(s.fragment(1, fan_in=3, round=1), r1[1]) == []            # stale: dropped
    assert {name: s.register(name, i) for name in before} == before
    assert s.send(s.fragment(1, fan_in=3, round=2), r2[1]) == []
    out = s.parse(s.send(s.fragment(2, fan_in=3, round=2), r2[2]))
    assert len(out) == 3 and all(np.array_equal(p.lanes.astype(np.int64), _total(r2)) for _, p in out)


def test_reminders_act_only_on_their_own_round(arch):
    """...and the drained partial carries its owner's state, priority included (a TNA defect)."""
    s = InaSwitch(arch, workers=4)
    g = _grads(s, 5)
    s.send(s.fragment(0, fan_in=4, round=6, priority=77), g[0])
    s.send(s.fragment(1, fan_in=4, round=6, priority=77), g[1])
    (port, pkt), = _reminder(s, round=5)                 # another round: passes on untouched
    assert Flags.PREEMPTED not in pkt.header.flags and pkt.header.bitmap == 0
    (port, pkt), = _reminder(s, round=6)                 # its round: drained to the PS
    assert port == PS_PORT and Flags.PREEMPTED in pkt.header.flags
    assert pkt.header.round == 6 and pkt.header.bitmap == 0b11 and pkt.header.count == 2
    assert pkt.header.priority == 77 and pkt.header.fan_in == 4
    assert np.array_equal(pkt.lanes.astype(np.int64), _total(g[:2]))


def test_an_evicted_partial_carries_its_round(arch):
    s = InaSwitch(arch, workers=4, pool_size=1, preemption=True)
    g = _grads(s, 6)
    s.send(s.fragment(0, fan_in=4, fragment_id=1, priority=10, round=41), g[0])
    (port, pkt), = s.parse(s.send(s.fragment(1, fan_in=4, fragment_id=2, priority=99, round=42), g[1]))
    assert Flags.PREEMPTED in pkt.header.flags and pkt.header.round == 41 and pkt.header.fragment_id == 1
    assert s.register("agg_round", 0) == 42


def test_a_held_atp_aggregator_whose_result_never_came_back_is_reclaimed_next_round(arch):
    s = InaSwitch(arch, workers=2, pool_size=1, result="ps")
    s.t.add_job(2, hold_until_result=True)
    s.t.level_to_ps(2, 1)
    s.t.add_release(2, 1, pool_base=0, pool_size=1)
    one, two = np.ones(s.lanes, np.int32), np.full(s.lanes, 2, np.int32)
    s.send(s.fragment(0, fan_in=2, job_id=2, round=1), one)
    (_, res), = s.parse(s.send(s.fragment(1, fan_in=2, job_id=2, round=1), one))
    assert Flags.RESULT in res.header.flags                       # held until the result returns
    # the PS's result for round 1 never passes back through this switch; round 2 starts
    assert s.send(s.fragment(1, fan_in=2, job_id=2, round=2), two) == []
    # a round-1 result passing back now must not free round 2's aggregator
    back = res.header.with_(flags=Flags.RESULT)
    s.send(back, res.lanes, src_ip=PS_IP, in_port=PS_PORT, dst_ip="10.0.0.1")
    (_, res2), = s.parse(s.send(s.fragment(0, fan_in=2, job_id=2, round=2), two))
    assert Flags.RESULT in res2.header.flags and res2.header.round == 2 and np.all(res2.lanes == 4)
