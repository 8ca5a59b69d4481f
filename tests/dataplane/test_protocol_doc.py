"""An audit of docs/protocol.md against both data-plane programs: packet scenarios written from
the document alone (its section or rule number is cited in each test), run on the v1model
program (K = 64) and the TNA program (K = 32) in p4sim.

Every frame a switch emits is checked against the encapsulation rules (IPv4 header checksum
valid, UDP checksum 0 or valid, lengths intact) by :meth:`Bench.tx`; the tests then check the
fields the rule under test speaks about. Where the document says the two programs differ, the
test checks each as documented.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np
import pytest

from hostlib.protocol import (INA_UDP_PORT, INT32_MAX, INT32_MIN, WORKER_AGGREGATE, Flags, InaHeader, InaPacket,
                              ProtocolError, ip_to_int, lanes_to_bytes, parse_frame)

from .ina_harness import PS_IP, PS_PORT, InaSwitch, random_lanes, worker_ip, worker_port

ARCHS = ["v1model", "tna"]
PS2_IP, PS2_PORT = "10.0.2.1", 11          # a second job's parameter server
ALL_ONES = 0xFFFFFFFF


@pytest.fixture(params=ARCHS)
def arch(request: pytest.FixtureRequest) -> str:
    return request.param


# ---------------------------------------------------------------------- wire helpers
def _csum16(data: bytes) -> int:
    """RFC 1071's checksum, written apart from hostlib's: the end-around-carry sum of 16-bit
    words is their sum mod 0xFFFF (a non-zero multiple of 0xFFFF folds to 0xFFFF)."""
    words = np.frombuffer(data + b"\0" * (len(data) % 2), dtype=">u2")
    total = int(words.sum(dtype=np.uint64))
    folded = total % 0xFFFF or (0xFFFF if total else 0)
    return 0xFFFF - folded


def _udp_checksum(ip_hdr: bytes, udp: bytes) -> int:
    pseudo = ip_hdr[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    c = _csum16(pseudo + udp[:6] + b"\0\0" + udp[8:])
    return c or 0xFFFF


def make_frame(header: InaHeader, lanes: np.ndarray, *, src_ip: str, dst_ip: str, ttl: int = 64,
               dport: int = INA_UDP_PORT, sport: int = INA_UDP_PORT, version: int = 2, ihl: int = 5,
               frag_offset: int = 0) -> bytes:
    """Ethernet/IPv4/UDP/INA/lanes with a *valid, non-zero* UDP checksum (so a switch that
    rewrites the payload must zero it, and one that does not must keep it), and the knobs the
    parser rules of "Encapsulation" depend on."""
    ina = bytes([version << 4]) + header.pack()[1:]
    payload = ina + lanes_to_bytes(lanes)
    udp_len = 8 + len(payload)
    options = b"\x01" * (4 * (ihl - 5))                     # NOPs
    total = 4 * ihl + udp_len
    ip_hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 0, frag_offset, ttl, 17, 0,
                         ip_to_int(src_ip).to_bytes(4, "big"), ip_to_int(dst_ip).to_bytes(4, "big")) + options
    ip_hdr = ip_hdr[:10] + struct.pack("!H", _csum16(ip_hdr)) + ip_hdr[12:]
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0) + payload
    udp = udp[:6] + struct.pack("!H", _udp_checksum(ip_hdr, udp)) + udp[8:]
    return (0x0B0000000000).to_bytes(6, "big") + (0x0A0000000000).to_bytes(6, "big") + b"\x08\x00" + ip_hdr + udp


def hop(frame: bytes) -> bytes:
    """What a plain router makes of ``frame`` from the EtherType on: TTL - 1, IPv4 checksum
    recomputed, everything else as it was (the MAC addresses are the next hop's business)."""
    b = bytearray(frame[12:])
    b[2 + 8] -= 1
    ihl = (b[2] & 0x0F) * 4
    b[2 + 10:2 + 12] = b"\0\0"
    b[2 + 10:2 + 12] = struct.pack("!H", _csum16(bytes(b[2:2 + ihl])))
    return bytes(b)


def udp_checksum_of(frame: bytes) -> int:
    ihl = (frame[14] & 0x0F) * 4
    return int.from_bytes(frame[14 + ihl + 6:14 + ihl + 8], "big")


def check_wire(frame: bytes) -> None:
    """The encapsulation rules every emitted frame obeys ("Encapsulation")."""
    assert frame[12:14] == b"\x08\x00"
    ihl = (frame[14] & 0x0F) * 4
    ip_hdr = frame[14:14 + ihl]
    assert _csum16(ip_hdr) == 0, "IPv4 header checksum not recomputed"
    assert int.from_bytes(ip_hdr[2:4], "big") == len(frame) - 14
    if ip_hdr[9] == 17:
        udp = frame[14 + ihl:]
        assert int.from_bytes(udp[4:6], "big") == len(udp)
        csum = int.from_bytes(udp[6:8], "big")
        assert csum == 0 or csum == _udp_checksum(ip_hdr, udp), "stale UDP checksum after a rewrite"


class Out(NamedTuple):
    port: int
    frame: bytes
    pkt: InaPacket | None          # None: not a version-2 INA frame


class Bench(InaSwitch):
    """The harness switch, sending frames built by :func:`make_frame` and checking every frame
    that leaves. ``result="none"``: the job gets no `ina_level` entry (a test installs it)."""

    last_frame: bytes = b""                             # the frame the last tx sent

    def add_job(self, job_id: int, preemption: bool, workers: int, result: str = "multicast") -> None:
        if result == "none":
            self.t.add_job(job_id, preemption)
        else:
            super().add_job(job_id, preemption, workers, result)

    def tx(self, header: InaHeader, lanes: np.ndarray | int = 0, *, in_port: int | None = None,
           src_ip: str | None = None, dst_ip: str = PS_IP, **frame_kw: int) -> list[Out]:
        if isinstance(lanes, (int, np.integer)):
            lanes = np.full(self.lanes, lanes, np.int32)
        w = header.worker_id if header.worker_id < 32 else 0
        self.last_frame = make_frame(header, lanes, src_ip=src_ip or worker_ip(w), dst_ip=dst_ip, **frame_kw)
        outs = []
        for port, frame in self.sw.process(worker_port(w) if in_port is None else in_port, self.last_frame):
            check_wire(frame)
            try:
                pkt: InaPacket | None = parse_frame(frame, self.lanes)
            except ProtocolError:
                pkt = None
            outs.append(Out(port, frame, pkt))
        return outs

    def one(self, header: InaHeader, lanes: np.ndarray | int = 0, **kw) -> Out:
        """Send; exactly one frame must leave."""
        outs = self.tx(header, lanes, **kw)
        assert len(outs) == 1, [(o.port, o.pkt and o.pkt.header) for o in outs]
        return outs[0]

    def absorbed(self, header: InaHeader, lanes: np.ndarray | int = 0, **kw) -> None:
        assert self.tx(header, lanes, **kw) == []

    def aggregate(self, worker_bits: int, fan_in: int, **kw) -> InaHeader:
        """A partial aggregate (worker_id 255) holding ``worker_bits``, as a lower level sends it."""
        return self.fragment(0, fan_in, **kw).with_(worker_id=WORKER_AGGREGATE, bitmap=worker_bits,
                                                    count=bin(worker_bits).count("1"))

    def reminder(self, **kw) -> InaHeader:
        """A PS's reminder: the key, REMINDER, everything else zero ("Reminders and queries")."""
        return self.fragment(0, 0, flags=Flags.REMINDER, **kw).with_(count=0, bitmap=0,
                                                                        worker_id=WORKER_AGGREGATE)

    def remind(self, header: InaHeader, dst_ip: str = worker_ip(0)) -> Out:
        """Send a reminder from the PS port to a ``reminder_via`` host (a worker here)."""
        return self.one(header, 0, src_ip=PS_IP, dst_ip=dst_ip, in_port=PS_PORT)

    def used(self) -> int:
        """The one aggregator in use."""
        idx = [i for i in range(64) if any(self.register(r, i) for r in ("agg_bitmap", "agg_round", "agg_ps_addr"))]
        assert len(idx) == 1, idx
        return idx[0]

    def state(self, index: int) -> dict[str, int]:
        """Every register cell of aggregator ``index``, lanes included, by short name."""
        cells = {}
        for name in self.sw.info.registers:
            short = name.rsplit(".", 1)[-1]
            if short == "agg_lanes":                    # v1model: one array, index * K + lane
                cells.update({f"lane_{k}": self.sw.register_read(name, index * self.lanes + k)
                              for k in range(self.lanes)})
            elif short.startswith("lane_"):             # TNA: lane_j holds lanes j and K/2 + j
                j = int(short[5:])
                cells[f"lane_{j}"], cells[f"lane_{j + self.lanes // 2}"] = self.sw.register_read(name, index)
            else:
                cells[short] = self.sw.register_read(name, index)
        return cells

    def assert_free(self, index: int) -> None:
        """Rule 4's "freed (all fields 0)"; on TNA the lanes of an aggregator a completion
        freed keep stale sums (the next claim overwrites them)."""
        stale = self.arch == "tna"
        assert {r: v for r, v in self.state(index).items() if v and not (stale and r.startswith("lane_"))} == {}

    def assert_completed(self, index: int, bitmap: int, lanes: np.ndarray) -> None:
        """What a completion at a multicast level leaves: v1model keeps the result (rule 8: key,
        round, bitmap, count = fan-in and the sums stay until a claim takes the aggregator);
        TNA frees it (rule 4)."""
        if self.arch == "tna":
            self.assert_free(index)
            return
        st = self.state(index)
        n = bin(bitmap).count("1")
        assert st["agg_owner"] != 0 and st["agg_round"] != 0
        assert (st["agg_bitmap"], st["agg_count"], st["agg_fan_in"]) == (bitmap, n, n)
        kept = np.array([st[f"lane_{k}"] for k in range(self.lanes)], dtype=np.uint32).view(np.int32)
        assert np.array_equal(kept.astype(np.int64), np.asarray(lanes, np.int64))

    def add_ps2(self) -> None:
        self.t.add_lpm(PS2_IP, 32, PS2_PORT, dmac=0x02000000EEEE)


def exact_sum(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(np.stack(parts).astype(np.int64), axis=0)


def assert_lanes(pkt: InaPacket, expected: np.ndarray | int) -> None:
    assert np.array_equal(pkt.lanes.astype(np.int64), np.broadcast_to(np.asarray(expected, np.int64), pkt.lanes.shape))


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
