"""The audit of docs/protocol.md, continued (see test_protocol_doc.py): reminders (rule 6),
held aggregators (rule 7), kept results (rule 8), RESEND, pass-through and job isolation,
forwarding, rounds, and several nodes on one switch -- on the v1model and TNA programs in p4sim.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import INT32_MAX, WORKER_AGGREGATE, Flags

from .ina_harness import PS_IP, PS_PORT, random_lanes, worker_ip, worker_port
from .protocol_bench import (ALL_ONES, PS2_IP, PS2_PORT, Bench, arch, assert_lanes, exact_sum, hop,  # noqa: F401
                             udp_checksum_of)


# ====================================================================== rule 6
def test_reminder_on_a_free_aggregator_passes_unchanged(arch: str) -> None:
    """Rule 6: no owner -> the reminder is forwarded unchanged (byte for byte but the hop) and
    claims nothing."""
    s = Bench(arch, workers=2, pool_size=1)
    out = s.remind(s.reminder(round=4))
    assert out.port == worker_port(0) and out.frame[12:] == hop(s.last_frame)
    s.assert_free(0)


def test_reminder_for_another_key_or_job_leaves_the_owner_alone(arch: str) -> None:
    """Rule 6 and job isolation: a reminder whose key (another fragment, or the same ids in
    another job) does not own the aggregator passes unchanged; the owner's partial is intact
    and completes exactly."""
    s = Bench(arch, workers=2, pool_size=1, job_id=1)
    s.add_job(2, preemption=False, workers=2)
    s.absorbed(s.fragment(0, fan_in=2), 4)
    before = s.state(0)
    for r in (s.reminder(fragment_id=8), s.reminder(job_id=2)):
        out = s.remind(r)
        assert out.frame[12:] == hop(s.last_frame)
    assert s.state(0) == before
    outs = s.tx(s.fragment(1, fan_in=2), 5)
    assert len(outs) == 2 and all(o.pkt.header.bitmap == 0b11 for o in outs)
    assert_lanes(outs[0].pkt, 9)


def test_reminder_drains_to_the_owners_ps_wherever_it_was_addressed(arch: str) -> None:
    """Rule 6: the partial is swapped out "to the owner's PS exactly as in a preemption"
    (REMINDER|PREEMPTED, worker_id 255, the owner's bitmap, count, fan-in, priority), although
    the reminder was addressed to a `reminder_via` host; the aggregator is free afterwards."""
    s = Bench(arch, workers=3, pool_size=1)
    s.absorbed(s.fragment(2, fan_in=3, priority=12, round=5), 6)
    out = s.remind(s.reminder(round=5), dst_ip=worker_ip(1))
    h = out.pkt.header
    assert out.port == PS_PORT and out.pkt.dst_ip == PS_IP
    assert h.flags == Flags.REMINDER | Flags.PREEMPTED and h.worker_id == WORKER_AGGREGATE
    assert h.key() == (1, 1, 3, 7) and h.round == 5
    assert h.bitmap == 0b100 and h.count == 1 and h.fan_in == 3 and h.priority == 12
    assert_lanes(out.pkt, 6)
    s.assert_free(0)


# ====================================================================== rule 7
def _hold_bench(arch: str) -> Bench:
    """Job 2 in ATP mode (hold until result, results to the PS, released as node 1), one
    aggregator, preemption off; job 3 preemptive."""
    s = Bench(arch, workers=2, pool_size=1, result="ps")
    s.t.add_job(2, hold_until_result=True)
    s.t.level_to_ps(2, 1)
    s.t.add_release(2, 1, pool_base=0, pool_size=1)
    s.add_job(3, preemption=True, workers=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2, job_id=2), 3)
    res = s.one(s.fragment(1, fan_in=2, job_id=2), 4).pkt
    assert Flags.RESULT in res.header.flags
    assert_lanes(res, 7)
    return s


def test_a_held_aggregator_until_its_result_passes_back(arch: str) -> None:
    """Rule 7: a held aggregator makes the same key a duplicate (even a new worker bit), keeps
    out another key (COLLISION) even of a preemptive job at priority 255; the RESULT coming back
    from the PS (node_id 0: `ina_release` supplies the node) frees it and is itself forwarded
    unchanged; then another key claims it."""
    s = _hold_bench(arch)
    s.absorbed(s.fragment(0, fan_in=2, job_id=2), 9)
    s.absorbed(s.fragment(0, fan_in=3, job_id=2).with_(bitmap=1 << 7, worker_id=7), 9)
    out = s.one(s.fragment(0, fan_in=2, job_id=3, priority=255), 1)
    assert out.pkt.header.flags == Flags.COLLISION
    back = s.fragment(0, fan_in=2, job_id=2, node_id=0, flags=Flags.RESULT).with_(
        worker_id=WORKER_AGGREGATE, bitmap=0b11, count=2)
    out = s.one(back, 7, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=PS_PORT)
    assert out.port == worker_port(1) and out.frame[12:] == hop(s.last_frame)
    s.assert_free(0)
    s.absorbed(s.fragment(0, fan_in=2, job_id=3, fragment_id=99), 1)


def test_a_held_aggregator_cannot_be_preempted(arch: str) -> None:
    """Rule 7: a held aggregator has "priority 255 (so it cannot be preempted)" -- not even
    after a preemptive job's collisions (rule 5's downgrade)."""
    s = _hold_bench(arch)
    for _ in range(3):
        out = s.one(s.fragment(0, fan_in=2, job_id=3, priority=200), 1)
        assert out.pkt.header.flags == Flags.COLLISION


def test_a_resend_result_copy_does_not_release(arch: str) -> None:
    """`RESEND` ("switches never aggregate it") and rule 7: a worker's RESULT|RESEND copy (its
    answer to a PS query) passes untouched and does not free the held aggregator; the PS's
    RESULT does."""
    s = _hold_bench(arch)
    copy = s.fragment(1, fan_in=2, job_id=2, node_id=0, flags=Flags.RESULT | Flags.RESEND).with_(bitmap=0b10)
    out = s.one(copy, 7)
    assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)
    assert s.register("agg_bitmap", 0) == ALL_ONES


# ====================================================================== rule 8
def _kept_bench(arch: str, **kw) -> tuple[Bench, list[np.ndarray]]:
    """Three workers' fragment 7 complete (multicast to each), on a pool of one aggregator."""
    s = Bench(arch, workers=3, pool_size=1, **kw)
    rng = np.random.default_rng(8)
    g = [random_lanes(rng, s.lanes) for _ in range(3)]
    s.absorbed(s.fragment(0, fan_in=3, round=5), g[0])
    s.absorbed(s.fragment(1, fan_in=3, round=5), g[1])
    assert len(s.tx(s.fragment(2, fan_in=3, round=5), g[2])) == 3
    return s, g


def test_a_retry_completes_the_partial_that_lacks_its_worker(arch: str) -> None:
    """Rule 8 (both programs): a RETRY is a first copy to the switch; one that brings the
    missing worker completes the aggregate, whose result leaves without RETRY; a RETRY of a
    worker already in the partial is a duplicate."""
    s = Bench(arch, workers=3, pool_size=1)
    g = [np.full(s.lanes, v, np.int32) for v in (1, 10, 100)]
    s.absorbed(s.fragment(0, fan_in=3), g[0])
    s.absorbed(s.fragment(1, fan_in=3), g[1])           # worker 2's first copy was lost
    before = s.state(0)
    s.absorbed(s.fragment(0, fan_in=3, flags=Flags.RETRY), g[0])      # worker 0 timed out too
    assert s.state(0) == before
    outs = s.tx(s.fragment(2, fan_in=3, flags=Flags.RETRY), g[2])
    assert sorted(o.port for o in outs) == [worker_port(w) for w in range(3)]
    for o in outs:
        assert o.pkt.header.flags == Flags.RESULT and o.pkt.header.bitmap == 0b111
        assert_lanes(o.pkt, 111)


def test_a_kept_result_answers_a_retry_to_that_worker_alone(arch: str) -> None:
    """Rule 8: a multicast level keeps the result; a worker's RETRY of the same key and round
    gets it back as RESULT|RETRY, from the PS's address to that worker, node id unchanged, and
    the result stays kept. TNA keeps none: there the retry claims the free aggregator."""
    s, g = _kept_bench(arch)
    retry = s.fragment(1, fan_in=3, round=5, flags=Flags.RETRY)
    if arch == "tna":
        s.absorbed(retry, g[1])
        return
    s.assert_completed(0, 0b111, exact_sum(g))
    out = s.one(retry, g[1])
    h = out.pkt.header
    assert out.port == worker_port(1) and out.pkt.dst_ip == worker_ip(1) and out.pkt.src_ip == PS_IP
    assert h.flags == Flags.RESULT | Flags.RETRY and h.worker_id == WORKER_AGGREGATE
    assert h.key() == retry.key() and h.round == 5
    assert (h.bitmap, h.count, h.fan_in) == (0b111, 3, 3)
    assert_lanes(out.pkt, exact_sum(g))
    assert udp_checksum_of(out.frame) == 0
    s.assert_completed(0, 0b111, exact_sum(g))
    # a first copy of the complete key is a duplicate; a retry of another round is not answered
    s.absorbed(s.fragment(1, fan_in=3, round=5), g[1])
    s.absorbed(s.fragment(1, fan_in=3, round=4, flags=Flags.RETRY), g[1])
    s.assert_completed(0, 0b111, exact_sum(g))


@pytest.mark.parametrize("claim", ["other-key", "next-round"])
def test_a_kept_result_yields_to_any_claim(claim: str) -> None:
    """Rule 8 (v1model): a kept result blocks nothing — another key's first copy, or the same
    key's next round, claims the aggregator as if it were free. The retry then finds nothing of
    its key: it claims nothing and goes on to the PS as the worker's RESEND (node 0)."""
    s, g = _kept_bench("v1model")
    first = s.fragment(0, fan_in=3, fragment_id=8, round=5) if claim == "other-key" else s.fragment(0, fan_in=3, round=6)
    s.absorbed(first, 4)
    assert s.register("agg_bitmap", 0) == 0b1 and s.register("agg_count", 0) == 1
    retry = s.fragment(1, fan_in=3, round=5, flags=Flags.RETRY)
    if claim == "other-key":
        out = s.one(retry, g[1])
        assert out.port == PS_PORT and out.pkt.header == retry.with_(flags=Flags.RESEND, node_id=0)
        assert np.array_equal(out.pkt.lanes, g[1]) and udp_checksum_of(out.frame) == 0
    else:
        s.absorbed(retry, g[1])                   # a finished round's copy: dropped (rule "Rounds")
    assert s.register("agg_bitmap", 0) == 0b1 and s.register("agg_count", 0) == 1


def test_a_reminder_copies_a_kept_result_to_the_ps_and_keeps_it() -> None:
    """Rules 6 and 8 (v1model): a reminder for a kept result sends the PS a copy —
    REMINDER|PREEMPTED, every worker's bit, count = fan-in, the sums — and the result stays for
    the workers' retries."""
    s, g = _kept_bench("v1model")
    out = s.remind(s.reminder(round=5))
    h = out.pkt.header
    assert out.port == PS_PORT and h.flags == Flags.REMINDER | Flags.PREEMPTED
    assert (h.bitmap, h.count, h.fan_in) == (0b111, 3, 3)
    assert_lanes(out.pkt, exact_sum(g))
    s.assert_completed(0, 0b111, exact_sum(g))
    assert s.one(s.fragment(2, fan_in=3, round=5, flags=Flags.RETRY), g[2]).port == worker_port(2)


@pytest.mark.parametrize("level", ["to_node", "to_ps"])
def test_only_a_multicast_level_keeps_results(level: str) -> None:
    """Rule 8 (v1model): a level that sends its aggregate on (`to_node`) or to the PS (which may
    complete it with other fragments) frees the aggregator as rule 4 says; a retry then finds
    nothing of its key and goes to the PS as a RESEND — never answered with a partial, never
    claiming an aggregator its peers will not come back to."""
    s = Bench("v1model", workers=2, pool_size=1, result="none")
    if level == "to_node":
        s.t.level_to_node(1, 1, next_node=2, next_fan_in=6)
    else:
        s.t.level_to_ps(1, 1)
    s.absorbed(s.fragment(0, fan_in=2), 1)
    assert s.one(s.fragment(1, fan_in=2), 2).port == PS_PORT
    s.assert_free(0)
    out = s.one(s.fragment(1, fan_in=2, flags=Flags.RETRY), 2)
    assert out.port == PS_PORT and out.pkt.header.flags == Flags.RESEND and out.pkt.header.node_id == 0
    s.assert_free(0)


# ====================================================================== RESEND
def test_resend_is_never_aggregated(arch: str) -> None:
    """`RESEND`: never aggregated -- not merged into a partial of its key (whose state stays),
    not completed on arrival (count >= fan_in), not claiming; it goes to the PS untouched."""
    s = Bench(arch, workers=2, pool_size=1)
    s.absorbed(s.fragment(0, fan_in=2), 1)
    before = s.state(0)
    for h in (s.fragment(1, fan_in=2, flags=Flags.RESEND), s.fragment(1, fan_in=1, flags=Flags.RESEND),
              s.fragment(1, fan_in=2, fragment_id=8, flags=Flags.RESEND, priority=200)):
        out = s.one(h, 2)
        assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)
    assert s.state(0) == before


# ====================================================================== pass-through, isolation
@pytest.mark.parametrize("flags", [Flags(0), Flags.COLLISION, Flags.PREEMPTED, Flags.RESULT])
def test_another_nodes_packet_passes_untouched(arch: str, flags: Flags) -> None:
    """INA header, `node_id`: "A switch aggregates only fragments whose node_id is one of its
    own ids; all others pass untouched" -- whatever their flags, byte for byte but the hop and,
    for COLLISION and PREEMPTED, the UDP checksum ("Encapsulation": zeroed on those)."""
    s = Bench(arch, workers=2)
    h = s.fragment(0, fan_in=2, node_id=5, flags=flags)
    out = s.one(h, 3)
    expected = hop(s.last_frame)
    if flags & (Flags.COLLISION | Flags.PREEMPTED):
        assert udp_checksum_of(out.frame) == 0
        expected = expected[:28] + b"\0\0" + expected[30:]          # UDP checksum (IHL 5)
    assert out.frame[12:] == expected


def test_another_nodes_aggregate_at_a_bound(arch: str) -> None:
    """`node_id` ("all others pass untouched") and `OVERFLOW`: a partial for another node whose
    lanes sit at INT32_MAX (an exact sum, not flagged by its node) passes untouched on v1model;
    TNA's egress flags every aggregate leaving with a lane at a bound, and zeroes its UDP
    checksum."""
    s = Bench(arch, workers=2)
    out = s.one(s.aggregate(0b11, fan_in=4, node_id=5), INT32_MAX)
    if arch == "v1model":
        assert out.frame[12:] == hop(s.last_frame)
    else:
        assert out.pkt.header.flags == Flags.OVERFLOW and udp_checksum_of(out.frame) == 0
        assert_lanes(out.pkt, INT32_MAX)


def test_same_ids_in_two_jobs_never_meet(arch: str) -> None:
    """INA header, `job_id` and the isolation paragraph after rule 7: the job id is part of
    the owner key, so job 2's fragment with job 1's ids and bitmap is neither a duplicate nor
    added: with one aggregator it collides (ATP fallback, to job 2's PS) and job 1 completes
    exactly."""
    s = Bench(arch, workers=2, pool_size=1, job_id=1)
    s.add_ps2()
    s.add_job(2, preemption=False, workers=2)
    s.absorbed(s.fragment(0, fan_in=2, job_id=1), 1)
    out = s.one(s.fragment(1, fan_in=2, job_id=2), 50, dst_ip=PS2_IP)
    assert out.port == PS2_PORT and out.pkt.header.flags == Flags.COLLISION and out.pkt.header.job_id == 2
    outs = s.tx(s.fragment(1, fan_in=2, job_id=1), 2)
    assert len(outs) == 2 and all(o.pkt.header.job_id == 1 for o in outs)
    assert_lanes(outs[0].pkt, 3)


# ====================================================================== forwarding
def test_routes_pinned_for_first_copies_only(arch: str) -> None:
    """Forwarding: `ina_route` with flags 0 pins first copies; fallbacks (COLLISION) and
    RESENDs follow the LPM route."""
    s = Bench(arch, workers=2, pool_size=1)
    s.t.add_route(1, port=30, flags=0)
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=1), 1)               # pinned? it is absorbed
    assert s.one(s.fragment(0, fan_in=2, node_id=9), 1).port == 30        # first copy, another node
    assert s.one(s.fragment(0, fan_in=2, fragment_id=2), 1).port == PS_PORT      # COLLISION
    assert s.one(s.fragment(0, fan_in=2, node_id=9, flags=Flags.RESEND), 1).port == PS_PORT


def test_reminder_routes_pinned_by_ingress_port(arch: str) -> None:
    """Forwarding: reminders (flags REMINDER) are steered by the port they came in on -- the
    pin catches them from the PS's side, not on their way back from the node."""
    s = Bench(arch, workers=2)
    s.t.add_route(1, port=30, node_id=7, flags=int(Flags.REMINDER), ingress_port=PS_PORT)
    r = s.reminder(node_id=7)
    assert s.one(r, 0, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=PS_PORT).port == 30
    assert s.one(r, 0, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=30).port == worker_port(1)



def test_relay_routes_pinned_by_flags_under_a_mask(arch: str) -> None:
    """Forwarding: a pin for RELAY whose flags mask leaves OVERFLOW out steers relays with and
    without OVERFLOW to another node, and neither a reminder nor a first copy of that node."""
    s = Bench(arch, workers=2)
    s.t.add_route(1, port=30, node_id=7, flags=int(Flags.RELAY), flags_mask=0xFF & ~int(Flags.OVERFLOW),
                  ingress_port=PS_PORT)
    relay = s.aggregate(0b11, fan_in=2, node_id=7)
    for flags in (Flags.RELAY, Flags.RELAY | Flags.OVERFLOW):
        assert s.one(relay.with_(flags=flags), 1, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=PS_PORT).port == 30
    assert s.one(s.reminder(node_id=7), 0, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=PS_PORT).port == worker_port(1)
    assert s.one(s.fragment(0, fan_in=2, node_id=7), 1).port == PS_PORT

def test_ecmp_member_depends_on_the_five_tuple_only(arch: str) -> None:
    """Forwarding: the ECMP member is picked by a CRC16 over the 5-tuple, so INA header fields
    (fragment, worker, flags) never move a flow to another member."""
    s = Bench(arch, workers=1)
    s.t.add_ecmp_route("10.9.0.0", 16, group=3, members=[(20, 0x0A), (21, 0x0B)])
    for sport in range(6):
        ports = {s.one(s.fragment(0, fan_in=2, node_id=9, fragment_id=f, flags=fl), 0,
                       dst_ip="10.9.1.1", sport=40000 + sport).port
                 for f in (1, 2, 3) for fl in (Flags(0), Flags.RESEND)}
        assert len(ports) == 1 and ports <= {20, 21}


# ====================================================================== rounds
def test_a_newer_round_reclaims_everything_of_the_stale_partial(arch: str) -> None:
    """Rounds: a newer round's packet reclaims a stale partial "exactly as it would claim a
    free aggregator": the stale sums, bitmap, count, fan-in, priority, PS address (and its
    saturation) are overwritten -- a reminder of the new round drains only the new state."""
    s = Bench(arch, workers=4, pool_size=1)
    s.add_ps2()
    s.absorbed(s.fragment(0, fan_in=4, priority=50, round=1), INT32_MAX)
    s.absorbed(s.fragment(1, fan_in=4, priority=50, round=1), 9)
    s.absorbed(s.fragment(1, fan_in=2, priority=3, round=2), 6, dst_ip=PS2_IP)
    out = s.remind(s.reminder(round=2))
    h = out.pkt.header
    assert out.pkt.dst_ip == PS2_IP and h.round == 2
    assert h.bitmap == 0b10 and h.count == 1 and h.fan_in == 2 and h.priority == 3
    assert h.flags == Flags.REMINDER | Flags.PREEMPTED
    assert_lanes(out.pkt, 6)


@pytest.mark.parametrize("old,new", [(0x7FFFFFFF, 0x80000000), (5, 0xFFFFFFFF)])
def test_rounds_compare_unsigned(arch: str, old: int, new: int) -> None:
    """`round`: "switches compare it unsigned": a round above 2^31 is newer (it reclaims), and
    the old round's late copy is then dropped."""
    s = Bench(arch, workers=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2, round=old), 100)
    s.absorbed(s.fragment(0, fan_in=2, round=new), 1)
    s.absorbed(s.fragment(1, fan_in=2, round=old), 100)
    pkt = s.one(s.fragment(1, fan_in=2, round=new), 2).pkt
    assert pkt.header.round == new and pkt.header.bitmap == 0b11
    assert_lanes(pkt, 3)


def test_a_stale_partial_of_another_key_is_a_collision_not_a_reclaim(arch: str) -> None:
    """Rounds, "When stale memory is reclaimed": only the *same key's* next round reclaims; a
    newer round of another key meets an ordinary collision (the stale partial stays)."""
    s = Bench(arch, workers=2, pool_size=1)
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=1, round=1), 1)
    before = s.state(0)
    out = s.one(s.fragment(0, fan_in=2, fragment_id=2, round=2), 1)
    assert out.pkt.header.flags == Flags.COLLISION
    assert s.state(0) == before


def test_a_reminder_of_another_round_leaves_a_held_aggregator_held(arch: str) -> None:
    """Rounds: "Reminders (rule 6) and releases (rule 7) act only on an aggregator of the same
    key *and* the same round" -- also on a held one."""
    s = _hold_bench(arch)
    before = s.state(0)
    out = s.remind(s.reminder(job_id=2, round=1))
    assert out.frame[12:] == hop(s.last_frame)
    assert s.state(0) == before


# ====================================================================== more nodes, pipes, routes
def test_two_node_ids_on_one_switch_never_mix(arch: str) -> None:
    """`node_id` and "Aggregator index": the owner key holds the node, so one switch serving
    nodes 1 and 2 (each with its pool) aggregates the same (job, sub-model, fragment) twice,
    apart."""
    s = Bench(arch, workers=4, result="ps")
    s.t.add_node(2, pool_base=64, pool_size=64)
    s.t.level_to_ps(1, 2)
    s.absorbed(s.fragment(0, fan_in=2, node_id=1), 1)
    s.absorbed(s.fragment(2, fan_in=2, node_id=2), 100)
    one = s.one(s.fragment(1, fan_in=2, node_id=1), 2).pkt
    two = s.one(s.fragment(3, fan_in=2, node_id=2), 200).pkt
    assert (one.header.node_id, one.header.bitmap) == (1, 0b0011)
    assert (two.header.node_id, two.header.bitmap) == (2, 0b1100)
    assert_lanes(one, 3)
    assert_lanes(two, 300)


def test_a_node_id_of_another_pipe_passes_untouched(arch: str) -> None:
    """Switch behaviour, preamble: `node_id` must match `ina_node` for (node id, ingress pipe);
    on a pipe without that entry the fragment is not aggregated."""
    s = Bench(arch, workers=2)
    s.t.set_port_pipe(worker_port(1), 1)
    s.absorbed(s.fragment(0, fan_in=2), 1)
    out = s.one(s.fragment(1, fan_in=2), 2)
    assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)


def test_a_workers_pinned_route_does_not_catch_the_aggregate_it_completes(arch: str) -> None:
    """`worker_id` ("aggregates carry 255, so explicit routes can tell them from worker
    traffic") and `ina_route`: worker 1's pin takes its first copies, not the result to the PS
    that its fragment completes."""
    s = Bench(arch, workers=2, result="ps")
    s.t.add_route(1, port=30, worker_id=1)
    assert s.one(s.fragment(1, fan_in=2, node_id=9), 1).port == 30
    s.absorbed(s.fragment(0, fan_in=2), 1)
    out = s.one(s.fragment(1, fan_in=2), 1)
    assert out.port == PS_PORT and out.pkt.header.worker_id == WORKER_AGGREGATE
