"""Drivers for the sans-IO agents (hostlib.worker.Worker, hostlib.ps.ParameterServer).

* ``run_on_fabric``: a discrete-event simulation over a ``p4sim.fabric.Fabric``'s switches and
  links, with a simulated clock, a per-hop latency and seeded loss on chosen links, so recovery
  is exercised deterministically and without tc netem.
* ``UdpTransport`` / ``run_udp``: real time over a UDP socket bound to the INA port (loopback
  tests; Mininet hosts). The socket carries the INA header and lanes; the Ethernet/IPv4/UDP
  headers the agents build are the kernel's business here. Each wake-up moves a batch: every
  datagram waiting (recvmmsg, or recvfrom until EAGAIN), the agent's ``on_frames``, all
  replies in one sendmmsg (``MmsgSocket``; sendto where it is missing). For a Worker,
  WorkerGroup or ParameterServer, ``run_udp`` runs hostlib.native's C loop instead where it is
  available (``native_udp``): no Python per frame in the common case.

The drivers choose between the C data path and the Python cores; the cores (hostlib.worker,
hostlib.ps) know neither. Importing this module installs hostlib.native's one-pass encoder for
Worker.push (``set_round_encoder``) and decoder for Worker.result_into (``set_round_decoder``),
which fall back to numpy where the C path is unavailable.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import heapq
import os
import random
import select
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

import numpy as np

from . import native as native_datapath
from .agent import each_frame
from .native.constants import SOL_UDP, UDP_GRO
from .protocol import (ETH_IP_UDP_LEN, HEADER_LEN, INA_UDP_PORT, INA_VERSION, ProtocolError, frame_prefix,
                       is_header_only)
from .ps import ParameterServer
from .worker import Worker, set_round_decoder, set_round_encoder
from .worker_group import WorkerGroup

# Worker.push encodes a round's first copies, and Worker.result_into decodes its results, in one
# C pass each where hostlib.native is built (the same bytes and floats as the numpy paths, which
# they fall back to)
set_round_encoder(native_datapath.encode_round)
set_round_decoder(native_datapath.decode_round)


class Agent(Protocol):
    def start(self, now: float) -> list[bytes]: ...
    def on_frame(self, frame: bytes, now: float) -> list[bytes]: ...
    def on_timer(self, now: float) -> list[bytes]: ...
    def next_deadline(self) -> float | None: ...


# ---------------------------------------------------------------------- discrete events
@dataclass
class SimReport:
    now: float = 0.0
    events: int = 0
    delivered: dict[str, int] = field(default_factory=dict)     # frames each host received
    lost: int = 0                                               # frames the loss model dropped
    duplicated: int = 0                                         # extra copies it delivered
    switch_frames: dict[str, int] = field(default_factory=dict)  # frames each switch transmitted
    # (from, to, job id of the INA header, -1 if none) → bytes that link carried for that job
    link_bytes: dict[tuple[str, str, int], int] = field(default_factory=dict)
    quiet: bool = False           # stopped because nothing was left to do (not by ``until``)


def run_on_fabric(fabric: Any, agents: Mapping[str, Agent], until: float, *, hop_latency: float = 10e-6,
                  loss: Mapping[tuple[str, str], float] | None = None,
                  duplicate: Mapping[tuple[str, str], float] | None = None, seed: int = 0,
                  stop: Callable[[], bool] | None = None, max_events: int = 1_000_000,
                  link_bps: float | Mapping[tuple[str, str], float] | None = None,
                  observe: Callable[[float, str, bytes, list[bytes]], None] | None = None,
                  node_bps: Mapping[str, float] | None = None,
                  costs: Callable[[str, bytes], bool] | None = None) -> SimReport:
    """Run ``agents`` (host name → agent) on ``fabric`` until simulated time ``until``, until
    ``stop()`` is true, or until no frame is in flight and no agent has a deadline.

    Every link, host links included, takes ``hop_latency``; switches process in zero time.
    ``link_bps``: every link direction also serializes its frames at this rate (one for all, or
    (from, to) → bits per second), first in first out (unbounded queues), so a busy link delays
    what follows it, as a real one does; None: links of unlimited rate. ``observe(t, switch,
    frame, outputs)`` sees every frame a switch processes and the frames it sent on.
    ``node_bps[n]``: node n (a switch or a host) processes the frames ``costs(n, frame)`` says
    cost it at this rate, one after another (a switch's aggregation capacity, a PS's processing:
    InArt §5.3.1); the rest pass at once.
    ``report.link_bytes`` counts what each link carried per direction and job (duplicates
    included, drops not): the traffic the agents put on every link, whatever the clock.
    ``loss[(a, b)]`` is the probability a frame sent from node a (host or switch name) to its
    neighbour b is dropped, ``duplicate[(a, b)]`` that it arrives twice (the copy one hop
    latency later); both drawn from ``random.Random(seed)``.
    """
    rng = random.Random(seed)
    loss, duplicate = dict(loss or {}), dict(duplicate or {})
    host_at = {v: k for k, v in fabric.hosts.items()}           # (switch, port) -> host
    report = SimReport()
    queue: list[tuple[float, int, str, tuple]] = []
    seq = 0
    armed: dict[str, float] = {}          # earliest timer event queued per agent

    def push(t: float, kind: str, data: tuple) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(queue, (t, seq, kind, data))

    link_bytes = report.link_bytes
    job_at = ETH_IP_UDP_LEN + 2                  # the INA header's job id (big-endian u16)

    def carried(src: str, dst: str, frame: bytes) -> None:
        key = (src, dst, int.from_bytes(frame[job_at:job_at + 2], "big") if len(frame) >= job_at + 2 else -1)
        link_bytes[key] = link_bytes.get(key, 0) + len(frame)

    free_at: dict[tuple[str, str], float] = {}   # when each link direction is next idle (link_bps)
    busy_until: dict[str, float] = {}            # when each node with a rate is next idle (node_bps)

    def hop(src: str, dst: str, t: float, kind: str, data: tuple) -> None:
        p = loss.get((src, dst), 0.0)
        if p and rng.random() < p:
            report.lost += 1
            return
        if link_bps:
            bps = link_bps if isinstance(link_bps, (int, float)) else link_bps[(src, dst)]
            t = free_at[(src, dst)] = max(t, free_at.get((src, dst), 0.0)) + 8 * len(data[-1]) / bps
        push(t + hop_latency, kind, data)
        carried(src, dst, data[-1])
        p = duplicate.get((src, dst), 0.0)
        if p and rng.random() < p:
            report.duplicated += 1
            push(t + 2 * hop_latency, kind, data)
            carried(src, dst, data[-1])

    def emit(host: str, frames: Iterable[bytes], now: float) -> None:
        sw, port = fabric.hosts[host]
        for f in frames:
            hop(host, sw, now, "switch", (sw, port, f))
        d = agents[host].next_deadline()
        if d is not None and (host not in armed or d < armed[host]):
            armed[host] = max(d, now)
            push(armed[host], "timer", (host,))

    for name, agent in agents.items():
        emit(name, agent.start(0.0), 0.0)
    while queue:
        if stop is not None and stop():
            break
        t, _, kind, data = heapq.heappop(queue)
        if t > until:
            break
        report.now = t
        report.events += 1
        if report.events > max_events:
            raise RuntimeError(f"simulation exceeded {max_events} events")
        if node_bps and kind in ("switch", "host") and data[-2] is not True:     # True: processed already
            node, frame = data[0], data[-1]
            bps = node_bps.get(node)
            if bps and (costs is None or costs(node, frame)):
                # queue behind what the node is still processing; handled once it is through
                ready = busy_until[node] = max(t, busy_until.get(node, 0.0)) + 8 * len(frame) / bps
                push(ready, kind, (*data[:-1], True, frame))
                continue
        if kind == "switch":
            sw, port, frame = data[0], data[1], data[-1]
            sent = fabric.switches[sw].process(port, frame)
            if observe is not None:
                observe(t, sw, frame, [out for _, out in sent])
            for out_port, out in sent:
                report.switch_frames[sw] = report.switch_frames.get(sw, 0) + 1
                host = host_at.get((sw, out_port))
                if host is not None:
                    hop(sw, host, t, "host", (host, out))
                elif (sw, out_port) in fabric.links:
                    nsw, nport = fabric.links[(sw, out_port)]
                    hop(sw, nsw, t, "switch", (nsw, nport, out))
        elif kind == "host":
            host, frame = data[0], data[-1]
            report.delivered[host] = report.delivered.get(host, 0) + 1
            if host in agents:
                emit(host, agents[host].on_frame(frame, t), t)
        else:
            (host,) = data
            if armed.get(host) == t:
                del armed[host]
            d = agents[host].next_deadline()
            emit(host, agents[host].on_timer(t) if d is not None and d <= t else [], t)   # re-arms
    else:
        report.quiet = True
    return report


def udp_socket(ip: str, port: int, buffer_bytes: int, shard: tuple[int, int] | None = None) -> socket.socket:
    """A non-blocking UDP socket bound to ``ip``:``port`` with ``buffer_bytes`` of send and
    receive buffer (a window of fragments from every worker can land at once; the kernel caps
    it at net.core.[rw]mem_max).

    ``shard=(i, n)``: socket ``i`` of ``n`` on the same address (SO_REUSEPORT), reading the
    datagrams of the sub-models ``s`` with ``s % n == i`` (:func:`steer_by_submodel`). Bind the
    ``n`` sockets in the order of ``i``: the kernel numbers a group's sockets as they join it. Any
    socket of the same user with SO_REUSEPORT may join the group: one agent per address. ``n``
    of 1 is a socket of its own (no SO_REUSEPORT: a second one on the address fails to bind)."""
    if shard is not None and shard[1] == 1:
        shard = None                     # one socket reads everything: bound on its own
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, buffer_bytes)
        except OSError:
            pass
    if shard is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((ip, port))
    if shard is not None and shard[0] == 0:
        steer_by_submodel(sock, shard[1])
    sock.setblocking(False)
    return sock


SO_ATTACH_REUSEPORT_CBPF = 51            # <asm-generic/socket.h>


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def steer_by_submodel(sock: socket.socket, shards: int) -> None:
    """Give each datagram that reaches ``sock``'s SO_REUSEPORT group to the group's socket
    number (sub-model id mod ``shards``): a classic BPF program over the UDP payload, which is
    the INA header (its sub-model id: the 16 bits at offset 6). One sub-model's datagrams all
    reach one socket, in order; a datagram too short for the id goes to socket 0."""
    if not 1 <= shards <= 0xFFFF:
        raise ValueError(f"{shards} shards: 1 to 65535")
    code = [(0x28, 6),                    # BPF_LD | BPF_H | BPF_ABS: A = payload[6:8], big-endian
            (0x94, shards),               # BPF_ALU | BPF_MOD | BPF_K: A %= shards
            (0x16, 0)]                    # BPF_RET | BPF_A
    insns = (_SockFilter * len(code))(*[_SockFilter(op, 0, 0, k) for op, k in code])
    prog = _SockFprog(len(code), ctypes.cast(insns, ctypes.POINTER(_SockFilter)))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, bytes(prog))     # the kernel copies insns


# ---------------------------------------------------------------------- many datagrams per call
class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.c_void_p),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


def _struct_dtype(fields: list[tuple[str, int, Any]], size: int) -> np.dtype:
    return np.dtype({"names": [f[0] for f in fields], "offsets": [f[1] for f in fields],
                     "formats": [f[2] for f in fields], "itemsize": size})


class MmsgSocket:
    """sendmmsg(2)/recvmmsg(2) on a UDP socket through ctypes: up to 1024 datagrams per system
    call, the message headers for a whole batch laid out by numpy in one pass (no Python work
    per datagram on the way out). Linux only; :meth:`create` gives None elsewhere, and
    :class:`UdpTransport` then uses sendto/recvfrom."""

    MAX = 1024                    # UIO_MAXIOV: the most messages one call takes
    _SOCKADDR_IN = 16
    _libc: Any = None

    def __init__(self, sock: socket.socket, capacity: int, bufsize: int) -> None:
        self.sock, self.capacity, self.bufsize = sock, min(capacity, self.MAX), bufsize
        h = _Mmsghdr.hdr.offset
        self._msg_dtype = _struct_dtype([
            ("name", h + _Msghdr.name.offset, np.uintp), ("namelen", h + _Msghdr.namelen.offset, np.uint32),
            ("iov", h + _Msghdr.iov.offset, np.uintp), ("iovlen", h + _Msghdr.iovlen.offset, np.uintp),
            ("len", _Mmsghdr.len.offset, np.uint32)], ctypes.sizeof(_Mmsghdr))
        self._iov_dtype = _struct_dtype([("base", _Iovec.base.offset, np.uintp), ("len", _Iovec.len.offset, np.uintp)],
                                        ctypes.sizeof(_Iovec))
        # receive side: fixed buffers, headers pointing into them once and for all
        n = self.capacity
        self._rx_data = np.zeros((n, bufsize), dtype=np.uint8)
        self._rx_names = np.zeros((n, self._SOCKADDR_IN), dtype=np.uint8)
        self._rx_iov = np.zeros(n, dtype=self._iov_dtype)
        self._rx_iov["base"] = self._rx_data.ctypes.data + bufsize * np.arange(n)
        self._rx_iov["len"] = bufsize
        self._rx_msgs = np.zeros(n, dtype=self._msg_dtype)
        self._rx_msgs["name"] = self._rx_names.ctypes.data + self._SOCKADDR_IN * np.arange(n)
        self._rx_msgs["iov"] = self._rx_iov.ctypes.data + self._iov_dtype.itemsize * np.arange(n)
        self._rx_msgs["iovlen"] = 1
        # send side: the same, for MAX messages; addresses and payload pointers filled per call
        m = self.MAX
        self._tx_steps = np.arange(m, dtype=np.uintp)
        self._tx_names = np.zeros((m, self._SOCKADDR_IN), dtype=np.uint8)
        self._tx_names[:, 0:2] = np.frombuffer(np.array([socket.AF_INET], dtype=np.uint16).tobytes(), dtype=np.uint8)
        self._tx_port = -1
        self._tx_iov = np.zeros(m, dtype=self._iov_dtype)
        self._tx_msgs = np.zeros(m, dtype=self._msg_dtype)
        self._tx_msgs["name"] = self._tx_names.ctypes.data + self._SOCKADDR_IN * np.arange(m)
        self._tx_msgs["namelen"] = self._SOCKADDR_IN
        self._tx_msgs["iov"] = self._tx_iov.ctypes.data + self._iov_dtype.itemsize * np.arange(m)
        self._tx_msgs["iovlen"] = 1

    @classmethod
    def create(cls, sock: socket.socket, capacity: int, bufsize: int) -> "MmsgSocket | None":
        """An MmsgSocket on ``sock``; None only where the platform has no sendmmsg/recvmmsg (not
        Linux, or a C library without them). Any other failure raises."""
        if cls._libc is None:
            cls._libc = cls._load_libc()
        return cls(sock, capacity, bufsize) if cls._libc else None

    @staticmethod
    def _load_libc() -> Any:
        """The C library with sendmmsg/recvmmsg bound, or False where it has none."""
        if not sys.platform.startswith("linux"):
            return False
        # find_library gives None where it cannot tell (no ldconfig): then the process's own
        # symbols, which on Linux include the C library's
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if not (hasattr(libc, "sendmmsg") and hasattr(libc, "recvmmsg")):
            return False
        libc.sendmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
        libc.recvmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p]
        libc.sendmmsg.restype = libc.recvmmsg.restype = ctypes.c_int
        return libc

    def send(self, rows: np.ndarray, offset: int, length: int, port: int) -> int:
        """Send bytes ``[offset, offset + length)`` of every row of ``rows`` (n frames of equal
        length, uint8, C-contiguous) to the IPv4 address at bytes 30..33 of the row, UDP ``port``.
        Returns how many were sent, 0 if the socket buffer had no room for the first (EAGAIN)."""
        n = min(len(rows), self.MAX)
        rows = rows[:n]
        if self._tx_port != port:
            self._tx_names[:, 2], self._tx_names[:, 3] = port >> 8, port & 0xFF
            self._tx_port = port
        # only the destinations and the payload addresses change from call to call
        self._tx_names[:n, 4:8] = rows[:, 30:34]
        np.add(self._tx_steps[:n] * rows.strides[0], rows.ctypes.data + offset, out=self._tx_iov["base"][:n])
        self._tx_iov["len"][:n] = length
        r = self._libc.sendmmsg(self.sock.fileno(), self._tx_msgs.ctypes.data, n, 0)
        if r < 0:
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK):         # no room now
                return 0
            raise OSError(err, f"sendmmsg: {os.strerror(err)}")
        return r

    def recv(self, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` waiting datagrams without blocking: (data, source) pairs, where the
        source is the 6 bytes port ++ IPv4 address."""
        n = min(limit, self.capacity)
        self._rx_msgs["namelen"][:n] = self._SOCKADDR_IN
        r = self._libc.recvmmsg(self.sock.fileno(), self._rx_msgs.ctypes.data, n, socket.MSG_DONTWAIT, None)
        if r < 0:
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK):
                return []
            raise OSError(err, f"recvmmsg: {os.strerror(err)}")
        lens = self._rx_msgs["len"][:r].tolist()
        data = self._rx_data[:r].tobytes()
        names = self._rx_names[:r, 2:8].tobytes()
        bs = self.bufsize
        return [(data[i * bs:i * bs + lens[i]], names[i * 6:i * 6 + 6]) for i in range(r)]


# ---------------------------------------------------------------------- real time, UDP
_IPV4_NO_OPTIONS = np.frombuffer(b"\x08\x00\x45", dtype=np.uint8)     # EtherType IPv4, version 4, IHL 5


class UdpTransport:
    """An agent's frames over a UDP socket bound to (ip, 47100).

    Outgoing frames are cut down to their INA payload and sent to their destination IP;
    incoming datagrams are wrapped back into frames (source from ``recvfrom``, destination = our
    address) so the agents see the same bytes as on the fabric.

    ``send``/``recv`` move one frame; ``send_many``/``recv_many`` (what :func:`run_udp` uses)
    move everything one wake-up has: ``recv_many`` waits once, then drains the socket without
    blocking until it is empty, so a busy agent pays one ``select`` per batch, not per frame.
    With ``mmsg`` (default: where available, i.e. Linux) the batches go through
    sendmmsg/recvmmsg (:class:`MmsgSocket`), else one sendto/recvfrom per datagram; both carry
    the same bytes.

    :func:`run_udp` drives a Worker or ParameterServer on this socket with hostlib.native's C
    loop where it can (``native``: None = where available, False = never, True = required). A
    subclass that overrides the I/O methods gets the C loop only if it keeps ``counts`` (a dict
    of ``tx_packets``, ``tx_bytes``, ``rx_packets``, ``rx_bytes``: frames and frame bytes, as
    emulation.agents.CountingTransport), which the C loop then keeps up to date; other
    overrides keep seeing every frame through the Python loop.

    ``shard=(i, n)``: one of ``n`` sockets on the same address, each reading the datagrams of
    its own sub-models (:func:`udp_socket`; hostlib.shards runs an agent per socket and thread).
    """

    MMSG_MIN = 4          # fewer frames go out one sendto each: cheaper than laying out a batch
    c_io = False          # a subclass whose I/O methods are the C rings' own (hostlib.xdp)

    def __init__(self, ip: str, port: int = INA_UDP_PORT, lanes: int = 64, dst_port: int = INA_UDP_PORT, *,
                 batch: int = 256, buffer_bytes: int = 4 << 20, mmsg: bool | None = None,
                 native: bool | None = None, shard: tuple[int, int] | None = None) -> None:
        self.ip, self.port, self.lanes, self.dst_port, self.batch = ip, port, lanes, dst_port, batch
        # run_udp's C loops (hostlib.native) for this socket: None = where available, False = never.
        # Once they ran, the socket is theirs (on loopback its datagrams come GRO-coalesced, which
        # only the C loop splits): its ring state lives in _rings until close.
        self.native = native
        self._rings: native_datapath.SocketRings | None = None
        self.sock = udp_socket(ip, port, buffer_bytes, shard)
        # wake(): makes a wait for datagrams (run_udp's, in Python or C) return at once
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.send_dropped = 0            # datagrams the full socket buffer did not take
        self._payload_len = HEADER_LEN + 4 * lanes
        # datagrams longer than an INA payload are cut here: only the first _payload_len bytes
        # are ever read, and a small buffer keeps recvfrom from allocating 64 kB per datagram
        self._bufsize = self._payload_len + 64
        self._prefixes: dict[bytes, bytes] = {}                # source port ++ IPv4 -> frame headers
        self._dst: dict[bytes, tuple[str, int]] = {}          # destination IPv4 bytes -> address
        self._mmsg = MmsgSocket.create(self.sock, max(batch, 64), self._bufsize) if mmsg is not False else None
        if mmsg and self._mmsg is None:
            raise OSError("sendmmsg/recvmmsg are not available here")

    # ------------------------------------------------------------------ sending
    def _ina_end(self, frame: bytes) -> int:
        """Where ``frame``'s INA datagram ends (a longer frame is cut there); ProtocolError for a
        frame that cannot carry one."""
        end = ETH_IP_UDP_LEN + self._payload_len
        if len(frame) == ETH_IP_UDP_LEN + HEADER_LEN and is_header_only(frame[43], frame[46] << 8 | frame[47],
                                                                        frame[56]):
            end = len(frame)                     # a query or an ask: the INA header alone
        if len(frame) < end or frame[12:14] != b"\x08\x00" or frame[14] != 0x45:
            raise ProtocolError("not an option-less IPv4 frame long enough for INA")
        return end

    def send(self, frame: bytes) -> None:
        end = self._ina_end(frame)
        addr = self._dst.get(frame[30:34])
        if addr is None:
            addr = self._dst[frame[30:34]] = (socket.inet_ntoa(frame[30:34]), self.dst_port)
        payload = frame[ETH_IP_UDP_LEN:end]
        try:
            self.sock.sendto(payload, addr)
        except BlockingIOError:
            # a burst (results, retransmissions) filled the socket buffer: wait briefly for room;
            # one that still does not fit is lost like a network drop, which the protocol repairs
            select.select([], [self.sock], [], 0.05)
            try:
                self.sock.sendto(payload, addr)
            except BlockingIOError:
                self.send_dropped += 1

    def send_many(self, frames: Iterable[bytes]) -> None:
        frames = frames if isinstance(frames, list) else list(frames)
        mm, length = self._mmsg, ETH_IP_UDP_LEN + self._payload_len
        if mm is None or len(frames) < self.MMSG_MIN or any(len(f) != length for f in frames):
            for f in frames:
                UdpTransport.send(self, f)    # not an override's: one that counts sees send_many too
            return
        buf = b"".join(frames)                   # kept alive: the kernel reads from it
        rows = np.frombuffer(buf, dtype=np.uint8).reshape(len(frames), length)
        if not (rows[:, 12:15] == _IPV4_NO_OPTIONS).all():
            raise ProtocolError("not an option-less IPv4 frame long enough for INA")
        pos = 0
        while pos < len(frames):
            sent = mm.send(rows[pos:], ETH_IP_UDP_LEN, self._payload_len, self.dst_port)
            if sent == 0:
                # as send(): wait briefly for room, retry once, else the datagram is lost
                select.select([], [self.sock], [], 0.05)
                sent = mm.send(rows[pos:pos + 1], ETH_IP_UDP_LEN, self._payload_len, self.dst_port)
                if sent == 0:
                    self.send_dropped += 1
                    sent = 1
            pos += sent

    def _send_uncounted(self, frames: list[bytes]) -> None:
        """send_many as this class does it, not a subclass that counts what it sends"""
        UdpTransport.send_many(self, frames)

    # ------------------------------------------------------------------ receiving
    def recv(self, timeout: float) -> bytes | None:
        if not self._wait(timeout):
            return None
        try:
            data, (src_ip, src_port) = self.sock.recvfrom(self._bufsize)
        except BlockingIOError:
            return None
        return self._frame(data, src_port.to_bytes(2, "big") + socket.inet_aton(src_ip))

    def recv_many(self, timeout: float, max_frames: int | None = None) -> list[bytes]:
        """Every frame that arrives within ``timeout`` seconds of waiting, up to ``max_frames``
        (default ``batch``): returns as soon as the socket is empty after at least one arrived,
        or at once when :meth:`wake` is called."""
        limit = self.batch if max_frames is None else max_frames
        out: list[bytes] = []
        got = self._drain(out, limit)
        if not got and timeout > 0 and self._wait(timeout):
            self._drain(out, limit)
        return out

    def _wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for a datagram; False if none came or :meth:`wake` ended the wait."""
        r, _, _ = select.select([self.sock, self._wake_fd], [], [], max(0.0, timeout))
        if self._wake_fd in r:
            os.eventfd_read(self._wake_fd)
        return self.sock in r

    def wake(self) -> None:
        """End a wait for datagrams on this socket now (from another thread): :func:`run_udp`
        then checks its stop condition at once instead of at its next ``poll``."""
        os.eventfd_write(self._wake_fd, 1)

    def _drain(self, out: list[bytes], limit: int) -> int:
        """Read datagrams without blocking until the socket is empty or ``limit`` are read;
        append the INA ones to ``out`` as frames. Returns how many datagrams were read."""
        n, frame = 0, self._frame
        if self._mmsg is not None:
            while n < limit:
                got = self._mmsg.recv(limit - n)
                n += len(got)
                for data, source in got:
                    f = frame(data, source)
                    if f is not None:
                        out.append(f)
                if len(got) < self._mmsg.capacity:
                    break                 # the socket is empty (or the limit is reached)
            return n
        recvfrom, bufsize, inet_aton = self.sock.recvfrom, self._bufsize, socket.inet_aton
        while n < limit:
            try:
                data, (src_ip, src_port) = recvfrom(bufsize)
            except BlockingIOError:
                break
            n += 1
            f = frame(data, src_port.to_bytes(2, "big") + inet_aton(src_ip))
            if f is not None:
                out.append(f)
        return n

    def _frame(self, data: bytes, source: bytes) -> bytes | None:
        """The frame the agents see for a datagram from ``source`` (port ++ IPv4 address)."""
        need = self._payload_len
        if len(data) == HEADER_LEN and data[0] >> 4 == INA_VERSION and is_header_only(data[1], data[4] << 8 | data[5],
                                                                                      data[14]):
            # a query or an ask, sent without lanes
            return frame_prefix(socket.inet_ntoa(source[2:]), self.ip, 0, 0, int.from_bytes(source[:2], "big"), 64,
                                HEADER_LEN) + bytes([data[0] & 0xF0]) + data[1:]
        if len(data) < need or data[0] >> 4 != INA_VERSION:
            return None                  # not INA: ignore
        if len(data) != need or data[0] & 0x0F:
            # the frame carries exactly K lanes and a zero reserved nibble, as build_frame writes it
            data = bytes([data[0] & 0xF0]) + data[1:need]
        prefix = self._prefixes.get(source)
        if prefix is None:
            prefix = self._prefixes[source] = frame_prefix(socket.inet_ntoa(source[2:]), self.ip, 0, 0,
                                                           int.from_bytes(source[:2], "big"), 64, need)
        return prefix + data

    def close(self) -> None:
        self.sock.close()
        self._release_rings()
        self._close_wake()

    def _close_wake(self) -> None:
        if self._wake_fd >= 0:
            os.close(self._wake_fd)
            self._wake_fd = -1

    # ------------------------------------------------------------------ the C loops' state
    def _native_rings(self) -> "native_datapath.SocketRings":
        """The socket's C rings, made once and kept until it closes: what one C loop left in the
        receive ring is the next one's, and with UDP_GRO on (loopback) the socket must be read
        by the C loop, which splits coalesced datagrams."""
        if self._rings is None:
            gso = native_datapath.loopback_gso(self.ip)
            if gso:
                try:
                    self.sock.setsockopt(SOL_UDP, UDP_GRO, 1)
                except OSError:
                    gso = False
            self._rings = native_datapath.SocketRings(self.sock.fileno(), self.lanes, self.dst_port, gso)
            self._rings.io.wake_fd = self._wake_fd
        return self._rings

    def _release_rings(self) -> None:
        """Back to the Python loop's reading: one datagram per buffer, no C rings."""
        rings, self._rings = getattr(self, "_rings", None), None
        if rings is not None:
            rings.close()
            if rings.gso and self.sock.fileno() >= 0:
                self.sock.setsockopt(SOL_UDP, UDP_GRO, 0)


def _batched_io(transport: Any) -> tuple[Callable[[float], list[bytes]], Callable[[list[bytes]], None]]:
    """The transport's batch calls, unless a subclass overrode ``recv``/``send`` without their
    batch forms (e.g. to count frames): then every frame goes through those overrides."""
    cls = type(transport)

    def overridden(single: str, many: str) -> bool:
        return (getattr(cls, many, None) is None
                or (getattr(cls, single, None) is not getattr(UdpTransport, single)
                    and getattr(cls, many) is getattr(UdpTransport, many)))

    if overridden("recv", "recv_many"):
        def recv_many(timeout: float) -> list[bytes]:
            f = transport.recv(timeout)
            return [] if f is None else [f]
    else:
        recv_many = transport.recv_many
    if overridden("send", "send_many"):
        def send_many(frames: list[bytes]) -> None:
            for f in frames:
                transport.send(f)
    else:
        send_many = transport.send_many
    return recv_many, send_many


_IO_METHODS = ("send", "recv", "send_many", "recv_many", "_frame", "_drain")


def native_udp(agent: Any, transport: Any, clock: Callable[[], float] = time.monotonic) -> bool:
    """Whether :func:`run_udp` runs ``agent`` on ``transport`` with hostlib.native's C loop: a
    Worker, WorkerGroup of Workers or ParameterServer (not subclasses) on a UdpTransport with
    sendmmsg/recvmmsg, the real monotonic clock, and the C library built here."""
    if not isinstance(transport, UdpTransport) or transport.native is False or clock is not time.monotonic:
        return False
    if type(agent) is WorkerGroup:
        if any(type(w) is not Worker or not w.native or w.lanes != transport.lanes or not w.c_capable
               for w in agent.workers.values()):
            return False
    elif type(agent) not in (Worker, ParameterServer) or getattr(agent, "native", True) is False \
            or not getattr(agent, "c_capable", True):
        return False
    if getattr(agent, "lanes", None) != transport.lanes:
        return False                  # the Python loop says what is wrong with such frames
    cls = type(transport)
    if (any(getattr(cls, m) is not getattr(UdpTransport, m) for m in _IO_METHODS)
            and not isinstance(getattr(transport, "counts", None), dict) and not transport.c_io):
        return False
    if transport._mmsg is None or transport.sock.fileno() < 0:
        return False
    return native_datapath.available()


def run_udp(agent: Agent, transport: UdpTransport, timeout: float, stop: Callable[[], bool] | None = None,
            clock: Callable[[], float] = time.monotonic, poll: float = 0.05) -> bool:
    """Drive ``agent`` in real time until ``stop()`` (default: the agent's ``done()``) or
    ``timeout`` seconds. Returns whether it stopped because ``stop()`` became true; ``stop``
    is checked at least every ``poll`` seconds.

    Each wake-up takes every frame waiting on the socket, hands them to the agent
    (``on_frames`` where it has one), checks the timer once and sends all replies. Where
    :func:`native_udp` allows, the C loop of hostlib.native does this without Python per frame
    (the same protocol: it hands every uncommon frame and every timer to the agent)."""
    if native_udp(agent, transport, clock):
        return _run_udp_native(agent, transport, timeout, stop, poll)
    if transport.native is True and isinstance(transport, UdpTransport):
        raise RuntimeError("UdpTransport(native=True), but run_udp cannot use hostlib.native for this agent and "
                           f"transport ({native_datapath.unavailable_reason() or 'see hostlib.drivers.native_udp'})")
    if isinstance(transport, UdpTransport):
        transport._release_rings()       # the socket goes back to one datagram per read
    stop = stop or getattr(agent, "done")
    recv_many, send_many = _batched_io(transport)
    on_frames = getattr(agent, "on_frames", None)
    if on_frames is None:
        def on_frames(frames: list[bytes], now: float) -> list[bytes]:
            return each_frame(agent.on_frame, frames, now)
    t0 = clock()
    send_many(agent.start(0.0))
    while not stop():
        now = clock() - t0
        if now > timeout:
            return False
        d = agent.next_deadline()
        wait = min(timeout - now, poll) if d is None else min(max(0.0, d - now), timeout - now, poll)
        frames = recv_many(wait)
        now = clock() - t0
        out = on_frames(frames, now) if frames else []
        d = agent.next_deadline()
        if d is not None and d <= now:
            out += agent.on_timer(now)
        if out:
            send_many(out)
    return True


def _run_udp_native(agent: Worker | WorkerGroup | ParameterServer, transport: UdpTransport, timeout: float,
                    stop: Callable[[], bool] | None, poll: float) -> bool:
    """:func:`run_udp` on hostlib.native's C loops (where :func:`native_udp` allows). The
    transport's ``counts`` (frames and frame bytes each way, if it keeps them, as
    emulation.agents.CountingTransport does) and ``send_dropped`` get what was moved, by C and
    by the Python cores' replies alike."""
    rings = transport._native_rings()
    twin: native_datapath.NativeWorker | native_datapath.NativeGroup | native_datapath.NativePs
    if isinstance(agent, ParameterServer):
        twin = native_datapath.NativePs(agent)
    elif isinstance(agent, WorkerGroup):
        twin = native_datapath.NativeGroup(agent)
    else:
        twin = native_datapath.NativeWorker(agent)
    before = rings.counts()
    moved = [0, 0, 0]          # the Python cores' replies: frames, bytes, and those dropped

    def send(frames: list[bytes]) -> None:
        if frames:
            dropped = transport.send_dropped
            transport._send_uncounted(frames)
            moved[0] += len(frames)
            moved[1] += sum(map(len, frames))
            moved[2] += transport.send_dropped - dropped
            transport.send_dropped = dropped

    try:
        return native_datapath.run_loop(twin, rings, to_frame=transport._frame, send=send, timeout=timeout,
                                    stop=stop or agent.done, stop_when_done=stop is None, poll=poll)
    finally:
        c = rings.counts() - before
        counts = getattr(transport, "counts", None)
        if isinstance(counts, dict):
            for k, v in (("tx_packets", c.tx_packets + moved[0]), ("tx_bytes", c.tx_bytes + moved[1]),
                         ("rx_packets", c.rx_packets), ("rx_bytes", c.rx_bytes)):
                if k in counts:
                    counts[k] += v
        transport.send_dropped += c.send_dropped + moved[2]
