"""What an emulated experiment runs: the topology, the jobs on it, and each job's schedule.

Pure (no Mininet): ``emulation.run`` builds networks from these, and tests and the in-process
twin (``emulation.inprocess``) use the same setup.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from controller.model import Job, SubModel, Topology
from controller.topologies import fat_tree, goat_testbed, inart_fattree, leaf_spine, single_switch

LINK_MBPS = 20.0            # InArt's emulation: 100 Gb/s scaled down 5000× (bmv2-class switches)


def _fattree(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    return fat_tree(k, per_edge, programmable_fraction=programmable, seed=seed)


def _leaf_spine(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    return leaf_spine(k, k, per_edge or k, programmable_fraction=programmable, seed=seed)


def _leaf_spine_4pipe(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    # ARO §IV-A scaled down: every switch has 4 pipelines (ports split evenly, leaf ports hosts
    # first), and the last leaf, the PSes' (place_jobs puts them on the last hosts), is always
    # programmable, as ARO's PS leaves are
    return leaf_spine(k, k, per_edge or k, programmable_fraction=programmable, seed=seed, pipelines=4,
                      force_programmable=[f"leaf{k}"])


def _single(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    # --hosts-per-edge servers under the switch (default 64: ESA §7.2.1), k PSes under a relay switch
    return single_switch(per_edge or 64, ps_hosts=k, seed=seed)


def _goat_testbed(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    return goat_testbed()


def _inart(k: int, per_edge: int | None, programmable: float, seed: int) -> Topology:
    return inart_fattree(seed=seed)


# name → (builder(k, hosts per edge, programmable fraction, seed), what it is)
TOPOLOGIES: dict[str, tuple[Callable[[int, int | None, float, int], Topology], str]] = {
    "fattree": (_fattree, "k-ary fat-tree (--k, default 4: 20 switches; k/2 hosts per edge unless "
                          "--hosts-per-edge)"),
    "leaf-spine": (_leaf_spine, "k spines, k leaves, k hosts per leaf (or --hosts-per-edge)"),
    "leaf-spine-4pipe": (_leaf_spine_4pipe, "leaf-spine with 4 pipelines per switch, the last leaf (the PSes') "
                                            "programmable: ARO §IV-A scaled down"),
    "single": (_single, "one programmable switch with --hosts-per-edge hosts (default 64), and --k hosts "
                        "(the PSes') under a relay switch with no aggregators: ESA §7.2"),
    "goat-testbed": (_goat_testbed, "GOAT Fig. 4: S1, S2 with 4 workers each, S3 with the PS (all programmable)"),
    "inart": (_inart, "InArt's emulation: k=6 fat-tree, 54 hosts, every switch programmable"),
}


def build_topology(name: str, *, k: int = 4, hosts_per_edge: int | None = None, programmable: float = 0.2,
                   seed: int = 0) -> Topology:
    if name not in TOPOLOGIES:
        raise ValueError(f"unknown topology {name!r}; choose from {', '.join(TOPOLOGIES)}")
    return TOPOLOGIES[name][0](k, hosts_per_edge, programmable, seed)


@dataclass(frozen=True)
class JobSpec:
    """One job of an experiment: its model size, rounds and start time."""
    mb: float
    rounds: int
    start: float = 0.0          # seconds after the experiment's start
    compute: float = 0.0        # each worker's computation (forward + backward pass) per round, s


def place_jobs(topo: Topology, specs: list[JobSpec], workers: int, *, submodels: int = 4,
               switch_bytes: int | None = None, ps_per_job: int = 1) -> list[Job]:
    """Jobs with ``workers`` workers each, interleaved over the hosts (job k takes every n-th
    host from the k-th, so jobs share ToRs and compete for their aggregators) and
    ``ps_per_job`` PSes each on the last hosts (InArt splits a model over several); job ids
    1..n. Every programmable switch gets memory for half of the largest model per job, so no
    switch holds a whole model (placement matters) and jobs sharing a switch compete for its
    aggregators; ``switch_bytes`` overrides it."""
    hosts = topo.hosts()
    n = len(specs)
    if n < 1 or workers < 1 or ps_per_job < 1:
        raise ValueError("need at least one job with at least one worker and one PS")
    if n * (workers + ps_per_job) > len(hosts):
        raise ValueError(f"{n} job(s) × ({workers} workers + {ps_per_job} PS) do not fit on the {len(hosts)} "
                         f"hosts of {topo.name}")
    pool = hosts[:len(hosts) - n * ps_per_job]
    jobs = []
    for k, spec in enumerate(specs):
        ws = pool[k::n][:workers]
        subs = [SubModel(f"g{i}", spec.mb / submodels) for i in range(submodels)]
        pss = [hosts[len(hosts) - 1 - k - n * i] for i in range(ps_per_job)]
        jobs.append(Job(f"job{k + 1}", ws, pss, subs, job_id=k + 1))
    memory = switch_bytes if switch_bytes is not None else int(n * max(s.mb for s in specs) * 1e6 / 2)
    for s in topo.programmable_switches():
        if topo.nodes[s].memory_bytes > 0:      # a relay switch built without memory keeps none
            topo.nodes[s].memory_bytes = memory
    for j in jobs:
        j.validate(topo)
    return jobs


def bw_scale_for(topo: Topology, link_mbps: float) -> float:
    """The EmuNet bandwidth scale that gives the topology's fastest host link ``link_mbps``
    (a trunk joining switches may be faster: it keeps its ratio)."""
    hosts = set(topo.hosts())
    fastest = max(l.capacity_gbps for l in topo.links if l.a in hosts or l.b in hosts)
    return fastest * 1000.0 / link_mbps


def link_bits_per_s(topo: Topology, bw_scale: float) -> dict[tuple[str, str], float]:
    """Each link's rate in the emulation, both directions: (from, to) → bits per second."""
    rates = {}
    for link in topo.links:
        rates[(link.a, link.b)] = rates[(link.b, link.a)] = link.capacity_gbps * 1e9 / bw_scale
    return rates


__all__ = ["TOPOLOGIES", "build_topology", "JobSpec", "place_jobs", "bw_scale_for", "link_bits_per_s", "LINK_MBPS"]
