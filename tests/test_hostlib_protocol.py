"""hostlib's wire format: header packing, fixed point, frames, and the Scapy dissection."""
from __future__ import annotations

import numpy as np
import pytest

from hostlib.protocol import (INT32_MAX, Flags, InaHeader, ProtocolError, build_frame, build_header_only, decode_lanes,
                              encode_lanes, parse_frame)


def test_header_round_trip_and_field_limits() -> None:
    h = InaHeader.for_worker(3, 9, 2, 123456, 5, 8, priority=17, flags=Flags.RESEND, round=0xDEADBEEF)
    assert h.bitmap == 1 << 5 and len(h.pack()) == 24
    assert h.pack()[20:24] == bytes.fromhex("deadbeef")       # round: the last word (docs/protocol.md)
    assert InaHeader.unpack(h.pack()) == h
    with pytest.raises(ProtocolError, match="version 1"):
        InaHeader.unpack(bytes([0x10]) + h.pack()[1:])
    with pytest.raises(ProtocolError, match="round"):
        InaHeader.for_worker(1, 1, 1, 1, 0, 2, round=1 << 32).pack()
    with pytest.raises(ProtocolError, match="worker_id"):
        InaHeader.for_worker(1, 1, 1, 1, 32, 2)
    with pytest.raises(ProtocolError, match="job_id"):
        InaHeader(1 << 16, 1, 1, 1, 0, 1).pack()


def test_fixed_point_rounds_to_nearest_and_checks_overflow() -> None:
    v = np.array([0.5, -1.25, 3.0000076, 1e-9])
    enc = encode_lanes(v, scale_bits=16, lanes=8)
    assert enc.dtype == np.int32 and enc.shape == (8,)
    assert list(enc[:4]) == [32768, -81920, 196608, 0]
    assert np.allclose(decode_lanes(enc[:4], 16), v, atol=2 ** -16)
    with pytest.raises(ProtocolError, match="overflows int32"):
        encode_lanes(np.array([40000.0]), scale_bits=16)
    assert encode_lanes(np.array([40000.0]), scale_bits=16, clip=True)[0] == INT32_MAX
    with pytest.raises(ProtocolError, match="do not fit"):
        encode_lanes(np.zeros(65), lanes=64)
    with pytest.raises(ProtocolError, match="finite"):
        encode_lanes(np.array([np.nan]))


def test_frame_round_trip_and_ipv4_checksum() -> None:
    h = InaHeader.for_worker(1, 2, 3, 4, 0, 4)
    lanes = np.arange(-32, 32, dtype=np.int32)
    frame = build_frame(h, lanes, src_ip="10.0.0.1", dst_ip="10.0.1.1", src_mac="02:00:00:00:00:01")
    pkt = parse_frame(frame)
    assert pkt.header == h and np.array_equal(pkt.lanes, lanes)
    assert pkt.src_ip == "10.0.0.1" and pkt.dst_ip == "10.0.1.1"
    ip_hdr = frame[14:34]
    total = sum(int.from_bytes(ip_hdr[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    assert total == 0xFFFF
    with pytest.raises(ProtocolError):
        parse_frame(frame[:40])


def test_a_query_and_an_ask_go_without_lanes() -> None:
    """docs/protocol.md, header-only frames: the PS's query (REMINDER, node 0) and a worker's ask
    (RESEND, count 0) are the INA header alone (UDP length 32), read as zero lanes; no other
    frame may lack its lanes."""
    query = InaHeader(1, 0, 3, 7, 2, 0, 0, 0, 0, Flags.REMINDER, 5)
    ask = InaHeader(1, 0, 3, 7, 2, 4, 0, 0, 1 << 2, Flags.RESEND, 5)
    for header in (query, ask):
        frame = build_header_only(header, src_ip="10.0.9.1", dst_ip="10.0.0.3")
        assert len(frame) == 66 and frame[38:40] == (32).to_bytes(2, "big")
        assert frame[16:18] == (52).to_bytes(2, "big")      # IPv4 total length
        pkt = parse_frame(frame)
        assert pkt.header == header and pkt.lanes.shape == (64,) and not pkt.lanes.any()
    drain = InaHeader(1, 9, 3, 7, 255, 0, 0, 0, 0, Flags.REMINDER | Flags.PREEMPTED, 5)
    result_copy = InaHeader(1, 0, 3, 7, 2, 4, 0, 0, 1 << 2, Flags.RESEND | Flags.RESULT, 5)
    resend = InaHeader.for_worker(1, 0, 3, 7, 2, 4, flags=Flags.RESEND)
    for header in (drain, result_copy, resend, InaHeader.for_worker(1, 9, 3, 7, 2, 4)):
        with pytest.raises(ValueError, match="only a query"):
            build_header_only(header, src_ip="10.0.9.1", dst_ip="10.0.0.3")
        short = build_frame(header, np.zeros(0, np.int32), src_ip="10.0.9.1", dst_ip="10.0.0.3")
        with pytest.raises(ProtocolError, match="payload has 0 bytes"):
            parse_frame(short)


def test_scapy_dissects_ina_frames() -> None:
    from scapy.layers.l2 import Ether

    from hostlib.scapy_ina import Ina, InaLanes

    h = InaHeader.for_worker(7, 1, 0, 99, 2, 4, flags=Flags.RESEND | Flags.OVERFLOW)
    lanes = np.array([1, -2, 3, INT32_MAX], dtype=np.int32)
    p = Ether(build_frame(h, lanes, src_ip="10.0.0.3", dst_ip="10.0.1.1"))
    assert p.haslayer(Ina) and p[Ina].job_id == 7 and p[Ina].fragment_id == 99
    assert p[Ina].bitmap == 4 and "RESEND" in str(p[Ina].flags) and "OVERFLOW" in str(p[Ina].flags)
    assert p[InaLanes].values == [1, -2, 3, INT32_MAX]
    assert bytes(p) == bytes(Ether(bytes(p)))
    assert "job=7" in p[Ina].mysummary()
