"""Several in-process p4sim switches wired together, for multi-switch tests without Mininet.

Links join (switch, port) pairs; hosts hang off switch ports. ``send`` injects a frame from a
host and runs every switch it reaches until the network is quiet, returning what each host
received. Frames are processed in FIFO order, so a test controls interleavings exactly by the
order of its ``send`` calls.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .runtime.switch import Switch


@dataclass
class Fabric:
    switches: dict[str, Switch] = field(default_factory=dict)
    links: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    hosts: dict[str, tuple[str, int]] = field(default_factory=dict)         # host -> (switch, port)
    received: dict[str, list[bytes]] = field(default_factory=dict)
    transmissions: int = 0          # frames carried on any link, host links included
    sent_by: dict[str, int] = field(default_factory=dict)   # frames each switch transmitted

    def add_switch(self, name: str, sw: Switch) -> None:
        self.switches[name] = sw

    def link(self, a: str, a_port: int, b: str, b_port: int) -> None:
        for end in ((a, a_port), (b, b_port)):
            if end in self.links or end in self._host_ports():
                raise ValueError(f"port {end} is already connected")
        self.links[(a, a_port)] = (b, b_port)
        self.links[(b, b_port)] = (a, a_port)

    def attach(self, host: str, switch: str, port: int) -> None:
        if (switch, port) in self.links or (switch, port) in self._host_ports():
            raise ValueError(f"port {(switch, port)} is already connected")
        self.hosts[host] = (switch, port)
        self.received.setdefault(host, [])

    def _host_ports(self) -> dict[tuple[str, int], str]:
        return {v: k for k, v in self.hosts.items()}

    def send(self, host: str, frame: bytes, max_hops: int = 64) -> dict[str, list[bytes]]:
        """Inject ``frame`` from ``host``; return {host: frames received} for this injection."""
        host_ports = self._host_ports()
        got: dict[str, list[bytes]] = {}
        sw, port = self.hosts[host]
        self.transmissions += 1
        queue = deque([(sw, port, frame, 0)])
        while queue:
            sw, port, data, hops = queue.popleft()
            if hops > max_hops:
                raise RuntimeError(f"frame looped more than {max_hops} hops")
            for out_port, out in self.switches[sw].process(port, data):
                self.transmissions += 1
                self.sent_by[sw] = self.sent_by.get(sw, 0) + 1
                dst = host_ports.get((sw, out_port))
                if dst is not None:
                    got.setdefault(dst, []).append(out)
                    self.received[dst].append(out)
                elif (sw, out_port) in self.links:
                    nsw, nport = self.links[(sw, out_port)]
                    queue.append((nsw, nport, out, hops + 1))
        return got
