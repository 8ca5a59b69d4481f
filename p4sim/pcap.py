"""A tiny writer for classic libpcap files (no scapy needed at run time).

Format: a 24-byte global header, then per packet a 16-byte record header and the frame bytes.
We write microsecond timestamps (magic 0xa1b2c3d4) in native byte order, which every reader
(tcpdump, Wireshark, scapy's rdpcap) accepts, and link type 1 (Ethernet).
"""
from __future__ import annotations

import struct
import threading
import time
from types import TracebackType
from typing import BinaryIO

PCAP_MAGIC_USEC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262144

_GLOBAL_HEADER = struct.Struct("=IHHiIII")
_RECORD_HEADER = struct.Struct("=IIII")


class PcapWriter:
    """Append Ethernet frames to a pcap file.

    Thread-safe (the dataplane thread and a P4Runtime thread may both write), and every
    record is flushed at once so a test can read the file while the switch still runs.
    """

    def __init__(self, path: str, *, snaplen: int = DEFAULT_SNAPLEN,
                 linktype: int = LINKTYPE_ETHERNET, flush: bool = True) -> None:
        self.path = path
        self.snaplen = snaplen
        self._flush = flush
        self._lock = threading.Lock()
        self._fh: BinaryIO | None = open(path, "wb")
        self._fh.write(_GLOBAL_HEADER.pack(PCAP_MAGIC_USEC, 2, 4, 0, 0, snaplen, linktype))
        self._fh.flush()
        self.count = 0

    def write(self, frame: bytes, ts: float | None = None) -> None:
        """Record ``frame`` with wall-clock timestamp ``ts`` (seconds; default: now)."""
        if ts is None:
            ts = time.time()
        sec = int(ts)
        usec = int(round((ts - sec) * 1_000_000))
        if usec >= 1_000_000:  # rounding can carry into the next second
            sec, usec = sec + 1, usec - 1_000_000
        caplen = min(len(frame), self.snaplen)
        with self._lock:
            if self._fh is None:
                return  # closed: late frames (e.g. during shutdown) are silently ignored
            self._fh.write(_RECORD_HEADER.pack(sec, usec, caplen, len(frame)))
            self._fh.write(frame[:caplen])
            if self._flush:
                self._fh.flush()
            self.count += 1

    def flush(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    @property
    def closed(self) -> bool:
        return self._fh is None

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def read_pcap(path: str) -> list[tuple[float, bytes]]:
    """Read a classic pcap file (either byte order, usec or nsec): ``[(timestamp, frame)]``.

    A small reader for tests and debugging without scapy.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file (too short)")
    for endian in ("<", ">"):
        magic = struct.unpack(endian + "I", data[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            break
    else:
        raise ValueError(f"{path}: bad pcap magic {data[:4].hex()}")
    scale = 1e-6 if magic == 0xA1B2C3D4 else 1e-9
    rec = struct.Struct(endian + "IIII")
    out: list[tuple[float, bytes]] = []
    off = 24
    while off + rec.size <= len(data):
        sec, frac, caplen, _origlen = rec.unpack_from(data, off)
        off += rec.size
        out.append((sec + frac * scale, data[off:off + caplen]))
        off += caplen
    return out
