"""Network namespaces of our own for the host-only benchmarks and their tests (root only): a
veth pair between two namespaces, or a star of namespaces around a Linux bridge, each host with
an interface of its own (what AF_XDP needs: an agent's sockets take all its interface's queues).
Everything made here is deleted on exit; nothing outside these namespaces is touched."""
from __future__ import annotations

import ctypes
import os
import random
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

CLONE_NEWNET = 0x40000000


def _setns(fd: int, what: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), f"setns {what}")


def enter(netns: str | None) -> None:
    """Move the calling thread (a forked, single-threaded process: the process) into ``netns``
    before it opens a socket."""
    if netns is None:
        return
    with open(f"/var/run/netns/{netns}") as f:
        _setns(f.fileno(), netns)


@contextmanager
def inside(netns: str) -> Iterator[None]:
    """The calling thread in ``netns`` for the block: sockets (and XDP programs) made there stay
    there after it returns to its own namespace."""
    with open("/proc/thread-self/ns/net") as own:
        enter(netns)
        try:
            yield
        finally:
            _setns(own.fileno(), "back")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _tag() -> str:
    return f"{os.getpid()}-{random.randint(0, 9999)}"


@contextmanager
def _namespaces() -> Iterator[list[str]]:
    made: list[str] = []
    try:
        yield made
    finally:
        for ns in made:                          # only the namespaces made here (their veths go with them)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def _add(made: list[str], ns: str) -> str:
    _ip("netns", "add", ns)
    made.append(ns)
    _ip("-n", ns, "link", "set", "lo", "up")
    return ns


@contextmanager
def veth_pair(workers: int) -> Iterator[tuple[tuple[str, str], str, list[str]]]:
    """Two network namespaces joined by a veth pair: the switch stand-in's (10.77.0.1) and the
    workers' (10.77.0.2 ...). Yields (namespaces, PS IP, worker IPs)."""
    tag = _tag()
    ps_ip, ips = "10.77.0.1", [f"10.77.0.{w + 2}" for w in range(workers)]
    with _namespaces() as made:
        sw, hosts = _add(made, f"inarefl-sw-{tag}"), _add(made, f"inarefl-hosts-{tag}")
        _ip("-n", sw, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", hosts)
        _ip("-n", sw, "addr", "add", f"{ps_ip}/24", "dev", "eth0")
        for a in ips:
            _ip("-n", hosts, "addr", "add", f"{a}/24", "dev", "eth0")
        for ns in (sw, hosts):
            _ip("-n", ns, "link", "set", "eth0", "up")
        yield (sw, hosts), ps_ip, ips


@dataclass(frozen=True)
class Star:
    """``hub``: the namespace of the bridge, whose own address on it is ``hub_ip``; ``hosts``:
    (namespace, IPv4 address) of each host, on its ``eth0``."""
    hub: str
    hub_ip: str
    hosts: list[tuple[str, str]]


@contextmanager
def star(hosts: int, subnet: str = "10.78.0", queues: int = 1) -> Iterator[Star]:
    """``hosts`` namespaces, each with an ``eth0`` (a veth of ``queues`` queues each way) on a
    bridge in a hub namespace: the hub is ``<subnet>.1``, the hosts ``<subnet>.2`` on."""
    tag = _tag()
    with _namespaces() as made:
        hub = _add(made, f"inastar-hub-{tag}")
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "addr", "add", f"{subnet}.1/24", "dev", "br0")
        _ip("-n", hub, "link", "set", "br0", "up")
        out = []
        for h in range(hosts):
            ns = _add(made, f"inastar-{h}-{tag}")
            q = ("numtxqueues", str(queues), "numrxqueues", str(queues))
            _ip("-n", hub, "link", "add", f"h{h}", *q, "type", "veth", "peer", "name", "eth0", *q, "netns", ns)
            _ip("-n", hub, "link", "set", f"h{h}", "master", "br0")
            _ip("-n", hub, "link", "set", f"h{h}", "up")
            addr = f"{subnet}.{h + 2}"
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            out.append((ns, addr))
        yield Star(hub, f"{subnet}.1", out)
