"""Drivers for the sans-IO agents (hostlib.worker.Worker, hostlib.ps.ParameterServer).

* ``run_on_fabric``: a discrete-event simulation over a ``p4sim.fabric.Fabric``'s switches and
  links, with a simulated clock, a per-hop latency and seeded loss on chosen links, so recovery
  is exercised deterministically and without tc netem.
* ``UdpTransport`` / ``run_udp``: real time over a UDP socket bound to the INA port (loopback
  tests; Mininet hosts). The socket carries the INA header and lanes; the Ethernet/IPv4/UDP
  headers the agents build are the kernel's business here.
"""
from __future__ import annotations

import heapq
import random
import select
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

from .protocol import HEADER_LEN, INA_UDP_PORT, InaHeader, ProtocolError, build_frame, lanes_from_bytes, parse_frame


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
    quiet: bool = False           # stopped because nothing was left to do (not by ``until``)


def run_on_fabric(fabric: Any, agents: Mapping[str, Agent], until: float, *, hop_latency: float = 10e-6,
                  loss: Mapping[tuple[str, str], float] | None = None,
                  duplicate: Mapping[tuple[str, str], float] | None = None, seed: int = 0,
                  stop: Callable[[], bool] | None = None, max_events: int = 1_000_000) -> SimReport:
    """Run ``agents`` (host name → agent) on ``fabric`` until simulated time ``until``, until
    ``stop()`` is true, or until no frame is in flight and no agent has a deadline.

    Every link, host links included, takes ``hop_latency``; switches process in zero time.
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

    def hop(src: str, dst: str, t: float, kind: str, data: tuple) -> None:
        p = loss.get((src, dst), 0.0)
        if p and rng.random() < p:
            report.lost += 1
            return
        push(t + hop_latency, kind, data)
        p = duplicate.get((src, dst), 0.0)
        if p and rng.random() < p:
            report.duplicated += 1
            push(t + 2 * hop_latency, kind, data)

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
        if kind == "switch":
            sw, port, frame = data
            for out_port, out in fabric.switches[sw].process(port, frame):
                report.switch_frames[sw] = report.switch_frames.get(sw, 0) + 1
                host = host_at.get((sw, out_port))
                if host is not None:
                    hop(sw, host, t, "host", (host, out))
                elif (sw, out_port) in fabric.links:
                    nsw, nport = fabric.links[(sw, out_port)]
                    hop(sw, nsw, t, "switch", (nsw, nport, out))
        elif kind == "host":
            host, frame = data
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


# ---------------------------------------------------------------------- real time, UDP
class UdpTransport:
    """An agent's frames over a UDP socket bound to (ip, 47100).

    Outgoing frames are parsed for their destination IP and INA payload; incoming datagrams are
    wrapped back into frames (source from ``recvfrom``, destination = our address) so the agents
    see the same bytes as on the fabric.
    """

    def __init__(self, ip: str, port: int = INA_UDP_PORT, lanes: int = 64, dst_port: int = INA_UDP_PORT) -> None:
        self.ip, self.port, self.lanes, self.dst_port = ip, port, lanes, dst_port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((ip, port))
        self.sock.setblocking(False)
        self.send_dropped = 0            # datagrams the full socket buffer did not take

    def send(self, frame: bytes) -> None:
        pkt = parse_frame(frame, self.lanes)
        payload = frame[14 + 20 + 8:14 + 20 + 8 + HEADER_LEN + 4 * self.lanes]
        addr = (pkt.dst_ip, self.dst_port)
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

    def recv(self, timeout: float) -> bytes | None:
        r, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not r:
            return None
        data, (src_ip, src_port) = self.sock.recvfrom(65535)
        try:
            header = InaHeader.unpack(data)
            lanes = lanes_from_bytes(data[HEADER_LEN:], self.lanes)
        except ProtocolError:
            return None                  # not INA: ignore
        return build_frame(header, lanes, src_ip=src_ip, dst_ip=self.ip, src_port=src_port)

    def close(self) -> None:
        self.sock.close()


def run_udp(agent: Agent, transport: UdpTransport, timeout: float, stop: Callable[[], bool] | None = None,
            clock: Callable[[], float] = time.monotonic) -> bool:
    """Drive ``agent`` in real time until ``stop()`` (default: the agent's ``done()``) or
    ``timeout`` seconds. Returns whether it stopped because ``stop()`` became true."""
    stop = stop or getattr(agent, "done")
    t0 = clock()
    for f in agent.start(0.0):
        transport.send(f)
    while not stop():
        now = clock() - t0
        if now > timeout:
            return False
        d = agent.next_deadline()
        wait = min(timeout - now, 0.05) if d is None else min(max(0.0, d - now), timeout - now, 0.05)
        frame = transport.recv(wait)
        now = clock() - t0
        out = agent.on_frame(frame, now) if frame is not None else []
        d = agent.next_deadline()
        if d is not None and d <= now:
            out += agent.on_timer(now)
        for f in out:
            transport.send(f)
    return True
