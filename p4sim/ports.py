"""Switch ports on Linux interfaces.

* :class:`Port` binds a switch port number to an interface with an ``AF_PACKET`` raw socket
  (all ethertypes, promiscuous, large buffers). Frames the kernel shows us as
  ``PACKET_OUTGOING`` are our own (or the host's) transmissions and are not ingested again.
  VLAN tags the kernel moved into packet metadata (veth/NIC VLAN offload) are put back into
  the frame, so the P4 parser sees the bytes that were on the wire. A port carries its link's
  model (:mod:`p4sim.links`): an egress impairment and serializers at the link rate, which
  :class:`p4sim.dataplane.DataplaneLoop` applies.
* Batched I/O: on Linux with glibc a port reads up to 64 frames per ``recvmmsg`` call and
  sends the frames of one receive batch per output port with one ``sendmmsg`` call (both
  through ctypes: Python's socket module has neither); the loop takes the switch lock once per
  batch. Where they are unavailable (or with ``P4SIM_BATCH_IO=0``) a port falls back to one
  ``recvmsg``/``send`` per frame, with the same results: batching changes the number of system
  calls, never which frames go where, their order per port, or the impairment draws.

The pcap file of a port records what is on the wire: received frames when they arrive and
transmitted frames when they are actually sent (impairment-dropped frames never appear).
"""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any

from p4sim.links import Impairer, Impairment, Serializer
from p4sim.pcap import PcapWriter

log = logging.getLogger("p4sim.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33

_AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
_MAX_FRAME = 1 << 16
_SOCK_BUF = 8 << 20      # large buffers: a Python switch is slow, let the kernel queue bursts
RX_BATCH = 64           # frames read from one port before looking at the others (fairness)
MSG_DONTWAIT = 0x40


class PortError(Exception):
    """A port cannot be opened (unknown interface, no permission, ...)."""


# --------------------------------------------------------------------------- ports

@dataclass
class PortCounters:
    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    dropped: int = 0        # dropped by the egress impairment
    tx_errors: int = 0      # the kernel refused a send (link down, ...)
    rx_errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def restore_vlan(data: bytes, ancdata: list[tuple[int, int, bytes]]) -> bytes:
    """Put back a VLAN tag the kernel moved into packet metadata (VLAN offload on veths and
    NICs): ``ancdata`` comes from ``recvmsg`` on a socket with ``PACKET_AUXDATA`` enabled."""
    for level, typ, val in ancdata:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(val) >= _AUXDATA.size:
            status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(val)
            if status & TP_STATUS_VLAN_VALID and len(data) >= 12:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


# --------------------------------------------------------------------------- batched I/O

class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.c_void_p), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", _Msghdr), ("msg_len", ctypes.c_uint)]


_SLL_SIZE = 20             # struct sockaddr_ll
_NAME_STRIDE = 32          # per-message sockaddr_ll slot (aligned)
_CTRL_STRIDE = 64          # per-message control buffer: CMSG_SPACE(sizeof tpacket_auxdata) = 40
_CMSG_HDR = ctypes.sizeof(ctypes.c_size_t) + 8   # struct cmsghdr: len, level, type
_RX_SLOT = _MAX_FRAME      # a frame never exceeds this (same limit as recvmsg)


def _load_mmsg() -> tuple[Any, Any, int] | None:
    """(recvmmsg, sendmmsg, offset of a bytes object's data) or None where unavailable."""
    if os.environ.get("P4SIM_BATCH_IO", "1") == "0" or not hasattr(socket, "AF_PACKET"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        recvmmsg, sendmmsg = libc.recvmmsg, libc.sendmmsg
    except (OSError, AttributeError):
        return None
    recvmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int,
                         ctypes.c_void_p]
    recvmmsg.restype = ctypes.c_int
    sendmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    sendmmsg.restype = ctypes.c_int
    # sendmmsg points its iovecs at the bytes objects themselves (no copy): CPython keeps a
    # bytes object's data inline at a fixed offset from id(); check it, else copy.
    probe = b"p4sim-probe-\x00\x01\x02"
    off = sys.getsizeof(b"") - 1
    try:
        if ctypes.string_at(id(probe) + off, len(probe)) != probe:
            off = -1
    except Exception:
        off = -1
    return recvmmsg, sendmmsg, off


_MMSG = _load_mmsg() if sys.implementation.name == "cpython" else None


class _BatchIO:
    """Preallocated ``recvmmsg``/``sendmmsg`` arrays of one socket (used by one thread)."""

    def __init__(self, fd: int, n: int = RX_BATCH) -> None:
        assert _MMSG is not None
        self.fd = fd
        self.n = n
        self._recvmmsg, self._sendmmsg, self._bytes_off = _MMSG
        msz = ctypes.sizeof(_Mmsghdr)
        self._msz = msz
        # receive side: one 64 KiB slot per message (calloc'd: untouched pages cost nothing)
        self.rx_msgs = (_Mmsghdr * n)()
        self.rx_iov = (_Iovec * n)()
        self.rx_data = (ctypes.c_char * (n * _RX_SLOT))()
        self.rx_names = (ctypes.c_char * (n * _NAME_STRIDE))()
        self.rx_ctrl = (ctypes.c_char * (n * _CTRL_STRIDE))()
        base = ctypes.addressof(self.rx_data)
        names = ctypes.addressof(self.rx_names)
        ctrl = ctypes.addressof(self.rx_ctrl)
        for i in range(n):
            self.rx_iov[i].iov_base = base + i * _RX_SLOT
            self.rx_iov[i].iov_len = _RX_SLOT
            h = self.rx_msgs[i].msg_hdr
            h.msg_name = names + i * _NAME_STRIDE
            h.msg_namelen = _SLL_SIZE
            h.msg_iov = ctypes.addressof(self.rx_iov) + i * ctypes.sizeof(_Iovec)
            h.msg_iovlen = 1
            h.msg_control = ctrl + i * _CTRL_STRIDE
            h.msg_controllen = _CTRL_STRIDE
        # recvmmsg rewrites msg_namelen/msg_controllen/msg_flags: restored from this template
        self._rx_template = (ctypes.c_char * (n * msz)).from_buffer_copy(self.rx_msgs)
        self._rx_msgs_mv = memoryview(self.rx_msgs).cast("B")
        self._rx_data_mv = memoryview(self.rx_data).cast("B")
        self._rx_names_mv = memoryview(self.rx_names).cast("B")
        self._rx_ctrl_mv = memoryview(self.rx_ctrl).cast("B")
        len_off = _Mmsghdr.msg_len.offset
        # one struct per batch size reads a field of every message at once
        self._len_structs = [struct.Struct("=" + f"{len_off}xI{msz - len_off - 4}x" * k)
                             for k in range(n + 1)]
        self._pkttype_structs = [struct.Struct("=" + f"10xB{_NAME_STRIDE - 11}x" * k)
                                 for k in range(n + 1)]
        self._status_structs = [struct.Struct("=" + f"{_CMSG_HDR}xI{_CTRL_STRIDE - _CMSG_HDR - 4}x" * k)
                                for k in range(n + 1)]
        self._rx_used = n
        # send side
        self.tx_msgs = (_Mmsghdr * n)()
        self.tx_iov = (_Iovec * n)()
        for i in range(n):
            h = self.tx_msgs[i].msg_hdr
            h.msg_iov = ctypes.addressof(self.tx_iov) + i * ctypes.sizeof(_Iovec)
            h.msg_iovlen = 1
        self._tx_iov_mv = memoryview(self.tx_iov).cast("B")
        self._iov_structs = [struct.Struct("@" + "PN" * k) for k in range(n + 1)]
        self.tx_copy = None
        if self._bytes_off < 0:  # no zero-copy pointers: copy into 64 KiB slots
            self.tx_copy = (ctypes.c_char * (n * _RX_SLOT))()
            self._tx_copy_mv = memoryview(self.tx_copy).cast("B")

    def recv(self) -> tuple[int, list[bytes], list[int], list[int]] | int:
        """Up to ``n`` frames: (count, frames, pkttypes, auxdata statuses) or -errno."""
        ctypes.memmove(self.rx_msgs, self._rx_template, self._rx_used * self._msz)
        k = self._recvmmsg(self.fd, self.rx_msgs, self.n, MSG_DONTWAIT, None)
        if k <= 0:
            self._rx_used = 0
            return -ctypes.get_errno() if k < 0 else 0
        self._rx_used = k
        lens = self._len_structs[k].unpack_from(self._rx_msgs_mv)
        dmv = self._rx_data_mv
        frames = [dmv[i * _RX_SLOT:i * _RX_SLOT + ln].tobytes() for i, ln in enumerate(lens)]
        return (k, frames, list(self._pkttype_structs[k].unpack_from(self._rx_names_mv)),
                list(self._status_structs[k].unpack_from(self._rx_ctrl_mv)))

    def vlan(self, i: int) -> tuple[int, int]:
        """(tci, tpid) of message ``i`` of the last receive (its tpacket_auxdata)."""
        return struct.unpack_from("=HH", self._rx_ctrl_mv, i * _CTRL_STRIDE + _CMSG_HDR + 16)

    def send(self, frames: list[bytes]) -> tuple[int, list[int]]:
        """Send ``frames`` (at most ``n``); (frames sent, indexes refused with their errno)."""
        k = len(frames)
        off = self._bytes_off
        if off >= 0:
            flat: list[int] = []
            for f in frames:
                flat += (id(f) + off, len(f))
        else:
            flat = []
            mv = self._tx_copy_mv
            base = ctypes.addressof(self.tx_copy)
            for i, f in enumerate(frames):
                mv[i * _RX_SLOT:i * _RX_SLOT + len(f)] = f
                flat += (base + i * _RX_SLOT, len(f))
        self._iov_structs[k].pack_into(self._tx_iov_mv, 0, *flat)
        start = 0
        failed: list[int] = []
        msz = self._msz
        while start < k:
            r = self._sendmmsg(self.fd, ctypes.byref(self.tx_msgs, start * msz), k - start, 0)
            if r > 0:
                start += r
            else:  # the frame at `start` was refused: count it, go on with the next one
                failed.append(start)
                failed.append(ctypes.get_errno())
                start += 1
        return k - len(failed) // 2, failed


class Port:
    """Switch port ``number`` on Linux interface ``ifname``.

    ``open()`` creates the socket; :class:`DataplaneLoop` calls it for the ports it owns.
    """

    def __init__(self, number: int, ifname: str, *, impairment: Impairment | None = None,
                 tx_mbps: float | None = None, rx_mbps: float | None = None,
                 pcap_path: str | None = None, bufsize: int = _SOCK_BUF) -> None:
        """``tx_mbps``: serialize what the port sends at this rate (the link towards its peer);
        ``rx_mbps``: what it receives (the link from a peer that does not serialize, a host)."""
        self.number = number
        self.ifname = ifname
        self.impairment = impairment if impairment is not None and impairment.active else None
        self.impairer = Impairer(self.impairment, number) if self.impairment else None
        self.tx_link = Serializer(tx_mbps * 1e6) if tx_mbps else None
        self.rx_link = Serializer(rx_mbps * 1e6) if rx_mbps else None
        self.pcap_path = pcap_path
        self.bufsize = bufsize
        self.counters = PortCounters()
        self.sock: socket.socket | None = None
        self.pcap: PcapWriter | None = None
        self._warned_rx = False
        self._bio: _BatchIO | None = None   # recvmmsg/sendmmsg arrays (None: per-frame calls)

    def __repr__(self) -> str:
        return f"Port({self.number}@{self.ifname})"

    def open(self) -> None:
        if self.sock is not None:
            return
        try:
            ifindex = socket.if_nametoindex(self.ifname)
        except OSError:
            raise PortError(f"no such interface: {self.ifname!r}") from None
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"opening a raw socket on {self.ifname!r} needs root "
                            "(CAP_NET_RAW)") from None
        try:
            for force, opt in ((SO_RCVBUFFORCE, socket.SO_RCVBUF),
                               (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
                try:  # SO_*BUFFORCE ignores net.core.[rw]mem_max when we are root
                    sock.setsockopt(socket.SOL_SOCKET, force, self.bufsize)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, opt, self.bufsize)
            sock.bind((self.ifname, ETH_P_ALL))
            mreq = struct.pack("=iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            sock.setblocking(False)
        except OSError as e:
            sock.close()
            raise PortError(f"cannot open port {self.number} on {self.ifname!r}: {e}") from None
        if self.pcap_path:
            try:
                self.pcap = PcapWriter(self.pcap_path)
            except OSError as e:
                sock.close()
                raise PortError(f"cannot write pcap {self.pcap_path!r}: {e}") from None
        self.sock = sock
        if _MMSG is not None:
            self._bio = _BatchIO(sock.fileno())

    def close(self) -> None:
        self._bio = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.pcap is not None:
            self.pcap.close()
            self.pcap = None

    def fileno(self) -> int:
        assert self.sock is not None, "port not open"
        return self.sock.fileno()

    def recv(self) -> bytes | None:
        """One received frame; ``None`` when nothing is queued. Our own transmissions
        (``PACKET_OUTGOING``) are skipped."""
        assert self.sock is not None
        while True:
            try:
                data, anc, _flags, addr = self.sock.recvmsg(_MAX_FRAME, 64)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as e:
                # ENETDOWN once when the link goes down (the socket recovers when it comes up)
                self.counters.rx_errors += 1
                if not self._warned_rx:
                    log.warning("port %d (%s): receive error: %s", self.number, self.ifname, e)
                    self._warned_rx = True
                return None
            if addr[2] == PACKET_OUTGOING:
                continue
            data = restore_vlan(data, anc)
            self.counters.rx_packets += 1
            self.counters.rx_bytes += len(data)
            if self.pcap is not None:
                self.pcap.write(data)
            return data

    def _rx_error(self, e: OSError) -> None:
        self.counters.rx_errors += 1
        if not self._warned_rx:
            log.warning("port %d (%s): receive error: %s", self.number, self.ifname, e)
            self._warned_rx = True

    def recv_batch(self, max_frames: int = RX_BATCH) -> list[bytes]:
        """Up to ``max_frames`` received frames (``[]`` when nothing is queued), as
        :meth:`recv` would return them one by one; one ``recvmmsg`` call where available."""
        bio = self._bio
        if bio is None or max_frames < bio.n:
            out: list[bytes] = []
            for _ in range(max_frames):
                f = self.recv()
                if f is None:
                    break
                out.append(f)
            return out
        r = bio.recv()
        if r.__class__ is int:
            if r < 0 and -r not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR):
                self._rx_error(OSError(-r, os.strerror(-r)))  # ENETDOWN when the link drops
            return []
        k, frames, pkttypes, statuses = r  # type: ignore[misc]
        if PACKET_OUTGOING in pkttypes or any(st & TP_STATUS_VLAN_VALID for st in statuses):
            kept = []
            for i in range(k):
                if pkttypes[i] == PACKET_OUTGOING:
                    continue
                f = frames[i]
                st = statuses[i]
                if st & TP_STATUS_VLAN_VALID and len(f) >= 12:
                    tci, tpid = bio.vlan(i)
                    if not st & TP_STATUS_VLAN_TPID_VALID:
                        tpid = 0x8100
                    f = f[:12] + struct.pack("!HH", tpid, tci) + f[12:]
                kept.append(f)
            frames = kept
        c = self.counters
        c.rx_packets += len(frames)
        c.rx_bytes += sum(map(len, frames))
        if self.pcap is not None:
            for f in frames:
                self.pcap.write(f)
        return frames

    def send_batch(self, frames: list[bytes]) -> int:
        """Put ``frames`` on the wire now, in order (no impairment), as :meth:`send` would one
        by one; one ``sendmmsg`` call per up to 64 frames where available. Returns how many
        the kernel accepted."""
        bio = self._bio
        if bio is None or self.sock is None:
            n = 0
            for f in frames:
                n += self.send(f)
            return n
        frames = [f if f.__class__ is bytes else bytes(f) for f in frames]
        c = self.counters
        total = 0
        step = bio.n
        for start in range(0, len(frames), step):
            chunk = frames[start:start + step] if start or len(frames) > step else frames
            sent, failed = bio.send(chunk)
            total += sent
            if failed:
                bad = set(failed[0::2])
                for idx, err in zip(failed[0::2], failed[1::2]):
                    c.tx_errors += 1
                    log.debug("port %d (%s): send failed: %s", self.number, self.ifname,
                              os.strerror(err))
                chunk = [f for i, f in enumerate(chunk) if i not in bad]
            c.tx_packets += len(chunk)
            c.tx_bytes += sum(map(len, chunk))
            if self.pcap is not None:
                for f in chunk:
                    self.pcap.write(f)
        return total

    def send(self, frame: bytes) -> bool:
        """Put ``frame`` on the wire now (no impairment). False if the kernel refused it."""
        sock = self.sock
        if sock is None:
            return False
        try:
            sock.send(frame)
        except OSError as e:
            self.counters.tx_errors += 1
            log.debug("port %d (%s): send failed: %s", self.number, self.ifname, e)
            return False
        self.counters.tx_packets += 1
        self.counters.tx_bytes += len(frame)
        if self.pcap is not None:
            self.pcap.write(frame)
        return True
