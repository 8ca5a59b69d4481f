"""Kernel bypass for the hosts: :class:`XdpTransport`, a :class:`~hostlib.drivers.UdpTransport`
whose datagrams move through an AF_XDP socket (hostlib.native.xdp), and :func:`open_transport`,
which picks it or the socket path by flag (``io=``, or ``INAHOST_IO`` in the environment) or by
probing (``auto``).

The XDP program takes only the INA datagrams (IPv4, UDP, our port), on every receive queue of
the interface (one AF_XDP socket each); ARP and everything else still reach the kernel. The transport keeps a UDP socket bound to its
address: it reserves the port, and it carries the first datagrams to a peer until a frame from
that peer has shown its MAC. run_udp runs agents on it with the native C loops, as on a
socket; the Python loop reads and sends through the same rings.

AF_XDP needs root, libxdp and libbpf, and an interface with an address (not loopback). On
veth and on drivers without XDP support it runs in copy mode; zero-copy where the driver
supports it (``mode="native"``).
"""
from __future__ import annotations

import fcntl
import logging
import os
import socket
import struct
from typing import Iterable

from .drivers import UdpTransport
from .native import udp as native_udp_io
from .native.library import NativeUnavailable
from .native.xdp import XdpUnavailable, XskPort, unavailable_reason
from .protocol import INA_UDP_PORT

log = logging.getLogger("hostlib.xdp")

SIOCGIFADDR = 0x8915
SIOCGIFHWADDR = 0x8927
IO_CHOICES = ("socket", "xdp", "auto")


def _ifreq(sock: socket.socket, request: int, interface: str) -> bytes:
    return fcntl.ioctl(sock.fileno(), request, struct.pack("16s24x", interface.encode()[:15]))


def interface_of(sock: socket.socket, ip: str) -> str:
    """The interface that holds IPv4 address ``ip`` in ``sock``'s network namespace."""
    want = socket.inet_aton(ip)
    for _, name in socket.if_nameindex():
        try:
            if _ifreq(sock, SIOCGIFADDR, name)[20:24] == want:
                return name
        except OSError:
            continue                          # no IPv4 address
    raise XdpUnavailable(f"no interface holds {ip}")


class XdpTransport(UdpTransport):
    """A UdpTransport on (ip, port) whose INA datagrams move through AF_XDP sockets on the
    receive queues of ``interface`` (default: the one that holds ``ip``; ``queues``: how many,
    default all). ``mode``: "auto", "native" or "generic" (hostlib.native.xdp.XskPort). Raises XdpUnavailable where AF_XDP cannot run.
    ``native``: as UdpTransport's (the C loops where the agent allows, unless False); the
    Python loop reads and sends through the same C rings."""

    c_io = True               # its I/O methods are the C rings': run_udp may run the C loops on it

    def __init__(self, ip: str, port: int = INA_UDP_PORT, lanes: int = 64, dst_port: int = INA_UDP_PORT, *,
                 interface: str | None = None, queues: int = 0, mode: str = "auto", batch: int = 256,
                 buffer_bytes: int = 4 << 20, native: bool | None = None) -> None:
        super().__init__(ip, port, lanes, dst_port, batch=batch, buffer_bytes=buffer_bytes, native=native)
        self.xsk: XskPort | None = None
        try:
            if ip.startswith("127."):
                raise XdpUnavailable("AF_XDP does not run on loopback")
            self.interface = interface or interface_of(self.sock, ip)
            mac = _ifreq(self.sock, SIOCGIFHWADDR, self.interface)[18:24]
            try:
                self._rings = native_udp_io.SocketRings(self.sock.fileno(), lanes, dst_port, gso=False)
                self._rings.io.wake_fd = self._wake_fd
            except NativeUnavailable as e:
                raise XdpUnavailable(f"AF_XDP runs the native data path, which is unavailable: {e}") from None
            self.port = self.sock.getsockname()[1]             # port 0: the one the kernel chose
            self.xsk = XskPort(self.interface, queues, socket.inet_aton(ip), mac, self.port, self.sock.fileno(),
                               mode)
            self.xsk.attach(self._rings.io)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ sending
    def send(self, frame: bytes) -> None:
        XdpTransport.send_many(self, [frame])         # not a subclass's: it would count the frame again

    def send_many(self, frames: Iterable[bytes]) -> None:
        frames = frames if isinstance(frames, list) else list(frames)
        if not frames:
            return
        # as through the socket: checked, and a frame longer than an INA one cut to it
        frames = [f if len(f) == (end := self._ina_end(f)) else f[:end] for f in frames]
        io = self._rings.io
        dropped = io.send_dropped
        r = self.xsk.send(self._rings.handle, frames)
        self.send_dropped += io.send_dropped - dropped
        io.send_dropped = dropped
        if r < 0:
            raise OSError(-r, f"AF_XDP send on {self.interface}")

    def _send_uncounted(self, frames: list[bytes]) -> None:
        XdpTransport.send_many(self, frames)

    # ------------------------------------------------------------------ receiving
    def recv(self, timeout: float) -> bytes | None:
        got = XdpTransport.recv_many(self, timeout, 1)
        return got[0] if got else None

    def recv_many(self, timeout: float, max_frames: int | None = None) -> list[bytes]:
        limit = self.batch if max_frames is None else max_frames
        out: list[bytes] = []
        lib, rings = self._rings.lib, self._rings
        wait = max(0.0, timeout)
        while len(out) < limit:
            got = lib.ina_io_poll(rings.handle, wait)
            if got < 0:
                raise OSError(-got, f"AF_XDP receive on {self.interface}")
            if not got:
                break
            wait = 0.0
            f = self._frame(*rings.handed_off())
            if f is not None:
                out.append(f)
        return out

    def _drain(self, out: list[bytes], limit: int) -> int:
        got = XdpTransport.recv_many(self, 0.0, limit)
        out.extend(got)
        return len(got)

    # ------------------------------------------------------------------ the C loops' state
    def _native_rings(self) -> "native_udp_io.SocketRings":
        return self._rings

    def _release_rings(self) -> None:
        """The rings are the only way in: they stay until the transport closes."""

    def close(self) -> None:
        if self.xsk is not None:
            self.xsk.close()
            self.xsk = None
        rings, self._rings = self._rings, None
        if rings is not None:
            rings.close()
        self.sock.close()
        self._close_wake()

    def info(self) -> dict:
        """hostlib.native.xdp.XskPort.info: mode, zero-copy, datagrams sent through the kernel."""
        return self.xsk.info() if self.xsk else {}


def host_io(io: str | None = None) -> str:
    """``io``, or where None the environment's ``INAHOST_IO`` (default "socket"), checked."""
    if io is None:
        io = os.environ.get("INAHOST_IO") or "socket"
        if io not in IO_CHOICES:
            raise ValueError(f"INAHOST_IO={io}: expected one of {', '.join(IO_CHOICES)}")
    if io not in IO_CHOICES:
        raise ValueError(f"host I/O {io!r}: expected one of {', '.join(IO_CHOICES)}")
    return io


def open_transport(ip: str, port: int = INA_UDP_PORT, lanes: int = 64, dst_port: int = INA_UDP_PORT, *,
                   io: str | None = None, classes: tuple[type[UdpTransport], type[XdpTransport]] | None = None,
                   **kwargs) -> UdpTransport:
    """The agent's transport by ``io`` (None: :func:`host_io`'s, from ``INAHOST_IO``): "socket"
    (UdpTransport), "xdp" (XdpTransport, or XdpUnavailable saying why not) or "auto"
    (XdpTransport where AF_XDP runs, else the socket, with one log line saying why).
    ``classes``: the socket and AF_XDP classes to make (subclasses that count, say)."""
    io = host_io(io)
    socket_cls, xdp_cls = classes or (UdpTransport, XdpTransport)
    shard = kwargs.get("shard")
    if io != "socket":
        reason = ("AF_XDP does not run on loopback" if ip.startswith("127.")
                  else "AF_XDP serves an interface from one thread: no sharding over threads"
                  if shard is not None and shard[1] > 1 else unavailable_reason())
        if reason is None:
            try:
                return xdp_cls(ip, port, lanes, dst_port,
                                    **{k: v for k, v in kwargs.items() if k != "shard"})
            except XdpUnavailable as e:
                reason = str(e)
        if io == "xdp":
            raise XdpUnavailable(reason)
        log.info("hostlib: %s uses the socket path (%s)", ip, reason)
    kwargs = {k: v for k, v in kwargs.items() if k in ("batch", "buffer_bytes", "native", "shard")}
    return socket_cls(ip, port, lanes, dst_port, **kwargs)

