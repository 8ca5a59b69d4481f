"""The INA wire format (docs/protocol.md): the one place hosts encode and decode it.

Pure Python + numpy so workers, the PS, tests and simulators share it; Scapy layers for
dissection live in :mod:`hostlib.scapy_ina` and are built from the constants here.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from enum import IntFlag

import numpy as np

INA_UDP_PORT = 47100
INA_VERSION = 2
DEFAULT_LANES = 64
WORKER_AGGREGATE = 255
MAX_WORKERS = 32
HEADER_LEN = 24
_HDR = struct.Struct("!BBHHHIBBBBII")
ROUND_BITS = 32
INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


class Flags(IntFlag):
    RESULT = 0x01
    COLLISION = 0x02
    PREEMPTED = 0x04
    REMINDER = 0x08
    RESEND = 0x10
    OVERFLOW = 0x20


class ProtocolError(ValueError):
    """A packet or value that does not fit the INA format."""


@dataclass(frozen=True)
class InaHeader:
    job_id: int
    node_id: int
    submodel_id: int
    fragment_id: int
    worker_id: int
    fan_in: int
    count: int = 1
    priority: int = 0
    bitmap: int = 0
    flags: Flags = Flags(0)
    round: int = 0          # the job's all-reduce round (training iteration), mod 2^32
    version: int = INA_VERSION

    @classmethod
    def for_worker(cls, job_id: int, node_id: int, submodel_id: int, fragment_id: int,
                   worker_id: int, fan_in: int, priority: int = 0, flags: Flags = Flags(0),
                   round: int = 0) -> "InaHeader":
        if not 0 <= worker_id < MAX_WORKERS:
            raise ProtocolError(f"worker_id {worker_id} out of range 0..{MAX_WORKERS - 1}")
        return cls(job_id, node_id, submodel_id, fragment_id, worker_id, fan_in, 1, priority,
                   1 << worker_id, flags, round)

    def pack(self) -> bytes:
        for name, bits in (("job_id", 16), ("node_id", 16), ("submodel_id", 16), ("fragment_id", 32),
                           ("worker_id", 8), ("fan_in", 8), ("count", 8), ("priority", 8), ("bitmap", 32), ("round", ROUND_BITS)):
            v = getattr(self, name)
            if not 0 <= v < (1 << bits):
                raise ProtocolError(f"{name}={v} does not fit in {bits} bits")
        return _HDR.pack((self.version << 4), int(self.flags), self.job_id, self.node_id, self.submodel_id,
                         self.fragment_id, self.worker_id, self.fan_in, self.count, self.priority, self.bitmap, self.round)

    @classmethod
    def unpack(cls, data: bytes) -> "InaHeader":
        if len(data) < HEADER_LEN:
            raise ProtocolError(f"INA header needs {HEADER_LEN} bytes, got {len(data)}")
        (vb, flags, job, node, sub, frag, worker, fan_in, count, prio, bitmap, rnd) = _HDR.unpack_from(data)
        if vb >> 4 != INA_VERSION:
            raise ProtocolError(f"INA version {vb >> 4}, this host speaks {INA_VERSION}")
        return cls(job, node, sub, frag, worker, fan_in, count, prio, bitmap, Flags(flags), rnd, vb >> 4)

    def key(self) -> tuple[int, int, int, int]:
        """The aggregation key: (job, node, sub-model, fragment)."""
        return (self.job_id, self.node_id, self.submodel_id, self.fragment_id)

    def with_(self, **changes) -> "InaHeader":
        return replace(self, **changes)


# ---------------------------------------------------------------------- fixed point
def encode_lanes(values: np.ndarray, scale_bits: int = 16, lanes: int = DEFAULT_LANES,
                 clip: bool = False) -> np.ndarray:
    """Floats → int32 fixed point (round to nearest), zero-padded to ``lanes``.

    Values that do not fit int32 after scaling raise ProtocolError unless ``clip``.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size > lanes:
        raise ProtocolError(f"{v.size} values do not fit in {lanes} lanes")
    scaled = np.rint(v * float(1 << scale_bits))
    if not np.all(np.isfinite(scaled)):
        raise ProtocolError("gradient values must be finite")
    over = (scaled > INT32_MAX) | (scaled < INT32_MIN)
    if over.any():
        if not clip:
            i = int(np.argmax(over))
            raise ProtocolError(f"value {v[i]!r} overflows int32 at scale 2^{scale_bits}")
        scaled = np.clip(scaled, INT32_MIN, INT32_MAX)
    out = np.zeros(lanes, dtype=np.int32)
    out[:v.size] = scaled.astype(np.int64)
    return out


def decode_lanes(lanes: np.ndarray, scale_bits: int = 16) -> np.ndarray:
    return np.asarray(lanes, dtype=np.float64) / float(1 << scale_bits)


def lanes_to_bytes(lanes: np.ndarray) -> bytes:
    return np.asarray(lanes, dtype=">i4").tobytes()


def lanes_from_bytes(data: bytes, lanes: int = DEFAULT_LANES) -> np.ndarray:
    if len(data) < 4 * lanes:
        raise ProtocolError(f"payload has {len(data)} bytes, {lanes} lanes need {4 * lanes}")
    return np.frombuffer(data[:4 * lanes], dtype=">i4").astype(np.int32)


# ---------------------------------------------------------------------- whole frames
def _csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip_to_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def int_to_ip(v: int) -> str:
    return ".".join(str((v >> s) & 255) for s in (24, 16, 8, 0))


def mac_to_bytes(mac: str | int) -> bytes:
    if isinstance(mac, int):
        return mac.to_bytes(6, "big")
    return bytes(int(x, 16) for x in mac.split(":"))


@dataclass(frozen=True)
class InaPacket:
    """A decoded INA frame: addressing plus header plus lanes."""
    header: InaHeader
    lanes: np.ndarray = field(compare=False)
    src_ip: str = "0.0.0.0"
    dst_ip: str = "0.0.0.0"
    src_mac: bytes = b"\0" * 6
    dst_mac: bytes = b"\0" * 6
    src_port: int = INA_UDP_PORT
    ttl: int = 64


def build_frame(header: InaHeader, lanes: np.ndarray, *, src_ip: str, dst_ip: str,
                src_mac: str | int = 0, dst_mac: str | int = 0, src_port: int = INA_UDP_PORT,
                ttl: int = 64) -> bytes:
    """Ethernet/IPv4/UDP/INA/lanes frame (UDP checksum 0, IPv4 checksum computed)."""
    payload = header.pack() + lanes_to_bytes(lanes)
    udp = struct.pack("!HHHH", src_port, INA_UDP_PORT, 8 + len(payload), 0) + payload
    ip_hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, ttl, 17, 0,
                         ip_to_int(src_ip).to_bytes(4, "big"), ip_to_int(dst_ip).to_bytes(4, "big"))
    ip_hdr = ip_hdr[:10] + struct.pack("!H", _csum16(ip_hdr)) + ip_hdr[12:]
    eth = mac_to_bytes(dst_mac) + mac_to_bytes(src_mac) + b"\x08\x00"
    return eth + ip_hdr + udp


def parse_frame(frame: bytes, lanes: int = DEFAULT_LANES) -> InaPacket:
    """Decode an Ethernet/IPv4/UDP/INA frame; ProtocolError if it is not one."""
    if len(frame) < 14 + 20 + 8 + HEADER_LEN or frame[12:14] != b"\x08\x00":
        raise ProtocolError("not an IPv4 frame long enough for INA")
    ihl = (frame[14] & 0x0F) * 4
    if frame[14 + 9] != 17:
        raise ProtocolError("not UDP")
    udp_off = 14 + ihl
    sport, dport = struct.unpack_from("!HH", frame, udp_off)
    if dport != INA_UDP_PORT:
        raise ProtocolError(f"UDP destination port {dport} is not INA's {INA_UDP_PORT}")
    h = InaHeader.unpack(frame[udp_off + 8:])
    vals = lanes_from_bytes(frame[udp_off + 8 + HEADER_LEN:], lanes)
    return InaPacket(h, vals, int_to_ip(int.from_bytes(frame[26:30], "big")),
                     int_to_ip(int.from_bytes(frame[30:34], "big")), frame[6:12], frame[0:6], sport, frame[22])
