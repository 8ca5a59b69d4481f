"""Network-namespace test topologies without Mininet.

A :class:`VethTopology` creates hosts (network namespaces) each with one ``eth0`` whose veth
peer stays in the root namespace, where a ``p4sim serve`` process can bind it. Everything is
removed on exit, also when a test fails: use it as a context manager or through the
``veth_topology`` fixture (``from netns import veth_topology``). Names contain our pid, so
parallel runs do not collide, and we only ever delete what we created.

Traffic: :meth:`VethTopology.socket` opens an AF_PACKET socket *inside* a host namespace
(``setns`` in a throw-away thread; a socket keeps the namespace it was created in), which is
much faster than running scapy through ``ip netns exec``. :class:`HostSocket` wraps it with
``send`` and ``recv_all``.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

# NB: no p4sim import here: test_finsy.py uses this module and must not load p4sim (whose
# P4Runtime protobuf bindings would clash with finsy's in the same process).

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_AUXDATA = 8
CLONE_NEWNET = 0x40000000
REPO = Path(__file__).resolve().parent.parent

_counter = itertools.count()
_libc = ctypes.CDLL(None, use_errno=True)


def netns_unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None if they can."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces and raw sockets need root"
    if shutil.which("ip") is None:
        return "iproute2 `ip` command not found"
    name = f"p4tprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return f"`ip netns add` failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def require_netns() -> None:
    """pytest.skip the calling test when namespaces are unavailable."""
    reason = netns_unavailable_reason()
    if reason:
        pytest.skip(reason)


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class Host:
    """A namespace with one interface ``eth0`` wired to ``switch_if`` in the root namespace."""

    def __init__(self, name: str, ns: str, switch_if: str, mac: str, ip: str | None) -> None:
        self.name = name
        self.ns = ns
        self.ifname = "eth0"
        self.switch_if = switch_if
        self.mac = mac
        self.ip = ip

    def __repr__(self) -> str:
        return f"Host({self.name}: ns={self.ns} switch_if={self.switch_if})"


class VethTopology:
    """Namespaces + veth pairs, cleaned up on :meth:`teardown` (idempotent)."""

    def __init__(self, prefix: str | None = None, *, offloads_off: bool = True) -> None:
        # short: interface names are limited to 15 characters
        self.prefix = prefix or f"p4t{os.getpid() % 100000}{next(_counter)}"
        self.offloads_off = offloads_off
        self.hosts: dict[str, Host] = {}
        self._namespaces: list[str] = []
        self._links: list[str] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._sockets: list[socket.socket] = []

    # -- building -------------------------------------------------------------------------
    def add_host(self, name: str, *, mac: str | None = None, ip: str | None = None) -> Host:
        """Create namespace ``<prefix><name>`` with ``eth0``; its peer ``<prefix>s<k>`` stays
        in the root namespace, up, without IPv6 (no router solicitations / MLD noise)."""
        if not re.fullmatch(r"[A-Za-z0-9]{1,4}", name):
            raise ValueError("host names: 1-4 alphanumerics")
        k = len(self.hosts) + 1
        ns = f"{self.prefix}{name}"
        switch_if = f"{self.prefix}s{k}"
        if len(switch_if) > 15:
            raise ValueError(f"interface name {switch_if!r} too long")
        mac = mac or f"02:00:00:00:{k // 256:02x}:{k % 256:02x}"
        _run(["ip", "netns", "add", ns])
        self._namespaces.append(ns)
        self.exec(ns, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        self.exec(ns, ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        _run(["ip", "link", "add", switch_if, "type", "veth", "peer", "name", "eth0",
              "netns", ns])
        self._links.append(switch_if)
        _run(["sysctl", "-qw", f"net.ipv6.conf.{switch_if}.disable_ipv6=1"], check=False)
        self.exec(ns, ["ip", "link", "set", "eth0", "address", mac])
        if ip:
            self.exec(ns, ["ip", "addr", "add", ip, "dev", "eth0"])
        if self.offloads_off and shutil.which("ethtool"):
            # checksums/segmentation must be done in software: our switch is user space
            off = ["tx", "off", "rx", "off", "gso", "off", "tso", "off", "gro", "off"]
            _run(["ethtool", "-K", switch_if, *off], check=False)
            self.exec(ns, ["ethtool", "-K", "eth0", *off], check=False)
        _run(["ip", "link", "set", switch_if, "up"])
        self.exec(ns, ["ip", "link", "set", "lo", "up"])
        self.exec(ns, ["ip", "link", "set", "eth0", "up"])
        host = Host(name, ns, switch_if, mac, ip)
        self.hosts[name] = host
        return host

    def wait_up(self, timeout: float = 5.0) -> None:
        """Wait until every veth reports carrier (both ends up)."""
        deadline = time.monotonic() + timeout
        for link in self._links:
            while Path(f"/sys/class/net/{link}/operstate").read_text().strip() != "up":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{link} did not come up")
                time.sleep(0.02)

    # -- running things -------------------------------------------------------------------
    def exec(self, ns: str, argv: Sequence[str], check: bool = True
             ) -> subprocess.CompletedProcess[str]:
        return _run(["ip", "netns", "exec", ns, *argv], check=check)

    def popen(self, argv: Sequence[str], ns: str | None = None, **kw: object
              ) -> subprocess.Popen[bytes]:
        """Start a process (in ``ns`` if given); it is terminated (by pid) on teardown."""
        full = list(argv) if ns is None else ["ip", "netns", "exec", ns, *argv]
        p = subprocess.Popen(full, **kw)  # type: ignore[call-overload]
        self._procs.append(p)
        return p

    def socket(self, host: Host | str) -> "HostSocket":
        """A raw socket on ``eth0`` inside ``host``'s namespace."""
        h = self.hosts[host] if isinstance(host, str) else host
        s = socket_in_netns(h.ns, h.ifname)
        self._sockets.append(s)
        return HostSocket(s)

    # -- teardown -------------------------------------------------------------------------
    def teardown(self) -> None:
        for s in self._sockets:
            s.close()
        self._sockets.clear()
        for p in self._procs:
            stop_process(p)
        self._procs.clear()
        for link in reversed(self._links):  # deleting one end removes the pair
            _run(["ip", "link", "del", link], check=False)
        self._links.clear()
        for ns in reversed(self._namespaces):
            _run(["ip", "netns", "del", ns], check=False)
        self._namespaces.clear()

    def __enter__(self) -> "VethTopology":
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()


def stop_process(p: subprocess.Popen[bytes], timeout: float = 5.0) -> int | None:
    """SIGTERM, then SIGKILL, one process we started (by its pid)."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout)
    return p.returncode


@pytest.fixture
def veth_topology() -> Iterator[Callable[..., VethTopology]]:
    """Factory fixture: ``topo = veth_topology()``; everything is removed at teardown."""
    require_netns()
    made: list[VethTopology] = []

    def make(**kw: object) -> VethTopology:
        t = VethTopology(**kw)  # type: ignore[arg-type]
        made.append(t)
        return t

    try:
        yield make
    finally:
        for t in made:
            t.teardown()


# ------------------------------------------------------------------------------ sockets

def socket_in_netns(ns: str, ifname: str) -> socket.socket:
    """An AF_PACKET socket bound to ``ifname`` in namespace ``ns``. ``setns`` only changes the
    calling thread, so we do it in a thread of its own and the caller's thread is untouched."""
    result: list[socket.socket | BaseException] = []

    def work() -> None:
        try:
            with open(f"/var/run/netns/{ns}", "rb") as fh:
                if _libc.setns(fh.fileno(), CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((ifname, ETH_P_ALL))
            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)  # to restore offloaded VLAN tags
            result.append(s)
        except BaseException as e:  # handed to the caller's thread
            result.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def restore_vlan(data: bytes, ancdata: list[tuple[int, int, bytes]]) -> bytes:
    """Re-insert a VLAN tag the kernel offloaded into PACKET_AUXDATA (same as p4sim.ports)."""
    for level, typ, val in ancdata:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(val) >= 20:
            status, _l, _s, _m, _n, tci, tpid = struct.unpack_from("=IIIHHHH", val)
            if status & (1 << 4) and len(data) >= 12:  # TP_STATUS_VLAN_VALID
                tpid = tpid if status & (1 << 6) else 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


class HostSocket:
    """Send and receive whole Ethernet frames on a host interface."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def recv_all(self, timeout: float = 1.0, *,
                 match: Callable[[bytes], bool] | None = None,
                 count: int | None = None, idle: float | None = None) -> list[bytes]:
        """Incoming frames (not our own transmissions) accepted by ``match``, until ``count``
        of them arrived, ``timeout`` seconds passed, or (with ``idle``) no matching frame
        came for ``idle`` seconds after the first one."""
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        idle_deadline = deadline
        while count is None or len(out) < count:
            left = deadline - time.monotonic()
            if idle is not None and out:
                left = min(left, idle_deadline - time.monotonic())
            if left <= 0:
                break
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                break
            data, anc, _flags, addr = self.sock.recvmsg(65536, 64)
            if addr[2] == PACKET_OUTGOING:
                continue
            data = restore_vlan(data, anc)
            if match is None or match(data):
                out.append(data)
                if idle is not None:
                    idle_deadline = time.monotonic() + idle
        return out

    def drain(self) -> None:
        """Throw away whatever is queued."""
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(65536)
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def close(self) -> None:
        self.sock.close()


# ------------------------------------------------------------------------------ p4sim serve

def serve_command(program: str | Path, ports: Sequence[tuple[int, str]], *extra: str
                  ) -> list[str]:
    """argv of ``python -m p4sim serve PROGRAM -i N@IF ... EXTRA``."""
    argv = [sys.executable, "-m", "p4sim", "serve", str(program)]
    if not (REPO / "p4sim" / "__main__.py").exists():
        # p4sim/__main__.py not written yet: run the serve module directly
        argv = [sys.executable, "-m", "p4sim.serve", str(program)]
    for num, ifname in ports:
        argv += ["-i", f"{num}@{ifname}"]
    return argv + list(extra)


class ServeProcess:
    """A running ``p4sim serve``; its stderr is collected in the background."""

    READY = "p4sim: serving"

    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        e = dict(os.environ if env is None else env)
        e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
        e.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(self.argv, cwd=REPO, env=e, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.ready_line: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if self.READY in line and self.ready_line is None:
                self.ready_line = line
                self._ready.set()
        self._ready.set()  # EOF: the process is gone

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait for the ready line; raise with the process output if it never comes."""
        if not self._ready.wait(timeout) or self.ready_line is None:
            self.stop()
            raise RuntimeError(f"p4sim serve did not become ready (rc={self.proc.returncode})"
                               f":\n{self.output}")
        return self.ready_line

    @property
    def grpc_port(self) -> int:
        assert self.ready_line is not None
        m = re.search(r"grpc \S+:(\d+)", self.ready_line)
        assert m, self.ready_line
        return int(m.group(1))

    def stop(self, timeout: float = 10.0) -> int | None:
        rc = stop_process(self.proc, timeout)  # type: ignore[arg-type]
        self._reader.join(2.0)
        return rc

    def __enter__(self) -> "ServeProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
