"""The INA wire format (docs/protocol.md): the one place hosts encode and decode it.

Pure Python + numpy so workers, the PS, tests and simulators share it; Scapy layers for
dissection live in :mod:`hostlib.scapy_ina` and are built from the constants here.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from enum import IntFlag
from functools import lru_cache
from typing import Sequence

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
    RELAY = 0x40
    RETRY = 0x80


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
        try:
            # struct range-checks every field itself: the slow per-field check below only runs
            # to say which field failed
            return _HDR.pack((self.version << 4), int(self.flags), self.job_id, self.node_id, self.submodel_id,
                             self.fragment_id, self.worker_id, self.fan_in, self.count, self.priority, self.bitmap,
                             self.round)
        except struct.error:
            pass
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


def pack_header(job_id: int, node_id: int, submodel_id: int, fragment_id: int, worker_id: int, fan_in: int,
                count: int = 1, priority: int = 0, bitmap: int = 0, flags: int = 0, round: int = 0) -> bytes:
    """The 24 header bytes of ``InaHeader(...).pack()`` without building the object (agents'
    hot path); the same ProtocolError for a field out of range."""
    try:
        return _HDR.pack(INA_VERSION << 4, int(flags), job_id, node_id, submodel_id, fragment_id, worker_id,
                         fan_in, count, priority, bitmap, round)
    except struct.error:
        return InaHeader(job_id, node_id, submodel_id, fragment_id, worker_id, fan_in, count, priority, bitmap,
                         Flags(flags), round).pack()


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
ETH_IP_UDP_LEN = 14 + 20 + 8        # the frames hostlib builds have an option-less IPv4 header


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


@lru_cache(maxsize=4096)
def frame_prefix(src_ip: str, dst_ip: str, src_mac: str | int = 0, dst_mac: str | int = 0,
                 src_port: int = INA_UDP_PORT, ttl: int = 64, payload_len: int = HEADER_LEN + 4 * DEFAULT_LANES
                 ) -> bytes:
    """The Ethernet/IPv4/UDP headers (42 bytes) of a frame with ``payload_len`` bytes of INA
    header and lanes: UDP checksum 0, IPv4 checksum computed.

    Cached: an agent talks to a handful of addresses with one payload size, so every frame
    after the first costs one dictionary lookup here instead of packing and summing."""
    udp = struct.pack("!HHHH", src_port, INA_UDP_PORT, 8 + payload_len, 0)
    ip_hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + payload_len, 0, 0, ttl, 17, 0,
                         ip_to_int(src_ip).to_bytes(4, "big"), ip_to_int(dst_ip).to_bytes(4, "big"))
    ip_hdr = ip_hdr[:10] + struct.pack("!H", _csum16(ip_hdr)) + ip_hdr[12:]
    return mac_to_bytes(dst_mac) + mac_to_bytes(src_mac) + b"\x08\x00" + ip_hdr + udp


def build_frame(header: InaHeader, lanes: np.ndarray, *, src_ip: str, dst_ip: str,
                src_mac: str | int = 0, dst_mac: str | int = 0, src_port: int = INA_UDP_PORT,
                ttl: int = 64) -> bytes:
    """Ethernet/IPv4/UDP/INA/lanes frame (UDP checksum 0, IPv4 checksum computed)."""
    payload = header.pack() + lanes_to_bytes(lanes)
    return frame_prefix(src_ip, dst_ip, src_mac, dst_mac, src_port, ttl, len(payload)) + payload


_UDP_INA = struct.Struct("!2xH4x" + _HDR.format.lstrip("!"))     # UDP dst port, INA header
_FAST_LEN = ETH_IP_UDP_LEN + HEADER_LEN


def frame_fields(frame: bytes, lanes: int = DEFAULT_LANES) -> tuple[int, ...]:
    """The INA header of a frame as plain ints, without building objects (the agents' hot path):
    ``(flags, job_id, node_id, submodel_id, fragment_id, worker_id, fan_in, count, priority,
    bitmap, round, lanes_offset)``, where ``lanes_offset`` is the byte offset of lane 0.

    Raises ProtocolError exactly where :func:`parse_frame` does."""
    if len(frame) >= _FAST_LEN + 4 * lanes and frame[14] == 0x45 and frame[23] == 17 and frame[12:14] == b"\x08\x00":
        # what hostlib builds (no IPv4 options): one unpack for the UDP port and the header
        v = _UDP_INA.unpack_from(frame, 34)
        if v[0] == INA_UDP_PORT and v[1] >> 4 == INA_VERSION:
            return v[2:] + (_FAST_LEN,)
    if len(frame) < 14 + 20 + 8 + HEADER_LEN or frame[12:14] != b"\x08\x00":
        raise ProtocolError("not an IPv4 frame long enough for INA")
    if frame[14 + 9] != 17:
        raise ProtocolError("not UDP")
    udp_off = 14 + (frame[14] & 0x0F) * 4
    dport = int.from_bytes(frame[udp_off + 2:udp_off + 4], "big")
    if dport != INA_UDP_PORT:
        raise ProtocolError(f"UDP destination port {dport} is not INA's {INA_UDP_PORT}")
    off = udp_off + 8
    if len(frame) - off < HEADER_LEN:
        raise ProtocolError(f"INA header needs {HEADER_LEN} bytes, got {max(0, len(frame) - off)}")
    vb, *fields = _HDR.unpack_from(frame, off)
    if vb >> 4 != INA_VERSION:
        raise ProtocolError(f"INA version {vb >> 4}, this host speaks {INA_VERSION}")
    have = len(frame) - off - HEADER_LEN
    if have < 4 * lanes and not (have == 0 and is_header_only(fields[0], fields[2], fields[7])):
        raise ProtocolError(f"payload has {max(0, have)} bytes, {lanes} lanes need {4 * lanes}")
    fields.append(off + HEADER_LEN)
    return tuple(fields)


def is_query(flags: int, node_id: int) -> bool:
    """Whether a header is the PS's query to a worker (REMINDER, node 0, not a drain): the one
    INA frame sent without lanes (docs/protocol.md, "Encapsulation")."""
    return bool(flags & Flags.REMINDER) and not flags & Flags.PREEMPTED and node_id == 0


def is_ask(flags: int, count: int) -> bool:
    """Whether a header is a worker's *ask* (RESEND without RESULT, count 0): its fragment's
    result is overdue, and the PS holds its contribution or queries it (docs/protocol.md)."""
    return flags & (Flags.RESEND | Flags.RESULT) == Flags.RESEND and count == 0


def is_header_only(flags: int, node_id: int, count: int) -> bool:
    """Whether a header goes without lanes: a query or an ask."""
    return is_query(flags, node_id) or is_ask(flags, count)


def build_header_only(header: InaHeader, *, src_ip: str, dst_ip: str, src_mac: str | int = 0,
                      dst_mac: str | int = 0) -> bytes:
    """A query or an ask (``header`` must be one, :func:`is_header_only`): the INA header
    without lanes, a fifth of a 64-lane frame on the PS's link, which recovery under loss keeps
    busy."""
    if not is_header_only(int(header.flags), header.node_id, header.count):
        raise ValueError("only a query (REMINDER, node 0) or an ask (RESEND, count 0) goes without lanes")
    payload = header.pack()
    return frame_prefix(src_ip, dst_ip, src_mac, dst_mac, INA_UDP_PORT, 64, len(payload)) + payload


def frame_lanes(frame: bytes, offset: int, lanes: int = DEFAULT_LANES) -> np.ndarray:
    """The lanes of a frame as a read-only big-endian int32 view (no copy); ``offset`` from
    :func:`frame_fields`. Numpy converts on arithmetic or assignment into native arrays. A
    query sent without lanes reads as zeros."""
    if offset == len(frame):
        return np.zeros(lanes, dtype=">i4")
    return np.frombuffer(frame, dtype=">i4", count=lanes, offset=offset)


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


def parse_frame(frame: bytes, lanes: int = DEFAULT_LANES) -> InaPacket:
    """Decode an Ethernet/IPv4/UDP/INA frame; ProtocolError if it is not one."""
    (flags, job, node, sub, frag, worker, fan_in, count, prio, bitmap, rnd, off) = frame_fields(frame, lanes)
    h = InaHeader(job, node, sub, frag, worker, fan_in, count, prio, bitmap, Flags(flags), rnd, INA_VERSION)
    sport = int.from_bytes(frame[off - HEADER_LEN - 8:off - HEADER_LEN - 6], "big")
    return InaPacket(h, frame_lanes(frame, off, lanes).astype(np.int32),
                     int_to_ip(int.from_bytes(frame[26:30], "big")),
                     int_to_ip(int.from_bytes(frame[30:34], "big")), frame[6:12], frame[0:6], sport, frame[22])


# ---------------------------------------------------------------------- batches
# One INA header as a numpy record: the wire layout, big-endian, 24 bytes (docs/protocol.md).
# ``vb`` is version << 4 (the low nibble is reserved, zero).
HEADER_DTYPE = np.dtype([("vb", "u1"), ("flags", "u1"), ("job_id", ">u2"), ("node_id", ">u2"),
                         ("submodel_id", ">u2"), ("fragment_id", ">u4"), ("worker_id", "u1"), ("fan_in", "u1"),
                         ("count", "u1"), ("priority", "u1"), ("bitmap", ">u4"), ("round", ">u4")])
assert HEADER_DTYPE.itemsize == HEADER_LEN
_FIELD_BITS = {"flags": 8, "job_id": 16, "node_id": 16, "submodel_id": 16, "fragment_id": 32, "worker_id": 8,
               "fan_in": 8, "count": 8, "priority": 8, "bitmap": 32, "round": ROUND_BITS}


def fragment_layout(submodel_sizes: Sequence[int], lanes: int = DEFAULT_LANES
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """How :meth:`hostlib.worker.Worker.push` cuts a gradient: every sub-model starts a new
    fragment of ``lanes`` values, its last one possibly short. Returns, per fragment in wire
    order, ``(submodel_id, fragment_id, start, stop)`` (int64 arrays; start/stop index the flat
    gradient). Empty sub-models have no fragments."""
    sizes = np.asarray(submodel_sizes, dtype=np.int64).reshape(-1)
    counts = -(-sizes // lanes)
    sub = np.repeat(np.arange(sizes.size, dtype=np.int64), counts)
    first = np.cumsum(counts) - counts                 # first fragment index of each sub-model
    frag = np.arange(sub.size, dtype=np.int64) - first[sub]
    offsets = np.cumsum(sizes) - sizes
    start = offsets[sub] + frag * lanes
    stop = np.minimum(start + lanes, (offsets + sizes)[sub])
    return sub, frag, start, stop


def send_order(submodel_sizes: Sequence[int], lanes: int = DEFAULT_LANES) -> np.ndarray:
    """The order in which a worker sends a round's fragments: indexes into
    :func:`fragment_layout`'s rows. Sub-models are interleaved in proportion to their sizes
    (fragment f of a sub-model with c fragments goes at (f + 1/2) / c of the round, ties by
    sub-model id), so that every sub-model — each aggregated at its own node, over its own links
    — is in flight all round long and all finish together, instead of their links being busy one
    after another. Within a sub-model fragments keep their order, which fast retransmit relies on
    (one path, so its results arrive in order)."""
    sub, frag, _, _ = fragment_layout(submodel_sizes, lanes)
    counts = -(-np.asarray(submodel_sizes, dtype=np.int64).reshape(-1) // lanes)
    if np.count_nonzero(counts) <= 1:
        return np.arange(sub.size, dtype=np.int64)
    # (2f + 1) / 2c: IEEE division is correctly rounded, so equal fractions compare equal
    return np.lexsort((sub, (2 * frag + 1) / (2 * counts[sub]))).astype(np.int64)


def layer_order(submodel_sizes: Sequence[int], lanes: int = DEFAULT_LANES) -> np.ndarray:
    """The order of a worker that sends layer by layer as backpropagation computes them: the
    last sub-model (the output layer's gradients, computed first) first, the front one last,
    each in fragment order (indexes into :func:`fragment_layout`'s rows)."""
    sub, frag, _, _ = fragment_layout(submodel_sizes, lanes)
    return np.lexsort((frag, -sub)).astype(np.int64)


def encode_fragments(values: np.ndarray, submodel_sizes: Sequence[int] | None = None, scale_bits: int = 16,
                     lanes: int = DEFAULT_LANES, clip: bool = False) -> np.ndarray:
    """A whole gradient → int32 fixed point, one row of ``lanes`` per fragment (rows as
    :func:`fragment_layout` orders them, each sub-model's last row zero-padded).

    Row for row equal to :func:`encode_lanes` of each fragment's values, and raises the error
    the first fragment that :func:`encode_lanes` would refuse raises (ProtocolError: not finite,
    or overflowing int32 unless ``clip``), before anything is returned."""
    v = np.asarray(values, dtype=np.float64).ravel()
    sizes = [v.size] if submodel_sizes is None else [int(s) for s in submodel_sizes]
    if sum(sizes) != v.size or any(s < 0 for s in sizes):
        raise ValueError(f"sub-model sizes {sizes} do not add up to the {v.size} values")
    scaled = np.multiply(v, float(1 << scale_bits))
    np.rint(scaled, out=scaled)
    if scaled.size:
        lo, hi = float(scaled.min()), float(scaled.max())        # NaN propagates through both
        if not (INT32_MIN <= lo and hi <= INT32_MAX):               # false for NaN and ±inf too
            _check_fragments(v, scaled, sizes, scale_bits, lanes, clip)
            np.clip(scaled, INT32_MIN, INT32_MAX, out=scaled)
    counts = [-(-s // lanes) for s in sizes]
    out = np.zeros((sum(counts), lanes), dtype=np.int32)
    flat = out.reshape(-1)
    if all(s % lanes == 0 for s in sizes[:-1]):
        flat[:v.size] = scaled                 # no padding before the last row: one copy
    else:
        row = off = 0
        for size, n in zip(sizes, counts):     # per sub-model, not per fragment
            flat[row * lanes:row * lanes + size] = scaled[off:off + size]
            row, off = row + n, off + size
    return out


def _check_fragments(v: np.ndarray, scaled: np.ndarray, sizes: Sequence[int], scale_bits: int, lanes: int,
                     clip: bool) -> None:
    """Raise what the per-fragment encoder raises for the first fragment it refuses."""
    bad = ~np.isfinite(scaled)
    over = np.zeros(scaled.shape, dtype=bool) if clip else (scaled > INT32_MAX) | (scaled < INT32_MIN)
    _, _, start, _ = fragment_layout(sizes, lanes)
    # the fragment of each value: the last fragment starting at or before it
    frag_of = lambda i: int(np.searchsorted(start, i, side="right")) - 1      # noqa: E731
    first_bad = frag_of(int(np.argmax(bad))) if bad.any() else None
    first_over = frag_of(int(np.argmax(over))) if over.any() else None
    if first_bad is not None and (first_over is None or first_bad <= first_over):
        raise ProtocolError("gradient values must be finite")
    if first_over is not None:
        i = int(np.argmax(over))
        raise ProtocolError(f"value {v[i]!r} overflows int32 at scale 2^{scale_bits}")


def header_array(n: int, *, job_id: int | np.ndarray, node_id: int | np.ndarray, submodel_id: int | np.ndarray,
                 fragment_id: int | np.ndarray | None = None, worker_id: int | np.ndarray,
                 fan_in: int | np.ndarray, count: int | np.ndarray = 1, priority: int | np.ndarray = 0,
                 bitmap: int | np.ndarray = 0, flags: int | np.ndarray = 0, round: int | np.ndarray = 0
                 ) -> np.ndarray:
    """``n`` INA headers as a :data:`HEADER_DTYPE` array; every field a scalar or an array of
    ``n`` (``fragment_id`` defaults to 0, 1, …). Range-checked like :meth:`InaHeader.pack`."""
    hdr = np.zeros(n, dtype=HEADER_DTYPE)
    hdr["vb"] = INA_VERSION << 4
    values = dict(job_id=job_id, node_id=node_id, submodel_id=submodel_id,
                  fragment_id=np.arange(n) if fragment_id is None else fragment_id, worker_id=worker_id,
                  fan_in=fan_in, count=count, priority=priority, bitmap=bitmap, flags=flags, round=round)
    for name, value in values.items():
        a = np.asarray(value)
        if a.size and (int(a.min()) < 0 or int(a.max()) >= 1 << _FIELD_BITS[name]):
            bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
            raise ProtocolError(f"{name}={bad} does not fit in {_FIELD_BITS[name]} bits")
        hdr[name] = a
    return hdr


def frame_dtype(lanes: int = DEFAULT_LANES) -> np.dtype:
    """A whole option-less frame as a numpy record: addressing, INA header, lanes."""
    return np.dtype([("prefix", f"V{ETH_IP_UDP_LEN}"), ("hdr", HEADER_DTYPE), ("lanes", ">i4", (lanes,))])


def build_frames(headers: np.ndarray, lanes: np.ndarray, *, src_ip: str, dst_ip: str, src_mac: str | int = 0,
                 dst_mac: str | int = 0, src_port: int = INA_UDP_PORT, ttl: int = 64) -> bytes:
    """Frames for ``headers`` (:data:`HEADER_DTYPE`, n) and ``lanes`` (n × K int32), back to back
    in one bytes object (frame i at ``i * len // n``); each equal to :func:`build_frame` of the
    same header, lanes and addressing. One numpy pass instead of n packs and concatenations."""
    lanes = np.asarray(lanes)
    if lanes.ndim != 2 or lanes.shape[0] != headers.shape[0]:
        raise ValueError(f"need one row of lanes per header: {lanes.shape} for {headers.shape[0]} headers")
    k = lanes.shape[1]
    frames = np.empty(headers.shape[0], dtype=frame_dtype(k))
    frames["prefix"] = np.frombuffer(frame_prefix(src_ip, dst_ip, src_mac, dst_mac, src_port, ttl,
                                                  HEADER_LEN + 4 * k), dtype=f"V{ETH_IP_UDP_LEN}")[0]
    frames["hdr"] = headers
    frames["lanes"] = lanes
    return frames.tobytes()


def frame_records(frames: Sequence[bytes], lanes: int = DEFAULT_LANES) -> np.ndarray:
    """Many INA frames as one :func:`frame_dtype` record array (fields ``hdr``, ``lanes``), in
    one copy. Every frame must be an option-less Ethernet/IPv4/UDP/INA frame of exactly
    ``42 + 24 + 4·lanes`` bytes (what hostlib builds); ProtocolError names the first that is
    not (decode such frames one by one with :func:`parse_frame`)."""
    dt = frame_dtype(lanes)
    if any(len(f) != dt.itemsize for f in frames):
        i = next(i for i, f in enumerate(frames) if len(f) != dt.itemsize)
        raise ProtocolError(f"frame {i} has {len(frames[i])} bytes, not {dt.itemsize}")
    raw = np.frombuffer(b"".join(frames), dtype=np.uint8).reshape(len(frames), dt.itemsize)
    ok = ((raw[:, 12] == 0x08) & (raw[:, 13] == 0x00) & (raw[:, 14] == 0x45) & (raw[:, 23] == 17)
          & (raw[:, 36] == INA_UDP_PORT >> 8) & (raw[:, 37] == INA_UDP_PORT & 0xFF)
          & (raw[:, ETH_IP_UDP_LEN] >> 4 == INA_VERSION))
    if not ok.all():
        raise ProtocolError(f"frame {int(np.argmin(ok))} is not an option-less INA frame of version {INA_VERSION}")
    return raw.reshape(-1).view(dt)


def parse_frames(frames: Sequence[bytes], lanes: int = DEFAULT_LANES) -> tuple[np.ndarray, np.ndarray]:
    """Decode many INA frames at once: ``(headers, lanes)``, a :data:`HEADER_DTYPE` array and an
    n × ``lanes`` int32 array; the frames as :func:`frame_records` requires them."""
    rec = frame_records(frames, lanes)
    return rec["hdr"].copy(), rec["lanes"].astype(np.int32)
