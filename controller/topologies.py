"""Topology generators: Clos fabrics and the papers' testbeds, with realistic port numbering.

Every node numbers its ports 1..n in the order its links are created (hosts too: host port k is
its k-th NIC); links record both ends' ports. Switches get ``switch_id`` 1..N in creation order
(upper tiers first). Clos generators record ``meta["tiers"]`` (bottom-up role names, hosts
first) so that the checker can enforce up-down routing, plus their parameters and seed.

Where the numbers come from:

* GOAT §VII-D: leaf-spine 10 spine / 10 leaf / 50 servers; fat-tree 80 switches (16 core,
  32 aggregation, 32 edge) / 192 servers; 20 % of switches programmable, 64 MB each (Tofino 2).
  GOAT §VII-B / Fig. 4: testbed of 3 Tofino switches (~20 MB each), 8 workers and one PS,
  100 Gb/s links.
* ARO §IV-A: leaf-spine 24 spine / 24 leaf / 576 servers (24 per leaf), 100 Gb/s links,
  20 % programmable switches with 4 pipelines each. ARO does not model aggregator memory.
* InArt §5.3.1: k=6 fat-tree (9 core, 18 aggregation, 18 ToR, 54 servers), links 20 Mb/s
  (homogeneous) or uniform in [10, 30] Mb/s (heterogeneous), PS processing 20 Mb/s and switch
  aggregation capacity 9 Mb/s: the 100 Gb/s setting scaled down 1000x for bmv2.
  InArt §5.2.1 / Fig. 1: testbed of 2 Tofino switches, 6 workers, 2 PSs, 100 Gb/s links.
"""
from __future__ import annotations

import random
from typing import Any, Iterable, Sequence

from .model import Link, Node, Topology

MB = 1_000_000                      # the papers' MB; model sizes use the same unit
TOFINO2_MEMORY = 64 * MB            # GOAT §IV-D/§VII-D: Intel Tofino 2 on-chip memory
TOFINO1_TESTBED_MEMORY = 20 * MB    # GOAT §VII-B: "available memory of ~20MB" per testbed switch


class _Builder:
    """Accumulates nodes and links, handing out per-node port numbers 1..n."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.links: list[Link] = []
        self._next_port: dict[str, int] = {}
        self._next_id = 1

    def switch(self, name: str, role: str) -> str:
        self.nodes[name] = Node(name, "switch", role=role, switch_id=self._next_id)
        self._next_id += 1
        self._next_port[name] = 1
        return name

    def host(self, name: str, role: str = "host") -> str:
        self.nodes[name] = Node(name, "host", role=role)
        self._next_port[name] = 1
        return name

    def link(self, a: str, b: str, gbps: float) -> None:
        pa, pb = self._next_port[a], self._next_port[b]
        self._next_port[a], self._next_port[b] = pa + 1, pb + 1
        self.links.append(Link(a, b, gbps, pa, pb))

    def build(self, name: str, meta: dict[str, Any], *, programmable: Iterable[str],
              memory_bytes: int, pipelines: int, switch_capacity_gbps: float,
              ps_capacity_gbps: float) -> Topology:
        prog = set(programmable)
        for n in self.nodes.values():
            if n.kind == "switch":
                n.pipelines = pipelines
                n.port_pipe = _split_ports(self._next_port[n.name] - 1, pipelines)
                if n.name in prog:
                    n.programmable = True
                    n.memory_bytes = memory_bytes
                    n.capacity_gbps = switch_capacity_gbps
            else:
                # hosts: capacity_gbps is the PS processing / ingress capacity (InArt B(s));
                # it only matters for hosts a job uses as PS.
                n.capacity_gbps = ps_capacity_gbps
        meta = dict(meta, programmable=sorted(prog, key=lambda s: self.nodes[s].switch_id),
                    memory_bytes=memory_bytes, pipelines=pipelines)
        return Topology(name, self.nodes, self.links, meta)


def _split_ports(nports: int, pipelines: int) -> dict[int, int]:
    """Ports split evenly across pipes in contiguous blocks (ARO §II-B: each pipe serves a
    portion of the ports); empty for single-pipe switches to keep files small."""
    if pipelines <= 1 or nports == 0:
        return {}
    return {p: (p - 1) * pipelines // nports for p in range(1, nports + 1)}


def _spread(total: int, buckets: int) -> list[int]:
    """`total` items over `buckets`, as evenly as possible, earlier buckets taking the rest."""
    base, rest = divmod(total, buckets)
    return [base + (1 if i < rest else 0) for i in range(buckets)]


def pick_programmable(switches: Sequence[str], fraction: float, seed: int,
                      force: Iterable[str] = ()) -> list[str]:
    """A seeded random subset of floor(fraction * |switches|) switches (at least the forced
    ones, which count toward the total). ARO §IV-A: 20 % of 48 switches gives the 9 aggregators
    of its Fig. 7, hence floor; GOAT §VII-D: 20 % of 20 / 80 switches = 4 / 16."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"programmable fraction {fraction} is not in [0, 1]")
    forced = [s for s in force]
    unknown = set(forced) - set(switches)
    if unknown:
        raise ValueError(f"cannot force unknown switches {sorted(unknown)} to be programmable")
    want = max(len(set(forced)), int(fraction * len(switches) + 1e-9))
    rest = [s for s in switches if s not in forced]
    chosen = list(dict.fromkeys(forced)) + random.Random(seed).sample(rest, want - len(set(forced)))
    return chosen


def _link_rate(rng: random.Random, gbps: float, gbps_range: tuple[float, float] | None) -> float:
    return rng.uniform(*gbps_range) if gbps_range else gbps


def leaf_spine(spines: int, leaves: int, hosts_per_leaf: int | None = None, *,
               hosts: int | None = None, link_gbps: float = 100.0,
               host_link_gbps: float | None = None,
               link_gbps_range: tuple[float, float] | None = None,
               programmable_fraction: float = 1.0, force_programmable: Iterable[str] = (),
               seed: int = 0, memory_bytes: int = TOFINO2_MEMORY, pipelines: int = 1,
               switch_capacity_gbps: float = 0.0, ps_capacity_gbps: float = 0.0,
               name: str | None = None) -> Topology:
    """Two-tier Clos: every leaf links to every spine; hosts hang off leaves.

    Give either ``hosts_per_leaf`` or ``hosts`` (spread evenly, the first leaves taking the
    remainder). Leaf ports: hosts first (1..h), then spines; spine port j faces leaf j.
    GOAT: ``leaf_spine(10, 10, hosts=50, programmable_fraction=0.2)``;
    ARO: ``leaf_spine(24, 24, 24, programmable_fraction=0.2, pipelines=4)``."""
    if spines < 1 or leaves < 1:
        raise ValueError("leaf-spine needs at least one spine and one leaf")
    per_leaf = _hosts_per_switch(leaves, hosts_per_leaf, hosts)
    rng = random.Random(seed)
    b = _Builder()
    sp = [b.switch(f"spine{i + 1}", "spine") for i in range(spines)]
    lf = [b.switch(f"leaf{i + 1}", "leaf") for i in range(leaves)]
    h = 0
    for leaf, count in zip(lf, per_leaf):
        for _ in range(count):
            h += 1
            b.link(b.host(f"h{h}"), leaf, _link_rate(rng, host_link_gbps or link_gbps, link_gbps_range))
    for leaf in lf:
        for s in sp:
            b.link(leaf, s, _link_rate(rng, link_gbps, link_gbps_range))
    prog = pick_programmable(sp + lf, programmable_fraction, seed, force_programmable)
    meta = {"generator": "leaf_spine", "tiers": ["host", "leaf", "spine"], "spines": sp,
            "leaves": lf, "hosts_per_leaf": per_leaf, "link_gbps": link_gbps,
            "link_gbps_range": link_gbps_range, "programmable_fraction": programmable_fraction,
            "seed": seed}
    return b.build(name or f"leaf-spine-{spines}x{leaves}-{h}", meta, programmable=prog,
                   memory_bytes=memory_bytes, pipelines=pipelines,
                   switch_capacity_gbps=switch_capacity_gbps, ps_capacity_gbps=ps_capacity_gbps)


def single_switch(hosts: int, *, ps_hosts: int = 0, link_gbps: float = 100.0,
                  memory_bytes: int = TOFINO2_MEMORY, pipelines: int = 1, seed: int = 0,
                  name: str | None = None) -> Topology:
    """One programmable switch ``tor1`` with ``hosts`` servers (ESA §7.2.1: 64 servers under one
    switch, 100 Gb/s links). ``ps_hosts`` > 0: the PSes' servers (numbered after the others)
    hang off a second switch ``tor2`` with no aggregator memory, joined to ``tor1`` by a trunk as
    fast as every host link together (so the two act as one non-blocking switch: a PS's results
    multicast at ``tor2`` cross it once per worker); it is programmable so that it can multicast
    a PS's results back (controller.deploy's relay-only node), releasing ATP's held aggregators
    in ``tor1`` on their way, as the switch carrying ATP's parameter packets does."""
    if hosts < 1 or ps_hosts < 0:
        raise ValueError("a single switch needs at least one host (and no negative PS hosts)")
    b = _Builder()
    tor = b.switch("tor1", "tor")
    for h in range(hosts):
        b.link(b.host(f"h{h + 1}"), tor, link_gbps)
    relay = []
    if ps_hosts:
        relay = [b.switch("tor2", "tor")]
        for h in range(hosts, hosts + ps_hosts):
            b.link(b.host(f"h{h + 1}"), relay[0], link_gbps)
        b.link(tor, relay[0], link_gbps * (hosts + ps_hosts))
    meta = {"generator": "single_switch", "tiers": ["host", "tor"], "link_gbps": link_gbps,
            "ps_hosts": ps_hosts, "seed": seed}
    topo = b.build(name or f"single-switch-{hosts}" + (f"+{ps_hosts}" if ps_hosts else ""), meta,
                   programmable=[tor, *relay], memory_bytes=memory_bytes, pipelines=pipelines,
                   switch_capacity_gbps=0.0, ps_capacity_gbps=0.0)
    for r in relay:
        topo.nodes[r].memory_bytes = 0          # relays only: the aggregators are tor1's
    return topo


def _hosts_per_switch(switches: int, per_switch: int | None, total: int | None) -> list[int]:
    if (per_switch is None) == (total is None):
        raise ValueError("give exactly one of hosts-per-switch and total hosts")
    if per_switch is not None:
        if per_switch < 0:
            raise ValueError("hosts per switch must be >= 0")
        return [per_switch] * switches
    assert total is not None
    if total < 0:
        raise ValueError("number of hosts must be >= 0")
    return _spread(total, switches)


def fat_tree(k: int, hosts_per_edge: int | None = None, *, hosts: int | None = None,
             link_gbps: float = 100.0, link_gbps_range: tuple[float, float] | None = None,
             programmable_fraction: float = 1.0, force_programmable: Iterable[str] = (),
             seed: int = 0, memory_bytes: int = TOFINO2_MEMORY, pipelines: int = 1,
             switch_capacity_gbps: float = 0.0, ps_capacity_gbps: float = 0.0,
             name: str | None = None) -> Topology:
    """k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge + k/2 aggregation switches,
    (k/2)^2 cores. Aggregation switch j of every pod links to cores j*k/2 .. j*k/2+k/2-1;
    core port p faces pod p. Hosts per edge default to k/2 (the canonical k^3/4 hosts);
    GOAT's 192 servers on k=8 are ``hosts_per_edge=6``. Edge ports: hosts first, then
    aggregation; aggregation ports: edges first, then cores."""
    if k < 2 or k % 2:
        raise ValueError(f"fat-tree k must be even and >= 2, not {k}")
    half = k // 2
    if hosts_per_edge is None and hosts is None:
        hosts_per_edge = half
    per_edge = _hosts_per_switch(k * half, hosts_per_edge, hosts)
    rng = random.Random(seed)
    b = _Builder()
    cores = [b.switch(f"core{i + 1}", "core") for i in range(half * half)]
    aggs = [[b.switch(f"agg{p * half + j + 1}", "aggregation") for j in range(half)] for p in range(k)]
    edges = [[b.switch(f"edge{p * half + j + 1}", "edge") for j in range(half)] for p in range(k)]
    h = 0
    for pod in range(k):
        for j, e in enumerate(edges[pod]):
            for _ in range(per_edge[pod * half + j]):
                h += 1
                b.link(b.host(f"h{h}"), e, _link_rate(rng, link_gbps, link_gbps_range))
    for pod in range(k):
        for e in edges[pod]:
            for a in aggs[pod]:
                b.link(e, a, _link_rate(rng, link_gbps, link_gbps_range))
    for pod in range(k):
        for j, a in enumerate(aggs[pod]):
            for c in range(half):
                b.link(a, cores[j * half + c], _link_rate(rng, link_gbps, link_gbps_range))
    all_sw = cores + [s for p in aggs for s in p] + [s for p in edges for s in p]
    prog = pick_programmable(all_sw, programmable_fraction, seed, force_programmable)
    meta = {"generator": "fat_tree", "k": k, "tiers": ["host", "edge", "aggregation", "core"],
            "cores": cores, "pods": [{"aggregation": aggs[p], "edge": edges[p]} for p in range(k)],
            "hosts_per_edge": per_edge, "link_gbps": link_gbps, "link_gbps_range": link_gbps_range,
            "programmable_fraction": programmable_fraction, "seed": seed}
    return b.build(name or f"fat-tree-k{k}-{h}", meta, programmable=prog,
                   memory_bytes=memory_bytes, pipelines=pipelines,
                   switch_capacity_gbps=switch_capacity_gbps, ps_capacity_gbps=ps_capacity_gbps)


def inart_fattree(heterogeneous: bool = False, seed: int = 0, *,
                  programmable_fraction: float = 1.0) -> Topology:
    """InArt's Mininet emulation (§5.3.1): k=6 fat-tree, 54 hosts, 20 Mb/s links (or uniform
    10-30 Mb/s), PS capacity 20 Mb/s, bmv2 aggregation capacity 9 Mb/s. All bmv2 switches run
    the INA program (the paper reports aggregation on edge, aggregation and core switches)."""
    return fat_tree(6, link_gbps=0.020, link_gbps_range=(0.010, 0.030) if heterogeneous else None,
                    programmable_fraction=programmable_fraction, seed=seed,
                    switch_capacity_gbps=0.009, ps_capacity_gbps=0.020,
                    name="inart-fattree-" + ("heterogeneous" if heterogeneous else "homogeneous"))


def goat_testbed(*, link_gbps: float = 100.0, memory_bytes: int = TOFINO1_TESTBED_MEMORY) -> Topology:
    """GOAT Fig. 4: S1 and S2 each serve 4 workers, S3 serves the PS, all 100 Gb/s.

    The text says the testbed is "similar to Fig. 2(a)". The switch wiring is a triangle
    (S1-S2, S1-S3, S2-S3): only that wiring reproduces the example's counts, since S1 forwards
    B fragments straight to S2 and the switch-to-switch traffic is 17 fragments for ATP and 13
    for GOAT (§III-B)."""
    b = _Builder()
    s1, s2, s3 = (b.switch(f"s{i}", "tor") for i in (1, 2, 3))
    for i in range(1, 9):
        b.link(b.host(f"w{i}", "worker"), s1 if i <= 4 else s2, link_gbps)
    b.link(b.host("ps", "ps"), s3, link_gbps)
    b.link(s1, s2, link_gbps)
    b.link(s1, s3, link_gbps)
    b.link(s2, s3, link_gbps)
    meta = {"generator": "goat_testbed", "source": "GOAT Fig. 4 / Fig. 2(a)", "link_gbps": link_gbps}
    return b.build("goat-testbed", meta, programmable=[s1, s2, s3], memory_bytes=memory_bytes,
                   pipelines=1, switch_capacity_gbps=0.0, ps_capacity_gbps=0.0)


def inart_testbed(*, link_gbps: float = 100.0, switch_capacity_gbps: float = 0.0,
                  ps_capacity_gbps: float = 0.0, memory_bytes: int = TOFINO2_MEMORY) -> Topology:
    """InArt Fig. 1 / §5.2.1: V1 serves W1-W4 and PS S1, V2 serves W5-W6 and PS S2, V1-V2 linked.

    The figure is missing from the text; this wiring is inferred from it: ATP aggregates
    W1-W4 on V1 and W5-W6 on V2 (their ToRs), and InArt aggregates W4's gradients for S2 on
    V2, so V1-V2 is a link and S2 lies behind V2. Fig. 1's toy units are
    ``inart_testbed(link_gbps=6, switch_capacity_gbps=6, ps_capacity_gbps=4)``, under which
    LBMM gets 4/3 (PS-bound), ATP 2 and InArt 2.5."""
    b = _Builder()
    v1, v2 = b.switch("v1", "tor"), b.switch("v2", "tor")
    for i in range(1, 7):
        b.link(b.host(f"w{i}", "worker"), v1 if i <= 4 else v2, link_gbps)
    b.link(b.host("ps1", "ps"), v1, link_gbps)
    b.link(b.host("ps2", "ps"), v2, link_gbps)
    b.link(v1, v2, link_gbps)
    meta = {"generator": "inart_testbed", "source": "InArt Fig. 1 / §5.2.1", "link_gbps": link_gbps}
    return b.build("inart-testbed", meta, programmable=[v1, v2], memory_bytes=memory_bytes,
                   pipelines=1, switch_capacity_gbps=switch_capacity_gbps,
                   ps_capacity_gbps=ps_capacity_gbps)


def set_programmable(topology: Topology, fraction: float, seed: int,
                     force: Iterable[str] = (), memory_bytes: int | None = None) -> Topology:
    """Re-draw which switches are programmable on an existing topology (in place; returned for
    chaining), e.g. to make a testbed partially programmable."""
    switches = topology.switches()
    chosen = set(pick_programmable(switches, fraction, seed, force))
    mem = topology.meta.get("memory_bytes", TOFINO2_MEMORY) if memory_bytes is None else memory_bytes
    for s in switches:
        node = topology.nodes[s]
        node.programmable = s in chosen
        node.memory_bytes = mem if s in chosen else 0
    topology.meta.update(programmable=[s for s in switches if s in chosen],
                         programmable_fraction=fraction, seed=seed, memory_bytes=mem)
    return topology
