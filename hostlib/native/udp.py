"""The C UDP loops (udp.c): :class:`SocketRings`, a socket's C receive ring and send batches, and
:func:`run_loop`, which runs a NativeWorker, NativeGroup or NativePs on them until the agent
stops, the time is up, or the driver's stop condition holds.

This module knows no transport: the driver (hostlib.drivers.run_udp) owns the socket and its
rings, and hands the loop what it needs of the transport — how a received datagram becomes a
frame, and how the Python core's replies are sent."""
from __future__ import annotations

import ctypes
import math
import os
import time
from dataclasses import dataclass
from typing import Callable, Union

from ..protocol import HEADER_LEN
from .constants import EV_FRAME, EV_GAP, EV_NEWROUND, EV_TIMER
from .library import require
from .ps import NativePs
from .structs import CIo
from .worker import NativeGroup, NativeWorker

RING = 1024                  # datagrams per recvmmsg
RING_GSO = 256               # ... with UDP_GRO, each slot up to 64 datagrams
TXCAP = 1024                 # datagrams per sendmmsg (UIO_MAXIOV)

Twin = Union[NativeWorker, NativeGroup, NativePs]


def loopback_gso(ip: str) -> bool:
    """Whether a socket bound to ``ip`` batches with UDP GSO/GRO: only on loopback (127/8), where
    the datagrams never meet a switch — a packet socket on a real interface (p4sim on Mininet's
    veths) would see a GSO super-packet instead of the datagrams. ``INAHOST_GSO=0`` turns it off."""
    return ip.startswith("127.") and os.environ.get("INAHOST_GSO", "1") != "0"


@dataclass(frozen=True)
class IoCounts:
    """What the C loops moved on a socket: frames and frame bytes each way (a datagram counts as
    the whole frame the agents see), and datagrams a full send buffer did not take."""
    tx_packets: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    rx_bytes: int = 0
    send_dropped: int = 0

    def __sub__(self, other: "IoCounts") -> "IoCounts":
        return IoCounts(self.tx_packets - other.tx_packets, self.tx_bytes - other.tx_bytes,
                        self.rx_packets - other.rx_packets, self.rx_bytes - other.rx_bytes,
                        self.send_dropped - other.send_dropped)


class SocketRings:
    """The C loops' state for one UDP socket: its receive ring (what one loop left unread is the
    next one's) and send batches. ``gso``: UDP GSO/GRO batches (the caller enables UDP_GRO on
    the socket; then only these rings can read it, as they split coalesced datagrams)."""

    def __init__(self, fd: int, lanes: int, dst_port: int, gso: bool) -> None:
        self.lib = require()
        self.gso = gso
        self.handle = self.lib.ina_io_new(fd, lanes, RING_GSO if gso else RING, TXCAP, dst_port, int(gso))
        if not self.handle:
            raise MemoryError("inahost: cannot allocate the socket rings")
        self.io = CIo.from_address(self.handle)

    def counts(self) -> IoCounts:
        io = self.io
        return IoCounts(io.tx_packets, io.tx_bytes, io.rx_packets, io.rx_bytes, io.send_dropped)

    def handed_off(self) -> tuple[bytes, bytes]:
        """The datagram the loop handed to Python (its payload) and its source (port ++ IPv4)."""
        io = self.io
        return ctypes.string_at(io.ho_data, io.ho_len), bytes(io.ho_source)

    def close(self) -> None:
        if self.handle:
            self.lib.ina_io_free(self.handle)
            self.handle = None


def _raise(code: int, what: str) -> None:
    raise OSError(-code, f"inahost {what}: {os.strerror(-code)}")


def run_loop(twin: Twin, rings: SocketRings, *, to_frame: Callable[[bytes, bytes], bytes | None],
             send: Callable[[list[bytes]], None], timeout: float, stop: Callable[[], bool], stop_when_done: bool,
             poll: float) -> bool:
    """:func:`hostlib.drivers.run_udp`'s contract on the C loops: run ``twin`` until ``stop()``
    (checked at least every ``poll`` seconds) or ``timeout`` seconds; True if it stopped.
    ``stop_when_done``: ``stop`` is the agent's own ``done`` (a worker's loop then ends in C as
    its round completes). ``to_frame``: the frame the agents see for a datagram and its source,
    None to drop it; ``send``: how the Python core's replies leave. The twin is finished (its
    core current) when this returns."""
    lib = rings.lib
    io = rings.handle
    is_ps = isinstance(twin, NativePs)
    t0 = time.monotonic()
    try:
        send(twin.start(0.0))
        while True:
            if is_ps or not stop_when_done or not twin.bound():
                if stop():
                    return True
            elif twin.done():
                return True
            now = time.monotonic() - t0
            if now > timeout:
                return False
            until = min(timeout, now + poll)
            if isinstance(twin, NativePs):
                ev = lib.ina_ps_udp(twin.handle, io, t0, until, twin.python_deadline())
            elif twin.bound():
                twin.to_c()
                if isinstance(twin, NativeGroup):
                    ev = lib.ina_group_udp(twin.c_states, len(twin.natives), io, t0, until, math.inf,
                                           int(stop_when_done))
                else:
                    ev = lib.ina_worker_udp(ctypes.byref(twin.st), io, t0, until, math.inf, int(stop_when_done))
            else:
                # nothing to run in C (no round yet): the Python core answers what comes
                wait = min(poll, max(0.0, timeout - now))
                for _ in range(RING):
                    got = lib.ina_io_poll(io, wait)
                    if got < 0:
                        _raise(got, "receive")
                    if not got:
                        break
                    wait = 0.0
                    frame = to_frame(*rings.handed_off())
                    if frame is not None:
                        send(twin.python_core().on_frame(frame, time.monotonic() - t0))
                continue
            if ev < 0:
                _raise(ev, "UDP loop")
            now = time.monotonic() - t0
            if ev == EV_FRAME:
                frame = to_frame(*rings.handed_off())
                if frame is not None:
                    send(twin.python_frame(frame, now) if isinstance(twin, NativePs)
                         else twin.python_core().on_frames([frame], now))
            elif ev == EV_GAP and isinstance(twin, NativePs):
                frame = to_frame(*rings.handed_off())
                if frame is not None:
                    twin.python_gap(frame, now)
            elif ev == EV_NEWROUND and isinstance(twin, NativePs):
                hdr = ctypes.string_at(rings.io.ho_data, HEADER_LEN)
                twin.new_round(int.from_bytes(hdr[2:4], "big"), int.from_bytes(hdr[20:24], "big"))
            elif ev == EV_TIMER:
                if isinstance(twin, NativePs):
                    send(twin.python_timer(now))
                else:
                    core = twin.python_core()
                    d = core.next_deadline()
                    if d is not None and d <= now:
                        send(core.on_timer(now))
    finally:
        twin.finish()
