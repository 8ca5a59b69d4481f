"""A physical testbed: which switch port is which host, how ports are configured, and how to
reach each switch's control API.

The file (JSON; documented in docs/testbed.md with a Wedge100BF-32X example)::

    {"name": "lab",
     "switches": [{"name": "tofino1", "arch": "tna", "address": "192.168.0.11:50052",
                   "device_id": 0, "switch_id": 1, "memory_mb": 8,
                   "ports": [{"port": "1/0", "dev_port": 128, "speed": "100G", "fec": "rs"}]}],
     "hosts": [{"name": "w1", "ip": "10.0.0.1", "mac": "0c:42:a1:00:00:01",
                "switch": "tofino1", "port": "1/0"}],
     "links": [{"a": "tofino1", "a_port": "31/0", "b": "tofino2", "b_port": "31/0"}]}

``port`` is the front-panel name (``N/L``: cage N, lane L), ``dev_port`` the device port the
data plane sees (``bf-sde> pm show`` prints both). ``arch`` picks the control API: ``tna`` →
BfRuntime (bf_switchd or ``p4sim serve --arch tna --bfrt-addr``), ``v1model`` → P4Runtime
(simple_switch_grpc or ``p4sim serve --grpc-addr``). :meth:`Testbed.topology` is what the
planners and :mod:`controller.deploy` take: device ports as link ports, link capacities from
port speeds, and the hosts' own addresses.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import Link, ModelError, Node, Topology

SPEEDS_GBPS = {"1G": 1, "10G": 10, "25G": 25, "40G": 40, "50G": 50, "100G": 100, "200G": 200,
               "400G": 400}
FECS = {"none": "BF_FEC_TYP_NONE", "fc": "BF_FEC_TYP_FIRECODE", "firecode": "BF_FEC_TYP_FIRECODE",
        "rs": "BF_FEC_TYP_REED_SOLOMON"}
ARCHS = ("tna", "v1model")
_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")
_IP = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})")
_ADDR = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})")


@dataclass(frozen=True)
class PortConfig:
    port: str                   # front-panel name, e.g. "1/0"
    dev_port: int
    speed: str                  # "100G"
    fec: str                    # "none", "fc", "rs"

    @property
    def bf_speed(self) -> str:
        return f"BF_SPEED_{self.speed}"

    @property
    def bf_fec(self) -> str:
        return FECS[self.fec]


@dataclass
class SwitchConfig:
    name: str
    arch: str
    address: str                # HOST:PORT of BfRuntime (tna) or P4Runtime (v1model)
    device_id: int
    switch_id: int
    memory_mb: float
    ports: dict[str, PortConfig] = field(default_factory=dict)     # front-panel name → config
    # v1model: the P4Info file that names the tables (None: the one the switch runs); a tna
    # switch always serves its bf-rt.json
    p4info: str | None = None


@dataclass(frozen=True)
class HostConfig:
    name: str
    ip: str
    mac: str
    switch: str
    port: str
    role: str


@dataclass(frozen=True)
class LinkConfig:
    a: str
    a_port: str
    b: str
    b_port: str


@dataclass
class Testbed:
    name: str
    switches: dict[str, SwitchConfig]
    hosts: dict[str, HostConfig]
    links: list[LinkConfig]

    def topology(self) -> Topology:
        """The planners' view: switches and hosts as nodes, device ports on links."""
        nodes: dict[str, Node] = {}
        for s in self.switches.values():
            nodes[s.name] = Node(s.name, "switch", role="switch", programmable=True,
                                 memory_bytes=int(s.memory_mb * 1e6), switch_id=s.switch_id)
        for h in self.hosts.values():
            nodes[h.name] = Node(h.name, "host", role=h.role)
        links = []
        for h in self.hosts.values():
            p = self.switches[h.switch].ports[h.port]
            links.append(Link(h.name, h.switch, SPEEDS_GBPS[p.speed], 0, p.dev_port))
        for l in self.links:
            pa, pb = self.switches[l.a].ports[l.a_port], self.switches[l.b].ports[l.b_port]
            links.append(Link(l.a, l.b, min(SPEEDS_GBPS[pa.speed], SPEEDS_GBPS[pb.speed]),
                              pa.dev_port, pb.dev_port))
        meta = {"testbed": self.name,
                "addresses": {h.name: {"ip": h.ip, "mac": h.mac} for h in self.hosts.values()}}
        return Topology(self.name, nodes, links, meta)


class _Reader:
    """Field access with errors that name the file and the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, what: str) -> None:
        raise ModelError(f"{self.source}: {path}: {what}")

    def get(self, obj: dict[str, Any], key: str, path: str, kind: type | tuple[type, ...],
            default: Any = ...) -> Any:
        if key not in obj:
            if default is ...:
                self.fail(path, f"missing field '{key}'")
            return default
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(f"{path}.{key}", f"expected {names}, got {json.dumps(value)}")
        return value

    def obj(self, value: Any, path: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {type(value).__name__}")
        unknown = sorted(set(value) - allowed)
        if unknown:
            self.fail(path, f"unknown field '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})")
        return value

    def items(self, doc: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
        return [(f"{key}[{i}]", v) for i, v in enumerate(self.get(doc, key, "$", list))]


def testbed_from_dict(doc: Any, source: str = "<testbed>") -> Testbed:
    r = _Reader(source)
    doc = r.obj(doc, "$", {"name", "switches", "hosts", "links"})
    switches: dict[str, SwitchConfig] = {}
    ids: dict[int, str] = {}
    dev_ports: dict[tuple[str, int], str] = {}
    for path, s in r.items(doc, "switches"):
        s = r.obj(s, path, {"name", "arch", "address", "device_id", "switch_id", "memory_mb", "ports",
                            "p4info"})
        name = r.get(s, "name", path, str)
        if name in switches:
            r.fail(f"{path}.name", f"switch '{name}' is declared twice")
        arch = r.get(s, "arch", path, str, "tna")
        if arch not in ARCHS:
            r.fail(f"{path}.arch", f"'{arch}' is not one of {', '.join(ARCHS)}")
        address = r.get(s, "address", path, str)
        m = _ADDR.fullmatch(address)
        if not m or int(m.group(2)) > 65535:
            r.fail(f"{path}.address", f"'{address}' is not HOST:PORT")
        sid = r.get(s, "switch_id", path, int)
        if not 1 <= sid < 256:
            r.fail(f"{path}.switch_id", f"{sid} is outside 1..255 (the data plane's node ids)")
        if sid in ids:
            r.fail(f"{path}.switch_id", f"{sid} is also the id of switch '{ids[sid]}'")
        ids[sid] = name
        memory = r.get(s, "memory_mb", path, (int, float), 8)
        if memory <= 0:
            r.fail(f"{path}.memory_mb", "must be > 0")
        p4info = r.get(s, "p4info", path, str, None)
        if p4info is not None:
            if arch != "v1model":
                r.fail(f"{path}.p4info", "only for v1model switches (a tna switch serves its bf-rt.json)")
            if not Path(p4info).is_absolute() and Path(source).is_file():
                p4info = str(Path(source).parent / p4info)      # relative to the testbed file
        sw = SwitchConfig(name, arch, address, r.get(s, "device_id", path, int, 0), sid, memory,
                          p4info=p4info)
        for i, p in enumerate(r.get(s, "ports", path, list)):
            ppath = f"{path}.ports[{i}]"
            p = r.obj(p, ppath, {"port", "dev_port", "speed", "fec"})
            fp = r.get(p, "port", ppath, str)
            if not re.fullmatch(r"\d+/\d+", fp):
                r.fail(f"{ppath}.port", f"'{fp}' is not a front-panel port (N/L, e.g. 1/0)")
            if fp in sw.ports:
                r.fail(f"{ppath}.port", f"port {fp} of {name} is listed twice")
            dev = r.get(p, "dev_port", ppath, int)
            if not 0 <= dev < 512:
                r.fail(f"{ppath}.dev_port", f"{dev} is outside 0..511 (9-bit device ports)")
            if (name, dev) in dev_ports:
                r.fail(f"{ppath}.dev_port", f"{dev} is also port {dev_ports[(name, dev)]} of {name}")
            dev_ports[(name, dev)] = fp
            speed = r.get(p, "speed", ppath, str).upper()
            if speed not in SPEEDS_GBPS:
                r.fail(f"{ppath}.speed", f"'{speed}' is not one of {', '.join(SPEEDS_GBPS)}")
            fec = r.get(p, "fec", ppath, str, "none").lower()
            if fec not in FECS:
                r.fail(f"{ppath}.fec", f"'{fec}' is not one of {', '.join(FECS)}")
            sw.ports[fp] = PortConfig(fp, dev, speed, fec)
        switches[name] = sw
    if not switches:
        r.fail("$.switches", "a testbed needs at least one switch")

    used: dict[tuple[str, str], str] = {}

    def take(sw_name: str, port: str, path: str, who: str) -> None:
        if sw_name not in switches:
            r.fail(path, f"unknown switch '{sw_name}'")
        if port not in switches[sw_name].ports:
            r.fail(path, f"switch {sw_name} has no port {port} in its 'ports'")
        if (sw_name, port) in used:
            r.fail(path, f"port {port} of {sw_name} is already used by {used[(sw_name, port)]}")
        used[(sw_name, port)] = who

    hosts: dict[str, HostConfig] = {}
    for path, h in r.items(doc, "hosts"):
        h = r.obj(h, path, {"name", "ip", "mac", "switch", "port", "role"})
        name = r.get(h, "name", path, str)
        if name in hosts or name in switches:
            r.fail(f"{path}.name", f"name '{name}' is used twice")
        ip = r.get(h, "ip", path, str)
        if not (_IP.fullmatch(ip) and all(int(x) < 256 for x in ip.split("."))):
            r.fail(f"{path}.ip", f"'{ip}' is not an IPv4 address")
        mac = r.get(h, "mac", path, str)
        if not _MAC.fullmatch(mac):
            r.fail(f"{path}.mac", f"'{mac}' is not a MAC address (aa:bb:cc:dd:ee:ff)")
        sw_name, port = r.get(h, "switch", path, str), r.get(h, "port", path, str)
        take(sw_name, port, path, f"host {name}")
        hosts[name] = HostConfig(name, ip, mac.lower(), sw_name, port, r.get(h, "role", path, str, "host"))
    links = []
    for path, l in r.items(doc, "links") if "links" in doc else []:
        l = r.obj(l, path, {"a", "a_port", "b", "b_port"})
        a, ap = r.get(l, "a", path, str), r.get(l, "a_port", path, str)
        b, bp = r.get(l, "b", path, str), r.get(l, "b_port", path, str)
        if a == b:
            r.fail(path, f"a link from {a} to itself")
        take(a, ap, path, f"link {a}-{b}")
        take(b, bp, path, f"link {a}-{b}")
        links.append(LinkConfig(a, ap, b, bp))
    return Testbed(doc.get("name") or Path(source).stem, switches, hosts, links)


def load_testbed(path: str | Path) -> Testbed:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{source}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{source}: not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelError(f"{source}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    return testbed_from_dict(doc, source)


__all__ = ["Testbed", "SwitchConfig", "PortConfig", "HostConfig", "LinkConfig", "load_testbed",
           "testbed_from_dict", "SPEEDS_GBPS", "FECS"]
