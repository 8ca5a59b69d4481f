"""The bench for the audit of docs/protocol.md (test_protocol_doc*.py): frames built from the
document's encapsulation rules, and a harness switch that checks every frame it emits.

Every frame a switch emits is checked against the encapsulation rules (IPv4 header checksum
valid, UDP checksum 0 or valid, lengths intact) by :meth:`Bench.tx`.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np
import pytest

from hostlib.protocol import (INA_UDP_PORT, WORKER_AGGREGATE, Flags, InaHeader, InaPacket, ProtocolError, ip_to_int,
                              lanes_to_bytes, parse_frame)

from .ina_harness import PS_IP, PS_PORT, InaSwitch, worker_ip, worker_port

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
