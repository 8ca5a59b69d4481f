"""An audit of docs/protocol.md against both data-plane programs: packet scenarios written from
the document alone (its section or rule number is cited in each test), run on the v1model
program (K = 64) and the TNA program (K = 32) in p4sim.

Every frame a switch emits is checked against the encapsulation rules (IPv4 header checksum
valid, UDP checksum 0 or valid, lengths intact) by :meth:`Bench.tx`; the tests then check the
fields the rule under test speaks about. Where the document says the two programs differ, the
test checks each as documented.
"""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import INT32_MAX, INT32_MIN, WORKER_AGGREGATE, Flags, InaHeader, parse_frame

from .ina_harness import PS_IP, PS_PORT, random_lanes, worker_ip, worker_port
from .protocol_bench import PS2_IP, Bench, arch, assert_lanes, exact_sum, hop, udp_checksum_of  # noqa: F401


# ====================================================================== Encapsulation
@pytest.mark.parametrize("variant", [
    pytest.param(dict(dport=47101), id="udp-port-47101"),
    pytest.param(dict(ihl=6), id="ipv4-options"),
    pytest.param(dict(frag_offset=8), id="ipv4-fragment"),
])
def test_only_option_less_unfragmented_udp_47100_is_ina(arch: str, variant: dict[str, int]) -> None:
    """Encapsulation: INA is IPv4 (IHL 5) / UDP dst 47100; any other UDP or IPv4 traffic is
    forwarded normally: never aggregated (both halves of a fan-in-2 fragment leave), byte for
    byte as a router forwards it (with options: the checksum updated for the TTL alone)."""
    s = Bench(arch, workers=2)
    for w in (0, 1):
        out = s.one(s.fragment(w, fan_in=2), 5 + w, **variant)
        assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)


@pytest.mark.parametrize("version", [1, 3, 15])
def test_another_version_is_forwarded_as_plain_udp(arch: str, version: int) -> None:
    """INA header, `version`: a switch parses no lanes of another version and forwards the
    packet as plain UDP (untouched, by its IPv4 route)."""
    s = Bench(arch, workers=2)
    for w in (0, 1):
        out = s.one(s.fragment(w, fan_in=2), 9, version=version)
        assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)


def test_another_version_ignores_pinned_ina_routes(arch: str) -> None:
    """INA header, `version` ("forwards the packet as plain UDP") and "Switch behaviour",
    forwarding: `ina_route` pins INA packets; a packet of another version is plain UDP, so
    only `ipv4_lpm` may route it."""
    s = Bench(arch, workers=1)
    s.t.add_route(1, port=30)                           # everything of job 1
    assert s.one(s.fragment(0, fan_in=2, node_id=9), 1).port == 30
    out = s.one(s.fragment(0, fan_in=2, node_id=9), 1, version=1)
    assert out.port == PS_PORT


def test_a_header_only_frame_is_forwarded_as_plain_udp(arch: str) -> None:
    """Encapsulation, header-only frames: a switch parses no lanes of an INA frame of UDP length
    32 (the PS's query) and forwards it as plain UDP — untouched, by its IPv4 route (no
    `ina_route` pin), never aggregated, even with this switch's node id."""
    s = Bench(arch, workers=2)
    s.t.add_route(1, port=30)                           # everything of job 1
    query = InaHeader(1, 0, 3, 7, 1, 0, 0, 0, 0, Flags.REMINDER, 0)
    no_lanes = np.zeros(0, np.int32)
    for header in (query, s.fragment(0, fan_in=2), s.fragment(1, fan_in=2)):
        out = s.one(header, no_lanes)
        assert len(s.last_frame) == 14 + 20 + 32 and out.frame[16:18] == (52).to_bytes(2, "big")
        assert out.port == PS_PORT and out.frame[12:] == hop(s.last_frame)
    got = parse_frame(s.one(query, no_lanes).frame, s.lanes)
    assert got.header == query and not got.lanes.any()          # hosts read a query's lanes as zeros


@pytest.mark.parametrize("ttl,forwarded", [(0, False), (1, False), (2, True)])
def test_ttl_at_most_one_drops(arch: str, ttl: int, forwarded: bool) -> None:
    """Switch behaviour, forwarding: a unicast packet's TTL is decremented, and TTL <= 1 drops
    it. For INA packets that pass (another node's) and for plain UDP alike."""
    s = Bench(arch, workers=1)
    for kw in (dict(), dict(dport=9999)):
        outs = s.tx(s.fragment(0, fan_in=2, node_id=9), 3, ttl=ttl, **kw)
        assert len(outs) == int(forwarded)
        if forwarded:
            assert outs[0].frame[12:] == hop(s.last_frame) and outs[0].frame[22] == ttl - 1


def test_a_unicast_result_has_its_ttl_decremented_and_dropped_at_one(arch: str) -> None:
    """Switch behaviour, forwarding: a complete aggregate sent to the PS (rule 4, `to_ps`) is
    forwarded like any packet: TTL - 1, and a completing packet with TTL 1 produces nothing."""
    s = Bench(arch, workers=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2), 1)
    assert s.one(s.fragment(1, fan_in=2), 1, ttl=9).pkt.ttl == 8
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=8), 1)
    assert s.tx(s.fragment(1, fan_in=2, fragment_id=8), 1, ttl=1) == []


def test_multicast_result_replicas_keep_the_ttl(arch: str) -> None:
    """Switch behaviour, forwarding: "the replicas of a multicast result are not routed and
    keep the TTL of the packet that completed the aggregate" (so TTL 1 does not drop them)."""
    s = Bench(arch, workers=2)
    s.absorbed(s.fragment(0, fan_in=2), 1)
    outs = s.tx(s.fragment(1, fan_in=2), 1, ttl=1)
    assert len(outs) == 2 and all(o.pkt.ttl == 1 for o in outs)


# ====================================================================== rule 1
def test_arriving_complete_aggregate_leaves_without_touching_memory(arch: str) -> None:
    """Rule 1: count >= fan_in on arrival is a completion "without touching memory": even with
    a partial of the same key in the aggregator, the packet leaves as the result (its own lanes,
    bitmap, count) and the partial stays as it was."""
    s = Bench(arch, workers=4)
    s.absorbed(s.fragment(0, fan_in=4), 100)
    i = s.used()
    before = s.state(i)
    outs = s.tx(s.aggregate(0b1110, fan_in=3), 7)
    assert sorted(o.port for o in outs) == [worker_port(w) for w in range(4)]
    for o in outs:
        h = o.pkt.header
        assert Flags.RESULT in h.flags and h.bitmap == 0b1110 and h.count == 3 and h.fan_in == 3
        assert_lanes(o.pkt, 7)
    assert s.state(i) == before



def test_a_relay_is_multicast_as_the_result(arch: str) -> None:
    """Flag RELAY with rule 1: the PS's complete result (count = fan_in = the job's workers,
    worker 255, RESULT clear), addressed to a host beyond the node, leaves the `to_multicast`
    node as every worker's RESULT, RELAY kept, lanes as sent, memory untouched (a partial of the
    same key stays); the replicas' source is the address the relay was sent to."""
    s = Bench(arch, workers=3)
    s.absorbed(s.fragment(0, fan_in=3), 100)
    i = s.used()
    before = s.state(i)
    relay = s.aggregate(0b111, fan_in=3).with_(flags=Flags.RELAY)
    outs = s.tx(relay, -9, src_ip=PS_IP, dst_ip=worker_ip(1), in_port=PS_PORT)
    assert sorted(o.port for o in outs) == [worker_port(w) for w in range(3)]
    for o in outs:
        h = o.pkt.header
        assert h.flags == Flags.RESULT | Flags.RELAY and h.bitmap == 0b111 and h.count == h.fan_in == 3
        assert h.node_id == s.node_id and o.pkt.src_ip == worker_ip(1)
        assert_lanes(o.pkt, -9)
    assert s.state(i) == before

@pytest.mark.parametrize("fan_in,count", [(0, 1), (1, 1), (2, 5)])
def test_count_at_or_above_fan_in_completes_on_arrival(arch: str, fan_in: int, count: int) -> None:
    """Rule 1 with `to_ps`: a packet whose count already reaches its fan-in (fan-in 0 too)
    leaves at once as a RESULT to the PS, lanes unchanged, and no aggregator is claimed."""
    s = Bench(arch, workers=1, result="ps", pool_size=1)
    h = s.fragment(0, fan_in=fan_in).with_(count=count)
    out = s.one(h, -3)
    assert out.port == PS_PORT and out.pkt.header.flags == Flags.RESULT
    assert out.pkt.header.count == count and out.pkt.header.bitmap == 1
    assert_lanes(out.pkt, -3)
    s.assert_free(0)


def test_a_completion_on_arrival_carries_worker_id_255(arch: str) -> None:
    """Rule 1 ("handled as step 4's completion") with rule 4 ("worker_id = 255") and the
    `worker_id` field ("Partial or complete aggregates carry 255"): a worker's fan-in-1
    fragment is a complete aggregate when it leaves."""
    s = Bench(arch, workers=2, result="ps")
    out = s.one(s.fragment(1, fan_in=1), 4)
    assert Flags.RESULT in out.pkt.header.flags
    assert out.pkt.header.worker_id == WORKER_AGGREGATE


# ====================================================================== rules 2-4
def test_duplicate_on_a_partial_aggregator_cannot_complete_it(arch: str) -> None:
    """Rule 3: a first copy repeated while the aggregator holds {0, 1, 2} of fan-in 4 is a
    duplicate: dropped, sums untouched, and the count does not reach the fan-in through it;
    worker 3 then completes with the exact sum."""
    s = Bench(arch, workers=4, result="ps")
    for w in range(3):
        s.absorbed(s.fragment(w, fan_in=4), 10 ** w)
    s.absorbed(s.fragment(1, fan_in=4), 555)
    s.absorbed(s.aggregate(0b0011, fan_in=4), 555)
    pkt = s.one(s.fragment(3, fan_in=4), 1000).pkt
    assert pkt.header.bitmap == 0b1111 and pkt.header.count == 4
    assert_lanes(pkt, 1111)


def test_partials_merge_into_one_aggregate(arch: str) -> None:
    """Rules 2-4 with partials: a partial claims, a disjoint partial merges; counts are added
    (not bits counted): {0} + {2, 3} + {1} complete fan-in 4 with count 4."""
    s = Bench(arch, workers=4, result="ps")
    s.absorbed(s.fragment(0, fan_in=4), 1)
    s.absorbed(s.aggregate(0b1100, fan_in=4), 20)
    pkt = s.one(s.fragment(1, fan_in=4), 300).pkt
    assert pkt.header.bitmap == 0b1111 and pkt.header.count == 4
    assert_lanes(pkt, 321)


def test_the_result_carries_the_merged_count(arch: str) -> None:
    """Rule 4: the packet leaves with "the merged bitmap and count" -- also when the merged
    count overshoots the fan-in ({0, 1} + {2, 3, 4} with fan-in 4: count 5), except on TNA,
    which stores fan-in - count and so reports the fan-in (`count` field)."""
    s = Bench(arch, workers=5, result="ps")
    s.absorbed(s.aggregate(0b00011, fan_in=4), 1)
    pkt = s.one(s.aggregate(0b11100, fan_in=4), 2).pkt
    assert pkt.header.bitmap == 0b11111 and pkt.header.count == (5 if arch == "v1model" else 4)


def test_complete_aggregate_fields_and_freed_aggregator(arch: str) -> None:
    """Rule 4 (`to_ps`): the result keeps the key, round, fan-in and its IPv4 addressing, has
    RESULT only, worker_id 255, the merged bitmap/count and the sums; UDP checksum 0 after the
    lane rewrite; every aggregator field is 0 afterwards."""
    s = Bench(arch, workers=3, result="ps")
    rng = np.random.default_rng(11)
    g = [random_lanes(rng, s.lanes) for _ in range(3)]
    for w in (2, 0):
        s.absorbed(s.fragment(w, fan_in=3, priority=9, round=77), g[w])
    i = s.used()
    out = s.one(s.fragment(1, fan_in=3, priority=9, round=77), g[1])
    h = out.pkt.header
    assert out.port == PS_PORT and out.pkt.dst_ip == PS_IP and out.pkt.src_ip == worker_ip(1)
    assert h.key() == (1, 1, 3, 7) and h.round == 77 and h.fan_in == 3
    assert h.flags == Flags.RESULT and h.worker_id == WORKER_AGGREGATE
    assert h.bitmap == 0b111 and h.count == 3
    assert_lanes(out.pkt, exact_sum(g))
    assert udp_checksum_of(out.frame) == 0
    s.assert_free(i)                      # a level to the PS keeps nothing (rule 8)


def test_multicast_replicas_are_rewritten_per_worker(arch: str) -> None:
    """Rule 4 `to_multicast` and table `result_rewrite`: each replica goes to its worker's port
    with that worker's IPv4 and MAC destination, the PS (the original destination) as source,
    the egress port's `smac` as source MAC; identical INA header and lanes."""
    s = Bench(arch, workers=3)
    for w in range(3):
        s.t.set_smac(worker_port(w), 0x0C0000000000 + w)
    s.absorbed(s.fragment(0, fan_in=3), 1)
    s.absorbed(s.fragment(1, fan_in=3), 2)
    outs = s.tx(s.fragment(2, fan_in=3), 3)
    assert sorted(o.port for o in outs) == [1, 2, 3]
    for o in outs:
        w = o.port - 1
        assert o.pkt.dst_ip == worker_ip(w) and o.pkt.src_ip == PS_IP
        assert o.pkt.dst_mac == (0x020000000000 + w).to_bytes(6, "big")
        assert o.pkt.src_mac == (0x0C0000000000 + w).to_bytes(6, "big")
        assert o.pkt.header == outs[0].pkt.header and Flags.RESULT in o.pkt.header.flags
        assert_lanes(o.pkt, 6)
        assert udp_checksum_of(o.frame) == 0


def test_to_node_sends_the_partial_to_the_next_level(arch: str) -> None:
    """Rule 4 `to_node(next_node, next_fan_in)`: no RESULT, node_id and fan_in rewritten, the
    partial routed by its IPv4 destination (the PS) -- and `ina_route` sees the rewritten node
    ("per next node")."""
    s = Bench(arch, workers=2, result="none")
    s.t.level_to_node(1, 1, next_node=2, next_fan_in=6)
    s.t.add_route(1, port=30, node_id=2, worker_id=WORKER_AGGREGATE)
    s.absorbed(s.fragment(0, fan_in=2), 1)
    out = s.one(s.fragment(1, fan_in=2), 2)
    h = out.pkt.header
    assert out.port == 30 and h.flags == Flags(0)
    assert h.node_id == 2 and h.fan_in == 6 and h.count == 2 and h.bitmap == 0b11
    assert h.worker_id == WORKER_AGGREGATE and out.pkt.dst_ip == PS_IP
    assert_lanes(out.pkt, 3)


# ====================================================================== saturation
def test_negative_saturation_is_flagged(arch: str) -> None:
    """Rule 3 / `OVERFLOW`: lanes add with saturation at the negative bound too, and the
    result is flagged OVERFLOW."""
    s = Bench(arch, workers=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2), INT32_MIN + 5)
    pkt = s.one(s.fragment(1, fan_in=2), -6).pkt
    assert Flags.OVERFLOW in pkt.header.flags
    assert_lanes(pkt, INT32_MIN)


@pytest.mark.parametrize("bound", [INT32_MAX, INT32_MIN])
def test_a_sum_exactly_at_a_bound(arch: str, bound: int) -> None:
    """Registers, `agg_overflow`: v1model flags only a saturation; on TNA "egress flags
    aggregates with a lane at a bound", so an exact sum at the bound is flagged there."""
    s = Bench(arch, workers=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2), bound - (1 if bound > 0 else -1))
    pkt = s.one(s.fragment(1, fan_in=2), 1 if bound > 0 else -1).pkt
    assert_lanes(pkt, bound)
    assert (Flags.OVERFLOW in pkt.header.flags) == (arch == "tna")


def test_a_saturated_lane_after_a_later_addition(arch: str) -> None:
    """Registers, `agg_overflow`: MAX-1, +10, -20. v1model keeps adding and keeps the flag
    (MAX-20, flagged); TNA's paired lanes saturate without sticking and keep no flag: the sum
    came back in range, MAX-20, and leaves unflagged."""
    s = Bench(arch, workers=3, result="ps")
    s.absorbed(s.fragment(0, fan_in=3), INT32_MAX - 1)
    s.absorbed(s.fragment(1, fan_in=3), 10)
    pkt = s.one(s.fragment(2, fan_in=3), -20).pkt
    assert (Flags.OVERFLOW in pkt.header.flags) == (arch == "v1model")
    assert_lanes(pkt, INT32_MAX - 20)


@pytest.mark.parametrize("how", ["reminder", "preemption"])
def test_a_saturated_partial_leaves_flagged(arch: str, how: str) -> None:
    """Rules 5 and 6, `OVERFLOW`: a partial that saturated is flagged OVERFLOW when a reminder
    drains it or a preemption evicts it (the PS must rescale)."""
    s = Bench(arch, workers=3, pool_size=1, preemption=True)
    s.absorbed(s.fragment(0, fan_in=3, priority=1), INT32_MAX)
    s.absorbed(s.fragment(1, fan_in=3, priority=1), 1)
    if how == "reminder":
        out = s.remind(s.reminder())
    else:
        out = s.one(s.fragment(2, fan_in=3, fragment_id=9, priority=50), 0)
    assert Flags.PREEMPTED in out.pkt.header.flags and Flags.OVERFLOW in out.pkt.header.flags
    assert_lanes(out.pkt, INT32_MAX)


@pytest.mark.parametrize("first", ["partial", "fragment"])
def test_overflow_of_a_lower_level_partial_reaches_the_result(arch: str, first: str) -> None:
    """`OVERFLOW` with multi-level rule 4: a partial flagged OVERFLOW by the level below (its
    lane at the bound) is absorbed here. v1model keeps the flag in the aggregator, so the result
    says so whatever the order; TNA keeps no flag and its lanes do not stick at a bound: the
    later additions moved the lane off it, so the result leaves unflagged in either order."""
    s = Bench(arch, workers=4, result="ps")
    partial = s.aggregate(0b0110, fan_in=4).with_(flags=Flags.OVERFLOW)
    if first == "partial":
        s.absorbed(partial, INT32_MAX)
        s.absorbed(s.fragment(0, fan_in=4), -5)
    else:
        s.absorbed(s.fragment(0, fan_in=4), -5)
        s.absorbed(partial, INT32_MAX)
    pkt = s.one(s.fragment(3, fan_in=4), 1).pkt
    assert (Flags.OVERFLOW in pkt.header.flags) == (arch == "v1model")


# ====================================================================== rule 5
def test_preemption_evicts_to_the_evicted_jobs_ps_with_its_state(arch: str) -> None:
    """Rule 5, packet swapping across jobs: the evicted partial leaves with its key, round,
    bitmap, count, fan-in, priority and sums, worker_id 255, PREEMPTED and not the COLLISION
    the arriving packet carried, to the evicted job's PS (IPv4 destination and route); the
    aggregator now holds the arriving packet's fan-in, priority and PS address (a reminder
    drains it there)."""
    s = Bench(arch, workers=4, pool_size=1, job_id=1)
    s.add_ps2()
    s.add_job(2, preemption=True, workers=4)
    s.absorbed(s.fragment(0, fan_in=4, job_id=1, submodel_id=5, fragment_id=6, priority=30, round=3), 7)
    s.absorbed(s.fragment(2, fan_in=4, job_id=1, submodel_id=5, fragment_id=6, priority=30, round=3), 8)
    arriving = s.fragment(1, fan_in=2, job_id=2, priority=31, round=90, flags=Flags.COLLISION)
    out = s.one(arriving, 100, dst_ip=PS2_IP)
    h = out.pkt.header
    assert out.port == PS_PORT and out.pkt.dst_ip == PS_IP
    assert h.key() == (1, 1, 5, 6) and h.round == 3
    assert h.bitmap == 0b101 and h.count == 2 and h.fan_in == 4 and h.priority == 30
    assert h.flags == Flags.PREEMPTED and h.worker_id == WORKER_AGGREGATE
    assert_lanes(out.pkt, 15)
    assert udp_checksum_of(out.frame) == 0
    drained = s.remind(s.reminder(job_id=2, round=90)).pkt
    assert drained.dst_ip == PS2_IP and drained.header.fan_in == 2 and drained.header.priority == 31
    assert drained.header.bitmap == 0b10 and drained.header.count == 1
    assert_lanes(drained, 100)


def test_downgrade_halves_down_to_zero_and_equal_priority_never_swaps(arch: str) -> None:
    """Rule 5: priority must be strictly greater; each failed contest halves the holder's
    priority, p >> 1, and 0 stays 0 -- the loser leaves flagged COLLISION, unchanged."""
    s = Bench(arch, workers=2, pool_size=1, preemption=True)
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=1, priority=9), 1)
    for held in (9, 4, 2, 1, 0, 0):
        assert s.register("agg_priority", 0) == held
        h = s.fragment(1, fan_in=2, fragment_id=2, priority=held)
        out = s.one(h, 5)
        assert out.pkt.header == h.with_(flags=Flags.COLLISION)
        assert_lanes(out.pkt, 5)
    assert s.register("agg_priority", 0) == 0


def test_a_merge_renews_the_holders_priority(arch: str) -> None:
    """Rule 3: a same-key contribution of a preemptive job sets the aggregator's priority to
    its own, undoing the halving of failed contests (rule 5), so a contender that would have
    beaten the halved holder loses again."""
    s = Bench(arch, workers=3, pool_size=1, preemption=True)
    s.absorbed(s.fragment(0, fan_in=3, fragment_id=1, priority=8), 1)
    loser = s.fragment(0, fan_in=3, fragment_id=2, priority=3)
    assert s.one(loser, 2).pkt.header.flags == Flags.COLLISION
    assert s.register("agg_priority", 0) == 4                  # halved by the failed contest
    s.absorbed(s.fragment(1, fan_in=3, fragment_id=1, priority=8), 3)
    assert s.register("agg_priority", 0) == 8                  # renewed by the merge
    contender = s.fragment(1, fan_in=3, fragment_id=2, priority=5)
    assert s.one(contender, 4).pkt.header.flags == Flags.COLLISION   # 5 > 4 would have won
    assert s.register("agg_priority", 0) == 4


def test_priority_one_beats_a_holder_at_zero(arch: str) -> None:
    """Rule 5: `priority > agg.priority` -- 1 > 0 wins the aggregator."""
    s = Bench(arch, workers=2, pool_size=1, preemption=True)
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=1, priority=0), 1)
    out = s.one(s.fragment(1, fan_in=2, fragment_id=2, priority=1), 2)
    assert out.pkt.header.flags == Flags.PREEMPTED and out.pkt.header.fragment_id == 1
    assert s.register("agg_priority", 0) == 1


def test_preemption_is_the_arriving_jobs_setting(arch: str) -> None:
    """Rule 5: "If the arriving packet's job has preemption enabled": a job without it neither
    swaps nor downgrades a preemptive job's aggregator, whatever its priority."""
    s = Bench(arch, workers=2, pool_size=1, preemption=True, job_id=1)
    s.add_job(2, preemption=False, workers=2)
    s.absorbed(s.fragment(0, fan_in=2, job_id=1, priority=6), 1)
    out = s.one(s.fragment(0, fan_in=2, job_id=2, priority=255), 2)
    assert out.pkt.header.flags == Flags.COLLISION and out.pkt.header.job_id == 2
    assert s.register("agg_priority", 0) == 6


@pytest.mark.parametrize("level", ["to_node", "to_multicast", "to_ps"])
def test_a_collided_fragment_tries_the_next_level(arch: str, level: str) -> None:
    """Rule 5, last sentences: a collided fragment continues unaggregated, flagged COLLISION;
    `to_node(next, fan_in)` rewrites its node_id and fan_in (nothing else: its worker_id,
    count, bitmap and lanes stay); at the last level (`to_multicast` or `to_ps`) it goes to the
    PS by unicast, unchanged but for the flag."""
    s = Bench(arch, workers=2, pool_size=1, result={"to_node": "none", "to_ps": "ps"}.get(level, "multicast"))
    if level == "to_node":
        s.t.level_to_node(1, 1, next_node=4, next_fan_in=8)
    s.absorbed(s.fragment(0, fan_in=2, fragment_id=1), 1)
    h = s.fragment(1, fan_in=2, fragment_id=2)
    out = s.one(h, 42)
    expected = h.with_(flags=Flags.COLLISION)
    if level == "to_node":
        expected = expected.with_(node_id=4, fan_in=8)
    assert out.port == PS_PORT and out.pkt.dst_ip == PS_IP and out.pkt.header == expected
    assert_lanes(out.pkt, 42)


def test_a_collided_fragment_is_aggregated_at_the_next_node(arch: str) -> None:
    """Rule 5 ("so it can still be aggregated there") and rule 4: at the next node a COLLISION
    fragment is an ordinary contribution, and the result it completes is a RESULT."""
    lower = Bench(arch, workers=2, pool_size=1, result="none")
    lower.t.level_to_node(1, 1, next_node=2, next_fan_in=2)
    lower.absorbed(lower.fragment(0, fan_in=2, fragment_id=1), 1)
    fallbacks = [lower.one(lower.fragment(w, fan_in=2, fragment_id=2), 10 * (w + 1)).pkt for w in (0, 1)]
    upper = Bench(arch, workers=2, node_id=2, result="ps")
    upper.absorbed(fallbacks[0].header, fallbacks[0].lanes)
    out = upper.one(fallbacks[1].header, fallbacks[1].lanes, in_port=9)
    assert Flags.RESULT in out.pkt.header.flags and out.pkt.header.bitmap == 0b11
    assert_lanes(out.pkt, 30)


def test_a_result_is_not_flagged_collision(arch: str) -> None:
    """Flags: COLLISION means "the fragment ... continues, unaggregated, to its PS"; a complete
    aggregate (rule 4) is aggregated, so a result completed by a fragment that collided at the
    level below (rule 5, `to_node`) must not carry COLLISION."""
    s = Bench(arch, workers=2, node_id=2, result="ps")
    s.absorbed(s.fragment(0, fan_in=2), 1)
    out = s.one(s.fragment(1, fan_in=2, flags=Flags.COLLISION), 2)
    assert out.pkt.header.flags == Flags.RESULT


